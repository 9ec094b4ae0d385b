# ruff: noqa: E501  (the table: one row per reviewed call, as in the review, each on one line)
"""The 127 bad (and edge) inputs of the code review (shared/reviews/code.md §5), one row each.

Each row is the review's exact call, its verdict then (C clear, U unclear, S silent, X crash deep
in torch, H a valid edge input handled) and what it must give now: every call that is not H is a
``TypeError`` or ``ValueError`` (``KeyError`` or ``FileNotFoundError`` where the review found one) whose message names the
argument (and, through the pattern, the values involved); every H call returns what the review
found, checked by a small predicate. Rows 78 and 122 (``blockwise_attention``) are checked in
tests/test_blockwise.py.
"""

from __future__ import annotations

import math
import types

import numpy as np
import pytest
import torch

from attnlib import (
    AdditiveAttention,
    DecoderBlock,
    EncoderBlock,
    MultiHeadAttention,
    PositionalEncoding,
    Seq2SeqConfig,
    Seq2SeqTransformer,
    attention_backward,
    blockwise_attention,
    causal_mask,
    cosine_score,
    default_device,
    dot_product_attention,
    gaussian_score,
    greedy_decode,
    layer_norm,
    make_batch,
    masked_softmax,
    merge_heads,
    nadaraya_watson,
    padding_mask,
    permute_tokens,
    set_seed,
    sinusoidal_encoding,
    softmax_jacobian,
    split_heads,
)
from attnlib.core.pooling import attention_pooling, toy_regression_data
from attnlib.core.positional import rotary_embedding

nan = float("nan")


def _ctx():
    """The review's setup: q, k, v, mha, x (seeded, so every row sees the same tensors)."""
    g = torch.Generator().manual_seed(0)
    c = types.SimpleNamespace()
    c.q, c.k, c.v = (torch.randn(*s, generator=g) for s in [(2, 3, 4), (2, 5, 4), (2, 5, 6)])
    torch.manual_seed(0)
    c.mha = MultiHeadAttention(8, 2)
    c.x = torch.randn(1, 3, 8, generator=g)
    c.x2 = torch.randn(2, 3, 8, generator=g)
    return c


def _dpa(c, *a, **kw):
    return dot_product_attention(c.q, c.k, c.v, *a, **kw)


# ----- explorer pieces (rows 94-103, 126, 127) ------------------------------------------------


def _scene():
    from attnlib.widgets.framework.artists import Bars
    from attnlib.widgets.framework.scene import Panel, Scene

    return Scene([Panel([Bars("w")], xlim=(0, 1), ylim=(0, 1))])


def _explorer(compute, **kw):
    from attnlib.widgets.framework.controls import float_slider
    from attnlib.widgets.framework.explorer import Explorer

    return Explorer({"t": float_slider("t", 0.0, 1.0, 0.0, step=0.25)}, compute, _scene(), **kw)


def _frame(**kw):
    from attnlib.widgets.framework.scene import Frame

    return Frame(**kw)


def _w(t):
    return {"w": [t]}


def _big(step):
    from attnlib.widgets.framework.controls import float_slider
    from attnlib.widgets.framework.explorer import Explorer

    return Explorer(
        {"t": float_slider("t", 0.0, 1.0, 0.0, step=step)},
        lambda t: _frame(arrays={"w": [t] * 200}),
        _scene(),
    ).frame_set(0)


def _widgets(name):
    from attnlib.widgets.framework import controls, scene

    return getattr(controls, name, None) or getattr(scene, name)


def _artist(name):
    from attnlib.widgets.framework import artists

    return getattr(artists, name)


def _builder(name):
    from attnlib.widgets import BUILDERS

    return BUILDERS[name]


def _seq2seq():
    torch.manual_seed(0)
    return Seq2SeqTransformer(Seq2SeqConfig())


# ----- MiniLM (rows 108-115): the model files, outside the fast tier ----------------------------
_ENC: list = []


def _enc():
    if not _ENC:
        from attnlib.models.minilm import INSTALL_HINT, load_minilm, minilm_dir

        try:
            minilm_dir()
        except ModuleNotFoundError:
            pytest.skip(f"the MiniLM package is not installed: {INSTALL_HINT}")
        _ENC.append(load_minilm("cpu"))
    return _ENC[0]


def _ids():
    return torch.tensor([[101, 7592, 2088, 102]])


# ----- predicates for the H rows --------------------------------------------------------------


def shape_is(*shape):
    def check(r):
        out = r[0] if isinstance(r, tuple) else r
        return tuple(out.shape) == shape

    return check


