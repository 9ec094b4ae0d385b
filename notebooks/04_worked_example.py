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
# # 04 · A worked example: how weights mix values
#
# **What you will learn**
#
# - the three steps of attention once more — scores, softmax weights, weighted sum — on numbers small enough to do by hand;
# - the worked example of the lecture notes: scores $[\log 3, 0]$ give weights $[3/4, 1/4]$, and values $[2, 0]$, $[0, 4]$ give the output $[1.5, 1]$;
# - that changing the query changes *how* things are mixed, while changing the values changes *what* is mixed;
# - that the output of one head (without dropout) is a convex combination of the value rows: it lies in their convex hull, checked on random inputs;
# - the 2-D example $q_1 = (1, 2)$, $q_2 = (1, 1)$ against $k_1 = (1, 0)$, $k_2 = (0, 1)$: weights $(0.33, 0.67)$ and $(0.50, 0.50)$;
# - what still holds after the output projection $W_O$ (a convex combination of the projected values) and what breaks it (a residual connection, the feed-forward network); $W_O$ is taught in notebook 06, the other two in notebook 08;
# - why a large weight is not, by itself, an explanation;
# - in the explorer: how moving the *query* against two fixed keys moves the weight $a_1 = \sigma(s_1 - s_2)$, and how moving a *value* moves only the output.
#
# **Sections taught:** lecture notes 000 (*Chapter 2: the mathematics of attention*) §5 (a small example for understanding aggregation) and the convex-combination remark of §4, and lecture notes 004 (*9 Attention and the Transformer*) §9.2 (attention scores, weights and output) and §9.8.3 (the 2-D numerical example of the slides).
#
# **Read first:** `03_softmax_gradient.ipynb` (softmax and its properties).
#
# **Time:** about 20 minutes.

# %%
# %matplotlib inline
import math

import matplotlib.pyplot as plt
import torch

from attnlib import (
    default_device,
    dot_product_attention,
    masked_softmax,
    scaled_dot_score,
    set_seed,
)
from attnlib.core.transformer import FeedForward
from attnlib.plotting import mixing_segment, two_query_weights
from attnlib.util.rounding import rounded
from attnlib.widgets import two_key_explorer

set_seed(0)
device = default_device()
# Inputs are written out or drawn on the CPU and moved to `device`; printed numbers are rounded on the CPU.

# %% [markdown]
# ## 1. Scores, weights, output
#
# With $m$ key–value pairs $(k_1, v_1), \ldots, (k_m, v_m)$ and a query $q$, attention does three things:
#
# 1. an **attention score (注意力分数)** for every key, $s_i = a(q, k_i)$ — here the scaled dot product $q\cdot k_i/\sqrt{d_k}$;
# 2. **attention weights (注意力权重)** from a softmax over the scores, $\alpha_i = \exp(s_i) / \sum_{j=1}^m \exp(s_j)$;
# 3. the **output**, a **weighted sum (加权求和)** of the values, $o = \sum_{i=1}^m \alpha_i v_i$.
#
# In short: query and keys → scores → softmax → weights; weights × values → sum → output.
#
# **Notation.** The weight has three names in this notebook, all for the same thing: $\alpha_i$ here (one query, key $i$, as in lecture notes 004 §9.2), $a_{ij}$ in section 3 (query $i$, key $j$: entry $(i, j)$ of the weight matrix $A$, as in lecture notes 000), and $a_1, a_2$ in the explorer (its one query's weights on positions 1 and 2).
#
# > **Common mistake**: treating the scores as if they were already weights.
# > Scores can be any real numbers — negative, larger than 1, not summing to anything in particular. Only after the softmax do the weights lie in $(0, 1)$ and sum to 1. That is exact arithmetic: in floating point $e^{-120}$ is below the smallest float32, so a weight can come out as exactly 0 (and its neighbour as exactly 1) with no mask involved (the fourth and fifth lines below; in float16 a gap of 20 is enough). A printed weight of exactly 0 or 1 in notebooks 05 and 10 is such an **underflow (下溢)** unless a mask is at work. A third cause is only on the page: a weight printed to a few decimals reads 0.0 or 1.0 when it is merely close to them, as after a score gap of 15 (the last line below; notebook 06's hand-built heads print such weights):

