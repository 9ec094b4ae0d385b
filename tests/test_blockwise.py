"""Blockwise (online-softmax) attention: equal to full attention, without the
(L, S) matrix (C42).
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given
from hypothesis import strategies as st
from torch.testing import assert_close
from torch.utils._python_dispatch import TorchDispatchMode

from attnlib import (
    allocated_bytes,
    blockwise_attention,
    blockwise_attention_steps,
    dot_product_attention,
    written_out_attention,
)
from attnlib.core.blockwise import blockwise_attention_lse, query_tile
from attnlib.course.memory import largest_tensor_bytes


def _qkv(device, L, S, dk=8, dv=6, dtype=torch.float32, lead=(2, 3)):
    return (
        torch.randn(*lead, L, dk, device=device, dtype=dtype),
        torch.randn(*lead, S, dk, device=device, dtype=dtype),
        torch.randn(*lead, S, dv, device=device, dtype=dtype),
    )


@pytest.mark.parametrize("block_size", [1, 5, 16, 128, 1000])
@pytest.mark.parametrize("is_causal", [False, True])
def test_c42_equals_sdpa(device, block_size, is_causal):
    q, k, v = _qkv(device, L=37, S=37 if is_causal else 53)
    expected = F.scaled_dot_product_attention(q, k, v, is_causal=is_causal)
    assert_close(blockwise_attention(q, k, v, block_size=block_size, is_causal=is_causal), expected)


@given(
    seed=st.integers(0, 2**31 - 1),
    L=st.integers(1, 300),
    S=st.integers(1, 200),
    block_size=st.integers(3, 80),
    is_causal=st.booleans(),
)
def test_c42_equals_full_attention_float64_property(one_thread, seed, L, S, block_size, is_causal):
    gen = torch.Generator().manual_seed(seed)
    q, k = (torch.randn(2, n, 4, generator=gen, dtype=torch.float64) * 3 for n in (L, S))
    v = torch.randn(2, S, 3, generator=gen, dtype=torch.float64)
    expected, _ = dot_product_attention(q, k, v, is_causal=is_causal)
    assert_close(blockwise_attention(q, k, v, block_size=block_size, is_causal=is_causal), expected)


def test_c42_with_masks_like_full_attention(device):
    q, k, v = _qkv(device, L=300, S=270)
    bool_mask = torch.rand(2, 1, 300, 270, device=device) > 0.5
    bool_mask[0, 0, 7] = False  # a query that sees nothing: zero output, as everywhere in attnlib
    expected, _ = dot_product_attention(q, k, v, bool_mask)
    out = blockwise_attention(q, k, v, block_size=32, attn_mask=bool_mask)
    assert_close(out, expected)
    assert torch.all(out[0, :, 7] == 0)
    float_mask = torch.randn(300, 270, device=device)
    assert_close(
        blockwise_attention(q, k, v, block_size=32, attn_mask=float_mask),
        F.scaled_dot_product_attention(q, k, v, attn_mask=float_mask),
    )
    key_mask = torch.rand(270, device=device) > 0.3  # one row of keys, broadcast to every query
    key_mask[0] = True
    combined = key_mask & torch.ones(300, 270, dtype=torch.bool, device=device).tril()
    assert_close(
        blockwise_attention(q, k, v, block_size=32, attn_mask=key_mask, is_causal=True),
        F.scaled_dot_product_attention(q, k, v, attn_mask=combined),
    )


def test_c42_large_logits_stay_finite():
    # The claim "no overflow, exact, because the running max is subtracted" in float64, where the
    # default (exact-answer) tolerance holds and the scores (~1e4) still overflow a naive exp
    # (> 709).
    q, k, v = _qkv("cpu", L=20, S=40, dtype=torch.float64)
    q = q * 3000
    scores = q @ k.transpose(-2, -1) / 8**0.5  # (2, 3, L, S)
    assert torch.isinf(torch.exp(scores)).any()  # the test really exercises an overflow
    out = blockwise_attention(q, k, v, block_size=7)
    assert torch.isfinite(out).all()
    assert_close(out, F.scaled_dot_product_attention(q, k, v))  # float64 defaults


def test_c42_large_logits_float32_error_is_rounding_of_the_scores():
    # In float32 the same claim holds up to the rounding of the scores themselves, which is what
    # the tolerance is derived from (first order, worst case):
    # - a score s = q·k/√dk summed over dk products in float32 is off by at most about
    #   (dk + 2)·eps·Σ|q_i k_i|/√dk (dk roundings in the sum, one for the scale, one for s - m);
    # - d out / d s_j = w_j (v_j - out), so the output moves by at most max|δs| · 2·max|v|;
    # - the weighted sums and the blocks' rescaling add a relative error of a few eps of max|v|.
    # With scores near 1e3 this is ~1e-3 absolute, far above float32's default atol (1e-5):
    # whether the default holds depends on near-ties between the top two scores, i.e. on the
    # CPU's matmul kernels (AVX2 vs AVX-512), not on blockwise attention.
    dk = 8
    q, k, v = _qkv("cpu", L=20, S=40, dk=dk)
    q = q * 300
    out = blockwise_attention(q, k, v, block_size=7)
    assert torch.isfinite(out).all()
    eps = torch.finfo(torch.float32).eps
    abs_dot = (q.double().abs() @ k.double().abs().transpose(-2, -1)).amax() / dk**0.5
    v_max = float(v.abs().max())
    atol = (dk + 2) * eps * float(abs_dot) * 2 * v_max + 16 * eps * v_max
    reference = F.scaled_dot_product_attention(q.double(), k.double(), v.double())
    assert_close(out.double(), reference, atol=atol, rtol=0)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_c42_half_precision(dtype):
    q, k, v = _qkv("cpu", L=40, S=50, dtype=dtype)
    out = blockwise_attention(q, k, v, block_size=8)
    assert out.dtype == dtype
    reference = F.scaled_dot_product_attention(q.float(), k.float(), v.float())
    assert_close(out.float(), reference, atol=2e-2, rtol=2e-2)


def test_c42_gradients_equal_autograd_of_full_attention_float64():
    q, k, v = (t.requires_grad_() for t in _qkv("cpu", L=30, S=30, dtype=torch.float64))
    g = torch.randn(2, 3, 30, 6, dtype=torch.float64)
    ours = torch.autograd.grad(
        (blockwise_attention(q, k, v, block_size=7, is_causal=True) * g).sum(), (q, k, v)
    )
    ref = torch.autograd.grad(
        (F.scaled_dot_product_attention(q, k, v, is_causal=True) * g).sum(), (q, k, v)
    )
    for a, b in zip(ours, ref):
        assert_close(a, b)
    small = [t.detach()[:1, :1, :6].requires_grad_() for t in (q, k, v)]
    assert torch.autograd.gradcheck(
        lambda a, b, c: blockwise_attention(a, b, c, block_size=4), tuple(small)
    )


def test_c42_running_max_and_sum_follow_their_definitions():
    q, k, v = _qkv("cpu", L=5, S=23, dtype=torch.float64, lead=(1,))
    scores = q @ k.transpose(-2, -1) / 8**0.5  # (1, L, S), written out for the reference
    steps = list(blockwise_attention_steps(q, k, v, block_size=6))
    assert [(s.key_start, s.key_stop) for s in steps] == [(0, 6), (6, 12), (12, 18), (18, 23)]
    for s in steps:
        seen = scores[..., : s.key_stop]
        m = seen.amax(-1)
        assert_close(s.running_max, m)
        assert_close(s.running_sum, torch.exp(seen - m.unsqueeze(-1)).sum(-1))
        partial = torch.softmax(seen, -1) @ v[..., : s.key_stop, :]
        assert_close(s.output, partial)  # attention over the keys read so far
    # The running max never decreases, and the last step is full attention.
    maxes = torch.stack([s.running_max for s in steps])
    assert torch.all(maxes[1:] >= maxes[:-1])
    assert_close(steps[-1].output, F.scaled_dot_product_attention(q, k, v))


def test_c42_steps_are_not_overwritten_later():
    q, k, v = _qkv("cpu", L=4, S=12, lead=(1,))
    with torch.no_grad():
        steps = list(blockwise_attention_steps(q, k, v, block_size=3))
        again = list(blockwise_attention_steps(q, k, v, block_size=3))
    first = steps[0]
    assert not torch.equal(first.running_sum, steps[-1].running_sum)
    assert_close(first.output, again[0].output)


class _LargestTensor(TorchDispatchMode):
    """Records the largest number of elements of any tensor an operation creates."""

    def __init__(self):
        super().__init__()
        self.largest = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for t in out if isinstance(out, (tuple, list)) else (out,):
            if isinstance(t, torch.Tensor):
                self.largest = max(self.largest, t.numel())
        return out


@pytest.mark.parametrize("is_causal", [False, True])
def test_c42_never_materialises_the_score_matrix(is_causal, one_thread):
    L = S = 1024
    q, k, v = _qkv("cpu", L=L, S=S, dk=4, dv=4, lead=(1,))
    with _LargestTensor() as written:
        written_out_attention(q, k, v)
    with _LargestTensor() as blocks:
        blockwise_attention(q, k, v, block_size=64, is_causal=is_causal)
    assert written.largest == L * S  # the full matrix exists in the written-out version
    assert blocks.largest <= max(L * 4, 256 * 64)  # only the output or one tile x block


def test_c42_extra_memory_grows_linearly_measured():
    # Exact counts (attnlib.course.memory.allocated_bytes: bytes of the tensors each call creates,
    # alive at once). 4x the length: written-out attention holds two (H, n, n) float32 matrices, so
    # ~16x; blockwise attention holds the output and one n x block slice per head, so at most 4x.
    peaks = {}
    with torch.no_grad():
        for n in (512, 2048):
            q, k, v = (torch.randn(1, 2, n, 64) for _ in range(3))
            for name, fn in (
                ("written", lambda: written_out_attention(q, k, v)),
                ("blockwise", lambda: blockwise_attention(q, k, v)),
            ):
                peaks[name, n] = allocated_bytes(fn)
    assert peaks["written", 2048] >= 2 * 2 * 2048 * 2048 * 4  # two (H, n, n) float32
    assert peaks["written", 2048] / peaks["written", 512] > 15.0
    assert peaks["blockwise", 2048] / peaks["blockwise", 512] <= 4.0
    assert peaks["blockwise", 2048] < peaks["written", 2048] / 16


def test_bad_input_errors():
    q, k, v = _qkv("cpu", L=4, S=5)
    with pytest.raises(ValueError, match="block_size must be >= 1"):
        blockwise_attention(q, k, v, block_size=0)
    with pytest.raises(ValueError, match="block_size must be >= 1"):
        list(blockwise_attention_steps(q, k, v, block_size=-2))
    with pytest.raises(TypeError, match="block_size must be an int"):
        blockwise_attention(q, k, v, block_size=2.5)
    with pytest.raises(ValueError, match="attn_mask has shape"):
        blockwise_attention(q, k, v, attn_mask=torch.ones(5, 4, dtype=torch.bool))
    with pytest.raises(ValueError, match="d_k"):
        blockwise_attention(q, k[..., :3], v)
    with pytest.raises(TypeError, match="attn_mask"):
        blockwise_attention(q, k, v, attn_mask=torch.ones(4, 5, dtype=torch.long))


def test_never_writes_into_inputs():
    q, k, v = _qkv("cpu", L=9, S=9)
    mask = torch.randn(9, 9)
    copies = [t.clone() for t in (q, k, v, mask)]
    with torch.no_grad():
        blockwise_attention(q, k, v, block_size=4, attn_mask=mask, is_causal=True)
    for t, c in zip((q, k, v, mask), copies):
        assert torch.equal(t, c)


# --- the masking arguments of dot_product_attention; the readable loop; the trace (issue 10) ----


def _hand_visible(lens, L, S, causal):
    """``(B, L, S)`` True = may attend, by loops: key j < valid_len (per row or per query)."""
    B = lens.shape[0]
    vis = torch.zeros(B, L, S, dtype=torch.bool)
    for b in range(B):
        for i in range(L):
            n = int(lens[b] if lens.dim() == 1 else lens[b, i])
            for j in range(S):
                vis[b, i, j] = j < n and (not causal or j <= i)
    return vis


@pytest.mark.parametrize("is_causal", [False, True])
@pytest.mark.parametrize("per_query", [False, True])
def test_c42_valid_lens_like_sdpa_with_the_mask_written_out(is_causal, per_query):
    # float64: SDPA with the hand-built boolean mask is exact to rounding; lens >= 1 so every
    # row sees a key (SDPA gives NaN on a fully hidden row).
    g = torch.Generator().manual_seed(3)
    q, k, v = (torch.randn(3, 2, n, 8, generator=g, dtype=torch.float64) for n in (7, 11, 11))
    v = v[..., :5]
    lens = (
        torch.tensor([[1, 3, 11, 5, 2, 7, 9], [4] * 7, [11] * 7])
        if per_query
        else torch.tensor([1, 6, 11])
    )
    vis = _hand_visible(lens, 7, 11, is_causal)[:, None]  # (B, 1, L, S)
    want = F.scaled_dot_product_attention(q, k, v, attn_mask=vis)
    got = blockwise_attention(q, k, v, valid_lens=lens, is_causal=is_causal, block_size=3)
    assert_close(got, want)
    steps = list(
        blockwise_attention_steps(q, k, v, valid_lens=lens, is_causal=is_causal, block_size=4)
    )
    assert_close(steps[-1].output, want)


def test_c42_valid_lens_combines_with_bool_and_float_masks_and_zero_length_rows():
    g = torch.Generator().manual_seed(4)
    q, k, v = (torch.randn(2, 5, 4, generator=g, dtype=torch.float64) for _ in range(3))
    lens = torch.tensor([0, 3])
    bool_mask = torch.rand(5, 5, generator=g) > 0.3  # (L, S)
    float_mask = torch.randn(5, 5, generator=g, dtype=torch.float64)
    for mask in (bool_mask, float_mask):
        # positional attn_mask, as in dot_product_attention
        got = blockwise_attention(q, k, v, mask, valid_lens=lens, block_size=2)
        want, _ = dot_product_attention(q, k, v, mask, valid_lens=lens)
        assert_close(got, want)
        assert torch.equal(got[0], torch.zeros(5, 4, dtype=torch.float64))  # valid_len 0: zeros


def test_c42_no_keys_and_bad_valid_lens_are_named():
    q = torch.randn(2, 3, 4)
    with pytest.raises(ValueError, match="S = 0"):
        blockwise_attention(q, torch.randn(2, 0, 4), torch.randn(2, 0, 4))
    with pytest.raises(TypeError, match="valid_lens must hold integers"):
        blockwise_attention(q, q, q, valid_lens=torch.tensor([1.0, 2.0]))
    with pytest.raises(ValueError, match="valid_lens has 3 rows"):
        blockwise_attention(q, q, q, valid_lens=torch.tensor([1, 2, 3]))
    with pytest.raises(ValueError, match="needs a batch axis"):
        blockwise_attention(q[0], q[0], q[0], valid_lens=torch.tensor([1]))
    with pytest.raises(TypeError, match="block_size must be an int"):
        blockwise_attention(q, q, q, block_size=2.0)


def test_c42_online_softmax_trace_is_a_frozen_record_of_the_steps():
    from attnlib.core.blockwise import online_softmax_trace

    g = torch.Generator().manual_seed(5)
    q, k, v = (
        torch.randn(4, 6, generator=g),
        torch.randn(9, 6, generator=g),
        torch.randn(9, 3, generator=g),
    )
    tr = online_softmax_trace(q, k, v, block_size=4)
    assert tr.block_end.tolist() == [4, 8, 9]
    s = (q.double() @ k.double().T) / 6**0.5  # (L, S), an independent float64 computation
    for n, end in enumerate([4, 8, 9]):
        # float32 scores of size ~3 round by ~eps·|s|·sqrt(6): 1e-5 absolute covers it
        assert_close(tr.running_max[n].double(), s[:, :end].amax(-1), atol=1e-5, rtol=0)
    assert_close(tr.output, F.scaled_dot_product_attention(q, k, v))
    with pytest.raises(AttributeError):
        tr.output = None
    with pytest.raises(AttributeError):
        next(blockwise_attention_steps(q, k, v, block_size=4)).block = 3


@pytest.mark.parametrize("block_size", [64, 256, 300])
def test_c42_query_tile_times_block_is_the_largest_score_slice_measured(block_size, one_thread):
    # Measured, not computed from query_tile: the largest tensor a call creates (values of width 1
    # keep the output small) is one float32 (tile, block) slice, the same at two lengths.
    for n in (1024, 2048):
        q, k, v = _qkv("cpu", L=n, S=n, dk=4, dv=1, lead=(1,))
        largest = largest_tensor_bytes(lambda: blockwise_attention(q, k, v, block_size=block_size))
        assert largest == query_tile(block_size) * block_size * 4
    assert query_tile(64) == 256 and query_tile(300) == 300
    with pytest.raises(ValueError, match="block_size"):
        query_tile(0)


# --- the backward pass that recomputes the blocks (issue 28) -----------------------------------


def _mask_cases(B=2, H=3, L=9, S=11):
    """(name, attn_mask factory, valid_lens): every mask kind dot_product_attention takes."""
    g = torch.Generator().manual_seed(11)

    def bool_ls():
        m = torch.rand(L, S, generator=g) > 0.4
        m[2] = False  # a query that sees no key: zero output and zero gradient
        return m

    return [
        ("none", lambda: None, None),
        ("bool (L, S) with an empty row", bool_ls, None),
        ("bool (B, 1, L, S)", lambda: torch.rand(B, 1, L, S, generator=g) > 0.3, None),
        ("bool (S,) keys", lambda: torch.rand(S, generator=g) > 0.3, None),
        ("bool (L, 1)", lambda: torch.tensor([True, False] * 4 + [True]).unsqueeze(-1), None),
        (
            "float (L, S)",
            lambda: torch.randn(L, S, generator=g, dtype=torch.float64).requires_grad_(),
            None,
        ),
        (
            "float (B, 1, L, 1)",
            lambda: torch.randn(B, 1, L, 1, generator=g, dtype=torch.float64).requires_grad_(),
            None,
        ),
        ("valid_lens (B,)", lambda: None, torch.tensor([0, 6])),
        ("valid_lens (B, L)", lambda: None, torch.tensor([[1, 3, 11, 5, 2, 7, 9, 4, 0]] * 2)),
        (
            "float (L, S) and valid_lens",
            lambda: torch.randn(L, S, generator=g, dtype=torch.float64).requires_grad_(),
            torch.tensor([4, 11]),
        ),
    ]


@pytest.mark.parametrize("is_causal", [False, True])
@pytest.mark.parametrize("case", range(len(_mask_cases())))
def test_c42_backward_equals_autograd_of_full_attention_every_mask_float64(case, is_causal):
    # Reference: autograd through dot_product_attention (the whole (L, S) softmax). Both are exact
    # up to float64 rounding of sums of ~S terms of size ~1, so assert_close's float64 defaults
    # (rtol 1e-7, atol 1e-7) hold with a wide margin. k and v broadcast over the heads, so their
    # gradients are also summed back over a broadcast axis.
    name, make_mask, lens = _mask_cases()[case]
    g = torch.Generator().manual_seed(case)
    q = torch.randn(2, 3, 9, 5, generator=g, dtype=torch.float64).requires_grad_()
    k = torch.randn(2, 1, 11, 5, generator=g, dtype=torch.float64).requires_grad_()
    v = torch.randn(2, 1, 11, 4, generator=g, dtype=torch.float64).requires_grad_()
    mask = make_mask()
    inputs = [t for t in (q, k, v, mask) if t is not None and t.requires_grad]
    grad_out = torch.randn(2, 3, 9, 4, generator=g, dtype=torch.float64)
    kw = {"valid_lens": lens, "is_causal": is_causal}
    out = blockwise_attention(q, k, v, mask, block_size=4, **kw)
    want, _ = dot_product_attention(q, k, v, mask, **kw)
    assert_close(out, want, msg=name)
    ours = torch.autograd.grad(out, inputs, grad_out)
    ref = torch.autograd.grad(want, inputs, grad_out)
    for a, b in zip(ours, ref):
        assert a.shape == b.shape
        assert_close(a, b, msg=name)
    if name == "bool (L, S) with an empty row":
        assert torch.all(ours[0][:, :, 2] == 0)  # the hidden query gets no gradient


@pytest.mark.parametrize("case", [0, 1, 6, 8])
def test_c42_backward_gradcheck(case):
    # gradcheck: our backward against finite differences of our own forward (float64).
    name, make_mask, lens = _mask_cases(B=1, H=2, L=9, S=11)[case]
    g = torch.Generator().manual_seed(case)
    q = torch.randn(1, 2, 9, 3, generator=g, dtype=torch.float64).requires_grad_()
    k = torch.randn(1, 2, 11, 3, generator=g, dtype=torch.float64).requires_grad_()
    v = torch.randn(1, 2, 11, 2, generator=g, dtype=torch.float64).requires_grad_()
    mask = make_mask()
    mask = mask[:1] if mask is not None and mask.dim() == 4 else mask
    lens = lens[:1] if lens is not None else None
    for causal in (False, True):

        def fn(a, b, c, m=mask, causal=causal):
            return blockwise_attention(a, b, c, m, valid_lens=lens, is_causal=causal, block_size=4)

        inputs = (q, k, v) if mask is None else (q, k, v, mask)
        assert torch.autograd.gradcheck(lambda *t: fn(*t[:3], *t[3:]), inputs), name


def test_c42_backward_saves_only_inputs_output_and_one_number_per_query():
    q, k, v = (t.requires_grad_() for t in _qkv("cpu", L=300, S=270, dtype=torch.float64))
    out, lse = blockwise_attention_lse(q, k, v, block_size=32)
    saved = out.grad_fn.saved_tensors  # what the backward will read
    assert len(saved) == 7 and saved[3] is None and saved[4] is None  # no mask, no lengths
    for a, b in zip(saved[:3], (q, k, v)):
        assert a.data_ptr() == b.data_ptr()  # the inputs themselves, no copy
    assert torch.equal(saved[5], out) and saved[6].shape == (2, 3, 300)
    scores = q @ k.transpose(-2, -1) / 8**0.5  # (2, 3, L, S), written out for the reference
    assert_close(lse, torch.logsumexp(scores, dim=-1))
    assert not lse.requires_grad


def test_c42_training_memory_grows_linearly_measured(one_thread):
    # Exact counts (allocated_bytes) of forward + backward under requires_grad. Nothing in the
    # backward has a size that depends on n except the output, the gradients dq, dk, dv and a
    # few numbers per query (lse, D = rowsum(dO * O)): so the peak is a + b n exactly, with
    # b <= (4 d + 4) float32 per position, and a (the (tile, block) slices of s, p, dP, dS and
    # their temporaries) at most 8 slices. Then the ratio per doubling is (a + 2bn)/(a + bn):
    # below 2 and rising towards it. Autograd through the loop (blockwise_attention_steps)
    # keeps every block's exponentials, (n, n) numbers in all: it grows by more than x3.
    d, block = 16, 64
    tile_bytes = query_tile(block) * block * 4
    peaks, loop = [], []
    ns = (512, 1024, 2048)  # all >= one query tile (256), so the (tile, block) slices are full
    for n in ns:
        q, k, v = (torch.randn(1, n, d, requires_grad=True) for _ in range(3))
        g = torch.randn(1, n, d)
        peaks.append(
            allocated_bytes(
                lambda: torch.autograd.grad(
                    blockwise_attention(q, k, v, block_size=block), (q, k, v), g
                )
            )
        )
        if n <= 1024:
            loop.append(
                allocated_bytes(
                    lambda: torch.autograd.grad(
                        list(blockwise_attention_steps(q, k, v, block_size=block))[-1].output,
                        (q, k, v),
                        g,
                    )
                )
            )
    step1, step2 = peaks[1] - peaks[0], peaks[2] - peaks[1]
    assert step2 == 2 * step1  # exactly linear: a + b n
    per_position = step1 / (ns[1] - ns[0])
    constant = peaks[0] - per_position * ns[0]
    assert 4 * d * 4 <= per_position <= (4 * d + 4) * 4
    assert 0 < constant <= 8 * tile_bytes
    ratios = [peaks[1] / peaks[0], peaks[2] / peaks[1]]
    assert 1 < ratios[0] < ratios[1] < 2
    assert loop[1] / loop[0] > 3


def test_c42_size_one_key_axis_masks_like_full_attention():
    # Review #78: a mask whose key axis has size 1 broadcasts over every key block.
    q, k, v = _qkv("cpu", L=300, S=270, dtype=torch.float64)
    for mask in (
        torch.tensor([True, False, True]).repeat(100).unsqueeze(-1),  # (L, 1) bool
        torch.randn(2, 1, 300, 1, dtype=torch.float64),  # (B, 1, L, 1) float
        torch.ones(1, dtype=torch.bool),  # (1,)
    ):
        want, _ = dot_product_attention(q, k, v, mask)
        assert_close(blockwise_attention(q, k, v, mask, block_size=32), want)
        steps = list(blockwise_attention_steps(q, k, v, mask, block_size=32))
        assert_close(steps[-1].output, want)
    small = torch.ones(3, 1, dtype=torch.bool)
    q3, k3, v3 = torch.randn(2, 3, 4), torch.randn(2, 5, 4), torch.randn(2, 5, 6)
    assert_close(
        blockwise_attention(q3, k3, v3, small, block_size=2),
        F.scaled_dot_product_attention(q3, k3, v3),
    )


def test_c42_a_list_as_q_is_named():
    # Review #122: the inputs are checked before their shapes are read.
    k, v = torch.randn(2, 5, 4), torch.randn(2, 5, 6)
    with pytest.raises(TypeError, match="q must be a torch.Tensor, got list"):
        blockwise_attention([1.0], k, v)
    with pytest.raises(TypeError, match="k must be a torch.Tensor"):
        list(blockwise_attention_steps(torch.randn(2, 3, 4), "k", v))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_c42_half_precision_backward(dtype):
    # The backward computes in float32 from half inputs; what is rounded to `dtype` is the output
    # O (read back by D = rowsum(dO * O)) and each gradient, once. Gradients here are of size ~3,
    # so a few roundings of relative 2^-9 (bfloat16; float16 2^-12) stay within the forward test's
    # 2e-2 (measured: at most 15% of atol + rtol |ref| for bfloat16, 2% for float16).
    q, k, v = (t.requires_grad_() for t in _qkv("cpu", L=40, S=50, dtype=dtype))
    g = torch.randn(2, 3, 40, 6, dtype=dtype)
    ours = torch.autograd.grad(
        blockwise_attention(q, k, v, block_size=8, is_causal=True), (q, k, v), g
    )
    ref_in = [t.detach().double().requires_grad_() for t in (q, k, v)]
    ref = torch.autograd.grad(
        F.scaled_dot_product_attention(*ref_in, is_causal=True), ref_in, g.double()
    )
    for a, b in zip(ours, ref):
        assert a.dtype == dtype
        assert_close(a.double(), b, atol=2e-2, rtol=2e-2)


@given(
    seed=st.integers(0, 2**31 - 1),
    L=st.integers(1, 70),
    S=st.integers(1, 70),
    block_size=st.integers(1, 40),
    is_causal=st.booleans(),
)
def test_c42_backward_equals_full_attention_float64_property(
    one_thread, seed, L, S, block_size, is_causal
):
    # float64 on both sides: exact to rounding, so assert_close's float64 defaults hold.
    gen = torch.Generator().manual_seed(seed)
    q, k = (torch.randn(2, n, 4, generator=gen, dtype=torch.float64) * 2 for n in (L, S))
    v = torch.randn(2, S, 3, generator=gen, dtype=torch.float64)
    grad_out = torch.randn(2, L, 3, generator=gen, dtype=torch.float64)
    inputs = [t.requires_grad_() for t in (q, k, v)]
    out = blockwise_attention(q, k, v, block_size=block_size, is_causal=is_causal)
    want, _ = dot_product_attention(q, k, v, is_causal=is_causal)
    for a, b in zip(
        torch.autograd.grad(out, inputs, grad_out), torch.autograd.grad(want, inputs, grad_out)
    ):
        assert_close(a, b)


def test_c42_no_dropout_and_no_double_backward_are_clear_errors():
    q, k, v = (t.requires_grad_() for t in _qkv("cpu", L=4, S=5, dtype=torch.float64))
    with pytest.raises(TypeError, match="dropout_p"):
        blockwise_attention(q, k, v, dropout_p=0.1)
    # A gradient of the gradient (create_graph=True) would silently treat dq as a constant:
    # it is refused by name instead.
    with pytest.raises(RuntimeError, match="blockwise_attention's backward pass cannot be"):
        torch.autograd.grad(blockwise_attention(q, k, v).sum(), q, create_graph=True)
    (dq,) = torch.autograd.grad(blockwise_attention(q, k, v).sum(), q)  # a first derivative is fine
    assert dq.shape == q.shape


def _per_query_lens(gen, B, L, S):
    """(B, L) lengths in [0, S], a few 0 (a query that sees nothing) and S (sees everything)."""
    lens = torch.randint(0, S + 1, (B, L), generator=gen)
    lens[:, :3] = torch.tensor([0, S, 1])
    return lens


@pytest.mark.parametrize("is_causal", [False, True])
def test_c42_per_query_lengths_over_several_tiles_float64(one_thread, is_causal):
    # (B, L) lengths are turned into each (tile, block) slice of the padding mask inside the loops
    # (forward and backward), so the tiles must index them by their own rows: L = 600 is three
    # query tiles of 256 (the last one short), S = 530 not a multiple of the block. Reference:
    # autograd through dot_product_attention, which builds the whole (B, 1, L, S) mask; float64 on
    # both sides, so assert_close's float64 defaults hold. A bool (L, S) mask is combined with the
    # lengths, as it is and-ed with them there.
    gen = torch.Generator().manual_seed(5)
    L, S = 600, 530 if not is_causal else 600
    q = torch.randn(2, 2, L, 4, generator=gen, dtype=torch.float64).requires_grad_()
    k = torch.randn(2, 2, S, 4, generator=gen, dtype=torch.float64).requires_grad_()
    v = torch.randn(2, 2, S, 3, generator=gen, dtype=torch.float64).requires_grad_()
    lens = _per_query_lens(gen, 2, L, S)
    grad_out = torch.randn(2, 2, L, 3, generator=gen, dtype=torch.float64)
    for mask in (None, torch.rand(L, S, generator=gen) > 0.2):
        kw = {"valid_lens": lens, "is_causal": is_causal}
        out = blockwise_attention(q, k, v, mask, block_size=64, **kw)
        want, _ = dot_product_attention(q, k, v, mask, **kw)
        assert_close(out, want)
        for a, b in zip(
            torch.autograd.grad(out, (q, k, v), grad_out),
            torch.autograd.grad(want, (q, k, v), grad_out),
        ):
            assert_close(a, b)
        steps = list(blockwise_attention_steps(q, k, v, mask, block_size=64, **kw))
        assert_close(steps[-1].output, want)


def test_c42_per_query_lengths_keep_training_memory_linear_measured(one_thread):
    # Review read-09 #6: (B, L) lengths used to become a (B, 1, L, S) boolean mask up front, saved
    # for the backward (n² bytes: 4 MiB at n = 2048). Measured: with (B, L) lengths the largest
    # tensor of forward + backward is still one float32 (tile, block) slice (values of width 1
    # keep the output and gradients small), and nothing the backward keeps is larger than the
    # lengths themselves (B·L int64).
    block = 64
    for n in (1024, 2048):
        gen = torch.Generator().manual_seed(n)
        q, k, v = (torch.randn(1, n, d, generator=gen).requires_grad_() for d in (4, 4, 1))
        g = torch.randn(1, n, 1, generator=gen)
        lens = _per_query_lens(gen, 1, n, n)

        def train(lens=lens, q=q, k=k, v=v, g=g):
            out = blockwise_attention(q, k, v, valid_lens=lens, block_size=block)
            return torch.autograd.grad(out, (q, k, v), g)

        assert largest_tensor_bytes(train) == query_tile(block) * block * 4
        out, _ = blockwise_attention_lse(q, k, v, valid_lens=lens, block_size=block)
        saved = [t for t in out.grad_fn.saved_tensors if t is not None]
        assert max(t.numel() for t in saved) == n * 4  # q and k: (1, n, 4); lens (1, 1, n)
        assert saved[3].shape == (1, n) and saved[3].dtype == torch.int64  # the lengths, reshaped
