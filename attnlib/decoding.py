"""Greedy decoding, step by step: which tokens came out and where each step looked.

:func:`trace_greedy_decoding` decodes one source sequence with a trained
:class:`~attnlib.seq2seq.Seq2SeqTransformer` and returns every attention map the decoder used
along the way: its causal self-attention ``(T, T)`` and its cross-attention ``(T, S)`` per layer
and head. Because the decoder is causal, row t of a teacher-forced pass over the finished output
equals what step t saw when it was decoded (later tokens cannot change it, C36), so one pass gives
the whole trace; the tests check this against decoding one step at a time.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ._checks import check_tensor
from .seq2seq import BOS, EOS, NUM_SPECIAL, PAD, Seq2SeqTransformer, greedy_decode

__all__ = ["DecodingTrace", "trace_greedy_decoding", "token_labels"]


@dataclass
class DecodingTrace:
    """One greedily decoded sequence and the attention used at every step.

    Attributes:
        src: ``(S,)`` the source token ids (real tokens only, no padding).
        tgt_in: ``(T,)`` what the decoder read: ``[BOS, y_1, ..., y_{T-1}]``.
        tokens: ``(T,)`` what it wrote: ``[y_1, ..., y_{T-1}, y_T]`` (normally ending with EOS).
        self_weights: per decoder layer, ``(H, T, T)`` causal self-attention; row t is step t.
        cross_weights: per decoder layer, ``(H, T, S)`` cross-attention; row t is step t.
    """

    src: torch.Tensor
    tgt_in: torch.Tensor
    tokens: torch.Tensor
    self_weights: list[torch.Tensor]
    cross_weights: list[torch.Tensor]

    @property
    def num_steps(self) -> int:
        """T, the number of decoding steps (tokens written)."""
        return int(self.tokens.shape[0])


@torch.no_grad()
def trace_greedy_decoding(model: Seq2SeqTransformer, src: torch.Tensor, *,
                          max_len: int | None = None) -> DecodingTrace:
    """Greedy-decode one source sequence and collect the decoder's attention at every step.

    Args:
        model: a :class:`~attnlib.seq2seq.Seq2SeqTransformer` (eval mode is used, then restored).
        src: ``(S,)`` source token ids with no padding (or ``(1, S)``), on the model's device.
        max_len: decoding steps T (default ``S + 1``: the sequence and its EOS).

    Returns:
        A :class:`DecodingTrace` (tensors on the model's device).
    """
    if not isinstance(model, Seq2SeqTransformer):
        raise TypeError(f"model must be a Seq2SeqTransformer, got {type(model).__name__}")
    check_tensor("src", src, ndim_min=1, floating=False)
    if src.dim() == 2:
        if src.shape[0] != 1:
            raise ValueError(f"src must be one sequence (S,) or (1, S), got shape {tuple(src.shape)}")
        src = src[0]
    if src.dim() != 1 or src.shape[0] < 1:
        raise ValueError(f"src must be one non-empty sequence (S,), got shape {tuple(src.shape)}")
    if src.is_floating_point() or src.dtype == torch.bool:
        raise TypeError(f"src must hold integer token ids, got {src.dtype}")
    if bool((src == PAD).any()):
        raise ValueError("src must hold real tokens only (no PAD); cut it to its valid length")
    was_training = model.training
    model.eval()
    try:
        batch = src.unsqueeze(0)  # (1, S)
        tokens, _ = greedy_decode(model, batch, max_len=max_len)  # (1, T)
        tgt_in = torch.cat([torch.full_like(tokens[:, :1], BOS), tokens[:, :-1]], dim=1)  # (1, T)
        memory, _ = model.encode(batch)  # (1, S, D)
        _, self_ws, cross_ws = model.decode(tgt_in, memory)  # per layer (1, H, T, T), (1, H, T, S)
    finally:
        model.train(was_training)
    return DecodingTrace(src=src.clone(), tgt_in=tgt_in[0], tokens=tokens[0],
                         self_weights=[w[0] for w in self_ws], cross_weights=[w[0] for w in cross_ws])


def token_labels(tokens) -> list[str]:
    """Readable labels for token ids: symbols as letters ``a, b, ...``; ``<s>``, ``</s>``, ``·`` (PAD).

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