# %%
# C21: scores are any reals; weights are in (0, 1) and sum to 1 (the same warning as notebook 00)
scores = torch.tensor([-3.2, 0.0, 7.5, 2.1], device=device)
weights = masked_softmax(scores)
print("scores: ", rounded(scores, 4), "  sum =", rounded(scores.sum(), 4))
print("weights:", "[" + ", ".join(f"{x:.3g}" for x in weights.tolist()) + "]", "  sum =", rounded(weights.sum(), 4))
print(f"smallest weight {weights.min().item():.3g} (> 0), largest {weights.max().item():.4f} (< 1)")
# in floating point a weight can round to exactly 0 or 1 (underflow), with no mask involved
for row, dtype in (([0.0, 120.0], torch.float32), ([0.0, 20.0], torch.float16)):
    print(f"softmax({row}) in {dtype}:", masked_softmax(torch.tensor(row, dtype=dtype, device=device)).cpu().tolist())
# display rounding: a gap of 15 gives a weight far above float32's smallest number, printed to 3 decimals as 0.0
gap15 = masked_softmax(torch.tensor([0.0, 15.0], device=device))
print("softmax([0.0, 15.0]) in torch.float32, to 3 decimals:", rounded(gap15, 3), f"  its smaller weight: {gap15.min().item():.3g}")

# %% [markdown]
# The same section of the lecture notes (004 §9.2.1) adds a second rule: softmax treats a *larger* score as *more relevant*. So a **distance** must first be turned into a score that grows as the distance shrinks, for example $s_i = -d(q, k_i)$; a positive distance fed straight into the softmax gives the most weight to the *farthest* key. Notebook 00 teaches this with the Gaussian kernel (claim C20); here it is on two keys at distances 0.5 and 3:

# %%
# C20 (taught in notebook 00): a distance is not a score; softmax(+distance) favours the farthest key
dist = torch.tensor([0.5, 3.0], device=device)              # distances of key 1 (near) and key 2 (far)
print("softmax(+distance):", rounded(masked_softmax(dist), 4), "  most weight on the far key")
print("softmax(-distance):", rounded(masked_softmax(-dist), 4), "  most weight on the near key")

# %% [markdown]
# ## 2. The worked example: $[\log 3, 0] \to [3/4, 1/4] \to [1.5, 1]$
#
# Take two keys whose (already scaled) scores are $s = [\log 3,\ 0]$. Then $e^{s_1} = 3$ and $e^{s_2} = 1$, so
#
# $$
# \alpha = \left[\tfrac{3}{3 + 1},\ \tfrac{1}{3 + 1}\right] = \left[\tfrac34,\ \tfrac14\right].
# $$
#
# With values $v_1 = [2, 0]$ and $v_2 = [0, 4]$ the output is
#
# $$
# o = \tfrac34\,[2, 0] + \tfrac14\,[0, 4] = [1.5,\ 0] + [0,\ 1] = [1.5,\ 1].
# $$
#
# Neither value comes out unchanged. The result $[1.5, 1]$ lies between $v_1$ and $v_2$, a blend of three parts $v_1$ to one part $v_2$: here attention works as a weighted average, not as a lookup that returns one stored row.

