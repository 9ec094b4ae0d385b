"""What the heads of a trained encoder do, measured (C44-C47), and the data of a head view.

Every statistic is an average over the *real* queries of a padded batch (padding never
counts): the entropy of each head's rows, the share of weight on chosen keys ([CLS], [SEP],
punctuation), the weight on the previous or the next token, how far a head looks (mean |i - j|),
how different the heads of one layer are, and Var(q·k)/d_k of the trained projections. Two more
functions compare position tables: cosine similarity by distance, and how far a fixed offset is
from a rotation (:mod:`attnlib.course.position_tables`). And an ablation: how far each sentence
vector moves when one head's output is zeroed before W_O (:func:`ablation_effect`, built on
:func:`head_mask_without`; :mod:`attnlib.course.head_ablation`). Both are re-exported here.

``attentions`` everywhere is what :class:`~attnlib.models.minilm.MiniLMEncoder` returns: a
sequence of ``num_layers`` tensors ``(B, H, L, L)`` (or one stacked ``(layers, B, H, L, L)``).
None of this says what a head *means*: a large weight is not an explanation (000 §5, §8).
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from attnlib.core.masks import _padding_mask
from attnlib.core.multihead import split_heads
from attnlib.core.scoring import scaled_scores
from attnlib.course.head_ablation import ablation_effect, head_mask_without
from attnlib.course.position_tables import rotation_residual, similarity_by_distance
from attnlib.course.scaling import entropy
from attnlib.util._checks import check_tensor, check_valid_lens

__all__ = [
    "HeadView",
    "QKVariance",
    "WeightedValues",
    "stack_attentions",
    "real_token_mask",
    "is_punctuation",
    "token_masks",
    "head_entropy",
    "key_share",
    "offset_share",
    "find_offset_heads",
    "mean_distance",
    "head_distances",
    "qk_variance",
    "weighted_values",
    "similarity_by_distance",
    "rotation_residual",
    "head_view",
    "head_mask_without",
    "ablation_effect",
]


def stack_attentions(attentions) -> torch.Tensor:
    """``num_layers`` tensors ``(B, H, L, L)`` -> one ``(layers, B, H, L, L)`` tensor."""
    if isinstance(attentions, torch.Tensor):
        a = attentions
    elif isinstance(attentions, (list, tuple)) and attentions:
        for i, t in enumerate(attentions):
            check_tensor(f"attentions[{i}]", t, ndim=4)
        a = torch.stack(tuple(attentions))
    else:
        raise TypeError(
            "attentions must be a non-empty tuple of (B, H, L, L) tensors or one "
            f"(layers, B, H, L, L) tensor, got {type(attentions).__name__}"
        )
    check_tensor("attentions", a, ndim=5)
    if a.shape[-1] != a.shape[-2]:
        raise ValueError(f"self-attention weights must be square (L, L), got {tuple(a.shape)}")
    return a  # (layers, B, H, L, L)


def real_token_mask(valid_lens: torch.Tensor, length: int) -> torch.Tensor:
    """``(B, L)`` boolean, True at the real tokens ``i < valid_lens[b]``."""
    what = "the sequence length"
    check_valid_lens(
        valid_lens, None, None, length, None, per_query=False, min_len=1, keys="L", keys_what=what
    )
    return _padding_mask(valid_lens, length)  # (B, L)


def _checked(attentions, valid_lens) -> tuple[torch.Tensor, torch.Tensor]:
    a = stack_attentions(attentions)
    if valid_lens.shape[0] != a.shape[1]:
        raise ValueError(
            f"valid_lens has {valid_lens.shape[0]} rows but the batch has {a.shape[1]} sequences"
        )
    return a, real_token_mask(valid_lens.to(a.device), a.shape[-1])


def _mean_over_queries(per_query: torch.Tensor, queries: torch.Tensor) -> torch.Tensor:
    """``(layers, B, H, L)`` values averaged over the True ``(B, L)`` queries -> ``(layers, H)``."""
    w = queries.to(per_query.dtype)[None, :, None, :]  # (1, B, 1, L)
    return (per_query * w).sum(dim=(1, 3)) / w.sum(dim=(1, 3))  # (layers, H)


def is_punctuation(token: str) -> bool:
    """True for a token made only of punctuation characters (Unicode category P*), e.g. ``.``."""
    return bool(token) and all(unicodedata.category(c).startswith("P") for c in token)


def token_masks(
    tokens: list[list[str]], length: int, *, device: torch.device | str | None = None
) -> dict[str, torch.Tensor]:
    """Boolean ``(B, L)`` masks of the keys that are ``[CLS]``, ``[SEP]`` or punctuation.

    Args:
        tokens: each sequence's real tokens (as :meth:`MiniLMEncoder.tokenize` gives them).
        length: L, the padded length.
        device: where to build the masks.

    Returns:
        ``{"[CLS]": ..., "[SEP]": ..., "punctuation": ...}``; padding is False everywhere.
    """
    tests = {
        "[CLS]": lambda t: t == "[CLS]",
        "[SEP]": lambda t: t == "[SEP]",
        "punctuation": is_punctuation,
    }
    masks = {}
    for name, test in tests.items():
        rows = [[test(t) for t in seq] + [False] * (length - len(seq)) for seq in tokens]
        masks[name] = torch.tensor(rows, dtype=torch.bool, device=device)  # (B, L)
    return masks


def head_entropy(attentions, valid_lens: torch.Tensor) -> torch.Tensor:
    """Mean entropy (nats) of each head's rows over the real queries: ``(layers, H)``.

    Low: the head looks at few keys; ``log n`` would be a uniform row over n keys.
    """
    a, real = _checked(attentions, valid_lens)
    return _mean_over_queries(entropy(a), real)  # (layers, H)


def key_share(attentions, valid_lens: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
    """Mean weight each head puts on the keys where ``keys`` (``(B, L)`` bool) is True:
    ``(layers, H)``.
    """
    a, real = _checked(attentions, valid_lens)
    if keys.dtype != torch.bool or tuple(keys.shape) != tuple(real.shape):
        raise ValueError(
            f"keys must be a boolean (B, L) = {tuple(real.shape)} mask, got "
            f"{keys.dtype} {tuple(keys.shape)}"
        )
    share = (a * keys.to(a.device, a.dtype)[None, :, None, None, :]).sum(-1)  # (layers, B, H, L)
    return _mean_over_queries(share, real)


def offset_share(attentions, valid_lens: torch.Tensor, offset: int) -> torch.Tensor:
    """Mean weight on the key ``i + offset`` (-1: previous token, +1: next): ``(layers, H)``.

    Averaged over the real queries i whose key ``i + offset`` is a real token too.
    """
    if isinstance(offset, bool) or not isinstance(offset, int) or offset == 0:
        raise ValueError(f"offset must be a non-zero int, got {offset!r}")
    a, _ = _checked(attentions, valid_lens)
    length = a.shape[-1]
    if abs(offset) >= length:
        raise ValueError(f"|offset|={abs(offset)} must be < L={length}")
    diag = torch.diagonal(a, offset=offset, dim1=-2, dim2=-1)  # (layers, B, H, L-|offset|)
    first = max(0, -offset)
    query = torch.arange(first, first + diag.shape[-1], device=a.device)  # (L-|offset|,)
    lens = valid_lens.to(a.device).unsqueeze(1)  # (B, 1)
    ok = (query < lens) & (query + offset < lens)  # (B, L-|offset|)
    return _mean_over_queries(diag, ok)


def find_offset_heads(
    attentions, valid_lens: torch.Tensor, offset: int, *, threshold: float = 0.5
) -> list[tuple[int, int, float]]:
    """The heads whose mean weight on key ``i + offset`` is at least ``threshold``.

    Returns:
        ``[(layer, head, share), ...]`` sorted by share, largest first (layers and heads from 0).
    """
    if not 0.0 < threshold <= 1.0:
        raise ValueError(f"threshold must be in (0, 1], got {threshold}")
    share = offset_share(attentions, valid_lens, offset)  # (layers, H)
    found = [(int(l), int(h), float(share[l, h])) for l, h in (share >= threshold).nonzero()]
    return sorted(found, key=lambda item: -item[2])


def mean_distance(attentions, valid_lens: torch.Tensor) -> torch.Tensor:
    """How far each head looks: ``sum_j a[i, j] |i - j|`` over real queries i: ``(layers, H)``.

    In token positions: 1 for a head that always reads its neighbour; a head that parks its weight
    on ``[CLS]`` (position 0) scores about the mean query position, however little it reads.
    """
    a, real = _checked(attentions, valid_lens)
    pos = torch.arange(a.shape[-1], device=a.device)
    gap = (pos[:, None] - pos[None, :]).abs().to(a.dtype)  # (L, L)
    return _mean_over_queries((a * gap).sum(-1), real)  # (layers, H)


def head_distances(weights: torch.Tensor, valid_lens: torch.Tensor) -> torch.Tensor:
    """How differently the heads of ONE layer attend: mean total-variation distance (C46).

    ``d(r, s) = mean over real queries of 0.5 * sum_j |a_r[i, j] - a_s[i, j]|``: 0 for heads
    with identical rows, 1 for heads that look at disjoint keys.

    Args:
        weights: ``(B, H, L, L)`` one layer's weights.
        valid_lens: ``(B,)``.

    Returns:
        ``(H, H)`` symmetric, zero diagonal.
    """
    check_tensor("weights", weights, ndim=4)
    a, real = _checked(weights.unsqueeze(0), valid_lens)
    a = a[0]  # (B, H, L, L)
    tv = 0.5 * (a.unsqueeze(2) - a.unsqueeze(1)).abs().sum(-1)  # (B, H, H, L)
    w = real.to(a.dtype)[:, None, None, :]  # (B, 1, 1, L)
    return (tv * w).sum(dim=(0, 3)) / w.sum(dim=(0, 3))  # (H, H)


@dataclass(frozen=True)
class QKVariance:
    """Var(q·k)/d_k of the trained projections, per layer and head (C45).

    Attributes:
        measured: ``(layers, H)`` variance of the unscaled q_i·k_j over all real (query, key)
            pairs of each sentence, divided by d_k. Notebook 02's iid model predicts 1.
        independent: ``(layers, H)`` the same if the d_k products q_r k_r were independent and the
            query and key tokens drawn independently, with the measured per-component moments:
            ``sum_r (E[q_r^2] E[k_r^2] - E[q_r]^2 E[k_r]^2) / d_k``.
        within_row: ``(layers, H)`` the variance of q_i·k_j over the real keys j of one query's
            row (population variance, over the row's n keys), averaged over all real queries,
            divided by d_k. ``measured`` also holds the variance *between* rows (of the row
            means, e.g. from q_i·b_k with the key bias b_k); softmax ignores a constant added to
            a row, so this is the part that sets how sharp a row is.
    """

    measured: torch.Tensor
    independent: torch.Tensor
    within_row: torch.Tensor


def qk_variance(encoder, ids: torch.Tensor, valid_lens: torch.Tensor) -> QKVariance:
    """Measure Var(q·k)/d_k in every head of ``encoder`` (a MiniLMEncoder) on a batch."""
    real = real_token_mask(valid_lens, ids.shape[1])  # (B, L)
    pairs = real.unsqueeze(2) & real.unsqueeze(1)  # (B, L, L): query and key both real
    measured, independent, within = [], [], []
    keys = real[:, None, :].to(torch.float64)  # (B, 1, L): the real keys of each row
    n_keys = keys.sum(-1, keepdim=True)  # (B, 1, 1)
    with torch.no_grad():
        states = encoder(ids, valid_lens=valid_lens).hidden_states
        for x, block in zip(states, encoder.layers):  # x: the layer's input
            attn = block.self_attn
            q = split_heads(attn.w_q(x), attn.num_heads).double()  # (B, H, L, Dh)
            k = split_heads(attn.w_k(x), attn.num_heads).double()  # (B, H, L, Dh)
            scores = scaled_scores(q, k, 1.0).transpose(0, 1)  # (H, B, L, L), unscaled
            measured.append(scores[:, pairs].var(dim=1) / attn.head_dim)  # (H,)
            row_mean = (scores * keys).sum(-1, keepdim=True) / n_keys  # (H, B, L, 1)
            row_var = ((scores - row_mean).pow(2) * keys).sum(-1) / n_keys[..., 0]  # (H, B, L)
            within.append(row_var[:, real].mean(dim=1) / attn.head_dim)  # (H,) over real queries
            qs, ks = q.transpose(0, 1)[:, real], k.transpose(0, 1)[:, real]  # (H, N, Dh)
            terms = qs.pow(2).mean(1) * ks.pow(2).mean(1) - qs.mean(1).pow(2) * ks.mean(1).pow(
                2
            )  # (H, Dh)
            independent.append(terms.sum(1) / attn.head_dim)  # (H,)
    return QKVariance(torch.stack(measured), torch.stack(independent), torch.stack(within))


@dataclass(frozen=True)
class WeightedValues:
    """What one head of a trained encoder reads, split by key (Kobayashi et al., 2020).

    The head's share of the attention output at query i (after W_O, before W_O's bias) is
    ``sum_j weights[b, i, j] * transformed[b, j]``: ``||transformed[b, j]||`` says how large what
    key j passes on is, so ``weights[b, i, j] * ||transformed[b, j]||`` measures what the weight
    actually carries (a large weight on a key whose vector is small carries little).

    Attributes:
        weights: ``(B, L, L)`` float64: the head's attention weights (0 on padding keys).
        transformed: ``(B, L, D)`` float64: ``f(x_j) = (x_j W_V^(h) + b_V^(h)) W_O^(h)``, each
            key's value vector of this head mapped by the head's block of W_O to the model width.
    """

    weights: torch.Tensor
    transformed: torch.Tensor


def weighted_values(
    encoder, ids: torch.Tensor, valid_lens: torch.Tensor, layer: int, head: int
) -> WeightedValues:
    """Split head ``head`` of layer ``layer`` into its weights and what each key passes on.

    Computed in float64 from the layer's input and its own projections, so that
    ``weights @ transformed`` is the head's contribution to the attention output: the
    attention output with only this head kept (``head_mask``) minus the output with no head.

    Args:
        encoder: a MiniLMEncoder.
        ids: ``(B, L)`` token ids; valid_lens: ``(B,)`` real lengths.
        layer, head: counted from 0.

    Returns:
        A :class:`WeightedValues`.
    """
    layers, num_heads = encoder.config.num_layers, encoder.config.num_heads
    for name, value, top in (("layer", layer, layers), ("head", head, num_heads)):
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < top:
            raise ValueError(f"{name} must be an int in [0, {top}), got {value!r}")
    real = real_token_mask(valid_lens, ids.shape[1])  # (B, L)
    with torch.no_grad():
        x = encoder(ids, valid_lens=valid_lens).hidden_states[layer]  # (B, L, D): layer input
        block = encoder.layers[layer]
        if block.norm_first:
            x = block.norm1(x)
        attn = block.self_attn
        rows = slice(attn.head_dim * head, attn.head_dim * (head + 1))

        def project(linear, part):  # this head's rows (or W_O's columns) of a projection
            w = linear.weight.double()
            b = None if linear.bias is None else linear.bias.double()[part]
            return w[part], b

        x = x.double()
        (wq, bq), (wk, bk), (wv, bv) = (project(m, rows) for m in (attn.w_q, attn.w_k, attn.w_v))
        q, k, v = (F.linear(x, w, b) for w, b in ((wq, bq), (wk, bk), (wv, bv)))  # (B, L, Dh)
        scores = scaled_scores(q, k, attn.head_dim**-0.5)  # (B, L, L)
        scores = scores.masked_fill(~real[:, None, :], float("-inf"))
        weights = scores.softmax(-1)  # (B, L, L)
        transformed = v @ attn.w_o.weight.double()[:, rows].T  # (B, L, D): f(x_j)
    return WeightedValues(weights, transformed)


@dataclass(frozen=True)
class HeadView:
    """What a head-view explorer shows for one sentence.

    Attributes:
        tokens: the L real tokens, ``[CLS] ... [SEP]``.
        weights: ``(layers, H, L, L)`` float32 on the CPU: ``weights[l, h, i]`` is where token i
            looks in head h of layer l (each row sums to 1).
    """

    tokens: tuple[str, ...]
    weights: torch.Tensor


def head_view(encoder, text: str) -> HeadView:
    """Run ``encoder`` (a MiniLMEncoder) on one sentence and keep every head's weights."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    batch = encoder.tokenize([text])
    with torch.no_grad():
        out = encoder(batch.ids, valid_lens=batch.valid_lens)
    weights = stack_attentions(out.attentions)[:, 0]  # (layers, H, L, L)
    return HeadView(tuple(batch.tokens[0]), weights.to(device="cpu", dtype=torch.float32))
