"""Multi-head attention: h heads, each with its own projections, concatenated and mixed by W_O.

MultiHead(Q, K, V) = Concat(head_1, ..., head_h) W_O,
head_r = Attention(Q W_Q^(r), K W_K^(r), V W_V^(r)), with Dh = D / h per head.

The heads are computed with one (D, D) projection per role whose output is reshaped into
``(B, H, L, Dh)``; :func:`multihead_by_separate_heads` computes the same thing head by head
with h separate (D, Dh) projections (C16), and :func:`one_wide_head` shows that one head of
the full width is a different model (C17).
"""

from __future__ import annotations

import torch
from torch import nn

from attnlib.core.attention import _attention
from attnlib.core.head_views import (
    head_projection,
    head_weight_maps,
    multihead_by_separate_heads,
    one_wide_head,
)
from attnlib.core.heads import _merge_heads, _split_heads, merge_heads, split_heads
from attnlib.core.masks import checked_attention_mask
from attnlib.core.scoring import default_scale
from attnlib.util._checks import (
    check_bool,
    check_has_keys,
    check_matches_parameters,
    check_positive_int,
    check_probability,
    check_tensor,
)

__all__ = [
    "MultiHeadAttention",
    "split_heads",
    "merge_heads",
    "head_projection",
    "multihead_by_separate_heads",
    "one_wide_head",
    "head_weight_maps",
]


def check_head_mask_type(head_mask) -> torch.Tensor:
    """A ``head_mask`` is a floating (a factor per head) or boolean (True = keep) tensor."""
    if not isinstance(head_mask, torch.Tensor):
        raise TypeError(f"head_mask must be a torch.Tensor, got {type(head_mask).__name__}")
    if not (head_mask.is_floating_point() or head_mask.dtype == torch.bool):
        raise TypeError(
            f"head_mask must be floating (a factor per head) or boolean (True = keep), "
            f"got dtype {head_mask.dtype}"
        )
    return head_mask


def check_layer_head_mask(
    head_mask, *, batch: int, num_layers: int, num_heads: int, device: torch.device, where: str
) -> torch.Tensor:
    """A model's ``head_mask``: ``(num_layers, num_heads)`` or ``(B, num_layers, num_heads)``,
    one factor per head, on ``device`` (``where`` names what lives there, e.g. "the model")."""
    check_head_mask_type(head_mask)
    shape = (num_layers, num_heads)
    if tuple(head_mask.shape) not in (shape, (batch, *shape)):
        raise ValueError(
            f"head_mask must have shape (num_layers, num_heads) = {shape} or "
            f"(B, num_layers, num_heads) = {(batch, *shape)}, one factor per head, "
            f"got {tuple(head_mask.shape)}"
        )
    if head_mask.device != device:
        raise ValueError(f"head_mask is on {head_mask.device} but {where} {device}")
    return head_mask


def _check_3d_mask(attn_mask: torch.Tensor, batch: int, heads: int, queries: int, keys: int):
    """A 3-D ``attn_mask`` is ``(B, L, S)``, one mask for every head; say so (and how to give one
    mask per head) when it does not broadcast, in the shape the caller passed."""
    try:
        ok = torch.broadcast_shapes(attn_mask.shape, (batch, queries, keys)) == (
            batch,
            queries,
            keys,
        )
    except RuntimeError:
        ok = False
    if not ok:
        per_head = attn_mask.shape[0] == heads and attn_mask.shape[1:] == (queries, keys)
        hint = (
            f"; for one mask per head pass it 4-D as (B, H, L, S), e.g. attn_mask[None] of "
            f"shape (1, {heads}, {queries}, {keys})"
            if per_head
            else ""
        )
        raise ValueError(
            f"attn_mask has shape {tuple(attn_mask.shape)}, but a 3-D attn_mask is (B, L, S), "
            f"the same for every head, and must broadcast to (B, L, S) = ({batch}, {queries}, "
            f"{keys}){hint}"
        )


