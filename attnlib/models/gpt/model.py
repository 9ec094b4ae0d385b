"""A decoder-only Transformer (GPT) built from the course's own blocks, with a KV cache and GQA.

Pre-LN blocks, as GPT-2::

    x = tok_emb[ids] + pos_emb[positions]
    x = x + Attn(LN1(x))          # causal self-attention (the mask of 05)
    x = x + FFN(LN2(x))           # absent with attention_only=True
    logits = LN_f(x) @ W_U        # W_U = tok_emb.weight.T when the embeddings are tied

The attention weights come from :func:`~attnlib.core.attention.dot_product_attention`, the
LayerNorms from :func:`~attnlib.core.transformer.layer_norm`, the FFN is
:class:`~attnlib.core.transformer.FeedForward`. With a :class:`~attnlib.models.gpt.cache.KVCache`
the queries are the new tokens only, the keys and values are the cached ones followed by the new
ones, and new token i (at position ``past + i``) sees keys ``0 .. past + i``: the last rows of the
full causal mask.

    cfg = GPTConfig(vocab_size=64, max_len=64, d_model=64, num_heads=2, num_layers=2)
    model = GPT(cfg)
    out = model(ids)                              # .logits (B, T, V), .hidden, .attentions
    ids_out, step_logits = model.generate(ids, 8)  # greedy, with the cache
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import cast

import torch
from torch import nn

from attnlib.core.multihead import check_layer_head_mask
from attnlib.core.positional import sinusoidal_encoding
from attnlib.core.transformer import FeedForward, layer_norm
from attnlib.models.gpt.attention import (
    CausalSelfAttention,
    HeadKeep,
    LayerPast,
    LayerStep,
)
from attnlib.models.gpt.cache import KVCache
from attnlib.models.gpt.config import GPTConfig
from attnlib.util._checks import check_bool, check_int, read_bounds

__all__ = [
    "GPTOutput",
    "CausalSelfAttention",
    "GPTBlock",
    "SinusoidalPositions",
    "GPT",
]


@dataclass(frozen=True, eq=False)
class GPTOutput:
    """What one :class:`GPT` forward pass returns.

    The flags and fields match :class:`~attnlib.models.minilm.EncoderOutput`'s:
    ``output_attentions`` and ``output_hidden_states``, both on by default, and an empty tuple
    for a field turned off.

    Attributes:
        logits: ``(B, T, V)``: row t scores the token that follows position t.
        hidden: ``num_layers + 1`` tensors ``(B, T, D)``: the residual stream entering each
            block (``hidden[0]`` is the embeddings), then the stream after the last block
            (before the final LayerNorm); empty with ``output_hidden_states=False``. Also
            readable as :attr:`hidden_states`, MiniLM's name.
        attentions: per layer ``(B, H, T, S)`` weights (``S`` = cached + new tokens); empty
            with ``output_attentions=False``.
        cache: the :class:`KVCache` after this call (``use_cache=True``), else ``None``.
    """

    logits: torch.Tensor
    hidden: tuple[torch.Tensor, ...]
    attentions: tuple[torch.Tensor, ...] = ()
    cache: KVCache | None = None

    @property
    def hidden_states(self) -> tuple[torch.Tensor, ...]:
        """:attr:`hidden`, by the name MiniLM's :class:`EncoderOutput` uses for every layer."""
        return self.hidden


def _norm(norm: nn.LayerNorm, x: torch.Tensor) -> torch.Tensor:
    """Our :func:`layer_norm` with the parameters an ``nn.LayerNorm`` holds."""
    return layer_norm(x, norm.weight, norm.bias, norm.eps)


