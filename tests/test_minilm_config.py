"""MiniLMConfig rejects sizes no encoder can have, with the same messages as the toy model's
config (both check their sizes with one helper, ``attnlib.util._checks.check_config_sizes``)."""

from __future__ import annotations

import pytest

from attnlib.models.minilm import MiniLMConfig


def test_the_default_is_all_minilm_l6_v2():
    c = MiniLMConfig()
    assert (c.vocab_size, c.d_model, c.num_layers, c.num_heads, c.d_ff) == (30522, 384, 6, 12, 1536)


@pytest.mark.parametrize(
    "kwargs,error,match",
    [
        (dict(d_model=30, num_heads=4), ValueError, "num_heads=4 must divide d_model=30"),
        (dict(num_heads=0), ValueError, "num_heads must be >= 1"),
        (dict(num_layers=0), ValueError, "num_layers must be >= 1"),
        (dict(d_ff=3.0), TypeError, "d_ff must be an int"),
        (dict(type_vocab_size=True), TypeError, "type_vocab_size must be an int"),
        (dict(eps=0.0), ValueError, "eps must be a finite number > 0"),
        (dict(eps="1e-12"), TypeError, "eps must be a number"),
        (dict(pad_id=-1), ValueError, "pad_id"),
        (dict(vocab_size=10, pad_id=10), ValueError, "pad_id"),
    ],
)
def test_impossible_sizes_are_rejected_naming_the_field(kwargs, error, match):
    with pytest.raises(error, match=match):
        MiniLMConfig(**kwargs)
