# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 05 · Masks: padding, causality, and rows with nothing to see
#
# **What you will learn**
#
# - how the whole attention computation fits in one matrix formula, $\operatorname{softmax}(QK^\top/\sqrt{d_k} + M)\,V$, and what the mask matrix $M$ does;
# - how a batch of sequences of different lengths is padded, and how `valid_lens` keeps the padding out of every softmax, per batch row or per query;
# - why a row in which *every* key is hidden needs special care, and why "use a large negative number instead of $-\infty$" is not one recipe but several, depending on the dtype;
# - how the causal mask stops a position from reading the future, checked by changing the future and watching the past stay put;
# - that a padding mask hides keys only: padded *queries* still produce outputs, which the loss must ignore;
# - that a padding mask and a causal mask do different jobs and combine into one boolean mask;
# - that the zeros `attnlib` returns for a row with nothing to see are a convention: `F.scaled_dot_product_attention` follows it too (checked here on the CPU), while `torch.softmax` and `nn.MultiheadAttention` return NaN;
# - in the explorer: what each masking recipe (−∞, −1e9, `finfo(dtype).min`, −1e6, ours) does to an empty row in float32, float16 and bfloat16.
#
# **Sections taught:** lecture notes 000 (*Chapter 2: the mathematics of attention*) §6 (the matrix form and the mask), and lecture notes 004 (*9 Attention and the Transformer*) §9.6 (masking and the additive-attention code) and §9.14 (causal masked attention).
#
# **Read first:** `04_worked_example.ipynb` (one query, two keys, by hand) and `03_softmax_gradient.ipynb` (what softmax does to a row).
#
# **Time:** about 30 minutes.

# %%
# %matplotlib inline
import math

import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F

from attnlib import (
    AdditiveAttention,
    causal_mask,
    default_device,
    dot_product_attention,
    masked_softmax,
    padding_mask,
    set_seed,
)
from attnlib.core.softmax import masked_softmax_steps
from attnlib.course.examples import demo_batch
from attnlib.course.pitfalls import (
    fill_masked_softmax,
    format_cases,
    fully_masked_row_cases,
    lecture_masked_softmax,
    recipe_softmax,
)
from attnlib.figures.masking import masking_combined_figure
from attnlib.util.rounding import (
    rounded as show,  # rounds for printing: same digits on every device
)
from attnlib.widgets import masking_explorer
from attnlib.widgets.explorers.masking import DTYPES, RECIPES, masking_picture

set_seed(0)
device = default_device()
# Random numbers are drawn on the CPU and then moved to `device`, so every device sees the same inputs.

# %% [markdown]
# ## 1. All queries at once, and the mask matrix
#
# So far we scored one query at a time. Stacking the queries as the rows of $Q \in \mathbb{R}^{S_q\times d_k}$ and the keys as the rows of $K \in \mathbb{R}^{S_k\times d_k}$, a single product gives every score at once: entry $(i, j)$ of $QK^\top \in \mathbb{R}^{S_q\times S_k}$ is $q_i\cdot k_j$. One head of attention is then
#
# $$
# \operatorname{Attention}(Q, K, V) = \operatorname{softmax}_{\text{row}}\!\left(\frac{QK^\top}{\sqrt{d_k}} + M\right) V ,
# $$
#
# where the softmax runs along each row (over the keys) and $M \in \mathbb{R}^{S_q\times S_k}$ is the **mask (掩码)** matrix:
#
# $$
# M_{ij} = \begin{cases} 0 & \text{query } i \text{ may read key } j,\\ -\infty & \text{key } j \text{ is hidden from query } i.\end{cases}
# $$
#
# Adding $0$ changes nothing. Adding $-\infty$ sends the score to $-\infty$, and $e^{-\infty} = 0$, so a hidden key receives weight **exactly** zero and the remaining weights still sum to one (as long as at least one key in the row is visible; section 3 is about the rows where none is). A mask is therefore not a "penalty": it removes keys from the competition.
#
# `attnlib` accepts the mask in two equivalent forms: as the additive float matrix $M$ above, or as a boolean matrix with `True` = "may attend" (the convention of `F.scaled_dot_product_attention`). Below, query 0 may only read key 0, and nobody may read key 3:

# %%
# C11: softmax(QKᵀ/√d_k + M) V with M = 0 (visible) or -inf (hidden): hidden weights are exactly 0
gen = torch.Generator().manual_seed(0)
Q = torch.randn(4, 2, generator=gen).to(device)   # (S_q, d_k)
K = torch.randn(4, 2, generator=gen).to(device)   # (S_k, d_k)
V = torch.randn(4, 3, generator=gen).to(device)   # (S_k, d_v)

M = torch.zeros(4, 4, device=device)
M[:, 3] = float("-inf")          # key 3 hidden from everyone
M[0, 1:] = float("-inf")         # query 0 sees key 0 only
visible = M == 0                 # the same mask as booleans, True = may attend

out_float, w_float = dot_product_attention(Q, K, V, M)
out_bool, w_bool = dot_product_attention(Q, K, V, visible)
by_hand = torch.softmax(Q @ K.T / math.sqrt(2) + M, dim=-1)   # the boxed formula, written out

