"""The toy tasks, the tiny encoder-decoder, its trainer and its cross-attention alignment (C39, C40)."""

from __future__ import annotations

import pytest
import torch
from torch.testing import assert_close

import attnlib
from attnlib import (Seq2SeqTransformer, anti_diagonal_mass, copy_batch, cross_attention_maps,
                     greedy_decode, make_batch, reversal_batch, sequence_accuracy, sort_batch,
                     train_seq2seq)
from attnlib.seq2seq import BOS, EOS, NUM_SPECIAL, PAD, _split_of

VOCAB, SEQ_LEN = 10, 6


@pytest.fixture(scope="module", autouse=True)
def _one_thread():
    """Tiny models run fastest on one CPU thread (two threads fight on a shared machine)."""
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(old)


@pytest.fixture(scope="module")
def trained():
    """The notebook's model and settings, trained once for the whole module (a few seconds)."""
    attnlib.set_seed(0)
    model = Seq2SeqTransformer(VOCAB)
    history = train_seq2seq(model, task="reverse", seq_len=SEQ_LEN, progress=False)
    return model, history


def _rows(batch):
    for b in range(batch.src.shape[0]):
        n = int(batch.src_valid_lens[b])
        yield b, n, batch.src[b, :n].tolist()


@pytest.mark.parametrize("task,fn", [("reverse", lambda s: s[::-1]), ("copy", list),
                                     ("sort", sorted)])
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


def test_task_shortcuts():
    for fn, task in ((reversal_batch, "reverse"), (copy_batch, "copy"), (sort_batch, "sort")):
        attnlib.set_seed(1)
        a = fn(4, 5, 9, min_len=3)
        attnlib.set_seed(1)
        b = make_batch(task, 4, 5, 9, min_len=3)
        assert torch.equal(a.src, b.src) and torch.equal(a.tgt_out, b.tgt_out)


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
    assert torch.equal(a.src, b.src)


def test_model_shapes_and_attention_maps(device):
    model = Seq2SeqTransformer(VOCAB, num_encoder_layers=2, num_decoder_layers=2).to(device)
    batch = make_batch("reverse", 3, 5, VOCAB, min_len=2, device=device)
    out = model(batch.src, batch.src_valid_lens, batch.tgt_in)
    assert out.logits.shape == (3, 6, VOCAB)
    assert len(out.encoder_weights) == len(out.cross_weights) == 2
    assert out.encoder_weights[0].shape == (3, 2, 5, 5)
    assert out.decoder_self_weights[0].shape == (3, 2, 6, 6)
    assert out.cross_weights[1].shape == (3, 2, 6, 5)  # C39: [target length, source length]
    for b in range(3):  # padded source positions get no cross-attention
        n = int(batch.src_valid_lens[b])
        assert torch.all(out.cross_weights[0][b, ..., n:] == 0)


def test_greedy_decode_matches_teacher_forcing_on_its_own_output():
    model = Seq2SeqTransformer(VOCAB).eval()
    batch = make_batch("copy", 4, 5, VOCAB)
    tokens, cross = greedy_decode(model, batch.src, batch.src_valid_lens)
    assert tokens.shape == (4, 6) and cross[0].shape == (4, 2, 6, 5)
    # Feeding [BOS, tokens[:-1]] back gives logits whose argmax is each generated token
    # (before any EOS truncation), and the same cross-attention maps.
    raw = torch.full((4, 1), BOS)
    with torch.no_grad():
        memory, _ = model.encode(batch.src, batch.src_valid_lens)
        for _ in range(6):
            logits, _, _ = model.decode(raw, memory, batch.src_valid_lens)
            raw = torch.cat([raw, logits[:, -1].argmax(-1, keepdim=True)], 1)
        out = model(batch.src, batch.src_valid_lens, raw[:, :-1])
    assert_close(out.cross_weights[0], cross[0])
    seen_eos = torch.zeros(4, dtype=torch.bool)
    for t in range(6):
        expected = torch.where(seen_eos, torch.full_like(raw[:, t + 1], PAD), raw[:, t + 1])
        assert torch.equal(tokens[:, t], expected)
        seen_eos |= raw[:, t + 1] == EOS


def test_sequence_accuracy_closed_form():
    tgt = torch.tensor([[5, 6, EOS, PAD], [7, EOS, PAD, PAD], [4, 4, 4, EOS]])
    pred = torch.tensor([[5, 6, EOS, 9], [7, 3, PAD, PAD], [4, 4, 4, EOS]])
    assert sequence_accuracy(pred, tgt) == pytest.approx(2 / 3)  # junk after EOS is ignored
    assert sequence_accuracy(pred[:, :2], tgt) == 0.0  # too short to hold the EOS