# %%
# C09: scores [log 3, 0] -> weights [3/4, 1/4]; values [2, 0], [0, 4] -> output [1.5, 1]
s = torch.tensor([math.log(3.0), 0.0], device=device)        # (S=2,)
V = torch.tensor([[2.0, 0.0], [0.0, 4.0]], device=device)    # (S, d_v=2), one value per row
alpha = masked_softmax(s)
o = alpha @ V
print("weights:", rounded(alpha, 4))
print("output: ", rounded(o, 4))
gap_w = (alpha.cpu() - torch.tensor([0.75, 0.25])).abs().max().item()
gap_o = (o.cpu() - torch.tensor([1.5, 1.0])).abs().max().item()
# float32 rounding leaves a gap of a few 1e-8 (it differs between CPUs and GPUs); we print its bound
print(f"max |weights - [3/4, 1/4]| {'<' if gap_w < 1e-6 else '>='} 1e-6,  max |output - [1.5, 1]| {'<' if gap_o < 1e-6 else '>='} 1e-6")

# %% [markdown]
# The same numbers come out of the full attention function if we choose a query and keys that produce those scores. With $d_k = 1$ (so $\sqrt{d_k} = 1$), $q = [\log 3]$, $k_1 = [1]$, $k_2 = [0]$ give exactly $s = [\log 3, 0]$:

# %%
# C09 through dot_product_attention: the same weights and output
q = torch.tensor([[math.log(3.0)]], device=device)           # (L=1, d_k=1)
K = torch.tensor([[1.0], [0.0]], device=device)              # (S=2, d_k=1)
out, w = dot_product_attention(q, K, V)
print("weights:", rounded(w, 4), " output:", rounded(out, 4))

# %% [markdown]
# **Two separate paths.** The scores come from the query and the keys; the values never enter them. So:
#
# - changing the **query** (hence the scores) changes the weights — *how much* of each value is taken;
# - changing the **values** leaves the weights alone and changes *what* is being mixed.
#
# This separation of a **matching path (匹配路径)** ($Q$, $K$) from a **content path (内容路径)** ($V$) is why the values have a projection of their own, $W_V$, apart from the keys'. It does not explain why $Q$ and $K$ need two different projections: that comes from the match being a learned, asymmetric bilinear form, $q_i\cdot k_j \ne q_j\cdot k_i$ in general (notebook 01, claim C04).

# %%
# C09: a new query changes the weights; new values change only what is mixed
out_q0, w_q0 = dot_product_attention(torch.tensor([[0.0]], device=device), K, V)   # a new query q = [0], same keys
print("new query q = [0]:   scores", rounded(scaled_dot_score(torch.tensor([[0.0]], device=device), K)[0], 4),
      "     weights", rounded(w_q0[0], 4), " output", rounded(out_q0[0], 4))
V_new = torch.tensor([[2.0, 0.0], [0.0, -4.0]], device=device)
print("same scores, v2 = [0, -4]:            weights",
      rounded(masked_softmax(s), 4),
      " output", rounded(masked_softmax(s) @ V_new, 4))

# %% alt="Values v1 and v2 in the plane with the output on the segment between them, a quarter of the way from v1 to v2 (weights 3/4 and 1/4)."
# C09: the picture — the output sits on the segment from v1 to v2, a quarter of the way from v1 to v2
fig, ax = plt.subplots(figsize=(4.6, 4.4), layout="constrained")
_ = mixing_segment(s, alpha, o, V, ax)   # the scores, weights, output and values of the cell above
_ = ax.set_title("scores (log 3 ≈ 1.10, 0) → weights (0.75, 0.25)")

# %% [markdown]
# > **Common mistake**: reading a large attention weight as "the reason" for the output.
# > A weight tells you how strongly one head, in one layer, reads one position; it is not a **causal explanation (因果解释)** of what the network computes. Even inside the head, what a value adds to the output is its weight *times* the value, so a small weight on a large value can outweigh a large weight on a small one. And in a Transformer the head's output goes through several more steps, each taught later in the course:
# >
# > - **multi-head attention (多头注意力)** runs several heads side by side, each with its own $W_Q, W_K, W_V$; their outputs are joined and multiplied by a learned **output projection (输出投影)** $W_O$ (notebook 06);
# > - a **residual connection (残差连接)** adds each position's own input $x_i$ to the attention result, so what goes on is $x_i + o_i$ (notebook 08, where that sum is then normalised);
# > - a **feed-forward network (前馈网络)**, FFN, a small two-layer network with a non-linearity, then reworks every position on its own (notebook 08), and every later layer does all of this again.
# >
# > Section 3 shows the residual connection and the FFN undoing the "mixture" picture. First, the point about weight *times* value, on two values with weights $[0.9, 0.1]$: the value with the small weight is fifty times longer, and its share of the output is the larger one.