print("weights:", show(w_float))
print("largest weight on a hidden key:", w_float[~visible].abs().max().item())
print("rows sum to 1:", show(w_float.sum(-1)))
print("max |float-mask weights - boolean-mask weights|:", (w_float - w_bool).abs().max().item())
gap = (w_float - by_hand).abs().max().item()   # float32 rounding: a few 1e-8, different per device
print(f"max |weights - the formula written out| {'<' if gap < 1e-6 else '>='} 1e-6")

# %% [markdown]
# ## 2. Padding and `valid_lens`
#
# A batch stacks several sequences into one tensor, so they must share a length. Shorter sequences are filled up with **padding (填充)** tokens, `<pad>`, that carry no meaning. Those positions must never receive attention: a query that spreads weight over `<pad>` keys mixes noise into its output, and the amount of noise would depend on how much padding its batch happened to need.
#
# The usual way to say where the padding starts is the **valid length (有效长度)** of each sequence, `valid_lens`. `padding_mask(valid_lens, S)` turns the lengths into a boolean mask, `True` for real tokens:

# %%
# C25: valid_lens per batch row (1-D): one length per sequence
valid_lens = torch.tensor([4, 2]).to(device)                # sequence 0 has 4 real tokens, sequence 1 has 2
print("padding mask (True = real token):")
for row in padding_mask(valid_lens, 5).cpu().int().tolist():
    print("  ", row)

scores = torch.randn(2, 3, 5, generator=gen).to(device)    # (B=2, L=3 queries, S=5 keys)
w = masked_softmax(scores, valid_lens=valid_lens)           # (B, L, S)
print("batch 0 weights:", show(w[0], 3))
print("batch 1 weights:", show(w[1], 3))

# %% [markdown]
# Every query in batch 0 ignores key 4, and every query in batch 1 ignores keys 2–4: the length is per *sequence*, so one length covers all of that sequence's queries.
#
# Sometimes each query needs its own limit (for example a decoder under the causal mask of section 4, where query $i$ may only see the first $i+1$ keys). Then `valid_lens` is 2-D, shape `(B, L)`, one length per query:

# %%
# C25: valid_lens per query (2-D): one length per (batch row, query)
valid_lens_2d = torch.tensor([[1, 2, 3], [3, 3, 5]]).to(device)   # (B=2, L=3)
w2 = masked_softmax(scores, valid_lens=valid_lens_2d)
print("batch 0 weights:", show(w2[0], 3))
print("batch 1 weights:", show(w2[1], 3))

# %% [markdown]
# Lecture notes 004 §9.6 write this masking into a complete additive-attention layer. Nothing about it is specific to the dot product: the mask acts on the scores, whatever function produced them. `attnlib.AdditiveAttention` (notebook 00) takes the same `valid_lens`:

# %%
# C25: the same valid_lens masks the additive score vᵀ tanh(W_q q + W_k k)
torch.manual_seed(0)
additive = AdditiveAttention(d_q=3, d_k=4, d_hidden=8).to(device)
queries = torch.randn(2, 2, 3, generator=gen).to(device)   # (B, L, d_q)
keys = torch.randn(2, 5, 4, generator=gen).to(device)      # (B, S, d_k): a different width is fine here
values = torch.randn(2, 5, 2, generator=gen).to(device)    # (B, S, d_v)
_, w_add = additive(queries, keys, values, valid_lens=torch.tensor([2, 4]).to(device))
print("batch 0 weights:", show(w_add[0], 3))
print("batch 1 weights:", show(w_add[1], 3))

# %% [markdown]
# ### A sequence with nothing in it
#
# What if a valid length is **0**? Then that row of the batch has no real key at all, and every score of every query in it is hidden. Mathematically the softmax is $0/0$: undefined. The code of lecture notes 004 §9.6 returns **all-zero weights** for such a row in float32 and bfloat16 (it hides with `masked_fill(~mask, -1e6)`, then multiplies by the mask and renormalises; in float16 that `masked_fill` raises, as section 3 shows). `attnlib` returns zeros in every dtype: the query reads nothing and its output is the zero vector. (Zeros are a choice, not the value of $0/0$, which has none; section 3 comes back to this.)
#
# > **Common mistake.** The widely copied `masked_softmax` of d2l (Dive into Deep Learning) replaces hidden scores by $-10^6$ and then calls an ordinary softmax. For a row with `valid_len = 0` every score becomes the same $-10^6$, and the softmax of a row of equal numbers is **uniform**: the "empty" query quietly averages all the padding. (The function also writes into its input.)
#
# `attnlib.course.pitfalls.fill_masked_softmax` reproduces that recipe so we can compare:

# %%
# C25: valid_len = 0 — our masked_softmax gives zeros; the "-1e6 fill" recipe gives a uniform row
lens_with_zero = torch.tensor([0, 3]).to(device)
ours = masked_softmax(scores, valid_lens=lens_with_zero)
d2l_style = fill_masked_softmax(scores, valid_lens=lens_with_zero, fill=-1e6, how="replace")
print("attnlib,  batch 0 (valid_len 0):", show(ours[0], 3))
print("-1e6 fill, batch 0 (valid_len 0):", show(d2l_style[0], 3))
gap = (ours[1] - d2l_style[1]).abs().max().item()
print(f"batch 1 (valid_len 3), max |attnlib - (-1e6 fill)| {'<' if gap < 1e-6 else '>='} 1e-6")

