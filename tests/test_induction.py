"""attnlib.course.induction: the data, the scores and the ablation, each against an independent
reference (a loop over positions, the weights read from the nn.Linear modules, a model whose W_O
columns are zeroed, F.cross_entropy per token)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from attnlib.course import induction as ind
from attnlib.models.gpt import GPT, GPTConfig

TASK = ind.RepeatTask(vocab_size=16, seq_len=20, segment=4, min_gap=1)


def _model(layers=2, heads=2, seed=0, dtype=torch.float64):
    torch.manual_seed(seed)
    cfg = GPTConfig(
        vocab_size=16,
        max_len=20,
        d_model=16,
        num_heads=heads,
        num_layers=layers,
        attention_only=True,
    )
    m = GPT(cfg).to(dtype).eval()
    with torch.no_grad():  # larger weights than GPT-2's init, so the scores are not all alike
        for p in m.parameters():
            p.add_(0.3 * torch.randn_like(p))
    return m


def _batch(n=8, seed=1):
    return ind.repeat_batch(TASK, n, torch.Generator().manual_seed(seed))


def test_repeat_batch_copies_the_segment_after_a_gap():
    b = _batch(64)
    assert b.ids.shape == (64, 20) and b.ids.dtype == torch.int64
    assert int(b.ids.min()) >= 0 and int(b.ids.max()) < 16
    for r in range(64):
        f, s = int(b.first[r]), int(b.second[r])
        assert 0 <= f and s + 4 <= 20 and s - (f + 4) >= 1  # both fit, gap >= min_gap
        assert b.ids[r, f : f + 4].tolist() == b.ids[r, s : s + 4].tolist()
    assert len(set((b.second - b.first).tolist())) > 3  # the distance varies: no copy by position
    assert b.positions("second").tolist()[0] == list(range(int(b.second[0]), int(b.second[0]) + 3))


VAR = ind.RepeatTask(vocab_size=16, seq_len=24, segment=6, min_segment=2)


def _var_batch(n=64, seed=2):
    return ind.repeat_batch(VAR, n, torch.Generator().manual_seed(seed))


def test_per_row_lengths_copy_each_rows_segment_and_vary():
    b = _var_batch()
    assert b.lengths is not None and b.segment == 6
    assert set(b.lengths.tolist()) == set(range(2, 7))  # every length 2..6 is drawn
    for r in range(64):
        f, s, n = int(b.first[r]), int(b.second[r]), int(b.lengths[r])
        assert 0 <= f and s - f >= n and s + n <= 24  # both occurrences fit, no overlap
        assert b.ids[r, f : f + n].tolist() == b.ids[r, s : s + n].tolist()
        assert b.valid()[r].tolist() == [j < n - 1 for j in range(5)]
        # the valid positions are the occurrence's first n - 1 positions
        pos = b.positions("second")[r][b.valid()[r]].tolist()
        assert pos == list(range(s, s + n - 1))
    # fixed lengths: every position valid, and the old draw (no per-row lengths) unchanged
    fixed = _batch(8)
    assert fixed.lengths is None and bool(fixed.valid().all())
    assert fixed.row_lengths().tolist() == [4] * 8


def test_scores_with_per_row_lengths_match_loops():
    b = _var_batch(16)
    w = torch.rand(16, 2, 24, 24, dtype=torch.float64).softmax(-1)
    logits = torch.randn(16, 24, 16, dtype=torch.float64)
    got = ind.occurrence_losses(logits, b)
    indu = ind.induction_scores([w], b)[0]
    prof = ind.match_profile([w], b, [0, 1])[0]
    first, second, hits, ind_vals, own_vals = [], [], [], [], []
    for r in range(16):
        d, n = int(b.second[r] - b.first[r]), int(b.lengths[r])
        for p in range(int(b.first[r]), int(b.first[r]) + n - 1):
            first.append(F.cross_entropy(logits[r, p][None], b.ids[r, p + 1][None]).item())
        for q in range(int(b.second[r]), int(b.second[r]) + n - 1):
            second.append(F.cross_entropy(logits[r, q][None], b.ids[r, q + 1][None]).item())
            hits.append(int(logits[r, q].argmax() == b.ids[r, q + 1]))
            ind_vals.append(w[r, :, q, q - d + 1])
            own_vals.append(w[r, :, q, q - d])
    assert got["first"] == pytest.approx(sum(first) / len(first), abs=1e-12)
    assert got["second"] == pytest.approx(sum(second) / len(second), abs=1e-12)
    assert got["copy_acc"] == pytest.approx(sum(hits) / len(hits), abs=1e-15)
    torch.testing.assert_close(indu, torch.stack(ind_vals).mean(0), rtol=0, atol=1e-12)
    torch.testing.assert_close(prof[:, 1], indu, rtol=0, atol=1e-12)
    torch.testing.assert_close(prof[:, 0], torch.stack(own_vals).mean(0), rtol=0, atol=1e-12)


def test_max_gap_bounds_the_gap_between_the_occurrences():
    task = ind.RepeatTask(vocab_size=16, seq_len=24, segment=6, min_segment=2, max_gap=3)
    b = ind.repeat_batch(task, 256, torch.Generator().manual_seed(5))
    gap = b.second - b.first - b.lengths
    assert int(gap.min()) == 0 and int(gap.max()) == 3
    with pytest.raises(ValueError, match="max_gap"):
        ind.RepeatTask(min_gap=2, max_gap=1)


def test_bad_min_segment_raises():
    with pytest.raises(ValueError, match="min_segment"):
        ind.RepeatTask(segment=4, min_segment=1)
    with pytest.raises(ValueError, match="min_segment"):
        ind.RepeatTask(segment=4, min_segment=5)


def test_repeat_batch_is_a_function_of_the_generator():
    a, b = _batch(8, seed=3), _batch(8, seed=3)
    assert torch.equal(a.ids, b.ids) and torch.equal(a.first, b.first)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(segment=1), "segment must be at least 2"),
        (dict(seq_len=10, segment=5, min_gap=1), "need 11 tokens"),
        (dict(min_gap=-1), "min_gap"),
        (dict(vocab_size=0), "vocab_size"),
    ],
)
def test_bad_task_raises_naming_the_field(kwargs, match):
    with pytest.raises(ValueError, match=match):
        ind.RepeatTask(**kwargs)


def test_bad_batch_arguments_raise():
    with pytest.raises(TypeError, match="task must be a RepeatTask"):
        ind.repeat_batch("task", 2, torch.Generator())
    with pytest.raises(TypeError, match="generator"):
        ind.repeat_batch(TASK, 2, 0)
    with pytest.raises(ValueError, match="which must be"):
        _batch().positions("third")


def test_occurrence_losses_match_a_loop_of_cross_entropy():
    m, b = _model(), _batch()
    with torch.no_grad():
        logits = m(b.ids).logits
    got = ind.occurrence_losses(logits, b)
    first, second, hits, n = [], [], 0, 0
    for r in range(b.ids.shape[0]):
        for which, acc in (("first", first), ("second", second)):
            start = int(getattr(b, which)[r])
            for p in range(start, start + 3):
                acc.append(F.cross_entropy(logits[r, p][None], b.ids[r, p + 1][None]).item())
                if which == "second":
                    hits += int(logits[r, p].argmax() == b.ids[r, p + 1])
                    n += 1
    ref_all = F.cross_entropy(logits[:, :-1].reshape(-1, 16), b.ids[:, 1:].reshape(-1)).item()
    assert got["first"] == pytest.approx(sum(first) / len(first), abs=1e-12)
    assert got["second"] == pytest.approx(sum(second) / len(second), abs=1e-12)
    assert got["in_context"] == pytest.approx(got["second"] - got["first"], abs=1e-15)
    assert got["loss"] == pytest.approx(ref_all, abs=1e-12)
    assert got["copy_acc"] == pytest.approx(hits / n, abs=1e-15)


def test_previous_and_induction_scores_match_loops():
    b = _batch()
    w = torch.rand(8, 3, 20, 20, dtype=torch.float64).softmax(-1)
    prev = ind.previous_token_scores([w])[0]
    indu = ind.induction_scores([w], b)[0]
    for h in range(3):
        ref = sum(w[r, h, t, t - 1] for r in range(8) for t in range(1, 20)) / (8 * 19)
        assert prev[h].item() == pytest.approx(ref.item(), abs=1e-12)
        vals = []
        for r in range(8):
            d = int(b.second[r] - b.first[r])
            for q in range(int(b.second[r]), int(b.second[r]) + 3):
                vals.append(w[r, h, q, q - d + 1].item())
                # the key is the token after the earlier copy of q's token
                assert b.ids[r, q - d].item() == b.ids[r, q].item()
        assert indu[h].item() == pytest.approx(sum(vals) / len(vals), abs=1e-12)


def _w_qk_ov(m, layer, head):
    """From the nn.Linear weights directly (not head_weights): W_QK, W_OV with LN gain folded."""
    a = m.blocks[layer].attn
    dh = a.head_dim
    rows = slice(head * dh, (head + 1) * dh)
    g = torch.diag(m.blocks[layer].ln1.weight.detach())
    wq = g @ a.w_q.weight.detach()[rows].T
    wk = g @ a.w_k.weight.detach()[rows].T
    wv = g @ a.w_v.weight.detach()[rows].T
    wo = a.w_o.weight.detach()[:, rows].T
    return wq @ wk.T, wv @ wo


def test_composition_scores_are_the_normalised_frobenius_products():
    m = _model()
    for kind in ("q", "k", "v"):
        got = ind.composition_scores(m, kind)
        for h0 in range(2):
            for h1 in range(2):
                _, ov0 = _w_qk_ov(m, 0, h0)
                qk1, ov1 = _w_qk_ov(m, 1, h1)
                a, bb = {"k": (qk1, ov0.T), "q": (ov0, qk1), "v": (ov0, ov1)}[kind]
                ref = (a @ bb).norm() / (a.norm() * bb.norm())
                assert got[h0, h1].item() == pytest.approx(ref.item(), rel=1e-12)
    # K-composition is what a key reads: x_q W_QK (y W_OV)^T = x_q (W_QK W_OV^T) y^T
    qk1, _ = _w_qk_ov(m, 1, 0)
    _, ov0 = _w_qk_ov(m, 0, 0)
    x, y = torch.randn(16, dtype=torch.float64), torch.randn(16, dtype=torch.float64)
    assert (x @ qk1 @ (y @ ov0)).item() == pytest.approx((x @ (qk1 @ ov0.T) @ y).item(), rel=1e-10)
    with pytest.raises(ValueError, match="kind must be"):
        ind.composition_scores(m, "x")
    with pytest.raises(ValueError, match="2 layers"):
        ind.composition_scores(_model(layers=1))


def test_random_baseline_is_below_one_and_above_zero():
    base = ind.random_composition_baseline(64, 32, samples=20)
    assert 0.05 < base < 0.3


def test_copying_score_is_one_for_a_head_that_writes_the_token_it_reads():
    m = _model(layers=1, heads=1)
    with torch.no_grad():  # W_E W_V W_O W_U = W_E W_E^T (positive semi-definite): copying
        a = m.blocks[0].attn
        a.w_v.weight.copy_(torch.eye(16))
        a.w_o.weight.copy_(torch.eye(16))
        m.blocks[0].ln1.weight.fill_(1.0)
        m.ln_f.weight.fill_(1.0)
    assert ind.copying_scores(m)[0, 0].item() == pytest.approx(1.0, abs=1e-9)
    with torch.no_grad():
        a.w_o.weight.copy_(-torch.eye(16))  # the opposite: suppresses the token it reads
    assert ind.copying_scores(m)[0, 0].item() == pytest.approx(-1.0, abs=1e-9)


def test_ablation_equals_zeroing_the_heads_output_columns():
    m, b = _model(), _batch()
    rows = ind.ablation_table(m, b)
    assert len(rows) == 5 and rows[-1]["layer"] is None
    for row in rows[:-1]:
        ref = _model()
        with torch.no_grad():
            dh = ref.blocks[row["layer"]].attn.head_dim
            ref.blocks[row["layer"]].attn.w_o.weight[
                :, row["head"] * dh : (row["head"] + 1) * dh
            ] = 0
            want = ind.occurrence_losses(ref(b.ids).logits, b)
        for k, v in want.items():
            assert row[k] == pytest.approx(v, abs=1e-12)


def test_key_path_removal_changes_only_the_keys():
    m, b = _model(), _batch()
    got = ind.key_path_induction(m, b)
    with torch.no_grad():
        own = ind.induction_scores(m(b.ids, output_attentions=True).attentions, b)[1]
    assert torch.allclose(got[-1], own, atol=1e-12)  # removing nothing: the model's own weights
    # Reference for row h0: recompute layer 1 by hand with keys from the stream without head h0.
    for h0 in range(2):
        keep = torch.ones(2, 2, dtype=torch.float64)
        keep[0, h0] = 0
        with torch.no_grad():
            x_full = m(b.ids).hidden[1]
            x_cut = m(b.ids, head_mask=keep).hidden[1]
            blk = m.blocks[1]
            qn, kn = blk.ln1(x_full), blk.ln1(x_cut)
            q = blk.attn.w_q(qn).view(8, 20, 2, 8).transpose(1, 2)
            k = blk.attn.w_k(kn).view(8, 20, 2, 8).transpose(1, 2)
            s = q @ k.transpose(-1, -2) / 8**0.5
            s = s.masked_fill(torch.ones(20, 20, dtype=torch.bool).triu(1), float("-inf"))
            w = s.softmax(-1)
        assert torch.allclose(got[h0], ind.induction_scores([w], b)[0], atol=1e-12)


def test_a_short_training_run_records_every_evaluation_and_repeats_exactly():
    setup = ind.TrainSetup(task=TASK, d_model=16, steps=6, eval_every=3, eval_size=8, batch_size=4)
    m1, r1 = ind.train_induction(setup, keep_snapshots=True, progress=False)
    _, r2 = ind.train_induction(setup, steps=3, progress=False)
    assert r1.eval_steps.tolist() == [0, 3, 6] and len(r1.snapshots) == 3 and len(r1.losses) == 6
    assert r1.metrics["previous"].shape == (3, 2, 2)
    assert torch.equal(r1.losses[:3], r2.losses)  # the first steps of a longer run are the same
    assert all(v.dtype == torch.float16 for v in r1.snapshots[-1].values())
    last = ind.snapshot_model(r1, 2)
    for k, v in m1.state_dict().items():
        torch.testing.assert_close(last.state_dict()[k], v.half().float())
    with pytest.raises(ValueError, match="steps"):
        ind.train_induction(setup, steps=7, progress=False)
    with pytest.raises(TypeError, match="setup must be a TrainSetup"):
        ind.train_induction("setup")


def test_phase_change_is_the_stretch_around_the_fastest_fall():
    ic = torch.tensor([0.0, -0.1, -0.2, -0.3, -1.3, -2.0, -2.8, -2.9, -3.0])
    run = ind.TrainRun(
        setup=ind.TrainSetup(),
        losses=torch.zeros(1),
        eval_steps=torch.arange(0, 900, 100),
        metrics={"in_context": ic},
        snapshots=[],
        seconds=0.0,
    )
    # falls per interval: .1 .1 .1 1.0 .7 .8 .1 .1 -> the intervals with >= 0.25 are 300..600
    pc = ind.phase_change(run)
    assert (pc["start"], pc["end"]) == (300, 600)
    assert pc["fall"] == pytest.approx(2.5 / 3.0)
    assert (pc["before"], pc["after"]) == (pytest.approx(-0.3), pytest.approx(-2.8))


def test_the_two_back_rule_holds_where_drawn_and_is_off_by_default():
    task = ind.RepeatTask(vocab_size=16, seq_len=40, segment=4, rule=0.9)
    b = ind.repeat_batch(task, 400, torch.Generator().manual_seed(0))
    perm = task.permutation()
    assert sorted(perm.tolist()) == list(range(16))
    hits = (b.ids[:, 2:] == perm[b.ids[:, :-2]]).double().mean().item()
    # 0.9 by the rule, plus 0.1 / 16 by chance; the pasted copy (4 of 40 tokens) and the two
    # tokens after it break the rule in part, so allow for up to 6 / 38 of the positions less.
    assert 0.9 - 6 / 38 < hits < 0.9 + 0.1 / 16 + 0.02
    plain = ind.repeat_batch(TASK, 400, torch.Generator().manual_seed(0))
    p16 = ind.RepeatTask(vocab_size=16).permutation()
    chance = (plain.ids[:, 2:] == p16[plain.ids[:, :-2]]).double().mean().item()
    assert chance < 0.15  # rule = 0: uniform tokens (1/16 by chance, a little more from the copy)
    with pytest.raises(ValueError, match="rule"):
        ind.RepeatTask(rule=1.0)