# %%
# a large weight is not a large contribution: what counts is weight × value
w2 = torch.tensor([0.9, 0.1], device=device)
V2 = torch.tensor([[0.1, 0.0], [0.0, 5.0]], device=device)
contrib = w2[:, None] * V2                                    # (S, d_v) each value's share of the output
print("weights:               ", rounded(w2, 4))
print("contribution of v1, v2:", rounded(contrib, 4))
print("size of each share:    ", rounded(contrib.norm(dim=-1), 4))

# %% [markdown]
# ## 3. The output is a convex combination (凸组合)
#
# Because every weight is non-negative and each row sums to 1, the output $o_i = \sum_j a_{ij} v_j$ is a **convex combination** of the value rows. Geometrically it lies in their **convex hull (凸包)**: on the segment between two values, inside the triangle of three, and so on. It can never overshoot the values in any direction.
#
# A clean test of hull membership in any dimension: $o$ is in the hull of $v_1, \ldots, v_m$ exactly when, for every direction $u$, $u\cdot o \le \max_j u\cdot v_j$. One direction that breaks the inequality proves $o$ is outside; a finite set of directions can miss the one that would. So with 256 random directions a count of outputs *found* outside is a lower bound, and "0 found outside" agrees with the guarantee without proving it (the proof is the algebra above). Below, 1000 random queries against 6 random keys and 3-D values, checked along 256 random directions:

# %%
# C07: weights >= 0, rows sum to 1, and every output lies in the convex hull of the values
gen = torch.Generator().manual_seed(0)
Lq, S, d_k, d_v = 1000, 6, 4, 3
q = torch.randn(Lq, d_k, generator=gen).to(device)           # (L, d_k)
k = torch.randn(S, d_k, generator=gen).to(device)            # (S, d_k)
v = torch.randn(S, d_v, generator=gen).to(device)            # (S, d_v)
u = torch.randn(256, d_v, generator=gen).to(device)          # (256, d_v) test directions


def outside_hull(points, corners):
    """How many rows of `points` fail u·p <= max_j u·c_j (+ 1e-5 for float32 rounding) for one of the u: a lower bound."""
    return int((~(points @ u.T <= (corners @ u.T).amax(dim=0) + 1e-5).all(dim=-1)).sum())


out, A = dot_product_attention(q, k, v)                      # (L, d_v), (L, S)
gap = (A.sum(-1) - 1).abs().max().item()
print(f"smallest weight:                {A.min().item():.2e} (>= 0)")
print(f"max |row sum - 1|:              {'<' if gap < 1e-6 else '>='} 1e-6")
print(f"outputs found outside the hull: {outside_hull(out, v)} of {Lq}")

# %% [markdown]
# The guarantee is for **one head without attention dropout**. **Dropout (随机失活)** is a regulariser used during training only: applied to the attention weights, it zeros each weight with probability $p$ and rescales the survivors by $1/(1-p)$. A row then no longer sums to 1, and the output can leave the hull. The same inputs with `dropout_p=0.5` (on the CPU, with the seeded global generator):

