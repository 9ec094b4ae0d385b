"""Weights from transformers' GPT-2 (``GPT2LMHeadModel``) into :class:`~attnlib.models.gpt.GPT`.

Two layout differences, both handled here: GPT-2's ``Conv1D`` stores its weight ``(in, out)``
(``y = x @ W + b``), the transpose of ``nn.Linear``'s ``(out, in)``; and its ``c_attn`` packs
W_Q | W_K | W_V side by side in one ``(D, 3D)`` matrix. Nothing here imports transformers: the
functions read and write plain state dicts and keyword arguments.
"""

from __future__ import annotations

from typing import Any

import torch

from attnlib.models.gpt.config import GPTConfig

__all__ = ["gpt2_config_kwargs", "state_dict_from_gpt2", "activation_from_gpt2"]

# transformers' names (GPT2Config.activation_function) for our FFN activations. GPT-2's own
# checkpoints use "gelu_new", the tanh approximation; "gelu_pytorch_tanh" is the same function
# computed by F.gelu(approximate="tanh").
_TO_GPT2 = {"gelu": "gelu", "relu": "relu", "gelu_tanh": "gelu_new"}
_FROM_GPT2 = {
    "gelu": "gelu",
    "relu": "relu",
    "gelu_new": "gelu_tanh",
    "gelu_pytorch_tanh": "gelu_tanh",
}


def activation_from_gpt2(activation_function: str) -> str:
    """Our ``GPTConfig.activation`` for transformers' ``GPT2Config.activation_function``.

    ``"gelu_new"`` (GPT-2's checkpoints) and ``"gelu_pytorch_tanh"`` become ``"gelu_tanh"``;
    any other name (``"gelu_fast"``, ``"silu"`` ...) is a ``ValueError``: loading such weights
    into a model with another activation would change its outputs without a word.
    """
    if not isinstance(activation_function, str):
        raise TypeError(
            f"activation_function must be a str, got {type(activation_function).__name__}"
        )
    if activation_function not in _FROM_GPT2:
        raise ValueError(
            f"activation_function={activation_function!r} has no GPT activation; supported: "
            f"{', '.join(sorted(_FROM_GPT2))}"
        )
    return _FROM_GPT2[activation_function]


def _check_convertible(cfg: GPTConfig) -> None:
    if not isinstance(cfg, GPTConfig):
        raise TypeError(f"cfg must be a GPTConfig, got {type(cfg).__name__}")
    unsupported = {
        "num_kv_heads": cfg.kv_heads != cfg.num_heads,  # GPT-2 has multi-head attention only
        "positions": cfg.positions != "learned",
        "final_norm": not cfg.final_norm,
        "bias": not cfg.bias,
    }
    bad = [name for name, is_bad in unsupported.items() if is_bad]
    if bad:
        raise ValueError(
            f"GPT-2 has MHA, learned positions, a final LayerNorm and biases; this config "
            f"differs in {', '.join(bad)}"
        )


def gpt2_config_kwargs(cfg: GPTConfig) -> dict[str, Any]:
    """Keyword arguments for ``transformers.GPT2Config`` describing the same model as ``cfg``
    (dropout off; ``activation_function="gelu"``, the exact erf form, for ``activation="gelu"``,
    and GPT-2's ``"gelu_new"`` for ``"gelu_tanh"``).

    An attention-only ``cfg`` gets GPT-2 blocks whose MLP the caller zeroes
    (see :func:`state_dict_from_gpt2`).
    """
    _check_convertible(cfg)
    return dict(
        vocab_size=cfg.vocab_size,
        n_positions=cfg.max_len,
        n_embd=cfg.d_model,
        n_layer=cfg.num_layers,
        n_head=cfg.num_heads,
        n_inner=cfg.ffn_width,
        activation_function=_TO_GPT2[cfg.activation],
        layer_norm_epsilon=cfg.layer_norm_eps,
        resid_pdrop=0.0,
        embd_pdrop=0.0,
        attn_pdrop=0.0,
        tie_word_embeddings=cfg.tie_embeddings,
        scale_attn_weights=True,
        scale_attn_by_inverse_layer_idx=False,
        reorder_and_upcast_attn=False,
        bos_token_id=0,  # GPT-2's 50256 lies outside a small vocabulary; unused here
        eos_token_id=0,
    )


