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
from dataclasses import dataclass
from typing import Any, cast

import torch
from torch import nn

from attnlib.core.masks import valid_lens_mask
from attnlib.core.positional import PositionalEncoding
from attnlib.core.transformer import DecoderBlock, EncoderBlock
from attnlib.models.seq2seq.config import Seq2SeqConfig
from attnlib.models.seq2seq.toy_tasks import BOS, EOS, PAD
from attnlib.util._checks import (
    check_matches_parameters,
    check_positive_int,
    check_tensor,
    check_valid_lens_range,
    check_valid_lens_shape,
    read_bounds,
)

__all__ = [
    "DecodeOutput",
    "EncodeOutput",
    "GreedyDecode",
    "Seq2SeqOutput",
    "Seq2SeqTransformer",
    "eval_mode",
    "greedy_decode",
]


@dataclass(frozen=True)
class Seq2SeqOutput:
    """What :class:`Seq2SeqTransformer` returns (its teacher-forced forward).

    Attributes:
        logits: ``(B, T, V)`` scores over the vocabulary for each target position.
        encoder_weights: per encoder layer, ``(B, H, S, S)`` self-attention weights.
        decoder_self_weights: per decoder layer, ``(B, H, T, T)`` causal self-attention weights.
        cross_weights: per decoder layer, ``(B, H, T, S)`` cross-attention weights.
    """

    logits: torch.Tensor
    encoder_weights: tuple[torch.Tensor, ...] = ()
    decoder_self_weights: tuple[torch.Tensor, ...] = ()
    cross_weights: tuple[torch.Tensor, ...] = ()


@dataclass(frozen=True)
class EncodeOutput:
    """What :meth:`Seq2SeqTransformer.encode` returns.

    Attributes:
        memory: ``(B, S, D)`` the last encoder block's states, which the decoder reads.
        weights: per encoder layer, ``(B, H, S, S)`` self-attention weights.
    """

    memory: torch.Tensor
    weights: tuple[torch.Tensor, ...] = ()


@dataclass(frozen=True)
class DecodeOutput:
    """What :meth:`Seq2SeqTransformer.decode` returns (the whole decoder stack and its output
    layer; one block's result is :class:`~attnlib.core.transformer.DecoderBlock`'s own).

    Attributes:
        logits: ``(B, T, V)`` scores over the vocabulary for each target position.
        self_weights: per decoder layer, ``(B, H, T, T)`` causal self-attention weights.
        cross_weights: per decoder layer, ``(B, H, T, S)`` cross-attention weights.
    """

    logits: torch.Tensor
    self_weights: tuple[torch.Tensor, ...] = ()
    cross_weights: tuple[torch.Tensor, ...] = ()


@dataclass(frozen=True)
class GreedyDecode:
    """What :func:`greedy_decode` returns.

    Attributes:
        tokens: ``(B, max_len)`` the generated ids, PAD after each row's first EOS.
        cross_weights: per decoder layer, ``(B, H, max_len, S)`` cross-attention weights; row t
            is the attention used to produce token t.
    """

    tokens: torch.Tensor
    cross_weights: tuple[torch.Tensor, ...] = ()