# %%
# C07: the convex-hull guarantee needs "no dropout": with dropout outputs can leave the hull
torch.manual_seed(0)
out_d, _ = dot_product_attention(q.cpu(), k.cpu(), v.cpu(), dropout_p=0.5)
inside_each = (out_d @ u.cpu().T <= (v.cpu() @ u.cpu().T).amax(dim=0) + 1e-5).all(dim=-1)
print(f"with dropout p = 0.5: at least {int((~inside_each).sum())} of {Lq} outputs lie outside the hull "
      "(a test direction separates each of them from the values)")

# %% [markdown]
# What about the layers after attention? Be precise about which ones break the guarantee:
#
# - **The output projection $W_O$ of one head does not.** It is linear, so $o\,W_O = \big(\sum_j a_j v_j\big) W_O = \sum_j a_j\,(v_j W_O)$: still a convex combination, now of the *projected* values $v_j W_O$. The output lies in their hull (not in the hull of the $v_j$ themselves).
# - **A residual connection does.** It passes on $x_i + o_i$: the query position's own input plus the mixture. That shifts each output by a different vector, and most of the shifted outputs leave the hull.
# - **So does the FFN.** It is not linear (a ReLU between two linear maps), so $\mathrm{FFN}(o)$ need not lie in the hull of the $\mathrm{FFN}(v_j)$. Below, `attnlib.core.transformer.FeedForward` with random weights and 4, 16 or 64 hidden units: how many outputs leave depends on the weights, and one is enough to break the guarantee. (Each width's layer is drawn from the same seed 0, so the three layers are not independent draws: the 4-unit layer's first-layer weights are the first rows of the wider ones'. Either way, one draw per width says nothing about width as such.)
# - So does the sum of several heads: each head's $o^{(h)} W_O^{(h)}$ lies in its own hull, but their *sum* need not lie in any (counted in the second cell below). And so do the layers above: the "convex combination" of lecture notes 000 §4 is a statement about one attention head, not about the network's output. (The lecture notes name the output projection together with the residual and the FFN as what lifts the constraint (经过后续输出投影、残差和 FFN 后…); precisely, one head's $W_O$ keeps it, and it is the *sum over heads* after $W_O$ that leaves the hull.)
#
# The same 1000 outputs, tested the same way:

# %%
# C07: one head + W_O is still a convex combination of the v_j W_O; a residual x + o leaves the hull
W_O = torch.randn(d_v, d_v, generator=gen).to(device)        # (d_v, d_model=d_v) output projection
x_res = torch.randn(Lq, d_v, generator=gen).to(device)       # (L, d_model) each query position's own input
print(f"o W_O found outside the hull of the v_j W_O: {outside_hull(out @ W_O, v @ W_O)} of {Lq}")
print(f"x + o outside the hull of the values v_j:    at least {outside_hull(x_res + out, v)} of {Lq}")
for d_ff in (4, 16, 64):
    torch.manual_seed(0)                                     # FeedForward draws its weights from the global generator
    ffn = FeedForward(d_v, d_ff).to(device)                  # Linear(d_v, d_ff) -> ReLU -> Linear(d_ff, d_v)
    with torch.no_grad():
        print(f"FFN(o) outside the hull of the FFN(v_j), {d_ff:2d} hidden units: at least "
              f"{outside_hull(ffn(out), ffn(v))} of {Lq}")

# %% [markdown]
# In a real layer $W_O$ acts on the concatenation of the heads, which is the same as giving each head its own block of rows of $W_O$ and adding the results: $[o^{(1)} \mid o^{(2)}]\,W_O = o^{(1)} W_O^{(1)} + o^{(2)} W_O^{(2)}$ (notebook 06). So take a second head on the same 1000 queries (its own queries, keys and values $q', k', v'$, drawn at random) and two blocks $W_O^{(1)}, W_O^{(2)}$. What still holds is weaker: $o^{(1)} W_O^{(1)} + o^{(2)} W_O^{(2)} = \sum_{j,k} a^{(1)}_j a^{(2)}_k \big(v_j W_O^{(1)} + v'_k W_O^{(2)}\big)$, and the products $a^{(1)}_j a^{(2)}_k$ are non-negative and sum to 1. So the sum lies in the hull of the $m^2 = 36$ sums $v_j W_O^{(1)} + v'_k W_O^{(2)}$ (the **Minkowski sum (闵可夫斯基和)** of the two hulls), not in either head's own hull:

# %%
# C07: two heads: o1 W_O1 + o2 W_O2 leaves each head's hull, but stays in the hull of the m² sums v_j W_O1 + v'_k W_O2
q2 = torch.randn(Lq, d_k, generator=gen).to(device)          # (L, d_k) head 2's queries for the same 1000 positions
k2 = torch.randn(S, d_k, generator=gen).to(device)           # (S, d_k)
v2 = torch.randn(S, d_v, generator=gen).to(device)           # (S, d_v)
W_O1 = torch.randn(d_v, d_v, generator=gen).to(device)       # the blocks of W_O that act on head 1 and on head 2
W_O2 = torch.randn(d_v, d_v, generator=gen).to(device)
out2, _ = dot_product_attention(q2, k2, v2)                  # (L, d_v) head 2's output
both = out @ W_O1 + out2 @ W_O2                               # (L, d_v) = [o1 | o2] W_O
sums = (v @ W_O1)[:, None, :] + (v2 @ W_O2)[None, :, :]       # (S, S, d_v): every v_j W_O1 + v'_k W_O2
print(f"o1 W_O1 + o2 W_O2 outside the hull of the v_j W_O1:           at least {outside_hull(both, v @ W_O1)} of {Lq}")
print(f"o1 W_O1 + o2 W_O2 outside the hull of the v'_k W_O2:          at least {outside_hull(both, v2 @ W_O2)} of {Lq}")
print(f"o1 W_O1 + o2 W_O2 found outside the hull of the {S * S} sums:       {outside_hull(both, sums.reshape(-1, d_v))} of {Lq}")

# %% [markdown]
# ## 4. The 2-D example from the slides
#
# The lecture slides illustrate scaled dot-product attention with two 2-D queries and two keys:
#
# $$
# q_1 = (1, 2),\quad q_2 = (1, 1), \qquad k_1 = (1, 0),\quad k_2 = (0, 1), \qquad d_k = 2 .
# $$
#
# For $q_1$: $q_1\cdot k_1 = 1$ and $q_1\cdot k_2 = 2$; divided by $\sqrt 2$ that is $(0.71, 1.41)$. The difference is $1/\sqrt2 \approx 0.71$, so the weights are $\big(1/(1 + e^{0.71}),\ e^{0.71}/(1 + e^{0.71})\big) \approx (0.33, 0.67)$.
#
# For $q_2$: both dot products are 1, so the scores are $(0.71, 0.71)$ and the weights are exactly $(0.50, 0.50)$.
#
# With values $v_1, v_2$ the two outputs are then $b_1 = 0.33\,v_1 + 0.67\,v_2$ and $b_2 = 0.50\,v_1 + 0.50\,v_2$. With the worked example's values $v_1 = [2, 0]$, $v_2 = [0, 4]$ that is $b_1 \approx [0.660, 2.679]$ and $b_2 = [1, 2]$: $q_1$'s output leans towards $v_2$, $q_2$'s is the midpoint.

# %%
# C26: q1 = (1, 2), q2 = (1, 1), k1 = (1, 0), k2 = (0, 1), d_k = 2
Q = torch.tensor([[1.0, 2.0], [1.0, 1.0]], device=device)    # (L=2, d_k=2)
K = torch.tensor([[1.0, 0.0], [0.0, 1.0]], device=device)    # (S=2, d_k=2)
scores = scaled_dot_score(Q, K)                              # (L, S) = Q Kᵀ / √2
B, A = dot_product_attention(Q, K, V)                        # V: the worked example's v1 = [2, 0], v2 = [0, 4]
for i in range(2):
    print(f"q{i + 1}: scores {rounded(scores[i], 2)} -> weights {rounded(A[i], 2)}   (4 decimals: {rounded(A[i], 4)})"
          f"   b{i + 1} = {rounded(B[i], 3)}")

