"""The induction explorer: what it shows against the snapshots' own forward pass and the run's
record, and its controls."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from attnlib.course import induction as ind
from attnlib.widgets.explorers.induction import induction_explorer


@pytest.fixture(scope="module")
def explorer():
    return induction_explorer()


@pytest.fixture(scope="module")
def run():
    return ind.load_run("two_layer")[1]


def test_defaults_show_the_last_checkpoint_and_layer_1_head_0(explorer, run):
    v = explorer.values()
    assert v["checkpoint"] == len(run.snapshots) - 1 and v["head"] == 2
    assert explorer.state()["step"] == int(run.eval_steps[-1])


@pytest.mark.parametrize("checkpoint", [0, 5, -1])
@pytest.mark.parametrize("head", [0, 3])
def test_the_map_is_the_snapshots_attention_on_the_shown_sequence(explorer, run, checkpoint, head):
    c = checkpoint % len(run.snapshots)
    d = explorer.data["replay"]
    q = d["second"] + 3
    frame = explorer.compute(checkpoint=c, query=q, head=head)
    model = ind.snapshot_model(run, c)
    ids = run.setup.eval_batch().ids[1:2]  # the explorer shows held-out sequence 1
    with torch.no_grad():
        w = model(ids, output_attentions=True).attentions[head // 2][0, head % 2].double()
    np.testing.assert_allclose(frame.arrays["w"], w.numpy(), atol=1e-12)
    np.testing.assert_allclose(frame.arrays["row"], w[q].numpy(), atol=1e-12)
    st = explorer.state(checkpoint=c, query=q, head=head)
    layer, h = divmod(head, 2)
    step = int(run.snapshot_steps[c])
    assert st["step"] == step
    c = run.eval_index(step)  # the record's row of that step
    assert st["induction (prefix-matching) score"] == pytest.approx(
        float(run.metrics["induction"][c, layer, h])
    )
    assert st["previous-token score"] == pytest.approx(float(run.metrics["previous"][c, layer, h]))
    assert st["loss (held-out)"] == pytest.approx(float(run.metrics["loss"][c]))
    target = q - (d["second"] - d["first"]) + 1
    assert st["textbook target: after the earlier copy"] == str(target)
    assert d["ids"][target - 1] == d["ids"][q]  # the key after the earlier copy of q's token


def test_marker_sits_on_the_curve(explorer, run):
    f = explorer.compute(checkpoint=3, query=10, head=0)
    i = run.eval_index(int(run.snapshot_steps[3]))
    assert f.arrays["marker"] == [[float(run.eval_steps[i]), float(run.metrics["loss"][i])]]


def test_bad_arguments_raise_naming_them():
    with pytest.raises(ValueError, match="head must be"):
        induction_explorer(head=4)
    with pytest.raises(ValueError, match="checkpoint must be"):
        induction_explorer(checkpoint=10_000)
    with pytest.raises(ValueError, match="query must be"):
        induction_explorer(query=-1)
    with pytest.raises(ValueError, match="example must be"):
        induction_explorer(example=10_000)
