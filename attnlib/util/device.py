"""Where tensors live and how runs are made repeatable."""

from __future__ import annotations

import os
import random
from contextlib import contextmanager

import numpy as np
import torch

from attnlib.util._checks import check_positive_int

__all__ = ["default_device", "check_device", "set_seed", "num_threads"]


def default_device() -> torch.device:
    """The device notebooks compute on: CUDA, else Apple MPS, else CPU.

    The environment variable ``ATTNLIB_DEVICE`` (e.g. ``cpu``, ``cuda``, ``cuda:1``, ``mps``)
    overrides the choice; asking for a device that is not present is an error.
    """
    name = os.environ.get("ATTNLIB_DEVICE", "").strip()
    if name:
        return check_device("ATTNLIB_DEVICE", name)
    if torch.cuda.is_available():
        return torch.device("cuda")
    if torch.backends.mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


def check_device(name: str, device) -> torch.device:
    """``device`` (a name such as ``"cuda:1"``, an index or a ``torch.device``) as a device.

    One check for every argument that says where to compute, so a typo or a missing accelerator
    fails at the call, naming ``name``, instead of deep inside torch (or after a large file is
    read). ``"meta"`` and other devices torch knows pass; only CUDA and MPS are probed.
    """
    if isinstance(device, torch.device):
        parsed = device
    elif isinstance(device, str) or (isinstance(device, int) and not isinstance(device, bool)):
        try:
            parsed = torch.device(device)
        except (RuntimeError, ValueError) as exc:
            raise ValueError(
                f"{name}={device!r} is not a torch device name (e.g. 'cpu', 'cuda', 'cuda:1', "
                "'mps')"
            ) from exc
    else:
        raise TypeError(
            f"{name} must be a device name, an index or a torch.device, got {type(device).__name__}"
        )
    if parsed.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"{name}={device!r} but CUDA is not available here")
    if parsed.type == "mps" and not torch.backends.mps.is_available():
        raise ValueError(f"{name}={device!r} but MPS is not available here")
    return parsed


def set_seed(seed: int) -> None:
    """Seed Python's, numpy's and torch's (all devices) generators; the caller seeds, never the
    library."""
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError(f"seed must be an int, got {type(seed).__name__}")
    random.seed(seed)
    torch.manual_seed(seed)
    np.random.seed(seed % 2**32)  # numpy takes 32-bit seeds only


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
