"""Shared fixtures: the devices to test on, a seeded generator, and hypothesis settings."""

from __future__ import annotations

import os
import re

import pytest
import torch
from hypothesis import HealthCheck, settings

import attnlib

# Derandomized: the examples are a fixed function of each test, so a failure on CI reproduces on
# any machine (and hypothesis prints the failing example). HYPOTHESIS_PROFILE=explore draws new
# random examples each run, for hunting bugs locally.
settings.register_profile(
    "attnlib",
    max_examples=int(os.environ.get("HYPOTHESIS_MAX_EXAMPLES", "25")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    derandomize=True,
    database=None,
    print_blob=True,
)
settings.register_profile("explore", parent=settings.get_profile("attnlib"), derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "attnlib"))


def _devices() -> list[str]:
    devices = ["cpu"]
    if torch.cuda.is_available():
        devices.append("cuda")
    if torch.backends.mps.is_available():
        devices.append("mps")
    return devices


DEVICES = _devices()


@pytest.fixture(params=DEVICES)
def device(request) -> torch.device:
    """Each test that takes `device` runs on the CPU and on every accelerator present."""
    return torch.device(request.param)


@pytest.fixture(autouse=True)
def _seed():
    """The caller seeds: every test starts from seed 0."""
    attnlib.set_seed(0)
    yield


@pytest.fixture(scope="module")
def model_dir():
    """The folder of the installed MiniLM package (skips the test when it is not installed)."""
    from attnlib.models.minilm import INSTALL_HINT, minilm_dir

    try:
        return minilm_dir()
    except ModuleNotFoundError:
        pytest.skip(f"the MiniLM package is not installed: {INSTALL_HINT}")


def pytest_report_header(config):
    return f"attnlib test devices: {', '.join(DEVICES)}"


@pytest.fixture
def one_thread():
    """Big single-process measurements run on one CPU thread (steadier on a shared machine)."""
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(old)


# ----- tiers: `make test-fast` runs `-m "not slow"` (the math and explorer unit tests) ---------
#: Whole modules outside the fast tier, with the marker that says why (registered in pyproject).
SLOW_MODULES = {
    "test_make_lab.py": "lab",  # starts JupyterLab
    "test_pretrained.py": "pretrained",  # the MiniLM files and transformers' reference model
    "test_model_files.py": "pretrained",
    "test_gpt_parity.py": "pretrained",  # transformers' GPT-2 (built from a config, no files)
    "test_head_stats.py": "pretrained",
    "test_widgets_head_view.py": "pretrained",
    "test_training.py": "training",  # trains the toy encoder-decoder
    "test_examples_reversal.py": "training",
    "test_figures.py": "figures",  # every figure drawn and compared with its committed PNG
    "test_figures_decoding.py": "figures",
    "test_notebook_pairs.py": "notebooks",  # jupytext on every notebook
    "test_light_install.py": "packaging",  # a fresh interpreter
    "test_require_all.py": "packaging",  # pytest in fresh interpreters
    "test_site.py": "browser",  # builds the static site, opens every page in Chromium
    "test_site_accessibility.py": "browser",  # axe-core and the keyboard on every page
    "test_site_language.py": "browser",  # the Chinese pages' explorers, built site and Chromium
}
#: Single tests outside the fast tier: measurements over long sequences, and the sweeps that
#: move every control of every explorer (each explorer's own test file stays in the fast tier).
SLOW_TESTS = {
    "test_widgets_explorer.py::test_every_control_gives_finite_numbers_and_the_picture_follows",
    "test_widgets_explorer.py::test_every_frame_sent_equals_compute_at_its_values",
    "test_layering.py::test_importing_the_figures_does_not_import_the_explorers",  # fresh
    "test_layering.py::test_importing_plotting_loads_no_math_beyond_what_attnlib_init_loads",
    "test_costs.py::test_c41_longest_path_column_matches_gradients",
    "test_costs.py::test_c41_attention_memory_grows_quadratically_rnn_and_cnn_linearly",
    "test_blockwise.py::test_c42_extra_memory_grows_linearly_measured",
    "test_blockwise.py::test_c42_training_memory_grows_linearly_measured",
    "test_induction_claims.py::test_retraining_repeats_the_shipped_run",  # 4000 steps, minutes
}


