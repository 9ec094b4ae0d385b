"""The conda environment, the pip project and the pins describe one environment."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[1]


def _pip_lines_of_environment_yml() -> list[str]:
    lines = (ROOT / "environment.yml").read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if re.match(r"\s*- pip:\s*$", line))
    indent = len(lines[start + 1]) - len(lines[start + 1].lstrip())
    items = []
    for line in lines[start + 1 :]:
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if len(line) - len(line.lstrip()) < indent:
            break
        items.append(stripped[2:].strip())
    return items


def _declared() -> list[str]:
    """The core dependencies and those of every extra."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    return project["dependencies"] + [dep for name in sorted(extras) for dep in extras[name]]


def test_environment_yml_names_the_same_dependencies_as_pyproject():
    declared = _declared()
    conda = [item for item in _pip_lines_of_environment_yml() if not item.startswith("-")]
    assert sorted(map(str, map(Requirement, conda))) == sorted(map(str, map(Requirement, declared)))
    assert "-c constraints.txt" in _pip_lines_of_environment_yml()


def test_constraints_pin_every_dependency_and_torch_2_13():
    pins = {}
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        if line and not line.startswith("#"):
            req = Requirement(line)
            pins[req.name.lower().replace("_", "-")] = str(req.specifier)
    for dep in _declared():
        name = Requirement(dep).name.lower()
        assert name in pins, f"{name} is not pinned in constraints.txt"
        assert pins[name].startswith("=="), f"{name} pin {pins[name]} is not exact"
    assert pins["torch"] == "==2.13.0"


def test_license_is_an_spdx_string_not_a_deprecated_table():
    # setuptools >= 77 warns about a TOML-table `project.license` ({text = ...} / {file = ...}) and
    # about "License ::" classifiers next to an SPDX expression; PEP 639 wants a plain string.
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    project = pyproject["project"]
    assert isinstance(project["license"], str)
    assert re.fullmatch(r"[A-Za-z0-9.+-]+( (AND|OR|WITH) [A-Za-z0-9.+-]+)*", project["license"])
    assert not any(c.startswith("License ::") for c in project.get("classifiers", []))
    setuptools_pin = next(
        r for r in pyproject["build-system"]["requires"] if Requirement(r).name == "setuptools"
    )
    assert Requirement(setuptools_pin).specifier.contains("77")  # the first release reading SPDX


def test_the_core_is_torch_numpy_and_tqdm_and_the_extras_are_named():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    core = sorted(Requirement(dep).name for dep in project["dependencies"])
    assert core == ["numpy", "torch", "tqdm"]
    assert set(project["optional-dependencies"]) == {"widgets", "pretrained", "lab", "site", "dev"}


def test_the_extras_error_table_matches_pyproject():
    # attnlib.util._extras names, per extra, the modules whose absence it reports; they are the
    # import names of that extra's distributions (all equal to the distribution names here).
    from attnlib.util._extras import EXTRAS

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    for extra, modules in EXTRAS.items():
        assert sorted(modules) == sorted(Requirement(d).name for d in extras[extra]), extra


def test_the_version_and_the_model_pin_are_each_written_once():
    import attnlib
    from attnlib.models.minilm import MODEL_PACKAGE, MODEL_REQUIREMENT

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert "version" not in project and project["dynamic"] == ["version"]
    assert re.fullmatch(r"\d+\.\d+\.\d+", attnlib.__version__)
    version = MODEL_REQUIREMENT.split("==")[1]
    assert MODEL_REQUIREMENT == f"{MODEL_PACKAGE}=={version}"
    tracked = ["Makefile", "README.md", "constraints.txt", "environment.yml", ".ci/run"]
    tracked += [str(p.relative_to(ROOT)) for p in (ROOT / "tests").glob("*.py")]
    tracked += [str(p.relative_to(ROOT)) for p in (ROOT / ".github").rglob("*.yml")]
    for name in tracked:
        text = (ROOT / name).read_text()
        assert f"{MODEL_PACKAGE}=={version}" not in text, f"{name} repeats the model pin"


def test_license_file_is_the_mit_license_pyproject_declares():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["license"] == "MIT"
    text = (ROOT / "LICENSE").read_text()
    assert text.startswith("MIT License") and "WITHOUT WARRANTY OF ANY KIND" in text