out_empty, _ = dot_product_attention(Q[None], K[None], V[None], valid_lens=torch.tensor([0]).to(device))
print("output of an empty row (4 queries x d_v = 3):", show(out_empty[0]))

# %% [markdown]
# The lecture notes' own function is in `attnlib.course.pitfalls.lecture_masked_softmax`, copied word for word. Its last two steps are what make it correct: after the softmax it multiplies by the mask, so a hidden key gets exactly 0 however the $-10^6$ fared, and it divides by the new row sum, or returns 0 where that sum is 0. For the empty row, the softmax of five equal $-10^6$ is uniform, the mask zeroes it, and the sum is 0. On the rows with something visible it gives the weights of the $-\infty$ formula, to float32 rounding. In float16 its `masked_fill` with $-10^6$ raises, for any batch given `valid_lens`, even one in which nothing is hidden:

# %%
# C25, C12: the seed's masked_softmax (lecture notes 004 §9.6) run as written, beside attnlib's
for dtype in (torch.float32, torch.bfloat16):
    seed_w = lecture_masked_softmax(scores.cpu().to(dtype), lens_with_zero.cpu())     # on the CPU
    ours_d = masked_softmax(scores.cpu().to(dtype), valid_lens=lens_with_zero.cpu())
    gap = (seed_w[1].double() - ours_d[1].double()).abs().max().item()             # batch 1: valid_len 3
    tol, tol_text = (1e-6, "1e-6") if dtype == torch.float32 else (1e-2, "1e-2")   # bfloat16 keeps ~3 digits
    print(f"{str(dtype):15s} seed, batch 0 (valid_len 0): {show(seed_w[0], 3)}   "
          f"batch 1 (valid_len 3): row sums {show(seed_w[1].float().sum(-1), 3)}, "
          f"max |seed - attnlib| {'<' if gap < tol else '>='} {tol_text}")
flat0 = scores[0, :1].cpu()                                   # one query of the empty batch row 0, (1, S=5)
no_key = torch.zeros(1, 5, dtype=torch.bool)                  # valid_len 0: nothing visible
soft = torch.softmax(flat0.masked_fill(~no_key, -1e6), dim=-1)
print("empty row, step by step: softmax of the filled row", show(soft[0], 3), "-> x mask", show((soft * no_key)[0], 3),
      "-> row sum", show((soft * no_key).sum(), 3), "-> weights 0")
for lens in ([0, 3], [5, 5]):
    try:
        lecture_masked_softmax(scores.cpu().half(), torch.tensor(lens))
    except RuntimeError as err:
        print(f"torch.float16   valid_lens {lens}: {type(err).__name__} - {err}")

# %% [markdown]
# ### A padding mask hides keys, not queries
#
# `valid_lens` removes the padded positions from every query's *keys*. The padded positions are still *queries*: their rows of the weight matrix see the real keys like any other row, and they produce outputs. Nothing in attention zeroes them. Whatever is computed from those outputs later (the **loss (损失)**, above all) has to ignore them itself: `attnlib.models.seq2seq.training.train_seq2seq`, the training loop notebook 08 calls, passes `ignore_index=PAD` to the **cross-entropy (交叉熵)** (the last line below prints that line of its source), so the padded target positions add nothing to the loss. One sequence of 6 tokens, the last two `<pad>`:

# %%
# C25: a padding mask hides keys only; the padded query positions 4, 5 still produce outputs
x_pad = torch.randn(1, 6, 4, generator=torch.Generator().manual_seed(1)).to(device)   # (B=1, L=6, d=4)
out_pad, w_padq = dot_product_attention(x_pad, x_pad, x_pad, valid_lens=torch.tensor([4]).to(device))
print("largest weight on the pad keys 4, 5 (any query):", w_padq[0, :, 4:].abs().max().item())
print("row sums of the pad queries 4, 5:              ", show(w_padq[0, 4:].sum(-1), 3))
print("|output| of the pad queries 4, 5:              ", show(out_pad[0, 4:].norm(dim=-1), 3))
import inspect

from attnlib.models.seq2seq.training import train_seq2seq

print("train_seq2seq's loss ignores the pad targets:",
      next(line.strip() for line in inspect.getsource(train_seq2seq).splitlines() if "ignore_index" in line))

