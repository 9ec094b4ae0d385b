"""The heads explorer: the same projections split into 1, 2, 4 or 8 heads, one weight map per head.

Teaches C16 (each head attends with its own slice of the projections), C17 (one wide head gives
one weight map per query, h heads give h) and C28 (the heads are not copies of one another).
The projections are fixed; only how their output is cut into heads changes.
"""

from __future__ import annotations

import math

import numpy as np

from attnlib import plotting
from attnlib.examples import DEFAULT_TOKENS, demo_projections
from attnlib.multihead import head_weight_maps
from attnlib.widgets.base import Explorer, int_slider, new_figure, register

__all__ = ["heads_explorer", "HEAD_CHOICES"]

#: Numbers of heads offered (divisors of the default d_model = 16, at most 8 maps shown).
HEAD_CHOICES = (1, 2, 4, 8)


@register("heads")
def heads_explorer(tokens=DEFAULT_TOKENS, *, d_model: int = 16, num_heads: int = 4, head: int = 1,
                   score_gain: float = 2.0, seed: int = 0) -> Explorer:
    """A number-of-heads slider and a head selector: per-head weight maps for one sentence.

    Args:
        tokens: the L tokens (2..10) of the input sentence.
        d_model: D; must be divisible by 8 so every choice in :data:`HEAD_CHOICES` works.
        num_heads: starting number of heads, one of :data:`HEAD_CHOICES`.
        head: starting selected head (1-based).
        score_gain: scales W_Q so the random scores are not all flat (a learned model's would not be).
        seed: seed of the explorer's own generator for embeddings and projections.

    Returns:
        An :class:`~attnlib.widgets.base.Explorer` with controls ``heads`` (1, 2, 4, 8) and
        ``head``, and a readout of the selected head's weights ``(L, L)``, its width Dh and how far
        the heads' maps are from each other (0 would mean copies).
    """
    tokens = list(tokens)
    if not 2 <= len(tokens) <= 10:
        raise ValueError(f"tokens must have between 2 and 10 entries, got {len(tokens)}")
    if d_model % max(HEAD_CHOICES):
        raise ValueError(f"d_model must be divisible by {max(HEAD_CHOICES)}, got {d_model}")
    if num_heads not in HEAD_CHOICES:
        raise ValueError(f"num_heads must be one of {HEAD_CHOICES}, got {num_heads}")
    max_heads = max(HEAD_CHOICES)
    if not 1 <= head <= max_heads:
        raise ValueError(f"head must be in [1, {max_heads}], got {head}")
    data = demo_projections(tokens, d_model=d_model, score_gain=score_gain, seed=seed)
    L = len(tokens)
    cache = {h: head_weight_maps(data.x, data.w_q, data.w_k, h) for h in HEAD_CHOICES}
    # Colour every map once (vmin 0, vmax 1): an update then only swaps small RGBA pictures.
    import matplotlib

    viridis = matplotlib.colormaps["viridis"]
    pictures = {h: viridis(w.numpy()) for h, w in cache.items()}  # (H, L, S, 4) per h
    grey = np.full((L, L, 4), (0.85, 0.85, 0.85, 1.0))

    # exponent slider: heads = 2**e keeps the control a plain integer slider
    controls = {
        "log2_heads": int_slider("heads h = 2^", 0, int(math.log2(max_heads)),
                                 int(math.log2(num_heads)), width="230px"),
        "head": int_slider("show head r", 1, max_heads, head, width="230px"),
    }

    # All 8 small maps live in ONE image (a 2 x 4 mosaic with white gaps): one picture to redraw.
    cols = max_heads // 2
    step = L + 1  # a tile plus a one-cell gap

    def mosaic(h: int) -> np.ndarray:
        tiles = np.ones((2 * step - 1, cols * step - 1, 4))  # white background
        for i in range(max_heads):
            row, col = divmod(i, cols)
            tiles[row * step:row * step + L, col * step:col * step + L] = pictures[h][i] if i < h else grey
        return tiles

    mosaics = {h: mosaic(h) for h in HEAD_CHOICES}

    fig, (ax_big, ax_tiles) = new_figure(1, 2, figsize=(8.6, 3.4), width_ratios=[1.0, 1.45])
    w0 = cache[num_heads]
    big = plotting.heatmap(w0[min(head, num_heads) - 1], ax=ax_big, row_labels=tokens, col_labels=tokens,
                           vmin=0.0, vmax=1.0, colorbar=False, title="", xlabel="key",
                           ylabel="query")
    big_title = ax_big.set_title("h = 8 heads (Dh = 2): head 8")  # text set by update
    tiles = ax_tiles.imshow(mosaics[num_heads], interpolation="nearest")
    for i in range(max_heads):
        row, col = divmod(i, cols)
        ax_tiles.text(col * step + (L - 1) / 2, row * step - 0.7, f"head {i + 1}", ha="center",
                      va="bottom", fontsize=8)
    ax_tiles.set_xlim(-0.6, cols * step - 1.4)
    ax_tiles.set_ylim(2 * step - 1.4, -1.6)
    ax_tiles.set_axis_off()
    ax_tiles.set_title("all heads (grey: head r > h does not exist)", fontsize=9)
    from matplotlib.patches import Rectangle

    frame = ax_tiles.add_patch(Rectangle((-0.5, -0.5), L, L, fill=False, edgecolor="C3", linewidth=3.0))

    def update(log2_heads, head):
        h = 2 ** int(log2_heads)
        r = min(int(head), h)  # a head that does not exist shows the last one
        w = cache[h]  # (H, L, S)
        big.set_data(pictures[h][r - 1])
        big_title.set_text(f"h = {h} heads (Dh = {d_model // h}): head {r}")
        tiles.set_data(mosaics[h])
        row, col = divmod(r - 1, cols)
        frame.set_xy((col * step - 0.5, row * step - 0.5))
        if h > 1:
            flat = w.reshape(h, -1)  # (H, L*S)
            gaps = (flat.unsqueeze(0) - flat.unsqueeze(1)).abs().mean(-1)  # (H, H)
            spread = float(gaps.sum() / (h * (h - 1)))
        else:
            spread = 0.0
        return {
            "heads h": h,
            "head width Dh": d_model // h,
            "shown head r": r,
            f"weights of head {r}": w[r - 1],
            "mean |A_r - A_s| between heads": spread,
        }

    ex = Explorer(controls, update, fig, columns=tokens, digits=3,
                  dynamic=[big, big_title, tiles, frame])
    ex.data = data  # the input and projections, for tests and curious readers
    return ex
