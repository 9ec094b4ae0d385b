"""Benchmark helper only: the process's peak resident-set growth while a call runs (Linux).

The library counts memory exactly (``attnlib.course.memory.allocated_bytes``: the bytes of the
tensors a call creates). This helper measures what the operating system sees instead, for comparison
in ``benchmarks/attention_memory.py``; it depends on glibc, the kernel and allocator timing, so no
test or notebook relies on it.

- CUDA: ``torch.cuda.max_memory_allocated()`` (see ``attnlib.course.memory.cuda_peak_bytes``).
- CPU (Linux): torch's CPU tensors do not go through Python's allocator, so ``tracemalloc``
  cannot see them. Instead we read the kernel's peak resident-set size of this process
  (``VmHWM`` in ``/proc/self/status``) after resetting it (writing ``5`` to
  ``/proc/self/clear_refs``), and subtract the resident size before the call. Freed heap
  memory is first returned to the system (``malloc_trim``) and glibc's mmap threshold is fixed
  at 128 KiB (``mallopt``) during the measurement, so every large tensor is mapped fresh
  and counted. Anything else the process allocates meanwhile is counted too, and allocations
  under about 128 KiB may be served from memory already resident and go unseen. Afterwards the
  mmap threshold is set to 32 MiB (the ceiling glibc's own adaptive threshold reaches).
- Elsewhere (macOS, MPS): not measured, reported as NaN.
"""

from __future__ import annotations

import ctypes
import gc
import os
from collections.abc import Callable

import torch

from attnlib.course.memory import cuda_peak_bytes

__all__ = ["peak_extra_memory"]

_M_MMAP_THRESHOLD = -3  # glibc's mallopt parameter number
_MMAP_THRESHOLD = 128 * 1024  # while measuring
_MMAP_THRESHOLD_AFTER = 32 * 1024 * 1024  # glibc's own ceiling for its dynamic threshold
_libc = None


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


def peak_extra_memory(fn: Callable[[], object], *, device: torch.device | str = "cpu") -> float:
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
        return cuda_peak_bytes(fn, device=device)
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
