"""The explorer's front-end widget: an anywidget ``AnyWidget`` running ``explorer.js``, with the
readout's styles in ``_css``; its traits are listed in :mod:`attnlib.widgets.framework.wire`.

The class is made on first use, so ``import attnlib.widgets`` loads neither anywidget nor
ipywidgets.
"""

from __future__ import annotations

from pathlib import Path

from attnlib.widgets.framework.wire import MAX_FAST

__all__ = ["CSS", "view_class"]

_ESM = Path(__file__).with_name("explorer.js")
# The picture never wider than the notebook (a 1280 px browser leaves JupyterLab's output about
# 850 px): a wider canvas is scaled down whole, keeping its proportions (issue 16). The head
# view's readout (13 rows of one entry each, below its wide picture) shows two entries a line:
# its query token, then (key r, weight r) and its row and head statistics in pairs.
CSS = """
.attnlib-canvas canvas{max-width:100%;height:auto !important}
.attnlib-readout table{border-collapse:collapse}
.attnlib-readout th{text-align:left;padding:0 0.8em 0 0}
.attnlib-readout td{text-align:right;padding:0 0.4em;font-family:monospace}
.attnlib-canvas[data-builder="head_view"] .attnlib-readout tbody{display:grid;
grid-template-columns:repeat(2,max-content max-content);column-gap:0.8em}
.attnlib-canvas[data-builder="head_view"] .attnlib-readout tr{display:contents}
.attnlib-canvas[data-builder="head_view"] .attnlib-readout tr:first-child td{grid-column:2/-1;
text-align:left}
.attnlib-canvas[data-layout="narrow"][data-builder="head_view"] .attnlib-readout tbody{
grid-template-columns:max-content max-content}
.attnlib-canvas[data-layout="narrow"] .attnlib-readout{overflow-wrap:anywhere}
"""


def _make_view_class():
    import anywidget
    import traitlets

    class ExplorerView(anywidget.AnyWidget):
        """The front end: a <canvas> drawing the scene, and the readout (``explorer.js``); its
        traits are listed in :mod:`attnlib.widgets.framework.wire`."""

        _esm = _ESM
        _css = CSS
        scene = traitlets.Dict().tag(sync=True)
        fast = traitlets.List().tag(sync=True)
        groups = traitlets.List().tag(sync=True)
        meta = traitlets.Dict().tag(sync=True)
        words = traitlets.Dict().tag(sync=True)
        v0, v1, v2, v3, v4, v5 = (traitlets.Any(None).tag(sync=True) for _ in range(MAX_FAST))

    return ExplorerView


_VIEW = None


def view_class():
    """The ``ExplorerView`` class (made once)."""
    global _VIEW
    if _VIEW is None:
        _VIEW = _make_view_class()
    return _VIEW
