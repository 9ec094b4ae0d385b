"""The generated toy tasks (attnlib.models.seq2seq.toy_tasks): targets against closed forms, splits,
devices."""

from __future__ import annotations

import pytest
import torch

import attnlib
from attnlib.models.seq2seq.toy_tasks import (
    BOS,
    EOS,
    NUM_SPECIAL,
    PAD,
    _split_of,
    make_batch,
    token_labels,
)


def _rows(batch):
    for b in range(batch.src.shape[0]):
        n = int(batch.src_valid_lens[b])
        yield b, n, batch.src[b, :n].tolist()


@pytest.mark.parametrize(
    "task,fn", [("reverse", lambda s: s[::-1]), ("copy", list), ("sort", sorted)]
)
def test_task_targets_closed_form(task, fn):
    batch = make_batch(task, 64, 7, 12, min_len=2)
    assert batch.src.shape == (64, 7) and batch.tgt_in.shape == batch.tgt_out.shape == (64, 8)
    for b, n, src in _rows(batch):
        assert all(NUM_SPECIAL <= t < 12 for t in src)
        assert batch.src[b, n:].eq(PAD).all()
        y = fn(src)
        assert batch.tgt_in[b].tolist() == [BOS] + y + [PAD] * (7 - n)
        assert batch.tgt_out[b].tolist() == y + [EOS] + [PAD] * (7 - n)
    assert 2 <= int(batch.src_valid_lens.min()) and int(batch.src_valid_lens.max()) <= 7


def test_train_and_test_splits_are_disjoint():
    train = make_batch("reverse", 2000, 4, 6, split="train")
    test = make_batch("reverse", 2000, 4, 6, split="test")
    assert not _split_of(train.src, train.src_valid_lens).any()
    assert _split_of(test.src, test.src_valid_lens).all()
    train_set = {tuple(r) for r in train.src.tolist()}
    test_set = {tuple(r) for r in test.src.tolist()}
    assert not train_set & test_set
    # About one sequence in five is held out.
    either = make_batch("reverse", 5000, 6, 10, split=None)
    assert 0.15 < float(_split_of(either.src, either.src_valid_lens).float().mean()) < 0.25


def test_generator_makes_batches_repeatable():
    a = make_batch("sort", 8, 5, 9, generator=torch.Generator().manual_seed(3))
    b = make_batch("sort", 8, 5, 9, generator=torch.Generator().manual_seed(3))
    assert torch.equal(a.src, b.src) and torch.equal(a.tgt_out, b.tgt_out)


def test_a_seeded_batch_is_the_same_on_every_device(device):
    """Drawn on the CPU, then moved: the device does not change the data."""
    attnlib.set_seed(5)
    on_cpu = make_batch("reverse", 16, 6, 13, min_len=2, split="test")
    attnlib.set_seed(5)
    moved = make_batch("reverse", 16, 6, 13, min_len=2, split="test", device=device)
    for name in ("src", "src_valid_lens", "tgt_in", "tgt_out"):
        got = getattr(moved, name)
        assert got.device.type == device.type
        assert torch.equal(got.cpu(), getattr(on_cpu, name))


def test_token_labels():
    assert token_labels(torch.tensor([PAD, BOS, EOS, 3, 4, 28, 29])) == [
        "·",
        "<s>",
        "</s>",
        "a",
        "b",
        "z",
        "#29",
    ]
    assert token_labels([5, 3]) == ["c", "a"]


def test_token_labels_bad_input():
    with pytest.raises(ValueError, match="1-D"):
        token_labels(torch.tensor([[3, 4]]))
    with pytest.raises(ValueError, match=">= 0"):
        token_labels([-1])


@pytest.mark.parametrize(
    "kwargs,error,match",
    [
        (dict(vocab_size=4), ValueError, "vocab_size=4 is too small"),
        (dict(split="valid"), ValueError, "split"),
        (dict(task="shuffle"), ValueError, "task must be one of"),
        (dict(min_len=9), ValueError, "min_len=9 is larger than seq_len=3"),
        (dict(batch_size=0), ValueError, "batch_size must be >= 1"),
        (dict(seq_len=2.5), TypeError, "seq_len must be an int"),
        (dict(generator=3), TypeError, "generator must be a torch.Generator"),
    ],
)
def test_make_batch_bad_input(kwargs, error, match):
    args = dict(task="copy", batch_size=2, seq_len=3, vocab_size=9) | kwargs
    with pytest.raises(error, match=match):
        make_batch(
            args.pop("task"),
            args.pop("batch_size"),
            args.pop("seq_len"),
            args.pop("vocab_size"),
            **args,
        )


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA generator")
def test_make_batch_wants_a_cpu_generator():
    with pytest.raises(ValueError, match="CPU generator"):
        make_batch("copy", 2, 3, 9, generator=torch.Generator(device="cuda"))
