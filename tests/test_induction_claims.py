"""Claims C49–C54 (notebook 11) checked on the model and on the run shipped with attnlib.

The shipped run (``attnlib/data/induction.pt``) is the record of ``train_induction`` with the
notebook's setup; ``test_retraining_repeats_the_shipped_run`` (slow) retrains it and compares.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from attnlib.course import induction as ind
from attnlib.course.kv_cache import measured_step_flops
from attnlib.models.gpt import GPT, GPTConfig, kv_cache_numbers


@pytest.fixture(scope="module")
def two():
    return ind.load_run("two_layer")


@pytest.fixture(scope="module")
def one():
    return ind.load_run("one_layer")


@pytest.fixture(scope="module")
def held(two):
    return two[1].setup.eval_batch()


def test_the_shipped_runs_are_the_current_setups_and_small(two, one):
    assert two[1].setup == ind.SHIPPED["two_layer"] == ind.TrainSetup()
    assert one[1].setup == ind.SHIPPED["one_layer"]
    assert len(two[1].snapshots) >= 20 and len(two[1].losses) == two[1].setup.steps
    path = ind.resources.files("attnlib").joinpath(ind.RUN_FILE)
    assert path.stat().st_size < 3_000_000  # the package stays small
    with pytest.raises(ValueError, match="name must be one of"):
        ind.load_run("three_layer")


@pytest.mark.claim("C49")
def test_c49_every_position_is_predicted_at_once_and_sees_no_future():
    torch.manual_seed(0)
    cfg = GPTConfig(
        vocab_size=64, max_len=48, d_model=64, num_heads=2, num_layers=2, attention_only=True
    )
    model = GPT(cfg).double().eval()
    ids = torch.randint(0, 64, (3, 20))
    with torch.no_grad():
        logits = model(ids).logits
        # The loss of all positions in one pass equals 19 passes over the prefixes (independent).
        per_prefix = torch.stack([model(ids[:, : t + 1]).logits[:, t] for t in range(19)], 1)
    torch.testing.assert_close(logits[:, :19], per_prefix, rtol=0, atol=1e-12)
    loss = F.cross_entropy(logits[:, :-1].reshape(-1, 64), ids[:, 1:].reshape(-1))
    ref = (
        sum(
            -torch.log_softmax(per_prefix[b, t], -1)[ids[b, t + 1]]
            for b in range(3)
            for t in range(19)
        )
        / 57
    )
    assert loss.item() == pytest.approx(ref.item(), abs=1e-12)
    for t in (0, 7, 18):
        changed = ids.clone()
        changed[:, t + 1 :] = (changed[:, t + 1 :] + 1) % 64
        with torch.no_grad():
            other = model(changed).logits
        assert torch.equal(other[:, : t + 1], logits[:, : t + 1])  # exactly, in float64
        assert (other[:, t + 1] - logits[:, t + 1]).abs().max() > 1e-6


@pytest.mark.claim("C50")
def test_c50_cached_decoding_equals_recomputation_and_costs_linear_work(two):
    model = two[0]
    m64 = ind.induction_model(two[1].setup).double().eval()
    m64.load_state_dict({k: v.double() for k, v in model.state_dict().items()})
    prompt = two[1].setup.eval_batch().ids[:2, :20]
    ids_c, logits_c = m64.generate(prompt, 10, use_cache=True)
    ids_p, logits_p = m64.generate(prompt, 10, use_cache=False)
    assert torch.equal(ids_c, ids_p)
    torch.testing.assert_close(logits_c, logits_p, rtol=0, atol=1e-12)
    cached = [measured_step_flops(model, p, use_cache=True) for p in (4, 8, 12, 16)]
    plain = [measured_step_flops(model, p, use_cache=False) for p in (4, 8, 12, 16)]
    d1 = [b - a for a, b in zip(cached, cached[1:])]
    assert len(set(d1)) == 1 and d1[0] > 0  # linear in the prefix: equal steps
    d2 = [b - a for a, b in zip(plain, plain[1:])]
    assert len(set(b - a for a, b in zip(d2, d2[1:]))) == 1 and d2[1] > d2[0]  # quadratic
    cfg = model.config
    dh = cfg.d_model // cfg.num_heads
    assert kv_cache_numbers(cfg, 30) == 2 * cfg.num_layers * 30 * cfg.num_heads * dh


@pytest.mark.claim("C51")
def test_c51_plateau_then_a_short_drop_with_in_context_learning(two):
    run = two[1]
    m, steps = run.metrics, run.eval_steps
    pc = ind.phase_change(run)
    start = run.eval_index(pc["start"])
    # A plateau: until the drop the loss stays within 0.25 nats of log(64) = 4.16 ...
    assert pc["start"] >= int(steps[-1]) / 3
    assert (m["loss"][: start + 1] > 4.16 - 0.25).all()
    # ... then a short drop: most of the in-context score's fall in at most a fifth of the run.
    assert pc["end"] - pc["start"] <= int(steps[-1]) / 5
    assert pc["fall"] > 0.6
    # In-context learning: the second occurrence's loss ends far below the first's, and the
    # copied tokens are mostly right.
    assert m["in_context"][-1] < -3.0
    assert m["copy_acc"][-1] > 0.8 and m["copy_acc"][start] < 0.3


@pytest.mark.claim("C52")
def test_c52_the_circuit_that_formed_is_k_composed(two, held):
    """What formed (measured): two layer-0 heads that look a fixed distance back (16 and 15, the
    segment's length, not 1), and layer-1 heads that look at the earlier copy of the query's
    token + 16, finding it through their keys, which read the 16-back head (K-composition)."""
    model = two[0]
    with torch.no_grad():
        att = model(held.ids, output_attentions=True).attentions
    back = ind.lookback_profile(att, 20)
    seg = held.segment
    assert back[0, :, 1].max() < 0.1  # no previous-token head
    k16 = int(back[0, :, seg].argmax())
    assert back[0, k16, seg] > 0.3 and back[0, 1 - k16, seg - 1] > 0.3
    match = ind.match_profile(att, held, [1, seg])
    assert (match[1, :, 1] > 0.3).all() and (match[1, :, 0] < 0.1).all()
    # K-composition, by weights: the 16-back head into both layer-1 heads, above random matrices.
    base = ind.random_composition_baseline(64, 32, samples=50)
    kc = ind.composition_scores(model, "k")
    assert (kc[k16] > 2 * base).all()
    # and by effect: without that head in layer 1's keys the layer-1 heads lose the position;
    # without the other head in the keys they keep it.
    kp = ind.key_path_induction(model, held, offset=seg)
    assert (kp[k16] < 0.2 * kp[-1]).all()
    assert (kp[1 - k16] > 0.8 * kp[-1]).all()
    # Both layer-1 heads copy (OV circuit).
    assert (ind.copying_scores(model)[1] > 0.5).all()


@pytest.mark.claim("C53")
def test_c53_one_layer_learns_no_induction(one, two, held):
    model1, run1 = one
    pc1, pc2 = ind.phase_change(run1), ind.phase_change(two[1])
    # its steepest stretch falls less than a fifth of the 2-layer model's drop
    assert (pc1["before"] - pc1["after"]) < 0.2 * (pc2["before"] - pc2["after"])
    assert run1.metrics["copy_acc"].max() < 0.2
    with torch.no_grad():
        att = model1(held.ids, output_attentions=True).attentions
    assert ind.match_profile(att, held, list(range(held.segment + 1))).max() < 0.2
    assert len(run1.losses) == len(two[1].losses)  # trained the same way, as long


@pytest.mark.claim("C54")
def test_c54_removing_either_half_of_the_circuit_undoes_copying(two, held):
    model = two[0]
    rows = {(r["layer"], r["head"]): r for r in ind.ablation_table(model, held)}
    full = rows[(None, None)]
    for h in (0, 1):  # either layer-0 head is necessary
        assert rows[(0, h)]["copy_acc"] < 0.1 and rows[(0, h)]["in_context"] > 0
    # one layer-1 head alone matters little (the other does the same job) ...
    assert max(rows[(1, 0)]["copy_acc"], rows[(1, 1)]["copy_acc"]) > full["copy_acc"] - 0.02
    # ... but removing both undoes copying
    keep = torch.ones(2, 2)
    keep[1] = 0
    with torch.no_grad():
        both = ind.occurrence_losses(model(held.ids, head_mask=keep).logits, held)
    assert both["copy_acc"] < 0.1


def test_retraining_repeats_the_shipped_run(two):
    """The shipped record is this code's run: retrained from the same seed, the losses agree
    within float16 storage and CPU rounding, and the phase change happens at the same step."""
    _, run = two
    _, again = ind.train_induction(run.setup, progress=False)
    assert ind.phase_change(again) == pytest.approx(
        ind.phase_change(run), abs=2 * run.setup.eval_every
    )
    torch.testing.assert_close(
        again.metrics["in_context"], run.metrics["in_context"], rtol=0, atol=0.3
    )
