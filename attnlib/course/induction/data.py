"""The repeat task: random tokens in which one segment occurs twice, and the loss on each
occurrence (notebook 11's data).

Positions are 0-based. A sequence's first occurrence starts at ``first``, the second at
``second = first + length + gap``. "The loss on an occurrence" is the mean next-token loss of
predicting its tokens 1 .. length - 1 (its token 0 cannot be known from the first occurrence),
pooled over the batch's tokens (with per-row lengths, a row counts as many times as it has
tokens to predict).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from attnlib.util._checks import check_int, check_positive_int, check_probability

__all__ = ["RepeatTask", "RepeatBatch", "repeat_batch", "occurrence_losses"]


@dataclass(frozen=True)
class RepeatTask:
    """Sequences of uniform random tokens in which one segment occurs twice.

    Attributes:
        vocab_size: V, tokens ``0 .. V-1`` (drawn uniformly).
        seq_len: T, tokens per sequence.
        segment: the repeated segment's length (the longest, when ``min_segment`` is set).
        max_gap: None (the distance between the starts is drawn from all that fits) or the most
            tokens between the two occurrences: then the distance is at most ``length +
            max_gap``, so for a short segment it is short too, and no head that looks one fixed
            distance back (other than 1) finds the earlier copy in every row.
        min_segment: None (every row's segment has ``segment`` tokens) or the shortest length:
            then each row draws its own length uniformly from ``min_segment .. segment``, so no
            one distance back (a segment length) is common enough to copy from.
        min_gap: the fewest tokens between the end of the first occurrence and the start of the
            second (the distance between them is drawn uniformly from what fits).
        rule: the probability that a token (from position 2 on) is not uniform but
            ``perm[token two back]`` for a fixed random permutation ``perm`` of the vocabulary
            (seeded by ``rule_seed``): then the token before the current one helps predict the
            next one by itself, as it does in text, and a head that looks at the previous token
            pays off before any induction head exists. 0 means uniform tokens.
        rule_seed: seeds ``perm``.
    """

    vocab_size: int = 64
    seq_len: int = 48
    segment: int = 8
    min_gap: int = 0
    rule: float = 0.0
    rule_seed: int = 7
    min_segment: int | None = None
    max_gap: int | None = None

    def __post_init__(self):
        for name in ("vocab_size", "seq_len", "segment"):
            check_positive_int(name, getattr(self, name))
        check_int("min_gap", self.min_gap, min=0)
        check_probability("rule", self.rule)
        if self.segment < 2:
            raise ValueError(f"segment must be at least 2 (one token to copy), got {self.segment}")
        if self.min_segment is not None:
            check_int("min_segment", self.min_segment, min=2, max=self.segment)
        if self.max_gap is not None:
            check_int("max_gap", self.max_gap, min=self.min_gap)
        if 2 * self.segment + self.min_gap > self.seq_len:
            raise ValueError(
                f"two segments of {self.segment} with a gap of at least {self.min_gap} need "
                f"{2 * self.segment + self.min_gap} tokens, but seq_len={self.seq_len}"
            )

    def permutation(self) -> torch.Tensor:
        """``perm (V,)`` of :attr:`rule`: ``perm[a]`` follows ``a`` two positions later."""
        return torch.randperm(
            self.vocab_size, generator=torch.Generator().manual_seed(self.rule_seed)
        )


@dataclass(frozen=True)
class RepeatBatch:
    """A batch of :class:`RepeatTask` sequences.

    Attributes:
        ids: ``(B, T)`` int64 tokens.
        first: ``(B,)`` start of the first occurrence.
        second: ``(B,)`` start of the second occurrence (``second - first >= lengths``).
        segment: the longest segment's length (every row's when the lengths are fixed).
        lengths: ``(B,)`` each row's segment length (None: all ``segment``).
    """

    ids: torch.Tensor
    first: torch.Tensor
    second: torch.Tensor
    segment: int
    lengths: torch.Tensor | None = None

    def row_lengths(self) -> torch.Tensor:
        """``(B,)`` each row's segment length."""
        if self.lengths is None:
            return torch.full_like(self.first, self.segment)
        return self.lengths

    def valid(self) -> torch.Tensor:
        """``(B, segment - 1)`` bool: which entries of :meth:`positions` belong to the row's
        segment (all of them when the lengths are fixed)."""
        j = torch.arange(self.segment - 1, device=self.first.device)
        return j[None, :] < (self.row_lengths() - 1)[:, None]

    def positions(self, which: str) -> torch.Tensor:
        """``(B, segment - 1)`` positions whose *next* token is an occurrence's token 1.. : the
        positions ``start .. start + length - 2`` of the ``"first"`` or ``"second"`` one (with
        per-row lengths, entries past a row's length repeat its last position; :meth:`valid`
        marks the real ones)."""
        if which not in ("first", "second"):
            raise ValueError(f"which must be 'first' or 'second', got {which!r}")
        start = self.first if which == "first" else self.second
        j = torch.arange(self.segment - 1, device=start.device)[None, :]
        return start[:, None] + torch.minimum(j, (self.row_lengths() - 2)[:, None])  # (B, n)


