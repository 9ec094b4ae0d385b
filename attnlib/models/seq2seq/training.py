"""Train a :class:`~attnlib.models.seq2seq.model.Seq2SeqTransformer` on a toy task, and score it.

``train_seq2seq(model, config)`` runs Adam on fresh batches of the "train" split and measures the
exact-sequence accuracy of greedy decoding on a fixed batch of the held-out "test" split every
``config.eval_every`` steps, stopping once it reaches ``config.target_accuracy``. All randomness
comes from torch's global generator: the caller seeds (``attnlib.set_seed(config.seed)``), and then
training is repeatable on a given machine. Thread counts are the caller's choice too (a model
this small runs fastest on one CPU thread: ``with attnlib.util.device.num_threads(1): ...``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn
from tqdm.auto import tqdm  # type: ignore[import-untyped]

from attnlib.models.seq2seq.config import TrainConfig
from attnlib.models.seq2seq.model import Seq2SeqTransformer, greedy_decode
from attnlib.models.seq2seq.toy_tasks import PAD, ToyBatch, check_task_args, make_batch
from attnlib.util._checks import check_tensor

__all__ = ["TrainHistory", "train_seq2seq", "sequence_accuracy", "evaluate"]


@dataclass(frozen=True)
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

    losses: tuple[float, ...] = ()
    eval_steps: tuple[int, ...] = ()
    accuracies: tuple[float, ...] = ()
    steps: int = 0
    seconds: float = 0.0
    reached: bool = False
    target_accuracy: float = 1.0

    @property
    def final_accuracy(self) -> float:
        """The last measured held-out accuracy (NaN if none was measured)."""
        return self.accuracies[-1] if self.accuracies else float("nan")


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


def evaluate(model: Seq2SeqTransformer, batch: ToyBatch) -> float:
    """Exact-sequence accuracy of greedy decoding on ``batch``."""
    decoded = greedy_decode(model, batch.src, batch.src_valid_lens, max_len=batch.tgt_out.shape[1])
    return sequence_accuracy(decoded.tokens, batch.tgt_out)


def train_seq2seq(
    model: Seq2SeqTransformer, config: TrainConfig | None = None, *, progress: bool = True
) -> TrainHistory:
    """Train ``model`` in place on a generated toy task with Adam, stopping once it is good enough.

    Args:
        model: the :class:`~attnlib.models.seq2seq.model.Seq2SeqTransformer` to train; its device
            is used.
        config: a :class:`~attnlib.models.seq2seq.config.TrainConfig` (None: ``TrainConfig()``,
            notebook 08's).
        progress: show a ``tqdm.auto`` progress bar (text in a terminal, a widget in JupyterLab)
            with the loss and the held-out accuracy.

    Returns:
        A :class:`TrainHistory`. The model is left in eval mode.
    """
    if not isinstance(model, Seq2SeqTransformer):
        raise TypeError(f"model must be a Seq2SeqTransformer, got {type(model).__name__}")
    config = TrainConfig() if config is None else config
    if not isinstance(config, TrainConfig):
        raise TypeError(
            "config must be an attnlib.models.seq2seq.config.TrainConfig, got "
            f"{type(config).__name__}"
        )
    check_task_args(
        config.task, config.batch_size, config.seq_len, model.vocab_size, config.min_len
    )
    if config.seq_len + 1 > model.max_positions:
        raise ValueError(
            f"seq_len={config.seq_len} needs seq_len + 1 = {config.seq_len + 1} positions (the "
            f"target ends with EOS) but the model has max_positions={model.max_positions}"
        )
    device = next(model.parameters()).device
    draw: dict[str, Any] = dict(min_len=config.min_len, device=device)
    held_out = make_batch(
        config.task, config.eval_size, config.seq_len, model.vocab_size, split="test", **draw
    )
    optimizer = torch.optim.Adam(model.parameters(), lr=config.lr)
    losses, eval_steps, accuracies, reached, step = [], [], [], False, 0
    model.train()
    start = time.perf_counter()
    bar = tqdm(
        total=config.steps, desc=f"training on {config.task!r}", disable=not progress, leave=True
    )
    try:
        for step in range(1, config.steps + 1):
            batch = make_batch(
                config.task,
                config.batch_size,
                config.seq_len,
                model.vocab_size,
                split="train",
                **draw,
            )
            logits = model(
                batch.src, batch.tgt_in, src_valid_lens=batch.src_valid_lens
            ).logits  # (B, T, V)
            loss = F.cross_entropy(
                logits.reshape(-1, logits.shape[-1]), batch.tgt_out.reshape(-1), ignore_index=PAD
            )
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            if config.grad_clip is not None:
                nn.utils.clip_grad_norm_(model.parameters(), config.grad_clip)
            optimizer.step()
            losses.append(float(loss.detach()))
            bar.update(1)
            if step % config.eval_every == 0 or step == config.steps:
                acc = evaluate(model, held_out)
                eval_steps.append(step)
                accuracies.append(acc)
                bar.set_postfix(loss=f"{losses[-1]:.3f}", acc=f"{acc:.3f}")
                if acc >= config.target_accuracy:
                    reached = True
                    break
    finally:
        bar.close()
        model.eval()
    return TrainHistory(
        losses=tuple(losses),
        eval_steps=tuple(eval_steps),
        accuracies=tuple(accuracies),
        steps=step,
        seconds=time.perf_counter() - start,
        reached=reached,
        target_accuracy=float(config.target_accuracy),
    )
