"""`make lab` serves JupyterLab on 127.0.0.1 with token authentication on."""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_lab_serves_with_token(tmp_path):
    port = _free_port()
    env = dict(os.environ, HOME=str(tmp_path), TMPDIR=str(tmp_path),
               JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"))
    log = open(tmp_path / "lab.log", "w+")
    proc = subprocess.Popen(["make", "--no-print-directory", "lab", f"PORT={port}"], cwd=ROOT,
                            env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        token = None
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and token is None:
            assert proc.poll() is None, (tmp_path / "lab.log").read_text()
            match = re.search(rf"http://127\.0\.0\.1:{port}/lab\?token=(\w+)",
                              (tmp_path / "lab.log").read_text())
            token = match.group(1) if match else None
            time.sleep(0.5)
        assert token, f"no token URL printed:\n{(tmp_path / 'lab.log').read_text()}"
        base = f"http://127.0.0.1:{port}/api/status"
        while _status(f"{base}?token={token}") != 200 and time.monotonic() < deadline:
            time.sleep(0.5)
        assert _status(f"{base}?token={token}") == 200
        assert _status(base) == 403  # token auth is on
        with pytest.raises(OSError):  # bound to loopback only: no other interface answers
            other = socket.gethostbyname(socket.gethostname())
            if other.startswith("127."):
                raise OSError("only loopback addresses here")
            socket.create_connection((other, port), timeout=2).close()
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
        log.close()
