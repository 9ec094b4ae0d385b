"""The drawing layer: take data (tensors or arrays, any device), return matplotlib artists.

Every function here draws into an ``ax`` you pass (or a fresh one from pyplot when ``ax`` is
None, so a notebook cell shows it), titles and labels what it draws, and returns the artists it
made (the explorers do not update matplotlib artists: they draw on a canvas in the browser).
Nothing here calls ``plt.show()`` or touches the global ``rcParams``, and nothing here computes
attention: the math modules do, and pass their results in.

Tensors are moved to the CPU (as float64 numpy arrays) at the boundary by :func:`to_numpy`.
Modules by concept: ``matrices`` (heatmaps, hatched hidden cells), ``points`` (2-D queries, keys,
values and their hull), ``curves`` (bars, histograms, curves), ``panels`` (one picture per
idea of the course, drawn from computed results) and ``mixing`` (the worked example's output as a
mix of the values). Every word drawn is said in the current language (:mod:`attnlib.util.i18n`).
"""

from attnlib.util._extras import require_extra

require_extra("widgets", what="attnlib.plotting")

# Each module's ``__all__`` is the one list of its public names; the package re-exports them all.
from attnlib.plotting import _core, matrices, mixing, panels, points
from attnlib.plotting import curves as _curves  # the module: ``curves`` is its function (below)
from attnlib.plotting._core import *  # noqa: F403
from attnlib.plotting.curves import *  # noqa: F403
from attnlib.plotting.matrices import *  # noqa: F403
from attnlib.plotting.mixing import *  # noqa: F403
from attnlib.plotting.panels import *  # noqa: F403
from attnlib.plotting.points import *  # noqa: F403

__all__ = (
    _core.__all__
    + matrices.__all__
    + _curves.__all__
    + points.__all__
    + panels.__all__
    + mixing.__all__
)
