"""The shipped training runs (``attnlib/data/induction.pt``): writing and reading them, the
model at a snapshot, and where the phase change happened in a record."""

from __future__ import annotations

from importlib import resources

import torch

from attnlib.course.induction.training import SHIPPED, TrainRun, TrainSetup, induction_model
from attnlib.models.gpt import GPT
from attnlib.util._checks import check_int

__all__ = ["RUN_FILE", "save_runs", "load_run", "snapshot_model", "phase_change"]


#: The shipped runs (``python -m attnlib.course.induction --write``): the 2-layer model's
#: float16 snapshots and metrics, the 1-layer control's and the fixed-length run's metrics and
#: final weights.
RUN_FILE = "data/induction.pt"


def save_runs(path, runs: dict[str, tuple[GPT, TrainRun]], snapshot_stride: int = 3) -> None:
    """Write ``{name: (model, run)}`` to ``path`` (final weights float32, snapshots float16; every
    ``snapshot_stride``-th snapshot, the first and the last kept, to keep the file small)."""
    blob = {}
    for name, (model, run) in runs.items():
        n = len(run.snapshots)
        keep = sorted(set(range(0, n, snapshot_stride)) | ({n - 1} if n else set()))
        blob[name] = {
            "setup": run.setup.to_dict(),
            "state_dict": {k: v.detach().float().clone() for k, v in model.state_dict().items()},
            "losses": run.losses.to(torch.float16),
            "eval_steps": run.eval_steps,
            "metrics": {k: v.float() for k, v in run.metrics.items()},
            "snapshots": [run.snapshots[i] for i in keep],
            "snapshot_steps": run.snapshot_steps[keep] if n else run.snapshot_steps,
            "seconds": run.seconds,
        }
    torch.save(blob, path)


def load_run(name: str = "two_layer") -> tuple[GPT, TrainRun]:
    """The shipped run ``name`` (``"two_layer"``, ``"one_layer"`` or ``"fixed_length"``): its
    final model (eval mode,
    CPU, float32) and its :class:`TrainRun` (losses float16 as stored, snapshots float16)."""
    with resources.files("attnlib").joinpath(RUN_FILE).open("rb") as f:
        blob = torch.load(f, map_location="cpu", weights_only=True)
    if name not in blob:
        raise ValueError(f"name must be one of {sorted(blob)}, got {name!r}")
    d = blob[name]
    setup = TrainSetup.from_dict(d["setup"])
    want = SHIPPED[name]
    if setup != want:
        raise ValueError(
            f"{RUN_FILE} holds a {name!r} run trained with {setup}, but the current setting is "
            f"{want}; re-create it with `python -m attnlib.course.induction --write`"
        )
    model = induction_model(setup)
    model.load_state_dict(d["state_dict"])
    run = TrainRun(
        setup=setup,
        losses=d["losses"].float(),
        eval_steps=d["eval_steps"],
        metrics=d["metrics"],
        snapshots=d["snapshots"],
        seconds=float(d["seconds"]),
        snapshot_steps=d["snapshot_steps"],
    )
    return model.eval(), run


def snapshot_model(run: TrainRun, index: int) -> GPT:
    """The model at ``run.snapshot_steps[index]`` (from its float16 snapshot, in float32)."""
    check_int("index", index, min=0, max=len(run.snapshots) - 1)
    model = induction_model(run.setup)
    model.load_state_dict({k: v.float() for k, v in run.snapshots[index].items()})
    return model.eval()


def phase_change(run: TrainRun, share: float = 0.25) -> dict[str, float]:
    """The drop of the in-context score, found from the record (no threshold on its value).

    Between consecutive evaluations the score falls at some rate per step; the drop is the
    contiguous stretch of intervals around the fastest one in which it falls at least ``share``
    times that fastest rate.

    Returns:
        ``{"start", "end"}`` (evaluated steps), ``"fall"``: how much of the score's whole fall
        (first evaluation to last) happens between them, and ``"before"``/``"after"``: the score
        at ``start`` and ``end``.
    """
    ic = run.metrics["in_context"].double()
    steps = run.eval_steps.double()
    rate = (ic[:-1] - ic[1:]) / (steps[1:] - steps[:-1])  # (E-1,) fall per step
    top = int(rate.argmax())
    lo = hi = top
    while lo > 0 and rate[lo - 1] >= share * rate[top]:
        lo -= 1
    while hi < len(rate) - 1 and rate[hi + 1] >= share * rate[top]:
        hi += 1
    total = (ic[0] - ic[-1]).item()
    return {
        "start": int(steps[lo]),
        "end": int(steps[hi + 1]),
        "fall": (ic[lo] - ic[hi + 1]).item() / total if total else 0.0,
        "before": ic[lo].item(),
        "after": ic[hi + 1].item(),
    }
