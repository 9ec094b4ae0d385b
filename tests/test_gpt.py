"""The decoder-only model (GPT): shapes, causality and bad input (issue 25).

The references: the same model recomputed without a cache, the same logits with later tokens
changed (causality), and the error messages naming the argument. GPT-2 parity is in
``test_gpt_parity.py``, the KV cache, GQA and FLOP counts in ``test_gpt_cache.py``.
"""

from __future__ import annotations

import pytest
import torch

from attnlib.models.gpt import GPT, GPTConfig, GPTOutput

CFG = GPTConfig(vocab_size=11, max_len=16, d_model=12, num_heads=3, num_layers=2)


def _model(cfg: GPTConfig = CFG, device="cpu") -> GPT:
    return GPT(cfg).to(device=device, dtype=torch.float64).eval()


def test_forward_shapes_and_fields(device):
    model = _model(device=device)
    ids = torch.randint(0, CFG.vocab_size, (2, 7), device=device)
    out = model(ids, output_attentions=True, use_cache=True)
    assert isinstance(out, GPTOutput)
    assert out.logits.shape == (2, 7, CFG.vocab_size)
    assert len(out.hidden) == CFG.num_layers + 1
    assert all(h.shape == (2, 7, CFG.d_model) for h in out.hidden)
    assert out.attentions is not None and len(out.attentions) == CFG.num_layers
    assert all(w.shape == (2, CFG.num_heads, 7, 7) for w in out.attentions)
    assert out.cache is not None and out.cache.length == 7
    plain = model(ids)
    assert plain.attentions is None and plain.cache is None
    torch.testing.assert_close(plain.logits, out.logits, rtol=0, atol=0)
