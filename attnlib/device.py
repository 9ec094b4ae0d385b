"""Where tensors live and how runs are made repeatable."""

from __future__ import annotations

import os
import random

import torch

__all__ = ["default_device", "set_seed"]


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
    """Seed Python's, torch's (all devices) random generators; the caller seeds, never the library."""
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError(f"seed must be an int, got {type(seed).__name__}")
    random.seed(seed)
    torch.manual_seed(seed)
    try:
        import numpy as np

        np.random.seed(seed % 2**32)
    except ImportError:  # numpy is optional for the math
        pass
