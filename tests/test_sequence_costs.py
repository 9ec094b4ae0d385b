"""Cost arithmetic in attnlib.course.costs (fitted slopes, the formulas) and the figure's
measured-cost panels.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
import torch
from matplotlib.figure import Figure
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

from attnlib import blockwise_attention
from attnlib.course.costs import (
    CostRow,
    counted_macs,
    fitted_slope,
    layer_costs,
    score_bytes,
    theoretical_costs,
    written_out_attention,
)
from attnlib.course.memory import largest_tensor_bytes
from attnlib.figures.sequence_costs import measured_cost_panels, sequence_costs_figure


@pytest.mark.parametrize("p", [0.0, 1.0, 2.0, 1.5])
def test_fitted_slope_recovers_a_power_law(p):
    ns = [128, 256, 512, 1024]
    assert fitted_slope(ns, [3.0 * n**p for n in ns]) == pytest.approx(p, abs=1e-12)


def test_fitted_slope_against_numpy_polyfit_on_noisy_data():
    rng = np.random.default_rng(0)
    ns = np.array([100, 200, 400, 800, 1600])
    ys = ns**2 * np.exp(rng.normal(0, 0.1, ns.size))
    expected = np.polyfit(np.log(ns), np.log(ys), 1)[0]
    assert fitted_slope(ns, ys) == pytest.approx(expected, rel=1e-12)


def test_fitted_slope_bad_input():
    assert math.isnan(fitted_slope([1, 2], [1.0, float("nan")]))
    assert math.isnan(fitted_slope([1, 2], [1.0, 0.0]))
    with pytest.raises(ValueError, match="two different n"):
        fitted_slope([4, 4], [1.0, 2.0])
    with pytest.raises(ValueError, match="entries"):
        fitted_slope([1, 2, 3], [1.0, 2.0])
    with pytest.raises(ValueError, match="> 0"):
        fitted_slope([0, 2], [1.0, 2.0])


def _macs(fn) -> float:
    """Multiply-adds of fn() counted by torch's FlopCounterMode (2 FLOPs per multiply-add)."""
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        fn()
    return counter.get_total_flops() / 2