def _check_head_mask(head_mask, batch: int, num_heads: int, device: torch.device) -> torch.Tensor:
    """Validate a per-head multiplier and return it as ``(H,)`` or ``(B, H)``.

    Args:
        head_mask: ``(H,)`` (the same for every sequence) or ``(B, H)``; floating (a factor per
            head) or boolean (True = keep the head).
        batch: B; num_heads: H; device: where the attention runs.
    """
    check_head_mask_type(head_mask)
    if tuple(head_mask.shape) not in ((num_heads,), (batch, num_heads)):
        raise ValueError(
            f"head_mask must have shape (H,) = ({num_heads},) or (B, H) = ({batch}, {num_heads}), "
            f"got {tuple(head_mask.shape)}"
        )
    if head_mask.device != device:
        raise ValueError(f"head_mask is on {head_mask.device} but the inputs are on {device}")
    return head_mask


class MultiHeadAttention(nn.Module):
    """Multi-head attention with separate query/key/value/output projections.

    Args:
        d_model: D, the model width (input and output).
        num_heads: H; must divide ``d_model``; each head has width ``Dh = D / H``.
        bias: whether the four projections have biases.
        dropout: dropout probability on the attention weights (training mode only).

    Attributes:
        w_q, w_k, w_v, w_o: ``nn.Linear(D, D)`` projections. Rows ``r*Dh:(r+1)*Dh`` of
            ``w_q.weight`` are head r's own W_Q^(r) (transposed, as nn.Linear stores it).
    """

    def __init__(self, d_model: int, num_heads: int, *, bias: bool = True, dropout: float = 0.0):
        super().__init__()
        check_positive_int("d_model", d_model)
        check_positive_int("num_heads", num_heads)
        if d_model % num_heads:
            raise ValueError(
                f"d_model={d_model} is not divisible by num_heads={num_heads}; each head needs "
                f"an equal width Dh = d_model / num_heads"
            )
        check_probability("dropout", dropout)
        check_bool("bias", bias)
        self.d_model = d_model
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.dropout = dropout
        self.w_q = nn.Linear(d_model, d_model, bias=bias)
        self.w_k = nn.Linear(d_model, d_model, bias=bias)
        self.w_v = nn.Linear(d_model, d_model, bias=bias)
        self.w_o = nn.Linear(d_model, d_model, bias=bias)

    def _check_inputs(self, query, key, value) -> None:
        for name, x in (("query", query), ("key", key), ("value", value)):
            check_tensor(name, x, ndim=3)
            if x.shape[-1] != self.d_model:
                raise ValueError(
                    f"{name} has width {x.shape[-1]} but this MultiHeadAttention has "
                    f"d_model={self.d_model} ({name} shape {tuple(x.shape)})"
                )
        if key.shape[:2] != value.shape[:2]:
            raise ValueError(
                f"key and value must have the same (B, S), got key {tuple(key.shape)} and "
                f"value {tuple(value.shape)}"
            )
        if query.shape[0] != key.shape[0]:
            raise ValueError(f"query has batch size {query.shape[0]} but key has {key.shape[0]}")
        check_has_keys("key", key, -2, query=query, value=value)
        check_matches_parameters(
            type(self).__name__, self.w_q.weight, query=query, key=key, value=value
        )

    def forward(
        self,
        query: torch.Tensor,
        key: torch.Tensor,
        value: torch.Tensor,
        attn_mask: torch.Tensor | None = None,
        *,
        valid_lens: torch.Tensor | None = None,
        is_causal: bool = False,
        head_mask: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Attend from ``query`` to ``key``/``value`` with H heads.

        Args:
            query: ``(B, L, D)``.
            key: ``(B, S, D)``.
            value: ``(B, S, D)``.
            attn_mask: optional mask, ``(L, S)``, ``(B, L, S)`` or ``(B, H, L, S)``: boolean
                (True = may attend) or float (added to the scores).
            valid_lens: optional integer ``(B,)`` or ``(B, L)``: keys past the length are padding.
            is_causal: hide keys j > i.
            head_mask: optional ``(H,)`` or ``(B, H)``, floating or boolean: each head's output
                is multiplied by it before the heads are concatenated and mixed by W_O (1 or
                True keeps a head, 0 or False removes it: an ablation).

        Returns:
            ``(out, weights)``: ``out (B, L, D)``; ``weights (B, H, L, S)``, one row of
            weights per head and query (before dropout). ``head_mask`` does not touch the
            weights: a removed head still looks where it looked; only what it passes on is gone.
        """
        self._check_inputs(query, key, value)
        check_bool("is_causal", is_causal)
        batch, num_queries, num_keys = query.shape[0], query.shape[1], key.shape[1]
        keep = None
        if head_mask is not None:
            keep = _check_head_mask(head_mask, batch, self.num_heads, query.device)
        if isinstance(attn_mask, torch.Tensor) and attn_mask.dim() == 3:
            _check_3d_mask(attn_mask, batch, self.num_heads, num_queries, num_keys)
            attn_mask = attn_mask.unsqueeze(1)  # (B, 1, L, S): the same mask for every head
        mask, may_be_empty = checked_attention_mask(
            (batch, self.num_heads, num_queries, num_keys),
            query.device,
            attn_mask,
            valid_lens,
            is_causal,
        )
        return self._attend(query, key, value, mask, keep, rows_may_be_empty=may_be_empty)

    def _attend(
        self,
        query: torch.Tensor,
        key: torch.Tensor,
        value: torch.Tensor,
        mask: torch.Tensor | None,
        keep: torch.Tensor | None = None,
        *,
        rows_may_be_empty: bool = True,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """:meth:`forward` unchecked: ``mask`` (None, boolean or float) already folds
        ``attn_mask``, ``valid_lens`` and ``is_causal`` and broadcasts to ``(B, H, L, S)``;
        ``keep`` is a checked ``head_mask``. The blocks call this once they have checked."""
        q = _split_heads(self.w_q(query), self.num_heads)  # (B, H, L, Dh)
        k = _split_heads(self.w_k(key), self.num_heads)  # (B, H, S, Dh)
        v = _split_heads(self.w_v(value), self.num_heads)  # (B, H, S, Dh)
        heads, weights = _attention(
            q,
            k,
            v,
            mask,
            default_scale(self.head_dim),
            self.dropout if self.training else 0.0,
            rows_may_be_empty=rows_may_be_empty,
        )  # (B, H, L, Dh), (B, H, L, S)
        if keep is not None:
            heads = heads * keep.to(heads.dtype)[..., None, None]  # (B, H, L, Dh)
        return self.w_o(_merge_heads(heads)), weights  # (B, L, D), (B, H, L, S)

    @classmethod
    def from_torch(cls, m: nn.MultiheadAttention) -> MultiHeadAttention:
        """Copy an ``nn.MultiheadAttention(batch_first=True)`` so both give the same outputs.

        torch packs W_Q, W_K, W_V into ``in_proj_weight`` ``(3D, D)``; we split it. Note that
        torch's ``key_padding_mask`` and boolean ``attn_mask`` mean True = *hidden*, the
        opposite of ours: pass ``~mask`` to one of the two when comparing.

        Args:
            m: the torch module (``batch_first=True``, equal q/k/v widths, no ``add_bias_kv``,
                no ``add_zero_attn``).

        Returns:
            A new :class:`MultiHeadAttention` on the same device and dtype as ``m``.
        """
        if not isinstance(m, nn.MultiheadAttention):
            raise TypeError(f"m must be an nn.MultiheadAttention, got {type(m).__name__}")
        if not m.batch_first:
            raise ValueError("m must be built with batch_first=True (inputs (B, L, D))")
        if not m._qkv_same_embed_dim:
            raise ValueError(
                f"m has kdim={m.kdim}, vdim={m.vdim} different from embed_dim={m.embed_dim}; "
                "only equal widths are supported"
            )
        if m.bias_k is not None or m.add_zero_attn:
            raise ValueError("add_bias_kv and add_zero_attn are not supported")
        bias = m.in_proj_bias is not None
        weight = m.in_proj_weight
        new = cls(m.embed_dim, m.num_heads, bias=bias, dropout=m.dropout)
        new = new.to(device=weight.device, dtype=weight.dtype)
        d = m.embed_dim
        with torch.no_grad():
            for i, lin in enumerate((new.w_q, new.w_k, new.w_v)):
                lin.weight.copy_(weight[i * d : (i + 1) * d])
                if bias:
                    lin.bias.copy_(m.in_proj_bias[i * d : (i + 1) * d])
            new.w_o.weight.copy_(m.out_proj.weight)
            if bias:
                new.w_o.bias.copy_(m.out_proj.bias)
        return new.train(m.training)
