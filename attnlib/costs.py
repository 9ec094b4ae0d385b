"""What a layer costs as the sequence grows: measured time and peak extra memory.

How memory is measured (honestly, and what it can and cannot see):

- CUDA: ``torch.cuda.max_memory_allocated()`` after ``reset_peak_memory_stats()``, minus what
  was allocated before the call: the exact peak of tensor memory the call added.
- CPU (Linux): torch's CPU tensors do not go through Python's allocator, so ``tracemalloc``
  cannot see them. Instead we read the kernel's peak resident-set size of this process
  (``VmHWM`` in ``/proc/self/status``) after resetting it (writing ``5`` to
  ``/proc/self/clear_refs``), and subtract the resident size before the call. Freed heap
  memory is first returned to the system (``malloc_trim``) and glibc's mmap threshold is fixed
  at 128 KiB (``mallopt``) during the measurement, so every large tensor is mapped fresh
  and counted. The figure is the process's peak growth while the call runs: anything else the
  process allocates meanwhile is counted too, and allocations under about 128 KiB may be
  served from memory already resident and go unseen. It agrees with the sizes of the
  intermediates to within a few percent (the benchmark prints both). After the measurement
  the mmap threshold is set to 32 MiB (the ceiling glibc's own adaptive threshold reaches),
  so later code allocates as it normally would.
- Elsewhere (macOS, MPS): not measured, reported as NaN.

Every row also carries the theoretical size of the largest intermediate, so the measured
number can be checked against arithmetic.
"""

from __future__ import annotations

import ctypes
import gc
import math
import os
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
from torch import nn

from ._checks import check_positive_int, check_tensor

__all__ = [
    "CostRow",
    "complexity_table",
    "median_time",
    "peak_extra_memory",
    "written_out_attention",
    "layer_costs",
]

_M_MMAP_THRESHOLD = -3  # glibc's mallopt parameter number
_MMAP_THRESHOLD = 128 * 1024  # while measuring
_MMAP_THRESHOLD_AFTER = 32 * 1024 * 1024  # glibc's own ceiling for its dynamic threshold
_libc = None


def complexity_table() -> list[dict[str, str]]:
    """The idealised cost of one layer (n positions, width d, kernel k), as in the seed §9.7.

    Returns:
        Rows ``{"layer", "compute", "sequential_steps", "longest_path"}``.
    """
    return [
        {"layer": "CNN", "compute": "O(k·n·d²)", "sequential_steps": "O(1)",
         "longest_path": "O(n/k)"},
        {"layer": "RNN", "compute": "O(n·d²)", "sequential_steps": "O(n)",
         "longest_path": "O(n)"},
        {"layer": "self-attention", "compute": "O(n²·d)", "sequential_steps": "O(1)",
         "longest_path": "O(1)"},
    ]


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    elif device.type == "mps":
        torch.mps.synchronize()


def median_time(fn: Callable[[], object], *, repeats: int = 5, warmup: int = 1,
                device: torch.device | str = "cpu") -> float:
    """Median wall-clock seconds of ``fn()`` over ``repeats`` runs after ``warmup`` runs.

    Args:
        fn: the call to time (its result is dropped).
        repeats: timed runs (>= 1).
        warmup: untimed runs first (>= 0).
        device: synchronised before and after each run when it is an accelerator.

    Returns:
        Seconds.
    """
    check_positive_int("repeats", repeats)
    if isinstance(warmup, bool) or not isinstance(warmup, int) or warmup < 0:
        raise ValueError(f"warmup must be an int >= 0, got {warmup!r}")
    device = torch.device(device)
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        _sync(device)
        start = time.perf_counter()
        fn()
        _sync(device)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _proc_status(key: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024  # the kernel reports kB
    raise OSError(f"{key} not found in /proc/self/status")


def _cpu_measurement_available() -> bool:
    global _libc
    if not os.path.exists("/proc/self/clear_refs"):
        return False
    if _libc is None:
        try:
            libc = ctypes.CDLL("libc.so.6")
        except OSError:
            return False
        if not (hasattr(libc, "mallopt") and hasattr(libc, "malloc_trim")):  # glibc only
            return False
        _libc = libc
    return True


def peak_extra_memory(fn: Callable[[], object], *,
                      device: torch.device | str = "cpu") -> float:
    """Peak memory that ``fn()`` adds on ``device`` while it runs, in bytes.

    See the module docstring for how it is measured on each device. Run ``fn`` once before
    (a warm-up) so one-time initialisations are not counted.

    Args:
        fn: the call to measure (its result is kept until the peak is read, then dropped).
        device: where ``fn`` computes.

    Returns:
        Bytes (a float; NaN where it cannot be measured).
    """
    device = torch.device(device)
    gc.collect(1)  # drop young cyclic garbage (a full collection costs ~0.3 s with torch loaded)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        torch.cuda.reset_peak_memory_stats(device)
        base = torch.cuda.memory_allocated(device)
        result = fn()
        torch.cuda.synchronize(device)
        peak = torch.cuda.max_memory_allocated(device)
        del result
        return float(peak - base)
    if device.type != "cpu" or not _cpu_measurement_available():
        return float("nan")
    # While measuring, every allocation of 128 KiB or more is mmap'd fresh (and so counted);
    # afterwards the threshold goes back up to glibc's ceiling (32 MiB), so that timing runs
    # reuse heap memory as usual instead of paying page faults for every mid-sized tensor.
    _libc.mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD)
    try:
        _libc.malloc_trim(0)  # hand freed heap pages back, so reusing them would show
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # reset the peak resident size (VmHWM) to the current one
        base = _proc_status("VmRSS")
        result = fn()
        peak = _proc_status("VmHWM")
    except OSError:
        return float("nan")
    finally:
        _libc.mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD_AFTER)
    del result
    return float(max(peak - base, 0))