#: Parametrised cases outside the fast tier: the head-view explorer and test_bad_inputs' MiniLM
#: rows load the MiniLM model.
SLOW_PARAMS = {"[head_view]": "pretrained", "-minilm]": "pretrained"}  # test_bad_inputs rows


def pytest_collection_modifyitems(config, items):
    for item in items:
        name = item.path.name
        for param, why in SLOW_PARAMS.items():
            if param in item.name:
                item.add_marker(getattr(pytest.mark, why))
                item.add_marker(pytest.mark.slow)
        if "browser" in item.path.parts:
            item.add_marker(pytest.mark.browser)
        if name in SLOW_MODULES:
            item.add_marker(getattr(pytest.mark, SLOW_MODULES[name]))
        if (
            SLOW_MODULES.get(name) == "lab"
        ):  # one JupyterLab at a time (pytest -n 2 --dist loadgroup)
            item.add_marker(pytest.mark.xdist_group("lab"))
        if (
            "browser" in item.path.parts
            or name in SLOW_MODULES
            or f"{name}::{item.originalname}" in SLOW_TESTS
        ):
            item.add_marker(pytest.mark.slow)


# ----- REQUIRE_ALL=1 (set by .ci/run): a missing package or browser fails instead of skipping ---
#: The reasons a skip gives when a package, the MiniLM model package, playwright, Chromium or a
#: tool is missing: pytest.importorskip's "could not import 'x'", the model_dir fixture's "is not
#: installed", tests/browser/harness.py's missing_browser() ("is missing", "not found at").
#: Skips for absent hardware (CUDA, MPS) name none of these and stay skips.
MISSING = re.compile(r"could not import|No module named|not installed|is missing|not found at")


def require_all() -> bool:
    """Whether this run must have every package and the browser (REQUIRE_ALL=1; the narrower
    REQUIRE_BROWSER=1 of tests/browser/conftest.py still asks for Chromium alone)."""
    return os.environ.get("REQUIRE_ALL") == "1"


def _as_failure(report) -> None:
    """Turn a skip report whose reason names something missing into a failure (REQUIRE_ALL=1)."""
    if not (report.skipped and require_all()) or hasattr(report, "wasxfail"):
        return
    longrepr = report.longrepr
    reason = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
    if MISSING.search(reason):
        report.outcome = "failed"
        report.longrepr = f"REQUIRE_ALL=1, so this skip is a failure: {reason}"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    # Every skip raised in a test, a fixture (model_dir, the MiniLM rows of test_bad_inputs, the
    # browser fixtures) or a skipif mark (test_site.py's missing browser) passes through here.
    outcome = yield
    _as_failure(outcome.get_result())


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    # Module-level pytest.importorskip (test_gpt_parity's transformers, test_widgets_head_view's
    # MiniLM package) skips the whole module at collection.
    outcome = yield
    _as_failure(outcome.get_result())


@pytest.fixture(scope="session")
def site(tmp_path_factory):
    """The static site, built once for the session's site tests (tests/test_site*.py).

    ``ATTNLIB_SITE_DIR=site`` checks a site built already instead;
    ``ATTNLIB_SITE_PAGES=03_softmax_gradient,04_worked_example`` builds those pages only.
    """
    import subprocess
    import sys
    from pathlib import Path

    if os.environ.get("ATTNLIB_SITE_DIR"):
        return Path(os.environ["ATTNLIB_SITE_DIR"]).resolve()
    only = [p for p in os.environ.get("ATTNLIB_SITE_PAGES", "").split(",") if p]
    out = tmp_path_factory.mktemp("site")
    subprocess.run(
        [sys.executable, "-m", "tools.site", "build", "--out", str(out), *only],
        check=True,
        cwd=Path(__file__).resolve().parents[1],
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    return out