def all_finite(r):
    out = r[0] if isinstance(r, tuple) else r
    return bool(torch.isfinite(out).all())


def nan_rows(r):
    out, w = r
    return bool(out.isnan().all() and w.isnan().all())


def has_nan(r):
    return bool(r.isnan().any())


T, V, K = TypeError, ValueError, KeyError

# (number, verdict in the review, call, expected): expected is (exception, pattern) or, for H, a
# predicate on the result. The pattern names the argument and shows the values.
CASES = [
    (1, "C", lambda c: dot_product_attention([[1.0]], c.k, c.v), (T, r"q must be a torch.Tensor, got list")),
    (2, "C", lambda c: dot_product_attention(c.q.long(), c.k.long(), c.v.long()), (T, r"q must be a floating.*int64.*q\.float\(\)")),
    (3, "C", lambda c: dot_product_attention(c.q, torch.randn(2, 5, 3), c.v), (V, r"q has d_k=4 but k has d_k=3")),
    (4, "C", lambda c: dot_product_attention(c.q, c.k, torch.randn(2, 4, 6)), (V, r"k has S .*=5 but v has S .*=4")),
    (5, "C", lambda c: dot_product_attention(c.q, torch.randn(2, 0, 4), torch.randn(2, 0, 6)), (V, r"at least one key.*k has S = 0")),
    (6, "H", lambda c: dot_product_attention(torch.randn(2, 0, 4), c.k, c.v), shape_is(2, 0, 6)),
    (7, "C", lambda c: _dpa(c, scale="0.5"), (T, r"scale must be a number or None, got str")),
    (8, "C", lambda c: _dpa(c, scale=nan), (V, r"scale must be finite, got nan")),
    (9, "C", lambda c: _dpa(c, scale=True), (T, r"scale must be a number or None, got bool")),
    (10, "C", lambda c: _dpa(c, is_causal="yes"), (T, r"is_causal must be True or False, got str \('yes'\)")),
    (11, "C", lambda c: _dpa(c, is_causal=1), (T, r"is_causal must be True or False, got int \(1\)")),
    (12, "C", lambda c: _dpa(c, dropout_p=1.5), (V, r"dropout_p must be in \[0, 1\), got 1.5")),
    (13, "C", lambda c: _dpa(c, dropout_p="0.1"), (T, r"dropout_p must be a number, got str")),
    (14, "C", lambda c: _dpa(c, valid_lens=torch.tensor([1.0, 2.0])), (T, r"valid_lens must hold integers, got dtype torch.float32")),
    (15, "C", lambda c: _dpa(c, valid_lens=torch.tensor([1, 9])), (V, r"valid_lens must lie in \[0, S=5\].*got 9")),
    (16, "C", lambda c: _dpa(c, valid_lens=torch.tensor([-1, 2])), (V, r"valid_lens must be >= 0, got -1")),
    (17, "C", lambda c: _dpa(c, valid_lens=torch.tensor([1, 2, 3])), (V, r"valid_lens has 3 rows but the batch size is 2 \(expected shape \(2,\) or \(2, L\)")),
    (18, "C", lambda c: _dpa(c, valid_lens=[1, 2]), (T, r"valid_lens must be a torch.Tensor, got list")),
    (19, "C", lambda c: _dpa(c, torch.ones(3, 5, dtype=torch.int64)), (T, r"attn_mask must be a boolean mask.*got dtype torch.int64")),
    (20, "C", lambda c: _dpa(c, torch.ones(4, 5, dtype=torch.bool)), (V, r"attn_mask has shape \(4, 5\), which does not broadcast to the scores' shape \(2, 3, 5\)")),
    (21, "C", lambda c: dot_product_attention(c.q, c.k.double(), c.v), (T, r"q has dtype torch.float32 but k has dtype torch.float64")),
    (22, "C", lambda c: dot_product_attention(c.q, c.k.to("meta"), c.v), (V, r"q is on cpu but k is on meta.*k\.to\(q\.device\)")),
    (23, "C", lambda c: dot_product_attention(torch.randn(4), c.k, c.v), (V, r"q must have at least 2 dimension\(s\), got shape \(4,\)")),
    (24, "C", lambda c: dot_product_attention(torch.randn(3, 3, 4), c.k, c.v), (V, r"leading \(batch\) dimensions of q \(3,\), k \(2,\) and v \(2,\) do not broadcast")),
    (25, "H", lambda c: dot_product_attention((c.q * 1e4).half(), c.k.half(), c.v.half()), all_finite),
    (26, "H", lambda c: dot_product_attention(c.q * nan, c.k, c.v), nan_rows),
    (27, "C", lambda c: masked_softmax("x"), (T, r"scores must be a torch.Tensor")),
    (28, "C", lambda c: masked_softmax(torch.randn(2, 0)), (V, r"at least one key.*scores has S = 0")),
    (29, "C", lambda c: masked_softmax(torch.tensor(1.0)), (V, r"scores must have at least 1 dimension")),
    (30, "C", lambda c: padding_mask(torch.tensor([1]), -1), (V, r"num_keys must be >= 1, got -1")),
    (31, "C", lambda c: padding_mask(torch.tensor([1]), 2.0), (T, r"num_keys must be an int, got float \(2.0\)")),
    (32, "C", lambda c: causal_mask(0), (V, r"num_queries must be >= 1")),
    (33, "C", lambda c: causal_mask("3"), (T, r"num_queries must be an int, got str \('3'\)")),
    (34, "C", lambda c: MultiHeadAttention(-4, 2), (V, r"d_model must be >= 1, got -4")),
    (35, "C", lambda c: MultiHeadAttention(6, 4), (V, r"d_model=6 is not divisible by num_heads=4")),
    (36, "C", lambda c: MultiHeadAttention(8, 2, dropout="0.1"), (T, r"dropout must be a number, got str")),
    (37, "X", lambda c: c.mha(c.x.double(), c.x.double(), c.x.double()), (T, r"query has dtype torch.float64 but the MultiHeadAttention's parameters are torch.float32; convert the input with query\.float\(\) or the module with \.double\(\)")),
    (38, "S", lambda c: c.mha(c.x, torch.randn(1, 0, 8), torch.randn(1, 0, 8)), (V, r"at least one key, but key has S = 0.*key \(1, 0, 8\)")),
    (39, "C", lambda c: c.mha(torch.randn(1, 3, 7), c.x, c.x), (V, r"query has width 7 but this MultiHeadAttention has d_model=8")),
    (40, "C", lambda c: c.mha(c.x, c.x, c.x, head_mask=torch.ones(3)), (V, r"head_mask must have shape \(H,\) = \(2,\) or \(B, H\) = \(1, 2\), got \(3,\)")),
    (41, "S", lambda c: MultiHeadAttention(8, 2, bias="no"), (T, r"bias must be True or False, got str \('no'\)")),
    (42, "C", lambda c: split_heads(torch.randn(1, 3, 7), 2), (V, r"D=7.*not divisible by num_heads=2")),
    (43, "C", lambda c: merge_heads(torch.randn(1, 3, 7)), (V, r"x must have 4 dimension\(s\), got shape \(1, 3, 7\)")),
    (44, "C", lambda c: sinusoidal_encoding(0, 8), (V, r"num_positions must be >= 1, got 0")),
    (45, "C", lambda c: sinusoidal_encoding(4, "8"), (T, r"d_model must be an int, got str")),
    (46, "C", lambda c: sinusoidal_encoding(4, 8, base=nan), (V, r"base must be a finite number > 1, got nan")),
    (47, "C", lambda c: PositionalEncoding(-1), (V, r"d_model must be >= 1, got -1")),
    (48, "C", lambda c: PositionalEncoding("8"), (T, r"d_model must be an int, got str")),
    (49, "C", lambda c: blockwise_attention(c.q, c.k, c.v, block_size=0), (V, r"block_size must be >= 1, got 0")),
    (50, "C", lambda c: blockwise_attention(c.q, c.k, c.v, block_size=2.5), (T, r"block_size must be an int, got float \(2.5\)")),
    (51, "C", lambda c: EncoderBlock(8, 2, 0), (V, r"d_ff must be >= 1, got 0")),
    (52, "C", lambda c: EncoderBlock(8, 2, 16, activation="tanh"), (V, r"activation must be one of \['gelu', 'gelu_tanh', 'relu'\], got 'tanh'")),
    (53, "S", lambda c: EncoderBlock(8, 2, 16, norm_first="yes"), (T, r"norm_first must be True or False, got str \('yes'\)")),
    (54, "C", lambda c: EncoderBlock(8, 2, 16)(torch.randn(3, 8)), (V, r"x must have 3 dimension\(s\), got shape \(3, 8\)")),
    (55, "H", lambda c: EncoderBlock(8, 2, 16)(torch.randn(2, 3, 8), valid_lens=torch.tensor([[1, 2, 3], [1, 1, 1]])), shape_is(2, 3, 8)),
    (56, "C", lambda c: layer_norm(torch.randn(2, 4), torch.ones(3)), (V, r"weight must have shape \(4,\) to match x \(2, 4\), got \(3,\)")),
    (57, "U", lambda c: layer_norm(torch.randn(2, 4), eps="a"), (T, r"eps must be a number, got str")),
    (58, "S", lambda c: layer_norm(torch.zeros(2, 4), eps=-1.0), (V, r"eps must be a finite number > 0, got -1.0")),
    (59, "C", lambda c: nadaraya_watson(torch.randn(3), torch.randn(5), torch.randn(5), bandwidth=0), (V, r"bandwidth must be a finite number > 0, got 0")),
    (60, "C", lambda c: nadaraya_watson(torch.randn(3), torch.randn(5), torch.randn(5), bandwidth="1"), (T, r"bandwidth must be a number, got str")),
    (61, "C", lambda c: nadaraya_watson(torch.randn(3), torch.randn(0), torch.randn(0)), (V, r"S = 0 keys")),
    (62, "C", lambda c: gaussian_score(torch.randn(3, 2), torch.randn(4, 2), -1.0), (V, r"bandwidth must be a finite number > 0, got -1.0")),
    (63, "U", lambda c: cosine_score(torch.randn(3, 2), torch.randn(4, 2), eps="x"), (T, r"eps must be a number, got str")),
    (64, "C", lambda c: softmax_jacobian(torch.tensor([1, 2])), (T, r"weights must be a floating.*weights\.float\(\)")),
    (65, "C", lambda c: attention_backward(c.q, c.k, c.v, torch.rand(2, 3, 5), torch.randn(2, 3, 5)), (V, r"grad_out must be \(\.\.\., L, Dv\) = \(2, 3, 6\).*got \(2, 3, 5\)")),
    (66, "X", lambda c: AdditiveAttention(4, 4, 8)(torch.randn(2, 3, 4), "abc", torch.randn(2, 5, 6)), (T, r"key must be a torch.Tensor, got str")),
    (67, "X", lambda c: AdditiveAttention(4, 4, 8)(torch.randn(2, 3, 4).double(), torch.randn(2, 5, 4).double(), torch.randn(2, 5, 6).double()), (T, r"query has dtype torch.float64 but the AdditiveAttention's parameters are torch.float32; convert the input with query\.float\(\)")),
    (68, "C", lambda c: AdditiveAttention(4, 4, 8)(torch.randn(2, 3, 4), torch.randn(2, 0, 4), torch.randn(2, 0, 6)), (V, r"key has S = 0 keys")),
    (69, "U", lambda c: toy_regression_data(10, x_max="5"), (T, r"x_max must be a number, got str")),
    (70, "C", lambda c: toy_regression_data(-3), (V, r"n_train must be >= 1, got -3")),
    (71, "C", lambda c: attention_pooling(torch.randn(3), torch.randn(5), torch.randn(5), score="foo"), (V, r"score must be one of .*'foo'")),
    (72, "C", lambda c: rotary_embedding(torch.randn(3, 5)), (V, r"even feature width D, got D=5")),
    (73, "C", lambda c: rotary_embedding(torch.randn(3, 4), [0, 1, 2]), (T, r"positions must be a 1-D tensor")),
    (74, "C", lambda c: permute_tokens(torch.randn(3, 4), torch.tensor([0, 0, 1])), (V, r"perm must be a permutation of 0\.\.2, got \[0, 0, 1\]")),
    (75, "C", lambda c: Seq2SeqConfig(d_model=-1), (V, r"d_model must be >= 1, got -1")),
    (76, "C", lambda c: Seq2SeqConfig(d_model=32, num_heads=3), (V, r"num_heads=3 must divide d_model=32")),
    (77, "C", lambda c: set_seed("a"), (T, r"seed must be an int, got str")),
    (79, "C", lambda c: DecoderBlock(8, 2, 16)(torch.randn(1, 3, 8), torch.randn(1, 4, 7)), (V, r"memory has width 7 but the block has d_model=8")),
    (80, "S", lambda c: DecoderBlock(8, 2, 16)(torch.randn(1, 3, 8), torch.randn(1, 0, 8)), (V, r"at least one key, but memory has S = 0 keys.*memory \(1, 0, 8\)")),
    (81, "U", lambda c: c.mha(torch.randn(1, 3, 8), torch.randn(1, 4, 8), torch.randn(1, 4, 8), torch.ones(2, 3, 4, dtype=torch.bool)), (V, r"attn_mask has shape \(2, 3, 4\), but a 3-D attn_mask is \(B, L, S\).*\(1, 3, 4\).*one mask per head pass it 4-D as \(B, H, L, S\).*\(1, 2, 3, 4\)")),
    (82, "H", lambda c: masked_softmax(torch.tensor([[1e38, -1e38, 3e38]])), all_finite),
    (83, "C", lambda c: _dpa(c, valid_lens=torch.ones(2, 4, dtype=torch.long)), (V, r"valid_lens of shape \(2, 4\) gives one length per query, but there are L=3 queries")),
    (84, "H", lambda c: sinusoidal_encoding(4, 3), shape_is(4, 3)),
    (85, "X", lambda c: c.mha(c.x, c.x.to("meta"), c.x.to("meta")), (V, r"key is on meta but the MultiHeadAttention's parameters are on cpu; move the input with key\.to\('cpu'\) or the module with \.to\('meta'\)")),
    (86, "C", lambda c: Seq2SeqTransformer("cfg"), (T, r"config must be an attnlib\.models\.seq2seq\.config\.Seq2SeqConfig, got str")),
    (87, "C", lambda c: Seq2SeqConfig(dropout=2.0), (V, r"dropout must be in \[0, 1\), got 2.0")),
    (88, "C", lambda c: greedy_decode(_seq2seq(), torch.zeros(1, 5, dtype=torch.long), max_len=0), (V, r"max_len must be >= 1, got 0")),
    (89, "X", lambda c: _builder("query")(keys="abc"), (T, r"keys must be a list of 2-D points with shape \(S, 2\).*got str \('abc'\)")),
    (90, "C", lambda c: _widgets("float_slider")("x", 0, 1, 2.0), (V, r"value=2.0 must lie in \[min=0, max=1\] for slider 'x'")),
    (91, "C", lambda c: _widgets("float_slider")("x", 0, 1, 0.5, step=0), (V, r"step must be > 0")),
    (92, "U", lambda c: _widgets("float_slider")("x", 1, 0, 0.5), (V, r"min=1 must be less than max=0 for slider 'x' \(swap them: min=0, max=1\)")),
    (93, "C", lambda c: _widgets("selection_slider")("x", [1, 2], 3), (V, r"value=3 is not one of the options \[1, 2\]")),
    (94, "C", lambda c: _widgets("Scene")([_widgets("Panel")([], xlim=(0, 1), ylim=(0, 1))], width=50), (V, r"Scene size must be 200\.\.1600 x 100\.\.1200 pixels, got 50 x 300")),
    (95, "C", lambda c: _widgets("Panel")([], xlim=(0, 0), ylim=(0, 1)), (V, r"xlim must be two different finite numbers")),
    (96, "C", lambda c: _artist("Heatmap")("w", vmin=1, vmax=1), (V, r"vmax > vmin")),
    (97, "C", lambda c: _explorer(_w), (T, r"compute must return a Frame, got dict")),
    (98, "C", lambda c: _explorer(lambda t: _frame(arrays={})), (K, r"Frame has no array 'w' for bars\.heights; it has \[\]")),
    (99, "C", lambda c: _explorer(lambda t: _frame(arrays={"w": [[t]]})), (V, r"bars\.heights must have shape 1-D, got shape \(1, 1\)")),
    (100, "C", lambda c: _builder("two_key")().set(foo=1), (K, r"unknown control\(s\) \['foo'\]; this explorer has")),
    (101, "U", lambda c: _builder("two_key")().set(scaled="yes"), (T, r"control 'scaled' is a checkbox: set it to True or False, got str \('yes'\)")),
    (102, "C", lambda c: _explorer(lambda t: _frame(arrays={"w": [t]}), slow=["u"]), (K, r"slow name unknown control\(s\) \['u'\]")),
    (103, "C", lambda c: _big(1e-4), (V, r"MB \(10001 frames\) > max_bytes=.*use a coarser slider step, or list the slider in slow=")),
    (104, "C", lambda c: make_batch("reverse", 0, 5, 10), (V, r"batch_size must be >= 1, got 0")),
    (105, "C", lambda c: make_batch("rev", 4, 5, 10), (V, r"task must be one of .*'rev'")),
    (106, "C", lambda c: make_batch("reverse", 4, 5, 3), (V, r"vocab_size=3 is too small.*at least 5")),
    (107, "C", lambda c: make_batch("reverse", 4, 2.0, 10), (T, r"seq_len must be an int, got float")),
    (108, "C", lambda c: _enc()(torch.zeros(1, 4)), (T, r"ids must hold integers")),
    (109, "C", lambda c: _enc()(torch.full((1, 4), 10**6)), (V, r"ids must lie in \[0, 30522\) \(the vocabulary\), got 1000000")),
    (110, "C", lambda c: _enc()(_ids(), valid_lens=torch.tensor([0])), (V, r"valid_lens must lie in \[1, L=4\].*\[CLS\]")),
    (111, "C", lambda c: _enc().tokenize("hello"), (T, r"texts must be a list of str, got str; wrap one text in a list: \['hello'\]")),
    (112, "C", lambda c: _enc()(_ids(), head_mask=torch.ones(12, 6)), (V, r"head_mask must have shape \(num_layers, num_heads\) = \(6, 12\) or .*got \(12, 6\)")),
    (113, "C", lambda c: _enc()(_ids(), output_attentions=0), (T, r"output_attentions must be True or False, got int \(0\)")),
    (114, "C", lambda c: _minilm("cpu", torch.int32), (T, r"dtype must be a floating torch.dtype")),
    (115, "C", lambda c: _minilm("cpu", model_dir="/tmp"), (FileNotFoundError, r"model_dir='/tmp' lacks config.json")),
    (116, "X", lambda c: attention_backward(c.q, c.k, c.v, torch.rand(7, 3, 5), torch.randn(2, 3, 6)), (V, r"weights must be \(\.\.\., L, S\) = \(2, 3, 5\).*got \(7, 3, 5\)")),
    (117, "S", lambda c: sinusoidal_encoding(4, 8, dtype=torch.int64), (T, r"dtype must be a floating torch.dtype.*got torch.int64")),
    (118, "C", lambda c: _device_env("bogus"), (V, r"ATTNLIB_DEVICE='bogus' is not a torch device name")),
    (119, "H", lambda c: set_seed(-1), lambda r: r is None),
    (120, "S", lambda c: layer_norm(torch.randn(2, 4), torch.ones(4, dtype=torch.float64)), (T, r"x has dtype torch.float32 but weight has dtype torch.float64")),
    (121, "C", lambda c: c.mha(c.x2, c.x2, c.x2, valid_lens=torch.tensor([1.0, 2.0])), (T, r"valid_lens must hold integers")),
    (123, "H", lambda c: softmax_jacobian(torch.tensor([nan, 0.5])), has_nan),
    (124, "H", lambda c: dot_product_attention(torch.randn(0, 3, 4), torch.randn(0, 5, 4), torch.randn(0, 5, 6)), shape_is(0, 3, 6)),
    (125, "H", lambda c: dot_product_attention(torch.randn(0, 3, 4), torch.randn(0, 5, 4), torch.randn(0, 5, 6), valid_lens=torch.zeros(0, dtype=torch.long)), shape_is(0, 3, 6)),
    (126, "U", lambda c: _explorer(lambda t: _frame(arrays={"w": [t]}, readout={"cube": np.zeros((2, 2, 2))})), (V, r"readout entry 'cube' has shape \[2, 2, 2\]: the readout shows a number, a row \(1-D\) or a table \(2-D\)")),
    (127, "S", lambda c: _explorer(lambda t: _frame(arrays={"w": [t]}, readout={"x": 1 if t < 0.5 else 1.5})).frame_set(0), (V, r"readout entry 'x' holds integers of shape \[\] in one frame but floats of shape \[\] in another \(1.5\).*float\(\.\.\.\)")),
]  # fmt: skip