# %% [markdown]
# ## 3. Fully masked rows across dtypes: "a large negative number" is not $-\infty$
#
# Code often avoids $-\infty$ by writing a large negative number: $-10^6$ (d2l) or $-10^9$ (the Annotated Transformer). Lecture notes 000 §6 warn that this is **not equivalent across dtypes and inputs**. Here is why, on a single row whose four keys are *all* hidden, with raw scores $z = (2, 0.5, -1, 1)$:
#
# * **Plain softmax with $M = -\infty$**: every entry is $-\infty$, the row max is $-\infty$, and $-\infty - (-\infty)$ is NaN. The NaN then spreads through every later layer.
# * **float16** tops out at 65504, so $-10^6$ and $-10^9$ **overflow (溢出)**: they *are* $-\infty$ once stored in float16, and we are back at NaN. (`Tensor.masked_fill` refuses outright, so the `masked_softmax` of lecture notes 004 §9.6 crashes on every float16 call that passes `valid_lens`: shown below the tables.)
# * **Replacing** the hidden scores by one large number makes every entry equal, so the row becomes **uniform**.
# * **Adding** $M = -10^6$ in float32 is the subtlest. float32 keeps 24 significant bits, and $10^6$ lies between $2^{19}$ and $2^{20}$, so numbers near it are stored in steps of $2^{19-23} = 1/16$. The score *differences* survive (to within that step; exactly here, where every score is a multiple of $1/16$), and the softmax, which only sees differences, returns the weights the row would have had **with no mask at all**. Near $10^9$ (between $2^{29}$ and $2^{30}$) the steps are $2^{6} = 64$: adding $-10^9$ rounds the differences away and gives a uniform row again. bfloat16 keeps only 8 significant bits, so both sentinels round the differences away there.
# * **Adding** $M = $ `torch.finfo(dtype).min`, the most negative finite number of the dtype (the choice of Hugging Face's code), never overflows when stored, in any dtype. But it is so large that every score rounds away: a fully hidden row is **uniform** in all three dtypes. And it leaves no headroom: two such masks *added* overflow to $-\infty$ (shown below).
#
# We call the large negative number a recipe writes into the hidden entries its **sentinel (哨兵值)**: a stand-in value that means "hidden" rather than a real score.
#
# `attnlib.masked_softmax` uses no sentinel at all: it hides with $-\infty$ (or a boolean mask) and guards the row with nothing visible, for which it returns zeros, in every dtype (how, at the end of this section):

# %%
# C12: a fully masked row under each recipe, in float32, float16 and bfloat16
cases = fully_masked_row_cases((2.0, 0.5, -1.0, 1.0), device=device)
print("what the row becomes:")
print(format_cases(cases, what="verdict"))
print()
print("its weights:")
print(format_cases(cases, what="weights"))
print()
print("the sentinel as stored in each dtype:")
print(format_cases(cases, what="fill"))

# %% [markdown]
# The code of lecture notes 004 §9.6 hides with `flat.masked_fill(~mask, -1e6)`. In float16 that line does not compute a wrong answer; it raises, for any batch given `valid_lens`, whether or not a row is empty (with `valid_lens=None` the function returns a plain softmax before reaching it). And `finfo(dtype).min` is exactly at the edge of the range, so a second additive mask pushes it over:

# %%
# C12: the lecture notes' masked_fill(-1e6) raises in float16; finfo.min + finfo.min overflows to -inf
flat = torch.tensor([[2.0, 0.5, -1.0, 1.0]], dtype=torch.float16)   # on the CPU; keys 2, 3 are padding
mask = torch.tensor([[True, True, False, False]])
try:
    flat.masked_fill(~mask, -1e6)
except RuntimeError as err:
    print("float16 masked_fill(~mask, -1e6):", type(err).__name__, "-", err)
print("bfloat16 masked_fill(~mask, -1e6):", show(flat.to(torch.bfloat16).masked_fill(~mask, -1e6)[0], 1))
print()
all_hidden = torch.zeros(1, 4, dtype=torch.bool)   # (1, S): every key hidden, by two masks at once
for dtype in (torch.float32, torch.float16, torch.bfloat16):
    m = torch.tensor(torch.finfo(dtype).min, dtype=dtype)
    row = recipe_softmax(flat.to(dtype), [all_hidden, all_hidden], "add M = finfo(dtype).min")   # M1 + M2 added
    print(f"{str(dtype):15s} finfo.min = {m.item():.6g}   finfo.min + finfo.min = {(m + m).item()}   "
          f"row hidden by both masks: {show(row[0], 3)}")

# %% [markdown]
# Read the first table as a list of failure modes. NaN is loud (it poisons everything after it). "uniform" and "as if unmasked" are silent: the numbers look fine, but a query that should have read nothing reads padding. `finfo(dtype).min` is the safest sentinel (never NaN with one mask, in any dtype), and it gives the same answer in all three dtypes, but a misleading one: a uniform row, as if the query had read every hidden key equally. Only the last line gives a finite answer that says "this query read nothing" in all three dtypes: zeros.
#
# Zeros are a **convention (约定)**, not the true value of the row: $0/0$ has none. They are a sound one (finite, the same in every dtype, and a query that reads nothing adds nothing), but the position's output still means nothing, and whatever comes later must ignore it, like the padded queries of section 2. The zeros carry through the whole attention call, so the output of such a row is zero too, also in half precision:

# %%
# C12: zero weights AND zero output for a fully hidden row, in every float dtype
nothing_visible = torch.tensor([[True, True, False, False], [False, False, False, False]]).to(device)  # row 1: all hidden
for dtype in (torch.float32, torch.float16, torch.bfloat16):
    out_d, w_d = dot_product_attention(Q[:2].to(dtype), K.to(dtype), V.to(dtype), nothing_visible)
    print(f"{str(dtype):15s} hidden row weights {show(w_d[1], 3)}  output {show(out_d[1], 3)}  "
          f"NaN entries: {int(torch.isnan(out_d).sum())}")

# %% [markdown]
# It is also the convention of `F.scaled_dot_product_attention` (claim C27 compares `attnlib` with it), checked here on the CPU: it returns a zero output row for a query whose keys are all hidden, with a boolean mask and with a $-\infty$ float mask. It is *not* the convention of the rest of torch: `torch.softmax` of that row is NaN (section 3's first line), and so is the output of `nn.MultiheadAttention` when `key_padding_mask` hides every key (the last line below; notebook 06, section 3, meets the same NaN through an inverted mask). The same two queries as above, on the CPU:

