"""all-MiniLM-L6-v2 rebuilt from attnlib's blocks: ``config`` (its sizes), ``files`` (the pinned
package, its hashes, the checkpoint's names) and ``model`` (the encoder and ``load_minilm``).
Every public name is here: ``from attnlib.models.minilm import load_minilm``.
"""

from attnlib.models.minilm.config import MiniLMConfig
from attnlib.models.minilm.files import (
    INSTALL_HINT,
    MODEL_PACKAGE,
    MODEL_REQUIREMENT,
    MODEL_SHA256,
    UNUSED_TENSORS,
    checkpoint_state,
    minilm_dir,
    verify_model_files,
)
from attnlib.models.minilm.model import (
    BertEmbeddings,
    EncoderOutput,
    MiniLMEncoder,
    TokenBatch,
    load_minilm,
    mean_pool,
)

__all__ = [
    "INSTALL_HINT",
    "MODEL_PACKAGE",
    "MODEL_REQUIREMENT",
    "MODEL_SHA256",
    "UNUSED_TENSORS",
    "MiniLMConfig",
    "TokenBatch",
    "EncoderOutput",
    "BertEmbeddings",
    "MiniLMEncoder",
    "mean_pool",
    "minilm_dir",
    "verify_model_files",
    "checkpoint_state",
    "load_minilm",
]
