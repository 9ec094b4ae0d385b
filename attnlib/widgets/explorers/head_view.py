"""The head-view explorer: where each token of a real sentence looks, in all 72 heads of MiniLM.

Teaches C44 and C46 on the pretrained encoder of notebook 10 (:mod:`attnlib.models.minilm`): pick a
sentence, a token, a layer and a head. Four pictures, all drawn from
:func:`attnlib.course.head_stats.head_view` (the encoder's own attention weights):

* the head view as bertviz draws it: the sentence twice, queries on the left, keys on the right,
  a line from the picked token to every key, as wide as its weight (faint grey: every other
  token's lines in the same head, so a previous-token head shows as parallel slanted lines);
* where the picked token looks in each of the layer's 12 heads (keys x heads heatmap);
* the mean entropy of each head of the layer (bars) and of the picked token's row (dots), with
  the uniform row's log n dashed;
* the 12 heads of the layer as small multiples (rows: queries, columns: keys), the picked token's
  row outlined and the picked head framed.

Every sentence is run once, at build time (each sentence's frames are precomputed); the encoder is
loaded once per kernel (:func:`minilm`). Sentences of different lengths are padded to the
longest: padded cells are hatched, and a token position past the end of a shorter sentence shows
its last token ([SEP]).
"""

from __future__ import annotations

import functools
import math

import numpy as np
import torch

from attnlib.course import head_stats as hs
from attnlib.course.scaling import entropy
from attnlib.util._checks import check_int
from attnlib.util.i18n import N_, _
from attnlib.widgets.framework.artists import Bars, Heatmap, Line, Points, Segments, Text
from attnlib.widgets.framework.controls import dropdown, int_slider
from attnlib.widgets.framework.explorer import Explorer, builder
from attnlib.widgets.framework.scene import Frame, Panel, Scene, cells

__all__ = ["head_view_explorer", "minilm", "SENTENCES", "MAX_TOKENS"]

#: The readout's keys of the picked token's three largest weights (fixed keys, shown translated).
_TOP = (
    (N_("key 1"), N_("weight 1")),
    (N_("key 2"), N_("weight 2")),
    (N_("key 3"), N_("weight 3")),
)

#: The sentences the dropdown offers by default.
SENTENCES = (
    "The cat sat on the mat, and the dog slept by the door.",
    "The animal did not cross the street because it was too tired.",
    "She said that the old bridge would be closed next week.",
    "Do you know where the nearest train station is?",
)
#: The longest sentence (in tokens, [CLS] and [SEP] included) the picture has room for.
MAX_TOKENS = 24
_LINE_PX = 12.0  # a weight of 1 is a 12-pixel line
_FAINT_PX = 3.0  # the other tokens' lines


@functools.lru_cache(maxsize=1)
def minilm():
    """The pretrained MiniLM encoder on the CPU in float32, loaded once per kernel (about 1 s)."""
    from attnlib.models.minilm import load_minilm

    return load_minilm("cpu", torch.float32)


def _box(x0: float, x1: float, y0: float, y1: float) -> np.ndarray:
    return np.array([[x0, y0], [x1, y0], [x1, y1], [x0, y1], [x0, y0]], dtype=np.float64)  # (5, 2)


def _rebuild_encoder(encoder) -> None:
    """``None`` (the default: :func:`minilm`) when ``encoder`` holds exactly the pretrained
    weights in float32, so the static site may rebuild it; else :class:`TypeError`."""
    if encoder is None:
        return None
    ref = minilm()
    if encoder is ref:
        return None
    mine, theirs = encoder.state_dict(), ref.state_dict()
    same = mine.keys() == theirs.keys() and all(
        mine[k].dtype == theirs[k].dtype and torch.equal(mine[k].detach().cpu(), theirs[k])
        for k in theirs
    )
    if not same:
        raise TypeError("encoder: not the pretrained MiniLM in float32 (minilm())")
    return None


