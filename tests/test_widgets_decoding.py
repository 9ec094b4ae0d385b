"""The decoding explorer: what it shows against an independent decode, the causal mask and the
models.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from attnlib.core.masks import causal_mask
from attnlib.course.examples import DEFAULT_SOURCE, trained_reversal_model, untrained_reversal_model
from attnlib.models.seq2seq.model import greedy_decode
from attnlib.models.seq2seq.toy_tasks import BOS, EOS, NUM_SPECIAL, token_labels
from attnlib.widgets.explorers.decoding import SOURCES, decoding_explorer, visible_rows


@pytest.fixture(scope="module")
def explorer():
    return decoding_explorer()


def _ids(letters):
    return torch.tensor([NUM_SPECIAL + ord(c) - ord("a") for c in letters.split()])


def _reference(model, src):
    """Greedy decode with the library's batched decoder, then one teacher-forced pass:
    (tokens, self, cross, probs).
    """
    tokens = greedy_decode(model, src[None]).tokens  # (1, T)
    tgt_in = torch.cat([torch.tensor([[BOS]]), tokens[:, :-1]], 1)  # (1, T)
    with torch.no_grad():
        out = model(src[None], tgt_in)
    return (
        tokens[0],
        out.decoder_self_weights[-1][0].double(),
        out.cross_weights[-1][0].double(),
        out.logits[0].double().softmax(-1),
    )


def test_defaults_show_the_default_source_at_its_last_step(explorer):
    T = len(DEFAULT_SOURCE) + 1
    assert explorer.values() == {"step": T - 1, "source": SOURCES[0], "trained": True, "head": None}
    assert _ids(SOURCES[0]).tolist() == list(DEFAULT_SOURCE)
    assert explorer.state()["position t"] == T - 1


@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("trained", [True, False])
def test_c39_rows_are_an_independent_decode(explorer, source, trained):
    model = trained_reversal_model() if trained else untrained_reversal_model()
    src = _ids(source)
    tokens, selfw, cross, probs = _reference(model, src)
    out, inp = token_labels(tokens), token_labels(torch.cat([torch.tensor([BOS]), tokens[:-1]]))
    for t, head in [(0, None), (2, 0), (6, 3), (4, None)]:
        state = explorer.state(step=t, source=source, trained=trained, head=head)
        c = cross.mean(0) if head is None else cross[head]  # (T, S)
        s = selfw.mean(0) if head is None else selfw[head]  # (T, T)
        # The builder's trace is the same float32 pass on the same shapes (1, S), (1, T) as the
        # reference here, so the weights are bitwise equal on any CPU; both then average the 4
        # heads in float64 (in another order): numbers <= 1, within 4 x 1.1e-16 < 1e-15.
        np.testing.assert_allclose(
            state["cross-attention row (source positions 0..S-1)"],
            c[t].numpy(),
            rtol=0,
            atol=1e-15,
        )
        np.testing.assert_allclose(
            state["self-attention row (inputs 0..T-1)"], s[t].numpy(), rtol=0, atol=1e-15
        )
        assert state["writes"] == out[t] and state["reads"] == inp[t]
        assert state["p(written token)"] == pytest.approx(float(probs[t, tokens[t]]), rel=1e-6)
        assert state["most attended source position"].startswith(f"{int(c[t].argmax())} ")
        assert sum(state["cross-attention row (source positions 0..S-1)"]) == pytest.approx(
            1.0, abs=1e-6
        )


def test_c40_trained_reverses_the_offered_sources_and_untrained_does_not(explorer):
    for source in SOURCES:
        letters = source.split()
        trained = [explorer.state(step=t, source=source, trained=True)["writes"] for t in range(7)]
        assert trained == letters[::-1] + ["</s>"]
    untrained = [explorer.state(step=t, trained=False)["writes"] for t in range(7)]
    assert untrained != SOURCES[0].split()[::-1] + ["</s>"]


def test_c36_hidden_cells_are_the_future_and_undecoded_rows(explorer):
    T = 7
    for t in (0, 2, 6):
        arrays = explorer.compute(step=t).arrays
        expected_self = causal_mask(T).numpy() & (np.arange(T)[:, None] <= t)
        assert (~arrays["self_hidden"] == expected_self).all()
        assert (~arrays["cross_hidden"][: t + 1]).all() and arrays["cross_hidden"][t + 1 :].all()
        # the future gets exactly zero weight in the causal self-attention
        assert np.abs(np.triu(arrays["self"], 1)).max() == 0.0
        np.testing.assert_allclose(arrays["probs"].sum(), 1.0, rtol=1e-12)


def test_head_none_is_the_mean_over_heads(explorer):
    heads = [np.asarray(explorer.compute(head=h).arrays["cross"]) for h in range(4)]
    np.testing.assert_allclose(
        explorer.compute(head=None).arrays["cross"], np.mean(heads, 0), rtol=1e-12
    )


def test_visible_rows_against_masks():
    v = visible_rows(5, 5, 5, causal=True)
    assert (v == causal_mask(5).numpy()).all()
    assert not visible_rows(4, 3, 0, causal=False).any()
    assert visible_rows(4, 3, 4, causal=False).all()
    with pytest.raises(ValueError, match="step"):
        visible_rows(4, 3, 5, causal=False)


def test_other_sources():
    ex = decoding_explorer("a b c", sources=("a b c", "c b a"), step=1, head=1)
    assert ex.values() == {"step": 1, "source": "a b c", "trained": True, "head": 1}
    assert ex.args["sources"] == ["a b c", "c b a"]
    tokens, _, cross, _ = _reference(trained_reversal_model(), _ids("a b c"))
    np.testing.assert_allclose(  # one head, the same pass on the same shapes: bitwise equal
        ex.state()["cross-attention row (source positions 0..S-1)"],
        cross[1, 1].numpy(),
        rtol=0,
        atol=0,
    )
    assert tokens[-1].item() == EOS or len(tokens) == 4


@pytest.mark.parametrize(
    "kwargs, err, match",
    [
        (dict(source="z z"), ValueError, "source must be one of"),
        (dict(sources=("a k",), source="a k"), ValueError, "letters"),
        (dict(sources=("a b", "a b c"), source="a b"), ValueError, "one length"),
        (dict(step=-1), ValueError, "step"),
        (dict(step=7), ValueError, "step"),
        (dict(head=4), ValueError, "head"),
        (dict(head=-1), ValueError, "head"),
        (dict(trained=1), TypeError, "trained"),
        (dict(sources=(1, 2), source=1), TypeError, "sources"),
    ],
)
def test_bad_arguments(kwargs, err, match):
    with pytest.raises(err, match=match):
        decoding_explorer(**kwargs)
