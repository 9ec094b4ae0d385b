"""The settings of the decoder-only model (GPT), beside it, as nanoGPT's ``GPTConfig``: a frozen
dataclass checked when it is built, so a wrong size is an error naming the field, not a shape
error deep inside torch.
"""

from __future__ import annotations

from dataclasses import dataclass

from attnlib.core.feedforward import _check_activation
from attnlib.util._checks import (
    check_bool,
    check_config_sizes,
    check_number_above,
    check_positive_int,
    check_probability,
)

__all__ = ["GPTConfig", "POSITIONS"]

#: The position schemes: a learned ``(max_len, D)`` table (GPT-2's) or the fixed sinusoids of 07.
POSITIONS = ("learned", "sinusoidal")

# GPTConfig's fields that must be positive ints.
_SIZES = ("vocab_size", "max_len", "d_model", "num_heads", "num_layers")


@dataclass(frozen=True)
class GPTConfig:
    """The shape of :class:`~attnlib.models.gpt.model.GPT`.

    Attributes:
        vocab_size: V.
        max_len: the most positions a sequence (cache included) may have.
        d_model: D, the width of the residual stream.
        num_heads: H, the query heads (must divide ``d_model``; each has ``Dh = D / H``).
        num_layers: the number of blocks.
        num_kv_heads: the key/value heads: ``None`` means ``num_heads`` (multi-head attention);
            a divisor of ``num_heads`` gives grouped-query attention (GQA: query head h reads
            K/V head ``h // (num_heads // num_kv_heads)``); 1 is multi-query attention (MQA).
            Read the resolved number from :attr:`kv_heads`.
        attention_only: blocks without the FFN (and its LayerNorm): an attention-only model.
        d_ff: the FFN's hidden width; ``None`` means ``4 * d_model`` (read :attr:`ffn_width`).
        tie_embeddings: the unembedding is the token embedding transposed (GPT-2's choice).
        final_norm: a LayerNorm on the residual stream before the unembedding.
        positions: ``"learned"`` (a trained table, GPT-2's) or ``"sinusoidal"`` (fixed, as 07).
        activation: the FFN's ``"gelu"`` (exact erf form), ``"gelu_tanh"`` (its tanh
            approximation, GPT-2's checkpoints' ``"gelu_new"``) or ``"relu"``.
        layer_norm_eps: added to the variance in every LayerNorm.
        bias: biases in every linear layer and LayerNorm (the unembedding never has one).
        dropout: on the embeddings, the attention weights, inside the FFN and on each
            sub-layer's output, in ``[0, 1)`` (training mode only).
    """

    vocab_size: int = 64
    max_len: int = 64
    d_model: int = 64
    num_heads: int = 2
    num_layers: int = 2
    num_kv_heads: int | None = None
    attention_only: bool = False
    d_ff: int | None = None
    tie_embeddings: bool = True
    final_norm: bool = True
    positions: str = "learned"
    activation: str = "gelu"
    layer_norm_eps: float = 1e-5
    bias: bool = True
    dropout: float = 0.0

    def __post_init__(self):
        check_config_sizes(self, _SIZES)
        if self.num_kv_heads is not None:
            check_positive_int("num_kv_heads", self.num_kv_heads)
            if self.num_heads % self.num_kv_heads:
                raise ValueError(
                    f"num_kv_heads={self.num_kv_heads} must divide num_heads={self.num_heads} "
                    "(each K/V head serves an equal group of query heads)"
                )
        if self.d_ff is not None:
            check_positive_int("d_ff", self.d_ff)
        for name in ("attention_only", "tie_embeddings", "final_norm", "bias"):
            check_bool(name, getattr(self, name))
        if not isinstance(self.positions, str) or self.positions not in POSITIONS:
            raise ValueError(f"positions must be one of {POSITIONS}, got {self.positions!r}")
        _check_activation(self.activation)
        check_number_above("layer_norm_eps", self.layer_norm_eps, 0.0)
        check_probability("dropout", self.dropout)

    @property
    def kv_heads(self) -> int:
        """The number of key/value heads (``num_kv_heads``, or ``num_heads`` when it is None)."""
        return self.num_heads if self.num_kv_heads is None else self.num_kv_heads

    @property
    def group_size(self) -> int:
        """g, the query heads that share one K/V head (1 for multi-head attention)."""
        return self.num_heads // self.kv_heads

    @property
    def head_dim(self) -> int:
        """Dh = D / H, the width of each head (queries, keys and values alike)."""
        return self.d_model // self.num_heads

    @property
    def ffn_width(self) -> int:
        """The FFN's hidden width (``d_ff``, or ``4 * d_model`` when it is None)."""
        return 4 * self.d_model if self.d_ff is None else self.d_ff
