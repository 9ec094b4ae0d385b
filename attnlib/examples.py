"""The course's demo inputs: the fixed numbers and seeded toy data every notebook, figure and
explorer starts from, so each lives in one place.

Everything here is data, drawn from private seeded ``torch.Generator`` objects (the global
generator is never touched); the math that turns it into weights lives in the math modules.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

__all__ = [
    # 2-D queries, keys and values (notebook 01, the query explorer)
    "DEFAULT_KEYS", "DEFAULT_VALUES",
    # softmax rows (notebook 03, the Jacobian explorer)
    "DEFAULT_LOGITS",
    # a sentence and its projections (notebook 06, the heads explorer)
    "DEFAULT_TOKENS", "DemoProjections", "demo_projections", "sentence_embeddings",
    # a padded batch (notebook 05, the masking explorer)
    "DEFAULT_VALID_LENS", "demo_batch",
]


# --- 2-D queries, keys and values (notebook 01, the query explorer) -------------------------------

#: Three 2-D keys, one per row.
DEFAULT_KEYS = ((1.0, 0.0), (0.0, 1.0), (-1.0, -1.0))
#: Their three 2-D values.
DEFAULT_VALUES = ((2.0, 0.0), (0.0, 2.5), (-2.0, -1.0))


# --- softmax rows (notebook 03, the Jacobian explorer) --------------------------------------------

#: Five logits, rescaled to any spread σ by :func:`attnlib.scaling.spread_logits`.
DEFAULT_LOGITS = (2.0, 1.0, 0.2, -0.6, -1.5)


# --- a sentence and its projections (notebook 06, the heads explorer) -----------------------------

#: The sentence-like input: six tokens, "the" twice (same embedding, no positions yet).
DEFAULT_TOKENS = ("the", "cat", "sat", "on", "the", "mat")


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
    if not all(isinstance(t, str) for t in tokens):
        raise TypeError(f"tokens must be a sequence of strings, got {tokens!r}")
    if not tokens:
        raise ValueError("tokens must name at least one token, got an empty sequence")
    vocab = list(dict.fromkeys(tokens))
    table = torch.randn(len(vocab), d_model, generator=generator, dtype=dtype)  # (V, D)
    index = torch.tensor([vocab.index(t) for t in tokens])
    return table[index].unsqueeze(0)  # (1, L, D)


@dataclass(frozen=True)
class DemoProjections:
    """A sentence's embeddings and three projections in ``nn.Linear`` layout (float64)."""

    x: torch.Tensor  # (1, L, D) embeddings
    w_q: torch.Tensor  # (D, D): F.linear(x, w_q) = x W_Qᵀ
    w_k: torch.Tensor  # (D, D)
    w_v: torch.Tensor  # (D, D)


def demo_projections(tokens=DEFAULT_TOKENS, *, d_model: int = 16, score_gain: float = 2.0,
                     seed: int = 0) -> DemoProjections:
    """The heads explorer's input and projections, from a private seeded generator.

    Args:
        tokens: the L tokens.
        d_model: D.
        score_gain: multiplies W_Q so that random scores are not all nearly equal.
        seed: seed of a private ``torch.Generator`` (the global generator is not touched).

    Returns:
        A :class:`DemoProjections`: ``x (1, L, D)`` and ``w_q, w_k, w_v (D, D)``, entries
        N(0, 1/D) (W_Q times the gain).
    """
    gen = torch.Generator().manual_seed(seed)
    x = sentence_embeddings(tokens, d_model, generator=gen)  # (1, L, D)
    std = 1.0 / math.sqrt(d_model)
    w_q = torch.randn(d_model, d_model, generator=gen, dtype=torch.float64) * std * score_gain
    w_k = torch.randn(d_model, d_model, generator=gen, dtype=torch.float64) * std
    w_v = torch.randn(d_model, d_model, generator=gen, dtype=torch.float64) * std
    return DemoProjections(x, w_q, w_k, w_v)


# --- a padded batch (notebook 05, the masking explorer) -------------------------------------------

#: Starting valid lengths of the three batch rows (out of 6 tokens).
DEFAULT_VALID_LENS = (4, 6, 2)


def demo_batch(*, batch: int = 3, num_tokens: int = 6, d_k: int = 8, d_v: int = 4, seed: int = 0):
    """A random self-attention batch, from its own seeded generator.

    Args:
        batch: B.
        num_tokens: L = S.
        d_k: width of queries and keys.
        d_v: width of values.
        seed: seed of a private ``torch.Generator`` (the global generator is not touched).

    Returns:
        ``(q (B, L, Dk), k (B, L, Dk), v (B, L, Dv))`` in float64.
    """
    gen = torch.Generator().manual_seed(seed)
    q = torch.randn(batch, num_tokens, d_k, generator=gen, dtype=torch.float64)  # (B, L, Dk)
    k = torch.randn(batch, num_tokens, d_k, generator=gen, dtype=torch.float64)  # (B, S, Dk)
    v = torch.randn(batch, num_tokens, d_v, generator=gen, dtype=torch.float64)  # (B, S, Dv)
    return q, k, v
