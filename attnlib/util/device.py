"""Where tensors live and how runs are made repeatable."""

from __future__ import annotations

import os
import random
from contextlib import contextmanager

import torch

from attnlib.util._checks import check_positive_int

__all__ = ["default_device", "set_seed", "num_threads"]


def default_device() -> torch.device:
    """The device notebooks compute on: CUDA, else Apple MPS, else CPU.

    The environment variable ``ATTNLIB_DEVICE`` (e.g. ``cpu``, ``cuda``, ``cuda:1``, ``mps``)
    overrides the choice; asking for a device that is not present is an error.
    """
    name = os.environ.get("ATTNLIB_DEVICE", "").strip()
    if name:
        try:
            device = torch.device(name)
        except RuntimeError as exc:
            raise ValueError(f"ATTNLIB_DEVICE={name!r} is not a torch device name") from exc
        if device.type == "cuda" and not torch.cuda.is_available():
            raise ValueError(f"ATTNLIB_DEVICE={name!r} but CUDA is not available here")
        if device.type == "mps" and not torch.backends.mps.is_available():
            raise ValueError(f"ATTNLIB_DEVICE={name!r} but MPS is not available here")
        return device
    if torch.cuda.is_available():
        return torch.device("cuda")
    if torch.backends.mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


def set_seed(seed: int) -> None:
    """Seed Python's and torch's (all devices) generators; the caller seeds, never the library."""
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError(f"seed must be an int, got {type(seed).__name__}")
    random.seed(seed)
    torch.manual_seed(seed)
    try:
        import numpy as np

        np.random.seed(seed % 2**32)
    except ImportError:  # numpy is optional for the math
        pass


@contextmanager
def num_threads(n: int):
    """Run the block with torch using ``n`` CPU threads, then restore the previous count.

    Tiny models (the toy encoder-decoder of notebook 08) train fastest on one thread: on a busy
    2-core CPU two threads made each step about ten times slower. The caller decides::

        with num_threads(1):
            history = train_seq2seq(model, config)
    """
    check_positive_int("n", n)
    old = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(old)
