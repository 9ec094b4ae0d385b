"""The heads explorer: the same projections split into 1, 2, 4 or 8 heads, one weight map per head.

Teaches C16 (each head attends with its own slice of the projections), C17 (one wide head gives
one weight map per query, h heads give h) and C28 (the heads are not copies of one another).
The projections are fixed; only how their output is cut into heads changes.
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F

from attnlib import plotting
from attnlib.attention import dot_product_attention
from attnlib.multihead import split_heads
from attnlib.widgets.base import Explorer, int_slider, new_figure, register

__all__ = ["heads_explorer", "sentence_embeddings", "demo_projections", "head_weight_maps",
           "DEFAULT_TOKENS", "HEAD_CHOICES"]

#: The sentence-like input: six tokens, "the" twice (same embedding, no positions yet).
DEFAULT_TOKENS = ("the", "cat", "sat", "on", "the", "mat")
#: Numbers of heads offered (divisors of the default d_model = 16, at most 8 maps shown).
HEAD_CHOICES = (1, 2, 4, 8)


def sentence_embeddings(tokens, d_model: int, *, generator: torch.Generator | None = None,
                        dtype: torch.dtype = torch.float64) -> torch.Tensor:
    """Random embeddings for a list of tokens; equal tokens get equal vectors.

    Args:
        tokens: sequence of L strings.
        d_model: D.
        generator: random generator (the caller seeds it).
        dtype: dtype of the result.

    Returns:
        ``(1, L, D)`` embeddings, rows drawn from N(0, 1), one per distinct token in order of
        first appearance.
    """
    tokens = list(tokens)
    if not tokens or not all(isinstance(t, str) for t in tokens):
        raise ValueError(f"tokens must be a non-empty sequence of strings, got {tokens!r}")
    vocab = list(dict.fromkeys(tokens))
    table = torch.randn(len(vocab), d_model, generator=generator, dtype=dtype)  # (V, D)
    index = torch.tensor([vocab.index(t) for t in tokens])
    return table[index].unsqueeze(0)  # (1, L, D)


def demo_projections(tokens=DEFAULT_TOKENS, *, d_model: int = 16, score_gain: float = 2.0,
                     seed: int = 0) -> dict[str, torch.Tensor]:
    """The explorer's input and projections, from a private seeded generator.

    Args:
        tokens: the L tokens.
        d_model: D.
        score_gain: multiplies W_Q so that random scores are not all nearly equal.
        seed: seed of a private ``torch.Generator`` (the global generator is not touched).

    Returns:
        ``{"x": (1, L, D), "w_q": (D, D), "w_k": (D, D), "w_v": (D, D)}`` in float64, weights in
        ``nn.Linear`` layout (``F.linear(x, w)`` = x Wᵀ), entries N(0, 1/D) (W_Q times the gain).
    """
    gen = torch.Generator().manual_seed(seed)
    x = sentence_embeddings(tokens, d_model, generator=gen)  # (1, L, D)
    std = 1.0 / math.sqrt(d_model)
    w_q = torch.randn(d_model, d_model, generator=gen, dtype=torch.float64) * std * score_gain
    w_k = torch.randn(d_model, d_model, generator=gen, dtype=torch.float64) * std
    w_v = torch.randn(d_model, d_model, generator=gen, dtype=torch.float64) * std
    return {"x": x, "w_q": w_q, "w_k": w_k, "w_v": w_v}


def head_weight_maps(x: torch.Tensor, w_q: torch.Tensor, w_k: torch.Tensor, num_heads: int,
                     ) -> torch.Tensor:
    """Each head's attention weights when the projections x W_Q, x W_K are cut into heads.

    Args:
        x: ``(1, L, D)`` input.
        w_q, w_k: ``(D, D)`` projections in ``nn.Linear`` layout.
        num_heads: H, dividing D.

    Returns:
        ``(H, L, L)`` weights, head r from features ``r*Dh:(r+1)*Dh`` (scale ``1/sqrt(Dh)``).
    """
    q = split_heads(F.linear(x, w_q), num_heads)  # (1, H, L, Dh)
    k = split_heads(F.linear(x, w_k), num_heads)  # (1, H, S, Dh)
    _, w = dot_product_attention(q, k, k)  # values do not change the weights
    return w[0]  # (H, L, S)


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
    cache = {h: head_weight_maps(data["x"], data["w_q"], data["w_k"], h) for h in HEAD_CHOICES}
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
