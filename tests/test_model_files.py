"""The model files are checked, not trusted: their sha256 against the pinned upstream hashes,
and the checkpoint's tensors against the encoder's parameters, one to one with the same shapes.
Every modified file is a copy in a temporary folder; the installed package is never touched.
"""

from __future__ import annotations

import hashlib
import shutil

import pytest
import torch

from attnlib.models.minilm import (
    INSTALL_HINT,
    MODEL_SHA256,
    load_minilm,
    verify_model_files,
)

safetensors_torch = pytest.importorskip("safetensors.torch")


def _copy(model_dir, dest):
    dest.mkdir(parents=True, exist_ok=True)
    for name in MODEL_SHA256:
        shutil.copyfile(model_dir / name, dest / name)
    return dest


def _sha256(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_the_installed_files_have_the_pinned_upstream_hashes(model_dir):
    # hashlib here, on the whole file at once: independent of the loader's chunked reading.
    assert {name: _sha256(model_dir / name) for name in MODEL_SHA256} == MODEL_SHA256
    verify_model_files(model_dir)  # and the loader's own check agrees


@pytest.mark.parametrize("name", ["config.json", "tokenizer.json", "model.safetensors"])
def test_a_modified_file_is_rejected_naming_it_and_both_hashes(model_dir, tmp_path, name):
    folder = _copy(model_dir, tmp_path)
    data = bytearray((folder / name).read_bytes())
    data[-2] ^= 0x01  # one bit, near the end (inside the weights for model.safetensors)
    (folder / name).write_bytes(bytes(data))
    with pytest.raises(ValueError) as info:
        load_minilm("cpu", model_dir=folder)
    message = str(info.value)
    assert name in message
    assert MODEL_SHA256[name] in message  # the expected hash
    assert _sha256(folder / name) in message  # the file's hash, computed here independently
    assert INSTALL_HINT in message


def test_an_unmodified_copy_loads_and_a_missing_file_is_named(model_dir, tmp_path):
    folder = _copy(model_dir, tmp_path)
    enc = load_minilm("cpu", model_dir=folder)
    assert enc.config.num_layers == 6
    (folder / "tokenizer.json").unlink()
    with pytest.raises(FileNotFoundError, match="tokenizer.json"):
        verify_model_files(folder)


def _with_tensors(model_dir, folder, change):
    _copy(model_dir, folder)
    tensors = safetensors_torch.load_file(str(model_dir / "model.safetensors"))
    change(tensors)
    safetensors_torch.save_file(tensors, str(folder / "model.safetensors"))
    return folder


def test_every_tensor_of_the_file_must_be_used(model_dir, tmp_path):
    def extra(t):
        t["encoder.layer.0.attention.self.extra.weight"] = torch.zeros(3)

    folder = _with_tensors(model_dir, tmp_path, extra)
    with pytest.raises(ValueError, match="hash"):  # a changed file fails the hash check first
        load_minilm("cpu", model_dir=folder)
    with pytest.raises(ValueError, match="unexpected weight.*attention.self.extra"):
        load_minilm("cpu", model_dir=folder, check_hashes=False)


def test_every_parameter_needs_a_tensor_of_its_shape(model_dir, tmp_path):
    def drop(t):
        del t["encoder.layer.5.output.dense.bias"]

    folder = _with_tensors(model_dir, tmp_path / "drop", drop)
    with pytest.raises(
        ValueError, match=r"parameters without a tensor \['layers.5.ffn.linear2.bias'"
    ):
        load_minilm("cpu", model_dir=folder, check_hashes=False)

    def reshape(t):
        t["encoder.layer.2.attention.self.query.weight"] = torch.zeros(384, 383)

    folder = _with_tensors(model_dir, tmp_path / "shape", reshape)
    with pytest.raises(ValueError, match=r"layers.2.self_attn.w_q.weight has shape \(384, 383\)"):
        load_minilm("cpu", model_dir=folder, check_hashes=False)


def test_check_hashes_must_be_a_bool(model_dir):
    with pytest.raises(TypeError, match="check_hashes"):
        load_minilm("cpu", check_hashes="yes")