def state_dict_from_gpt2(
    state: dict[str, torch.Tensor], cfg: GPTConfig, *, activation_function: str | None = None
) -> dict[str, torch.Tensor]:
    """GPT-2's state dict (``GPT2LMHeadModel.state_dict()``) renamed and transposed for
    ``GPT(cfg)`` (load it with ``strict=True``).

    With ``cfg.attention_only`` the blocks' MLP and ``ln_2`` are left out; that is the same model
    only if the MLP's output is 0, so its ``c_proj`` weight and bias must be exactly 0 (else a
    ``ValueError``).

    A state dict does not say which activation its MLP was trained with, so pass the source's
    ``hf.config.activation_function``: a real GPT-2 checkpoint says ``"gelu_new"`` and needs
    ``cfg.activation="gelu_tanh"``, and a mismatch is a ``ValueError`` instead of a model that
    silently computes another function.

    Args:
        state: the tensors by transformers' names (``transformer.h.0.attn.c_attn.weight`` ...).
        cfg: the config of the model to load them into.
        activation_function: the source's ``GPT2Config.activation_function``, checked against
            ``cfg.activation`` (see :func:`activation_from_gpt2`); ``None`` skips the check.

    Returns:
        A new dict of tensors (transposes are copies, contiguous).
    """
    _check_convertible(cfg)
    if activation_function is not None and not cfg.attention_only:
        wanted = activation_from_gpt2(activation_function)
        if wanted != cfg.activation:
            raise ValueError(
                f"the checkpoint's activation_function={activation_function!r} is our "
                f"{wanted!r} but cfg.activation={cfg.activation!r}; build the GPTConfig with "
                f"activation={wanted!r}"
            )
    d = cfg.d_model
    out: dict[str, torch.Tensor] = {
        "tok_emb.weight": state["transformer.wte.weight"],
        "pos_emb.weight": state["transformer.wpe.weight"],
        "ln_f.weight": state["transformer.ln_f.weight"],
        "ln_f.bias": state["transformer.ln_f.bias"],
    }
    if not cfg.tie_embeddings:
        out["unembed.weight"] = state["lm_head.weight"]

    def t(x: torch.Tensor) -> torch.Tensor:  # Conv1D (in, out) -> nn.Linear (out, in)
        return x.T.contiguous()

    for i in range(cfg.num_layers):
        src, dst = f"transformer.h.{i}.", f"blocks.{i}."
        w, b = state[src + "attn.c_attn.weight"], state[src + "attn.c_attn.bias"]  # (D, 3D)
        for j, name in enumerate(("w_q", "w_k", "w_v")):  # the packed Q | K | V
            out[f"{dst}attn.{name}.weight"] = t(w[:, j * d : (j + 1) * d])
            out[f"{dst}attn.{name}.bias"] = b[j * d : (j + 1) * d].clone()
        out[dst + "attn.w_o.weight"] = t(state[src + "attn.c_proj.weight"])
        out[dst + "attn.w_o.bias"] = state[src + "attn.c_proj.bias"]
        out[dst + "ln1.weight"] = state[src + "ln_1.weight"]
        out[dst + "ln1.bias"] = state[src + "ln_1.bias"]
        if cfg.attention_only:
            proj_w, proj_b = state[src + "mlp.c_proj.weight"], state[src + "mlp.c_proj.bias"]
            if proj_w.count_nonzero() or proj_b.count_nonzero():
                raise ValueError(
                    f"cfg is attention-only but layer {i}'s MLP (mlp.c_proj) is not zero: "
                    "dropping it would change the model"
                )
            continue
        out[dst + "ln2.weight"] = state[src + "ln_2.weight"]
        out[dst + "ln2.bias"] = state[src + "ln_2.bias"]
        out[dst + "ffn.linear1.weight"] = t(state[src + "mlp.c_fc.weight"])
        out[dst + "ffn.linear1.bias"] = state[src + "mlp.c_fc.bias"]
        out[dst + "ffn.linear2.weight"] = t(state[src + "mlp.c_proj.weight"])
        out[dst + "ffn.linear2.bias"] = state[src + "mlp.c_proj.bias"]
    return out
