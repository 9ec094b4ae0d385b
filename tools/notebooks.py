"""Run, clean and pair the course notebooks (the commands behind `make notebooks` and its test).

    python tools/notebooks.py run NB ...       # fresh kernel, top to bottom, in place
                                               # (NB: notebooks/zh/... too: the Chinese edition)
    python tools/notebooks.py sync [NB ...]    # strip volatile metadata, write the .py pair
    python tools/notebooks.py check            # exit 1 if a notebook is unclean or unpaired
    python tools/notebooks.py booleans         # result lines that are a bare True/False

(NB: a notebook path such as ``notebooks/05_masking.ipynb``.)

Every notebook is paired with a jupytext ``py:percent`` file beside it (``05_masking.py``), so a
change to a notebook can be read and reviewed as text. The ``.ipynb`` keeps the outputs (nbval
compares them); it is saved without execution timestamps and without stored widget state (frames of
an explorer would be megabytes, and a reader without a kernel sees each explorer's stored picture
instead).
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a file (python tools/notebooks.py): the root holds tools/
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tools.nbtext import course_notebooks  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
FORMAT = "py:percent"
PAIRING = {"formats": "ipynb,py:percent"}
#: Cell metadata written by a run that changes on every run.
VOLATILE_CELL_KEYS = ("execution",)
#: Notebook metadata written by a run that is not part of the notebook's content.
VOLATILE_NOTEBOOK_KEYS = ("widgets",)
TIMEOUT_S = 300


def all_notebooks() -> list[Path]:
    return course_notebooks(NOTEBOOKS)


def pair_path(nb_path: Path) -> Path:
    return nb_path.with_suffix(".py")


def clean(nb) -> bool:
    """Remove volatile metadata in place; return True when something was removed."""
    changed = False
    for key in VOLATILE_NOTEBOOK_KEYS:
        changed |= nb.metadata.pop(key, None) is not None
    if nb.metadata.get("jupytext") != PAIRING:
        nb.metadata["jupytext"] = dict(PAIRING)
        changed = True
    for cell in nb.cells:
        for key in VOLATILE_CELL_KEYS:
            changed |= cell.metadata.pop(key, None) is not None
    return changed


def paired_text(nb) -> str:
    import jupytext

    return jupytext.writes(nb, fmt=FORMAT)


def sync(nb_path: Path) -> None:
    import nbformat

    nb = nbformat.read(nb_path, as_version=4)
    if is_translated(nb):
        clean_translation(nb)
        nbformat.write(nb, nb_path)
        return
    clean(nb)
    nbformat.write(nb, nb_path)
    pair_path(nb_path).write_text(paired_text(nb))


def is_translated(nb) -> bool:
    """A generated translation (notebooks/zh/: ``metadata.attnlib.language``): no .py pair, no
    jupytext pairing (tools/i18n.py writes it from the English notebook and its catalog)."""
    return "language" in nb.metadata.get("attnlib", {})


def run(nb_path: Path) -> None:
    """Execute in a fresh kernel and store the outputs, then sync.

    The kernel's working directory is the notebook's folder, as under nbval. The notebooks read no
    file relative to it (attnlib finds its data and the model itself), so notebooks/zh/ runs as
    notebooks/ does. The kernel gets no ATTNLIB_LANG: a notebook's language is its own (the
    Chinese ones set it in their first cell), not the shell's."""
    import os

    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(nb_path, as_version=4)
    client = NotebookClient(
        nb,
        timeout=TIMEOUT_S,
        kernel_name="python3",
        store_widget_state=False,
        resources={"metadata": {"path": str(nb_path.parent)}},
    )
    saved = os.environ.pop("ATTNLIB_LANG", None)
    try:
        client.execute()
    finally:
        if saved is not None:
            os.environ["ATTNLIB_LANG"] = saved
    nbformat.write(nb, nb_path)
    sync(nb_path)


def clean_translation(nb) -> None:
    """``clean`` for a generated translation: the volatile metadata, and no pairing."""
    for key in VOLATILE_NOTEBOOK_KEYS:
        nb.metadata.pop(key, None)
    nb.metadata.pop("jupytext", None)
    for cell in nb.cells:
        for key in VOLATILE_CELL_KEYS:
            cell.metadata.pop(key, None)


def problems(nb_path: Path) -> list[str]:
    """What `check` reports for one notebook (empty when it is clean and its pair is in step)."""
    import nbformat

    found = []
    raw = nbformat.read(nb_path, as_version=4)
    if is_translated(raw):
        return []  # generated: tests/test_i18n.py checks it is in step with its catalog
    if clean(raw):
        found.append(
            f"{nb_path.name}: volatile metadata or missing jupytext pairing "
            "(run `make notebooks-sync`)"
        )
    pair = pair_path(nb_path)
    if not pair.exists():
        found.append(f"{nb_path.name}: no paired {pair.name} (run `make notebooks-sync`)")
    elif pair.read_text() != paired_text(raw):
        found.append(
            f"{nb_path.name}: {pair.name} is out of step with the notebook "
            "(edit the .ipynb, then run `make notebooks-sync`)"
        )
    return found


_BARE_BOOL = re.compile(r"(^|[:=?]\s*)(True|False)\s*$")
_NUMBER = re.compile(r"\d\.\d|\de[-+]?\d|\d+ ?(%|<|>|≤|≥)")


def bare_booleans(nb_path: Path) -> list[str]:
    """Printed result lines that are only a True/False with no number beside them."""
    import nbformat

    nb = nbformat.read(nb_path, as_version=4)
    found = []
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        for out in cell.get("outputs", []):
            if out.get("output_type") == "stream":
                text = out.get("text", "")
            else:
                text = out.get("data", {}).get("text/plain", "")
            for line in text.splitlines():
                if _BARE_BOOL.search(line.strip()) and not _NUMBER.search(line):
                    found.append(line.strip())
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=["run", "sync", "check", "booleans"])
    parser.add_argument("notebooks", nargs="*", type=Path)
    args = parser.parse_args(argv)
    paths = []
    for p in args.notebooks:
        # A folder or file given is used as given: only no argument at all means every notebook.
        if p.is_dir():
            found = course_notebooks(p)
            if not found:
                parser.error(f"no NN_*.ipynb notebook in the folder {p}")
            paths += [q.resolve() for q in found]
        elif p.is_file():
            paths.append(p.resolve())
        else:
            parser.error(f"no notebook {p}")
    paths = paths or all_notebooks()
    if args.command == "run":
        if not args.notebooks:
            parser.error("run needs the notebooks to execute")
        for path in paths:
            print(f"running {path.name} ...", flush=True)
            run(path)
        return 0
    if args.command == "sync":
        for path in paths:
            sync(path)
        return 0
    if args.command == "booleans":
        for path in paths:
            for line in bare_booleans(path):
                print(f"{path.name}: {line}")
        return 0
    found = [msg for path in paths for msg in problems(path)]
    print("\n".join(found) if found else f"{len(paths)} notebooks clean and paired")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
