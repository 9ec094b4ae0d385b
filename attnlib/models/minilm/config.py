"""The sizes of all-MiniLM-L6-v2 (a BERT encoder), read from its ``config.json``."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from attnlib.util._checks import check_config_sizes, check_int, check_number_above

__all__ = ["MiniLMConfig"]

# MiniLMConfig's fields that must be positive ints.
_SIZES = (
    "vocab_size",
    "d_model",
    "num_layers",
    "num_heads",
    "d_ff",
    "max_positions",
    "type_vocab_size",
)


@dataclass(frozen=True)
class MiniLMConfig:
    """The sizes of a BERT encoder, read from its ``config.json``."""

    vocab_size: int = 30522
    d_model: int = 384
    num_layers: int = 6
    num_heads: int = 12
    d_ff: int = 1536
    max_positions: int = 512
    type_vocab_size: int = 2
    eps: float = 1e-12
    pad_id: int = 0

    def __post_init__(self):
        check_config_sizes(self, _SIZES)
        check_number_above("eps", self.eps, 0.0)
        check_int("pad_id", self.pad_id, min=0, max=self.vocab_size - 1)

    @classmethod
    def from_json(cls, path: Path) -> MiniLMConfig:
        """Read a transformers ``BertConfig`` file; only what this encoder
        implements is accepted.
        """
        raw = json.loads(Path(path).read_text())
        expected = {
            "model_type": "bert",
            "hidden_act": "gelu",
            "position_embedding_type": "absolute",
        }
        for key, value in expected.items():
            if raw.get(key, value) != value:
                raise ValueError(f"{path}: {key} must be {value!r}, got {raw[key]!r}")
        return cls(
            vocab_size=raw["vocab_size"],
            d_model=raw["hidden_size"],
            num_layers=raw["num_hidden_layers"],
            num_heads=raw["num_attention_heads"],
            d_ff=raw["intermediate_size"],
            max_positions=raw["max_position_embeddings"],
            type_vocab_size=raw["type_vocab_size"],
            eps=raw["layer_norm_eps"],
            pad_id=raw.get("pad_token_id", 0),
        )
