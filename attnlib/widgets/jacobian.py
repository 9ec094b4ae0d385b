"""The Jacobian explorer: stretch a row of logits and watch the softmax Jacobian shrink.

Teaches C13 (J = diag(a) − a aᵀ, its rows sum to 0: raising one score lowers the others) and
C14 (as the row saturates towards one-hot, every entry of J, and so the gradient, goes to 0).
"""

from __future__ import annotations

import torch

from attnlib import plotting
from attnlib.examples import DEFAULT_LOGITS
from attnlib.scaling import jacobian_norm, spread_logits
from attnlib.softmax import masked_softmax, softmax_jacobian
from attnlib.widgets.base import Explorer, float_slider, new_figure, register

__all__ = ["jacobian_explorer"]

_MAX_SPREAD = 10.0
_CLIM = 0.25  # |J_jr| <= 1/4 for every softmax row


@register("jacobian")
def jacobian_explorer(logits=DEFAULT_LOGITS, spread: float = 1.0) -> Explorer:
    """A slider for the spread of a row of logits: weights, Jacobian heatmap and its norm (C13, C14).

    Args:
        logits: ``(S,)`` base logits, S = 2 ... 8, not all equal; their shape is kept and their
            spread (standard deviation) is set by the slider.
        spread: starting spread, in [0, 10].
    Returns:
        An :class:`~attnlib.widgets.base.Explorer` with control ``spread`` and a readout of the
        logits, the weights, J, its row sums of J, its largest entry and its Frobenius norm.
    """
    z0 = torch.as_tensor(logits, dtype=torch.float64)
    if z0.ndim != 1 or not 2 <= z0.shape[0] <= 8:
        raise ValueError(f"logits must be a flat list of 2 to 8 numbers, got shape {tuple(z0.shape)}")
    if not 0.0 <= spread <= _MAX_SPREAD:
        raise ValueError(f"spread must lie in [0, {_MAX_SPREAD}], got {spread}")
    S = z0.shape[0]
    spread_logits(z0, 1.0)  # rejects a row of equal logits now, not on the first slider move
    labels = [f"z{j + 1}" for j in range(S)]

    sweep = torch.linspace(0.0, _MAX_SPREAD, 201, dtype=torch.float64)  # (T,)
    sweep_weights = masked_softmax(spread_logits(z0, 1.0) * sweep[:, None])  # (T, S)
    sweep_norm = jacobian_norm(sweep_weights)  # (T,)
    sweep_top = sweep_weights.amax(dim=-1)  # (T,)

    controls = {"spread": float_slider("logit spread σ (1/temperature)", 0.0, _MAX_SPREAD, float(spread),
                                       step=0.1, readout_format=".1f", width="380px")}
    fig, (ax_w, ax_j, ax_n) = new_figure(1, 3, figsize=(9.6, 3.2), width_ratios=[0.9, 1.1, 1.0])

    a0 = masked_softmax(spread_logits(z0, spread))
    bars = plotting.weight_bars(a0, ax=ax_w, labels=labels, title="weights a = softmax(z)",
                                xlabel="logit")
    image = plotting.heatmap(softmax_jacobian(a0), ax=ax_j, row_labels=[f"a{j + 1}" for j in range(S)],
                             col_labels=labels, title="J = diag(a) − a aᵀ", xlabel="∂ / ∂z_r",
                             ylabel="a_j", cmap="RdBu_r", vmin=-_CLIM, vmax=_CLIM)

    plotting.curves(sweep, {"‖J‖_F": sweep_norm, "max weight": sweep_top}, ax=ax_n,
                    title="saturation kills the gradient", xlabel="spread σ", ylabel="",
                    styles=["C3-", "C0--"])
    (m_norm,) = ax_n.plot([spread], [float(jacobian_norm(a0))], "o", color="C3", ms=7)
    (m_top,) = ax_n.plot([spread], [float(a0.max())], "o", color="C0", ms=7)
    ax_n.set_xlim(0.0, _MAX_SPREAD)
    ax_n.set_ylim(0.0, 1.05)

    def update(spread):
        z = spread_logits(z0, float(spread))  # (S,)
        a = masked_softmax(z)  # (S,)
        jac = softmax_jacobian(a)  # (S, S)
        plotting.set_bar_heights(bars, a)
        image.set_data(plotting.masked(jac))
        norm = jacobian_norm(a)
        m_norm.set_data([float(spread)], [float(norm)])
        m_top.set_data([float(spread)], [float(a.max())])
        return {
            "logits z": z,
            "weights a": a,
            "J (row j = a_j)": jac,
            "row sums of J": jac.sum(dim=-1) + 0.0,
            "largest |J_jr|": jac.abs().max(),
            "‖J‖_F": norm,
        }

    dynamic = [*bars.patches, image, m_norm, m_top]
    return Explorer(controls, update, fig, dynamic=dynamic, columns=labels, digits=3)