# %% alt="The softmax weights of two queries, q1 = (1, 2) and q2 = (1, 1), over keys k1 = (1, 0) and k2 = (0, 1), as grouped bars."
# C26: the picture — the weights of the two queries
fig, ax = plt.subplots(figsize=(4.6, 3.4), layout="constrained")
_ = two_query_weights(A, ax, query_labels=("q1 = (1, 2)", "q2 = (1, 1)"), key_labels=("k1 = (1, 0)", "k2 = (0, 1)"))
_ = ax.set_xlabel("query")
_ = ax.set_title("softmax(q·k / √2)")

# %% [markdown]
# $q_1$ points more along $k_2$ than along $k_1$, so it reads mostly from position 2; $q_2$ is equally aligned with both and splits its weight evenly.
#
# ## 5. Try it: the two-key explorer
#
# The explorer joins the two halves of this notebook. Its keys are fixed at the 2-D example's $k_1 = (1, 0)$ and $k_2 = (0, 1)$, and you drive the **query** $q = (x, y)$ with two sliders (each coordinate from $-3$ to $3$ in steps of $0.1$); four more sliders move the values $v_1$ and $v_2$ (each coordinate an integer from $-8$ to $8$). Three panels:
#
# - **left, matching:** the query against the two keys. With these keys the scores are simply $s_1 = x/\sqrt2$ and $s_2 = y/\sqrt2$ (or $x$ and $y$ with the scale switched off). On the dashed diagonal $x = y$ the two scores are equal and so are the weights.
# - **middle, the weight of position 1:** with two keys the softmax is a logistic curve, $a_1 = e^{s_1}/(e^{s_1} + e^{s_2}) = \sigma(s_1 - s_2)$ and $a_2 = 1 - a_1$, where $\sigma(t) = 1/(1 + e^{-t})$ is the logistic (sigmoid) function. Only the *difference* of the scores matters; the dot shows where the query puts you on that curve.
# - **right, content:** the values, the segment between them (dashed), and the output $o = a_1 v_1 + a_2 v_2$ (black star), written out with its two weights in the panel's corner. Where the star sits on the segment *is* the pair of weights: it divides the segment in the ratio $a_2 : a_1$, so it lies closer to the value with the larger weight (at the start, two thirds of the way from $v_1$ to $v_2$). The panel is sized for the sliders' whole range, so every value they allow stays in view.
#
# It starts at the slides' $q_1 = (1, 2)$, scaled, with the worked example's values $v_1 = [2, 0]$, $v_2 = [0, 4]$. Moving the query moves the dot along the curve and the star along the segment; moving a value moves the star and the segment, but never the dot.

# %% alt="The two-key explorer: the query and the keys k1, k2 in the plane, the weight a1 = \u03c3(s1 \u2212 s2) as a point on a sigmoid curve, and the output o = a1 v1 + a2 v2 on the segment between the two values."
# NBVAL_IGNORE_OUTPUT
explorer = two_key_explorer()
explorer

# %%
# C09, C26: what the explorer shows at four settings, from explorer.state(...), which moves nothing on screen
settings = [("start: q = (1, 2)", {}), ("v2 = (0, -4)", dict(v2y=-4.0)), ("q = (2, 2), on x = y", dict(x=2.0, y=2.0)),
            ("no scale, q = (1.1, 0)", dict(x=1.1, y=0.0, scaled=False))]
for label, setting in settings:
    st = explorer.state(**setting)
    print(f"{label:23s} scores {rounded(torch.tensor(st['scores (s1, s2)']), 3)}  a1 = {st['a1 = σ(s1 - s2)']:.3f}  "
          f"output {rounded(torch.tensor(st['output o = a1 v1 + a2 v2']), 3)}")

