"""The course's demo inputs (attnlib.course.examples): frozen results, read by name."""

from __future__ import annotations

from dataclasses import FrozenInstanceError

import pytest
import torch

from attnlib.course.examples import DemoBatch, demo_batch


def test_demo_batch_is_a_frozen_dataclass_of_seeded_normal_draws():
    demo = demo_batch(batch=2, num_tokens=5, d_k=3, d_v=4, seed=7)
    assert isinstance(demo, DemoBatch) and not isinstance(demo, tuple)
    with pytest.raises(TypeError):  # no positional unpacking
        q, k, v = demo
    with pytest.raises(FrozenInstanceError):
        demo.q = demo.k
    # The documented draw: q, k, v in that order from a generator seeded with `seed`.
    gen = torch.Generator().manual_seed(7)
    shapes = {"q": (2, 5, 3), "k": (2, 5, 3), "v": (2, 5, 4)}
    for name, shape in shapes.items():
        want = torch.randn(*shape, generator=gen, dtype=torch.float64)
        assert torch.equal(getattr(demo, name), want), name
    assert not torch.equal(demo_batch(seed=1).q, demo_batch(seed=0).q)
