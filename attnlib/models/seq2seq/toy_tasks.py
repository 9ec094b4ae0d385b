"""Generated toy tasks for a sequence-to-sequence model: reverse, copy or sort a row of symbols.

No data is downloaded. Token ids: ``PAD = 0``, ``BOS = 1``, ``EOS = 2``, symbols
``3 .. vocab_size-1`` (written ``a, b, ...`` by :func:`token_labels`). The decoder reads
``[BOS, y_1, ..., y_n]`` and is trained to predict ``[y_1, ..., y_n, EOS]``.

Every sequence is assigned to a "train" or a "test" split by a hash of its content, so accuracy
can be measured on sequences a model never saw during training.

Batches are drawn on the CPU (from torch's global generator, or a CPU ``generator`` passed in)
and then moved to the device, so a seeded call gives the same data on every device. The caller
seeds, e.g. ``attnlib.set_seed(0)``.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from attnlib.core.masks import _padding_mask
from attnlib.util._checks import check_positive_int

__all__ = ["PAD", "BOS", "EOS", "NUM_SPECIAL", "TASKS", "ToyBatch", "make_batch", "token_labels"]

PAD, BOS, EOS = 0, 1, 2
NUM_SPECIAL = 3
TASKS = ("reverse", "copy", "sort")
_TEST_FRACTION_MOD = 5  # one sequence in five (by hash) is held out for testing


@dataclass(frozen=True)
class ToyBatch:
    """One batch of a toy task.

    Attributes:
        src: ``(B, S)`` source token ids, PAD after each valid length.
        src_valid_lens: ``(B,)`` real source lengths.
        tgt_in: ``(B, S+1)`` decoder input ``[BOS, y_1 .. y_n, PAD ..]``.
        tgt_out: ``(B, S+1)`` decoder target ``[y_1 .. y_n, EOS, PAD ..]``.
    """

    src: torch.Tensor
    src_valid_lens: torch.Tensor
    tgt_in: torch.Tensor
    tgt_out: torch.Tensor

    def to(self, device) -> ToyBatch:
        """The same batch on ``device``."""
        return ToyBatch(
            *(t.to(device) for t in (self.src, self.src_valid_lens, self.tgt_in, self.tgt_out))
        )


def check_task_args(task, batch_size, seq_len, vocab_size, min_len=None, split="train") -> int:
    """Validate the arguments of :func:`make_batch`; return ``min_len`` (default ``seq_len``)."""
    if not isinstance(task, str) or task not in TASKS:
        raise ValueError(f"task must be one of {TASKS}, got {task!r}")
    check_positive_int("batch_size", batch_size)
    check_positive_int("seq_len", seq_len)
    check_positive_int("vocab_size", vocab_size)
    if vocab_size < NUM_SPECIAL + 2:
        raise ValueError(
            f"vocab_size={vocab_size} is too small: {NUM_SPECIAL} ids are taken by PAD, BOS and "
            f"EOS, so at least {NUM_SPECIAL + 2} are needed for two symbols"
        )
    min_len = seq_len if min_len is None else check_positive_int("min_len", min_len)
    if min_len > seq_len:
        raise ValueError(f"min_len={min_len} is larger than seq_len={seq_len}")
    if split not in ("train", "test", None):
        raise ValueError(f"split must be 'train', 'test' or None, got {split!r}")
    return min_len


def _split_of(src: torch.Tensor, lens: torch.Tensor) -> torch.Tensor:
    """True for rows that belong to the held-out test split (a content hash, ~1 in 5)."""
    h = lens.to(torch.int64)
    for j in range(src.shape[1]):
        h = (h * 1_000_003 + src[:, j]) % 2_147_483_647
    return h % _TEST_FRACTION_MOD == 0  # (B,)


def _sample_sources(batch_size, seq_len, vocab_size, min_len, split, generator):
    def draw(n):
        tokens = torch.randint(NUM_SPECIAL, vocab_size, (n, seq_len), generator=generator)  # (n, S)
        lens = torch.randint(min_len, seq_len + 1, (n,), generator=generator)  # (n,)
        pad = ~_padding_mask(lens, seq_len)  # (n, S): True past each length
        return tokens.masked_fill(pad, PAD), lens

    src, lens = draw(batch_size)
    if split is None:
        return src, lens
    want_test = split == "test"
    # Redraw rows from the wrong split until every row is in the requested one.
    for _ in range(1000):
        bad = _split_of(src, lens) != want_test  # (B,)
        n_bad = int(bad.sum())
        if n_bad == 0:
            return src, lens
        new_src, new_lens = draw(n_bad)
        src, lens = src.clone(), lens.clone()
        src[bad], lens[bad] = new_src, new_lens
    raise RuntimeError(f"could not draw a {split!r} batch: the sequence space is too small")


def _targets(task: str, src: torch.Tensor, lens: torch.Tensor) -> torch.Tensor:
    """``(B, S)`` task output, PAD after each length."""
    positions = torch.arange(src.shape[1], device=src.device)  # (S,)
    pad = ~_padding_mask(lens, src.shape[1])  # (B, S): True past each length
    if task == "copy":
        return src.clone()
    if task == "reverse":
        idx = (lens.unsqueeze(1) - 1 - positions).clamp(min=0)  # (B, S): n-1-j
        return src.gather(1, idx).masked_fill(pad, PAD)
    big = torch.iinfo(src.dtype).max  # "sort": padding sorts last, then becomes PAD again
    return src.masked_fill(pad, big).sort(dim=1).values.masked_fill(pad, PAD)


def make_batch(
    task: str,
    batch_size: int,
    seq_len: int,
    vocab_size: int,
    *,
    min_len: int | None = None,
    split: str | None = "train",
    device: torch.device | str | None = None,
    generator: torch.Generator | None = None,
) -> ToyBatch:
    """Generate a batch of a toy task.

    Args:
        task: ``"reverse"``, ``"copy"`` or ``"sort"``.
        batch_size: B.
        seq_len: the longest source length S.
        vocab_size: total ids including PAD, BOS, EOS (>= 5).
        min_len: the shortest source length (default ``seq_len``: all sequences full length).
        split: ``"train"``, ``"test"`` (held out by a content hash) or ``None`` (either).
        device: where the batch is returned (it is always drawn on the CPU, then moved).
        generator: an optional CPU ``torch.Generator`` (default: torch's global one).

    Returns:
        A :class:`ToyBatch` with source ``(B, S)`` and targets ``(B, S+1)``.
    """
    min_len = check_task_args(task, batch_size, seq_len, vocab_size, min_len, split)
    if generator is not None:
        if not isinstance(generator, torch.Generator):
            raise TypeError(f"generator must be a torch.Generator, got {type(generator).__name__}")
        if generator.device.type != "cpu":
            raise ValueError(
                f"generator must be a CPU generator (batches are drawn on the CPU, "
                f"then moved), got one on {generator.device}"
            )
    src, lens = _sample_sources(batch_size, seq_len, vocab_size, min_len, split, generator)
    y = _targets(task, src, lens)  # (B, S)
    rows = torch.arange(batch_size)
    pad_col = torch.full((batch_size, 1), PAD, dtype=src.dtype)
    tgt_out = torch.cat([y, pad_col], dim=1)  # (B, S+1)
    tgt_out[rows, lens] = EOS
    bos = torch.full((batch_size, 1), BOS, dtype=src.dtype)
    tgt_in = torch.cat([bos, y], dim=1)  # (B, S+1)
    batch = ToyBatch(src, lens, tgt_in, tgt_out)
    return batch if device is None else batch.to(device)


def token_labels(tokens) -> list[str]:
    """Readable labels for token ids: symbols as letters ``a, b, ...``; ``<s>``, ``</s>``, ``·``.

    Args:
        tokens: a 1-D tensor or sequence of integer ids (symbols start at ``NUM_SPECIAL``).

    Returns:
        One string per id (symbols past ``z`` are written ``#id``).
    """
    ids = tokens.tolist() if isinstance(tokens, torch.Tensor) else list(tokens)
    if any(isinstance(t, list) for t in ids):
        raise ValueError("tokens must be 1-D (one sequence)")
    special = {PAD: "·", BOS: "<s>", EOS: "</s>"}
    out = []
    for t in ids:
        t = int(t)
        if t < 0:
            raise ValueError(f"token ids must be >= 0, got {t}")
        if t in special:
            out.append(special[t])
        elif t - NUM_SPECIAL < 26:
            out.append(chr(ord("a") + t - NUM_SPECIAL))
        else:
            out.append(f"#{t}")
    return out
