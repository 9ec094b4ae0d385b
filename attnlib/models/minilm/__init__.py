"""all-MiniLM-L6-v2 rebuilt from attnlib's blocks: ``config`` (its sizes), ``files`` (the pinned
package, its hashes, the checkpoint's names) and ``model`` (the encoder and ``load_minilm``).
Every public name is here: ``from attnlib.models.minilm import load_minilm``.
"""

# Each module's ``__all__`` is the one list of its public names; the package re-exports them all.
from attnlib.models.minilm import config, files, model
from attnlib.models.minilm.config import *  # noqa: F403
from attnlib.models.minilm.files import *  # noqa: F403
from attnlib.models.minilm.model import *  # noqa: F403

__all__ = files.__all__ + config.__all__ + model.__all__