class Seq2SeqTransformer(nn.Module):
    """A small encoder-decoder: embeddings + sinusoidal positions, N blocks each side, a linear
    output layer to the vocabulary (softmax is left to the loss / argmax).

    Args:
        config: a :class:`~attnlib.models.seq2seq.config.Seq2SeqConfig` (``Seq2SeqConfig()`` is
            notebook 08's); kept as ``model.config``.
    """

    def __init__(self, config: Seq2SeqConfig):
        super().__init__()
        if not isinstance(config, Seq2SeqConfig):
            raise TypeError(
                "config must be an attnlib.models.seq2seq.config.Seq2SeqConfig, got "
                f"{type(config).__name__}"
            )
        self.config = config
        self.vocab_size = config.vocab_size
        self.d_model = config.d_model
        self.max_positions = config.max_positions
        self.src_embed = nn.Embedding(config.vocab_size, config.d_model, padding_idx=PAD)
        self.tgt_embed = nn.Embedding(config.vocab_size, config.d_model, padding_idx=PAD)
        self.positions = PositionalEncoding(
            config.d_model, config.max_positions, dropout=config.dropout
        )
        block: dict[str, Any] = dict(dropout=config.dropout, norm_first=config.norm_first)
        self.encoder = nn.ModuleList(
            EncoderBlock(config.d_model, config.num_heads, config.d_ff, **block)
            for _ in range(config.num_encoder_layers)
        )
        self.decoder = nn.ModuleList(
            DecoderBlock(config.d_model, config.num_heads, config.d_ff, **block)
            for _ in range(config.num_decoder_layers)
        )
        self.output = nn.Linear(config.d_model, config.vocab_size)  # to one score per vocabulary id

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
    ) -> EncodeOutput:
        """``src (B, S)`` -> an :class:`EncodeOutput`: ``memory (B, S, D)`` and, per layer, the
        self-attention weights ``(B, H, S, S)``."""
        mask, empty = self._check_tokens("src", src, src_valid_lens, src.shape[1])
        x = self.positions(self.src_embed(src))  # (B, S, D)
        weights = []
        for block in self.encoder:  # checked once above; the blocks run unchecked
            x, w = cast(EncoderBlock, block)._forward(x, mask, rows_may_be_empty=empty)
            weights.append(w)
        return EncodeOutput(x, tuple(weights))

    def decode(
        self,
        tgt_in: torch.Tensor,
        memory: torch.Tensor,
        src_valid_lens: torch.Tensor | None = None,
    ) -> DecodeOutput:
        """``tgt_in (B, T)`` and ``memory (B, S, D)`` -> a :class:`DecodeOutput`: ``logits
        (B, T, V)`` and, per layer, the self- and cross-attention weights."""
        # Checked here, before any .shape is read: the blocks' _forward checks nothing, so the
        # dtype and device of memory must be compared with the parameters here too.
        check_tensor("tgt_in", tgt_in, ndim=2, floating=False)
        check_tensor("memory", memory, ndim=3)
        check_matches_parameters("Seq2SeqTransformer", self.output.weight, memory=memory)
        if memory.shape[-1] != self.d_model:
            raise ValueError(
                f"memory has width {memory.shape[-1]} but the block has d_model={self.d_model} "
                f"(memory shape {tuple(memory.shape)})"
            )
        if memory.shape[0] != tgt_in.shape[0]:
            raise ValueError(
                f"tgt_in has batch size {tgt_in.shape[0]} but memory has {memory.shape[0]} "
                f"(memory shape {tuple(memory.shape)})"
            )
        mask, empty = self._check_tokens("tgt_in", tgt_in, src_valid_lens, memory.shape[1])
        y = self.positions(self.tgt_embed(tgt_in))  # (B, T, D)
        self_ws, cross_ws = [], []
        for block in self.decoder:  # checked once above; the blocks run unchecked
            step = cast(DecoderBlock, block)._forward(y, memory, mask, rows_may_be_empty=empty)
            y = step.out
            self_ws.append(step.self_weights)
            cross_ws.append(step.cross_weights)
        return DecodeOutput(self.output(y), tuple(self_ws), tuple(cross_ws))  # logits (B, T, V)

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
        enc = self.encode(src, src_valid_lens)
        dec = self.decode(tgt_in, enc.memory, src_valid_lens)
        return Seq2SeqOutput(dec.logits, enc.weights, dec.self_weights, dec.cross_weights)


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
) -> GreedyDecode:
    """Decode by always taking the most likely next token (in eval mode, restored after).

    Args:
        model: a :class:`Seq2SeqTransformer`.
        src: ``(B, S)`` source ids.
        src_valid_lens: ``(B,)`` source lengths.
        max_len: how many tokens to generate (default ``S + 1``: the sequence and its EOS).

    Returns:
        A :class:`GreedyDecode`: ``tokens (B, max_len)``, the generated ids with PAD after the
        first EOS, and ``cross_weights`` per decoder layer ``(B, H, max_len, S)``, where row t is
        the attention used to produce token t.
    """
    if not isinstance(model, Seq2SeqTransformer):
        raise TypeError(f"model must be a Seq2SeqTransformer, got {type(model).__name__}")
    check_tensor("src", src, ndim=2, floating=False)
    max_len = src.shape[1] + 1 if max_len is None else check_positive_int("max_len", max_len)
    if max_len > model.max_positions:
        raise ValueError(
            f"max_len={max_len} exceeds the model's max_positions={model.max_positions}"
        )
    with eval_mode(model):
        memory = model.encode(src, src_valid_lens).memory  # (B, S, D)
        tgt = torch.full((src.shape[0], 1), BOS, dtype=torch.long, device=src.device)  # (B, 1)
        for _ in range(max_len):
            step = model.decode(tgt, memory, src_valid_lens)  # logits (B, t, V)
            tgt = torch.cat([tgt, step.logits[:, -1].argmax(-1, keepdim=True)], dim=1)
    tokens = tgt[:, 1:]  # (B, max_len)
    is_eos = (tokens == EOS).long()
    after_eos = is_eos.cumsum(1) - is_eos > 0  # (B, max_len): strictly past the first EOS
    # The causal decoder's last pass already holds the weights used for every position.
    return GreedyDecode(tokens.masked_fill(after_eos, PAD), step.cross_weights)
