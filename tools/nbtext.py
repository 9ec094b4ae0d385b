"""A notebook's cells as plain text, read with ``json`` (no nbformat: it takes seconds to
import, and the tests that scan prose are in the fast tier). Used by tools/claims.py and
tests/test_notebook_refs.py."""

from __future__ import annotations

import json
from pathlib import Path

#: The course's notebooks in a folder: ``NN_name.ipynb`` (one pattern for every tool).
NOTEBOOK_GLOB = "[0-9][0-9]_*.ipynb"


def course_notebooks(folder: Path) -> list[Path]:
    """The course notebooks ``NN_name.ipynb`` of ``folder``, in order."""
    return sorted(Path(folder).glob(NOTEBOOK_GLOB))


def cell_alts(cell: dict) -> list[str]:
    """A code cell's alt texts (``metadata.alt``: a str or a list of str), one per picture."""
    alt = cell.get("metadata", {}).get("alt")
    if alt is None:
        return []
    return [alt] if isinstance(alt, str) else list(alt)


def cells(path: Path) -> list[dict]:
    """The cells of an ``.ipynb``, each ``{"cell_type": ..., "source": str}``."""
    raw = json.loads(Path(path).read_text(encoding="utf-8"))
    out = []
    for cell in raw["cells"]:
        source = cell.get("source", "")
        out.append({"cell_type": cell["cell_type"], "source": "".join(source)})
    return out


def cell_prose(cell: dict) -> str:
    """A cell's prose: a markdown cell's text, or the comments of a code cell's lines."""
    if cell["cell_type"] == "markdown":
        return cell["source"]
    if cell["cell_type"] == "code":
        lines = cell["source"].splitlines()
        return "\n".join(line[line.index("#") :] for line in lines if "#" in line)
    return ""