def _minilm(*a, **kw):
    from attnlib.models.minilm import load_minilm

    return load_minilm(*a, **kw)


def _device_env(value):
    import os

    old = os.environ.get("ATTNLIB_DEVICE")
    os.environ["ATTNLIB_DEVICE"] = value
    try:
        return default_device()
    finally:
        if old is None:
            del os.environ["ATTNLIB_DEVICE"]
        else:
            os.environ["ATTNLIB_DEVICE"] = old


MINILM_ROWS = set(range(108, 116))


def _id(case):
    n, verdict = case[0], case[1]
    return f"{n}-{verdict}" + ("-minilm" if n in MINILM_ROWS else "")


def test_the_table_is_the_reviews_127_calls_but_the_two_blockwise_rows():
    numbers = [c[0] for c in CASES]
    assert numbers == sorted(set(numbers))
    assert set(numbers) == set(range(1, 128)) - {78, 122}  # 78, 122: tests/test_blockwise.py
    verdicts = [c[1] for c in CASES] + ["X", "X"]  # the review's tally, rows 78 and 122 added
    assert {v: verdicts.count(v) for v in "CUSXH"} == {"C": 94, "U": 7, "S": 8, "X": 8, "H": 10}


@pytest.mark.parametrize("case", CASES, ids=_id)
def test_bad_input_gives_a_clear_error_and_edge_input_is_handled(case):
    number, verdict, call, expected = case
    c = _ctx()
    if verdict == "H":
        assert expected(call(c)), f"row {number}: the edge input is no longer handled"
        return
    exc, pattern = expected
    with pytest.raises(exc, match=pattern):
        call(c)


