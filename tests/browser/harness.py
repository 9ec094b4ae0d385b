"""A private JupyterLab server and Debian's Chromium, for tests/browser and
benchmarks/browser_latency.py.

The server runs on 127.0.0.1 on a free port with a random token, its own temporary HOME,
TMPDIR, runtime, config and data folders (the virtual environment's lab extensions, anywidget's
and ipywidgets', stay visible: they live under ``sys.prefix/share/jupyter``), and serves a
temporary copy of ``notebooks/``, so the notebooks on disk are never modified. Everything started
here is stopped at the end (the server's whole process group, the browser).
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")  # another Chromium or Chrome
# Measured in ../shared/RECIPES.md: these flags make Debian's Chromium run as root, headless,
# offline.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
INSTALL_HINT = "install it with `apt-get install -y chromium` (do not run `playwright install`)"

#: The site's pages, for the static-site tests (tests/test_site*.py): every notebook's, or those of
#: ``ATTNLIB_SITE_PAGES=03_softmax_gradient,04_worked_example`` only.
ALL_PAGES = sorted(p.stem for p in (REPO / "notebooks").glob("[0-9][0-9]_*.ipynb"))
ONLY_PAGES = [p for p in os.environ.get("ATTNLIB_SITE_PAGES", "").split(",") if p]
PAGES = ONLY_PAGES or ALL_PAGES
#: Every page in both languages: the English ``NN_name`` and the Chinese ``zh/NN_name``.
BOTH = [*PAGES, *(f"zh/{p}" for p in PAGES)]
#: A hash of a canvas's pixels (FNV-1a over the RGBA words): a changed picture changes it.
CANVAS_HASH = """(c) => { const d = new Uint32Array(c.getContext('2d')
  .getImageData(0, 0, c.width, c.height).data.buffer);
  let h = 2166136261; for (let i = 0; i < d.length; i++) h = Math.imul(h ^ d[i], 16777619);
  return h >>> 0; }"""


def missing_browser() -> str | None:
    """Why the browser cannot run here, or None."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return (
            "the Python package playwright is missing: pip install -e '.[dev]' "
            "(it drives the system Chromium)"
        )
    if os.path.exists(CHROMIUM):
        return None
    return f"Chromium not found at {CHROMIUM}: {INSTALL_HINT}"


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _write_json(path: Path, data) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


@dataclass
class Lab:
    url: str
    token: str
    root: Path
    log: Path

    def api(self, path: str, method: str = "GET"):
        req = urllib.request.Request(
            f"{self.url}/api/{path}",
            method=method,
            headers={"Authorization": f"token {self.token}"},
        )
        with urllib.request.urlopen(req, timeout=10) as r:
            body = r.read()
        return json.loads(body) if body else None

    def log_tail(self, n: int = 40) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return ""


@contextlib.contextmanager
def lab_server(notebooks: Path = REPO / "notebooks"):
    """A JupyterLab server of our own, serving a temporary copy of ``notebooks``."""
    base = Path(tempfile.mkdtemp(prefix="attnlib-browser-"))
    dirs = {k: base / k for k in ("home", "tmp", "runtime", "config", "data", "ipython", "mpl")}
    for d in dirs.values():
        d.mkdir()
    root = base / "notebooks"
    shutil.copytree(notebooks, root)
    # User settings: no news pop-up, every cell attached to the DOM (no windowing), no update check.
    settings = dirs["config"] / "lab" / "user-settings" / "@jupyterlab"
    _write_json(
        settings / "apputils-extension" / "notification.jupyterlab-settings",
        {"fetchNews": "false", "checkForUpdates": False, "doNotDisturbMode": True},
    )
    _write_json(
        settings / "notebook-extension" / "tracker.jupyterlab-settings", {"windowingMode": "none"}
    )
    # No "receive official Jupyter news?" prompt: switch the announcements plugin off.
    _write_json(
        dirs["config"] / "labconfig" / "page_config.json",
        {"disabledExtensions": {"@jupyterlab/apputils-extension:announcements": True}},
    )
    env = dict(os.environ)
    env.pop(
        "JUPYTER_PATH", None
    )  # sys.prefix/share/jupyter (lab extensions, kernelspec) stays on the path
    env.update(
        HOME=str(dirs["home"]),
        TMPDIR=str(dirs["tmp"]),
        JUPYTER_RUNTIME_DIR=str(dirs["runtime"]),
        JUPYTER_CONFIG_DIR=str(dirs["config"]),
        JUPYTER_DATA_DIR=str(dirs["data"]),
        IPYTHONDIR=str(dirs["ipython"]),
        MPLCONFIGDIR=str(dirs["mpl"]),
        PYTHONUNBUFFERED="1",
    )
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    port, token = _free_port(), secrets.token_hex(16)
    log = base / "jupyterlab.log"
    cmd = [
        sys.executable,
        "-m",
        "jupyterlab",
        "--no-browser",
        "--allow-root",
        f"--port={port}",
        "--ServerApp.port_retries=0",
        "--ServerApp.ip=127.0.0.1",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={root}",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
    ]
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            cmd, env=env, cwd=root, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )  # its own process group: kernels die with it
    server = Lab(url=f"http://127.0.0.1:{port}", token=token, root=root, log=log)
    try:
        deadline = time.monotonic() + 90
        while True:
            if proc.poll() is not None:
                raise RuntimeError(
                    f"jupyter lab exited with {proc.returncode}:\n{server.log_tail()}"
                )
            try:
                server.api("status")
                break
            except (urllib.error.URLError, ConnectionError, OSError):
                if time.monotonic() > deadline:
                    raise RuntimeError(
                        f"jupyter lab did not answer in 90 s:\n{server.log_tail()}"
                    ) from None
                time.sleep(0.3)
        yield server
    finally:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=15)
        except ProcessLookupError:
            pass
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=5)
        shutil.rmtree(base, ignore_errors=True)


