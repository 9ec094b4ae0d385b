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


def test_environment_yml_names_the_same_dependencies_as_pyproject():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = project["dependencies"] + project["optional-dependencies"]["dev"]
    conda = [item for item in _pip_lines_of_environment_yml() if not item.startswith("-")]
    assert sorted(map(str, map(Requirement, conda))) == sorted(map(str, map(Requirement, declared)))
    assert "-c constraints.txt" in _pip_lines_of_environment_yml()


def test_constraints_pin_every_dependency_and_torch_2_13():
    pins = {}
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        if line and not line.startswith("#"):
            req = Requirement(line)
            pins[req.name.lower().replace("_", "-")] = str(req.specifier)
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    for dep in project["dependencies"] + project["optional-dependencies"]["dev"]:
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
