"""Interactive explorers for the notebooks; see :mod:`attnlib.widgets.base` for how to write one.

``BUILDERS`` maps a name to a builder that returns an :class:`~attnlib.widgets.base.Explorer`
(every builder is callable with no arguments). Each builder module is imported here, one line
each, so that importing ``attnlib.widgets`` fills the registry.
"""

from attnlib.widgets.base import BUILDERS, Explorer, figure_backend, new_figure, register  # noqa: F401

# One line per builder module (other authors: add yours below, keep one import per line).
from attnlib.widgets.query import query_explorer  # noqa: F401,E402
from attnlib.widgets.pooling import kernel_regression_explorer, additive_attention_explorer  # noqa: F401,E402
from attnlib.widgets.scaling import scaling_explorer  # noqa: F401,E402
from attnlib.widgets.jacobian import jacobian_explorer  # noqa: F401,E402
from attnlib.widgets.worked import two_key_explorer  # noqa: F401,E402
from attnlib.widgets.masking import masking_explorer  # noqa: F401,E402
from attnlib.widgets.heads import heads_explorer  # noqa: F401,E402
from attnlib.widgets.positions import positions_explorer  # noqa: F401,E402
from attnlib.widgets.decoding import decoding_explorer  # noqa: F401,E402
from attnlib.widgets.online_softmax import online_softmax_explorer  # noqa: F401,E402