def test_float64_inputs_of_a_float64_module_and_an_empty_query_set_still_work():
    # The dtype check compares with the parameters, so a module converted with .double() takes
    # float64; L = 0 queries (over S >= 1 keys) give an empty output, as dot_product_attention.
    mha = MultiHeadAttention(8, 2).double()
    x = torch.randn(1, 3, 8, dtype=torch.float64)
    out, w = mha(x, x, x)
    assert out.dtype == torch.float64 and w.shape == (1, 2, 3, 3)
    out, w = MultiHeadAttention(8, 2)(
        torch.randn(1, 0, 8), torch.randn(1, 4, 8), torch.randn(1, 4, 8)
    )
    assert out.shape == (1, 0, 8) and w.shape == (1, 2, 0, 4)
    blk = EncoderBlock(8, 2, 16, norm_first=True, bias=False, eps=1e-6).double()
    assert blk(x)[0].dtype == torch.float64
    assert math.isfinite(layer_norm(torch.zeros(2, 4), eps=1e-5).abs().max().item())


# ----- further bad inputs, each described by the call it makes ----------------------------------
# Each once failed far from the call (inside torch, as a NaN, or by truncating a value); now it is
# a TypeError or ValueError that names the argument.

T_, V_ = TypeError, ValueError


def _masking(**kw):
    from attnlib.widgets.explorers.masking import masking_explorer

    return masking_explorer(**kw)


