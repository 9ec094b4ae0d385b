"""The three layers (self-attention, RNN, CNN) measured side by side as n grows: median time,
multiply-adds counted by torch's ``FlopCounterMode``, and exact memory
(:func:`attnlib.course.memory.allocated_bytes`). The idealised table is
:mod:`attnlib.course.costs`.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

import torch
from torch import nn

from attnlib.core.scoring import scaled_scores
from attnlib.course._shown import ShownKey
from attnlib.course.memory import allocated_bytes
from attnlib.util._checks import check_positive_int, check_tensor
from attnlib.util.i18n import N_

__all__ = ["CostRow", "counted_macs", "layer_costs", "median_time", "written_out_attention"]


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    elif device.type == "mps":
        torch.mps.synchronize()


def median_time(
    fn: Callable[[], object],
    *,
    repeats: int = 5,
    warmup: int = 1,
    device: torch.device | str = "cpu",
) -> float:
    """Median wall-clock seconds of ``fn()`` over ``repeats`` (>= 1) runs after ``warmup`` (>= 0)
    untimed runs; an accelerator ``device`` is synchronised before and after each run."""
    check_positive_int("repeats", repeats)
    if isinstance(warmup, bool) or not isinstance(warmup, int):
        raise TypeError(f"warmup must be an int, got {type(warmup).__name__} ({warmup!r})")
    if warmup < 0:
        raise ValueError(f"warmup must be >= 0, got {warmup}")
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


def written_out_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float | None = None
) -> torch.Tensor:
    """``softmax(q kᵀ · scale) v`` exactly as written: the full ``(..., L, S)`` matrix exists.

    Args:
        q: ``(..., L, D)``; k: ``(..., S, D)``; v: ``(..., S, Dv)``.
        scale: ``None`` means ``1/sqrt(D)``.

    Returns:
        ``(..., L, Dv)``.
    """
    check_tensor("q", q, ndim_min=2)
    scores = scaled_scores(q, k, None if scale is None else float(scale))  # (..., L, S)
    return torch.softmax(scores, dim=-1) @ v  # (..., L, Dv)


@dataclass(frozen=True)
class CostRow:
    """One measurement of :func:`layer_costs`.

    Attributes:
        layer: ``"self-attention"``, ``"RNN"`` or ``"CNN"`` (a
            :class:`~attnlib.course._shown.ShownKey`: printed in the current language).
        n: sequence length.
        seconds: median forward time.
        peak_bytes: exact peak bytes of the tensors the forward creates
            (:func:`allocated_bytes`; the same on every machine and device).
        largest_intermediate_bytes: size of the largest tensor the forward must create
            (attention: the ``n x n`` score matrix; RNN and CNN: the ``n x d`` output).
        flops: multiply-adds x 2 of the forward, from the formula.
    """

    layer: str
    n: int
    seconds: float
    peak_bytes: int
    largest_intermediate_bytes: int
    flops: int


def _deterministic(shape: Sequence[int], device, dtype) -> torch.Tensor:
    """A fixed, well-scaled fill (the library never touches the caller's random stream)."""
    count = math.prod(shape)
    x = torch.sin(torch.arange(count, device=device, dtype=torch.float64) * 0.7071)
    return x.reshape(tuple(shape)).to(dtype)


_M = TypeVar("_M", bound=nn.Module)


def _fill(module: _M) -> _M:
    with torch.no_grad():
        for p in module.parameters():
            fan_in = p.shape[-1] if p.dim() > 1 else p.shape[0]
            p.copy_(_deterministic(p.shape, p.device, p.dtype) / math.sqrt(fan_in))
    return module


def _check_sizes(ns: Sequence[int], d_model: int, kernel_size: int) -> None:
    """The sizes :func:`layer_costs` and :func:`counted_macs` both build their layers from."""
    check_positive_int("d_model", d_model)
    check_positive_int("kernel_size", kernel_size)
    if not ns:
        raise ValueError("ns must hold at least one sequence length")
    for n in ns:
        check_positive_int("n", n)


def layer_costs(
    ns: Sequence[int],
    *,
    d_model: int = 64,
    kernel_size: int = 3,
    batch_size: int = 1,
    device: torch.device | str = "cpu",
    dtype: torch.dtype = torch.float32,
    repeats: int = 3,
) -> list[CostRow]:
    """Time one self-attention, ``nn.RNN`` and ``nn.Conv1d`` layer's forward as n grows, and count
    its memory (C41).

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
        repeats: timed runs per measurement (the median is kept).

    Returns:
        A list of :class:`CostRow`, three per n (attention, RNN, CNN).
    """
    _check_sizes(ns, d_model, kernel_size)
    check_positive_int("batch_size", batch_size)
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
                (
                    ShownKey(N_("self-attention")),  # compares as the key, prints translated
                    lambda: written_out_attention(x, x, x),
                    batch_size * n * n * size,
                    2 * 2 * batch_size * n * n * d_model,
                ),
                (
                    "RNN",
                    lambda: rnn(x)[0],
                    batch_size * n * d_model * size,
                    2 * 2 * batch_size * n * d_model * d_model,
                ),
                (
                    "CNN",
                    lambda: cnn(xt),
                    batch_size * n * d_model * size,
                    2 * kernel_size * batch_size * n * d_model * d_model,
                ),
            ]
            for name, fn, largest, flops in cases:
                seconds = median_time(fn, repeats=repeats, warmup=1, device=device)
                rows.append(CostRow(name, n, seconds, allocated_bytes(fn), largest, flops))
    return rows


def counted_macs(
    ns: Sequence[int], *, d_model: int = 64, kernel_size: int = 3
) -> dict[str, list[int]]:
    """Multiply-adds of one layer's forward at each n, counted by torch's ``FlopCounterMode``.

    The same counter (and the same layers) as :func:`layer_costs`: ``nn.Conv1d(d, d, k)`` with
    "same" padding, ``nn.RNN(d, d)``, single-head :func:`written_out_attention` of the sequence
    with itself, and the four ``nn.Linear(d, d)`` projections of a real attention layer. One
    sequence; FLOPs / 2 (FlopCounterMode counts 2 per multiply-add; biases and the softmax are
    not matrix products and are not counted).

    Returns:
        ``{"CNN": [...], "RNN": [...], "attention": [...], "projections": [...]}``, one int per n.
    """
    from torch.utils.flop_counter import FlopCounterMode

    _check_sizes(ns, d_model, kernel_size)
    d = d_model
    with torch.random.fork_rng(devices=[]):  # the weights do not matter for a count
        cnn = nn.Conv1d(d, d, kernel_size, padding=kernel_size // 2)
        rnn = nn.RNN(d, d, batch_first=True)
        projections = [nn.Linear(d, d) for _ in range(4)]
    counts: dict[str, list[int]] = {"CNN": [], "RNN": [], "attention": [], "projections": []}
    for n in ns:
        x = torch.zeros(1, n, d)  # (B, n, d); values do not change a count
        xt = x.transpose(1, 2).contiguous()  # (B, d, n) as Conv1d wants
        cases = {
            "CNN": lambda: cnn(xt),
            "RNN": lambda: rnn(x),
            "attention": lambda: written_out_attention(x, x, x),
            "projections": lambda: [w(x) for w in projections],
        }
        for name, fn in cases.items():
            with torch.no_grad(), FlopCounterMode(display=False) as counter:
                fn()
            counts[name].append(counter.get_total_flops() // 2)
    return counts