@builder(N_("head_view"), rebuild={"encoder": _rebuild_encoder})
def head_view_explorer(
    sentences=SENTENCES,
    sentence: int = 0,
    token: int = 3,
    layer: int = 0,
    head: int = 2,
    *,
    encoder=None,
) -> Explorer:
    """A sentence dropdown and token, layer and head sliders over MiniLM's attention weights.

    Args:
        sentences: 1 to 6 strings, each of 3 to ``MAX_TOKENS`` tokens ([CLS] and [SEP] included).
        sentence: index of the sentence shown first.
        token: position of the picked (query) token, 0 = [CLS].
        layer: 0 ... 5; head: 0 ... 11.
        encoder: a :class:`~attnlib.models.minilm.MiniLMEncoder` (default: :func:`minilm`, the
            cached CPU float32 one; the defaults rebuild the same explorer).

    Returns:
        An :class:`~attnlib.widgets.framework.explorer.Explorer` with controls ``sentence``,
        ``token``, ``layer``, ``head``; the readout gives the picked token, its top-3 keys and their
        weights, the row's entropy, and the head's mean entropy and mean weight on the previous
        token, on [CLS] and on [SEP] over this sentence's tokens.
    """
    _check_sentences(sentences)
    enc = minilm() if encoder is None else encoder
    layers, heads = enc.config.num_layers, enc.config.num_heads
    check_int("sentence", sentence, min=0, max=len(sentences) - 1)
    check_int("layer", layer, min=0, max=layers - 1)
    check_int("head", head, min=0, max=heads - 1)

    views = [hs.head_view(enc, s) for s in sentences]
    for k, v in enumerate(views):
        if not 3 <= len(v.tokens) <= MAX_TOKENS:
            raise ValueError(
                f"sentences[{k}] has {len(v.tokens)} tokens ([CLS] and [SEP] included); "
                f"the head view needs 3 to {MAX_TOKENS}: {sentences[k]!r}"
            )
    n_max = max(len(v.tokens) for v in views)
    check_int("token", token, min=0, max=n_max - 1)

    # Everything the controls pick from, per sentence, computed once
    data = [_sentence_data(v, n_max, layers, heads) for v in views]

    rows = np.arange(n_max, dtype=np.float64)
    heads_x = np.arange(heads, dtype=np.float64)
    empty = np.zeros((5, 2)) - 0.5  # a zero-length outline: draws nothing

    def compute(sentence, token, layer, head):
        d = data[int(sentence)]
        n = d["n"]
        i = min(int(token), n - 1)  # past the end of a shorter sentence: its [SEP]
        layer, head = int(layer), int(head)
        w = d["w"][layer]  # (H, N, N)
        row = w[head, i]  # (N,)
        top = np.argsort(-row[:n], kind="stable")[:3]
        tok = d["tokens"]
        arrays = {
            "faint_px": w[head].reshape(-1) * _FAINT_PX,  # (N*N,)
            "lines": np.stack(
                [
                    np.stack([np.zeros(n_max), np.full(n_max, i)], 1),
                    np.stack([np.ones(n_max), rows], 1),
                ],
                1,
            ),  # (N, 2, 2)
            "line_px": row * _LINE_PX,  # (N,)
            "query": [[0.0, float(i)]],
            "by_head": w[:, i, :].T,  # (N, H): keys x heads
            "pad_kh": np.repeat(d["pad"][0][:, None], heads, 1),  # (N, H): padded keys
            "head_col": _box(head - 0.5, head + 0.5, -0.5, n_max - 0.5),
            "ent_bars": d["head_entropy"][layer],  # (H,)
            "ent_row": np.stack([heads_x, d["row_entropy"][layer, :, i]], 1),  # (H, 2)
            "ent_pick": [[float(head), float(d["row_entropy"][layer, head, i])]],
            "uniform": [[-0.6, math.log(n)], [heads - 0.4, math.log(n)]],
            "pad": d["pad"],  # (N, N)
            "row_box": _box(-0.5, n_max - 0.5, i - 0.5, i + 0.5),
        }
        for h in range(heads):
            arrays[f"w{h}"] = w[h]  # (N, N)
            arrays[f"frame{h}"] = _box(-0.5, n_max - 0.5, -0.5, n_max - 0.5) if h == head else empty
        texts = {f"t{j}": tok[j] for j in range(n_max)}
        readout = {N_("query token"): _("{token} (position {i})", token=tok[i], i=i)}
        for (key, weight), j in zip(_TOP, top):
            readout[key] = _("{token} (position {i})", token=tok[j], i=j)
            readout[weight] = float(row[j])
        readout.update(
            {
                N_("entropy of this row (nats)"): float(d["row_entropy"][layer, head, i]),
                N_("uniform row: log n"): math.log(n),
                N_("head: mean row entropy (nats)"): float(d["head_entropy"][layer, head]),
                N_("head: mean weight on previous token"): float(d["prev"][layer, head]),
                N_("head: mean weight on [CLS]"): float(d["cls"][layer, head]),
                N_("head: mean weight on [SEP]"): float(d["sep"][layer, head]),
            }
        )
        return Frame(arrays=arrays, readout=readout, texts=texts)

    scene = _scene(n_max, heads)
    controls = {
        "sentence": dropdown(
            _("sentence"), [(s, k) for k, s in enumerate(sentences)], sentence, width="520px"
        ),
        "token": int_slider(_("token"), 0, n_max - 1, token),
        "layer": int_slider(_("layer"), 0, layers - 1, layer, width="220px"),
        "head": int_slider(_("head"), 0, heads - 1, head, width="260px"),
    }
    return Explorer(
        controls,
        compute,
        scene,
        title=_("Head view: all-MiniLM-L6-v2, 6 layers x 12 heads"),
        digits=3,
    )