# %%
# C12, C27: torch's own F.scaled_dot_product_attention also gives zeros for the fully hidden row (on the CPU)
minus_inf_mask = torch.zeros(2, 4).masked_fill(~nothing_visible.cpu(), float("-inf"))   # the same mask as M = 0 / -inf
for dtype in (torch.float32, torch.float16, torch.bfloat16):
    q_c, k_c, v_c = (t.cpu().to(dtype) for t in (Q[:2], K, V))          # torch's CPU kernels, on every machine
    sdpa_bool = F.scaled_dot_product_attention(q_c, k_c, v_c, attn_mask=nothing_visible.cpu())
    sdpa_inf = F.scaled_dot_product_attention(q_c, k_c, v_c, attn_mask=minus_inf_mask.to(dtype))
    ours_c, _ = dot_product_attention(q_c, k_c, v_c, nothing_visible.cpu())
    gap = (sdpa_bool[0] - ours_c[0]).abs().max().item()                # the visible row 0
    tol, tol_text = (1e-6, "1e-6") if dtype == torch.float32 else (1e-2, "1e-2")   # half precision keeps ~3 digits
    print(f"{str(dtype):15s} SDPA, hidden row: boolean mask {show(sdpa_bool[1], 3)}  -inf mask {show(sdpa_inf[1], 3)}  "
          f"visible row: max |SDPA - attnlib| {'<' if gap < tol else '>='} {tol_text}")

# torch's layer: one sequence of 3 tokens whose every key is hidden (torch's key_padding_mask: True = HIDDEN)
torch.manual_seed(0)
torch_mha = torch.nn.MultiheadAttention(4, 2, batch_first=True)        # on the CPU
x3 = torch.randn(1, 3, 4, generator=torch.Generator().manual_seed(2))  # (B=1, L=3, D=4)
for mode in ("eval", "train"):
    torch_mha.train(mode == "train")
    o_t, w_t = torch_mha(x3, x3, x3, key_padding_mask=torch.ones(1, 3, dtype=torch.bool))
    print(f"nn.MultiheadAttention ({mode}), every key hidden: {int(torch.isnan(o_t).sum())} of {o_t.numel()} "
          f"output entries NaN, {int(torch.isnan(w_t).sum())} of {w_t.numel()} weights NaN")

# %% [markdown]
# We checked this with torch 2.13 on the CPU only, which is why the cell moves the tensors there. On a GPU, SDPA may choose another kernel, and kernels have disagreed on this row before: in torch 2.1 a CUDA kernel returned NaN where the CPU returned numbers, for a row whose float mask was `torch.finfo(dtype).min` everywhere (pytorch/pytorch issue #110213 on GitHub; the boolean and $-\infty$ masks checked above are not what that issue tested). `attnlib.masked_softmax` gets its zeros from its own guard, on every device.

# %% [markdown]
# How does `masked_softmax` do it? In three steps, which `attnlib.core.softmax.masked_softmax_steps` returns one by one (the same operations, so its last step is `masked_softmax`'s result to the last bit):
#
# 1. **hide**: hidden scores become $-\infty$ (a boolean mask is applied with `masked_fill`, a float mask is added); float16 and bfloat16 scores are first converted to float32;
# 2. **guard**: find the rows whose maximum is $-\infty$, the rows with nothing visible, and set *every* score of those rows to 0. That is finite, so the softmax of the next step never computes $-\infty - (-\infty)$, and no NaN reaches the forward or the backward pass;
# 3. **softmax, then zero**: an ordinary `torch.softmax` of every row (which subtracts the row's maximum first), which gives the guarded rows a uniform $1/S$; those rows are then overwritten with 0, and the result is cast back to the scores' dtype. The cast is the only change to the other rows: float16 keeps about three significant digits, so the visible row's first weight reads 0.818 after `torch.softmax` (float32) and 0.817 after the cast (the line after step 3 prints both to 4 decimals).
#
# No magic number is involved: the only values ever written into the scores are $-\infty$ (hidden) and 0 (every score of a row with nothing visible). Section 3's row $z = (2, 0.5, -1, 1)$, once with keys 2 and 3 hidden and once with every key hidden, and in float16:

# %%
# C12: masked_softmax's intermediate steps (masked_softmax_steps), and a finite gradient through the empty row
z_rows = torch.tensor([[2.0, 0.5, -1.0, 1.0], [2.0, 0.5, -1.0, 1.0]], dtype=torch.float16).to(device)   # (L=2, S=4)
hide = torch.tensor([[True, True, False, False], [False, False, False, False]]).to(device)            # row 1: nothing visible
steps = masked_softmax_steps(z_rows, hide)
print(f"1. hidden scores, in {steps.hidden.dtype}:", show(steps.hidden[0], 3), show(steps.hidden[1], 3))
print("2. rows whose max is -inf (their indices):", steps.empty[:, 0].nonzero().flatten().tolist(),
      "  guarded scores:", show(steps.guarded[0], 3), show(steps.guarded[1], 3))
print("3. torch.softmax:", show(steps.softmax[0], 3), show(steps.softmax[1], 3), "  empty rows zeroed:",
      show(steps.weights[0], 3), show(steps.weights[1], 3), f"in {steps.weights.dtype}")