def _query(**kw):
    from attnlib.widgets.explorers.query import query_explorer

    return query_explorer(**kw)


MORE_CASES = [
    ("cosine_score float32 q with float64 k", lambda: cosine_score(torch.randn(3, 4), torch.randn(5, 4, dtype=torch.float64)), (T_, r"q has dtype torch.float32 but k has dtype torch.float64")),
    ("dot_score float32 q with float64 k", lambda: __import__("attnlib").dot_score(torch.randn(3, 4), torch.randn(5, 4, dtype=torch.float64)), (T_, r"q has dtype torch.float32 but k has dtype torch.float64")),
    ("gaussian_score float32 q with float64 k", lambda: gaussian_score(torch.randn(3, 4), torch.randn(5, 4, dtype=torch.float64)), (T_, r"q has dtype torch.float32 but k has dtype torch.float64")),
    ("batch_norm_tokens with eps=-1", lambda: __import__("attnlib.core.normalization", fromlist=["x"]).batch_norm_tokens(torch.randn(2, 3, 4), eps=-1.0), (V_, r"eps must be a finite number > 0, got -1")),
    ("rotary_embedding with a NaN position", lambda: rotary_embedding(torch.randn(3, 4), torch.tensor([0.0, nan, 2.0])), (V_, r"positions must be finite")),
    ("masking_explorer with valid_lens=(1.7, 2, 3)", lambda: _masking(valid_lens=(1.7, 2, 3)), (T_, r"valid_lens must hold ints, got float \(1.7\)")),
    ("masking_explorer with num_tokens='5'", lambda: _masking(num_tokens="5"), (T_, r"num_tokens must be an int, got str")),
    ("query_explorer with key_length=0", lambda: _query(key_length=0), (V_, r"key_length must lie in \[0.25, 3\], got 0")),
]  # fmt: skip


