"""What the hand feels: each explorer's slider driven in Chromium against JupyterLab.

Run: ``python benchmarks/browser_latency.py``.

Starts its own JupyterLab (loopback, random token, temporary copies of the notebooks) and Debian's
Chromium through Playwright, as ``tests/browser`` does (``tests/browser/harness.py``). For every
explorer with a slider in each notebook, after Run All:

* **key -> pixels**: focus the first slider's handle, press ArrowRight/ArrowLeft (``--presses``
  times); the time from the ``keydown`` to the first animation frame whose canvas pixels differ
  (a ``requestAnimationFrame`` loop in the page hashes the explorer's ``<canvas>``). Median (p90).
* **drag keep-up**: mouse down on the handle, then 60 Hz ``mousemove``/``pointermove`` events from
  the page for ``--drag-seconds``, there and back across the slider once a second; distinct pictures
  painted / slider value changes (the slider's readout), the changes counted up to 30 per second;
  also the pictures painted per second.
* **lag**: from the last pointer event (the hand stops) to the last changed picture.

Targets (issue 13): median <= 40 ms, p90 <= 80 ms, keep-up >= 90 %, lag <= 100 ms. The last line
reads ``browser: slowest key->pixels median X ms; lowest drag keep-up Y%; largest lag Z ms``.
Limit it with ``--notebooks 01_qkv_roles,02_scaling_variance``. A benchmark, not a test: the
numbers depend on the machine and its load.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "browser"))

from harness import chromium, lab_server, open_and_run_all, wait  # noqa: E402

CANVAS = ".attnlib-canvas canvas, .jupyter-matplotlib-canvas-div canvas"

MONITOR = """([canvas, readout]) => {
  const ctx = canvas.getContext('2d');
  const m = {paints: [], values: [], keys: [], running: true};
  const hash = () => {
    const d = new Uint32Array(ctx.getImageData(0, 0, canvas.width, canvas.height).data.buffer);
    let h = 2166136261;
    for (let i = 0; i < d.length; i += 2) h = Math.imul(h ^ d[i], 16777619);
    return h;
  };
  m.last = hash(); m.lastVal = readout.textContent;
  const loop = () => {
    if (!m.running) return;
    const now = performance.now(), h = hash(), v = readout.textContent;
    if (h !== m.last) { m.paints.push(now); m.last = h; }
    if (v !== m.lastVal) { m.values.push(now); m.lastVal = v; }
    requestAnimationFrame(loop);
  };
  m.onkey = () => m.keys.push(performance.now());
  document.addEventListener('keydown', m.onkey, true);
  requestAnimationFrame(loop);
  window.__mon = m;
}"""

STOP = (
    "() => { const m = window.__mon; m.running = false; "
    "document.removeEventListener('keydown', m.onkey, true); }"
)

DRAG = """([x, y, amp, n]) => new Promise((done) => {
  // 60 Hz pointer events, there and back across the slider once a second (a triangle wave)
  const el = document.documentElement; let i = 0; window.__mon.dragStart = performance.now();
  const step = () => {
    i += 1; const u = (i / 60) % 1, cx = x + amp * (1 - Math.abs(1 - 2 * u));
    for (const type of ['pointermove', 'mousemove']) {
      const E = type === 'pointermove' ? PointerEvent : MouseEvent;
      el.dispatchEvent(new E(type, {clientX: cx, clientY: y, pageX: cx, pageY: y, buttons: 1,
                                    bubbles: true}));
    }
    if (i < n) setTimeout(step, 1000 / 60);
    else {
      window.__mon.handStop = performance.now();
      el.dispatchEvent(new MouseEvent('mouseup', {clientX: cx, clientY: y, bubbles: true}));
      el.dispatchEvent(new PointerEvent('pointerup', {clientX: cx, clientY: y, bubbles: true}));
      done(true);
    }
  };
  setTimeout(step, 1000 / 60);
})"""


def _monitor(page, explorer):
    canvas = explorer.locator(CANVAS).first
    readout = explorer.locator(".widget-slider .widget-readout").first
    page.evaluate(MONITOR, [canvas.element_handle(), readout.element_handle()])


def key_latencies(page, explorer, presses: int) -> list[float]:
    handle = explorer.locator(".widget-slider .noUi-handle").first
    handle.scroll_into_view_if_needed()
    handle.focus()
    _monitor(page, explorer)
    out, key = [], "ArrowRight"
    for _ in range(presses):
        n_paints, n_vals = page.evaluate(
            "() => [window.__mon.paints.length, window.__mon.values.length]"
        )
        page.keyboard.press(key)
        try:
            wait(
                lambda: page.evaluate(f"() => window.__mon.values.length > {n_vals}"),
                1.0,
                "value",
                0.02,
            )
        except AssertionError:  # at the end of the range: turn round
            key = "ArrowLeft" if key == "ArrowRight" else "ArrowRight"
            continue
        try:
            wait(
                lambda: page.evaluate(f"() => window.__mon.paints.length > {n_paints}"),
                3.0,
                "paint",
                0.02,
            )
        except AssertionError:
            out.append(float("inf"))
            continue
        t_key, t_paint = page.evaluate(
            f"() => [window.__mon.keys.at(-1), window.__mon.paints[{n_paints}]]"
        )
        out.append(t_paint - t_key)
        time.sleep(0.15)
        key = "ArrowLeft" if key == "ArrowRight" else "ArrowRight"
    page.evaluate(STOP)
    return out


def drag(page, explorer, seconds: float) -> dict:
    handle = explorer.locator(".widget-slider .noUi-handle").first
    track = explorer.locator(".widget-slider .noUi-target").first
    handle.scroll_into_view_if_needed()
    hb, tb = handle.bounding_box(), track.bounding_box()
    x, y = hb["x"] + hb["width"] / 2, hb["y"] + hb["height"] / 2
    right, left = tb["x"] + tb["width"] - x, x - tb["x"]
    n = int(round(seconds * 60))
    amp = 0.9 * (right if right >= left else -left)
    _monitor(page, explorer)
    page.mouse.move(x, y)
    page.mouse.down()
    page.evaluate(DRAG, [x, y, amp, n])
    time.sleep(1.0)  # let the last frames land
    page.mouse.up()
    m = page.evaluate(
        "() => ({paints: window.__mon.paints, values: window.__mon.values, "
        "start: window.__mon.dragStart, stop: window.__mon.handStop})"
    )
    page.evaluate(STOP)
    paints = [t for t in m["paints"] if t >= m["start"]]
    values = [t for t in m["values"] if m["start"] <= t <= m["stop"] + 50]
    duration = (m["stop"] - m["start"]) / 1000
    wanted = min(len(values), 30 * duration)
    keep = min(1.0, len(paints) / wanted) if wanted else float("nan")
    lag = max(0.0, paints[-1] - m["stop"]) if paints else float("inf")
    return {"fps": len(paints) / duration, "keep": keep, "lag": lag, "changes": len(values)}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--notebooks",
        default=None,
        help="comma-separated names, e.g. 01_qkv_roles,02_scaling_variance",
    )
    parser.add_argument("--presses", type=int, default=20)
    parser.add_argument("--drag-seconds", type=float, default=2.0)
    args = parser.parse_args(argv)
    names = (
        sorted(p.stem for p in (REPO / "notebooks").glob("*.ipynb"))
        if args.notebooks is None
        else [n.strip().removesuffix(".ipynb") for n in args.notebooks.split(",")]
    )
    tmp = Path(tempfile.mkdtemp(prefix="attnlib-latency-"))
    for n in names:
        shutil.copy(REPO / "notebooks" / f"{n}.ipynb", tmp)
    rows = []
    print(
        f"browser latency: Chromium + JupyterLab, {args.presses} key presses, "
        f"a {args.drag_seconds:g} s drag "
        f"at 60 Hz per explorer"
    )
    header = (
        f"{'notebook':<26} {'explorer':<18} {'key->px ms':>10} {'p90':>6} "
        f"{'drag fps':>8} {'keep-up':>8} {'lag ms':>7}"
    )
    print(header)
    print("-" * len(header))
    try:
        with lab_server(tmp) as lab, chromium() as browser:
            for n in names:
                page = browser.new_context(
                    viewport={"width": 1400, "height": 1000}, device_scale_factor=1
                ).new_page()
                session = open_and_run_all(page, lab, f"{n}.ipynb")
                explorers = page.locator(".attnlib-explorer")
                for i in range(explorers.count()):
                    ex = explorers.nth(i)
                    if (
                        ex.locator(".widget-slider .noUi-handle").count() == 0
                        or ex.locator(CANVAS).count() == 0
                    ):
                        continue
                    kind = ex.locator(".attnlib-canvas").first.get_attribute("data-builder") or "?"
                    time.sleep(0.5)
                    keys = [k for k in key_latencies(page, ex, args.presses)]
                    d = drag(page, ex, args.drag_seconds)
                    med, p90 = statistics.median(keys), float(np.percentile(keys, 90))
                    rows.append((med, d["keep"], d["lag"]))
                    print(
                        f"{n:<26} {kind:<18} {med:>10.0f} {p90:>6.0f} "
                        f"{d['fps']:>8.1f} {d['keep']:>7.0%} {d['lag']:>7.0f}"
                    )
                    sys.stdout.flush()
                lab.api(f"sessions/{session['id']}", method="DELETE")
                page.context.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if not rows:
        print("no explorer with a slider found")
        return 1
    print("targets: median <= 40 ms, p90 <= 80 ms, keep-up >= 90%, lag <= 100 ms")
    print(
        f"browser: slowest key->pixels median {max(r[0] for r in rows):.0f} ms; "
        f"lowest drag keep-up {min(r[1] for r in rows):.0%}; "
        f"largest lag {max(r[2] for r in rows):.0f} ms"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
