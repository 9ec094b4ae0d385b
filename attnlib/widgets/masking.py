"""The masking explorer: padding lengths per batch row and a causal switch, on one batch's weights.

Teaches C11 (hidden positions get weight exactly 0), C25 (valid_lens per batch row; a row with
valid_len 0 gives zero weights), C36 (the causal mask hides j > i) and C37 (the two masks combine).
Hidden cells are drawn grey and hatched, so "hidden" and "visible but weight 0" look different.
"""

from __future__ import annotations

import numpy as np
import torch

from attnlib import plotting
from attnlib.attention import dot_product_attention
from attnlib.examples import DEFAULT_VALID_LENS, demo_batch
from attnlib.masks import causal_mask, padding_mask
from attnlib.widgets.base import Explorer, int_slider, new_figure, register, toggle

__all__ = ["masking_explorer"]


@register("masking")
def masking_explorer(valid_lens=DEFAULT_VALID_LENS, *, num_tokens: int = 6, d_k: int = 8,
                     causal: bool = False, seed: int = 0) -> Explorer:
    """Sliders for each batch row's valid length and a causal toggle, over one batch of self-attention.

    Args:
        valid_lens: the starting length of each of the B = 3 batch rows, in ``[0, num_tokens]``.
        num_tokens: L = S, tokens per row (2..10).
        d_k: width of the random queries and keys.
        causal: start with the causal mask on.
        seed: seed of the explorer's own generator for the random queries, keys and values.

    Returns:
        An :class:`~attnlib.widgets.base.Explorer` with controls ``len0``, ``len1``, ``len2``,
        ``causal`` and a readout of query 2's weights in each batch row, each row's weight sums
        per query, the largest weight on a hidden key and the number of fully hidden query rows.
    """
    lens = tuple(int(n) for n in valid_lens)
    if len(lens) != 3:
        raise ValueError(f"valid_lens must give 3 lengths (one per batch row), got {valid_lens!r}")
    if not 2 <= num_tokens <= 10:
        raise ValueError(f"num_tokens must be in [2, 10], got {num_tokens}")
    if any(not 0 <= n <= num_tokens for n in lens):
        raise ValueError(f"valid_lens must lie in [0, num_tokens={num_tokens}], got {lens}")
    B, L = 3, num_tokens
    q, k, v = demo_batch(batch=B, num_tokens=L, d_k=d_k, seed=seed)  # (B, L, Dk), (B, S, Dk), (B, S, Dv)

    controls = {f"len{b}": int_slider(f"valid_len (row {b})", 0, L, lens[b], width="230px")
                for b in range(B)}
    controls["causal"] = toggle("causal mask (hide j > i)", causal)

    # Every (row, length, causal) combination is small: compute them all once, so that a slider
    # move only looks results up and moves pixels.
    table = {}
    for c in (False, True):
        for n in range(L + 1):
            lens_n = torch.full((B,), n)  # (B,)
            _, w_n = dot_product_attention(q, k, v, valid_lens=lens_n, is_causal=c)  # (B, L, S)
            vis_n = padding_mask(lens_n[:1], L)[:, None]  # (1, 1, S): the real keys
            if c:
                vis_n = vis_n & causal_mask(L)  # (1, L, S): padding AND causal
            vis_n = vis_n[0].expand(L, L)  # (L, S)
            pictures = [plotting.weights_rgba(w_n[b], vis_n) for b in range(B)]
            table[c, n] = (w_n.numpy(), vis_n.numpy(), pictures)

    def compute(len0, len1, len2, causal):
        rows = [table[bool(causal), int(n)] for n in (len0, len1, len2)]
        weights = np.stack([rows[b][0][b] for b in range(B)])  # (B, L, S)
        visible = np.stack([rows[b][1] for b in range(B)])  # (B, L, S)
        return weights, visible, [rows[b][2][b] for b in range(B)]

    probe = min(2, L - 1)  # the query whose weights the readout lists
    w0, vis0, pictures0 = compute(*lens, causal)
    fig, axes = new_figure(1, B, figsize=(8.4, 3.0))
    images = []
    for b, ax in enumerate(axes):
        im = plotting.heatmap(w0[b], ax=ax, mask=vis0[b], vmin=0.0, vmax=1.0, colorbar=(b == B - 1),
                              title=f"batch row {b}", xlabel="key j",
                              ylabel="query i" if b == 0 else "")
        im.set_data(pictures0[b])  # the same cells as one RGBA picture, hidden ones hatched
        if b > 0:
            ax.tick_params(labelleft=False)  # one set of query labels is enough (and faster)
        images.append(im)

    def update(len0, len1, len2, causal):
        weights, visible, pictures = compute(len0, len1, len2, causal)
        for b in range(B):
            images[b].set_data(pictures[b])
        hidden_w = np.where(visible, 0.0, weights)  # weights on hidden keys only
        shown = {"valid_lens": [int(len0), int(len1), int(len2)]}
        for b in range(B):
            shown[f"row {b}: weights of query {probe}"] = weights[b, probe]
        for b in range(B):
            shown[f"row {b}: row sums (per query)"] = weights[b].sum(-1)
        shown["max weight on a hidden key"] = float(np.abs(hidden_w).max())
        shown["fully hidden query rows"] = int((~visible.any(-1)).sum())
        return shown

    ex = Explorer(controls, update, fig, columns=[str(j) for j in range(L)], digits=3,
                  dynamic=images)
    ex.data = {"q": q, "k": k, "v": v}  # the inputs, for tests and curious readers
    return ex