def _feed_forward():
    from attnlib.core.transformer import FeedForward

    torch.manual_seed(0)
    return FeedForward(8, 16)


MORE_CASES += [
    ("FeedForward(8, 16) on a width-5 input", lambda: _feed_forward()(torch.randn(2, 3, 5)), (V_, r"x must have d_model=8 features last, got \(2, 3, 5\)")),
    ("FeedForward(8, 16) on a float64 input", lambda: _feed_forward()(torch.randn(2, 3, 8, dtype=torch.float64)), (T_, r"x has dtype torch.float64 but the FeedForward's parameters are torch.float32")),
    ("dot_product_attention with a key width of zero", lambda: dot_product_attention(torch.randn(3, 0), torch.randn(5, 0), torch.randn(5, 2)), (V_, r"d_k >= 1")),
]  # fmt: skip


def _memory(**kw):
    return torch.randn(1, 3, Seq2SeqConfig().d_model, **kw)


MORE_CASES += [
    ("Seq2SeqTransformer.decode given a list of ids", lambda: _seq2seq().decode([[1, 3]], _memory()), (T_, r"tgt_in must be a torch.Tensor, got list")),
    ("greedy_decode given a list of ids", lambda: greedy_decode(_seq2seq(), [[3, 4, 5]]), (T_, r"src must be a torch.Tensor, got list")),
    ("Seq2SeqTransformer.decode with a float64 memory", lambda: _seq2seq().decode(torch.tensor([[1, 3]]), _memory(dtype=torch.float64)), (T_, r"memory has dtype torch.float64 but the Seq2SeqTransformer's parameters are torch.float32")),
    ("Seq2SeqTransformer.decode with a memory on the meta device", lambda: _seq2seq().decode(torch.tensor([[1, 3]]), _memory(device="meta")), (V_, r"memory is on meta but the Seq2SeqTransformer's parameters are on cpu")),
]  # fmt: skip


