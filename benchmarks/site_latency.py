"""What the hand feels on the static site: each explorer in a page opened from disk, in Chromium.

Run: ``python benchmarks/site_latency.py`` (builds the site into a temporary folder first), or
``python benchmarks/site_latency.py --site site`` to measure a site already built.

Every page is opened from ``file://`` with the network cut (every request that is not for a local
file is aborted). Per explorer, on its first live slider (a native ``<input type="range">``):

* **drawn after open**: ``performance.now()`` (from the navigation's start) when the explorer's
  canvas has painted its first frame.
* **key -> pixels**: focus the slider, press ArrowRight/ArrowLeft (``--presses`` times); from the
  ``keydown`` event's own ``timeStamp`` to the end of the first animation frame whose canvas pixels
  differ (checked in a task queued after each frame's callbacks; ``../shared/RECIPES.md``). The
  clock is read when that task starts, before it hashes the canvas: the hash (``getImageData`` of
  the whole canvas, ~2 ms for the head view's) is the benchmark's own work, not the page's.
  Median and p90.
* **drag keep-up**: for ``--drag-seconds``, 60 Hz ``input`` events from the page (the slider's value
  moved one step there and back, as a drag moves it); distinct pictures painted / value changes,
  the changes counted up to 30 per second (as ``benchmarks/browser_latency.py`` counts them).
* **lag**: from the last input event (the hand stops) to the last changed picture.

The drag's pictures are checked as the key press's are: in a task after each frame, the clock read
before the hash (a check inside the frame's own callbacks runs before the explorer's paint, and
so sees each picture one frame late).

Targets (issue 16): median <= 16 ms, p90 <= 33 ms, keep-up 100 %, lag <= 33 ms, every explorer
drawn <= 2 s after open. The last line reads
``site: slowest key->pixels median X ms; lowest drag keep-up Y%; largest lag Z ms;
largest page W MB`` (one line).
A benchmark, not a test: the numbers depend on the machine and its load.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "browser"))

from harness import chromium, offline_context  # noqa: E402

SETUP = """(host) => {
  const canvas = host.querySelector('.attnlib-canvas canvas');
  const root = host.querySelector('.attnlib-canvas');
  const ctx = canvas.getContext('2d');
  const hash = () => {
    const d = new Uint32Array(ctx.getImageData(0, 0, canvas.width, canvas.height).data.buffer);
    let h = 2166136261;
    for (let i = 0; i < d.length; i += 2) h = Math.imul(h ^ d[i], 16777619);
    return h;
  };
  window.__site = { hash, root, lat: null };
}"""

ARM = """() => {
  // the next keydown: from its timeStamp to the end of the first frame with new pixels
  const s = window.__site; s.lat = null; const h0 = s.hash(); let t = null;
  document.addEventListener('keydown', (e) => {
    t = e.timeStamp;
    requestAnimationFrame(function tick() {
      setTimeout(() => {
        const at = performance.now(); // the frame has ended: the hash below is our own work
        if (s.hash() !== h0) s.lat = at - t; else requestAnimationFrame(tick);
      }, 0);
    });
  }, { capture: true, once: true });
}"""

DRAG = """([input, seconds]) => new Promise((done) => {
  const s = window.__site, root = s.root, n = Number(input.max) + 1;
  const paints = [], changes = [];
  let lastHash = s.hash(), lastValues = root.dataset.values, running = true, i = 0, lastEvent = 0;
  const watch = () => setTimeout(() => {
    // after each frame (as the key press is timed), the time taken before our own hash
    if (!running) return;
    const at = performance.now(), h = s.hash();
    if (h !== lastHash && root.dataset.values !== lastValues) {
      paints.push(at); lastHash = h; lastValues = root.dataset.values;
    }
    requestAnimationFrame(watch);
  }, 0);
  requestAnimationFrame(watch);
  const start = Number(input.value), steps = Math.round(seconds * 60);
  const timer = setInterval(() => {
    i += 1;
    // one step per event, there and back across (up to) 30 steps
    const span = Math.min(30, n - 1), u = i % (2 * span);
    const lo = Math.max(0, Math.min(start, n - 1 - span));
    const k = Math.max(0, Math.min(n - 1, lo + (u <= span ? u : 2 * span - u)));
    if (String(k) !== input.value) {
      input.value = String(k); input.dispatchEvent(new Event('input', { bubbles: true }));
      changes.push(performance.now());
    }
    lastEvent = performance.now();
    if (i >= steps) {
      clearInterval(timer);
      setTimeout(() => { running = false; done({ paints, changes, lastEvent }); }, 500);
    }
  }, 1000 / 60);
})"""


def measure_page(browser, path: Path, presses: int, seconds: float) -> list[dict]:
    ctx, aborted = offline_context(browser)
    page = ctx.new_page()
    page.goto(path.as_uri())
    rows = []
    hosts = page.locator(".site-explorer").all()
    drawn = []
    for host in hosts:
        host.locator(".attnlib-canvas[data-frames]:not([data-frames='0'])").wait_for(timeout=30_000)
    drawn = page.evaluate(
        "() => Array.from(document.querySelectorAll('.site-explorer')).map(h => "
        "Number(h.dataset.drawnAt || NaN))"
    )
    for host, t_drawn in zip(hosts, drawn):
        name = host.get_attribute("data-builder")
        host.scroll_into_view_if_needed()
        slider = host.locator("input[type=range]:not([disabled])").first
        host.evaluate(SETUP)
        lat = []
        slider.focus()
        for k in range(presses):
            at_max = slider.input_value() == slider.get_attribute("max")
            at_min = slider.input_value() == "0"
            key = "ArrowLeft" if at_max or (k % 2 and not at_min) else "ArrowRight"
            page.evaluate(ARM)
            page.keyboard.press(key)
            page.wait_for_function("() => window.__site.lat !== null", timeout=10_000)
            lat.append(page.evaluate("() => window.__site.lat"))
            page.wait_for_timeout(30)
        res = slider.evaluate(f"(e) => ({DRAG})([e, {seconds}])")
        changes, paints = res["changes"], res["paints"]
        counted = min(len(changes), int(30 * seconds))
        keep = min(1.0, len(paints) / counted) if counted else 1.0
        lag = max(0.0, (paints[-1] - res["lastEvent"])) if paints else float("nan")
        rows.append(
            {
                "page": path.stem,
                "explorer": name,
                "drawn_ms": t_drawn,
                "median": statistics.median(lat),
                "p90": float(np.percentile(lat, 90)),
                "keep": keep,
                "fps": len(paints) / seconds,
                "lag": lag,
            }
        )
    ctx.close()
    assert not aborted, f"{path.name} asked the network for {aborted}"
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--site", type=Path, help="a built site (default: build one now)")
    ap.add_argument("--presses", type=int, default=30)
    ap.add_argument("--drag-seconds", type=float, default=2.0)
    ap.add_argument("--pages", help="comma-separated page stems, e.g. 02_scaling_variance")
    a = ap.parse_args(argv)
    site = a.site.resolve() if a.site else None
    if site is None:
        site = Path(tempfile.mkdtemp(prefix="attnlib-site-"))
        env = {**os.environ, "OMP_NUM_THREADS": "1"}
        cmd = [sys.executable, "-m", "tools.site", "build", "--out", str(site)]
        cmd += a.pages.split(",") if a.pages else []  # only the pages measured
        subprocess.run(cmd, check=True, env=env, cwd=REPO, stdout=subprocess.DEVNULL)
    pages = sorted(site.glob("[0-9][0-9]_*.html"))
    if a.pages:
        keep = set(a.pages.split(","))
        pages = [p for p in pages if p.stem in keep]
    rows = []
    with chromium() as browser:
        for p in pages:
            rows += measure_page(browser, p, a.presses, a.drag_seconds)
    print(
        "| page | explorer | drawn after open ms | key->pixels median ms | p90 ms | drag keep-up | "
        "drag fps | lag ms |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['page']} | {r['explorer']} | {r['drawn_ms']:.0f} | {r['median']:.1f} | "
            f"{r['p90']:.1f} | {100 * r['keep']:.0f}% | {r['fps']:.0f} | {r['lag']:.0f} |"
        )
    largest = max(p.stat().st_size for p in site.glob("*.html")) / 1e6
    print(
        f"site: slowest key->pixels median {max(r['median'] for r in rows):.1f} ms; "
        f"lowest drag keep-up {100 * min(r['keep'] for r in rows):.0f}%; "
        f"largest lag {max(r['lag'] for r in rows):.0f} ms; largest page {largest:.1f} MB"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
