"""Induction heads in a small GPT: the data, the training run and the per-head scores (notebook 11).

The task: random tokens in which one segment (of ``segment`` tokens, or of a length drawn per
sequence from ``min_segment .. segment``) occurs twice, the second time after a random gap, so the
only way to predict the second occurrence is to find the first one in the context and copy what
followed it (an induction head; Olsson et al. 2022, Elhage et al. 2021).

Everything here is measured, never assumed: which head attends to the previous token, which one
attends to the token after the earlier occurrence of the current token (prefix matching), whether
its output raises that token's logit (copying), whether its keys read the first head's output
(K-composition, by weights and by removing that output from the keys only), and what removing a
head (``head_mask``) does to the loss on the second occurrence.

Positions are 0-based. A sequence's first occurrence starts at ``first``, the second at
``second = first + length + gap``. "The loss on an occurrence" is the mean next-token loss of
predicting its tokens 1 .. length - 1 (its token 0 cannot be known from the first occurrence),
pooled over the batch's tokens (with per-row lengths, a row counts as many times as it has
tokens to predict).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from importlib import resources
from typing import Any, cast

import torch
import torch.nn.functional as F

from attnlib.core.attention import dot_product_attention
from attnlib.core.masks import causal_mask
from attnlib.models.gpt import GPT, GPTBlock, GPTConfig
from attnlib.util._checks import check_bool, check_int, check_positive_int, check_probability

__all__ = [
    "RepeatTask",
    "RepeatBatch",
    "TrainSetup",
    "TrainRun",
    "repeat_batch",
    "occurrence_losses",
    "previous_token_scores",
    "induction_scores",
    "lookback_profile",
    "match_profile",
    "copying_scores",
    "composition_scores",
    "random_composition_baseline",
    "key_path_induction",
    "ablation_table",
    "head_scores",
    "train_induction",
    "induction_model",
    "load_run",
    "RUN_FILE",
]


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


def previous_token_scores(attentions: Sequence[torch.Tensor]) -> torch.Tensor:
    """``(layers, H)``: each head's mean weight from position t to t - 1 (t = 1 .. T-1)."""
    out = []
    for w in attentions:  # (B, H, T, T)
        T = w.shape[-1]
        t = torch.arange(1, T)
        out.append(w[:, :, t, t - 1].double().mean((0, 2)))
    return torch.stack(out)


def induction_scores(attentions: Sequence[torch.Tensor], batch: RepeatBatch) -> torch.Tensor:
    """``(layers, H)``: prefix matching, each head's mean weight from a position q of the second
    occurrence to the token *after* the earlier occurrence of q's token (``q - d + 1`` with
    ``d = second - first``), over the positions ``second .. second + segment - 2``."""
    q = batch.positions("second")  # (B, n)
    k = q - (batch.second - batch.first)[:, None] + 1  # (B, n)
    rows = torch.arange(q.shape[0])[:, None]
    ok = batch.valid()
    out = []
    for w in attentions:  # (B, H, T, T)
        wb = w.permute(0, 2, 3, 1)  # (B, T, T, H)
        out.append(_masked_mean(wb[rows, q, k].double(), ok))  # (H,)
    return torch.stack(out)


def lookback_profile(attentions: Sequence[torch.Tensor], max_back: int) -> torch.Tensor:
    """``(layers, H, max_back + 1)``: each head's mean weight from position t to ``t - k`` for
    ``k = 0 .. max_back`` (over the positions ``t >= max_back``). Entry ``k = 1`` is the
    previous-token score over those positions; a head that reads a fixed distance back has one
    large entry."""
    out = []
    for w in attentions:  # (B, H, T, T)
        T = w.shape[-1]
        t = torch.arange(max_back, T)
        out.append(
            torch.stack([w[:, :, t, t - k].double().mean((0, 2)) for k in range(max_back + 1)], -1)
        )
    return torch.stack(out)


