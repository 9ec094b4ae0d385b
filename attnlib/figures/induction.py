"""Key picture of notebook 11: the phase change of a 2-layer attention-only GPT trained on
sequences with repeated segments of random length, and its 1-layer control (C51, C53).

Drawn from the training record that attnlib ships (:func:`attnlib.course.induction.load_run`:
losses and held-out metrics stored at training time), with no model evaluated, so it is the same
on every machine and pixel-tested like the others.
"""

from __future__ import annotations

from attnlib.figures import register_figure
from attnlib.util.i18n import _

__all__ = ["induction_phase_change_figure"]


@register_figure("induction_phase_change", formats=("png", "svg"))
def induction_phase_change_figure():
    """Left: held-out loss on a segment's first and second occurrence over training, the drop
    (found by :func:`~attnlib.course.induction.phase_change`) shaded. Right: the in-context score
    (second minus first) of the 2-layer model and of the 1-layer control."""
    from matplotlib.figure import Figure

    from attnlib.course import induction as ind

    _model, run = ind.load_run("two_layer")
    _model1, run1 = ind.load_run("one_layer")
    pc = ind.phase_change(run)
    steps = run.eval_steps.numpy()
    m = {k: v.double().numpy() for k, v in run.metrics.items() if v.dim() == 1}
    fig = Figure(figsize=(10, 3.4), layout="constrained")
    left, right = fig.subplots(1, 2)
    for ax in (left, right):
        ax.axvspan(pc["start"], pc["end"], color="C3", alpha=0.12, lw=0)
    left.plot(steps, m["first"], "C0-", label=_("first occurrence"))
    left.plot(steps, m["second"], "C1-", label=_("second occurrence (copyable)"))
    left.set(
        xlabel=_("training step"),
        ylabel=_("held-out loss (nats)"),
        title=_("2-layer model: a slow stretch, then the drop (shaded)"),
    )
    left.legend(fontsize=8, loc="lower left")
    right.plot(steps, m["in_context"], "C3-", label=_("2 layers"))
    right.plot(
        run1.eval_steps.numpy(),
        run1.metrics["in_context"].double().numpy(),
        "0.45",
        ls="--",
        label=_("1 layer (control)"),
    )
    right.axhline(0.0, color="0.7", lw=0.8)
    right.set(
        xlabel=_("training step"),
        ylabel=_("second − first loss (nats)"),
        title=_("in-context score: 2 layers and the 1-layer control"),
    )
    right.legend(fontsize=8, loc="lower left")
    return fig
