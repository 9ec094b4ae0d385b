"""The course's demo inputs: the fixed numbers and seeded toy data every notebook, figure and
explorer starts from, so each lives in one place.

Everything here is data, drawn from private seeded ``torch.Generator`` objects (the global
generator is never touched); the math that turns it into weights lives in the math modules.

The last section loads notebook 08's toy encoder-decoder: its trained weights (checked against
the settings in :mod:`attnlib.models.seq2seq.config`) and an untrained twin.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from importlib import resources

import torch

from attnlib.models.seq2seq.config import Seq2SeqConfig, TrainConfig
from attnlib.models.seq2seq.model import Seq2SeqTransformer

__all__ = [
    # 2-D queries, keys and values (notebook 01, the query explorer)
    "DEFAULT_KEYS",
    "DEFAULT_VALUES",
    # softmax rows (notebook 03, the Jacobian explorer)
    "DEFAULT_LOGITS",
    # a sentence and its projections (notebook 06, the heads explorer)
    "DEFAULT_TOKENS",
    "DemoProjections",
    "demo_projections",
    "sentence_embeddings",
    # a padded batch (notebook 05, the masking explorer)
    "DEFAULT_VALID_LENS",
    "DemoBatch",
    "demo_batch",
    # the toy encoder-decoder of notebook 08: its settings, weights and demo source
    "DEFAULT_SOURCE",
    "REVERSAL_WEIGHTS",
    "reversal_weights_file",
    "trained_reversal_model",
    # the same model trained on sources of lengths 2..6 (notebook 07's extrapolation test)
    "VARIABLE_LENGTH_TRAIN_CONFIG",
    "VARIABLE_LENGTH_REVERSAL_WEIGHTS",
    "trained_variable_length_reversal_model",
    "untrained_reversal_model",
]


# --- 2-D queries, keys and values (notebook 01, the query explorer) -------------------------------

#: Three 2-D keys, one per row.
DEFAULT_KEYS = ((1.0, 0.0), (0.0, 1.0), (-1.0, -1.0))
#: Their three 2-D values.
DEFAULT_VALUES = ((2.0, 0.0), (0.0, 2.5), (-2.0, -1.0))


# --- softmax rows (notebook 03, the Jacobian explorer) --------------------------------------------

#: Five logits, rescaled to any spread σ by :func:`attnlib.course.scaling.spread_logits`.
DEFAULT_LOGITS = (2.0, 1.0, 0.2, -0.6, -1.5)


# --- a sentence and its projections (notebook 06, the heads explorer) -----------------------------

#: The sentence-like input: six tokens, "the" twice (same embedding, no positions yet).
DEFAULT_TOKENS = ("the", "cat", "sat", "on", "the", "mat")


def sentence_embeddings(
    tokens,
    d_model: int,
    *,
    generator: torch.Generator | None = None,
    dtype: torch.dtype = torch.float64,
) -> torch.Tensor:
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


def demo_projections(
    tokens=DEFAULT_TOKENS, *, d_model: int = 16, score_gain: float = 2.0, seed: int = 0
) -> DemoProjections:
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


@dataclass(frozen=True)
class DemoBatch:
    """What :func:`demo_batch` returns: a random self-attention batch, in float64.

    Attributes:
        q: ``(B, L, Dk)`` queries.
        k: ``(B, S, Dk)`` keys (S = L).
        v: ``(B, S, Dv)`` values.
    """

    q: torch.Tensor
    k: torch.Tensor
    v: torch.Tensor


def demo_batch(
    *, batch: int = 3, num_tokens: int = 6, d_k: int = 8, d_v: int = 4, seed: int = 0
) -> DemoBatch:
    """A random self-attention batch, from its own seeded generator.

    Args:
        batch: B.
        num_tokens: L = S.
        d_k: width of queries and keys.
        d_v: width of values.
        seed: seed of a private ``torch.Generator`` (the global generator is not touched).

    Returns:
        A :class:`DemoBatch`: ``q (B, L, Dk)``, ``k (B, L, Dk)`` and ``v (B, L, Dv)``, entries
        N(0, 1), in float64 (drawn in that order).
    """
    gen = torch.Generator().manual_seed(seed)
    q = torch.randn(batch, num_tokens, d_k, generator=gen, dtype=torch.float64)  # (B, L, Dk)
    k = torch.randn(batch, num_tokens, d_k, generator=gen, dtype=torch.float64)  # (B, S, Dk)
    v = torch.randn(batch, num_tokens, d_v, generator=gen, dtype=torch.float64)  # (B, S, Dv)
    return DemoBatch(q, k, v)


# ---------------------------------------------------------------------------------------------
# Notebook 08: the toy encoder-decoder, its training, and the sequence it is shown on (C36-C40).
# ---------------------------------------------------------------------------------------------

#: The source sequence notebook 08, its figure and its explorer decode: "b g a e j d" (ids 3.. are
#: the letters a..); six different letters, in the held-out split of
#: :func:`attnlib.models.seq2seq.toy_tasks.make_batch` (never trained on).
DEFAULT_SOURCE = (4, 9, 3, 7, 12, 6)


#: The trained reversal model's weights, written by ``python benchmarks/train_reversal.py
#: --write-weights``.
REVERSAL_WEIGHTS = "data/reversal.pt"


def reversal_weights_file(name: str = REVERSAL_WEIGHTS):
    """A packaged weights file (an ``importlib.resources`` traversable); default notebook 08's."""
    return resources.files("attnlib").joinpath(name)


