"""Per-head circuit scores of an induction model, each measured, never assumed.

Which head attends to the previous token, which one attends to the token after the earlier
occurrence of the current token (prefix matching), whether its output raises that token's logit
(copying), whether its keys read the first head's output (K-composition, by weights and by
removing that output from the keys only), and what removing a head (``head_mask``) does to the
loss on the second occurrence (Olsson et al. 2022, Elhage et al. 2021).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

import torch

from attnlib.core.attention import dot_product_attention
from attnlib.core.masks import causal_mask
from attnlib.course.induction.data import RepeatBatch, _masked_mean, occurrence_losses
from attnlib.models.gpt import GPT, GPTBlock

__all__ = [
    "previous_token_scores",
    "induction_scores",
    "lookback_profile",
    "match_profile",
    "copying_scores",
    "composition_scores",
    "random_composition_baseline",
    "key_path_induction",
    "ablation_table",
    "head_scores",
]


def previous_token_scores(attentions: Sequence[torch.Tensor]) -> torch.Tensor:
    """``(layers, H)``: each head's mean weight from position t to t - 1 (t = 1 .. T-1)."""
    out = []
    for w in attentions:  # (B, H, T, T)
        T = w.shape[-1]
        t = torch.arange(1, T)
        out.append(w[:, :, t, t - 1].double().mean((0, 2)))
    return torch.stack(out)


def induction_scores(attentions: Sequence[torch.Tensor], batch: RepeatBatch) -> torch.Tensor:
    """``(layers, H)``: prefix matching, each head's mean weight from a position q of the second
    occurrence to the token *after* the earlier occurrence of q's token (``q - d + 1`` with
    ``d = second - first``), over the positions ``second .. second + segment - 2``."""
    q = batch.positions("second")  # (B, n)
    k = q - (batch.second - batch.first)[:, None] + 1  # (B, n)
    rows = torch.arange(q.shape[0])[:, None]
    ok = batch.valid()
    out = []
    for w in attentions:  # (B, H, T, T)
        wb = w.permute(0, 2, 3, 1)  # (B, T, T, H)
        out.append(_masked_mean(wb[rows, q, k].double(), ok))  # (H,)
    return torch.stack(out)


def lookback_profile(attentions: Sequence[torch.Tensor], max_back: int) -> torch.Tensor:
    """``(layers, H, max_back + 1)``: each head's mean weight from position t to ``t - k`` for
    ``k = 0 .. max_back`` (over the positions ``t >= max_back``). Entry ``k = 1`` is the
    previous-token score over those positions; a head that reads a fixed distance back has one
    large entry."""
    out = []
    for w in attentions:  # (B, H, T, T)
        T = w.shape[-1]
        t = torch.arange(max_back, T)
        out.append(
            torch.stack([w[:, :, t, t - k].double().mean((0, 2)) for k in range(max_back + 1)], -1)
        )
    return torch.stack(out)


def match_profile(
    attentions: Sequence[torch.Tensor], batch: RepeatBatch, offsets: Sequence[int]
) -> torch.Tensor:
    """``(layers, H, len(offsets))``: each head's mean weight from a position q of the second
    occurrence to ``q - d + o`` (d = second - first): ``o = 0`` is the earlier copy of q's own
    token, ``o = 1`` the token after it (the induction score). Offsets whose key would lie after
    q count as weight 0 (the causal mask)."""
    q = batch.positions("second")  # (B, n)
    d = (batch.second - batch.first)[:, None]
    rows = torch.arange(q.shape[0])[:, None]
    real = batch.valid()
    out = []
    for w in attentions:  # (B, H, T, T)
        wb = w.permute(0, 2, 3, 1).double()  # (B, T, T, H)
        cols = []
        for o in offsets:
            k = q - d + o
            ok = (k >= 0) & (k <= q)
            vals = wb[rows, q, k.clamp(0, w.shape[-1] - 1)] * ok[..., None]  # (B, n, H)
            cols.append(_masked_mean(vals, real))
        out.append(torch.stack(cols, -1))
    return torch.stack(out)


