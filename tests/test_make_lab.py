"""`make lab` serves JupyterLab on 127.0.0.1 only, with token authentication on, and without the
announcements ("get notified about news?") plugin."""

from __future__ import annotations

import json
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
ANNOUNCEMENTS = "@jupyterlab/apputils-extension:announcements"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, response.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as exc:
        return exc.code, ""


def _listening_addresses(port: int) -> set[str]:
    """Local addresses of the TCP sockets listening on `port`, from the kernel's
    /proc/net tables.
    """
    found = set()
    for table, width in (("/proc/net/tcp", 8), ("/proc/net/tcp6", 32)):
        if not os.path.exists(table):
            continue
        with open(table) as f:
            next(f)
            for line in f:
                local, _, state = line.split()[1:4]
                address, port_hex = local.split(":")
                if int(port_hex, 16) == port and state == "0A":  # 0A = LISTEN
                    raw = bytes.fromhex(address)
                    if width == 8:  # IPv4, stored little-endian
                        found.add(socket.inet_ntop(socket.AF_INET, raw[::-1]))
                    else:  # IPv6: four little-endian 32-bit words
                        words = b"".join(raw[i : i + 4][::-1] for i in range(0, 16, 4))
                        found.add(socket.inet_ntop(socket.AF_INET6, words))
    return found


def _non_loopback_address() -> str | None:
    """An address of this machine that is not loopback, if it has one (no packet is sent)."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect(("192.0.2.1", 9))  # TEST-NET-1: a UDP "connect" only picks a route
            address = s.getsockname()[0]
    except OSError:
        return None
    return None if address.startswith("127.") or address == "0.0.0.0" else address


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_lab_serves_on_loopback_with_token_and_no_news_prompt(tmp_path):
    port = _free_port()
    env = dict(
        os.environ,
        HOME=str(tmp_path),
        TMPDIR=str(tmp_path),
        JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"),
    )
    log = open(tmp_path / "lab.log", "w+")
    # -o: never (re)install the environment from this test, even if the stamp looks stale.
    proc = subprocess.Popen(
        ["make", "--no-print-directory", "-o", ".venv/.installed", "lab", f"PORT={port}"],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        token = None
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and token is None:
            assert proc.poll() is None, (tmp_path / "lab.log").read_text()
            match = re.search(
                rf"http://127\.0\.0\.1:{port}/lab\?token=(\w+)", (tmp_path / "lab.log").read_text()
            )
            token = match.group(1) if match else None
            time.sleep(0.5)
        assert token, f"no token URL printed:\n{(tmp_path / 'lab.log').read_text()}"
        base = f"http://127.0.0.1:{port}"
        while _get(f"{base}/api/status?token={token}")[0] != 200 and time.monotonic() < deadline:
            time.sleep(0.5)
        assert _get(f"{base}/api/status?token={token}")[0] == 200
        assert _get(f"{base}/api/status")[0] == 403  # token auth is on

        # Bound to loopback only: the kernel's table of listening sockets says so ...
        if os.path.exists("/proc/net/tcp"):
            assert _listening_addresses(port) == {"127.0.0.1"}
        # ... and, where this machine has another address, nothing answers there.
        other = _non_loopback_address()
        if other is not None:
            with pytest.raises(OSError):
                socket.create_connection((other, port), timeout=2).close()
        if not os.path.exists("/proc/net/tcp") and other is None:
            pytest.skip("no way to see the listening address here (no /proc, no other address)")

        # The lab's page config (what the front end loads) disables the announcements plugin.
        status, html = _get(f"{base}/lab?token={token}")
        assert status == 200
        match = re.search(
            r'<script id="jupyter-config-data" type="application/json">(.*?)</script>',
            html,
            re.DOTALL,
        )
        assert match, "no page config in /lab"
        disabled = json.loads(match.group(1)).get("disabledExtensions", [])
        assert ANNOUNCEMENTS in disabled, disabled
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
        log.close()
