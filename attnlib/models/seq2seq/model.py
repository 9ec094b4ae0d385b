"""A tiny encoder-decoder Transformer and greedy decoding.

The model reads source token ids and, teacher-forced, the target shifted right
(``[BOS, y_1, ..., y_n]``); it returns logits for ``[y_1, ..., y_n, EOS]`` and every attention
map it used. Its shape is a :class:`~attnlib.models.seq2seq.config.Seq2SeqConfig`, as nanoGPT's
``GPT`` takes a ``GPTConfig``. The toy tasks it learns are in
:mod:`attnlib.models.seq2seq.toy_tasks`, its trainer in :mod:`attnlib.models.seq2seq.training`,
step-by-step decoding traces in :mod:`attnlib.course.decoding`.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from attnlib.core.masks import valid_lens_mask
from attnlib.core.positional import PositionalEncoding
from attnlib.core.transformer import DecoderBlock, EncoderBlock
from attnlib.models.seq2seq.config import Seq2SeqConfig
from attnlib.models.seq2seq.toy_tasks import BOS, EOS, PAD
from attnlib.util._checks import (
    check_positive_int,
    check_tensor,
    check_valid_lens_range,
    check_valid_lens_shape,
    read_bounds,
)

__all__ = ["Seq2SeqOutput", "Seq2SeqTransformer", "eval_mode", "greedy_decode"]


@dataclass(frozen=True)
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
    output layer to the vocabulary (softmax is left to the loss / argmax).

    Args:
        cfg: a :class:`~attnlib.models.seq2seq.config.Seq2SeqConfig` (``Seq2SeqConfig()`` is
        notebook 08's).
    """

    def __init__(self, cfg: Seq2SeqConfig):
        super().__init__()
        if not isinstance(cfg, Seq2SeqConfig):
            raise TypeError(
                "cfg must be an attnlib.models.seq2seq.config.Seq2SeqConfig, got "
                f"{type(cfg).__name__}"
            )
        self.config = cfg
        self.vocab_size = cfg.vocab_size
        self.d_model = cfg.d_model
        self.max_positions = cfg.max_positions
        self.src_embed = nn.Embedding(cfg.vocab_size, cfg.d_model, padding_idx=PAD)
        self.tgt_embed = nn.Embedding(cfg.vocab_size, cfg.d_model, padding_idx=PAD)
        self.positions = PositionalEncoding(cfg.d_model, cfg.max_positions, dropout=cfg.dropout)
        block: dict[str, Any] = dict(dropout=cfg.dropout, norm_first=cfg.norm_first)
        self.encoder = nn.ModuleList(
            EncoderBlock(cfg.d_model, cfg.num_heads, cfg.d_ff, **block)
            for _ in range(cfg.num_encoder_layers)
        )
        self.decoder = nn.ModuleList(
            DecoderBlock(cfg.d_model, cfg.num_heads, cfg.d_ff, **block)
            for _ in range(cfg.num_decoder_layers)
        )
        self.output = nn.Linear(cfg.d_model, cfg.vocab_size)  # to one score per vocabulary id

    def _check_tokens(
        self, name: str, tokens: torch.Tensor, valid_lens: torch.Tensor | None, num_keys: int
    ) -> tuple[torch.Tensor | None, bool]:
        """Check token ids and the source lengths (``num_keys`` = S) with one host read; return
        the ``(B, 1, 1, S)`` padding mask for the blocks and whether a length is 0."""
        check_tensor(name, tokens, ndim=2, floating=False)
        if tokens.is_floating_point() or tokens.dtype == torch.bool:
            raise TypeError(f"{name} must hold integer token ids, got {tokens.dtype}")
        if tokens.shape[1] > self.max_positions:
            raise ValueError(
                f"{name} has length {tokens.shape[1]} but max_positions={self.max_positions}"
            )
        if valid_lens is not None:
            check_valid_lens_shape(
                valid_lens, tokens.shape[:1], None, tokens.device, per_query=False
            )
        ids, lens = read_bounds(tokens, valid_lens)  # one transfer for both
        if ids is not None and (ids[0] < 0 or ids[1] >= self.vocab_size):
            raise ValueError(f"{name} holds ids outside [0, {self.vocab_size})")
        if valid_lens is None:
            return None, False
        lo, _ = check_valid_lens_range(lens, num_keys)
        return valid_lens_mask(valid_lens, (tokens.shape[0], 1, 1, num_keys)), lo == 0

    def encode(
        self,
        src: torch.Tensor,
        src_valid_lens: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, list[torch.Tensor]]:
        """``src (B, S)`` -> ``(memory (B, S, D), [self weights (B, H, S, S)] per layer)``."""
        mask, empty = self._check_tokens("src", src, src_valid_lens, src.shape[1])
        x = self.positions(self.src_embed(src))  # (B, S, D)
        weights = []
        for block in self.encoder:  # checked once above; the blocks run unchecked
            x, w = block._forward(x, mask, rows_may_be_empty=empty)
            weights.append(w)
        return x, weights

    def decode(
        self,
        tgt_in: torch.Tensor,
        memory: torch.Tensor,
        src_valid_lens: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, list[torch.Tensor], list[torch.Tensor]]:
        """``tgt_in (B, T)`` -> ``(logits (B, T, V), self weights, cross weights)`` per layer."""
        check_tensor("memory", memory, ndim=3)
        if memory.shape[0] != tgt_in.shape[0] or memory.shape[-1] != self.d_model:
            raise ValueError(
                f"memory must be (B, S, D) = ({tgt_in.shape[0]}, S, {self.d_model}), "
                f"got {tuple(memory.shape)}"
            )
        mask, empty = self._check_tokens("tgt_in", tgt_in, src_valid_lens, memory.shape[1])
        y = self.positions(self.tgt_embed(tgt_in))  # (B, T, D)
        self_ws, cross_ws = [], []
        for block in self.decoder:  # checked once above; the blocks run unchecked
            step = block._forward(y, memory, mask, rows_may_be_empty=empty)
            y = step.out
            self_ws.append(step.self_weights)
            cross_ws.append(step.cross_weights)
        return self.output(y), self_ws, cross_ws  # (B, T, V)

    def forward(
        self, src: torch.Tensor, tgt_in: torch.Tensor, *, src_valid_lens: torch.Tensor | None = None
    ) -> Seq2SeqOutput:
        """Teacher-forced pass.

        Args:
            src: ``(B, S)`` source ids.
            tgt_in: ``(B, T)`` decoder input ids starting with BOS.
            src_valid_lens: ``(B,)`` source lengths (None: no padding).

        Returns:
            A :class:`Seq2SeqOutput` with ``logits (B, T, V)`` and all attention weights.
        """
        memory, enc_w = self.encode(src, src_valid_lens)
        logits, self_w, cross_w = self.decode(tgt_in, memory, src_valid_lens)
        return Seq2SeqOutput(logits, enc_w, self_w, cross_w)


