"""Training the tiny encoder-decoder (attnlib.models.seq2seq.training): it learns reversal (C40),
repeatably."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

import attnlib
from attnlib.course.decoding import anti_diagonal_mass
from attnlib.course.examples import Seq2SeqConfig, TrainConfig, untrained_reversal_model
from attnlib.models.seq2seq.model import Seq2SeqTransformer, greedy_decode
from attnlib.models.seq2seq.toy_tasks import EOS, PAD, make_batch
from attnlib.models.seq2seq.training import evaluate, sequence_accuracy, train_seq2seq
from attnlib.util.device import num_threads

MODEL, TRAIN = Seq2SeqConfig(), TrainConfig()
SMALL = Seq2SeqConfig(vocab_size=10, d_model=16, num_heads=2, d_ff=16)


@pytest.fixture(scope="module")
def trained():
    """Notebook 08's model and settings (the same configs), trained once for this module."""
    attnlib.set_seed(TRAIN.seed)
    with num_threads(1):  # a model this small trains fastest on one thread
        model = Seq2SeqTransformer(MODEL)
        history = train_seq2seq(model, TRAIN, progress=False)
    return model, history


def test_c40_tiny_model_learns_reversal(trained):
    model, history = trained
    # Training stops at the first evaluation that reaches the config's target (what notebook 08's
    # prose states; test_examples_reversal checks the prose against the config).
    assert history.reached and history.final_accuracy >= TRAIN.target_accuracy
    assert all(a < TRAIN.target_accuracy for a in history.accuracies[:-1])
    assert history.eval_steps == tuple(range(TRAIN.eval_every, history.steps + 1, TRAIN.eval_every))
    assert history.steps == len(history.losses) and history.steps < TRAIN.steps
    assert history.seconds > 0
    assert history.losses[-1] < history.losses[0] / 10
    # 2000 fresh held-out sequences: a model guessing letters gets 10**-6 of them right. Training
    # stops at the first check of 2048 held-out sequences >= 99.5%, so the fresh accuracy is near
    # that (measured 0.9990-1.0 on three fresh draws, on the default and the AVX2 CPU kernels);
    # 0.99 is 4 binomial standard errors (sqrt(0.995 * 0.005 / 2000) = 0.0016) below 0.995.
    test = make_batch("reverse", 2000, TRAIN.seq_len, MODEL.vocab_size, split="test")
    tokens = greedy_decode(model, test.src, test.src_valid_lens).tokens
    assert sequence_accuracy(tokens, test.tgt_out) >= 0.99


def test_c40_cross_attention_is_anti_diagonal(trained):
    model, _ = trained
    test = make_batch("reverse", 256, TRAIN.seq_len, MODEL.vocab_size, split="test")
    maps = greedy_decode(model, test.src, test.src_valid_lens).cross_weights
    assert maps[-1].shape == (256, MODEL.num_heads, TRAIN.seq_len + 1, TRAIN.seq_len)  # C39
    mass = anti_diagonal_mass(maps[-1], test.src_valid_lens)
    assert mass > 0.5  # most of the weight sits on the anti-diagonal
    # ... far more than on the diagonal, which a copy would use ...
    avg = maps[-1].mean(dim=(0, 1))  # (T, S)
    diagonal = torch.stack([avg[t, t] for t in range(TRAIN.seq_len)]).mean()
    assert mass > 3 * float(diagonal)
    # ... and learned: the same model before training is near uniform (1/6) there.
    before = greedy_decode(untrained_reversal_model(), test.src, test.src_valid_lens).cross_weights
    assert mass > 2 * anti_diagonal_mass(before[-1], test.src_valid_lens)


def test_training_is_repeatable_given_the_seed():
    def run():
        attnlib.set_seed(7)
        model = Seq2SeqTransformer(SMALL)
        config = replace(TRAIN, steps=6, eval_every=3, eval_size=32)
        return train_seq2seq(model, config, progress=False).losses

    assert run() == run()


def test_trainer_shows_progress_and_leaves_threads_alone(capsys):
    with num_threads(2):
        model = Seq2SeqTransformer(SMALL)
        config = replace(TRAIN, steps=2, eval_every=1, eval_size=8)
        history = train_seq2seq(model, config, progress=True)
        assert torch.get_num_threads() == 2  # the caller decides the threads
    assert "training on 'reverse'" in capsys.readouterr().err
    assert len(history.accuracies) == 2 and not model.training