print("   visible row 0, key 0: after torch.softmax", f"{steps.softmax[0, 0].item():.4f}",
      f"({steps.softmax.dtype}), after the cast back", f"{steps.weights[0, 0].item():.4f}", f"({steps.weights.dtype})")
print("max |steps.weights - masked_softmax(z, mask)| =",
      (steps.weights.float() - masked_softmax(z_rows, hide).float()).abs().max().item())

M_rows = torch.zeros(2, 4, device=device).masked_fill(~hide, float("-inf"))   # the same mask as M = 0 / -inf
loss_weights = torch.arange(1.0, 5.0, device=device)                            # any loss of the weights
for name, fn in [("masked_softmax(z, M)", lambda z: masked_softmax(z, M_rows)),
                 ("torch.softmax(z + M)", lambda z: torch.softmax(z + M_rows, dim=-1))]:
    z_grad = z_rows.float().clone().requires_grad_()
    w_g = fn(z_grad)
    (w_g * loss_weights).sum().backward()
    print(f"{name}: NaN weights {int(torch.isnan(w_g).sum())} of 8, NaN entries of the gradient of the scores "
          f"{int(torch.isnan(z_grad.grad).sum())} of 8")

# %% [markdown]
# ## 4. The causal mask: no peeking at the future
#
# In **autoregressive (自回归)** generation a model produces token $i$ from the tokens before it. During training the whole target sentence is fed in at once, so something must stop position $i$ from reading positions $j > i$, or it could simply copy the answer. That something is the **causal mask (因果掩码)**:
#
# $$
# M_{ij} = \begin{cases} 0, & j \le i,\\ -\infty, & j > i,\end{cases}
# \qquad
# A = \operatorname{softmax}\!\left(\frac{QK^\top}{\sqrt{d_k}} + M\right).
# $$
#
# The visible part is the lower triangle including the diagonal. The lecture's picture, "when computing $x_i$'s output, pretend the sequence has length $i$", is exactly this: row $i$ behaves as if the keys after $i$ did not exist. (The lecture counts positions from 1; counting from 0, as we do, row $i$ sees the $i + 1$ keys $0, \dots, i$.)

# %%
# C36: the causal mask (True = may attend): lower triangle including the diagonal
for row in causal_mask(5).int().tolist():
    print(row)

# %% [markdown]
# The claim to check is strong: **with the causal mask, the output at position $i$ does not change at all when any later token changes**. So take a self-attention layer (random projections $W_Q, W_K, W_V$), feed it a sequence, then replace every token after position $t$ by fresh random vectors and feed it again:

# %%
# C36: change the future; outputs at positions <= t do not move (exactly), those after t do
L, d = 8, 6
x = torch.randn(L, d, generator=gen).to(device)                    # (L, d) a sequence of 8 tokens
W_q, W_k, W_v = (torch.randn(d, d, generator=gen).to(device) for _ in range(3))
t = 4
x_new = x.clone()
x_new[t + 1:] = torch.randn(L - t - 1, d, generator=gen).to(device)  # a different future after position t

for causal in (True, False):
    out_old, _ = dot_product_attention(x @ W_q, x @ W_k, x @ W_v, is_causal=causal)                  # (L, d)
    out_new, _ = dot_product_attention(x_new @ W_q, x_new @ W_k, x_new @ W_v, is_causal=causal)      # (L, d)
    diff = (out_old - out_new).abs().amax(dim=-1)                                                    # (L,) per position
    per_position = "[" + ", ".join(f"{c:.3g}" for c in diff.cpu().tolist()) + "]"   # 3 significant digits
    print(f"causal={str(causal):5s}  max |change| at positions 0..{L - 1}: {per_position}")

# why position 3 barely moves without the mask: its weights (no mask) before and after the change
for name, xx in (("old future", x), ("new future", x_new)):
    _, w_plain = dot_product_attention(xx @ W_q, xx @ W_k, xx @ W_v)                                 # (L, S)
    print(f"position 3, no mask, {name}: weight on key 0 = 1 - {w_plain[3, 1:].sum().item():.0e}, "
          f"total weight on the changed keys {t + 1}..{L - 1} = {w_plain[3, t + 1:].sum().item():.0e}")

# %% [markdown]
# With the mask, the past is untouched to the last bit (a difference of exactly 0, because the future keys get weight exactly 0). Without it, every position moves, by very different amounts: position 3 only by 0.000348, because its query puts almost all of its weight on key 0 (all but 4e-05 of it) and next to none on the changed keys 5..7 (5e-06 of it, and 5e-05 after the change; the last two lines). Position 7, the last, sees every key with the mask or without it, so it moves by the same 0.269 in both lines. And "pretend the length is $i$" can be checked literally: position $i$'s causal output equals plain attention over the prefix $x_0,\dots,x_i$ alone.

# %%
# C36: causal output at i == unmasked attention over the prefix x[:i+1]
full, _ = dot_product_attention(x @ W_q, x @ W_k, x @ W_v, is_causal=True)   # (L, d)
prefix_gaps = []
for i in range(L):
    p = x[: i + 1]
    o, _ = dot_product_attention(p @ W_q, p @ W_k, p @ W_v)
    prefix_gaps.append((o[i] - full[i]).abs().max().item())
