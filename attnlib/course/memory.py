"""Exact memory of a call: the bytes of the tensors it creates, the same on every machine.

:class:`TensorBytes` is a ``TorchDispatchMode``: every ATen operation that runs while it is active
reports the tensors it returns, and each one whose storage is *new* (not the storage of one of the
operation's inputs, so views, reshapes and in-place results are not counted twice) adds its
storage's ``nbytes`` to the live total, while a ``weakref.finalize`` on that storage takes the
bytes off again the moment the storage is freed (``peak`` is the largest live total seen,
``largest`` the largest single storage, ``total`` the sum of everything created). It counts the
tensors the call creates (intermediates, outputs, tensors autograd saves) whatever the device, and
not memory that existed before the call (inputs, parameters), scratch buffers a single kernel
allocates and frees internally (e.g. inside a fused attention kernel), or allocator overhead
(rounding, caching): the memory the *algorithm* needs, not what the process's allocator happens to
hold. On CUDA, :func:`cuda_peak_bytes` also reads the allocator's own
``torch.cuda.max_memory_allocated()`` (which does include kernels' scratch buffers and the caching
allocator's 512-byte rounding). The process's resident size (RSS) depends on the allocator and the
OS and is not used here: ``benchmarks/_rss.py`` measures it for comparison.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

__all__ = ["TensorBytes", "allocated_bytes", "cuda_peak_bytes", "largest_tensor_bytes"]


class TensorBytes(TorchDispatchMode):
    """Counts the storage bytes of the tensors ATen operations create while it is active.

    See the module docstring for exactly what is counted. Use as ``with TensorBytes() as m: ...``.

    Attributes:
        live: bytes of the counted storages still alive now.
        peak: the largest ``live`` seen.
        largest: the largest single new storage.
        total: the sum of all new storages.
    """

    def __init__(self):
        super().__init__()
        self.live = self.peak = self.largest = self.total = 0
        self._counted: set[int] = set()  # id() of the storages alive and counted

    def _freed(self, key: int, nbytes: int) -> None:
        self._counted.discard(key)
        self.live -= nbytes

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        inputs = {
            id(t.untyped_storage())
            for t in tree_flatten((args, kwargs))[0]
            if isinstance(t, torch.Tensor) and t.layout == torch.strided
        }
        for t in tree_flatten(out)[0]:
            if not isinstance(t, torch.Tensor) or t.layout != torch.strided or t.is_meta:
                continue
            storage = t.untyped_storage()
            key, nbytes = id(storage), storage.nbytes()
            if key in inputs or key in self._counted or nbytes == 0:
                continue  # a view or in-place result, or already counted
            self._counted.add(key)
            weakref.finalize(storage, self._freed, key, nbytes)
            self.live += nbytes
            self.total += nbytes
            self.largest = max(self.largest, nbytes)
            self.peak = max(self.peak, self.live)
        return out


def _count(fn: Callable[[], object]) -> TensorBytes:
    if not callable(fn):
        raise TypeError(f"fn must be callable, got {type(fn).__name__}")
    with TensorBytes() as counter:
        result = fn()  # kept until the mode exits, so the result counts at the peak
    del result
    return counter


def allocated_bytes(fn: Callable[[], object]) -> int:
    """Peak bytes of the tensors ``fn()`` creates that are alive at the same time (exact).

    Counted by :class:`TensorBytes` (module docstring): every intermediate is counted from the
    operation that creates it until its storage is freed; the result counts too. Inputs and
    parameters that exist before the call are not counted. The same on every device and machine.
    """
    return _count(fn).peak


def largest_tensor_bytes(fn: Callable[[], object]) -> int:
    """Bytes of the largest single tensor storage ``fn()`` creates
    (exact; see :class:`TensorBytes`).
    """
    return _count(fn).largest


def cuda_peak_bytes(fn: Callable[[], object], *, device: torch.device | str = "cuda") -> float:
    """Peak of ``torch.cuda.max_memory_allocated`` during ``fn()`` above what was allocated before.

    Includes kernels' scratch buffers and the caching allocator's rounding; NaN on any device
    that is not CUDA.
    """
    device = torch.device(device)
    if device.type != "cuda":
        return float("nan")
    torch.cuda.synchronize(device)
    torch.cuda.reset_peak_memory_stats(device)
    base = torch.cuda.memory_allocated(device)
    result = fn()
    torch.cuda.synchronize(device)
    peak = torch.cuda.max_memory_allocated(device)
    del result
    return float(peak - base)
