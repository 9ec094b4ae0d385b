"""Cost of one layer (C41): the table against measurements, FLOPs against torch's counter, exact
memory.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest
import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

from attnlib import dot_product_attention
from attnlib.course.costs import (
    complexity_table,
    layer_costs,
    median_time,
    written_out_attention,
)
from attnlib.course.memory import (
    TensorBytes,
    allocated_bytes,
    cuda_peak_bytes,
    largest_tensor_bytes,
)

# The lines of the course seed text that the table test reads (section 9.7), committed so the
# test asserts on every machine; the header names the source file.
SEED = Path(__file__).parent / "data" / "seeds" / "004_excerpt.txt"


def _flops(fn) -> int:
    """FLOPs of fn() by torch's own counter (2 per multiply-add of every matmul / convolution)."""
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        fn()
    return counter.get_total_flops()


def _exponents(big_o: str) -> dict[str, int]:
    """'O(k·n·d²)' -> {'k': 1, 'n': 1, 'd': 2}; 'O(n²·d)' -> {'n': 2, 'd': 1}."""
    body = big_o.strip("$ ").removeprefix("O(").removesuffix(")").replace("^2", "²")
    out: dict[str, int] = {}
    for symbol, square in re.findall(r"([knd])(²?)", body):
        out[symbol] = out.get(symbol, 0) + (2 if square else 1)
    return out


