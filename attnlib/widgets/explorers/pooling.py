"""Explorer for attention pooling: Nadaraya–Watson kernel regression.

- :func:`kernel_regression_explorer` — 1-D data, a query slider, a kernel-width slider and a score
  selector (Gaussian, −distance, dot, cosine, and the wrong +distance): the weight of every key,
  the fitted curve, the prediction at the query, the train / true MSE of the current width and the
  effective number of neighbours 1/Σα² (C19–C23).
"""

from __future__ import annotations

import torch

from attnlib.core.pooling import attention_pooling, toy_function, toy_regression_data
from attnlib.util.i18n import N_, _, gettext
from attnlib.widgets.framework.artists import Bars, Line, Points
from attnlib.widgets.framework.controls import dropdown, float_slider, log_slider
from attnlib.widgets.framework.explorer import Explorer, builder
from attnlib.widgets.framework.scene import Frame, Panel, Scene
from attnlib.widgets.framework.tables import grid_table

__all__ = ["kernel_regression_explorer", "SCORE_LABELS"]

#: Dropdown labels for the score functions of :func:`attnlib.core.pooling.pooling_scores`
#: (σ: kernel width).
SCORE_LABELS = (
    (N_("Gaussian: −(x−xᵢ)²/2σ²"), "gaussian"),
    (N_("−distance: −|x−xᵢ|/σ"), "neg_euclidean"),
    (N_("dot: x·xᵢ/σ"), "dot"),
    (N_("cosine: cos(x, xᵢ)/σ"), "cosine"),
    (N_("+distance (wrong): +|x−xᵢ|/σ"), "distance (wrong)"),
)
_SCORES = tuple(v for _label, v in SCORE_LABELS)


@builder(N_("kernel_regression"))
def kernel_regression_explorer(
    n_train: int = 40,
    *,
    seed: int = 0,
    query: float = 2.5,
    bandwidth: float = 0.5,
    score: str = "gaussian",
    noise: float = 0.5,
    x_max: float = 5.0,
) -> Explorer:
    """Nadaraya–Watson regression on toy data with sliders for the query and the kernel width σ.

    Top panel: the training points, the noiseless function (dashed), the range [min yᵢ, max yᵢ]
    (dotted: a weighted mean of the yᵢ never leaves it), the fitted curve
    ``f(x) = Σ_i α(x, x_i) y_i`` and the prediction at the query. Bottom panel: the weight
    α(x, x_i) of every key at the key's position, divided by the largest weight (so narrow and
    wide kernels both fill the panel; the largest weight itself is in the readout).

    Args:
        n_train: number of training points (keys/values).
        seed: seed of the private generator that draws the data (the global one is untouched).
        query: starting query x in ``[0, x_max]`` (on the 0.05 grid).
        bandwidth: starting kernel width / temperature σ in ``[0.05, 5]``.
        score: starting score, one of the values of :data:`SCORE_LABELS`.
        noise: standard deviation of the noise on the targets.
        x_max: the data and the query lie in ``[0, x_max]``.

    Returns:
        An :class:`~attnlib.widgets.framework.explorer.Explorer` with controls ``x``, ``width``,
        ``score``.
    """
    if score not in _SCORES:
        raise ValueError(f"score must be one of {list(_SCORES)}, got {score!r}")
    g = torch.Generator().manual_seed(seed)
    x_train, y_train = toy_regression_data(
        n_train, x_max=x_max, noise=noise, generator=g, dtype=torch.float64
    )  # (S,), (S,)
    grid = torch.linspace(0.0, x_max, 201, dtype=torch.float64)  # (G,) where the curve is drawn
    inside = torch.linspace(
        float(x_train.min()), float(x_train.max()), 200, dtype=torch.float64
    )  # (G',)
    y_true, y_inside = toy_function(grid), toy_function(inside)  # (G,), (G',)
    controls = {
        "x": float_slider(_("query x"), 0.0, x_max, float(query), step=0.05, width="280px"),
        "width": log_slider(
            _("kernel width σ"), -1.3, 0.7, float(bandwidth), step=0.05, width="280px"
        ),
        "score": dropdown(
            _("score"), [(gettext(lab), v) for lab, v in SCORE_LABELS], score, width="300px"
        ),
    }

    @grid_table(controls, "width")  # what the query does not change, for every σ of the slider
    def fits(width, score: str):
        """The fitted curve ``(N, G)`` and both errors ``(N,)`` for each σ of ``width`` ``(N,)``."""
        out = []
        for sigma in width.tolist():
            curve = attention_pooling(grid, x_train, y_train, score, sigma)[0]  # (G,)
            on_train = attention_pooling(x_train, x_train, y_train, score, sigma)[0]  # (S,)
            on_inside = attention_pooling(inside, x_train, y_train, score, sigma)[0]  # (G',)
            mse = [((on_train - y_train) ** 2).mean(), ((on_inside - y_inside) ** 2).mean()]
            out.append((curve, *mse))
        return tuple(torch.stack(col) for col in zip(*out))

    @grid_table(controls, "x", cache=128)  # every query of the slider at once, per (σ, score)
    def pooled(x, width: float, score: str):
        """Predictions ``(N,)`` and weights ``(N, S)`` of the queries ``x`` ``(N,)``."""
        return attention_pooling(x, x_train, y_train, score, width)

    def compute(x, width, score):
        x, width = float(x), float(width)
        pred, w = pooled(x=x, width=width, score=score)
        curve, mse_train, mse_true = fits(width=width, score=score)
        j = int(w.argmax())
        return Frame(
            arrays={
                "fit": torch.stack([grid, curve], 1),  # (G, 2)
                "bars": w / w[j],  # (S,)
                "pred": [[x, float(pred)]],
                "qline": [[x, -10.0], [x, 10.0]],
            },
            readout={
                N_("prediction f(x)"): pred,
                N_("true f(x)"): toy_function(torch.tensor(x, dtype=torch.float64)),
                N_("largest weight"): w[j],
                N_("its key x_i"): x_train[j],
                N_("distance |x − x_i|"): abs(x - float(x_train[j])),
                N_("effective neighbours 1/Σα²"): 1.0 / float((w**2).sum()),
                N_("sum of weights"): w.sum(),
                N_("train MSE (this σ)"): float(mse_train),
                N_("MSE vs true f (this σ)"): float(mse_true),
            },
        )

    scene = _scene(x_train, y_train, grid, y_true, x_max)
    data = {"x_train": x_train, "y_train": y_train}  # for tests and curious readers
    return Explorer(
        controls,
        compute,
        scene,
        title=_("Attention pooling on 1-D data"),
        digits=3,
        data=data,
    )