@contextmanager
def eval_mode(model: nn.Module):
    """Run the block with ``model`` in eval mode (no dropout), then restore its training flag."""
    was_training = model.training
    model.eval()
    try:
        yield model
    finally:
        model.train(was_training)


@torch.no_grad()
def greedy_decode(
    model: Seq2SeqTransformer,
    src: torch.Tensor,
    src_valid_lens: torch.Tensor | None = None,
    *,
    max_len: int | None = None,
) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """Decode by always taking the most likely next token (in eval mode, restored after).

    Args:
        model: a :class:`Seq2SeqTransformer`.
        src: ``(B, S)`` source ids.
        src_valid_lens: ``(B,)`` source lengths.
        max_len: how many tokens to generate (default ``S + 1``: the sequence and its EOS).

    Returns:
        ``(tokens (B, max_len), cross_weights)``: generated ids, PAD after the first EOS;
        ``cross_weights`` per decoder layer ``(B, H, max_len, S)``, where row t is the
        attention used to produce token t.
    """
    if not isinstance(model, Seq2SeqTransformer):
        raise TypeError(f"model must be a Seq2SeqTransformer, got {type(model).__name__}")
    max_len = src.shape[1] + 1 if max_len is None else check_positive_int("max_len", max_len)
    if max_len > model.max_positions:
        raise ValueError(
            f"max_len={max_len} exceeds the model's max_positions={model.max_positions}"
        )
    with eval_mode(model):
        memory, _ = model.encode(src, src_valid_lens)  # (B, S, D)
        tgt = torch.full((src.shape[0], 1), BOS, dtype=torch.long, device=src.device)  # (B, 1)
        for _ in range(max_len):
            logits, _, cross = model.decode(tgt, memory, src_valid_lens)  # (B, t, V)
            tgt = torch.cat([tgt, logits[:, -1].argmax(-1, keepdim=True)], dim=1)
    tokens = tgt[:, 1:]  # (B, max_len)
    is_eos = (tokens == EOS).long()
    after_eos = is_eos.cumsum(1) - is_eos > 0  # (B, max_len): strictly past the first EOS
    # The causal decoder's last pass already holds the weights used for every position.
    return tokens.masked_fill(after_eos, PAD), cross
