"""The notebook-08 settings in attnlib.course.examples and the committed weights of the trained
model."""

from __future__ import annotations

import re
import tomllib
from dataclasses import FrozenInstanceError, asdict, replace
from pathlib import Path

import pytest
import torch

import attnlib.course.examples as examples
from attnlib.course.decoding import anti_diagonal_mass
from attnlib.course.examples import (
    DEFAULT_SOURCE,
    Seq2SeqConfig,
    TrainConfig,
    trained_reversal_model,
    untrained_reversal_model,
)
from attnlib.models.seq2seq.model import Seq2SeqTransformer, greedy_decode
from attnlib.models.seq2seq.toy_tasks import EOS, NUM_SPECIAL, _split_of, make_batch, token_labels

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK_08 = ROOT / "notebooks" / "08_encoder_decoder.py"


def _prose_numbers(pattern: str) -> tuple[str, ...]:
    """The groups of the one match of ``pattern`` in notebook 08's text."""
    found = re.findall(pattern, NOTEBOOK_08.read_text())
    assert len(found) == 1, f"notebook 08 should say {pattern!r} once; found {found}"
    return found[0]


def test_configs_are_frozen_and_hold_what_notebook_08_says():
    config, train = Seq2SeqConfig(), TrainConfig()
    with pytest.raises(FrozenInstanceError):
        config.d_model = 8
    # The reference is notebook 08's prose, not a copy of the defaults: a changed setting that the
    # text still states otherwise fails here.
    d, heads = _prose_numbers(r"\$d = (\d+)\$, (\d+) heads; all its settings")
    assert (config.d_model, config.num_heads) == (int(d), int(heads))
    n, first, last = _prose_numbers(r"the source is (\d+) letters drawn from `(\w)`–`(\w)`")
    assert train.seq_len == int(n)
    letters = [chr(c) for c in range(ord(first), ord(last) + 1)]
    # the vocabulary is the three special tokens, then exactly those letters
    assert token_labels(range(config.vocab_size)) == ["·", "<s>", "</s>", *letters]
    every, size, pct = _prose_numbers(
        r"Every (\d+) steps the model decodes (\d+) sequences of the held-out split.*?"
        r"at least ([\d.]+)%"
    )
    assert (train.eval_every, train.eval_size) == (int(every), int(size))
    assert f"{train.target_accuracy:.{len(pct.partition('.')[2])}%}" == f"{pct}%"
    # "the target is the same letters backwards": the config's task, on its own sources
    gen = torch.Generator().manual_seed(0)
    batch = make_batch(train.task, 64, train.seq_len, config.vocab_size, split=None, generator=gen)
    assert torch.equal(batch.tgt_out[:, : train.seq_len], batch.src.flip(1))
    assert torch.all(batch.tgt_out[:, train.seq_len] == EOS)
    V, D, F = config.vocab_size, config.d_model, config.d_ff
    attn = 4 * (D * D + D)
    ffn = D * F + F + F * D + D
    encoder = attn + ffn + 2 * 2 * D  # two LayerNorms
    decoder = 2 * attn + ffn + 3 * 2 * D
    expected = 2 * V * D + encoder + decoder + D * V + V
    assert sum(p.numel() for p in Seq2SeqTransformer(config).parameters()) == expected


@pytest.mark.parametrize(
    "kwargs,error,match",
    [
        (dict(vocab_size=4), ValueError, "vocab_size must be >= 5"),
        (dict(d_model=30, num_heads=4), ValueError, "num_heads=4 must divide d_model=30"),
        (dict(num_heads=0), ValueError, "num_heads must be >= 1"),
        (dict(d_ff=3.0), TypeError, "d_ff must be an int"),
        (dict(dropout=1.0), ValueError, "dropout must be in \\[0, 1\\)"),
        (dict(dropout="0"), TypeError, "dropout must be a number"),
        (dict(norm_first=1), TypeError, "norm_first must be True or False"),
    ],
)
def test_model_config_rejects_impossible_settings(kwargs, error, match):
    with pytest.raises(error, match=match):
        Seq2SeqConfig(**kwargs)