def _steps_without_next():
    from attnlib.core.blockwise import blockwise_attention_steps

    blockwise_attention_steps(torch.randn(3, 4), torch.randn(5, 4), torch.randn(5, 2), block_size=0)


MORE_CASES += [
    ("blockwise_attention_steps with block_size=0, before any next()", _steps_without_next, (V_, r"block_size")),
]  # fmt: skip


def _head_maps(x_shape, w_shape):
    from attnlib.core.multihead import head_weight_maps

    return head_weight_maps(torch.randn(*x_shape), torch.randn(*w_shape), torch.randn(8, 8), 2)


def _head_projection():
    from attnlib.core.multihead import head_projection

    return head_projection("w_q", 0, 2)


MORE_CASES += [
    ("head_weight_maps with an (8, 6) w_q", lambda: _head_maps((1, 3, 8), (8, 6)), (V_, r"w_q must be \(D, D\) = \(8, 8\) for x \(1, 3, 8\), got \(8, 6\)")),
    ("head_weight_maps with two sequences", lambda: _head_maps((2, 3, 8), (8, 8)), (V_, r"x must be \(1, L, D\), one sequence, got \(2, 3, 8\)")),
    ("head_projection given a name instead of a layer", _head_projection, (T_, r"linear must be an nn.Linear \(e.g. mha.w_q\), got str")),
]  # fmt: skip