# %% [markdown]
# The first line is the slides' example: weights $(0.330, 0.670)$. Moving $v_2$ flips the output's second coordinate and leaves $a_1$ alone. On the diagonal the weights are equal and the output is the midpoint $(1, 2)$ of the segment. Without the scale the scores *are* the query's coordinates, so $q = (1.1, 0)$ is within $0.002$ of the worked example's scores $[\log 3, 0]$: weights $\approx (0.750, 0.250)$, output $\approx [1.5, 1]$.

# %% [markdown]
# ## Exercises
#
# 1. **(explorer)** Where must the query be for the output to sit exactly at the midpoint of the segment? Where, for it to sit at $v_1 + \tfrac{9}{10}(v_2 - v_1)$? Can you place it exactly on $v_1$?
#
# <details><summary>Answer</summary>
#
# The midpoint needs equal weights, i.e. $s_1 = s_2$: any query on the dashed diagonal $x = y$. Weight $0.9$ on $v_2$ needs $e^{s_2 - s_1} = 9$, i.e. $s_2 - s_1 = \log 9 \approx 2.20$; with the scale that is $y - x = \sqrt2 \log 9 \approx 3.11$ (e.g. $q = (-1.5, 1.6)$ gives $a_2 = 0.900$ to three decimals), without it $y - x \approx 2.2$. The output reaches $v_1$ only in the limit $s_1 - s_2 \to \infty$: softmax weights are strictly positive (in exact arithmetic; in float32 $a_2$ underflows to exactly 0 only for gaps far outside the sliders' range, such as section 1's gap of 120). Within the sliders' range the closest is the unscaled $q = (3, -3)$: $s_1 - s_2 = 6$, $a_1 = \sigma(6) \approx 0.998$.
# </details>
#
# 2. In the worked example, keep the scores and change $v_2$ to $[0, 8]$. Predict the output, then check with the explorer: switch the scale off, put the query at $(1.1, 0)$ (scores within 0.002 of $[\log 3, 0]$) and move $v_2$'s $y$ slider to 8.
#
# <details><summary>Answer</summary>
#
# $o = \tfrac34[2, 0] + \tfrac14[0, 8] = [1.5, 2]$. The explorer shows weights $(0.750, 0.250)$ and output $(1.501, 1.998)$: the small gap comes from $1.1$ being near, not equal to, $\log 3 = 1.0986$. The weights do not move when $v_2$ does; only the content does.
# </details>
#
# 3. In the 2-D example, what scale (instead of $1/\sqrt 2$) would make $q_1$'s weights exactly $(0.25, 0.75)$? What happens to $q_2$'s weights under any scale?
#
# <details><summary>Answer</summary>
#
# The two raw scores differ by $2 - 1 = 1$, so we need $\text{scale}\cdot 1 = \log 3$, i.e. scale $= \log 3 \approx 1.0986$ (then $e^{\log 3} = 3$ gives $3/4$ on $k_2$). $q_2$'s two scores are equal, so its weights stay $(0.5, 0.5)$ for every scale.
# </details>
#
# 4. Why does the hull test in section 3 use $u\cdot o \le \max_j u\cdot v_j$ for many random $u$, and why is it enough to prove membership when it holds for *all* $u$?
#
# <details><summary>Answer</summary>
#
# If $o = \sum_j a_j v_j$ with $a_j \ge 0$, $\sum_j a_j = 1$, then $u\cdot o = \sum_j a_j\,(u\cdot v_j) \le \max_j u\cdot v_j$ for every $u$. Conversely, if $o$ were outside the (closed, convex) hull, a separating hyperplane would give a direction $u$ with $u\cdot o > \max_j u\cdot v_j$. Random directions give a practical, not exhaustive, version of that test; here the exact reason is the non-negative weights summing to 1.
# </details>
