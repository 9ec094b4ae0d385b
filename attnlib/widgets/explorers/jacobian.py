"""The Jacobian explorer: stretch a row of logits; watch its Jacobian and gradient shrink.

Teaches C13 (J = diag(a) − a aᵀ, its rows sum to 0: raising one score lowers the others, so an
upstream gradient on one weight reaches *every* score, with opposite signs) and C14 (as the row
saturates towards one-hot, every entry of J, and so the gradient, goes to 0; a row whose top two
logits tie stays sensitive inside the pair).
"""

from __future__ import annotations

import numpy as np
import torch

from attnlib.core.softmax import masked_softmax, softmax_jacobian
from attnlib.course.examples import DEFAULT_LOGITS
from attnlib.course.scaling import jacobian_norm, spread_logits
from attnlib.util.i18n import N_, _, gettext
from attnlib.widgets.framework.artists import Bars, Heatmap, Line, Points
from attnlib.widgets.framework.controls import dropdown, float_slider
from attnlib.widgets.framework.explorer import Explorer, builder
from attnlib.widgets.framework.scene import Frame, Panel, Scene, bar_slots, cells, weights_panel

__all__ = ["jacobian_explorer", "BASES", "UPSTREAMS", "base_logits", "upstream_gradient"]

_MAX_SPREAD = 10.0
_CLIM = 0.25  # |J_jr| <= 1/4 for every softmax row
#: Base-logit choices: (label, value).
BASES = ((N_("the given logits"), "given"), (N_("the same, top two tied"), "tie"))
#: Upstream-gradient choices g = ∂L/∂a: (label, value).
UPSTREAMS = (
    ("L = a1 (g = e1)", "a1"),
    ("L = a2 (g = e2)", "a2"),
    ("g = (0.5, −1, 0.25, 0, 1, …)", "mixed"),
)
_MIXED = (0.5, -1.0, 0.25, 0.0, 1.0, -0.5, 0.75, -0.25)


def base_logits(logits, base: str) -> torch.Tensor:
    """The row the slider stretches: ``logits`` (``"given"``) or the same with its second largest
    entry raised to tie with the largest (``"tie"``). float64, shape ``(S,)``."""
    z = torch.as_tensor(logits, dtype=torch.float64).clone()
    if base == "tie":
        order = torch.argsort(z, descending=True)
        z[order[1]] = z[order[0]]
    elif base != "given":
        raise ValueError(f"base must be 'given' or 'tie', got {base!r}")
    return z


def upstream_gradient(upstream: str, S: int) -> torch.Tensor:
    """g = ∂L/∂a, ``(S,)``: e1 (``"a1"``), e2 (``"a2"``) or a fixed mixed vector (``"mixed"``)."""
    if upstream in ("a1", "a2"):
        g = torch.zeros(S, dtype=torch.float64)
        g[int(upstream[1]) - 1] = 1.0
        return g
    if upstream == "mixed":
        return torch.tensor(_MIXED[:S], dtype=torch.float64)
    raise ValueError(f"upstream must be 'a1', 'a2' or 'mixed', got {upstream!r}")