def _load_reversal(name: str, train_config: TrainConfig, device) -> Seq2SeqTransformer:
    """Load a shipped reversal model, refusing weights trained with other settings."""
    with reversal_weights_file(name).open("rb") as f:
        saved = torch.load(f, map_location="cpu", weights_only=True)
    expected = {"model_config": asdict(Seq2SeqConfig()), "train_config": asdict(train_config)}
    for key, want in expected.items():
        if saved.get(key) != want:
            min_len = "" if train_config.min_len is None else f" --min-len {train_config.min_len}"
            raise ValueError(
                f"{name} was trained with {key}={saved.get(key)} but the current "
                f"setting is {want}; re-create it with "
                f"`python benchmarks/train_reversal.py --write-weights{min_len}`"
            )
    model = Seq2SeqTransformer(Seq2SeqConfig())
    model.load_state_dict(saved["state_dict"])
    return model.to(device if device is not None else "cpu").eval()


def trained_reversal_model(device: torch.device | str | None = None):
    """Notebook 08's model trained on reversal, loaded from the weights shipped with attnlib.

    The file holds a float32 ``state_dict`` and the two configs it was trained with; they must
    equal today's ``Seq2SeqConfig()`` and ``TrainConfig()``, so a changed setting cannot silently
    load stale weights.

    Args:
        device: where to put the model (default the CPU).

    Returns:
        A :class:`~attnlib.models.seq2seq.model.Seq2SeqTransformer` in eval mode.
    """
    return _load_reversal(REVERSAL_WEIGHTS, TrainConfig(), device)


#: Notebook 07's second reversal model: notebook 08's network and training, but every training
#: source has a length drawn from 2..6 (``min_len=2``), not always 6.
VARIABLE_LENGTH_TRAIN_CONFIG = TrainConfig(min_len=2)

#: Its weights, written by ``python benchmarks/train_reversal.py --write-weights --min-len 2``.
VARIABLE_LENGTH_REVERSAL_WEIGHTS = "data/reversal_lengths_2_6.pt"


def trained_variable_length_reversal_model(device: torch.device | str | None = None):
    """The reversal model trained on source lengths 2..6 (``VARIABLE_LENGTH_TRAIN_CONFIG``).

    Checked like :func:`trained_reversal_model`: the file's configs must equal today's
    ``Seq2SeqConfig()`` and ``VARIABLE_LENGTH_TRAIN_CONFIG``.

    Returns:
        A :class:`~attnlib.models.seq2seq.model.Seq2SeqTransformer` in eval mode (on the CPU by
        default).
    """
    return _load_reversal(VARIABLE_LENGTH_REVERSAL_WEIGHTS, VARIABLE_LENGTH_TRAIN_CONFIG, device)


def untrained_reversal_model(seed: int = 0, device: torch.device | str | None = None):
    """Notebook 08's model before training: what the explorer shows when given no model.

    Built inside ``torch.random.fork_rng`` from a generator seeded with ``seed``, so the caller's
    random state is left as it was.

    Returns:
        A :class:`~attnlib.models.seq2seq.model.Seq2SeqTransformer` in eval mode (on the CPU by
        default).
    """
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError(f"seed must be an int, got {type(seed).__name__}")
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = Seq2SeqTransformer(Seq2SeqConfig())
    return model.to(device if device is not None else "cpu").eval()