def written_out_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                          scale: float | None = None) -> torch.Tensor:
    """``softmax(q kᵀ · scale) v`` exactly as written: the full ``(..., L, S)`` matrix exists.

    Args:
        q: ``(..., L, D)``; k: ``(..., S, D)``; v: ``(..., S, Dv)``.
        scale: ``None`` means ``1/sqrt(D)``.

    Returns:
        ``(..., L, Dv)``.
    """
    check_tensor("q", q, ndim_min=2)
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else float(scale)
    scores = (q @ k.transpose(-2, -1)) * scale  # (..., L, S)
    return torch.softmax(scores, dim=-1) @ v  # (..., L, Dv)


@dataclass
class CostRow:
    """One measurement of :func:`layer_costs`.

    Attributes:
        layer: ``"self-attention"``, ``"RNN"`` or ``"CNN"``.
        n: sequence length.
        seconds: median forward time.
        peak_bytes: measured peak extra memory of the forward (NaN if not measurable).
        largest_intermediate_bytes: size of the largest tensor the forward must create
            (attention: the ``n x n`` score matrix; RNN and CNN: the ``n x d`` output).
        flops: multiply-adds x 2 of the forward, from the formula.
    """

    layer: str
    n: int
    seconds: float
    peak_bytes: float
    largest_intermediate_bytes: int
    flops: int


def _deterministic(shape: Sequence[int], device, dtype) -> torch.Tensor:
    """A fixed, well-scaled fill (the library never touches the caller's random stream)."""
    count = math.prod(shape)
    x = torch.sin(torch.arange(count, device=device, dtype=torch.float64) * 0.7071)
    return x.reshape(tuple(shape)).to(dtype)


def _fill(module: nn.Module) -> nn.Module:
    with torch.no_grad():
        for p in module.parameters():
            fan_in = p.shape[-1] if p.dim() > 1 else p.shape[0]
            p.copy_(_deterministic(p.shape, p.device, p.dtype) / math.sqrt(fan_in))
    return module


def layer_costs(ns: Sequence[int], *, d_model: int = 64, kernel_size: int = 3,
                batch_size: int = 1, device: torch.device | str = "cpu",
                dtype: torch.dtype = torch.float32, repeats: int = 3) -> list[CostRow]:
    """Measure one self-attention, ``nn.RNN`` and ``nn.Conv1d`` layer's forward as n grows (C41).

    Self-attention is single-head written-out attention of the sequence with itself
    (``softmax(X Xᵀ/√d) X``); the RNN is ``nn.RNN(d, d)``; the CNN is ``nn.Conv1d(d, d, k)``
    with "same" padding. Inputs and weights are a fixed deterministic fill, computed under
    ``torch.no_grad()``.

    Args:
        ns: sequence lengths to measure (each >= 1).
        d_model: d, the width.
        kernel_size: k of the convolution.
        batch_size: B.
        device, dtype: where and in what precision to run.
        repeats: runs per measurement (the median time and the smallest peak memory are kept).

    Returns:
        A list of :class:`CostRow`, three per n (attention, RNN, CNN).
    """
    check_positive_int("d_model", d_model)
    check_positive_int("kernel_size", kernel_size)
    check_positive_int("batch_size", batch_size)
    if not ns:
        raise ValueError("ns must hold at least one sequence length")
    for n in ns:
        check_positive_int("n", n)
    device = torch.device(device)
    size = torch.finfo(dtype).bits // 8
    # Built on the CPU inside fork_rng (the caller's random state is restored afterwards),
    # then given a fixed fill and moved.
    with torch.random.fork_rng(devices=[]):
        rnn = nn.RNN(d_model, d_model, batch_first=True, dtype=dtype)
        cnn = nn.Conv1d(d_model, d_model, kernel_size, padding=kernel_size // 2, dtype=dtype)
    rnn, cnn = _fill(rnn.to(device)), _fill(cnn.to(device))
    rows = []
    with torch.no_grad():
        for n in ns:
            x = _deterministic((batch_size, n, d_model), device, dtype)  # (B, n, d)
            xt = x.transpose(1, 2).contiguous()  # (B, d, n) as Conv1d wants
            cases = [
                ("self-attention", lambda: written_out_attention(x, x, x),
                 batch_size * n * n * size, 2 * 2 * batch_size * n * n * d_model),
                ("RNN", lambda: rnn(x)[0],
                 batch_size * n * d_model * size, 2 * 2 * batch_size * n * d_model * d_model),
                ("CNN", lambda: cnn(xt),
                 batch_size * n * d_model * size,
                 2 * kernel_size * batch_size * n * d_model * d_model),
            ]
            for name, fn, largest, flops in cases:
                seconds = median_time(fn, repeats=repeats, warmup=1, device=device)
                # The smallest of several peaks: allocator noise (a freed buffer not yet handed
                # back to the OS) only ever adds to a measurement, never subtracts.
                peak = min(peak_extra_memory(fn, device=device) for _ in range(repeats))
                rows.append(CostRow(name, n, seconds, peak, largest, flops))
    return rows