def _block_gradient_norms_target_str():
    from attnlib.core.normalization import block_gradient_norms

    torch.manual_seed(0)
    return block_gradient_norms([EncoderBlock(8, 2, 16)], torch.randn(2, 3, 8), "target")


def _offset_rotation(*a):
    from attnlib.core.positional import offset_rotation

    return offset_rotation(*a)


NO_FILES = "/nonexistent/minilm"  # the device is checked before any file is looked at
NO_CUDA = pytest.mark.skipif(torch.cuda.is_available(), reason="CUDA is available here")

MORE_CASES += [
    ("causal_mask on a device torch does not know", lambda: causal_mask(3, device="nonsense"), (V_, r"device='nonsense' is not a torch device name")),
    ("permute_tokens with a bool perm", lambda: permute_tokens(torch.randn(3, 4), torch.tensor([True, False, True])), (T_, r"perm must be a 1-D integer tensor, got dtype torch.bool")),
    ("permute_tokens with a long non-permutation prints its first entries only", lambda: permute_tokens(torch.randn(8192, 2), torch.zeros(8192, dtype=torch.long)), (V_, r"perm must be a permutation of 0\.\.8191, got \[0, 0, 0, 0, 0, 0, 0, 0, \.\.\.\] \(8192 entries\)$")),
    ("offset_rotation with a str offset", lambda: _offset_rotation("a", 1.0), (T_, r"k must be a real number or a tensor, got str")),
    ("offset_rotation with a str frequency", lambda: _offset_rotation(1.0, "w"), (T_, r"omega must be a real number or a tensor, got str")),
    ("Seq2SeqConfig with norm_first='yes'", lambda: Seq2SeqConfig(norm_first="yes"), (T_, r"norm_first must be True or False, got str \('yes'\)")),
    ("Seq2SeqConfig with dropout='0.1'", lambda: Seq2SeqConfig(dropout="0.1"), (T_, r"dropout must be a number, got str \('0.1'\)")),
    ("block_gradient_norms with a str target", _block_gradient_norms_target_str, (T_, r"target must be a torch.Tensor, got str")),
    ("load_minilm on a device torch does not know", lambda: _minilm(device="bogus", model_dir=NO_FILES), (V_, r"device='bogus' is not a torch device name")),
    pytest.param(("load_minilm on cuda in a CPU-only build", lambda: _minilm(device="cuda", model_dir=NO_FILES), (V_, r"device='cuda' but CUDA is not available here")), marks=NO_CUDA),
]  # fmt: skip


@pytest.mark.parametrize("case", MORE_CASES, ids=lambda c: c[0])
def test_further_bad_input_gives_a_clear_error(case):
    _, call, (exc, pattern) = case
    with pytest.raises(exc, match=pattern):
        call()