def test_evaluate_is_sequence_accuracy_of_greedy_decoding():
    model = Seq2SeqTransformer(SMALL).train()
    batch = make_batch("copy", 16, 4, 10)
    tokens = greedy_decode(model, batch.src, batch.src_valid_lens, max_len=5).tokens
    assert evaluate(model, batch) == sequence_accuracy(tokens, batch.tgt_out)
    assert model.training  # evaluation ran in eval mode and gave the mode back


def test_sequence_accuracy_closed_form():
    tgt = torch.tensor([[5, 6, EOS, PAD], [7, EOS, PAD, PAD], [4, 4, 4, EOS]])
    pred = torch.tensor([[5, 6, EOS, 9], [7, 3, PAD, PAD], [4, 4, 4, EOS]])
    assert sequence_accuracy(pred, tgt) == pytest.approx(2 / 3)  # junk after EOS is ignored
    assert sequence_accuracy(pred[:, :2], tgt) == 0.0  # too short to hold the EOS
    with pytest.raises(ValueError, match="pred has 2 rows but tgt_out has 3"):
        sequence_accuracy(pred[:2], tgt)


@pytest.mark.parametrize(
    "kwargs,error,match",
    [
        (dict(steps=0), ValueError, "steps must be >= 1"),
        (dict(steps=-5), ValueError, "steps must be >= 1"),
        (dict(steps=2.5), TypeError, "steps must be an int"),
        (dict(target_accuracy=0.0), ValueError, "target_accuracy must be a finite number > 0"),
        (dict(target_accuracy=1.5), ValueError, "target_accuracy must be in \\(0, 1\\]"),
        (dict(lr=0.0), ValueError, "lr must be a finite number > 0"),
        (dict(lr="0.1"), TypeError, "lr must be a number"),
        (dict(task="shuffle"), ValueError, "task must be one of"),
        (dict(min_len=9, seq_len=6), ValueError, "min_len=9 is larger than seq_len=6"),
        (dict(batch_size=0), ValueError, "batch_size must be >= 1"),
        (dict(eval_every=0), ValueError, "eval_every must be >= 1"),
        (dict(grad_clip=-1.0), ValueError, "grad_clip must be a finite number > 0"),
        (dict(seed=1.5), TypeError, "seed must be an int"),
    ],
)
def test_train_config_rejects_impossible_settings(kwargs, error, match):
    with pytest.raises(error, match=match):
        TrainConfig(**kwargs)


def test_trainer_rejects_a_model_that_cannot_hold_the_task():
    with pytest.raises(ValueError, match="max_positions=16"):
        train_seq2seq(Seq2SeqTransformer(SMALL), replace(TRAIN, seq_len=20), progress=False)
    with pytest.raises(TypeError, match="Seq2SeqTransformer"):
        train_seq2seq(torch.nn.Linear(2, 2))
    with pytest.raises(TypeError, match="TrainConfig"):
        train_seq2seq(Seq2SeqTransformer(SMALL), {"steps": 3})


def test_the_train_config_is_passed_as_config():
    config = replace(TRAIN, steps=1, eval_every=1, eval_size=4, batch_size=4)
    history = train_seq2seq(Seq2SeqTransformer(SMALL), config=config, progress=False)
    assert history.steps == 1 and history.eval_steps == (1,)  # the settings passed were used
    with pytest.raises(TypeError, match="cfg"):  # the old name is not silently accepted
        train_seq2seq(Seq2SeqTransformer(SMALL), cfg=config, progress=False)


def test_num_threads_sets_and_restores():
    before = torch.get_num_threads()
    with num_threads(1):
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == before
    with pytest.raises(RuntimeError):
        with num_threads(1):
            raise RuntimeError("inside")
    assert torch.get_num_threads() == before
    with pytest.raises(TypeError, match="n must be an int"):
        with num_threads(1.5):
            pass
    with pytest.raises(ValueError, match="n must be >= 1"):
        with num_threads(0):
            pass
