"""Notebook 07's second reversal model (trained on source lengths 2..6): its committed weights."""

from __future__ import annotations

import tomllib
from dataclasses import replace
from pathlib import Path

import pytest
import torch

import attnlib.course.examples as examples
from attnlib.course.examples import (
    VARIABLE_LENGTH_TRAIN_CONFIG,
    trained_variable_length_reversal_model,
)
from attnlib.models.seq2seq.model import greedy_decode
from attnlib.models.seq2seq.toy_tasks import make_batch
from attnlib.models.seq2seq.training import sequence_accuracy

ROOT = Path(__file__).resolve().parents[1]


def test_trained_on_lengths_2_to_6():
    assert VARIABLE_LENGTH_TRAIN_CONFIG.min_len == 2
    assert VARIABLE_LENGTH_TRAIN_CONFIG.seq_len == 6


@pytest.mark.parametrize("n", [2, 4, 6])
def test_reverses_held_out_sources_of_its_training_lengths(n):
    model = trained_variable_length_reversal_model()
    batch = make_batch(
        "reverse", 200, n, 13, split="test", generator=torch.Generator().manual_seed(3)
    )
    # the reference is the reversed source itself; training stopped at >= 99.5% of 2048
    # held-out sources of lengths 2..6, so 0.97 on 200 is several standard errors below
    tokens = greedy_decode(model, batch.src, batch.src_valid_lens).tokens
    assert sequence_accuracy(tokens, batch.tgt_out) >= 0.97
    assert torch.equal(batch.tgt_out[:, :n], batch.src.flip(1))  # what "reversed" means


def test_stale_weights_are_refused(monkeypatch):
    monkeypatch.setattr(
        examples, "VARIABLE_LENGTH_TRAIN_CONFIG", replace(VARIABLE_LENGTH_TRAIN_CONFIG, lr=1e-3)
    )
    with pytest.raises(ValueError, match="--min-len 2"):
        examples.trained_variable_length_reversal_model()


def test_weights_are_package_data():
    package_data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"][
        "package-data"
    ]["attnlib"]
    assert examples.VARIABLE_LENGTH_REVERSAL_WEIGHTS in package_data
