"""A decoder-only Transformer (GPT): ``config`` (the settings), ``model`` (the model, built from
attnlib's attention, LayerNorm and FFN), ``cache`` (the KV cache and its size) and ``gpt2`` (the
weight conversion from transformers' GPT-2, which the tests compare against)."""

from attnlib.models.gpt.cache import (
    LLAMA2_7B,
    LLAMA3_8B,
    CacheShape,
    KVCache,
    kv_cache_numbers,
)
from attnlib.models.gpt.config import GPTConfig
from attnlib.models.gpt.model import GPT, CausalSelfAttention, GPTBlock, GPTOutput

__all__ = [
    "GPTConfig",
    "GPT",
    "GPTOutput",
    "GPTBlock",
    "CausalSelfAttention",
    "KVCache",
    "CacheShape",
    "LLAMA2_7B",
    "LLAMA3_8B",
    "kv_cache_numbers",
]
