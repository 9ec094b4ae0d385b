"""The claim index: CLAIMS.md, generated from the claims' statements (below), the tests that
check each claim and the notebook cells that show it.

    python tools/claims.py write    # (re)write CLAIMS.md  (make claims)
    python tools/claims.py check    # exit 1 when CLAIMS.md is stale  (tests/test_claims.py)

A test checks a claim when its name starts with ``test_cNN`` (``test_c43_...``) or it carries
``@pytest.mark.claim("CNN")`` (on the function, or ``pytestmark`` for a whole module). A notebook
cell shows a claim when its markdown or a comment of its code names ``CNN``. Cells are numbered
from 0, as in nbval's output.
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from collections import defaultdict
from pathlib import Path

if __package__ in (None, ""):  # run as a file (python tools/claims.py): the root holds tools/
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tools.nbtext import cell_prose, cells  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
OUTPUT = ROOT / "CLAIMS.md"
CLAIM = re.compile(r"\bC(\d\d)\b")
TEST_NAME = re.compile(r"^test_c(\d\d)(?:_|$)")

# The claims of the course (the curriculum's list). Each needs a test and a notebook cell.
STATEMENTS: dict[str, str] = {
    "C01": (
        "Q = X_q W_Q, K = X_s W_K, V = X_s W_V. Q and K must share the inner width d_k; V's "
        "width d_v may differ. A mismatch of d_k is a clear error naming both shapes."
    ),
    "C02": (
        "Self-attention uses one X but three different matrices, so Q, K, V differ. In "
        "cross-attention Q comes from one sequence and K, V from another, and S_q ≠ S_k is "
        "allowed."
    ),
    "C03": "The score q·k is not cosine similarity: scaling a key's norm scales its score.",
    "C04": (
        "e_ij = x_i W_Q W_Kᵀ x_jᵀ: the learned bilinear form need not be symmetric, so e_ij ≠ "
        "e_ji in general."
    ),
    "C05": (
        "With independent zero-mean unit-variance components, Var(q·k) = d_k, and dividing by "
        "√d_k brings it back to 1 (a Monte-Carlo experiment over several d_k, with its error "
        "bars)."
    ),
    "C06": (
        "Without the scale, larger d_k gives sharper softmax rows (max weight up, entropy down)."
    ),
    "C07": (
        "Weights are non-negative and each row sums to 1; without dropout a single head's "
        "output is a convex combination of the value rows (it lies in their convex hull)."
    ),
    "C08": (
        "Softmax is unchanged by adding a constant to a row; subtracting the row max avoids "
        "overflow (naive exp overflows at logits near 1000 in float32; the stable form does "
        "not)."
    ),
    "C09": (
        "Scores [log 3, 0] give weights [3/4, 1/4]; with values [2, 0] and [0, 4] the output is "
        "[1.5, 1]. Changing the query changes the weights; changing the values changes what is "
        "mixed."
    ),
    "C10": "The matching path (Q, K) and the content path (V) are separate.",
    "C11": (
        "Matrix form softmax(QKᵀ/√d_k + M)V; M is 0 where visible and −∞ where hidden; hidden "
        "positions get weight exactly 0."
    ),
    "C12": (
        'A fully masked row is undefined in plain softmax (NaN with −∞); "a large negative '
        'number" is not equivalent across dtypes (e.g. −1e9 becomes −inf in float16, and a row '
        "of equal large negatives gives a uniform row). Our implementation returns zero weights "
        "and zero output for such a row, in float32, float16 and bfloat16."
    ),
    "C13": (
        "∂a_j/∂z_r = a_j(δ_jr − a_r), J = diag(a) − aaᵀ (checked against autograd); J's rows "
        "sum to 0: raising one score lowers the others."
    ),
    "C14": (
        "Near one-hot rows have tiny Jacobian entries: the gradient vanishes when softmax "
        "saturates."
    ),
    "C15": (
        "With O = AV and G = ∂L/∂O: ∂L/∂V = AᵀG, ∂L/∂A = GVᵀ, and with H = ∂L/∂Z, ∂L/∂Q = "
        "HK/√d_k, ∂L/∂K = HᵀQ/√d_k — a hand-written backward equal to autograd."
    ),
    "C16": (
        "head_r = Attention(XW_Q⁽ʳ⁾, XW_K⁽ʳ⁾, XW_V⁽ʳ⁾), MHA = Concat(heads)W_O with d_k = d_v = "
        "d/h; one big projection reshaped into heads equals h separate projections."
    ),
    "C17": (
        "One wide head of the same total width is not h heads: it has one set of weights per "
        "query where h heads have h sets (shown by a case where their outputs differ)."
    ),
    "C18": (
        "Attention alone has no notion of order or depth: position, residuals, normalisation "
        "and the FFN come next."
    ),
    "C19": "Query–key scores become weights by softmax and weights times values give the output.",
    "C20": (
        "A distance must be turned into a score that grows as distance shrinks (−d, or a "
        "Gaussian kernel); feeding a positive distance to softmax favours the farthest key."
    ),
    "C21": "Scores may be any real; weights lie in (0, 1) and sum to 1.",
    "C22": (
        "Nadaraya–Watson: f(x) = Σ softmax_i(−(x − x_i)²/2) y_i; nearer keys get more weight; a "
        "kernel-width control shows the smoothing trade-off."
    ),
    "C23": "Similarity choices: dot product, cosine, negative Euclidean distance, Gaussian kernel.",
    "C24": (
        "Additive attention a(q, k) = vᵀ tanh(W_q q + W_k k) works when d_q ≠ d_k; its "
        "broadcast feature tensor is [batch, n_q, n_k, h]."
    ),
    "C25": (
        "masked_softmax with valid_lens given per batch row (1-D) or per query (2-D); a row "
        "with valid_len 0 gives all-zero weights, not a uniform row."
    ),
    "C26": (
        "The 2-D example: q1 = (1, 2), q2 = (1, 1), k1 = (1, 0), k2 = (0, 1), d_k = 2 gives "
        "scores (0.71, 1.41) → weights (0.33, 0.67) for q1, and (0.71, 0.71) → (0.50, 0.50) for "
        "q2."
    ),
    "C27": (
        "Shapes: Q [n, d_k], K [m, d_k], V [m, d_v] → output [n, d_v]; our function equals "
        "`torch.nn.functional.scaled_dot_product_attention` on random inputs, with and without "
        "masks."
    ),
    "C28": (
        "Multi-head heads have their own projections; the result is not one head copied h times."
    ),
    "C29": (
        "Without positions, SA(PX) = P·SA(X) for any permutation P (equivariant, not "
        "invariant); a symmetric pooling afterwards makes the result invariant."
    ),
    "C30": "Positions enter as X' = X + P.",
    "C31": "PE[pos, 2i] = sin(pos / 10000^(2i/d)), PE[pos, 2i+1] = cos(pos / 10000^(2i/d)).",
    "C32": (
        "For each frequency ω, the pair at pos + k is a rotation of the pair at pos by an angle "
        "that depends on k alone (the 2×2 matrix of the seed), for every pos."
    ),
    "C33": (
        "The encoding can be computed for positions beyond any training length; that alone does "
        "not make a model generalise there."
    ),
    "C34": (
        "Encoder block: self-attention, add & norm, FFN, add & norm (Post-LN); the Pre-LN "
        "variant normalises before each sub-layer. Our block equals "
        "`torch.nn.TransformerEncoderLayer` given the same weights (norm_first False and True)."
    ),
    "C35": (
        "Decoder block: causal self-attention, add & norm, cross-attention, add & norm, FFN, "
        "add & norm; then a linear layer and softmax over the vocabulary. Equal to "
        "`torch.nn.TransformerDecoderLayer` given the same weights."
    ),
    "C36": (
        "Causal mask: with M_ij = −∞ for j > i, the output at position i does not change when "
        "any later token changes (checked by perturbing the future)."
    ),
    "C37": "A padding mask and a causal mask do different jobs, and they combine.",
    "C38": (
        "LayerNorm normalises each token over its features: a token's output does not depend on "
        "the batch, the sequence length or padding; BatchNorm's does (shown), though it is not "
        "forbidden."
    ),
    "C39": (
        "Cross-attention: Q = H_dec W_Q, K = Y W_K, V = Y W_V with Y the encoder output; the "
        "attention map is [target length, source length]."
    ),
    "C40": (
        "A tiny encoder–decoder trained on a toy sequence task (e.g. reversal) learns it, and "
        "its cross-attention map shows the alignment (an anti-diagonal for reversal)."
    ),
    "C41": (
        "Cost of one layer: CNN O(k·n·d²), RNN O(n·d²), self-attention O(n²·d); sequential "
        "steps and longest path as in the seed's table; full attention's memory grows as n², "
        "measured."
    ),
    "C42": (
        "Blockwise attention with an online softmax gives the same output as full attention "
        'while its extra memory grows linearly in n (the seed\'s "分块策略").'
    ),
    "C43": (
        "An encoder assembled from attnlib's own blocks, loaded with the pretrained weights of "
        "all-MiniLM-L6-v2, gives the same hidden states, the same attention weights in all 72 "
        "heads and the same sentence embeddings as the reference implementation (transformers' "
        "`BertModel`), and a sentence's outputs are the same alone or inside a padded batch."
    ),
    "C44": (
        "Trained heads differ: measured over all 72 heads, some put most of their weight on the "
        "previous or the next token, some on `[CLS]`/`[SEP]` or punctuation, some spread it "
        "widely (entropy per head). Yet no head is guaranteed to match a nameable concept (000 "
        "§8), and a large weight is not an explanation."
    ),
    "C45": (
        "In trained heads q·k is not a sum of independent unit-variance terms: the measured "
        "Var(q·k)/d_k per layer is not 1. The √d_k argument (000 §3) is a motivation, not a "
        "guarantee."
    ),
    "C46": (
        "Multi-head attention in a trained model: the 12 heads of one layer attend differently "
        "to the same sentence (their weight maps differ), unlike heads copied from one another "
        "(C28)."
    ),
    "C47": (
        "BERT-style models learn their position embeddings: the similarity of position vectors "
        "falls off with distance like the sinusoidal encoding's (notebook 07), but an offset is "
        "not an exact rotation."
    ),
    "C48": (
        "A large attention weight is not importance: removing one head's output (zeroing it "
        "before W_O) can move the sentence embeddings very little for a head with striking "
        "weights (a [CLS]-sink or previous-token head) and much more for a plain-looking one; "
        "measured as 1 − cos of the embeddings for every one of the 72 heads."
    ),
    "C49": (
        "A decoder-only model predicts every next token at once: the targets are the inputs "
        "shifted by one, and with the causal mask position t's logits do not change when any "
        "token after t changes (checked on the model). Given the same weights, our model gives "
        "the same logits as an independent implementation (transformers' `GPT2LMHeadModel` built "
        "from a small config, no download), in float64."
    ),
    "C50": (
        "Decoding with a KV cache gives the same logits as recomputing the whole prefix. The work "
        "per new token grows linearly with the prefix with the cache and quadratically without it "
        "(counted). The cache holds 2 · layers · tokens · width numbers; grouped-query attention "
        "divides that by the number of query heads per K/V head."
    ),
    "C51": (
        "A 2-layer attention-only model trained on sequences with repeated segments shows a phase "
        "change: the loss stays on a plateau, then drops within a short stretch of training, and "
        "at the same time its loss on a segment's second occurrence falls far below its first "
        "(in-context learning)."
    ),
    "C52": (
        "With segments of random length (2 to 16 tokens), what forms is the textbook circuit, "
        "each part measured: a layer-0 head that attends to the previous token, and layer-1 "
        "heads that attend to the token after the earlier occurrence of the current token "
        "(prefix matching) and copy it. They find that token through their keys, which read the "
        "previous-token head's output (K-composition: a composition score above random "
        "matrices', and removing that head's output from the keys alone removes the prefix "
        "matching). With every segment 16 tokens long a different circuit formed (layer-0 heads "
        "that look 16 and 15 back): the setup decides the circuit, stated as measured."
    ),
    "C53": (
        "A 1-layer model trained the same way shows no such drop and no induction head: the "
        "circuit needs two layers (the control)."
    ),
    "C54": (
        "Removing a necessary head of the circuit (zeroing its output) undoes in-context copying: "
        "the previous-token head, or both layer-1 heads together; removing the other layer-0 head "
        "or one of the two redundant layer-1 heads costs less: the importance of a head is "
        "measured by ablation, not read from its weights (C48)."
    ),
}


def _marker_claims(node: ast.expr) -> list[str]:
    """``pytest.mark.claim("C05")`` (or a list of them) -> ["C05"]."""
    found = []
    for call in ast.walk(node):
        if (
            isinstance(call, ast.Call)
            and isinstance(call.func, ast.Attribute)
            and call.func.attr == "claim"
        ):
            found += [a.value for a in call.args if isinstance(a, ast.Constant)]
    return found


def tests_by_claim() -> dict[str, list[str]]:
    """Claim ID -> the tests that check it (``tests/test_x.py::test_name``), sorted."""
    found: dict[str, set[str]] = defaultdict(set)
    for path in sorted((ROOT / "tests").rglob("test_*.py")):
        tree = ast.parse(path.read_text(), filename=str(path))
        module_claims = [
            cid
            for node in tree.body
            if isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in node.targets)
            for cid in _marker_claims(node.value)
        ]
        rel = path.relative_to(ROOT).as_posix()
        for node in ast.walk(tree):
            if not isinstance(node, ast.FunctionDef) or not node.name.startswith("test_"):
                continue
            claims = set(module_claims)
            name = TEST_NAME.match(node.name)
            if name:
                claims.add(f"C{name.group(1)}")
            for decorator in node.decorator_list:
                claims |= set(_marker_claims(decorator))
            for cid in claims:
                found[cid].add(f"{rel}::{node.name}")
    return {cid: sorted(tests) for cid, tests in found.items()}


def cells_by_claim() -> dict[str, dict[str, list[int]]]:
    """Claim ID -> {notebook stem: [cell indices]}."""
    found: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
    for path in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        for index, cell in enumerate(cells(path)):
            for number in sorted(set(CLAIM.findall(cell_prose(cell)))):
                found[f"C{number}"][path.stem].append(index)
    return {cid: dict(nbs) for cid, nbs in found.items()}


def render() -> str:
    tests, cells = tests_by_claim(), cells_by_claim()
    lines = [
        "# Claims",
        "",
        "<!-- Generated by `make claims` (tools/claims.py) from the claims' statements, the tests",
        "and the notebooks; tests/test_claims.py fails when this file is stale. Do not edit. -->",
        "",
        "Every claim the course makes has an ID, a test that checks it against an independent",
        "reference (autograd, PyTorch's own modules, float64, a closed form, transformers'",
        "`BertModel`) and a notebook cell that shows it with numbers or a picture. Cells are",
        "numbered from 0, as nbval reports them. `pytest -k c05` runs one claim's tests.",
        "",
        "| claim | tests | notebook cells |",
        "|---|---|---|",
    ]
    for cid in STATEMENTS:
        where = "; ".join(
            f"{nb} {', '.join(map(str, idx))}" for nb, idx in sorted(cells.get(cid, {}).items())
        )
        lines.append(f"| [{cid}](#{cid.lower()}) | {len(tests.get(cid, []))} | {where or '—'} |")
    for cid, statement in STATEMENTS.items():
        lines += ["", f"## {cid}", "", statement, ""]
        for nb, idx in sorted(cells.get(cid, {}).items()):
            plural = "s" if len(idx) > 1 else ""
            lines.append(
                f"- Shown in `notebooks/{nb}.ipynb`, cell{plural} {', '.join(map(str, idx))}"
            )
        for test in tests.get(cid, []):
            lines.append(f"- Tested by `{test}`")
    return "\n".join(lines) + "\n"


def problems() -> list[str]:
    """Claims without a test or a cell, and IDs cited that are not claims."""
    tests, cells = tests_by_claim(), cells_by_claim()
    found = [f"{cid} has no test" for cid in STATEMENTS if not tests.get(cid)]
    found += [f"{cid} is shown in no notebook cell" for cid in STATEMENTS if not cells.get(cid)]
    found += [f"{cid} is cited but is not a claim" for cid in sorted(set(tests) | set(cells))
              if cid not in STATEMENTS]  # fmt: skip
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=["write", "check"])
    args = parser.parse_args(argv)
    text = render()
    if args.command == "write":
        OUTPUT.write_text(text)
        print(f"wrote {OUTPUT.relative_to(ROOT)} ({len(STATEMENTS)} claims)")
        for problem in problems():
            print(f"warning: {problem}")
        return 0
    stale = not OUTPUT.exists() or OUTPUT.read_text() != text
    if stale:
        print("CLAIMS.md is stale: run `make claims`")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