print(f"max |causal output - prefix-only output| over all positions {'<' if max(prefix_gaps) < 1e-5 else '>='} 1e-5")

# %% [markdown]
# ## 5. Padding and causality together
#
# The two masks answer different questions:
#
# | mask | hides | depends on |
# |---|---|---|
# | padding mask | keys that are `<pad>` | the batch row (its valid length) |
# | causal mask | keys in the future, $j > i$ | the query position |
#
# A decoder fed a padded batch needs both, and since both are "may attend" booleans they combine with a logical **AND**: key $j$ is visible to query $i$ only if it is a real token *and* not in the future. As additive float masks they would be added: $-\infty + 0 = -\infty$ and $-\infty + (-\infty) = -\infty$, which is fine. With a finite sentinel the sum is a trap: `finfo(dtype).min` added to itself overflows to $-\infty$ (section 3), and a causal mask plus a padding mask then treats keys hidden *twice* differently from keys hidden once (the explorer below shows what that does). The boolean AND has no such problem.

# %%
# C37: padding (valid_len 4 of 6) AND causal = one combined boolean mask
L6 = 6
pad = padding_mask(torch.tensor([4]), L6)[0]        # (S,): keys 0..3 are real
causal = causal_mask(L6)                            # (L, S)
combined = pad[None, :] & causal                    # (L, S)
for name, m in [("padding", pad.expand(L6, L6)), ("causal", causal), ("combined", combined)]:
    print(f"{name}:")
    for row in m.int().tolist():
        print("   ", row)

# %%
# C37: valid_lens + is_causal give the same weights as the combined mask, and they differ from either alone
demo6 = demo_batch(batch=1, num_tokens=L6)                                        # the key picture's inputs (seed 0)
q6, k6, v6 = (t.float().to(device) for t in (demo6.q, demo6.k, demo6.v))
_, w_both = dot_product_attention(q6, k6, v6, valid_lens=torch.tensor([4]).to(device), is_causal=True)
_, w_comb = dot_product_attention(q6, k6, v6, combined.to(device))
_, w_pad = dot_product_attention(q6, k6, v6, valid_lens=torch.tensor([4]).to(device))
_, w_cau = dot_product_attention(q6, k6, v6, is_causal=True)
gap = (w_both - w_comb).abs().max().item()
print(f"max |(valid_lens + is_causal) - combined mask| {'<' if gap < 1e-6 else '>='} 1e-6")
print("max |both - padding alone| =", show((w_both - w_pad).abs().max(), 3))
print("max |both - causal alone|  =", show((w_both - w_cau).abs().max(), 3))
print("combined weights:", show(w_both[0], 3))

# %% [markdown]
# The key picture of this notebook puts the three masks and the resulting weights side by side (hidden cells hatched). Its inputs are `attnlib.course.examples.demo_batch(batch=1, num_tokens=6)`, the ones the cell above used, so its right-hand panel shows the combined weights just printed, to two decimals:

# %% alt="Three masks of one 6-token sequence as 6\u00d76 grids (padding with valid length 4, causal, and both combined) and the resulting weights with hidden cells hatched: query i spreads weight summing to 1 over keys 0 to min(i, 3)."
# C37, C11: the key picture (also saved as figures/masking_combined.png)
fig = plt.figure(figsize=(12.0, 3.3), layout="constrained")
_ = masking_combined_figure(fig)
drawn = torch.from_numpy(fig.axes[3].images[0].get_array().filled(0.0))   # the weights panel's data (hidden cells: 0)
gap = (drawn - w_both[0].double().cpu()).abs().max().item()
print(f"max |weights drawn - combined weights printed above| {'<' if gap < 1e-6 else '>='} 1e-6")

# %% [markdown]
# ## 6. Explore: lengths, the causal switch, and the recipe × dtype switch
#
# Three batch rows of self-attention over 6 tokens. Each slider sets one row's valid length (they start at 4, 6 and 2); the checkbox adds the causal mask; the two menus choose **how** the hidden keys are hidden (the recipes of section 3; the additive ones *add* the padding mask and the causal mask, each carrying the sentinel where it hides) and the **dtype** the scores are masked and softmaxed in. How to read a cell:
#
# - hatched grey: hidden, weight exactly 0 (what should happen);
# - colour and number under an open orange square: a hidden key that received weight (padding or the future leaking in);
# - a red square: NaN.
#
# The readout says what the fully hidden queries of each batch row get (zeros, NaN, uniform, ≈ as if unmasked; "(none)" when no query of that row is fully hidden), the largest weight that landed on a hidden key, the number of NaN weights, how many query rows are fully hidden, and the largest gap between the drawn weights and the exact float64 masked softmax. Start with `attnlib masked_softmax`, slide a length to 0, then switch recipes and dtypes.

# %% alt="The masking explorer at its start: the weight matrices of three sequences with valid lengths 4, 6 and 2, hidden keys hatched, where NaN or leaked weights would be marked."
# NBVAL_IGNORE_OUTPUT
explorer = masking_explorer()
explorer

