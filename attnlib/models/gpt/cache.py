"""The key/value cache of a decoder, and how many numbers it holds.

When a decoder writes token t+1 it needs, in every layer, the keys and values of tokens 0..t.
Those do not change once computed (causal attention: a token's key depends only on the tokens
before it), so they are kept and each new token adds one key and one value per layer and per K/V
head. The cache therefore holds ``2 · layers · tokens · kv_heads · Dh`` numbers per sequence.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from attnlib.util._checks import check_int, check_positive_int

__all__ = ["KVCache", "CacheShape", "LLAMA2_7B", "LLAMA3_8B", "kv_cache_numbers"]


_SHAPE_NAMES = ("batch_size", "num_kv_heads", "length", "head_dim")  # (B, Hkv, S, Dh)


@dataclass(frozen=True, eq=False)
class KVCache:
    """Every layer's keys and values so far, as :class:`~attnlib.models.gpt.model.GPT` returns it.

    A model call never changes a cache it is given: it returns a new one (the old tensors
    followed by the new tokens' keys and values), so an old cache can be reused.

    Attributes:
        keys: per layer, ``(B, Hkv, S, Dh)``: the keys of the S tokens seen so far.
        values: per layer, ``(B, Hkv, S, Dh)``.
        batch_size, num_kv_heads, length, head_dim: B, Hkv, S (the number of tokens held,
            which is the next position) and Dh, read from the checked shape.
    """

    keys: tuple[torch.Tensor, ...]
    values: tuple[torch.Tensor, ...]
    batch_size: int = field(init=False)
    num_kv_heads: int = field(init=False)
    length: int = field(init=False)
    head_dim: int = field(init=False)

    def __post_init__(self):
        if not isinstance(self.keys, tuple) or not isinstance(self.values, tuple):
            raise TypeError(
                "keys and values must be tuples of tensors (one per layer), got "
                f"{type(self.keys).__name__} and {type(self.values).__name__}"
            )
        if len(self.keys) != len(self.values) or not self.keys:
            raise ValueError(
                f"keys and values must hold one tensor per layer (at least one), got "
                f"{len(self.keys)} keys and {len(self.values)} values"
            )
        first = self.keys[0]
        for kind, tensors in (("keys", self.keys), ("values", self.values)):
            for layer, t in enumerate(tensors):
                if not isinstance(t, torch.Tensor) or t.dim() != 4:
                    got = tuple(t.shape) if isinstance(t, torch.Tensor) else type(t).__name__
                    raise ValueError(f"{kind}[{layer}] must be a (B, Hkv, S, Dh) tensor, got {got}")
                if t.shape != first.shape or t.dtype != first.dtype or t.device != first.device:
                    raise ValueError(
                        f"{kind}[{layer}] has shape {tuple(t.shape)} ({t.dtype}, {t.device}) "
                        f"but keys[0] has {tuple(first.shape)} ({first.dtype}, {first.device}); "
                        "every layer's keys and values must match"
                    )
        for name, size in zip(_SHAPE_NAMES, first.shape, strict=True):
            object.__setattr__(self, name, size)  # frozen: set once, from the checked shape

    @property
    def num_layers(self) -> int:
        return len(self.keys)

    def numel(self) -> int:
        """How many numbers the cache holds: the sum of its tensors' ``numel``."""
        return sum(t.numel() for t in (*self.keys, *self.values))

    def nbytes(self) -> int:
        """Its size in bytes (``numel`` times the element size)."""
        return sum(t.numel() * t.element_size() for t in (*self.keys, *self.values))


@dataclass(frozen=True)
class CacheShape:
    """What the cache's size depends on, for a model we only compute with (never build).

    Attributes:
        name: how tables call it.
        num_layers: blocks.
        num_heads: query heads.
        num_kv_heads: key/value heads (``num_heads`` for multi-head attention).
        head_dim: Dh.
    """

    name: str
    num_layers: int
    num_heads: int
    num_kv_heads: int
    head_dim: int

    def __post_init__(self):
        for name in ("num_layers", "num_heads", "num_kv_heads", "head_dim"):
            check_positive_int(name, getattr(self, name))
        if self.num_heads % self.num_kv_heads:
            raise ValueError(
                f"num_kv_heads={self.num_kv_heads} must divide num_heads={self.num_heads}"
            )

    @property
    def kv_heads(self) -> int:
        return self.num_kv_heads

    @property
    def d_model(self) -> int:
        return self.num_heads * self.head_dim


#: Llama 2 7B (Touvron et al. 2023): 32 layers, D = 4096, 32 heads of 128, multi-head attention.
LLAMA2_7B = CacheShape("Llama-2-7B", num_layers=32, num_heads=32, num_kv_heads=32, head_dim=128)
#: Llama 3 8B (Meta 2024): 32 layers, 32 query heads of 128 sharing 8 K/V heads (GQA, g = 4).
LLAMA3_8B = CacheShape("Llama-3-8B", num_layers=32, num_heads=32, num_kv_heads=8, head_dim=128)


def kv_cache_numbers(cfg, tokens: int, batch: int = 1) -> int:
    """The numbers a KV cache holds: ``2 · layers · tokens · kv_heads · Dh · batch``.

    The 2 is one key and one value; ``kv_heads · Dh`` is the width of the keys (``D`` for
    multi-head attention, ``D / g`` with g query heads per K/V head).

    Args:
        cfg: a :class:`~attnlib.models.gpt.config.GPTConfig` or a :class:`CacheShape`.
        tokens: the tokens cached per sequence (>= 0).
        batch: the sequences (>= 1).

    Returns:
        A Python int (multiply by the element size for bytes: 2 in float16).
    """
    if not hasattr(cfg, "kv_heads") or not hasattr(cfg, "num_layers"):
        raise TypeError(f"cfg must be a GPTConfig or a CacheShape, got {type(cfg).__name__}")
    check_int("tokens", tokens, min=0)
    check_positive_int("batch", batch)
    return 2 * cfg.num_layers * tokens * cfg.kv_heads * cfg.head_dim * batch