def _scene(x_train, y_train, grid, y_true, x_max: float) -> Scene:
    """The data, the true and fitted curves and the query (top); the weights (bottom)."""
    y_lo = float(min(y_train.min(), y_true.min())) - 0.5
    y_hi = float(max(y_train.max(), y_true.max())) + 2.9  # legend room above max y_i
    lo, hi = float(y_train.min()), float(y_train.max())
    xl = (-0.1, x_max + 0.1)
    top = Panel(
        [
            Line(
                [[xl[0], lo], [xl[1], lo]],
                color="0.6",
                width=1,
                dash=True,
                label=_("min / max of y_i"),
            ),
            Line([[xl[0], hi], [xl[1], hi]], color="0.6", width=1, dash=True),
            Line(
                torch.stack([grid, y_true], 1),
                color="0.35",
                width=1.2,
                dash=True,
                label=_("true f(x) = 2 sin x + x^0.8"),
            ),
            Points(
                torch.stack([x_train, y_train], 1),
                color="C0",
                size=3,
                label=_("training points (x_i, y_i)"),
            ),
            Line("qline", color="C3", width=1),
            Line("fit", color="C1", width=2, label=_("fitted f(x)")),
            Points("pred", color="C3", marker="*", size=6, label=_("prediction at the query")),
        ],
        xlim=xl,
        ylim=(y_lo, y_hi),
        title=_("Nadaraya–Watson: f(x) = Σ softmax_i(score(x, x_i)) y_i"),
        ylabel="y",
        legend="upper right",
    )
    bottom = Panel(
        [Bars("bars", x=x_train, width=0.05, color="C0"), Line("qline", color="C3", width=1)],
        xlim=xl,
        ylim=(0.0, 1.05),
        xlabel=_("x (keys x_i at the bars)"),
        ylabel=_("α / largest α"),
    )
    # 600 px wide: the readout fits beside it in a 1280 px browser (issue 16)
    scene = Scene([top, bottom], cols=1, width=600, height=420, row_heights=[1.6, 1.0])
    return scene