# %% [markdown]
# What batch row 0 with valid length 0 gets under every recipe and dtype, read from `explorer.state(...)` (which computes the readout at those settings and moves nothing on screen). The scores are the explorer's random ones, not section 3's $(2, 0.5, -1, 1)$: the $-10^6$ row is "≈ as if unmasked" because the sum rounds each score to a step of $1/16$, which changes each weight by a factor between $e^{-1/16}$ and $e^{1/16}$ (at most about 6.5 %).

# %%
# C12: the explorer's verdict for an empty batch row, per recipe and dtype
from attnlib.util.i18n import gettext  # a recipe's name as the explorer's menu shows it

print(f"{'recipe':30s}" + "".join(f"{dt:>18s}" for dt in DTYPES))
for recipe in RECIPES:
    verdicts = [explorer.state(len0=0, recipe=recipe, dtype=dt)["row 0: a fully hidden query gets"] for dt in DTYPES]
    print(f"{gettext(recipe):30s}" + "".join(f"{v:>18s}" for v in verdicts))  # its shown name
st = explorer.state(len0=0, causal=True, recipe="add M = finfo(dtype).min")
print()
print("causal + finfo.min, valid_len 0: largest weight on a hidden key =", round(st["largest weight on a hidden key"], 3))
print("causal + finfo.min, valid_len 0: the readout's verdict for row 0 =", repr(st["row 0: a fully hidden query gets"]),
      "(judged on keys 0..i, the keys the causal mask leaves query i)")

# %% [markdown]
# Without a kernel the explorer above shows only its harmless start. This is what it draws at the setting of the last line (`add M = finfo(dtype).min`, float32, causal on, batch row 0 with valid length 0; the caption and the panel titles give the settings, which the live explorer shows in its controls): every query of row 0 spreads its weight evenly over keys $0..i$, all of them padding (open orange squares), and query 0 puts weight 1.00 on key 0. The readout calls this `'uniform'` (the last line of the cell above): with the causal mask on, it judges query $i$ on the keys the causal mask leaves it, $0..i$, so here `'uniform'` means evenly over keys $0..i$, not over all 6 keys.

# %% alt="The masking explorer with causal masking, the finfo.min recipe and valid length 0 in batch row 0: every query i of that row spreads its weight evenly over keys 0 to i, all of them padding (marked with orange squares), where it should get zeros."
# C12: the explorer's picture at causal + finfo.min + valid_len 0 (drawn from explorer.compute, which moves nothing)
masking_picture(explorer, len0=0, causal=True, recipe="add M = finfo(dtype).min")   # titles: lengths; caption: settings, legend

# %% [markdown]
# ## Exercises
#
# 1. **(explorer)** Set row 1's valid length to 0 and switch the causal mask on and off. How many query rows are fully hidden, and what does the readout say they get? Now choose the recipe `add M = finfo(dtype).min` with the causal mask on: which hidden cells of row 1 receive weight, and how much? Finally set every length to 6 with the causal mask on (any recipe): which query is the only one with a one-hot row, and why?
# 2. A batch has `valid_lens = [3, 0]` and the scores are float16. Which of the recipes in the table of section 3 give a usable answer for batch row 0, and which give a usable answer for batch row 1?
# 3. The causal check in section 4 changed the future *inputs*. Would the outputs at positions $\le t$ still be unchanged if we changed a future token's *value* vector only, or its *key* vector only? Explain from the formula.
# 4. Why is the result of adding $M = -10^6$ in float32 ("as if unmasked") more dangerous in practice than a NaN?
#
# <details><summary>Answer</summary>
#
# 1. Row 1 with length 0 hides all 6 of its queries, with or without the causal mask: the readout shows 6 fully hidden query rows, and with `attnlib masked_softmax` row 1's hidden queries get "zeros". With `finfo(dtype).min` and the causal mask, the readout says row 1's hidden queries get "uniform", which here means that query $i$ of row 1 spreads its weight evenly over keys $0..i$ (orange squares), not over all 6 keys (with the causal mask on, the readout judges query $i$ on keys $0..i$ only): those keys carry the sentinel once, while the keys $j > i$ carry it twice, which overflows to $-\infty$ and gets weight 0. Query 0 puts weight 1.000 on key 0, a padding key. With every length 6 and the causal mask on, query 0 sees only key 0, so its row is one-hot $[1, 0, \dots, 0]$; every later query sees at least two keys.
# 2. Row 0 has three visible keys, so every recipe *of the table* works there: the hidden entries become $-\infty$ (or a huge negative number) and get weight 0, and the visible ones share the weight. (The table applies the sentinels with `torch.where`. Code that uses `masked_fill(~mask, -1e6)`, like that of lecture notes 004 §9.6, raises in float16 before it computes anything, for row 0 too.) Row 1 has nothing visible: in float16 the $-10^6$, $-10^9$ and $-\infty$ recipes give NaN and `finfo(dtype).min` a uniform row, so only `attnlib.masked_softmax` (zeros) is usable.
# 3. Yes in both cases. Query $i$'s output is $\sum_{j\le i} a_{ij} v_j$ with $a_{ij}$ computed from $q_i$ and the keys $k_j$, $j \le i$ only. A future key $k_j$ ($j > i$) gets weight exactly 0 whatever its score, and a future value $v_j$ is multiplied by that 0.
# 4. A NaN shows up at once (the loss becomes NaN). "As if unmasked" trains without complaint while padding, or the future, leaks into the result; the model can learn to depend on it, and nothing flags it.
# </details>