def test_c41_compute_column_matches_the_counted_flops_of_real_layers():
    # For each layer, the exponents of n, d and k in the table's compute column must be the
    # growth rates of the FLOPs torch's FlopCounterMode counts for a real layer when n, d or k
    # doubles: nn.Conv1d (k taps), nn.RNN, and attention of the sequence with itself.
    def layer_flops(layer: str, n: int, d: int, k: int) -> int:
        x = torch.randn(1, n, d)
        if layer == "CNN":
            conv = nn.Conv1d(d, d, k, padding=k // 2)
            return _flops(lambda: conv(x.transpose(1, 2)))
        if layer == "RNN":
            rnn = nn.RNN(d, d, batch_first=True)
            return _flops(lambda: rnn(x))
        return _flops(lambda: dot_product_attention(x, x, x))

    base = {"n": 64, "d": 16, "k": 3}
    for row in complexity_table():
        claimed = _exponents(row["compute"])
        for symbol in ("n", "d", "k"):
            doubled = dict(base, **{symbol: 2 * base[symbol] + (1 if symbol == "k" else 0)})
            ratio = layer_flops(row["layer"], **doubled) / layer_flops(row["layer"], **base)
            growth = doubled[symbol] / base[symbol]
            assert math.log(ratio) / math.log(growth) == pytest.approx(
                claimed.get(symbol, 0), abs=1e-9
            ), (row, symbol)


def test_c41_longest_path_column_matches_gradients():
    # Longest path, measured: how many stacked layers until output n-1 depends on input 0.
    def conv_layers_needed(n: int, k: int) -> int:
        x = torch.randn(1, 2, n, requires_grad=True)
        conv = nn.Conv1d(2, 2, k, padding=k // 2)
        h, layers = x, 0
        while True:
            h, layers = conv(h), layers + 1
            (g,) = torch.autograd.grad(h[..., -1].sum(), x, retain_graph=True)
            if g[..., 0].abs().sum() > 0:
                return layers

    rows = {r["layer"]: r for r in complexity_table()}
    assert rows["CNN"]["longest_path"] == "O(n/k)"
    # n/k: doubling n doubles the layers, a wider kernel (k=3 -> 5) halves them
    assert conv_layers_needed(33, 3) == 2 * conv_layers_needed(17, 3) == 32
    assert conv_layers_needed(33, 5) == conv_layers_needed(33, 3) // 2
    x = torch.randn(1, 40, 4, requires_grad=True)
    (g,) = torch.autograd.grad(dot_product_attention(x, x, x)[0][:, -1].sum(), x)
    assert rows["self-attention"]["longest_path"] == "O(1)" and g[0, 0].abs().sum() > 0


def test_c41_complexity_table_is_the_seed_table():
    # The seed's §9.7 table (compute and longest path verbatim; its middle column counts positions
    # computable in parallel, O(n) exactly where ours says O(1) sequential steps, and vice versa).
    text = SEED.read_text(encoding="utf-8")
    names = {"CNN": "CNN", "RNN": "RNN", "自注意力": "self-attention"}
    seed = {}
    for line in text[text.index("9.7 CNN") : text.index("9.7.1")].splitlines():
        cells = line.split("\t")
        if len(cells) == 4 and cells[0] in names:
            seed[names[cells[0]]] = cells[1:]
    assert set(seed) == {"CNN", "RNN", "self-attention"}
    for row in complexity_table():
        compute, parallel, path = seed[row["layer"]]
        assert _exponents(row["compute"]) == _exponents(compute)
        assert row["longest_path"] == path.strip("$")
        assert (row["sequential_steps"] == "O(1)") == (parallel.strip("$") == "O(n)")


def test_tensor_bytes_counts_known_allocations_exactly():
    def allocate_and_free_twice():
        a = torch.ones(1000)  # 4000 bytes
        del a
        b = torch.ones(1000)  # the same 4000 again, after a was freed
        return b.sum()  # + 4 bytes

    with TensorBytes() as counted:
        allocate_and_free_twice()
    assert (counted.peak, counted.largest, counted.total) == (4004, 4000, 8004)
    # views, reshapes and in-place ops create no storage; a copy does
    x = torch.zeros(10, 10)
    assert allocated_bytes(lambda: (x.T, x.view(100), x[2:5], x.add_(1))) == 0
    assert allocated_bytes(lambda: x.clone()) == 400
    assert (
        largest_tensor_bytes(
            lambda: (torch.empty(7, dtype=torch.float64), torch.empty(3, dtype=torch.int8))
        )
        == 56
    )


def test_allocated_bytes_of_written_out_attention_is_two_score_matrices_plus_output():
    # scores = (q kᵀ) * scale: the product and the scaled copy coexist for a moment (2 n² floats);
    # then softmax(scores) lives next to `scores` (still referenced), and the (n, d) output is
    # written while both are alive: 2 n² + n d floats at the peak.
    n, d = 96, 8
    x = torch.randn(1, n, d)
    with torch.no_grad():
        peak = allocated_bytes(lambda: written_out_attention(x, x, x))
    assert peak == (2 * n * n + n * d) * 4


def test_allocated_bytes_counts_what_autograd_keeps_alive():
    x = torch.randn(64, 64, requires_grad=True)
    kept = allocated_bytes(lambda: (x * 2).exp())  # exp saves its output; the product is freed
    assert kept == 2 * 64 * 64 * 4  # both alive at the peak (the product while exp runs)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_peak_bytes_sees_at_least_the_exact_count():
    x = torch.randn(1, 512, 64, device="cuda")
    fn = lambda: written_out_attention(x, x, x)  # noqa: E731
    fn()
    exact = allocated_bytes(fn)
    assert exact <= cuda_peak_bytes(fn) <= exact + 8 * 2**20  # plus kernels' workspaces
    assert math.isnan(cuda_peak_bytes(fn, device="cpu"))


def test_c41_layer_costs_flops_and_sizes_against_independent_counts(one_thread):
    state = torch.get_rng_state()
    B, d, k = 2, 16, 5
    rows = layer_costs([64, 128], d_model=d, kernel_size=k, batch_size=B, repeats=1)
    assert torch.equal(torch.get_rng_state(), state)  # the caller's random stream is untouched
    assert [(r.layer, r.n) for r in rows] == [
        ("self-attention", 64),
        ("RNN", 64),
        ("CNN", 64),
        ("self-attention", 128),
        ("RNN", 128),
        ("CNN", 128),
    ]
    rnn, cnn = nn.RNN(d, d, batch_first=True), nn.Conv1d(d, d, k, padding=k // 2)
    for r in rows:
        x = torch.randn(B, r.n, d)
        xt = x.transpose(1, 2).contiguous()  # (B, d, n), made before the count as layer_costs does
        fn = {
            "self-attention": lambda x=x, xt=xt: written_out_attention(x, x, x),
            "RNN": lambda x=x, xt=xt: rnn(x)[0],
            "CNN": lambda x=x, xt=xt: cnn(xt),
        }[r.layer]
        assert r.flops == _flops(fn), r  # torch's FlopCounterMode on the same layer
        with torch.no_grad():
            assert r.largest_intermediate_bytes == largest_tensor_bytes(fn), r
            assert r.peak_bytes == allocated_bytes(fn), r
        assert r.seconds > 0


def test_c41_attention_memory_grows_quadratically_rnn_and_cnn_linearly():
    # Exact counts: 4x the length gives attention up to 16x the memory (the n x n matrices
    # dominate; a linear n·d term, with d = 64 against n = 512, pulls it down to about 15.3) and
    # the RNN and CNN exactly 4x (every tensor they create is n x d).
    rows = layer_costs([512, 2048], d_model=64, repeats=1)
    by = {(r.layer, r.n): r.peak_bytes for r in rows}
    assert by["self-attention", 2048] >= 2 * 2048 * 2048 * 4  # two n x n float32 matrices
    assert 15.0 < by["self-attention", 2048] / by["self-attention", 512] <= 16.0
    for layer in ("RNN", "CNN"):
        assert by[layer, 2048] / by[layer, 512] == pytest.approx(4.0, abs=0.01)
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
    with pytest.raises(TypeError, match="fn must be callable"):
        allocated_bytes(42)