def _ln_scale(ln) -> torch.Tensor:
    return ln.weight.detach().double()


def _ov_qk(model: GPT, layer: int, head: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Head (layer, head)'s ``W_QK = diag(g) W_Q W_Kᵀ diag(g)`` and ``W_OV = diag(g) W_V W_O``
    (D × D, float64) in the row convention (score = x_q W_QK x_kᵀ, output = x W_OV), with the
    block's LayerNorm gain g folded in (its centring and bias left out, as Elhage et al.)."""
    block = cast(GPTBlock, model.blocks[layer])
    wq, wk, wv, wo = (m.double() for m in block.attn.head_weights(head))
    g = _ln_scale(block.ln1)[:, None]  # (D, 1)
    w_qk = (g * wq) @ (g * wk).T  # (D, D)
    w_ov = (g * wv) @ wo  # (D, D)
    return w_qk, w_ov


def copying_scores(model: GPT) -> torch.Tensor:
    """``(layers, H)``: Elhage et al.'s copying score of each head's OV circuit on the tokens,
    ``sum(λ) / sum(|λ|)`` of the eigenvalues λ of ``W_E W_OV W_U`` (V × V; final LayerNorm gain
    folded into W_U). Near 1: the head raises the logit of the token it attends to."""
    w_e = model.tok_emb.weight.detach().double()  # (V, D)
    w_u = model.unembedding().detach().double()  # (D, V)
    if model.ln_f is not None:
        w_u = _ln_scale(model.ln_f)[:, None] * w_u
    cfg = model.config
    out = torch.zeros(cfg.num_layers, cfg.num_heads, dtype=torch.float64)
    for layer in range(cfg.num_layers):
        for head in range(cfg.num_heads):
            _, w_ov = _ov_qk(model, layer, head)
            lam = torch.linalg.eigvals(w_e @ w_ov @ w_u)  # (V,) complex
            out[layer, head] = lam.sum().real / lam.abs().sum()
    return out


def _comp(a: torch.Tensor, b: torch.Tensor) -> float:
    return (
        torch.linalg.matrix_norm(a @ b)
        / (torch.linalg.matrix_norm(a) * torch.linalg.matrix_norm(b))
    ).item()


def composition_scores(model: GPT, kind: str = "k") -> torch.Tensor:
    """``(H, H)``: Elhage et al.'s composition score of each layer-0 head (rows) into each layer-1
    head (columns): ``‖A B‖_F / (‖A‖_F ‖B‖_F)`` with, in the row convention, ``A B = W_QK²
    (W_OV¹)ᵀ`` for K-composition (the keys read head 1's output), ``W_OV¹ W_QK²`` for Q and
    ``W_OV¹ W_OV²`` for V."""
    if kind not in ("q", "k", "v"):
        raise ValueError(f"kind must be 'q', 'k' or 'v', got {kind!r}")
    if model.config.num_layers < 2:
        raise ValueError(f"composition needs 2 layers, the model has {model.config.num_layers}")
    H = model.config.num_heads
    out = torch.zeros(H, H, dtype=torch.float64)
    for h0 in range(H):
        _, ov0 = _ov_qk(model, 0, h0)
        for h1 in range(H):
            qk1, ov1 = _ov_qk(model, 1, h1)
            if kind == "k":
                out[h0, h1] = _comp(qk1, ov0.T)
            elif kind == "q":
                out[h0, h1] = _comp(ov0, qk1)
            else:
                out[h0, h1] = _comp(ov0, ov1)
    return out


def random_composition_baseline(
    d_model: int, d_head: int, samples: int = 200, seed: int = 0
) -> float:
    """The mean composition score of random matrices of the same shapes (``W_QK = W_Q W_Kᵀ``,
    ``W_OV = W_V W_O``, each factor Gaussian, rank ``d_head``): the level a score must exceed."""
    g = torch.Generator().manual_seed(seed)

    def low_rank():
        a = torch.randn(d_model, d_head, generator=g, dtype=torch.float64)
        b = torch.randn(d_head, d_model, generator=g, dtype=torch.float64)
        return a @ b

    return sum(_comp(low_rank(), low_rank().T) for _ in range(samples)) / samples


def key_path_induction(model: GPT, batch: RepeatBatch, offset: int = 1) -> torch.Tensor:
    """``(H + 1, H)``: the layer-1 heads' mean weight on ``q - d + offset`` (:func:`match_profile`;
    ``offset=1`` is the induction score) when one layer-0 head's output is removed from the
    *keys* of layer 1 only (its queries and values unchanged). Row h0 removes layer-0 head h0;
    the last row removes nothing (the model as it is). A drop means the keys read that head's
    output: K-composition, measured by its effect."""
    if model.config.num_layers != 2:
        raise ValueError(f"key_path_induction needs a 2-layer model, got {model.config.num_layers}")
    H = model.config.num_heads
    with torch.no_grad():
        ids = batch.ids.to(model.device)
        full = model(ids).hidden[1]  # (B, T, D) input to block 1
        blk = cast(GPTBlock, model.blocks[1])
        x = blk.ln1(full)
        B, T, _ = x.shape
        dh = blk.attn.head_dim

        def heads(lin, z):
            return lin(z).view(B, T, -1, dh).transpose(1, 2)  # (B, H, T, Dh)

        q, v = heads(blk.attn.w_q, x), heads(blk.attn.w_v, x)
        mask = causal_mask(T, device=x.device)
        rows = []
        for h0 in list(range(H)) + [None]:
            if h0 is None:
                hk = full
            else:
                keep = torch.ones(model.config.num_layers, H, dtype=full.dtype, device=full.device)
                keep[0, h0] = 0.0
                hk = model(ids, head_mask=keep).hidden[1]
            xk = blk.ln1(hk)
            k = heads(blk.attn.w_k, xk)
            if k.shape[1] != H:  # GQA: repeat each K/V head over its group
                k = k.repeat_interleave(H // k.shape[1], dim=1)
                v_ = v.repeat_interleave(H // v.shape[1], dim=1)
            else:
                v_ = v
            _, w = dot_product_attention(q, k, v_, mask)  # (B, H, T, T)
            rows.append(match_profile([w], batch, [offset])[0, :, 0])
    return torch.stack(rows)


def ablation_table(model: GPT, batch: RepeatBatch) -> list[dict]:
    """Remove each head in turn (``head_mask`` zero) and measure the occurrence losses.

    Returns:
        One dict per head, ``{"layer", "head", **occurrence_losses}``, then one for no ablation
        (``layer = head = None``).
    """
    cfg = model.config
    rows: list[dict[str, Any]] = []
    with torch.no_grad():
        ids = batch.ids.to(model.device)
        for layer in range(cfg.num_layers):
            for head in range(cfg.num_heads):
                keep = torch.ones(cfg.num_layers, cfg.num_heads, device=model.device)
                keep[layer, head] = 0.0
                logits = model(ids, head_mask=keep).logits.cpu()
                rows.append({"layer": layer, "head": head, **occurrence_losses(logits, batch)})
        rows.append(
            {"layer": None, "head": None, **occurrence_losses(model(ids).logits.cpu(), batch)}
        )
    return rows


def head_scores(model: GPT, batch: RepeatBatch) -> dict[str, torch.Tensor]:
    """Every per-head score on ``batch``: ``previous`` and ``induction`` ``(layers, H)`` (from the
    attention weights), ``copying`` ``(layers, H)`` (from the weights), and the occurrence
    losses."""
    with torch.no_grad():
        out = model(batch.ids.to(model.device), output_attentions=True)
    att = [w.cpu() for w in out.attentions]
    return {
        "previous": previous_token_scores(att),
        "induction": induction_scores(att, batch),
        "copying": copying_scores(model),
        **{k: torch.tensor(v) for k, v in occurrence_losses(out.logits.cpu(), batch).items()},
    }
