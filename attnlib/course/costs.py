"""What a layer costs as the sequence grows: the idealised table, measured time, exact memory.

The exact memory of a call (the bytes of the tensors it creates, counted by a dispatch mode) is
:mod:`attnlib.course.memory`; :func:`layer_costs` reports it next to the measured time.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

import numpy as np
import torch
from torch import nn

from attnlib.core.scoring import scaled_scores
from attnlib.course.memory import allocated_bytes
from attnlib.util._checks import check_positive_int, check_tensor

__all__ = [
    "CostRow",
    "TheoreticalCosts",
    "complexity_table",
    "counted_macs",
    "fitted_slope",
    "layer_costs",
    "median_time",
    "score_bytes",
    "theoretical_costs",
    "written_out_attention",
]


def complexity_table() -> list[dict[str, str]]:
    """The idealised cost of one layer (n positions, width d, kernel k), as in the seed §9.7.

    The middle column is the *minimum number of sequential operations* (the seed's note gives
    this form next to the slides' "positions computable in parallel").

    Returns:
        Rows ``{"layer", "compute", "sequential_steps", "longest_path"}``.
    """
    return [
        {
            "layer": "CNN",
            "compute": "O(k·n·d²)",
            "sequential_steps": "O(1)",
            "longest_path": "O(n/k)",
        },
        {"layer": "RNN", "compute": "O(n·d²)", "sequential_steps": "O(n)", "longest_path": "O(n)"},
        {
            "layer": "self-attention",
            "compute": "O(n²·d)",
            "sequential_steps": "O(1)",
            "longest_path": "O(1)",
        },
    ]


# ---------------------------------------------------------------------------------------------
# The arithmetic: bytes and multiply-adds from the formulas, and the growth rate of a cost.


def score_bytes(num_queries: int, num_keys: int, *, dtype: torch.dtype = torch.float32) -> int:
    """Bytes of one ``(num_queries, num_keys)`` block of attention scores in ``dtype``.

    Full attention holds ``score_bytes(L, S)``; blockwise attention ``score_bytes(L, block)``.
    """
    for name, n in (("num_queries", num_queries), ("num_keys", num_keys)):
        if isinstance(n, bool) or not isinstance(n, int):
            raise TypeError(f"{name} must be an int, got {type(n).__name__}")
        if n < 0:
            raise ValueError(f"{name} must be an int >= 0, got {n!r}")
    if not isinstance(dtype, torch.dtype):
        raise TypeError(f"dtype must be a torch.dtype, got {type(dtype).__name__}")
    return num_queries * num_keys * torch.empty((), dtype=dtype).element_size()


@dataclass(frozen=True)
class TheoreticalCosts:
    """One layer's multiply-adds and largest array at each n, from the formulas of the seed's table.

    Attributes (all ``(N,)`` float64 arrays, one entry per n):
        ns: the sequence lengths.
        cnn_macs: ``k n d²`` (k taps of a d x d matrix at every position).
        rnn_macs: ``2 n d²`` (per position, the input and the recurrent d x d matrix, as
            ``nn.RNN``).
        attention_macs: ``2 n² d`` (a length-d dot product for every pair of positions, ``QKᵀ``,
            and the weighted sum of the values, ``softmax(·) V``); no projections.
        projection_macs: ``4 n d²`` (``W_Q, W_K, W_V, W_O``, which the seed's table leaves out).
        attention_bytes: the ``n x n`` score matrix.
        blockwise_bytes: one ``n x min(block, n)`` block of scores: every query row against
            one key block, the simplest blockwise form. :func:`attnlib.blockwise_attention` also
            tiles the queries, so its slice is constant in n (see
            :func:`attnlib.core.blockwise.query_tile`).
        output_bytes: the ``n x d`` output of an RNN or CNN layer.
    """

    ns: np.ndarray
    cnn_macs: np.ndarray
    rnn_macs: np.ndarray
    attention_macs: np.ndarray
    projection_macs: np.ndarray
    attention_bytes: np.ndarray
    blockwise_bytes: np.ndarray
    output_bytes: np.ndarray

    @property
    def compute(self) -> dict[str, np.ndarray]:  # {layer: multiply-adds}, for plotting
        return {"CNN": self.cnn_macs, "RNN": self.rnn_macs, "self-attention": self.attention_macs}

    @property
    def memory(self) -> dict[str, np.ndarray]:  # {curve: bytes of the largest array}
        return {
            "self-attention": self.attention_bytes,
            "blockwise attention": self.blockwise_bytes,
            "RNN / CNN output": self.output_bytes,
        }


def theoretical_costs(
    ns: Sequence[int],
    *,
    d_model: int = 512,
    kernel_size: int = 3,
    block_size: int = 128,
    bytes_per_number: int = 4,
) -> TheoreticalCosts:
    """Multiply-adds and largest-array bytes of one layer at each n (see :class:`TheoreticalCosts`).

    Args:
        ns: sequence lengths (each >= 1).
        d_model: d.
        kernel_size: k of the convolution.
        block_size: keys per block for blockwise attention.
        bytes_per_number: 4 for float32.
    """
    for name, value in (
        ("d_model", d_model),
        ("kernel_size", kernel_size),
        ("block_size", block_size),
        ("bytes_per_number", bytes_per_number),
    ):
        check_positive_int(name, value)
    n = np.asarray(ns, dtype=np.float64).reshape(-1)
    if n.size == 0 or (n < 1).any():
        raise ValueError(f"ns must hold sequence lengths >= 1, got {n.tolist()}")
    d, k, size = float(d_model), float(kernel_size), float(bytes_per_number)
    n.setflags(write=False)
    return TheoreticalCosts(
        ns=n,
        cnn_macs=k * n * d**2,
        rnn_macs=2 * n * d**2,
        attention_macs=2 * n**2 * d,
        projection_macs=4 * n * d**2,
        attention_bytes=n**2 * size,
        blockwise_bytes=n * np.minimum(block_size, n) * size,
        output_bytes=n * d * size,
    )


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

    check_positive_int("d_model", d_model)
    check_positive_int("kernel_size", kernel_size)
    if not ns:
        raise ValueError("ns must hold at least one sequence length")
    for n in ns:
        check_positive_int("n", n)
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


def fitted_slope(ns: Sequence[float], values: Sequence[float]) -> float:
    """Slope of the least-squares line through ``(log n, log value)``: cost ∝ n^slope.

    Args:
        ns: sequence lengths (> 0), at least two different ones.
        values: the cost at each n (> 0).

    Returns:
        The fitted exponent (NaN if any value is NaN or not positive).
    """
    n = np.asarray(ns, dtype=np.float64).reshape(-1)
    y = np.asarray(values, dtype=np.float64).reshape(-1)
    if n.shape != y.shape:
        raise ValueError(f"ns has {n.size} entries but values has {y.size}")
    if n.size < 2 or np.unique(n).size < 2:
        raise ValueError(f"need at least two different n to fit a slope, got {n.tolist()}")
    if (n <= 0).any():
        raise ValueError(f"ns must be > 0, got {n.tolist()}")
    if not np.isfinite(y).all() or (y <= 0).any():
        return float("nan")
    slope, _ = np.polyfit(np.log(n), np.log(y), 1)
    return float(slope)


# ---------------------------------------------------------------------------------------------
# Time, and the three layers measured side by side.


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
        layer: ``"self-attention"``, ``"RNN"`` or ``"CNN"``.
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
                (
                    "self-attention",
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