def match_profile(
    attentions: Sequence[torch.Tensor], batch: RepeatBatch, offsets: Sequence[int]
) -> torch.Tensor:
    """``(layers, H, len(offsets))``: each head's mean weight from a position q of the second
    occurrence to ``q - d + o`` (d = second - first): ``o = 0`` is the earlier copy of q's own
    token, ``o = 1`` the token after it (the induction score). Offsets whose key would lie after
    q count as weight 0 (the causal mask)."""
    q = batch.positions("second")  # (B, n)
    d = (batch.second - batch.first)[:, None]
    rows = torch.arange(q.shape[0])[:, None]
    real = batch.valid()
    out = []
    for w in attentions:  # (B, H, T, T)
        wb = w.permute(0, 2, 3, 1).double()  # (B, T, T, H)
        cols = []
        for o in offsets:
            k = q - d + o
            ok = (k >= 0) & (k <= q)
            vals = wb[rows, q, k.clamp(0, w.shape[-1] - 1)] * ok[..., None]  # (B, n, H)
            cols.append(_masked_mean(vals, real))
        out.append(torch.stack(cols, -1))
    return torch.stack(out)


def _ln_scale(ln) -> torch.Tensor:
    return ln.weight.detach().double()


def _ov_qk(model: GPT, layer: int, head: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Head (layer, head)'s ``W_QK = diag(g) W_Q W_Kᵀ diag(g)`` and ``W_OV = diag(g) W_V W_O``
    (D × D, float64) in the row convention (score = x_q W_QK x_kᵀ, output = x W_OV), with the
    block's LayerNorm gain g folded in (its centring and bias left out, as Elhage et al.)."""
    block = cast(GPTBlock, model.blocks[layer])
    wq, wk, wv, wo = (m.double() for m in block.attn.head_weights(head))
    g = _ln_scale(block.ln1)[:, None]  # (D, 1)
    w_qk = (g * wq) @ (g * wk).T  # (D, D)
    w_ov = (g * wv) @ wo  # (D, D)
    return w_qk, w_ov


def copying_scores(model: GPT) -> torch.Tensor:
    """``(layers, H)``: Elhage et al.'s copying score of each head's OV circuit on the tokens,
    ``sum(λ) / sum(|λ|)`` of the eigenvalues λ of ``W_E W_OV W_U`` (V × V; final LayerNorm gain
    folded into W_U). Near 1: the head raises the logit of the token it attends to."""
    w_e = model.tok_emb.weight.detach().double()  # (V, D)
    w_u = model.unembedding().detach().double()  # (D, V)
    if model.ln_f is not None:
        w_u = _ln_scale(model.ln_f)[:, None] * w_u
    cfg = model.config
    out = torch.zeros(cfg.num_layers, cfg.num_heads, dtype=torch.float64)
    for layer in range(cfg.num_layers):
        for head in range(cfg.num_heads):
            _, w_ov = _ov_qk(model, layer, head)
            lam = torch.linalg.eigvals(w_e @ w_ov @ w_u)  # (V,) complex
            out[layer, head] = lam.sum().real / lam.abs().sum()
    return out


def _comp(a: torch.Tensor, b: torch.Tensor) -> float:
    return (
        torch.linalg.matrix_norm(a @ b)
        / (torch.linalg.matrix_norm(a) * torch.linalg.matrix_norm(b))
    ).item()


def composition_scores(model: GPT, kind: str = "k") -> torch.Tensor:
    """``(H, H)``: Elhage et al.'s composition score of each layer-0 head (rows) into each layer-1
    head (columns): ``‖A B‖_F / (‖A‖_F ‖B‖_F)`` with, in the row convention, ``A B = W_QK²
    (W_OV¹)ᵀ`` for K-composition (the keys read head 1's output), ``W_OV¹ W_QK²`` for Q and
    ``W_OV¹ W_OV²`` for V."""
    if kind not in ("q", "k", "v"):
        raise ValueError(f"kind must be 'q', 'k' or 'v', got {kind!r}")
    if model.config.num_layers < 2:
        raise ValueError(f"composition needs 2 layers, the model has {model.config.num_layers}")
    H = model.config.num_heads
    out = torch.zeros(H, H, dtype=torch.float64)
    for h0 in range(H):
        _, ov0 = _ov_qk(model, 0, h0)
        for h1 in range(H):
            qk1, ov1 = _ov_qk(model, 1, h1)
            if kind == "k":
                out[h0, h1] = _comp(qk1, ov0.T)
            elif kind == "q":
                out[h0, h1] = _comp(ov0, qk1)
            else:
                out[h0, h1] = _comp(ov0, ov1)
    return out


def random_composition_baseline(
    d_model: int, d_head: int, samples: int = 200, seed: int = 0
) -> float:
    """The mean composition score of random matrices of the same shapes (``W_QK = W_Q W_Kᵀ``,
    ``W_OV = W_V W_O``, each factor Gaussian, rank ``d_head``): the level a score must exceed."""
    g = torch.Generator().manual_seed(seed)

    def low_rank():
        a = torch.randn(d_model, d_head, generator=g, dtype=torch.float64)
        b = torch.randn(d_head, d_model, generator=g, dtype=torch.float64)
        return a @ b

    return sum(_comp(low_rank(), low_rank().T) for _ in range(samples)) / samples


def key_path_induction(model: GPT, batch: RepeatBatch, offset: int = 1) -> torch.Tensor:
    """``(H + 1, H)``: the layer-1 heads' mean weight on ``q - d + offset`` (:func:`match_profile`;
    ``offset=1`` is the induction score) when one layer-0 head's output is removed from the
    *keys* of layer 1 only (its queries and values unchanged). Row h0 removes layer-0 head h0;
    the last row removes nothing (the model as it is). A drop means the keys read that head's
    output: K-composition, measured by its effect."""
    if model.config.num_layers != 2:
        raise ValueError(f"key_path_induction needs a 2-layer model, got {model.config.num_layers}")
    H = model.config.num_heads
    with torch.no_grad():
        ids = batch.ids.to(model.device)
        full = model(ids).hidden[1]  # (B, T, D) input to block 1
        blk = cast(GPTBlock, model.blocks[1])
        x = blk.ln1(full)
        B, T, _ = x.shape
        dh = blk.attn.head_dim

        def heads(lin, z):
            return lin(z).view(B, T, -1, dh).transpose(1, 2)  # (B, H, T, Dh)

        q, v = heads(blk.attn.w_q, x), heads(blk.attn.w_v, x)
        mask = causal_mask(T, device=x.device)
        rows = []
        for h0 in list(range(H)) + [None]:
            if h0 is None:
                hk = full
            else:
                keep = torch.ones(model.config.num_layers, H, dtype=full.dtype, device=full.device)
                keep[0, h0] = 0.0
                hk = model(ids, head_mask=keep).hidden[1]
            xk = blk.ln1(hk)
            k = heads(blk.attn.w_k, xk)
            if k.shape[1] != H:  # GQA: repeat each K/V head over its group
                k = k.repeat_interleave(H // k.shape[1], dim=1)
                v_ = v.repeat_interleave(H // v.shape[1], dim=1)
            else:
                v_ = v
            _, w = dot_product_attention(q, k, v_, mask)  # (B, H, T, T)
            rows.append(match_profile([w], batch, [offset])[0, :, 0])
    return torch.stack(rows)


def ablation_table(model: GPT, batch: RepeatBatch) -> list[dict]:
    """Remove each head in turn (``head_mask`` zero) and measure the occurrence losses.

    Returns:
        One dict per head, ``{"layer", "head", **occurrence_losses}``, then one for no ablation
        (``layer = head = None``).
    """
    cfg = model.config
    rows: list[dict[str, Any]] = []
    with torch.no_grad():
        ids = batch.ids.to(model.device)
        for layer in range(cfg.num_layers):
            for head in range(cfg.num_heads):
                keep = torch.ones(cfg.num_layers, cfg.num_heads, device=model.device)
                keep[layer, head] = 0.0
                logits = model(ids, head_mask=keep).logits.cpu()
                rows.append({"layer": layer, "head": head, **occurrence_losses(logits, batch)})
        rows.append(
            {"layer": None, "head": None, **occurrence_losses(model(ids).logits.cpu(), batch)}
        )
    return rows


def head_scores(model: GPT, batch: RepeatBatch) -> dict[str, torch.Tensor]:
    """Every per-head score on ``batch``: ``previous`` and ``induction`` ``(layers, H)`` (from the
    attention weights), ``copying`` ``(layers, H)`` (from the weights), and the occurrence
    losses."""
    with torch.no_grad():
        out = model(batch.ids.to(model.device), output_attentions=True)
    att = [w.cpu() for w in out.attentions]
    return {
        "previous": previous_token_scores(att),
        "induction": induction_scores(att, batch),
        "copying": copying_scores(model),
        **{k: torch.tensor(v) for k, v in occurrence_losses(out.logits.cpu(), batch).items()},
    }


@dataclass(frozen=True)
class TrainSetup:
    """How notebook 11's models are trained (the shipped run used exactly these).

    Attributes:
        task: the data.
        num_layers, num_heads, d_model, positions: the attention-only GPT's shape.
        init: ``"gpt2"`` (the model's own GPT-2 initialisation: every weight normal with s.d.
            0.02) or ``"torch"``: then every ``nn.Linear`` (the heads' W_Q, W_K, W_V, W_O) is
            re-drawn with PyTorch's default (Kaiming-uniform, s.d. ``1/sqrt(3 * fan_in)``, 0.072 at
            width 64; biases uniform), seeded by ``seed + 100``. With the small GPT-2 weights the
            scores barely depend on the tokens, so the plateau is much longer.
        steps, batch_size, lr, weight_decay: AdamW on the mean next-token loss.
        seed: seeds the weights (``torch.manual_seed``) and, plus 1, the data generator.
        eval_size, eval_seed: the fixed held-out batch every evaluation uses.
        eval_every: steps between evaluations (and snapshots).
    """

    task: RepeatTask = field(default_factory=lambda: RepeatTask(segment=16, min_segment=2))
    num_layers: int = 2
    num_heads: int = 2
    d_model: int = 64
    positions: str = "learned"
    init: str = "torch"
    steps: int = 6000
    batch_size: int = 32
    lr: float = 1e-3
    weight_decay: float = 0.0
    seed: int = 1
    eval_size: int = 256
    eval_seed: int = 12345
    eval_every: int = 100

    def __post_init__(self):
        if self.init not in ("gpt2", "torch"):
            raise ValueError(f"init must be 'gpt2' or 'torch', got {self.init!r}")

    def model_config(self) -> GPTConfig:
        return GPTConfig(
            vocab_size=self.task.vocab_size,
            max_len=self.task.seq_len,
            d_model=self.d_model,
            num_heads=self.num_heads,
            num_layers=self.num_layers,
            attention_only=True,
            positions=self.positions,
        )

    def eval_batch(self) -> RepeatBatch:
        return repeat_batch(
            self.task, self.eval_size, torch.Generator().manual_seed(self.eval_seed)
        )

    def to_dict(self) -> dict:
        return asdict(self)

    @staticmethod
    def from_dict(d: dict) -> TrainSetup:
        d = dict(d)
        d["task"] = RepeatTask(**d["task"])
        return TrainSetup(**d)


@dataclass
class TrainRun:
    """What a training run recorded.

    Attributes:
        setup: the :class:`TrainSetup`.
        losses: ``(steps,)`` the training loss of every step (before its update).
        eval_steps: ``(E,)`` the steps evaluated (0 = before training).
        metrics: name -> ``(E,)`` or ``(E, layers, H)`` tensors on the held-out batch
            (:func:`head_scores`).
        snapshots: the model's ``state_dict`` (float16) at the steps ``snapshot_steps``.
        seconds: wall time of the training loop.
        snapshot_steps: ``(N,)`` the steps of the snapshots (a subset of ``eval_steps``).
    """

    setup: TrainSetup
    losses: torch.Tensor
    eval_steps: torch.Tensor
    metrics: dict[str, torch.Tensor]
    snapshots: list[dict[str, torch.Tensor]]
    seconds: float
    snapshot_steps: torch.Tensor = field(default_factory=lambda: torch.zeros(0, dtype=torch.long))

    def eval_index(self, step: int) -> int:
        """The index of ``step`` in ``eval_steps``."""
        hit = (self.eval_steps == step).nonzero()
        if not len(hit):
            raise ValueError(
                f"step {step} was not evaluated; eval_steps are {self.eval_steps.tolist()}"
            )
        return int(hit[0, 0])


def induction_model(setup: TrainSetup | None = None) -> GPT:
    """The untrained attention-only GPT of ``setup``, seeded with ``setup.seed`` inside
    ``torch.random.fork_rng`` (the caller's random state is left as it was); with ``init =
    "torch"`` its ``nn.Linear`` layers then re-drawn by ``reset_parameters`` (seed ``seed +
    100``)."""
    setup = TrainSetup() if setup is None else setup
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(setup.seed)
        model = GPT(setup.model_config())
        if setup.init == "torch":
            torch.manual_seed(setup.seed + 100)
            for module in model.modules():
                if isinstance(module, torch.nn.Linear):
                    module.reset_parameters()
    return model


def train_induction(
    setup: TrainSetup | None = None,
    *,
    steps: int | None = None,
    keep_snapshots: bool = False,
    progress: bool = True,
) -> tuple[GPT, TrainRun]:
    """Train :func:`induction_model` on :class:`RepeatTask` batches, evaluating every
    ``eval_every`` steps on the fixed held-out batch.

    Args:
        setup: the :class:`TrainSetup` (None: the notebook's).
        steps: stop after this many steps (default ``setup.steps``); the first ``steps`` of a
            longer run are the same steps (same data, same updates).
        keep_snapshots: keep a float16 ``state_dict`` at every evaluated step.
        progress: show a ``tqdm.auto`` progress bar with the loss and the in-context score.

    Returns:
        ``(model, run)``: the trained model (eval mode, on the CPU) and its :class:`TrainRun`.
    """
    from tqdm.auto import tqdm  # type: ignore[import-untyped]

    setup = TrainSetup() if setup is None else setup
    if not isinstance(setup, TrainSetup):
        raise TypeError(f"setup must be a TrainSetup, got {type(setup).__name__}")
    n = setup.steps if steps is None else check_int("steps", steps, min=0, max=setup.steps)
    check_bool("keep_snapshots", keep_snapshots)
    check_bool("progress", progress)
    model = induction_model(setup)
    gen = torch.Generator().manual_seed(setup.seed + 1)
    held = setup.eval_batch()
    opt = torch.optim.AdamW(model.parameters(), lr=setup.lr, weight_decay=setup.weight_decay)
    losses: list[float] = []
    eval_steps: list[int] = []
    records: list[dict[str, torch.Tensor]] = []
    snaps: list[dict[str, torch.Tensor]] = []

    def evaluate(step: int) -> None:
        model.eval()
        records.append(head_scores(model, held))
        eval_steps.append(step)
        if keep_snapshots:
            snaps.append(
                {k: v.detach().to(torch.float16).clone() for k, v in model.state_dict().items()}
            )
        model.train()

    start = time.perf_counter()
    bar = tqdm(
        total=n,
        desc="training the 2-layer model" if setup.num_layers == 2 else "training",
        disable=not progress,
    )
    try:
        model.train()
        for step in range(n + 1):
            if step % setup.eval_every == 0 or step == n:
                evaluate(step)
                r = records[-1]
                bar.set_postfix(
                    loss=f"{float(r['loss']):.2f}", in_context=f"{float(r['in_context']):+.2f}"
                )
            if step == n:
                break
            b = repeat_batch(setup.task, setup.batch_size, gen)
            logits = model(b.ids).logits  # (B, T, V)
            loss = F.cross_entropy(
                logits[:, :-1].reshape(-1, logits.shape[-1]), b.ids[:, 1:].reshape(-1)
            )
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            losses.append(float(loss.detach()))
            bar.update(1)
    finally:
        bar.close()
        model.eval()
    metrics = {k: torch.stack([r[k] for r in records]) for k in records[0]}
    run = TrainRun(
        setup=setup,
        losses=torch.tensor(losses),
        eval_steps=torch.tensor(eval_steps),
        metrics=metrics,
        snapshots=snaps,
        seconds=time.perf_counter() - start,
        snapshot_steps=torch.tensor(eval_steps if keep_snapshots else [], dtype=torch.long),
    )
    return model, run


#: The first setup tried for notebook 11: every segment 16 tokens long (then a different circuit
#: forms: layer-0 heads that look 16 and 15 back, no previous-token head).
FIXED_LENGTH = TrainSetup(
    task=RepeatTask(segment=16), init="gpt2", steps=3000, seed=0, eval_every=75
)

#: The setups of the shipped runs: notebook 11's model, its 1-layer control, and the 2-layer
#: model of the fixed-length setup (its record and final weights, no snapshots).
SHIPPED = {
    "two_layer": TrainSetup(),
    "one_layer": TrainSetup(num_layers=1),
    "fixed_length": FIXED_LENGTH,
}

#: The shipped runs (``python -m attnlib.course.induction --write``): the 2-layer model's
#: float16 snapshots and metrics, the 1-layer control's and the fixed-length run's metrics and
#: final weights.
RUN_FILE = "data/induction.pt"


def save_runs(path, runs: dict[str, tuple[GPT, TrainRun]], snapshot_stride: int = 3) -> None:
    """Write ``{name: (model, run)}`` to ``path`` (final weights float32, snapshots float16; every
    ``snapshot_stride``-th snapshot, the first and the last kept, to keep the file small)."""
    blob = {}
    for name, (model, run) in runs.items():
        n = len(run.snapshots)
        keep = sorted(set(range(0, n, snapshot_stride)) | ({n - 1} if n else set()))
        blob[name] = {
            "setup": run.setup.to_dict(),
            "state_dict": {k: v.detach().float().clone() for k, v in model.state_dict().items()},
            "losses": run.losses.to(torch.float16),
            "eval_steps": run.eval_steps,
            "metrics": {k: v.float() for k, v in run.metrics.items()},
            "snapshots": [run.snapshots[i] for i in keep],
            "snapshot_steps": run.snapshot_steps[keep] if n else run.snapshot_steps,
            "seconds": run.seconds,
        }
    torch.save(blob, path)


def load_run(name: str = "two_layer") -> tuple[GPT, TrainRun]:
    """The shipped run ``name`` (``"two_layer"``, ``"one_layer"`` or ``"fixed_length"``): its
    final model (eval mode,
    CPU, float32) and its :class:`TrainRun` (losses float16 as stored, snapshots float16)."""
    with resources.files("attnlib").joinpath(RUN_FILE).open("rb") as f:
        blob = torch.load(f, map_location="cpu", weights_only=True)
    if name not in blob:
        raise ValueError(f"name must be one of {sorted(blob)}, got {name!r}")
    d = blob[name]
    setup = TrainSetup.from_dict(d["setup"])
    want = SHIPPED[name]
    if setup != want:
        raise ValueError(
            f"{RUN_FILE} holds a {name!r} run trained with {setup}, but the current setting is "
            f"{want}; re-create it with `python -m attnlib.course.induction --write`"
        )
    model = induction_model(setup)
    model.load_state_dict(d["state_dict"])
    run = TrainRun(
        setup=setup,
        losses=d["losses"].float(),
        eval_steps=d["eval_steps"],
        metrics=d["metrics"],
        snapshots=d["snapshots"],
        seconds=float(d["seconds"]),
        snapshot_steps=d["snapshot_steps"],
    )
    return model.eval(), run


def snapshot_model(run: TrainRun, index: int) -> GPT:
    """The model at ``run.snapshot_steps[index]`` (from its float16 snapshot, in float32)."""
    check_int("index", index, min=0, max=len(run.snapshots) - 1)
    model = induction_model(run.setup)
    model.load_state_dict({k: v.float() for k, v in run.snapshots[index].items()})
    return model.eval()


def phase_change(run: TrainRun, share: float = 0.25) -> dict[str, float]:
    """The drop of the in-context score, found from the record (no threshold on its value).

    Between consecutive evaluations the score falls at some rate per step; the drop is the
    contiguous stretch of intervals around the fastest one in which it falls at least ``share``
    times that fastest rate.

    Returns:
        ``{"start", "end"}`` (evaluated steps), ``"fall"``: how much of the score's whole fall
        (first evaluation to last) happens between them, and ``"before"``/``"after"``: the score
        at ``start`` and ``end``.
    """
    ic = run.metrics["in_context"].double()
    steps = run.eval_steps.double()
    rate = (ic[:-1] - ic[1:]) / (steps[1:] - steps[:-1])  # (E-1,) fall per step
    top = int(rate.argmax())
    lo = hi = top
    while lo > 0 and rate[lo - 1] >= share * rate[top]:
        lo -= 1
    while hi < len(rate) - 1 and rate[hi + 1] >= share * rate[top]:
        hi += 1
    total = (ic[0] - ic[-1]).item()
    return {
        "start": int(steps[lo]),
        "end": int(steps[hi + 1]),
        "fall": (ic[lo] - ic[hi + 1]).item() / total if total else 0.0,
        "before": ic[lo].item(),
        "after": ic[hi + 1].item(),
    }


def _main() -> None:  # pragma: no cover - writes the shipped file
    import argparse

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--write", action="store_true", help="write attnlib/" + RUN_FILE)
    a = p.parse_args()
    runs = {
        name: train_induction(setup, keep_snapshots=name == "two_layer")
        for name, setup in SHIPPED.items()
    }
    for name, (_, run) in runs.items():
        print(name, f"{run.seconds:.0f} s", phase_change(run))
    if a.write:
        path = resources.files("attnlib").joinpath(RUN_FILE)
        save_runs(path, runs)
        print("wrote", path)


if __name__ == "__main__":  # pragma: no cover
    _main()
