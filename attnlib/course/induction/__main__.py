"""``python -m attnlib.course.induction [--write]``: re-train the shipped runs (and write
``attnlib/data/induction.pt``)."""

from __future__ import annotations

from importlib import resources

from attnlib.course.induction.records import RUN_FILE, phase_change, save_runs
from attnlib.course.induction.training import SHIPPED, train_induction


def _main() -> None:  # pragma: no cover - writes the shipped file
    import argparse

    p = argparse.ArgumentParser(description="Train the shipped induction runs (notebook 11).")
    p.add_argument("--write", action="store_true", help="write attnlib/" + RUN_FILE)
    a = p.parse_args()
    runs = {
        name: train_induction(setup, keep_snapshots=name == "two_layer")
        for name, setup in SHIPPED.items()
    }
    for name, (_, run) in runs.items():
        print(name, f"{run.seconds:.0f} s", phase_change(run))
    if a.write:
        path = resources.files("attnlib").joinpath(RUN_FILE)
        save_runs(path, runs)
        print("wrote", path)


if __name__ == "__main__":  # pragma: no cover
    _main()