def test_c41_theoretical_compute_equals_torchs_flop_count_of_each_layers_core():
    ns, d, k = [16, 64, 96], 32, 3
    c = theoretical_costs(ns, d_model=d, kernel_size=k, block_size=8)
    conv = nn.Conv1d(d, d, k, padding=k // 2, bias=False)
    rnn = nn.RNN(d, d, batch_first=True, bias=False)
    for i, n in enumerate(ns):
        x = torch.randn(1, n, d)
        assert c.cnn_macs[i] == _macs(lambda x=x: conv(x.transpose(1, 2)))
        # nn.RNN multiplies by two d x d matrices per position (input and recurrent): 2 n d².
        assert c.rnn_macs[i] == _macs(lambda x=x: rnn(x))
        # QKᵀ and the product with V, n² d each: 2 n² d (issue 28: the table counted QKᵀ only)
        assert c.attention_macs[i] == _macs(
            lambda x=x: torch.softmax(x @ x.transpose(-2, -1), -1) @ x
        )
        assert c.projection_macs[i] == 4 * _macs(lambda x=x: nn.Linear(d, d)(x))
    assert c.compute["CNN"] is c.cnn_macs and c.memory["blockwise attention"] is c.blockwise_bytes
    # attention equals the RNN exactly at n = d
    assert (
        theoretical_costs([d], d_model=d).attention_macs[0]
        == theoretical_costs([d], d_model=d).rnn_macs[0]
    )


def test_c41_c42_theoretical_memory_is_the_largest_tensor_the_layers_create():
    ns, d, block = [64, 256], 16, 32
    c = theoretical_costs(ns, d_model=d, block_size=block)
    rnn = nn.RNN(d, d, batch_first=True)
    for i, n in enumerate(ns):
        x = torch.randn(1, n, d)
        with torch.no_grad():
            assert c.attention_bytes[i] == largest_tensor_bytes(
                lambda x=x: written_out_attention(x, x, x)
            )
            assert c.output_bytes[i] == largest_tensor_bytes(lambda x=x: rnn(x)[0])
            # blockwise attention never creates more than one n x block slice of scores
            assert (
                largest_tensor_bytes(lambda x=x: blockwise_attention(x, x, x, block_size=block))
                <= c.blockwise_bytes[i]
            )
        assert c.attention_bytes[i] == score_bytes(n, n) == torch.empty(n, n).nbytes
    assert fitted_slope(ns, c.attention_bytes) == pytest.approx(2.0)
    assert fitted_slope(ns, c.blockwise_bytes) == pytest.approx(1.0)


def test_theoretical_costs_is_frozen_and_checks_its_input():
    c = theoretical_costs([4, 8])
    with pytest.raises(dataclasses.FrozenInstanceError):
        c.ns = np.array([1.0])
    with pytest.raises(ValueError, match="ns must hold"):
        theoretical_costs([0, 4])
    with pytest.raises(ValueError, match="block_size must be >= 1"):
        theoretical_costs([4], block_size=0)


def test_score_bytes_is_the_size_of_a_real_tensor():
    for dtype in (torch.float32, torch.float64, torch.bfloat16):
        assert score_bytes(3, 5, dtype=dtype) == torch.empty(3, 5, dtype=dtype).nbytes
    with pytest.raises(ValueError, match="num_keys must be an int >= 0"):
        score_bytes(3, -1)
    with pytest.raises(TypeError, match="num_queries must be an int"):
        score_bytes(2.0, 3)


def test_measured_cost_panels_draw_every_row():
    rows = [
        CostRow(
            layer, n, 1e-3 * n / 256, float(4 * n * (n if layer == "self-attention" else 64)), 0, 0
        )
        for n in (256, 512, 1024)
        for layer in ("self-attention", "RNN", "CNN")
    ]
    fig = Figure()
    axes = fig.subplots(1, 2)
    lines = measured_cost_panels(rows, axes)
    assert set(lines) == {
        (l, k) for l in ("self-attention", "RNN", "CNN") for k in ("time", "memory")
    }
    x, y = lines["self-attention", "memory"].get_data()
    assert list(x) == [256, 512, 1024]
    np.testing.assert_allclose(y, [4 * n * n / 2**20 for n in (256, 512, 1024)])
    assert axes[0].get_xscale() == "log" and axes[1].get_yscale() == "log"
    # Both panels carry the dotted guides: slope 1 and 2 through half the lowest first point.
    for ax, first in ((axes[0], 1e-3 * 1e3), (axes[1], 4 * 256 * 64 / 2**20)):
        guides = [ln for ln in ax.get_lines() if ln.get_linestyle() == ":"]
        assert len(guides) == 2
        for p, ln in zip((1, 2), guides):
            gx, gy = ln.get_data()
            np.testing.assert_allclose(gy, first / 2 * (np.asarray(gx) / 256) ** p)


def test_registered_figure_builds():
    fig = sequence_costs_figure()
    assert len(fig.axes) == 2


def test_cost_rows_are_frozen_and_count_what_torch_counts():
    """A row of layer_costs cannot be edited, and its FLOPs are torch's FlopCounterMode count of
    the same layer's forward (attention: its two matmuls; CNN: the convolution)."""
    n, d, k = 8, 4, 3
    rows = {r.layer: r for r in layer_costs([n], d_model=d, kernel_size=k, repeats=1)}
    assert set(rows) == {"self-attention", "RNN", "CNN"}
    row = rows["self-attention"]
    assert not isinstance(row, tuple)
    with pytest.raises(dataclasses.FrozenInstanceError):
        row.seconds = 0.0
    x = torch.randn(1, n, d)
    with FlopCounterMode(display=False) as counter:
        written_out_attention(x, x, x)
    assert row.flops == counter.get_total_flops()
    conv = nn.Conv1d(d, d, k, padding=k // 2)
    with FlopCounterMode(display=False) as counter:
        conv(x.transpose(1, 2))
    assert rows["CNN"].flops == counter.get_total_flops()
    assert row.largest_intermediate_bytes == torch.empty(n, n).nbytes  # the score matrix
    assert row.peak_bytes >= row.largest_intermediate_bytes


def test_c41_counted_macs_against_the_closed_forms_and_the_crossovers():
    # Closed forms (independent of torch's counter): CNN k n d², nn.RNN 2 n d² (input and
    # recurrent matrix), written-out attention 2 n² d (QKᵀ and the product with V), four
    # projections 4 n d². Attention costs as much as the RNN at n = d and as the CNN at n = k d / 2.
    d, k = 64, 3
    ns = [32, 64, 96, 128]
    c = counted_macs(ns, d_model=d, kernel_size=k)
    for i, n in enumerate(ns):
        assert c["CNN"][i] == k * n * d * d
        assert c["RNN"][i] == 2 * n * d * d
        assert c["attention"][i] == 2 * n * n * d
        assert c["projections"][i] == 4 * n * d * d
    assert c["attention"][1] == c["RNN"][1]  # n = 64 = d
    assert c["attention"][2] == c["CNN"][2]  # n = 96 = k d / 2
    assert c["attention"][3] > c["CNN"][3]  # n = 128: already dearer than the CNN
    t = theoretical_costs(ns, d_model=d, kernel_size=k)
    assert t.attention_macs.tolist() == c["attention"] and t.rnn_macs.tolist() == c["RNN"]
    with pytest.raises(ValueError, match="d_model"):
        counted_macs([4], d_model=0)
    with pytest.raises(ValueError, match="at least one"):
        counted_macs([])
