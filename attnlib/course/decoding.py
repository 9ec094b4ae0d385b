"""Greedy decoding, step by step: which tokens came out and where each step looked.
:func:`trace_greedy_decoding` decodes one source sequence with a trained
:class:`~attnlib.models.seq2seq.model.Seq2SeqTransformer` and returns every attention map the
decoder used along the way: its causal self-attention ``(T, T)`` and its cross-attention ``(T, S)``
per layer and head. Because the decoder is causal, row t of a teacher-forced pass over the finished
output equals what step t saw when it was decoded (later tokens cannot change it, C36), so one pass
gives the whole trace; the tests check this against decoding one step at a time.

:func:`anti_diagonal_mass` is the number that says a reversal model has learned its alignment.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from attnlib.models.seq2seq.model import Seq2SeqTransformer, eval_mode, greedy_decode
from attnlib.models.seq2seq.toy_tasks import BOS, PAD
from attnlib.util._checks import check_tensor

__all__ = ["DecodingTrace", "trace_greedy_decoding", "anti_diagonal_mass"]


@dataclass(frozen=True)
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
    self_weights: tuple[torch.Tensor, ...]
    cross_weights: tuple[torch.Tensor, ...]

    @property
    def num_steps(self) -> int:
        """T, the number of decoding steps (tokens written)."""
        return int(self.tokens.shape[0])


@torch.no_grad()
def trace_greedy_decoding(
    model: Seq2SeqTransformer, src: torch.Tensor, *, max_len: int | None = None
) -> DecodingTrace:
    """Greedy-decode one source sequence and collect the decoder's attention at every step.

    Args:
        model: a :class:`~attnlib.models.seq2seq.model.Seq2SeqTransformer` (eval mode is used,
            then restored).
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
            raise ValueError(
                f"src must be one sequence (S,) or (1, S), got shape {tuple(src.shape)}"
            )
        src = src[0]
    if src.dim() != 1 or src.shape[0] < 1:
        raise ValueError(f"src must be one non-empty sequence (S,), got shape {tuple(src.shape)}")
    if src.is_floating_point() or src.dtype == torch.bool:
        raise TypeError(f"src must hold integer token ids, got {src.dtype}")
    if bool((src == PAD).any()):
        raise ValueError("src must hold real tokens only (no PAD); cut it to its valid length")
    batch = src.unsqueeze(0)  # (1, S)
    tokens = greedy_decode(model, batch, max_len=max_len).tokens  # (1, T)
    tgt_in = torch.cat([torch.full_like(tokens[:, :1], BOS), tokens[:, :-1]], dim=1)  # (1, T)
    with eval_mode(model):
        out = model(batch, tgt_in)  # per layer (1, H, T, T) and (1, H, T, S) weights
    return DecodingTrace(
        src=src.clone(),
        tgt_in=tgt_in[0],
        tokens=tokens[0],
        self_weights=tuple(w[0] for w in out.decoder_self_weights),
        cross_weights=tuple(w[0] for w in out.cross_weights),
    )


def anti_diagonal_mass(
    weights: torch.Tensor,
    src_valid_lens: torch.Tensor | None = None,
) -> float:
    """Average cross-attention weight that output t puts on source position ``n - 1 - t``.

    For reversal, output token t is the source token ``n - 1 - t`` (n the source length), so
    an aligned model puts its mass on that anti-diagonal (C40). Rows ``t < n`` are averaged (the
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
        raise ValueError(
            f"src_valid_lens has {src_valid_lens.shape[0]} rows but weights has batch {batch}"
        )
    lens = src_valid_lens.to(weights.device).long()
    if int(lens.min()) < 1 or int(lens.max()) > min(num_keys, num_rows):
        raise ValueError(
            f"src_valid_lens must be in [1, {min(num_keys, num_rows)}], got {lens.tolist()}"
        )
    t = torch.arange(num_rows, device=weights.device)  # (T,)
    target = (lens.unsqueeze(1) - 1 - t).clamp(min=0)  # (B, T)
    picked = weights.gather(2, target.unsqueeze(-1)).squeeze(-1)  # (B, T)
    rows = t < lens.unsqueeze(1)  # (B, T): the real output positions
    return float(picked[rows].float().mean())
