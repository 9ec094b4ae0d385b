"""A developer's tool, not part of the course: count the reads of tensor values into Python.

On a GPU each such read (``int(t)``, ``t.item()``, ``if t:`` ...) waits for the device to finish
its queued work. Issue 17's rule is at most 2 per public call and none inside the blocks; the
tests (``tests/test_host_reads.py``) and ``benchmarks/pretrained.py`` count them with this. It is
not exported from ``attnlib``::

    from attnlib.util.host_reads import host_reads
    host_reads(model, ids, valid_lens=lens)   # -> ['__int__', 'item'] (the reads, in order)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

__all__ = ["HostReads", "host_reads", "READS"]

#: The calls through which a tensor's value reaches Python (shapes and arithmetic read none).
READS = frozenset(
    {
        torch.Tensor.item,
        torch.Tensor.tolist,
        torch.Tensor.__bool__,
        torch.Tensor.__int__,
        torch.Tensor.__float__,
        torch.Tensor.__index__,
    }
)


class HostReads(TorchFunctionMode):
    """A ``TorchFunctionMode`` that records every read of :data:`READS` made while it is active,
    in ``names`` (the method names, in order)."""

    def __init__(self) -> None:
        super().__init__()
        self.names: list[str] = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if func in READS:
            self.names.append(func.__name__)
        return func(*args, **(kwargs or {}))


def host_reads(fn: Callable[..., Any], *args, **kwargs) -> list[str]:
    """The reads ``fn(*args, **kwargs)`` makes, by method name, in order (its result is dropped)."""
    with HostReads() as counter:
        fn(*args, **kwargs)
    return counter.names