def test_anti_diagonal_mass_closed_form():
    n = 4
    perfect = torch.zeros(2, 3, n + 1, n)
    for t in range(n):
        perfect[:, :, t, n - 1 - t] = 1.0
    assert anti_diagonal_mass(perfect) == pytest.approx(1.0)
    uniform = torch.full((2, n + 1, n), 1 / n)
    assert anti_diagonal_mass(uniform) == pytest.approx(1 / n)
    # With lengths, the anti-diagonal of each sequence's own length counts.
    w = torch.zeros(1, 4, 4)
    w[0, 0, 1], w[0, 1, 0] = 1.0, 1.0
    assert anti_diagonal_mass(w, torch.tensor([2])) == pytest.approx(1.0)


def test_c40_tiny_model_learns_reversal(trained):
    model, history = trained
    assert history.reached and history.final_accuracy >= 0.99
    assert history.steps == len(history.losses) and history.steps < 1500
    assert history.eval_steps[-1] == history.steps and history.seconds > 0
    assert history.losses[-1] < history.losses[0] / 10
    test = make_batch("reverse", 512, SEQ_LEN, VOCAB, split="test")  # unseen sequences
    tokens, maps = cross_attention_maps(model, test.src, test.src_valid_lens)
    assert sequence_accuracy(tokens, test.tgt_out) >= 0.99


def test_c40_cross_attention_is_anti_diagonal(trained):
    model, _ = trained
    test = make_batch("reverse", 256, SEQ_LEN, VOCAB, split="test")
    _, maps = cross_attention_maps(model, test.src, test.src_valid_lens)
    assert maps[-1].shape == (256, 2, SEQ_LEN + 1, SEQ_LEN)  # C39: [target, source] per head
    mass = anti_diagonal_mass(maps[-1], test.src_valid_lens)
    assert mass > 0.5  # most of the weight sits on the anti-diagonal
    # ... and far more than on the diagonal, which a copy would use.
    avg = maps[-1].mean(dim=(0, 1))  # (T, S)
    diagonal = torch.stack([avg[t, t] for t in range(SEQ_LEN)]).mean()
    assert mass > 3 * float(diagonal)


def test_training_is_repeatable_given_the_seed():
    def run():
        attnlib.set_seed(7)
        model = Seq2SeqTransformer(VOCAB)
        return train_seq2seq(model, steps=6, eval_every=3, eval_size=32, progress=False).losses

    assert run() == run()


def test_trainer_shows_progress_and_restores_threads(capsys):
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        model = Seq2SeqTransformer(VOCAB)
        history = train_seq2seq(model, steps=2, eval_every=1, eval_size=8, progress=True)
        assert torch.get_num_threads() == 2  # the trainer's one thread was given back
    finally:
        torch.set_num_threads(before)
    assert "training on 'reverse'" in capsys.readouterr().err
    assert len(history.accuracies) == 2 and not model.training


@pytest.mark.parametrize("kwargs,error,match", [
    (dict(seq_len=20), ValueError, "max_positions=16"),
    (dict(steps=0), ValueError, "steps must be >= 1"),
    (dict(steps=-5), ValueError, "steps must be >= 1"),
    (dict(target_accuracy=0.0), ValueError, "target_accuracy must be in \\(0.0, 1.0\\]"),
    (dict(target_accuracy=1.5), ValueError, "target_accuracy"),
    (dict(lr=0.0), ValueError, "lr must be in"),
    (dict(task="shuffle"), ValueError, "task must be one of"),
    (dict(min_len=9, seq_len=6), ValueError, "min_len=9 is larger than seq_len=6"),
    (dict(batch_size=0), ValueError, "batch_size must be >= 1"),
    (dict(eval_every=0), ValueError, "eval_every must be >= 1"),
    (dict(steps=2.5), TypeError, "steps must be an int"),
])
def test_trainer_rejects_impossible_settings(kwargs, error, match):
    with pytest.raises(error, match=match):
        train_seq2seq(Seq2SeqTransformer(VOCAB), progress=False, **kwargs)


def test_bad_input_errors():
    with pytest.raises(ValueError, match="vocab_size=4 is too small"):
        make_batch("reverse", 2, 3, 4)
    with pytest.raises(ValueError, match="vocab_size must be >= 5"):
        Seq2SeqTransformer(4)
    with pytest.raises(ValueError, match="split"):
        make_batch("copy", 2, 3, 9, split="valid")
    with pytest.raises(TypeError, match="Seq2SeqTransformer"):
        train_seq2seq(torch.nn.Linear(2, 2))
    model = Seq2SeqTransformer(VOCAB)
    with pytest.raises(ValueError, match="outside \\[0, 10\\)"):
        model(torch.tensor([[3, 12]]), None, torch.tensor([[BOS]]))
    with pytest.raises(ValueError, match="max_positions=16"):
        model(torch.full((1, 17), 3), None, torch.tensor([[BOS]]))
    with pytest.raises(ValueError, match="max_len=20 exceeds"):
        greedy_decode(model, torch.full((1, 3), 3), max_len=20)
    with pytest.raises(ValueError, match="src_valid_lens must be in"):
        anti_diagonal_mass(torch.rand(1, 3, 3), torch.tensor([0]))