def _check_sentences(sentences) -> None:
    if isinstance(sentences, str) or not isinstance(sentences, (list, tuple)):
        raise TypeError(f"sentences must be a list of str, got {type(sentences).__name__}")
    if not 1 <= len(sentences) <= 6:
        raise ValueError(f"sentences must hold 1 to 6 strings, got {len(sentences)}")
    for k, s in enumerate(sentences):
        if not isinstance(s, str):
            raise TypeError(f"sentences[{k}] must be a str, got {type(s).__name__} ({s!r})")


def _scene(n_max: int, heads: int) -> Scene:
    """The lines of the picked token, every head's row, the entropies and the small multiples."""
    faint_xy = np.array([[[0.0, i], [1.0, j]] for i in range(n_max) for j in range(n_max)])
    lines = Panel(
        [
            Segments(faint_xy, color="0.82", widths="faint_px"),
            Segments("lines", color="C0", widths="line_px"),
            Points("query", color="black", marker="s", size=4),
        ]
        + [Text(-0.06, float(j), key=f"t{j}", ha="right", size=7) for j in range(n_max)]
        + [Text(1.06, float(j), key=f"t{j}", ha="left", size=7) for j in range(n_max)],
        xlim=(-1.25, 2.25),
        ylim=(n_max - 0.5, -0.5),
        xticks=[],
        yticks=[],
        title=_("this head: picked token → its keys"),
    )
    by_head = Panel(
        # No token labels: its rows are the keys of the panel above, in the same order (15 labels
        # in its height would run together).
        [Heatmap("by_head", hidden="pad_kh", colorbar=True, cmap="viridis")]
        + [Line("head_col", color="C3", width=2.0)],
        xlim=(-0.5, heads - 0.5),
        ylim=(n_max - 0.5, -0.5),
        xticks=list(range(heads)),
        xticklabels=[str(h) for h in range(heads)],
        yticks=[],
        xlabel=_("head"),
        title=_("picked token in every head (rows: keys)"),
    )
    log_n = math.log(n_max)
    ent = Panel(
        [
            Bars("ent_bars", color="C0"),
            Line("uniform", color="0.5", width=1.0, dash=True),
            Points("ent_row", color="black", size=3.5),
            Points("ent_pick", color="C3", size=6, marker="*"),
        ],
        xlim=(-0.6, heads - 0.4),
        ylim=(-0.08 * log_n, 1.15 * log_n),  # below 0: a star at entropy 0 is drawn whole
        yticks=[0.0, 1.0, 2.0, 3.0],
        xticks=list(range(heads)),
        xticklabels=[str(h) for h in range(heads)],
        xlabel=_("head"),
        ylabel="nats",
        title=_("entropy: bars each head, dots the picked token"),
    )
    smalls = [
        Panel(
            [
                Heatmap(f"w{h}", hidden="pad", cmap="viridis"),
                Line("row_box", color="C3", width=1.0),
                Line(f"frame{h}", color="C3", width=4.0),
            ],
            title=_("head {h}", h=h),
            equal=True,
            **{
                **cells(n_max, n_max),
                "xticks": [],
                "yticks": [],
                "xticklabels": [],
                "yticklabels": [],
            },
        )
        for h in range(heads)
    ]
    per_row = heads // 3
    panels = [
        lines,
        *smalls[:per_row],
        by_head,
        *smalls[per_row : 2 * per_row],
        ent,
        *smalls[2 * per_row :],
    ]
    # The notebook's width, and short enough that title, controls, picture and the readout below
    # it (two entries a line, view.py) fit 620 px together (a 1280 x 720 browser, issue 16).
    scene = Scene(
        panels,
        cols=per_row + 1,
        width=840,
        height=400,
        col_widths=[3.6] + [1.0] * per_row,
        row_heights=[1.5, 1.1, 1.1],  # the line view's token labels need the height
    )
    return scene


def _sentence_data(v, n_max: int, layers: int, heads: int) -> dict:
    """Everything the controls pick from in one sentence's head view (float64 numpy, CPU)."""
    n = len(v.tokens)
    w = np.zeros((layers, heads, n_max, n_max))
    w[:, :, :n, :n] = v.weights.double().numpy()  # (layers, H, N, N), 0 on padding
    a = v.weights.double()[:, None]  # (layers, 1, H, n, n): a batch of one
    lens = torch.tensor([n])
    masks = hs.token_masks([list(v.tokens)], n)
    pad = np.zeros((n_max, n_max), dtype=bool)
    pad[n:, :] = True
    pad[:, n:] = True
    return dict(
        tokens=list(v.tokens) + [""] * (n_max - n),
        n=n,
        w=w,
        pad=pad,
        row_entropy=entropy(v.weights.double()).numpy(),  # (layers, H, n)
        head_entropy=hs.head_entropy(a, lens).numpy(),  # (layers, H)
        prev=hs.offset_share(a, lens, -1).numpy(),  # (layers, H)
        cls=hs.key_share(a, lens, masks["[CLS]"]).numpy(),  # (layers, H)
        sep=hs.key_share(a, lens, masks["[SEP]"]).numpy(),  # (layers, H)
    )
