"""The hand-written attention backward (C15) against autograd."""

from __future__ import annotations

import pytest
import torch
from torch.testing import assert_close

from attnlib import attention_backward, dot_product_attention


@pytest.mark.parametrize("scale", [None, 1.0, 0.37])
@pytest.mark.parametrize("masked", [False, True])
def test_c15_backward_equals_autograd(device, scale, masked):
    q = torch.randn(2, 3, 4, 5, device=device, dtype=torch.float64, requires_grad=True)
    k = torch.randn(2, 3, 6, 5, device=device, dtype=torch.float64, requires_grad=True)
    v = torch.randn(2, 3, 6, 2, device=device, dtype=torch.float64, requires_grad=True)
    mask = None
    if masked:
        mask = torch.rand(4, 6, device=device) > 0.4
        mask[0] = False  # a fully hidden row too
    out, weights = dot_product_attention(q, k, v, mask, scale=scale)
    grad_out = torch.randn_like(out)
    dq_ref, dk_ref, dv_ref = torch.autograd.grad(out, (q, k, v), grad_out)
    dq, dk, dv = attention_backward(
        q.detach(), k.detach(), v.detach(), weights.detach(), grad_out, scale=scale
    )
    assert_close(dq, dq_ref)
    assert_close(dk, dk_ref)
    assert_close(dv, dv_ref)


def test_c15_bad_grad_out_shape():
    q, k, v = torch.randn(4, 3), torch.randn(5, 3), torch.randn(5, 2)
    _, w = dot_product_attention(q, k, v)
    with pytest.raises(ValueError, match=r"grad_out must be \(\.\.\., L, Dv\)"):
        attention_backward(q, k, v, w, torch.randn(4, 3))


@pytest.mark.parametrize(
    "q_shape, k_shape, v_shape",
    [
        ((3, 4, 5), (6, 5), (6, 2)),  # k and v without a batch axis
        ((1, 3, 4), (2, 5, 4), (2, 5, 6)),  # q broadcast over the batch
        ((3, 4), (2, 5, 4), (2, 5, 6)),  # q without a batch axis
        ((2, 1, 3, 4), (1, 3, 5, 4), (2, 3, 5, 6)),  # each input broadcast on another axis
    ],
)
def test_c15_backward_reduces_every_broadcast_input(device, q_shape, k_shape, v_shape):
    q = torch.randn(q_shape, device=device, dtype=torch.float64, requires_grad=True)
    k = torch.randn(k_shape, device=device, dtype=torch.float64, requires_grad=True)
    v = torch.randn(v_shape, device=device, dtype=torch.float64, requires_grad=True)
    out, weights = dot_product_attention(q, k, v)
    g = torch.randn_like(out)
    refs = torch.autograd.grad(out, (q, k, v), g)
    mine = attention_backward(q.detach(), k.detach(), v.detach(), weights.detach(), g)
    for a, b in zip(mine, refs):
        assert a.shape == b.shape
        assert_close(a, b)