class GPTBlock(nn.Module):
    """A Pre-LN decoder block without cross-attention: ``x + Attn(LN1(x))``, then
    ``x + FFN(LN2(x))`` (no FFN, no ``ln2`` when ``attention_only``)."""

    def __init__(self, config: GPTConfig):
        super().__init__()
        d, eps, bias = config.d_model, config.layer_norm_eps, config.bias
        self.ln1 = nn.LayerNorm(d, eps=eps, bias=bias)
        self.attn = CausalSelfAttention(config)
        self.ln2: nn.LayerNorm | None = None
        self.ffn: FeedForward | None = None
        if not config.attention_only:
            self.ln2 = nn.LayerNorm(d, eps=eps, bias=bias)
            self.ffn = FeedForward(
                d,
                config.ffn_width,
                dropout=config.dropout,
                bias=bias,
                activation=config.activation,
            )
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, x: torch.Tensor, past: LayerPast = None, keep: HeadKeep = None) -> LayerStep:
        """``x (B, T, D)`` -> ``(x (B, T, D), weights (B, H, T, S), keys, values)`` (see
        :meth:`CausalSelfAttention.forward`); unchecked."""
        a, weights, k, v = self.attn(_norm(self.ln1, x), past, keep)
        x = x + self.dropout(a)
        if self.ffn is not None:
            x = x + self.dropout(self.ffn._forward(_norm(cast(nn.LayerNorm, self.ln2), x)))
        return x, weights, k, v


class SinusoidalPositions(nn.Module):
    """The fixed table of 07 in the place of a learned one: ``weight`` is a ``(max_len, D)``
    non-persistent buffer (no parameter, not in the state dict)."""

    weight: torch.Tensor

    def __init__(self, max_len: int, d_model: int):
        super().__init__()
        # float64, cast in GPT.forward: a .double() model then gets exact positions.
        self.register_buffer(
            "weight", sinusoidal_encoding(max_len, d_model, dtype=torch.float64), persistent=False
        )