def test_default_source_is_held_out_and_six_different_letters():
    src = torch.tensor([DEFAULT_SOURCE])
    assert len(set(DEFAULT_SOURCE)) == 6
    assert all(NUM_SPECIAL <= t < Seq2SeqConfig().vocab_size for t in DEFAULT_SOURCE)
    assert bool(_split_of(src, torch.tensor([6])).all())  # never drawn for training


def test_committed_weights_match_the_configs():
    with examples.reversal_weights_file().open("rb") as f:
        saved = torch.load(f, map_location="cpu", weights_only=True)
    assert saved["model_config"] == asdict(Seq2SeqConfig())
    assert saved["train_config"] == asdict(TrainConfig())
    fresh = Seq2SeqTransformer(Seq2SeqConfig()).state_dict()
    assert saved["state_dict"].keys() == fresh.keys()
    for name, tensor in saved["state_dict"].items():
        assert tensor.shape == fresh[name].shape and tensor.dtype == torch.float32, name
    assert Path(str(examples.reversal_weights_file())).stat().st_size < 500_000  # small: float32


def test_committed_weights_decode_reversal(device):
    model = trained_reversal_model(device)
    assert not model.training and next(model.parameters()).device.type == device.type
    test = make_batch("reverse", 2000, 6, 13, split="test", device=device)  # unseen sequences
    decoded = greedy_decode(model, test.src, test.src_valid_lens)
    tokens, maps = decoded.tokens, decoded.cross_weights
    correct = (tokens == test.tgt_out).all(dim=1).float().mean()  # full rows, EOS included
    assert (
        float(correct) >= 0.99
    )  # stopped at >= 99.5% of 2048 held-out; 0.99 is 4 s.e. below 0.995
    assert anti_diagonal_mass(maps[-1], test.src_valid_lens) > 0.5
    src = torch.tensor([DEFAULT_SOURCE], device=device)
    assert greedy_decode(model, src).tokens[0, :6].tolist() == list(DEFAULT_SOURCE[::-1])


def test_stale_weights_are_refused(monkeypatch):
    monkeypatch.setattr(examples, "TrainConfig", lambda: replace(TrainConfig(), lr=1e-3))
    with pytest.raises(ValueError, match="re-create it"):
        trained_reversal_model()


def test_weights_are_package_data():
    """An installed attnlib (not only this checkout) ships the weights file."""
    package_data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"][
        "package-data"
    ]["attnlib"]
    assert examples.REVERSAL_WEIGHTS in package_data


def test_untrained_model_is_repeatable_and_leaves_the_global_rng_alone():
    torch.manual_seed(123)
    before = torch.get_rng_state()
    a, b = untrained_reversal_model(), untrained_reversal_model()
    assert torch.equal(torch.get_rng_state(), before)
    for pa, pb in zip(a.parameters(), b.parameters(), strict=True):
        assert torch.equal(pa, pb)
    assert not untrained_reversal_model(seed=1).output.weight.equal(a.output.weight)
    assert not a.training


@pytest.mark.claim("C33")
def test_c33_positions_exist_beyond_the_training_length_but_the_rule_does_not_carry_over():
    # The committed model saw only 6-letter sources. Its position table covers 16 positions, so a
    # source of 8 letters can be encoded and decoded (finite outputs, positions in range), yet
    # reversing it is not what it learned: exact-sequence accuracy collapses away from length 6.
    # The reference is the task's own target (the reversed source), not the model.
    from attnlib.models.seq2seq.training import sequence_accuracy

    model = trained_reversal_model()
    config = Seq2SeqConfig()
    acc = {}
    for n in (4, 6, 8):
        assert n + 2 <= config.max_positions  # the positions are computable: inside the table
        batch = make_batch(
            "reverse",
            500,
            n,
            config.vocab_size,
            split="test",
            generator=torch.Generator().manual_seed(10),
        )
        decoded = greedy_decode(model, batch.src, batch.src_valid_lens)
        assert all(torch.isfinite(c).all() for c in decoded.cross_weights)
        acc[n] = sequence_accuracy(decoded.tokens, batch.tgt_out)
    assert acc[6] >= 0.99, acc
    assert acc[4] <= 0.1 and acc[8] <= 0.1, acc
