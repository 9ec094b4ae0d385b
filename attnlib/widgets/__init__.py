"""Interactive explorers for the notebooks; see :mod:`attnlib.widgets.explorer` for how to write one.

``BUILDERS`` maps a name to a builder returning an explorer (every builder is callable with no
arguments). New-framework builders (:class:`~attnlib.widgets.explorer.Explorer`) are listed here
explicitly, one line each; builders not yet ported still use ``attnlib.widgets.base`` (ipympl) and
its ``@register``, whose entries are merged in below until the last one is ported.
"""

from attnlib.widgets import base as _base
from attnlib.widgets.base import Explorer as LegacyExplorer  # noqa: F401
from attnlib.widgets.base import figure_backend, new_figure  # noqa: F401
from attnlib.widgets.explorer import Explorer, Frame  # noqa: F401
from attnlib.widgets.query import query_explorer
from attnlib.widgets.scaling import scaling_explorer
from attnlib.widgets.decoding import decoding_explorer
from attnlib.widgets.online_softmax import online_softmax_explorer

# Not yet ported (each registers itself in base.BUILDERS with @register):
from attnlib.widgets.pooling import kernel_regression_explorer, additive_attention_explorer  # noqa: F401,E402
from attnlib.widgets.jacobian import jacobian_explorer  # noqa: F401,E402
from attnlib.widgets.worked import two_key_explorer  # noqa: F401,E402
from attnlib.widgets.masking import masking_explorer  # noqa: F401,E402
from attnlib.widgets.heads import heads_explorer  # noqa: F401,E402
from attnlib.widgets.positions import positions_explorer  # noqa: F401,E402

#: name -> builder. Porting a builder: add its line here and delete its @register.
BUILDERS = {
    "query": query_explorer,
    "scaling": scaling_explorer,
    "decoding": decoding_explorer,
    "online_softmax": online_softmax_explorer,
    **_base.BUILDERS,
}
