"""Score functions, Nadaraya–Watson and additive attention (C20, C22-C24) against closed forms."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from torch.testing import assert_close

from attnlib import (
    SCORE_FUNCTIONS,
    AdditiveAttention,
    cosine_score,
    dot_score,
    euclidean_distance,
    gaussian_score,
    masked_softmax,
    nadaraya_watson,
    neg_euclidean_score,
    scaled_dot_score,
)


def test_c23_score_functions_closed_forms(device):
    q = torch.randn(2, 3, 4, device=device, dtype=torch.float64)
    k = torch.randn(2, 5, 4, device=device, dtype=torch.float64)
    dot = torch.einsum("bld,bsd->bls", q, k)
    assert_close(dot_score(q, k), dot)
    assert_close(scaled_dot_score(q, k), dot / 2.0)
    assert_close(cosine_score(q, k), F.cosine_similarity(q[:, :, None], k[:, None], dim=-1))
    assert_close(euclidean_distance(q, k), torch.cdist(q, k))
    assert_close(neg_euclidean_score(q, k), -torch.cdist(q, k))
    assert_close(gaussian_score(q, k, bandwidth=0.5), -(torch.cdist(q, k) ** 2) / (2 * 0.25))
    assert set(SCORE_FUNCTIONS) == {"dot", "scaled_dot", "cosine", "neg_euclidean", "gaussian"}


def test_c20_positive_distance_favours_farthest_key(device):
    q = torch.tensor([[0.0, 0.0]], device=device)
    k = torch.tensor([[0.5, 0.0], [2.0, 0.0], [5.0, 0.0]], device=device)
    wrong = masked_softmax(euclidean_distance(q, k))
    right_neg = masked_softmax(neg_euclidean_score(q, k))
    right_gauss = masked_softmax(gaussian_score(q, k))
    assert wrong.argmax().item() == 2  # the farthest key wins: the pitfall
    assert right_neg.argmax().item() == 0 and right_gauss.argmax().item() == 0
    assert torch.all(right_neg[0, :-1] > right_neg[0, 1:])  # weight falls with distance


def test_c22_nadaraya_watson_closed_form(device):
    x = torch.linspace(0, 5, 12, device=device, dtype=torch.float64)
    y = torch.sin(x)
    xq = torch.tensor([0.3, 2.2, 4.9], device=device, dtype=torch.float64)
    pred, weights = nadaraya_watson(xq, x, y)
    kernel = torch.exp(-0.5 * (xq[:, None] - x[None, :]) ** 2)
    expected_w = kernel / kernel.sum(-1, keepdim=True)
    assert_close(weights, expected_w)
    assert_close(pred, expected_w @ y)
    # Nearer keys get more weight.
    nearest = (xq[:, None] - x[None, :]).abs().argmin(-1)
    assert torch.equal(weights.argmax(-1), nearest)


def test_c22_bandwidth_trades_smoothness(device):
    x = torch.linspace(0, 6, 30, device=device, dtype=torch.float64)
    y = torch.sin(2 * x)
    narrow, _ = nadaraya_watson(x, x, y, bandwidth=0.02)
    wide, w_wide = nadaraya_watson(x, x, y, bandwidth=100.0)
    # Tiny width interpolates the points: a neighbour (6/29 away) gets exp(-(6/29)^2 / (2 h^2))
    # = e^-53 of the weight, so the prediction is y up to float64 rounding of O(1) numbers.
    assert_close(narrow, y, atol=1e-12, rtol=0)
    # Huge width averages: every score -(x - x_i)^2 / (2 h^2) lies in [-spread, 0], spread =
    # 6^2 / (2 * 100^2) = 1.8e-3, so each weight is 1/30 within a factor e^(+-spread) and the
    # prediction the mean of y within spread * mean|y| (first order; e^s - 1 <= s (1 + s)).
    spread = 6.0**2 / (2 * 100.0**2) * (1 + 6.0**2 / (2 * 100.0**2))
    mean = torch.full_like(wide, y.mean().item())
    assert_close(wide, mean, atol=spread * y.abs().mean().item(), rtol=0)
    assert_close(w_wide, torch.full_like(w_wide, 1 / 30), atol=spread / 30, rtol=0)


def test_c22_nadaraya_watson_vector_values(device):
    x = torch.randn(7, device=device)
    y = torch.randn(7, 3, device=device)
    pred, weights = nadaraya_watson(torch.tensor(0.5, device=device), x, y, bandwidth=2.0)
    assert pred.shape == (1, 3) and weights.shape == (1, 7)
    assert_close(pred, weights @ y)


def test_c24_additive_attention_different_widths(device):
    layer = AdditiveAttention(d_q=3, d_k=5, d_hidden=7).to(device).double()
    queries = torch.randn(2, 4, 3, device=device, dtype=torch.float64)
    keys = torch.randn(2, 6, 5, device=device, dtype=torch.float64)
    values = torch.randn(2, 6, 2, device=device, dtype=torch.float64)
    feats = layer.features(queries, keys)
    assert feats.shape == (2, 4, 6, 7)  # [batch, n_q, n_k, h]
    out, weights = layer(queries, keys, values, valid_lens=torch.tensor([6, 2], device=device))
    # Independent reference: loop over every (i, j) pair with the formula v^T tanh(Wq q + Wk k).
    wq, wk, wv = layer.w_q.weight, layer.w_k.weight, layer.w_v.weight[0]
    scores = torch.empty(2, 4, 6, device=device, dtype=torch.float64)
    for b in range(2):
        for i in range(4):
            for j in range(6):
                scores[b, i, j] = wv @ torch.tanh(wq @ queries[b, i] + wk @ keys[b, j])
    scores[1, :, 2:] = -math.inf
    expected_w = torch.softmax(scores, -1)
    assert_close(weights, expected_w)
    assert_close(out, expected_w @ values)


def test_c24_additive_attention_gradcheck(device):
    layer = AdditiveAttention(2, 3, 4).to(device).double()
    q = torch.randn(1, 2, 2, device=device, dtype=torch.float64, requires_grad=True)
    k = torch.randn(1, 3, 3, device=device, dtype=torch.float64, requires_grad=True)
    v = torch.randn(1, 3, 2, device=device, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda a, b, c: layer(a, b, c)[0], (q, k, v))


def test_additive_attention_bad_widths_named():
    layer = AdditiveAttention(3, 5, 7)
    with pytest.raises(ValueError, match="query has width 4 but d_q=3"):
        layer(torch.randn(1, 2, 4), torch.randn(1, 3, 5), torch.randn(1, 3, 2))
    with pytest.raises(ValueError, match="key has width 6 but d_k=5"):
        layer(torch.randn(1, 2, 3), torch.randn(1, 3, 6), torch.randn(1, 3, 2))
    with pytest.raises(ValueError, match="key has S .*=3 but value has S .*=4"):
        layer(torch.randn(1, 2, 3), torch.randn(1, 3, 5), torch.randn(1, 4, 2))
    with pytest.raises(ValueError, match="d_hidden must be >= 1"):
        AdditiveAttention(3, 5, 0)
    with pytest.raises(TypeError, match="dropout must be a number"):
        AdditiveAttention(3, 5, 7, dropout="0.1")
    with pytest.raises(ValueError, match=r"dropout must be in \[0, 1\), got 1.0"):
        AdditiveAttention(3, 5, 7, dropout=1.0)


def test_bandwidth_errors():
    x = torch.randn(4)
    with pytest.raises(ValueError, match="bandwidth must be a finite number > 0, got 0.0"):
        nadaraya_watson(x, x, x, bandwidth=0.0)
    with pytest.raises(ValueError, match="k has S=4 points but v has 3"):
        nadaraya_watson(x, x, torch.randn(3))