def _masked_mean(x: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
    """Mean of ``x (B, n, ...)`` over its valid ``(B, n)`` entries (each token counts once)."""
    m = valid.to(x.dtype).reshape(valid.shape + (1,) * (x.dim() - 2))
    return (x * m).sum((0, 1)) / valid.sum()


def repeat_batch(task: RepeatTask, batch_size: int, generator: torch.Generator) -> RepeatBatch:
    """Draw ``batch_size`` sequences of ``task`` from ``generator`` (CPU tensors).

    Per sequence: T uniform tokens; (with ``min_segment``) its length L uniformly from
    ``[min_segment, segment]``, else L = segment; the distance ``d = second - first`` drawn
    uniformly from ``[L + min_gap, seq_len - L]`` (its top at most ``L + max_gap``), then
    ``first`` uniformly from where both occurrences fit; the L tokens at ``first`` copied to
    ``second``.
    """
    if not isinstance(task, RepeatTask):
        raise TypeError(f"task must be a RepeatTask, got {type(task).__name__}")
    check_positive_int("batch_size", batch_size)
    if not isinstance(generator, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator, got {type(generator).__name__}")
    T, L = task.seq_len, task.segment
    ids = torch.randint(0, task.vocab_size, (batch_size, T), generator=generator)
    if task.rule > 0:
        perm = task.permutation()
        use = torch.rand(batch_size, T, generator=generator) < task.rule  # (B, T)
        for t in range(2, T):  # sequential: the rule reads tokens already drawn
            ids[:, t] = torch.where(use[:, t], perm[ids[:, t - 2]], ids[:, t])
    # The distance d = second - first uniform on [L + min_gap, T - L], so no one distance is
    # common enough to copy by position; then first uniform where both occurrences fit.
    if task.min_segment is None:
        u = torch.rand(batch_size, 2, generator=generator, dtype=torch.float64)
        lens = torch.full((batch_size,), L, dtype=torch.long)
    else:
        u3 = torch.rand(batch_size, 3, generator=generator, dtype=torch.float64)
        n_len = L - task.min_segment + 1
        lens = task.min_segment + (u3[:, 2] * n_len).floor().long().clamp(max=n_len - 1)
        u = u3[:, :2]
    lo, hi = lens + task.min_gap, T - lens
    if task.max_gap is not None:
        hi = torch.minimum(hi, lens + task.max_gap)
    dist = lo + (u[:, 0] * (hi - lo + 1)).floor().long().clamp(max=hi - lo)
    room = T - lens - dist  # >= 0: first in [0, room]
    first = (u[:, 1] * (room + 1)).floor().long().clamp(max=room)
    second = first + dist
    rows = torch.arange(batch_size)
    for o in range(L):  # offset o of each row whose segment is longer than o
        r = rows[lens > o]
        ids[r, second[r] + o] = ids[r, first[r] + o]
    return RepeatBatch(
        ids=ids,
        first=first,
        second=second,
        segment=L,
        lengths=None if task.min_segment is None else lens,
    )


def _token_losses(logits: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
    """``(B, T-1)`` next-token losses: position t predicts ``ids[:, t+1]``."""
    return F.cross_entropy(
        logits[:, :-1].transpose(1, 2).double(), ids[:, 1:], reduction="none"
    )  # (B, T-1)


def occurrence_losses(logits: torch.Tensor, batch: RepeatBatch) -> dict[str, float]:
    """Mean next-token losses on the whole sequence and on each occurrence, and the copy accuracy.

    Returns:
        ``{"loss", "first", "second", "in_context", "copy_acc"}``: ``in_context = second -
        first`` (negative: the model predicts the second occurrence from the context);
        ``copy_acc`` the top-1 accuracy on the second occurrence's tokens 1 ...
    """
    lp = _token_losses(logits, batch.ids)  # (B, T-1)
    rows = torch.arange(lp.shape[0])[:, None]
    p1, p2 = batch.positions("first"), batch.positions("second")
    ok = batch.valid()  # (B, n)
    first = _masked_mean(lp[rows, p1], ok).item()
    second = _masked_mean(lp[rows, p2], ok).item()
    pred = logits[rows, p2].argmax(-1)  # (B, n)
    acc = _masked_mean((pred == batch.ids[rows, p2 + 1]).double(), ok).item()
    return {
        "loss": lp.mean().item(),
        "first": first,
        "second": second,
        "in_context": second - first,
        "copy_acc": acc,
    }
