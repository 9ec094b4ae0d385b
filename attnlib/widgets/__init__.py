"""Interactive explorers for the notebooks; ``attnlib/widgets/PORTING.md`` says how to write one.

``BUILDERS`` maps a name to a builder returning an
:class:`~attnlib.widgets.framework.explorer.Explorer` (every builder is callable with no arguments:
its defaults are the notebook's teaching setting).
"""

from attnlib.util._extras import require_extra

require_extra("widgets", what="attnlib.widgets (the explorers)")

from attnlib.widgets.explorers.additive import additive_attention_explorer
from attnlib.widgets.explorers.decoding import decoding_explorer
from attnlib.widgets.explorers.head_view import head_view_explorer
from attnlib.widgets.explorers.heads import heads_explorer
from attnlib.widgets.explorers.induction import induction_explorer
from attnlib.widgets.explorers.jacobian import jacobian_explorer
from attnlib.widgets.explorers.masking import masking_explorer
from attnlib.widgets.explorers.online_softmax import online_softmax_explorer
from attnlib.widgets.explorers.pooling import kernel_regression_explorer
from attnlib.widgets.explorers.positions import positions_explorer
from attnlib.widgets.explorers.query import query_explorer
from attnlib.widgets.explorers.scaling import scaling_explorer
from attnlib.widgets.explorers.worked import two_key_explorer
from attnlib.widgets.framework.explorer import Explorer, Frame

__all__ = [
    "BUILDERS",
    "Explorer",
    "Frame",
    "additive_attention_explorer",
    "decoding_explorer",
    "head_view_explorer",
    "heads_explorer",
    "induction_explorer",
    "jacobian_explorer",
    "kernel_regression_explorer",
    "masking_explorer",
    "online_softmax_explorer",
    "positions_explorer",
    "query_explorer",
    "scaling_explorer",
    "two_key_explorer",
]

#: name -> builder, in course order (the browser test and the benchmarks use these names).
BUILDERS = {
    "kernel_regression": kernel_regression_explorer,  # 00
    "additive_attention": additive_attention_explorer,  # 00
    "query": query_explorer,  # 01
    "scaling": scaling_explorer,  # 02
    "jacobian": jacobian_explorer,  # 03
    "two_key": two_key_explorer,  # 04
    "masking": masking_explorer,  # 05
    "heads": heads_explorer,  # 06
    "positions": positions_explorer,  # 07
    "decoding": decoding_explorer,  # 08
    "online_softmax": online_softmax_explorer,  # 09
    "head_view": head_view_explorer,  # 10
    "induction": induction_explorer,  # 11
}
