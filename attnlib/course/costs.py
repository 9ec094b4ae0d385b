"""What a layer costs as the sequence grows: the idealised table, and the fitted exponent.

The measured side (time, counted multiply-adds, exact memory of three layers) is
:mod:`attnlib.course.measured_costs`, re-exported here; the exact memory of a call (the bytes
of the tensors it creates, counted by a dispatch mode) is :mod:`attnlib.course.memory`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from attnlib.course._shown import ShownKey
from attnlib.course.measured_costs import (
    CostRow,
    counted_macs,
    layer_costs,
    median_time,
    written_out_attention,
)
from attnlib.util._checks import check_positive_int
from attnlib.util.i18n import N_

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
        Rows ``{"layer", "compute", "sequential_steps", "longest_path"}``. ``"layer"`` is a
        :class:`~attnlib.course._shown.ShownKey`: it compares as ``"self-attention"`` and prints
        in the current language (the seed's own table is Chinese); the formulas are as they are.
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
            "layer": ShownKey(N_("self-attention")),
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
        return {
            "CNN": self.cnn_macs,
            "RNN": self.rnn_macs,
            N_("self-attention"): self.attention_macs,
        }

    @property
    def memory(self) -> dict[str, np.ndarray]:  # {curve: bytes of the largest array}
        return {
            N_("self-attention"): self.attention_bytes,
            N_("blockwise attention"): self.blockwise_bytes,
            N_("RNN / CNN output"): self.output_bytes,
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
