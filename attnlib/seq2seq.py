"""A tiny encoder-decoder Transformer, generated toy tasks, a trainer and greedy decoding.

The tasks (no data is downloaded) map a source sequence of symbols to a target sequence:
``"reverse"`` (the target is the source backwards), ``"copy"`` and ``"sort"``. Token ids:
``PAD = 0``, ``BOS = 1``, ``EOS = 2``, symbols ``3 .. vocab_size-1``. The decoder reads
``[BOS, y_1, ..., y_n]`` and is trained to predict ``[y_1, ..., y_n, EOS]``.

Every sequence is assigned to a "train" or a "test" split by a hash of its content, so the
accuracy is measured on sequences the model never saw during training.

All randomness comes from torch's global generator (or a ``generator`` passed in): the caller
seeds, e.g. ``attnlib.set_seed(0)``, and then training is repeatable on a given device.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import nn
from tqdm.auto import tqdm

from ._checks import check_positive_int, check_tensor
from .positional import PositionalEncoding
from .transformer import DecoderBlock, EncoderBlock

__all__ = [
    "PAD", "BOS", "EOS", "NUM_SPECIAL", "TASKS",
    "ToyBatch", "make_batch", "reversal_batch", "copy_batch", "sort_batch",
    "Seq2SeqOutput", "Seq2SeqTransformer",
    "greedy_decode", "sequence_accuracy", "evaluate",
    "TrainHistory", "train_seq2seq",
    "cross_attention_maps", "anti_diagonal_mass",
]

PAD, BOS, EOS = 0, 1, 2
NUM_SPECIAL = 3
TASKS = ("reverse", "copy", "sort")
_TEST_FRACTION_MOD = 5  # one sequence in five (by hash) is held out for testing


@dataclass
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

    def to(self, device) -> "ToyBatch":
        """The same batch on ``device``."""
        return ToyBatch(*(t.to(device) for t in (self.src, self.src_valid_lens,
                                                 self.tgt_in, self.tgt_out)))


def _check_task_args(task, batch_size, seq_len, vocab_size, min_len, split) -> int:
    if task not in TASKS:
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


def _sample_sources(batch_size, seq_len, vocab_size, min_len, split, device, generator):
    def draw(n):
        tokens = torch.randint(NUM_SPECIAL, vocab_size, (n, seq_len), device=device,
                               generator=generator)  # (n, S)
        lens = torch.randint(min_len, seq_len + 1, (n,), device=device, generator=generator)
        pad = torch.arange(seq_len, device=device) >= lens.unsqueeze(1)  # (n, S)
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
    pad = positions >= lens.unsqueeze(1)  # (B, S)
    if task == "copy":
        return src.clone()
    if task == "reverse":
        idx = (lens.unsqueeze(1) - 1 - positions).clamp(min=0)  # (B, S): n-1-j
        return src.gather(1, idx).masked_fill(pad, PAD)
    big = torch.iinfo(src.dtype).max  # "sort": padding sorts last, then becomes PAD again
    return src.masked_fill(pad, big).sort(dim=1).values.masked_fill(pad, PAD)


def make_batch(task: str, batch_size: int, seq_len: int, vocab_size: int, *,
               min_len: int | None = None, split: str | None = "train",
               device: torch.device | str | None = None,
               generator: torch.Generator | None = None) -> ToyBatch:
    """Generate a batch of a toy task.

    Args:
        task: ``"reverse"``, ``"copy"`` or ``"sort"``.
        batch_size: B.
        seq_len: the longest source length S.
        vocab_size: total ids including PAD, BOS, EOS (>= 5).
        min_len: the shortest source length (default ``seq_len``: all sequences full length).
        split: ``"train"``, ``"test"`` (held out by a content hash) or ``None`` (either).
        device: where to build the batch.
        generator: an optional ``torch.Generator`` (default: torch's global one).

    Returns:
        A :class:`ToyBatch` with source ``(B, S)`` and targets ``(B, S+1)``.
    """
    min_len = _check_task_args(task, batch_size, seq_len, vocab_size, min_len, split)
    src, lens = _sample_sources(batch_size, seq_len, vocab_size, min_len, split, device,
                                generator)
    y = _targets(task, src, lens)  # (B, S)
    rows = torch.arange(batch_size, device=src.device)
    pad_col = torch.full((batch_size, 1), PAD, dtype=src.dtype, device=src.device)
    tgt_out = torch.cat([y, pad_col], dim=1)  # (B, S+1)
    tgt_out[rows, lens] = EOS
    bos = torch.full((batch_size, 1), BOS, dtype=src.dtype, device=src.device)
    tgt_in = torch.cat([bos, y], dim=1)  # (B, S+1)
    return ToyBatch(src, lens, tgt_in, tgt_out)


def reversal_batch(batch_size: int, seq_len: int, vocab_size: int, **kwargs) -> ToyBatch:
    """:func:`make_batch` for the reversal task (target = source backwards)."""
    return make_batch("reverse", batch_size, seq_len, vocab_size, **kwargs)


def copy_batch(batch_size: int, seq_len: int, vocab_size: int, **kwargs) -> ToyBatch:
    """:func:`make_batch` for the copy task (target = source)."""
    return make_batch("copy", batch_size, seq_len, vocab_size, **kwargs)


def sort_batch(batch_size: int, seq_len: int, vocab_size: int, **kwargs) -> ToyBatch:
    """:func:`make_batch` for the sorting task (target = source in ascending order)."""
    return make_batch("sort", batch_size, seq_len, vocab_size, **kwargs)


@dataclass
class Seq2SeqOutput:
    """What :class:`Seq2SeqTransformer` returns.

    Attributes:
        logits: ``(B, T, V)`` scores over the vocabulary for each target position.
        encoder_weights: per encoder layer, ``(B, H, S, S)`` self-attention weights.
        decoder_self_weights: per decoder layer, ``(B, H, T, T)`` causal self-attention weights.
        cross_weights: per decoder layer, ``(B, H, T, S)`` cross-attention weights.
    """

    logits: torch.Tensor
    encoder_weights: list[torch.Tensor] = field(default_factory=list)
    decoder_self_weights: list[torch.Tensor] = field(default_factory=list)
    cross_weights: list[torch.Tensor] = field(default_factory=list)


class Seq2SeqTransformer(nn.Module):
    """A small encoder-decoder: embeddings + sinusoidal positions, N blocks each side, a linear
    layer to the vocabulary (softmax is left to the loss / argmax).

    Args:
        vocab_size: V, including PAD, BOS and EOS.
        d_model: D.
        num_heads: H.
        d_ff: FFN hidden width.
        num_encoder_layers, num_decoder_layers: blocks on each side (>= 1).
        max_positions: the longest sequence the position table covers (source or target).
        dropout: dropout everywhere (0 for the toy tasks).
        norm_first: Pre-LN blocks if True, Post-LN if False.
    """

    def __init__(self, vocab_size: int, *, d_model: int = 32, num_heads: int = 2,
                 d_ff: int = 64, num_encoder_layers: int = 1, num_decoder_layers: int = 1,
                 max_positions: int = 16, dropout: float = 0.0, norm_first: bool = False):
        super().__init__()
        check_positive_int("vocab_size", vocab_size)
        if vocab_size < NUM_SPECIAL + 2:
            raise ValueError(f"vocab_size must be >= {NUM_SPECIAL + 2} (PAD, BOS, EOS and two "
                             f"symbols), got {vocab_size}")
        check_positive_int("num_encoder_layers", num_encoder_layers)
        check_positive_int("num_decoder_layers", num_decoder_layers)
        self.vocab_size = vocab_size
        self.d_model = d_model
        self.max_positions = max_positions
        self.src_embed = nn.Embedding(vocab_size, d_model, padding_idx=PAD)
        self.tgt_embed = nn.Embedding(vocab_size, d_model, padding_idx=PAD)
        self.positions = PositionalEncoding(d_model, max_positions, dropout=dropout)
        block = dict(dropout=dropout, norm_first=norm_first)
        self.encoder = nn.ModuleList(EncoderBlock(d_model, num_heads, d_ff, **block)
                                     for _ in range(num_encoder_layers))
        self.decoder = nn.ModuleList(DecoderBlock(d_model, num_heads, d_ff, **block)
                                     for _ in range(num_decoder_layers))
        self.generator = nn.Linear(d_model, vocab_size)

    def _check_tokens(self, name: str, tokens: torch.Tensor) -> None:
        check_tensor(name, tokens, ndim=2, floating=False)
        if tokens.is_floating_point() or tokens.dtype == torch.bool:
            raise TypeError(f"{name} must hold integer token ids, got {tokens.dtype}")
        if tokens.shape[1] > self.max_positions:
            raise ValueError(f"{name} has length {tokens.shape[1]} but max_positions="
                             f"{self.max_positions}")
        if tokens.numel() and (int(tokens.min()) < 0 or int(tokens.max()) >= self.vocab_size):
            raise ValueError(f"{name} holds ids outside [0, {self.vocab_size})")

    def encode(self, src: torch.Tensor, src_valid_lens: torch.Tensor | None = None,
               ) -> tuple[torch.Tensor, list[torch.Tensor]]:
        """``src (B, S)`` -> ``(memory (B, S, D), [self weights (B, H, S, S)] per layer)``."""
        self._check_tokens("src", src)
        x = self.positions(self.src_embed(src))  # (B, S, D)
        weights = []
        for block in self.encoder:
            x, w = block(x, valid_lens=src_valid_lens)
            weights.append(w)
        return x, weights

    def decode(self, tgt_in: torch.Tensor, memory: torch.Tensor,
               src_valid_lens: torch.Tensor | None = None,
               ) -> tuple[torch.Tensor, list[torch.Tensor], list[torch.Tensor]]:
        """``tgt_in (B, T)`` -> ``(logits (B, T, V), self weights, cross weights)`` per layer."""
        self._check_tokens("tgt_in", tgt_in)
        y = self.positions(self.tgt_embed(tgt_in))  # (B, T, D)
        self_ws, cross_ws = [], []
        for block in self.decoder:
            y, sw, cw = block(y, memory, memory_valid_lens=src_valid_lens)
            self_ws.append(sw)
            cross_ws.append(cw)
        return self.generator(y), self_ws, cross_ws  # (B, T, V)

    def forward(self, src: torch.Tensor, src_valid_lens: torch.Tensor | None,
                tgt_in: torch.Tensor) -> Seq2SeqOutput:
        """Teacher-forced pass.

        Args:
            src: ``(B, S)`` source ids.
            src_valid_lens: ``(B,)`` source lengths (or None: no padding).
            tgt_in: ``(B, T)`` decoder input ids starting with BOS.

        Returns:
            A :class:`Seq2SeqOutput` with ``logits (B, T, V)`` and all attention weights.
        """
        memory, enc_w = self.encode(src, src_valid_lens)
        logits, self_w, cross_w = self.decode(tgt_in, memory, src_valid_lens)
        return Seq2SeqOutput(logits, enc_w, self_w, cross_w)


@torch.no_grad()
def greedy_decode(model: Seq2SeqTransformer, src: torch.Tensor,
                  src_valid_lens: torch.Tensor | None = None, *, max_len: int | None = None,
                  ) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """Decode by always taking the most likely next token.

    Args:
        model: a :class:`Seq2SeqTransformer` (put it in eval mode first if it has dropout).
        src: ``(B, S)`` source ids.
        src_valid_lens: ``(B,)`` source lengths.
        max_len: how many tokens to generate (default ``S + 1``: the sequence and its EOS).

    Returns:
        ``(tokens (B, max_len), cross_weights)``: generated ids, PAD after the first EOS;
        ``cross_weights`` per decoder layer ``(B, H, max_len, S)``, where row t is the
        attention used to produce token t.
    """
    max_len = src.shape[1] + 1 if max_len is None else check_positive_int("max_len", max_len)
    if max_len > model.max_positions:
        raise ValueError(f"max_len={max_len} exceeds the model's max_positions="
                         f"{model.max_positions}")
    memory, _ = model.encode(src, src_valid_lens)  # (B, S, D)
    batch = src.shape[0]
    tgt = torch.full((batch, 1), BOS, dtype=torch.long, device=src.device)  # (B, 1)
    for _ in range(max_len):
        logits, _, cross = model.decode(tgt, memory, src_valid_lens)  # (B, t, V)
        tgt = torch.cat([tgt, logits[:, -1].argmax(-1, keepdim=True)], dim=1)
    tokens = tgt[:, 1:]  # (B, max_len)
    after_eos = (tokens == EOS).long().cumsum(1) - (tokens == EOS).long() > 0  # past the 1st EOS
    # The causal decoder's last pass already holds the weights used for every position.
    return tokens.masked_fill(after_eos, PAD), cross


def sequence_accuracy(pred: torch.Tensor, tgt_out: torch.Tensor) -> float:
    """Fraction of sequences predicted exactly, up to and including the EOS.

    Args:
        pred: ``(B, T')`` predicted ids (anything after the target's EOS is ignored).
        tgt_out: ``(B, T)`` target ids ``[y .., EOS, PAD ..]``.

    Returns:
        A float in [0, 1].
    """
    check_tensor("pred", pred, ndim=2, floating=False)
    check_tensor("tgt_out", tgt_out, ndim=2, floating=False)
    if pred.shape[0] != tgt_out.shape[0]:
        raise ValueError(f"pred has {pred.shape[0]} rows but tgt_out has {tgt_out.shape[0]}")
    length = tgt_out.shape[1]
    if pred.shape[1] < length:  # too short a prediction cannot match: pad it
        pred = F.pad(pred, (0, length - pred.shape[1]), value=PAD)
    real = tgt_out != PAD  # (B, T)
    ok = (pred[:, :length] == tgt_out) | ~real  # (B, T)
    return float(ok.all(dim=1).float().mean())


@torch.no_grad()
def evaluate(model: Seq2SeqTransformer, batch: ToyBatch) -> float:
    """Exact-sequence accuracy of greedy decoding on ``batch`` (eval mode, restored after)."""
    was_training = model.training
    model.eval()
    try:
        pred, _ = greedy_decode(model, batch.src, batch.src_valid_lens,
                                max_len=batch.tgt_out.shape[1])
    finally:
        model.train(was_training)
    return sequence_accuracy(pred, batch.tgt_out)


@dataclass
class TrainHistory:
    """What :func:`train_seq2seq` returns.

    Attributes:
        losses: the training loss (cross-entropy per target token) at every step.
        eval_steps: the steps after which the held-out accuracy was measured.
        accuracies: the held-out exact-sequence accuracy at those steps.
        steps: how many optimisation steps ran.
        seconds: wall-clock training time, evaluations included.
        reached: whether the target accuracy was reached (training then stopped early).
        target_accuracy: the target that was asked for.
    """

    losses: list[float] = field(default_factory=list)
    eval_steps: list[int] = field(default_factory=list)
    accuracies: list[float] = field(default_factory=list)
    steps: int = 0
    seconds: float = 0.0
    reached: bool = False
    target_accuracy: float = 1.0

    @property
    def final_accuracy(self) -> float:
        """The last measured held-out accuracy (NaN if none was measured)."""
        return self.accuracies[-1] if self.accuracies else float("nan")


def _check_number(name: str, value, low: float, high: float, *, low_open: bool,
                  high_open: bool) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}")
    ok_low = value > low if low_open else value >= low
    ok_high = value < high if high_open else value <= high
    if not (ok_low and ok_high):
        lo, hi = ("(" if low_open else "["), (")" if high_open else "]")
        raise ValueError(f"{name} must be in {lo}{low}, {high}{hi}, got {value}")
    return float(value)


def train_seq2seq(model: Seq2SeqTransformer, *, task: str = "reverse", seq_len: int = 6,
                  min_len: int | None = None, steps: int = 1500, batch_size: int = 128,
                  lr: float = 3e-3, target_accuracy: float = 0.99, eval_every: int = 50,
                  eval_size: int = 512, grad_clip: float | None = 1.0, progress: bool = True,
                  num_threads: int | None = 1) -> TrainHistory:
    """Train ``model`` on a generated toy task with Adam, stopping once it is good enough.

    Each step draws a fresh batch from the "train" split; every ``eval_every`` steps the
    exact-sequence accuracy of greedy decoding is measured on a fixed batch from the held-out
    "test" split, and training stops as soon as it reaches ``target_accuracy``. A progress bar
    (``tqdm.auto``: text in a terminal, a widget in JupyterLab) shows the loss and accuracy.

    Args:
        model: the :class:`Seq2SeqTransformer` to train (in place); its device is used.
        task: ``"reverse"``, ``"copy"`` or ``"sort"``.
        seq_len: longest source length (the target needs ``seq_len + 1`` positions).
        min_len: shortest source length (default ``seq_len``).
        steps: the most optimisation steps (>= 1).
        batch_size: sequences per step.
        lr: Adam's learning rate.
        target_accuracy: stop when held-out accuracy reaches it; in (0, 1].
        eval_every: steps between evaluations.
        eval_size: held-out sequences per evaluation.
        grad_clip: clip the gradient norm to this (None: no clipping).
        progress: show the progress bar.
        num_threads: torch CPU threads while training (restored afterwards). A model this
            small runs fastest on one thread: on a busy 2-core CPU two threads made each step
            about ten times slower. ``None`` leaves torch's setting alone. Ignored off the CPU.

    Returns:
        A :class:`TrainHistory`. The model is left in eval mode.
    """
    if not isinstance(model, Seq2SeqTransformer):
        raise TypeError(f"model must be a Seq2SeqTransformer, got {type(model).__name__}")
    check_positive_int("steps", steps)
    check_positive_int("eval_every", eval_every)
    check_positive_int("eval_size", eval_size)
    _check_number("lr", lr, 0.0, float("inf"), low_open=True, high_open=True)
    _check_number("target_accuracy", target_accuracy, 0.0, 1.0, low_open=True, high_open=False)
    if grad_clip is not None:
        _check_number("grad_clip", grad_clip, 0.0, float("inf"), low_open=True, high_open=True)
    _check_task_args(task, batch_size, seq_len, model.vocab_size, min_len, "train")
    if seq_len + 1 > model.max_positions:
        raise ValueError(
            f"seq_len={seq_len} needs seq_len + 1 = {seq_len + 1} positions (the target ends "
            f"with EOS) but the model has max_positions={model.max_positions}"
        )
    if num_threads is not None:
        check_positive_int("num_threads", num_threads)
    device = next(model.parameters()).device
    history = TrainHistory(target_accuracy=float(target_accuracy))
    held_out = make_batch(task, eval_size, seq_len, model.vocab_size, min_len=min_len,
                          split="test", device=device)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    model.train()
    old_threads = torch.get_num_threads()
    if num_threads is not None and device.type == "cpu":
        torch.set_num_threads(num_threads)
    start = time.perf_counter()
    bar = tqdm(total=steps, desc=f"training on {task!r}", disable=not progress, leave=True)
    try:
        for step in range(1, steps + 1):
            batch = make_batch(task, batch_size, seq_len, model.vocab_size, min_len=min_len,
                               split="train", device=device)
            logits = model(batch.src, batch.src_valid_lens, batch.tgt_in).logits  # (B, T, V)
            loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                                   batch.tgt_out.reshape(-1), ignore_index=PAD)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            if grad_clip is not None:
                nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
            optimizer.step()
            history.losses.append(float(loss.detach()))
            history.steps = step
            bar.update(1)
            if step % eval_every == 0 or step == steps:
                acc = evaluate(model, held_out)
                history.eval_steps.append(step)
                history.accuracies.append(acc)
                bar.set_postfix(loss=f"{history.losses[-1]:.3f}", acc=f"{acc:.3f}")
                if acc >= target_accuracy:
                    history.reached = True
                    break
    finally:
        bar.close()
        history.seconds = time.perf_counter() - start
        model.eval()
        torch.set_num_threads(old_threads)
    return history


@torch.no_grad()
def cross_attention_maps(model: Seq2SeqTransformer, src: torch.Tensor,
                         src_valid_lens: torch.Tensor | None = None,
                         ) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """Greedy-decode ``src`` and return the decoder's cross-attention maps (C39, C40).

    Args:
        model: a trained :class:`Seq2SeqTransformer` (eval mode is used and restored).
        src: ``(B, S)`` source ids.
        src_valid_lens: ``(B,)`` source lengths.

    Returns:
        ``(tokens (B, S+1), maps)`` with ``maps`` one ``(B, H, S+1, S)`` tensor per decoder
        layer: row t is how output token t attended over the source positions.
    """
    was_training = model.training
    model.eval()
    try:
        return greedy_decode(model, src, src_valid_lens)
    finally:
        model.train(was_training)


def anti_diagonal_mass(weights: torch.Tensor, src_valid_lens: torch.Tensor | None = None,
                       ) -> float:
    """Average cross-attention weight that output t puts on source position ``n - 1 - t``.

    For reversal, output token t is the source token ``n - 1 - t`` (n the source length), so
    an aligned model puts its mass on that anti-diagonal. Rows ``t < n`` are averaged (the
    EOS row and padding rows are left out), over heads first when ``weights`` has them.

    Args:
        weights: ``(B, H, T, S)`` or ``(B, T, S)`` cross-attention weights, ``T >= n``.
        src_valid_lens: ``(B,)`` source lengths (default: all ``S``).

    Returns:
        A float in [0, 1]: 1 means every row puts all its weight on the anti-diagonal.
    """
    check_tensor("weights", weights, ndim_min=3)
    if weights.dim() == 4:
        weights = weights.mean(dim=1)  # (B, T, S): average over heads
    elif weights.dim() != 3:
        raise ValueError(f"weights must be (B, H, T, S) or (B, T, S), got {tuple(weights.shape)}")
    batch, num_rows, num_keys = weights.shape
    if src_valid_lens is None:
        src_valid_lens = torch.full((batch,), num_keys, dtype=torch.long, device=weights.device)
    check_tensor("src_valid_lens", src_valid_lens, ndim=1, floating=False)
    if src_valid_lens.shape[0] != batch:
        raise ValueError(f"src_valid_lens has {src_valid_lens.shape[0]} rows but weights has "
                         f"batch {batch}")
    lens = src_valid_lens.to(weights.device).long()
    if int(lens.min()) < 1 or int(lens.max()) > min(num_keys, num_rows):
        raise ValueError(f"src_valid_lens must be in [1, {min(num_keys, num_rows)}], got "
                         f"{lens.tolist()}")
    t = torch.arange(num_rows, device=weights.device)  # (T,)
    target = (lens.unsqueeze(1) - 1 - t).clamp(min=0)  # (B, T)
    picked = weights.gather(2, target.unsqueeze(-1)).squeeze(-1)  # (B, T)
    rows = t < lens.unsqueeze(1)  # (B, T): the real output positions
    return float(picked[rows].float().mean())
