"""Measured cost of self-attention, an RNN and a CNN layer as n grows, and how it is measured (C41)."""

from __future__ import annotations

import math

import pytest
import torch

from attnlib import complexity_table, layer_costs, median_time, peak_extra_memory

MiB = 2**20




def _measurable() -> bool:
    return not math.isnan(peak_extra_memory(lambda: None))


def test_c41_complexity_table_matches_the_seed():
    rows = {r["layer"]: r for r in complexity_table()}
    assert rows["CNN"]["compute"] == "O(k·n·d²)" and rows["CNN"]["longest_path"] == "O(n/k)"
    assert rows["RNN"]["sequential_steps"] == "O(n)" and rows["RNN"]["longest_path"] == "O(n)"
    assert rows["self-attention"]["compute"] == "O(n²·d)"
    assert rows["self-attention"]["sequential_steps"] == "O(1)"
    assert rows["self-attention"]["longest_path"] == "O(1)"


def test_peak_extra_memory_sees_a_known_allocation():
    if not _measurable():
        pytest.skip("peak memory is not measurable on this platform (needs Linux /proc)")
    size = 64 * MiB

    def allocate_and_free_twice():
        a = torch.ones(size // 4)  # 64 MiB of float32, touched
        del a
        b = torch.ones(size // 4)
        return b.sum()

    peak_extra_memory(allocate_and_free_twice)  # warm-up
    peak = peak_extra_memory(allocate_and_free_twice)
    # One 64 MiB buffer alive at a time: the peak is 64 MiB, not 128 (and not 0).
    assert 0.95 * size <= peak <= 1.1 * size


def test_c41_layer_costs_rows_and_formulas(one_thread):
    state = torch.get_rng_state()
    rows = layer_costs([64, 128], d_model=16, kernel_size=5, batch_size=2, repeats=1)
    assert torch.equal(torch.get_rng_state(), state)  # the caller's random stream is untouched
    assert [(r.layer, r.n) for r in rows] == [("self-attention", 64), ("RNN", 64), ("CNN", 64),
                                              ("self-attention", 128), ("RNN", 128),
                                              ("CNN", 128)]
    by = {(r.layer, r.n): r for r in rows}
    assert by["self-attention", 128].flops == 2 * 2 * 2 * 128 * 128 * 16
    assert by["RNN", 128].flops == 2 * 2 * 2 * 128 * 16 * 16
    assert by["CNN", 128].flops == 2 * 5 * 2 * 128 * 16 * 16
    assert by["self-attention", 128].largest_intermediate_bytes == 2 * 128 * 128 * 4
    assert by["RNN", 128].largest_intermediate_bytes == 2 * 128 * 16 * 4
    assert all(r.seconds > 0 for r in rows)


def test_c41_attention_memory_grows_quadratically_rnn_and_cnn_linearly(one_thread):
    if not _measurable():
        pytest.skip("peak memory is not measurable on this platform (needs Linux /proc)")
    rows = layer_costs([512, 2048], d_model=64, repeats=3)
    by = {(r.layer, r.n): r.peak_bytes for r in rows}
    # The n x n score matrix must exist: at least its size. For 4x the length, n^2 memory grows
    # 16x and linear memory 4x; a measured peak counts two or three n x n buffers depending on
    # when the allocator hands a freed one back, so the bounds leave that factor 1.5 of room.
    assert by["self-attention", 2048] >= 2048 * 2048 * 4
    assert 9.0 < by["self-attention", 2048] / by["self-attention", 512] < 28.0
    for layer in ("RNN", "CNN"):
        assert by[layer, 2048] / by[layer, 512] < 7.0
        assert by[layer, 2048] < by["self-attention", 2048] / 8


def test_median_time_counts_the_call():
    calls = []
    seconds = median_time(lambda: calls.append(1), repeats=3, warmup=2)
    assert len(calls) == 5 and seconds >= 0


def test_bad_input_errors():
    with pytest.raises(ValueError, match="ns must hold"):
        layer_costs([])
    with pytest.raises(ValueError, match="n must be >= 1"):
        layer_costs([16, 0])
    with pytest.raises(ValueError, match="d_model must be >= 1"):
        layer_costs([16], d_model=0)
    with pytest.raises(ValueError, match="repeats must be >= 1"):
        median_time(lambda: None, repeats=0)
    with pytest.raises(ValueError, match="warmup"):
        median_time(lambda: None, warmup=-1)