class GPT(nn.Module):
    """A decoder-only language model: embeddings, causal Pre-LN blocks, a final LayerNorm and
    an unembedding (tied to the token embedding or its own).

    The weights start as GPT-2's (nanoGPT's): every linear and embedding weight drawn from
    N(0, 0.02²), biases 0, and each block's two output projections (``attn.w_o`` and
    ``ffn.linear2``) N(0, (0.02 / sqrt(2 · num_layers))²); the caller seeds.

    Args:
        config: a :class:`~attnlib.models.gpt.config.GPTConfig`, kept as ``model.config``.

    Attributes:
        tok_emb: ``nn.Embedding(V, D)``.
        pos_emb: ``nn.Embedding(max_len, D)`` or a :class:`SinusoidalPositions`; both have a
            ``(max_len, D)`` ``weight``.
        blocks: the :class:`GPTBlock` s; ``blocks[l].attn.head_weights(h)`` gives head h's
            matrices.
        ln_f: the final ``nn.LayerNorm`` (None with ``final_norm=False``).
        unembed: ``nn.Linear(D, V, bias=False)``, or None when tied (see :meth:`unembedding`).
    """

    def __init__(self, config: GPTConfig):
        super().__init__()
        if not isinstance(config, GPTConfig):
            raise TypeError(
                f"config must be an attnlib.models.gpt.GPTConfig, got {type(config).__name__}"
            )
        self.config = config
        d = config.d_model
        self.tok_emb = nn.Embedding(config.vocab_size, d)
        self.pos_emb: nn.Module
        if config.positions == "learned":
            self.pos_emb = nn.Embedding(config.max_len, d)
        else:
            self.pos_emb = SinusoidalPositions(config.max_len, d)
        self.dropout = nn.Dropout(config.dropout)
        self.blocks = nn.ModuleList(GPTBlock(config) for _ in range(config.num_layers))
        self.ln_f = (
            nn.LayerNorm(d, eps=config.layer_norm_eps, bias=config.bias)
            if config.final_norm
            else None
        )
        self.unembed = (
            None if config.tie_embeddings else nn.Linear(d, config.vocab_size, bias=False)
        )
        self._init_weights()

    def _init_weights(self) -> None:
        std = 0.02
        with torch.no_grad():
            for module in self.modules():
                if isinstance(module, (nn.Linear, nn.Embedding)):
                    module.weight.normal_(0.0, std)
                    if isinstance(module, nn.Linear) and module.bias is not None:
                        module.bias.zero_()
            for block in self.blocks:
                block = cast(GPTBlock, block)
                outs = [block.attn.w_o] + ([] if block.ffn is None else [block.ffn.linear2])
                for lin in outs:
                    lin.weight.normal_(0.0, std / math.sqrt(2 * self.config.num_layers))

    @property
    def device(self) -> torch.device:
        return self.tok_emb.weight.device

    @property
    def dtype(self) -> torch.dtype:
        return self.tok_emb.weight.dtype

    def unembedding(self) -> torch.Tensor:
        """W_U ``(D, V)``: ``logits = LN_f(x) @ W_U`` (a view; the token embedding transposed
        when tied)."""
        weight = self.tok_emb.weight if self.unembed is None else self.unembed.weight
        return weight.T  # (D, V)

    def forward(
        self,
        ids: torch.Tensor,
        head_mask: torch.Tensor | None = None,
        cache: KVCache | None = None,
        use_cache: bool = False,
        output_attentions: bool = True,
        output_hidden_states: bool = True,
    ) -> GPTOutput:
        """Next-token logits for every position of ``ids`` (after the cached tokens, if any).

        Args:
            ids: ``(B, T)`` int64 (or int32) token ids in ``[0, vocab_size)``; after a cache
                of P tokens they sit at positions ``P .. P + T - 1`` (``P + T <= max_len``).
            head_mask: optional ``(num_layers, num_heads)`` or ``(B, num_layers, num_heads)``,
                floating or boolean: head h of layer l has its output multiplied by
                ``head_mask[..., l, h]`` before W_O (0 or False removes it: an ablation), as in
                notebook 10. The weights it returns are unchanged (a removed head still looks).
            cache: a :class:`KVCache` of the earlier tokens (same batch), or None. It is not
                changed.
            use_cache: return the cache extended by these tokens in ``out.cache``.
            output_attentions, output_hidden_states: keep every layer's attention weights
                (``out.attentions``) and residual streams (``out.hidden``) in the result, the
                default, as MiniLM's ``forward``; ``False`` leaves that field an empty tuple, so
                each layer's ``(B, H, T, S)`` weights are freed once the next layer has run.

        Returns:
            A :class:`GPTOutput`.
        """
        check_bool("use_cache", use_cache)
        check_bool("output_attentions", output_attentions)
        check_bool("output_hidden_states", output_hidden_states)
        past = self._check_inputs(ids, head_mask, cache)
        batch, length = ids.shape
        positions = torch.arange(past, past + length, device=ids.device)  # (T,)
        pos = cast(torch.Tensor, self.pos_emb.weight)[positions].to(self.dtype)  # (T, D)
        x = self.dropout(self.tok_emb(ids) + pos)  # (B, T, D)
        hidden, attentions, keys, values = [], [], [], []
        for layer, block in enumerate(self.blocks):
            keep = None if head_mask is None else head_mask[..., layer, :]  # (H,) or (B, H)
            layer_past = None if cache is None else (cache.keys[layer], cache.values[layer])
            if output_hidden_states:
                hidden.append(x)
            x, weights, k, v = block(x, layer_past, keep)
            if output_attentions:
                attentions.append(weights)
            if use_cache:
                keys.append(k)
                values.append(v)
            del weights, k, v
        if output_hidden_states:
            hidden.append(x)
        if self.ln_f is not None:
            x = _norm(self.ln_f, x)
        logits = x @ self.unembedding()  # (B, T, V)
        return GPTOutput(
            logits=logits,
            hidden=tuple(hidden),
            attentions=tuple(attentions),
            cache=KVCache(tuple(keys), tuple(values)) if use_cache else None,
        )

    @torch.no_grad()
    def generate(
        self, ids: torch.Tensor, max_new_tokens: int, use_cache: bool = True
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Greedy decoding: append the most likely next token ``max_new_tokens`` times.

        With the cache, the prompt is run once and then each new token alone; without it, the
        whole sequence so far is recomputed at every step. Both give the same tokens and logits:
        the loop runs in eval mode (no dropout) and restores the model's mode afterwards.

        Args:
            ids: ``(B, T)`` the prompt.
            max_new_tokens: n >= 1; the model sees ``T + n - 1 <= max_len`` positions.
            use_cache: keep the keys and values between steps.

        Returns:
            ``(ids (B, T + n), step_logits (B, n, V))``: step i's logits are those of the last
            position, from which token ``T + i`` was taken (argmax; the lowest id on a tie).
        """
        check_int("max_new_tokens", max_new_tokens, min=1)
        check_bool("use_cache", use_cache)
        self._check_ids(ids, 0)
        seen = ids.shape[1] + max_new_tokens - 1
        if seen > self.config.max_len:
            raise ValueError(
                f"ids have T={ids.shape[1]} tokens and max_new_tokens={max_new_tokens}: the "
                f"model would see T + max_new_tokens - 1 = {seen} positions, more than "
                f"max_len={self.config.max_len}"
            )
        steps = []
        cache: KVCache | None = None
        feed = ids
        # Dropout would draw different masks with and without the cache, so the promise that
        # both give the same logits holds only in eval mode; the caller's mode comes back after.
        was_training = self.training
        self.eval()
        try:
            for _ in range(max_new_tokens):
                out = self(
                    feed,
                    cache=cache,
                    use_cache=use_cache,
                    output_attentions=False,
                    output_hidden_states=False,
                )
                last = out.logits[:, -1]  # (B, V)
                steps.append(last)
                token = last.argmax(dim=-1, keepdim=True)  # (B, 1)
                ids = torch.cat([ids, token], dim=1)
                cache, feed = (out.cache, token) if use_cache else (None, ids)
        finally:
            self.train(was_training)
        return ids, torch.stack(steps, dim=1)  # (B, T + n), (B, n, V)

    # ----- checks: once per call, at the boundary -------------------------------------------
    def _check_ids(self, ids, past: int) -> None:
        if not isinstance(ids, torch.Tensor):
            raise TypeError(f"ids must be a torch.Tensor, got {type(ids).__name__}")
        if ids.dtype not in (torch.int64, torch.int32):  # what an embedding lookup takes
            raise TypeError(
                f"ids must hold integers (int64 or int32 token ids), got dtype {ids.dtype}"
            )
        if ids.dim() != 2 or ids.shape[0] == 0 or ids.shape[1] == 0:
            raise ValueError(
                f"ids must have shape (B, T) with B >= 1 and T >= 1, got {tuple(ids.shape)}"
            )
        if ids.device != self.device:
            raise ValueError(f"ids are on {ids.device} but the model is on {self.device}")
        limit = self.config.max_len
        if past + ids.shape[1] > limit:
            cached = f" after the cache's {past}" if past else ""
            raise ValueError(
                f"ids have T={ids.shape[1]} tokens{cached}: {past + ids.shape[1]} positions, "
                f"more than the model's max_len={limit}"
            )

    def _check_cache(self, cache, batch: int) -> int:
        if not isinstance(cache, KVCache):
            raise TypeError(f"cache must be a KVCache or None, got {type(cache).__name__}")
        cfg = self.config
        expected = (batch, cfg.kv_heads, cache.length, cfg.head_dim)
        if cache.num_layers != cfg.num_layers:
            raise ValueError(
                f"cache holds {cache.num_layers} layers but the model has "
                f"num_layers={cfg.num_layers}"
            )
        if cache.batch_size != batch:
            raise ValueError(
                f"cache has batch size {cache.batch_size} but ids have B={batch} sequences"
            )
        if tuple(cache.keys[0].shape) != expected:
            raise ValueError(
                f"cache tensors must have shape (B, num_kv_heads, S, head_dim) = {expected}, "
                f"got {tuple(cache.keys[0].shape)}"
            )
        first = cache.keys[0]
        if first.device != self.device:
            raise ValueError(f"cache is on {first.device} but the model is on {self.device}")
        if first.dtype != self.dtype:
            raise TypeError(
                f"cache has dtype {first.dtype} but the model has {self.dtype}; use one dtype"
            )
        return cache.length

    def _check_inputs(self, ids, head_mask, cache) -> int:
        """Check a forward's arguments with one host read (the ids' bounds); return the number
        of cached tokens."""
        if not isinstance(ids, torch.Tensor) or ids.dim() != 2:
            self._check_ids(ids, 0)  # the message for a non-tensor or a wrong rank
        past = 0 if cache is None else self._check_cache(cache, ids.shape[0])
        self._check_ids(ids, past)
        if head_mask is not None:
            check_layer_head_mask(
                head_mask,
                batch=ids.shape[0],
                num_layers=self.config.num_layers,
                num_heads=self.config.num_heads,
                device=self.device,
                where="the model is on",
            )
        (bounds,) = read_bounds(ids)  # the one transfer
        vocab = self.config.vocab_size
        if bounds is not None and (bounds[0] < 0 or bounds[1] >= vocab):
            lo, hi = bounds
            raise ValueError(
                f"ids must lie in [0, {vocab}) (the vocabulary), got {lo if lo < 0 else hi}"
            )
        return past
