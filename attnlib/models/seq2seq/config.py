"""The settings of notebook 08's toy encoder-decoder, beside the model (as nanoGPT's
``GPTConfig``): frozen dataclasses, so changing a default here changes it everywhere.
"""

from __future__ import annotations

from dataclasses import dataclass

from attnlib.models.seq2seq.toy_tasks import NUM_SPECIAL, TASKS
from attnlib.util._checks import (
    check_bool,
    check_config_sizes,
    check_number_above,
    check_positive_int,
    check_probability,
)

__all__ = ["Seq2SeqConfig", "TrainConfig"]

# Seq2SeqConfig's fields that must be positive ints.
_SIZES = (
    "vocab_size",
    "d_model",
    "num_heads",
    "d_ff",
    "num_encoder_layers",
    "num_decoder_layers",
    "max_positions",
)


@dataclass(frozen=True)
class Seq2SeqConfig:
    """The shape of :class:`~attnlib.models.seq2seq.model.Seq2SeqTransformer`; the defaults are
    notebook 08's.

    Attributes:
        vocab_size: V, including PAD, BOS and EOS (13: those three and the letters a..j).
        d_model: D.
        num_heads: H (must divide ``d_model``).
        d_ff: the feed-forward hidden width.
        num_encoder_layers, num_decoder_layers: blocks on each side.
        max_positions: the longest sequence the position table covers (source or target).
        dropout: dropout everywhere, in ``[0, 1)`` (0 for the toy tasks).
        norm_first: Pre-LN blocks if True, Post-LN (the original order) if False.
    """

    vocab_size: int = 13
    d_model: int = 64
    num_heads: int = 4
    d_ff: int = 128
    num_encoder_layers: int = 1
    num_decoder_layers: int = 1
    max_positions: int = 16
    dropout: float = 0.0
    norm_first: bool = False

    def __post_init__(self):
        check_config_sizes(self, _SIZES)
        if self.vocab_size < NUM_SPECIAL + 2:
            raise ValueError(
                f"vocab_size must be >= {NUM_SPECIAL + 2} (PAD, BOS, EOS and two "
                f"symbols), got {self.vocab_size}"
            )
        check_probability("dropout", self.dropout)
        check_bool("norm_first", self.norm_first)


@dataclass(frozen=True)
class TrainConfig:
    """How :func:`~attnlib.models.seq2seq.training.train_seq2seq` trains; the defaults are notebook
    08's.

    Attributes:
        task: ``"reverse"``, ``"copy"`` or ``"sort"`` (see :mod:`attnlib.models.seq2seq.toy_tasks`).
        seq_len: the longest source length (the target needs ``seq_len + 1`` positions).
        min_len: the shortest source length (None: every source is ``seq_len`` long).
        steps: the most optimisation steps.
        batch_size: sequences per step.
        lr: Adam's learning rate.
        target_accuracy: stop once the held-out exact-sequence accuracy reaches it; in (0, 1].
        eval_every: steps between evaluations.
        eval_size: held-out sequences per evaluation.
        grad_clip: clip the gradient norm to this (None: no clipping).
        seed: what the caller passes to :func:`attnlib.set_seed` before building the model (the
            library itself never seeds).
    """

    task: str = "reverse"
    seq_len: int = 6
    min_len: int | None = None
    steps: int = 1500
    batch_size: int = 128
    lr: float = 3e-3
    target_accuracy: float = 0.995
    eval_every: int = 50
    eval_size: int = 2048
    grad_clip: float | None = 1.0
    seed: int = 0

    def __post_init__(self):
        if not isinstance(self.task, str) or self.task not in TASKS:
            raise ValueError(f"task must be one of {TASKS}, got {self.task!r}")
        for name in ("seq_len", "steps", "batch_size", "eval_every", "eval_size"):
            check_positive_int(name, getattr(self, name))
        if self.min_len is not None:
            check_positive_int("min_len", self.min_len)
            if self.min_len > self.seq_len:
                raise ValueError(f"min_len={self.min_len} is larger than seq_len={self.seq_len}")
        check_number_above("lr", self.lr, 0.0)
        check_number_above("target_accuracy", self.target_accuracy, 0.0)
        if self.target_accuracy > 1.0:
            raise ValueError(f"target_accuracy must be in (0, 1], got {self.target_accuracy}")
        if self.grad_clip is not None:
            check_number_above("grad_clip", self.grad_clip, 0.0)
        if isinstance(self.seed, bool) or not isinstance(self.seed, int):
            raise TypeError(f"seed must be an int, got {type(self.seed).__name__}")