@contextlib.contextmanager
def chromium():
    """Debian's Chromium, driven by Playwright (never `playwright install`)."""
    from playwright.sync_api import expect, sync_playwright

    expect.set_options(timeout=60_000)
    home = tempfile.mkdtemp(
        prefix="attnlib-chromium-"
    )  # its profile and crash folders, not ~/.config
    pw = sync_playwright().start()
    try:
        b = pw.chromium.launch(
            executable_path=CHROMIUM,
            args=CHROMIUM_ARGS,
            headless=True,
            env={**os.environ, "HOME": home, "XDG_CONFIG_HOME": home, "XDG_CACHE_HOME": home},
        )
        try:
            yield b
        finally:
            b.close()
    finally:
        pw.stop()
        shutil.rmtree(home, ignore_errors=True)


def offline_context(browser, viewport=(1280, 720)):
    """A browser context for pages opened from disk with the network cut: every request that is
    not for a local file (``file:``, ``data:``, ``blob:``) is aborted and its URL appended to the
    returned list, so a test can assert that nothing was fetched from elsewhere."""
    ctx = browser.new_context(viewport={"width": viewport[0], "height": viewport[1]})
    aborted: list[str] = []

    def route(r):
        if r.request.url.startswith(("file:", "data:", "blob:")):
            r.continue_()
        else:
            aborted.append(r.request.url)
            r.abort()

    ctx.route("**/*", route)
    return ctx, aborted


def wait(predicate, timeout: float, what: str, interval: float = 0.2):
    """Poll ``predicate`` until it returns something truthy (returned), or fail
    after ``timeout`` s.
    """
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(interval)


def session_of(lab, notebook):
    for s in lab.api("sessions"):
        if s.get("path") == notebook or s.get("notebook", {}).get("path") == notebook:
            return s
    return None


def kernel_idle(lab, kernel_id) -> bool:
    k = lab.api(f"kernels/{kernel_id}")
    return k["execution_state"] == "idle" and k.get("connections", 0) >= 1


def open_and_run_all(page, lab, notebook: str, timeout: float = 150):
    """Open ``notebook`` in its own workspace, Run All Cells, wait until every cell ran; return the
    session.
    """
    import re

    workspace = re.sub(r"\W", "", notebook)
    page.goto(f"{lab.url}/lab/workspaces/{workspace}/tree/{notebook}?reset&token={lab.token}")
    session = wait(lambda: session_of(lab, notebook), 60, f"a kernel session for {notebook}")
    # The toolbar's kernel indicator says idle too early (RECIPES.md): ask the server.
    wait(
        lambda: kernel_idle(lab, session["kernel"]["id"]), 60, "the kernel to be idle and connected"
    )
    page.locator(".jp-Notebook").first.wait_for()
    page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Run$")).click()
    page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Run All Cells$")).click()

    def finished():
        prompts = page.locator(".jp-Notebook .jp-InputArea-prompt").all_inner_texts()
        return (
            prompts
            and not any("*" in p for p in prompts)
            and all(re.search(r"\[\d+\]", p) or not p.strip() for p in prompts)
            and kernel_idle(lab, session["kernel"]["id"])
        )

    wait(finished, timeout, f"{notebook} to finish running")
    return session


def end_session(lab, session, context) -> None:
    """Shut a test's notebook session (its kernel) down, best effort; close its browser context."""
    try:
        if session is not None:
            lab.api(f"sessions/{session['id']}", method="DELETE")
    except Exception:
        pass  # the server may be going down with the test: nothing more to clean
    context.close()
