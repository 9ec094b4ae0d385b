"""Fixtures for the real-browser test: a private JupyterLab server and Debian's Chromium
(see harness.py).
"""

from __future__ import annotations

import os

import pytest
from harness import chromium, lab_server, missing_browser


def _require_chromium() -> None:
    msg = missing_browser()
    if msg is None:
        return
    # REQUIRE_ALL=1 fails this skip in tests/conftest.py; REQUIRE_BROWSER=1 asks for Chromium only.
    if os.environ.get("REQUIRE_BROWSER") == "1":
        pytest.fail(msg + " (REQUIRE_BROWSER=1)", pytrace=False)
    pytest.skip(msg)


@pytest.fixture(scope="session")
def lab():
    """A JupyterLab server of our own, serving a temporary copy of notebooks/."""
    _require_chromium()
    with lab_server() as server:
        yield server


@pytest.fixture(scope="session")
def browser():
    """Debian's Chromium, driven by Playwright (never `playwright install`)."""
    _require_chromium()
    with chromium() as b:
        yield b
