"""What a new token costs a decoder, with and without the KV cache, and what the cache holds.

Writing token ``p + 1`` after a prefix of p tokens:

- with the cache, only the new token goes through the model; its query meets ``S = p + 1`` keys,
  so the work per token is a constant (the projections, the FFN, the unembedding) plus a term
  linear in p (the scores and the mix);
- without it, all ``T = p + 1`` tokens are recomputed: T times the constant, plus ``T²`` for
  the scores and the mix, so the work of a step grows quadratically.

The closed forms below count the multiply-adds of the matrix products as 2 FLOPs each (what
``torch.utils.flop_counter.FlopCounterMode`` counts; softmax, LayerNorm and additions are not
counted there, nor here). :func:`measured_step_flops` counts a real call with that counter.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
from torch.utils.flop_counter import FlopCounterMode

from attnlib.models.gpt.cache import LLAMA2_7B, LLAMA3_8B, CacheShape, kv_cache_numbers
from attnlib.models.gpt.config import GPTConfig
from attnlib.models.gpt.model import GPT
from attnlib.util._checks import check_bool, check_int, check_positive_int

__all__ = [
    "count_flops",
    "step_flops",
    "measured_step_flops",
    "DecodeCostRow",
    "decode_cost_table",
    "CacheSizeRow",
    "cache_size_table",
]


def count_flops(fn: Callable[[], object]) -> int:
    """The FLOPs ``fn()`` performs, as ``FlopCounterMode`` counts them (matrix products only)."""
    with FlopCounterMode(display=False) as counter:
        fn()
    return int(counter.get_total_flops())


def step_flops(cfg: GPTConfig, prefix: int, *, use_cache: bool, batch: int = 1) -> int:
    """The closed form: FLOPs of the call that gives the next token's logits after ``prefix``
    tokens.

    With D the width, ``Dkv = kv_heads · Dh`` the width of the keys, F the FFN width (0 when
    attention-only), V the vocabulary, L the layers and ``S = prefix + 1``:

    - one token per layer: ``2·D·D`` (W_Q) + ``2·2·D·Dkv`` (W_K, W_V) + ``2·D·D`` (W_O)
      + ``2·2·D·F`` (the FFN); and ``2·D·V`` for the unembedding;
    - with the cache (one new token): that once, plus ``2·2·S·D`` per layer (the scores
      ``q kᵀ`` and the mix ``w v`` of H heads of width Dh, ``H·Dh = D``): linear in the prefix;
    - without it: that for each of ``T = S`` tokens, plus ``2·2·T·T·D`` per layer (every
      query against every key, the masked half included): quadratic.

    Args:
        cfg: the model's config.
        prefix: p >= 0, the tokens before the new one.
        use_cache: the cached step (one token in) or the full recomputation (p + 1 tokens in).
        batch: sequences decoded together.

    Returns:
        A Python int, equal to :func:`measured_step_flops` on a ``GPT(cfg)``.
    """
    if not isinstance(cfg, GPTConfig):
        raise TypeError(f"cfg must be a GPTConfig, got {type(cfg).__name__}")
    check_int("prefix", prefix, min=0)
    check_bool("use_cache", use_cache)
    check_positive_int("batch", batch)
    d, v, layers = cfg.d_model, cfg.vocab_size, cfg.num_layers
    d_kv = cfg.kv_heads * cfg.head_dim
    ffn = 0 if cfg.attention_only else cfg.ffn_width
    per_token_layer = 2 * d * d + 2 * 2 * d * d_kv + 2 * d * d + 2 * 2 * d * ffn
    per_token = layers * per_token_layer + 2 * d * v
    keys = prefix + 1
    if use_cache:
        return batch * (per_token + layers * 2 * 2 * keys * d)
    tokens = keys
    return batch * (tokens * per_token + layers * 2 * 2 * tokens * tokens * d)


def measured_step_flops(model: GPT, prefix: int, *, use_cache: bool, batch: int = 1) -> int:
    """:func:`step_flops` counted on a real call of ``model`` (the prefill, with the cache, is
    run before the counter starts: only the new token's step is counted).

    The tokens are ``0, 1, 2, ...`` mod V (the count does not depend on them).
    """
    if not isinstance(model, GPT):
        raise TypeError(f"model must be an attnlib.models.gpt.GPT, got {type(model).__name__}")
    check_int("prefix", prefix, min=0)
    check_bool("use_cache", use_cache)
    check_positive_int("batch", batch)
    cfg = model.config
    if prefix + 1 > cfg.max_len:
        raise ValueError(f"prefix + 1 = {prefix + 1} positions exceed max_len={cfg.max_len}")
    tokens = torch.arange(prefix + 1, device=model.device) % cfg.vocab_size
    ids = tokens.expand(batch, prefix + 1)  # (B, p + 1)
    with torch.no_grad():
        if not use_cache:
            return count_flops(lambda: model(ids))
        cache = model(ids[:, :prefix], use_cache=True).cache if prefix else None
        return count_flops(lambda: model(ids[:, prefix:], cache=cache))


@dataclass(frozen=True)
class DecodeCostRow:
    """One row of :func:`decode_cost_table`: writing the token after ``prefix`` tokens.

    Attributes:
        prefix: p, the tokens already there.
        flops_cached: the step's FLOPs with the cache (counted).
        flops_uncached: the step's FLOPs recomputing the prefix (counted).
        cache_numbers: the numbers the cache holds after the step (p + 1 tokens).
    """

    prefix: int
    flops_cached: int
    flops_uncached: int
    cache_numbers: int


def decode_cost_table(model: GPT, prefixes: Sequence[int]) -> list[DecodeCostRow]:
    """For each prefix length, the FLOPs of the next step with and without the cache, counted by
    ``FlopCounterMode`` (:func:`measured_step_flops`), and the cache's size."""
    rows = []
    for p in prefixes:
        rows.append(
            DecodeCostRow(
                prefix=p,
                flops_cached=measured_step_flops(model, p, use_cache=True),
                flops_uncached=measured_step_flops(model, p, use_cache=False),
                cache_numbers=kv_cache_numbers(model.config, p + 1),
            )
        )
    return rows


@dataclass(frozen=True)
class CacheSizeRow:
    """One row of :func:`cache_size_table`.

    Attributes:
        name: the model.
        num_layers, num_kv_heads, head_dim: what the size depends on.
        group_size: query heads per K/V head (1: multi-head attention).
        tokens, batch: what is cached.
        numbers: ``2 · layers · tokens · kv_heads · Dh · batch``.
        bytes: ``numbers · bytes_per_number``.
    """

    name: str
    num_layers: int
    num_kv_heads: int
    head_dim: int
    group_size: int
    tokens: int
    batch: int
    numbers: int
    bytes: int


def cache_size_table(
    shapes: Sequence[CacheShape] = (LLAMA2_7B, LLAMA3_8B),
    tokens: int = 4096,
    *,
    batch: int = 1,
    bytes_per_number: int = 2,
) -> list[CacheSizeRow]:
    """The KV cache of real models, computed (never run): by default Llama-2-7B (MHA) and
    Llama-3-8B (GQA, 8 K/V heads for 32 query heads), 4096 tokens, float16 (2 bytes)."""
    check_int("tokens", tokens, min=0)
    check_positive_int("bytes_per_number", bytes_per_number)
    rows = []
    for shape in shapes:
        if not isinstance(shape, CacheShape):
            raise TypeError(f"shapes must hold CacheShape s, got {type(shape).__name__}")
        numbers = kv_cache_numbers(shape, tokens, batch)
        rows.append(
            CacheSizeRow(
                name=shape.name,
                num_layers=shape.num_layers,
                num_kv_heads=shape.num_kv_heads,
                head_dim=shape.head_dim,
                group_size=shape.num_heads // shape.num_kv_heads,
                tokens=tokens,
                batch=batch,
                numbers=numbers,
                bytes=numbers * bytes_per_number,
            )
        )
    return rows