@builder(N_("jacobian"))
def jacobian_explorer(
    logits=DEFAULT_LOGITS, spread: float = 1.0, base: str = "given", upstream: str = "a1"
) -> Explorer:
    """A spread slider, a choice of base logits and of upstream gradient (C13, C14).

    Panels: the weights a = softmax(σ·ẑ) (ẑ the base logits standardised, σ the spread); the
    Jacobian J = diag(a) − a aᵀ on a fixed colour scale [−1/4, 1/4]; the upstream gradient
    g = ∂L/∂a beside the gradient that reaches the scores, ∂L/∂z = Jᵀg = a ⊙ (g − a·g); and
    ‖J‖_F, the max weight and ‖∂L/∂z‖ against σ, with the current σ marked.

    Args:
        logits: ``(S,)`` base logits, S = 2 ... 8, not all equal (the slider sets their spread).
        spread: starting spread σ, in [0, 10].
        base: ``"given"`` (``logits``) or ``"tie"`` (the same with the top two tied).
        upstream: ``"a1"`` (L = a1), ``"a2"`` (L = a2) or ``"mixed"`` (a fixed vector in [−1, 1]).
    Returns:
        An :class:`~attnlib.widgets.framework.explorer.Explorer` with controls ``spread``, ``base``
        and ``upstream`` and a readout of the logits, the weights, J, its row sums, g, ∂L/∂z, their
        sum, the largest |J_jr| and ‖J‖_F.
    """
    z_given = torch.as_tensor(logits, dtype=torch.float64)
    if z_given.ndim != 1 or not 2 <= z_given.shape[0] <= 8:
        raise ValueError(
            f"logits must be a flat list of 2 to 8 numbers, got shape {tuple(z_given.shape)}"
        )
    if not 0.0 <= spread <= _MAX_SPREAD:
        raise ValueError(f"spread must lie in [0, {_MAX_SPREAD}], got {spread}")
    if base not in [b for _label, b in BASES]:
        raise ValueError(f"base must be one of {[b for _label, b in BASES]}, got {base!r}")
    S = z_given.shape[0]
    units = {
        b: spread_logits(base_logits(z_given, b), 1.0) for _label, b in BASES
    }  # rejects all-equal logits now
    upstream_gradient(upstream, S)
    labels = [f"z{j + 1}" for j in range(S)]

    sweep = torch.linspace(0.0, _MAX_SPREAD, 101, dtype=torch.float64)  # (T,)
    curves = {}
    for _label, b in BASES:
        w = masked_softmax(units[b] * sweep[:, None])  # (T, S)
        curves[b] = (jacobian_norm(w), w.amax(dim=-1), w)

    def compute(spread, base, upstream):
        z = units[base] * float(spread)  # (S,)
        a = masked_softmax(z)  # (S,)
        jac = softmax_jacobian(a)  # (S, S)
        g = upstream_gradient(upstream, S)  # (S,)
        dz = jac.T @ g  # (S,)
        norm, top, w = curves[base]
        grad_curve = (w * (g[None, :] - (w @ g)[:, None])).norm(
            dim=-1
        )  # (T,): ‖a ⊙ (g − a·g)‖ along the sweep
        s = float(spread)
        return Frame(
            arrays={
                "a": a,
                "J": jac,
                "g": g,
                "dz": dz,
                "c_norm": torch.stack([sweep, norm], 1),
                "c_top": torch.stack([sweep, top], 1),
                "c_grad": torch.stack([sweep, grad_curve], 1),
                "m": [[s, float(jacobian_norm(a))], [s, float(a.max())], [s, float(dz.norm())]],
            },
            readout={
                N_("logits z"): z,
                N_("weights a"): a,
                N_("J (row j = a_j)"): jac,
                N_("row sums of J"): jac.sum(dim=-1) + 0.0,
                N_("upstream g = ∂L/∂a"): g,
                "∂L/∂z = Jᵀg": dz + 0.0,
                N_("sum of ∂L/∂z"): float(dz.sum()) + 0.0,
                N_("largest |J_jr|"): jac.abs().max(),
                "‖J‖_F": jacobian_norm(a),
                "‖∂L/∂z‖": dz.norm(),
            },
        )

    scene = _scene(S, labels)
    controls = {
        "spread": float_slider(
            _("logit spread σ"),
            0.0,
            _MAX_SPREAD,
            float(spread),
            step=0.1,
            readout_format=".1f",
            width="340px",
        ),
        "base": dropdown(
            _("base logits"), [(gettext(lab), v) for lab, v in BASES], base, width="260px"
        ),
        "upstream": dropdown(_("upstream"), list(UPSTREAMS), upstream, width="300px"),
    }
    return Explorer(controls, compute, scene, columns=labels, digits=3)


def _scene(S: int, labels) -> Scene:
    """The weights, the Jacobian, the gradients and the columns."""
    xs = np.arange(S, dtype=np.float64)
    slots = bar_slots(S, labels)
    w_panel = weights_panel(
        "a",
        S,
        labels,
        title=_("weights a = softmax(z)"),
        xlabel=_("key j (weight a_j of logit z_j)"),
        ylabel=_("weight a_j"),
    )
    j_panel = Panel(
        [Heatmap("J", vmin=-_CLIM, vmax=_CLIM, cmap="cividis", annotate=True, colorbar=True)],
        title="J = diag(a) − a aᵀ",
        **cells(S, S, [f"a{j + 1}" for j in range(S)], labels),
    )
    g_panel = Panel(
        [
            Line([[-0.6, 0.0], [S - 0.4, 0.0]], color="0.5", width=0.8),
            Bars("g", x=xs - 0.2, width=0.38, color="0.65", label="g = ∂L/∂a"),
            Bars("dz", x=xs + 0.2, width=0.38, color="C0", label="∂L/∂z = Jᵀg"),
        ],
        ylim=(-1.1, 1.7),  # headroom above the bars (|g_j| <= 1) for the legend
        title=_("g and ∂L/∂z"),
        xlabel=_("key j"),
        ylabel=_("gradient"),
        legend="upper right",
        **slots,
    )
    c_panel = Panel(
        [
            Line("c_norm", color="C3", width=1.5, label="‖J‖_F"),
            Line("c_top", color="C0", width=1.5, dash=True, label=_("max weight")),
            Line("c_grad", color="0.3", width=1.2, label="‖∂L/∂z‖"),
            Points("m", color="black", size=5, filled=False),
        ],
        xlim=(0.0, _MAX_SPREAD),
        ylim=(0.0, 1.6),  # headroom above the max weight (<= 1) for the legend
        title=_("norms against σ"),
        xlabel=_("spread σ (∝ 1/temperature)"),
        ylabel=_("norm or weight"),
        legend="upper right",
    )
    # One row, so that controls, picture and readout fit 620 px of height (a 2 x 2 grid does not);
    # short titles, and the widest column for J, so titles and J's entries do not run together.
    scene = Scene(
        [w_panel, j_panel, g_panel, c_panel],
        cols=4,
        width=880,
        height=270,
        col_widths=[0.85, 1.35, 0.9, 0.9],
    )
    return scene
