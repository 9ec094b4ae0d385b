"""Optional dependencies: the extras of ``pip install attnlib[...]`` and a clear error without them.

The core (``import attnlib``: masks, softmax, attention, heads, blocks, the toy model) needs only
torch, numpy and tqdm. Drawing, the explorers and the pretrained model need more:

    pip install 'attnlib[widgets]'     # plotting, figures, explorers (anywidget, matplotlib, ...)
    pip install 'attnlib[pretrained]'  # the MiniLM rebuild: safetensors, tokenizers
    pip install 'attnlib[lab]'         # JupyterLab, to run the notebooks
"""

from __future__ import annotations

import importlib
from types import ModuleType

#: The top-level modules each extra provides (keep in step with pyproject.toml; a test checks it).
EXTRAS: dict[str, tuple[str, ...]] = {
    "widgets": ("anywidget", "ipywidgets", "matplotlib"),
    "pretrained": ("safetensors", "tokenizers"),
    "lab": ("jupyterlab",),
}


def require(module: str, *, extra: str) -> ModuleType:
    """Import ``module``, or raise an ImportError that names the ``pip install`` command."""
    if extra not in EXTRAS:
        raise ValueError(f"extra must be one of {sorted(EXTRAS)}, got {extra!r}")
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ImportError(
            f"{module} is not installed; it comes with attnlib's '{extra}' extra: "
            f"pip install 'attnlib[{extra}]'"
        ) from exc


def require_extra(extra: str, *, what: str) -> None:
    """Check that every module of ``extra`` imports; ``what`` names the part that needs it."""
    for module in EXTRAS[extra]:
        try:
            importlib.import_module(module)
        except ImportError as exc:
            raise ImportError(
                f"{what} needs {module}, which comes with attnlib's '{extra}' extra: "
                f"pip install 'attnlib[{extra}]'"
            ) from exc
