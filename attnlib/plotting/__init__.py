"""The drawing layer: take data (tensors or arrays, any device), return matplotlib artists.

Every function here draws into an ``ax`` you pass (or a fresh one from pyplot when ``ax`` is
None, so a notebook cell shows it), titles and labels what it draws, and returns the artists it
made (the explorers do not update matplotlib artists: they draw on a canvas in the browser).
Nothing here calls ``plt.show()`` or touches the global ``rcParams``, and nothing here computes
attention: the math modules do, and pass their results in.

Tensors are moved to the CPU (as float64 numpy arrays) at the boundary by :func:`to_numpy`.
Modules by concept: ``matrices`` (heatmaps, hatched hidden cells), ``points`` (2-D queries, keys,
values and their hull), ``curves`` (bars, histograms, curves) and ``panels`` (one picture per
idea of the course, drawn from computed results).
"""

from attnlib.util._extras import require_extra

require_extra("widgets", what="attnlib.plotting")

from attnlib.plotting._core import masked, to_numpy
from attnlib.plotting.curves import curves, hist_bars, weight_bars
from attnlib.plotting.matrices import cell_labels, hatch_overlay, heatmap, weights_rgba
from attnlib.plotting.panels import (
    jacobian_panels,
    kernel_regression_panels,
    mixing_segment,
    score_asymmetry_panels,
    sharpness_curves,
    two_query_weights,
    variance_errorbars,
)
from attnlib.plotting.points import QKVArtists, convex_hull, qkv_points

__all__ = [
    "to_numpy",
    "masked",
    "heatmap",
    "cell_labels",
    "hatch_overlay",
    "weights_rgba",
    "weight_bars",
    "curves",
    "hist_bars",
    "convex_hull",
    "qkv_points",
    "QKVArtists",
    "kernel_regression_panels",
    "score_asymmetry_panels",
    "variance_errorbars",
    "sharpness_curves",
    "jacobian_panels",
    "mixing_segment",
    "two_query_weights",
]
