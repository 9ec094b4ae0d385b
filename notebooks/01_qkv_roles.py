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
# # 01 · The roles of Query, Key and Value
#
# **What you will learn**
#
# - why attention projects its inputs three different ways, and which widths have to agree;
# - how the dot product $q\cdot k$ turns into a *learned* matching rule $x_i W_Q W_K^\top x_j^\top$, and why that rule need not be symmetric;
# - why a dot-product score is not a cosine similarity: a long key can win;
# - how self-attention and cross-attention differ, and what shapes come out of each;
# - that the matching path ($Q$, $K$) and the content path ($V$) are separate;
# - that `attnlib.dot_product_attention` gives the same numbers as PyTorch's own `scaled_dot_product_attention`.
#
# **Lecture notes taught:** lecture notes 000 (*Chapter 2: the mathematics of attention*) §1–§2 (why Query, Key and Value are distinguished; how the dot product forms a learnable match), and lecture notes 004 (*9 Attention and the Transformer*) §9.8 (self-attention), §9.9 (what Q, K and V mean) and §9.16 (passing information from encoder to decoder).
#
# **Read first:** `00_attention_pooling.ipynb` (scores → softmax → weighted sum of values).
#
# **Time:** about 60 minutes.

# %%
# %matplotlib inline
import torch
import torch.nn.functional as F

from attnlib import (
    causal_mask,
    cosine_score,
    default_device,
    dot_product_attention,
    dot_score,
    masked_softmax,
    set_seed,
)
from attnlib.core.scoring import score_asymmetry
from attnlib.course.examples import DEFAULT_KEYS, DEFAULT_VALUES
from attnlib.plotting import score_asymmetry_panels
from attnlib.util.rounding import rounded
from attnlib.widgets import query_explorer

set_seed(0)
device = default_device()
# Random numbers are drawn on the CPU and then moved to `device`, so every device sees the same inputs.

# %% [markdown]
# ## 1. Why three projections?
#
# Attention is a *soft lookup*: a position has something it wants to find, it compares that need with every candidate, and it reads back a weighted mixture of what the candidates hold. Take the pronoun "it" looking for the noun it stands for: to decide **which** noun fits, agreement in number or animacy is what counts; what "it" needs **back** from that noun is its meaning. The two jobs call for different features. So one learned **projection (投影)**, a matrix multiplication that maps each input vector to a new vector, prepares the question, another prepares what is compared against it, and a third prepares what is delivered:
#
# $$
# Q = X_q W_Q, \qquad K = X_s W_K, \qquad V = X_s W_V .
# $$
#
# Here $X_q \in \mathbb{R}^{S_q\times d}$ is the sequence that asks (one row per query position) and $X_s \in \mathbb{R}^{S_k\times d}$ is the source sequence being read. Rows are vectors, and the batch axis is left out.
#
# - **Query (查询)** $q_i$: what position $i$ is looking for.
# - **Key (键)** $k_j$: how candidate $j$ presents itself for matching.
# - **Value (值)** $v_j$: the content candidate $j$ hands over when it is read.
#
# The three names say only *which slot of the formula a tensor fills*. Training is never told what a query or a key should encode (no grammatical labels, no index fields); whatever they come to mean is learned because of the slot they sit in.
#
# For a single head, $W_Q, W_K \in \mathbb{R}^{d\times d_k}$ and $W_V \in \mathbb{R}^{d\times d_v}$. The score $q_i\cdot k_j$ is a dot product, so queries and keys must share the inner width $d_k$. Values are only multiplied by weights, so their width $d_v$ is free.

# %%
# C01: Q = X_q W_Q, K = X_s W_K, V = X_s W_V; Q and K share d_k, V may have another width d_v
d, d_k, d_v = 4, 2, 3
S_q, S_k = 3, 5
X_q = torch.randn(S_q, d).to(device)   # (S_q, d)  the sequence that asks
X_s = torch.randn(S_k, d).to(device)   # (S_k, d)  the sequence that is read
W_Q = torch.randn(d, d_k).to(device)
W_K = torch.randn(d, d_k).to(device)
W_V = torch.randn(d, d_v).to(device)

Q, K, V = X_q @ W_Q, X_s @ W_K, X_s @ W_V
out, weights = dot_product_attention(Q, K, V)
for name, t in [("Q", Q), ("K", K), ("V", V), ("weights", weights), ("output", out)]:
    print(f"{name:8s} {tuple(t.shape)}")

# %% [markdown]
# If the key projection has a different width, the dot products $q_i\cdot k_j$ are not defined. `attnlib` refuses the call with a message that names both shapes, instead of failing somewhere deep inside a matrix multiply:

# %%
# C01: a d_k mismatch is a clear error naming both shapes
W_K_wrong = torch.randn(d, 3).to(device)    # d_k = 3 for the keys, but the queries have d_k = 2
try:
    dot_product_attention(Q, X_s @ W_K_wrong, V)
except ValueError as err:
    print(f"ValueError: {err}")

# %% [markdown]
# ## 2. Self-attention and cross-attention
#
# In **self-attention (自注意力)** the queries, keys and values all come from the same sequence: $X_q = X_s = X$. That does *not* make $Q$, $K$ and $V$ equal, because the three matrices $W_Q$, $W_K$, $W_V$ are different. Each position therefore gets a separate "question" vector and "index" vector.

# %%
# C02: self-attention: one X, three different matrices, so Q, K and V differ
X = torch.randn(4, d).to(device)                # (S, d), 4 tokens
Q_self, K_self, V_self = X @ W_Q, X @ W_K, X @ W_V
print(f"max |Q - K| = {(Q_self - K_self).abs().max().item():.2f}  (0 would mean the same vectors)")
print("Q rows:", rounded(Q_self, 3))
print("K rows:", rounded(K_self, 3))
out_self, w_self = dot_product_attention(Q_self, K_self, V_self)
print("self-attention weights:", tuple(w_self.shape), " output:", tuple(out_self.shape))

# %% [markdown]
# In **cross-attention (交叉注意力)** the queries come from one sequence and the keys and values from another, so $S_q \neq S_k$ is perfectly fine. The weight matrix has one row per query and one column per key: $S_q \times S_k$.
#
# This is how a Transformer **decoder (解码器)** reads the output of its **encoder (编码器)** (lecture notes 004 §9.16). With the encoder output $Y = (y_1,\dots,y_n)$ and the decoder's current representation $H_{\text{dec}}$,
#
# $$
# Q = H_{\text{dec}} W_Q, \qquad K = Y W_K, \qquad V = Y W_V, \qquad
# \operatorname{CrossAttention} = \operatorname{softmax}\!\left(\frac{QK^\top}{\sqrt{d_k}}\right) V ,
# $$
#
# so its attention map is [target length × source length]. Notebook 08 builds the full decoder.

# %%
# C02: cross-attention: queries from a 3-token target, keys and values from a 6-token source
H_dec = torch.randn(3, d).to(device)     # (S_q, d) decoder side
Y = torch.randn(6, d).to(device)         # (S_k, d) encoder output
out_cross, w_cross = dot_product_attention(H_dec @ W_Q, Y @ W_K, Y @ W_V)
print("S_q =", H_dec.shape[0], " S_k =", Y.shape[0])
print("cross-attention weights:", tuple(w_cross.shape), " output:", tuple(out_cross.shape))
print("each row sums to 1:", rounded(w_cross.sum(-1), 4))

# %% [markdown]
# ## 3. The dot product as a learned match
#
# For query row $q_i$ and key row $k_j$ the raw score is
#
# $$
# e_{ij} = q_i k_j^\top = \sum_{r=1}^{d_k} q_{ir}\,k_{jr}.
# $$
#
# It is large when the components of the two vectors mostly agree in sign **and are large**. It rewards length: a key that points the same way as the query but is twice as long scores twice what the query scores against itself (the cell below prints both).
#
# > **Common mistake:** reading $q\cdot k$ as a cosine similarity (余弦相似度). The dot product is never divided by the vectors' lengths, so the length of a key matters as much as its direction: stretch a key by a factor $c$ and its score is multiplied by $c$, while the cosine does not move.

# %%
# C03: scaling a key's norm scales its dot-product score; the cosine stays the same
q = torch.tensor([[1.0, 2.0]]).to(device)   # (1, 2)
k = torch.tensor([[1.0, 0.5]]).to(device)   # (1, 2)
print("   c   q.(c k)   cos(q, c k)")
for c in [0.5, 1.0, 2.0, 4.0]:
    s_dot = dot_score(q, c * k).item()
    s_cos = cosine_score(q, c * k).item()
    print(f"{c:4.1f}   {s_dot:7.4f}   {s_cos:9.4f}")
# a key equal to q does not score highest: a longer key in the same direction scores more
print(f"q.q = {dot_score(q, q).item():g},  q.(2q) = {dot_score(q, 2 * q).item():g}")

# %% [markdown]
# Because of this, a long key can win the softmax even when a shorter key points much more nearly in the query's direction:

# %%
# C03: a long but less aligned key beats a short, well aligned one under the dot product
q = torch.tensor([[1.0, 0.0]]).to(device)
keys = torch.tensor([[1.0, 0.1],     # k1: almost parallel to q, short
                     [3.0, 3.0]]).to(device)  # k2: 45 degrees off, long
print("cosine  :", rounded(cosine_score(q, keys), 4))
print("dot     :", rounded(dot_score(q, keys), 4))
print("softmax of dot:", rounded(masked_softmax(dot_score(q, keys)), 4))

# %% [markdown]
# Now substitute the projections $q_i = x_i W_Q$ and $k_j = x_j W_K$:
#
# $$
# e_{ij} = x_i\, W_Q W_K^\top\, x_j^\top = x_i\, M\, x_j^\top, \qquad M = W_Q W_K^\top \in \mathbb{R}^{d\times d}.
# $$
#
# This is a **bilinear form (双线性形式)** with matrix $M$ (of rank at most $d_k$). The model does not compare raw embeddings with a fixed similarity; it *learns* $M$, the rule that says which features of position $i$ should look for which features of position $j$.
#
# > **Common mistake:** assuming "$i$ reads $j$" scores the same as "$j$ reads $i$". Nothing forces $M$ to be symmetric, so in general the **scores** differ, $e_{ij} \neq e_{ji}$. The **weights** are asymmetric for a second reason as well: each row of scores goes through its own softmax, with its own normaliser $Z_i = \sum_r \exp(e_{ir})$, so $a_{ij} \neq a_{ji}$ even when $e_{ij} = e_{ji}$ (Exercise 3). Either way, a word can attend strongly to another that pays it little attention back.

# %%
# C04: e_ij = x_i W_Q W_K^T x_j^T is not symmetric in general
d_k4 = 3
W_Q4 = torch.randn(d, d_k4).to(device)
W_K4 = torch.randn(d, d_k4).to(device)
X5 = torch.randn(5, d).to(device)                 # 5 tokens
M = W_Q4 @ W_K4.T                                 # (d, d)
E = dot_score(X5 @ W_Q4, X5 @ W_K4)               # (5, 5), E[i, j] = e_ij
print("max |M - M^T| =", round((M - M.T).abs().max().item(), 2))
print("e_12 =", round(E[0, 1].item(), 2), "  e_21 =", round(E[1, 0].item(), 2))
gap = (E - E.T).abs()                             # |e_ij - e_ji|
i, j = divmod(int(gap.argmax()), gap.shape[1])
print(f"largest gap: e_{i + 1}{j + 1} = {E[i, j].item():.2f}   e_{j + 1}{i + 1} = {E[j, i].item():.2f}")
print(f"max |E - E^T| = {gap.max().item():.2f}")

# %% [markdown]
# Here are all 25 scores, their transpose and the difference. The right-hand panel would be blank if the matching rule were symmetric.

# %% alt="The 5\u00d75 scores e_ij of five tokens (row i reads column j), the same scores transposed, e_ji, and their difference e_ij \u2212 e_ji, which is zero only on the diagonal: the scores are not symmetric."
# C04: the picture
_ = score_asymmetry_panels(score_asymmetry(E))

# %% [markdown]
# Symmetry only appears in special cases, for example when the key and query projections are tied, $W_K = W_Q$, so that $M = W_Q W_Q^\top$. That $M$ is more than symmetric: it is **positive semi-definite (半正定)**, $x M x^\top = \lVert x W_Q\rVert^2 \ge 0$. So every token's score with itself is $e_{ii} = \lVert q_i\rVert^2 \ge 0$, never negative, while its scores with other tokens can have either sign. That suggests tied projections push tokens towards attending to themselves; it is not a guarantee, since $e_{ij} = q_i\cdot q_j$ can exceed $\lVert q_i\rVert^2$ when $q_j$ is longer. The cell below checks one draw; the one after it measures how strong the effect is. Even with tied projections the **weights** stay asymmetric, as the last line shows.

# %%
# C04: tying W_K = W_Q makes M, and so E, symmetric (up to rounding) and positive semi-definite
E_tied = dot_score(X5 @ W_Q4, X5 @ W_Q4)
tied_gap = (E_tied - E_tied.T).abs().max().item()
print(f"tied: max |E - E^T| {'<' if tied_gap < 1e-4 else '>='} 1e-4 (rounding only)")
M_tied = (W_Q4 @ W_Q4.T).double()                 # (d, d), rank <= d_k = 3
print("eigenvalues of M = W_Q W_Q^T:", rounded(torch.linalg.eigvalsh(M_tied), 2), " (>= 0; one is 0: rank 3 < d = 4)")
print("self-scores e_ii, tied:  ", rounded(torch.diagonal(E_tied), 2))
print("self-scores e_ii, untied:", rounded(torch.diagonal(E), 2))
for name, S_ in [("tied", E_tied), ("untied", E)]:
    print(f"{name:6s}: tokens whose largest score is with themselves, in this one draw: "
          f"{int((S_.argmax(-1) == torch.arange(5).to(device)).sum())} of 5")
# symmetric scores, but not symmetric weights: each row of the softmax has its own normaliser Z_i
A_tied = masked_softmax(E_tied)
print(f"weights softmax(E_tied), row by row: max |A - A^T| = {(A_tied - A_tied.T).abs().max().item():.2f}")

# %% [markdown]
# One draw of 5 tokens says little. Repeat the same shapes (5 tokens, $d = 4$, $d_k = 3$, Gaussian inputs and projections) over 20 000 independent draws and count, over all 100 000 tokens, how often a token's largest score is its own, and how much weight it gives itself after $\operatorname{softmax}(E/\sqrt{d_k})$. If tokens had no preference, the first would be near 1 in 5 (20 %) and the second near 0.2. Each number is printed with its standard error (the spread of the per-draw means divided by $\sqrt{20\,000}$; the 5 tokens of one draw share their matrices, so they are not counted as independent):

# %%
# C04: how strongly tied projections favour a token's own position, over many random draws
g = torch.Generator().manual_seed(0)                     # private: the global generator is not moved
n_draws, n_tok = 20_000, 5
X_sim = torch.randn(n_draws, n_tok, d, generator=g).to(device)        # (draws, 5, d)
WQ_sim = torch.randn(n_draws, d, d_k4, generator=g).to(device)        # (draws, d, d_k)
WK_sim = torch.randn(n_draws, d, d_k4, generator=g).to(device)
own = torch.arange(n_tok).to(device)
print("          largest score is its own   mean self-weight softmax(E/√3)")
for name, W_k in [("tied", WQ_sim), ("untied", WK_sim)]:
    E_sim = dot_score(X_sim @ WQ_sim, X_sim @ W_k)                    # (draws, 5, 5)
    hit = (E_sim.argmax(-1) == own).double().mean(-1)                # (draws,) share of own-argmax per draw
    self_w = torch.diagonal(masked_softmax(E_sim / d_k4 ** 0.5), dim1=-2, dim2=-1).double().mean(-1)  # (draws,)
    se = lambda t: t.std().item() / n_draws ** 0.5                    # standard error of the mean over draws
    print(f"{name:6s}    {100 * hit.mean().item():14.1f} % ± {100 * se(hit):.1f}"
          f"   {self_w.mean().item():23.3f} ± {se(self_w):.3f}")
self_var = torch.diagonal(E_sim, dim1=-2, dim2=-1).double().var().item()   # E_sim is the untied one here
cross_var = E_sim[:, 0, 1:].double().var().item()
print(f"untied: variance of a self-score e_ii {self_var:.0f}, of a score with another token e_1j {cross_var:.0f}")
# is that variance the reason? Independent normal scores with these two variances, 5 to a row
g_ind = torch.Generator().manual_seed(1)
E_ind = torch.randn(n_draws * n_tok, n_tok, generator=g_ind, dtype=torch.float64) * cross_var ** 0.5   # (rows, 5)
E_ind[:, 0] = torch.randn(n_draws * n_tok, generator=g_ind, dtype=torch.float64) * self_var ** 0.5    # column 0: "self"
hit_ind = (E_ind.argmax(-1) == 0).double()
w_ind = masked_softmax(E_ind / d_k4 ** 0.5)[:, 0]
print(f"independent scores, variances {self_var:.0f} and {cross_var:.0f}: largest is 'self' {100 * hit_ind.mean().item():.1f} %, "
      f"mean 'self' weight {w_ind.mean().item():.3f}")

# %% [markdown]
# With tied projections a token's largest score is its own 60.3 % of the time, three times the 20 % of no preference; untied, it is 20.2 %, within two standard errors (0.1 each) of no preference. After the softmax a token gives itself 0.561 of its weight on average when tied. Untied it gives itself 0.209, small beside the tied value but almost nine standard errors above 0.2: even with random, untied matrices a token's score with itself, $x_i M x_i^\top$, is a quadratic form, a different random variable from its scores with the others, $x_i M x_j^\top$, so "no preference" for the largest score need not mean exactly 0.2 of the weight. The variance alone does not explain the excess, though. Over all draws a self-score has variance 73 against 48, but independent normal scores with those two variances (the last line) would make the self-score the largest 23.2 % of the time and give it 0.230 of the weight, more than the 20.2 % and 0.209 measured. What decides a softmax row is how the self-score compares with the *same row's* other scores, which share $x_i$ and $M$ with it, not its spread over all draws. So the effect of tying is strong; the one draw above, 2 of 5 against 0 of 5, undersold it.
#
# ## 4. Self-attention in matrix form (lecture notes 004 §9.8)
#
# Stack every query, key and value of one sequence $X\in\mathbb{R}^{n\times d_{\text{model}}}$ into matrices $Q = XW_Q$, $K = XW_K$, $V = XW_V$. Then all positions are handled by one formula,
#
# $$
# Z = \operatorname{softmax}\!\left(\frac{QK^\top}{\sqrt{d_k}}\right)V ,
# $$
#
# where softmax acts on each row. Three things follow from this form:
#
# - **Long-range dependencies (长程依赖):** any two positions are compared directly, however far apart they are.
# - **Dynamic weights (动态权重):** the mixing weights are computed from the content, unlike a convolution's fixed kernel.
# - **Parallel computation (并行计算):** there is no step-by-step hidden state as in an RNN; all rows are computed at once.
#
# The first and the last can be checked in a few lines. Take 200 tokens with no positions added, score every pair with one matrix product, then move the token at position 2 to position 200 (tokens 3 to 200 each move one place forward) and score again:

# %%
# C29, previewed (long range, parallel): without positions, distance plays no part, and one product scores every pair
g_far = torch.Generator().manual_seed(3)                  # private: the global generator is not moved
n_far, d_far, dk_far = 200, 4, 3
X_far = torch.randn(n_far, d_far, generator=g_far).to(device)               # (200, d) token vectors, no positions
WQ_far = torch.randn(d_far, dk_far, generator=g_far).to(device)
WK_far = torch.randn(d_far, dk_far, generator=g_far).to(device)
E_far = dot_score(X_far @ WQ_far, X_far @ WK_far)                           # (200, 200): one matrix product
order = list(range(n_far))
order.insert(n_far - 1, order.pop(1))                                       # the token at position 2 moves to 200
E_moved = dot_score(X_far[order] @ WQ_far, X_far[order] @ WK_far)          # (200, 200)
print(f"scores computed by one product: {tuple(E_far.shape)} = {E_far.numel()} pairs")
print(f"score of token 1 with that token: at distance 1 {E_far[0, 1].item():.3f}, at distance 199 {E_moved[0, n_far - 1].item():.3f}")
perm = (E_moved - E_far[order][:, order]).abs().max().item()
print(f"every other score just moves with its tokens: max |E_moved - E permuted| {'<' if perm < 1e-4 else '>='} 1e-4")

# %% [markdown]
# The score does not depend on how far apart two tokens are, only on what they are: the token at distance 199 is compared with token 1 as directly as at distance 1, with no chain of steps in between. And all $200 \times 200$ scores come out of one product, with no score waiting for another. The other side of the same fact: without positions, self-attention cannot tell where a token is at all. Notebook 07 adds positional encodings for that.
#
#
# The lecture's two-dimensional picture (§9.8.3) uses two queries, $q_1=(1,2)$ and $q_2=(1,1)$, two keys, $k_1=(1,0)$ and $k_2=(0,1)$, and $d_k=2$; notebook 04 works through its numbers. The explorer below starts from $q_1$ and those two keys, plus a third key $k_3 = (-1, -1)$ that points away from the query and so takes only about 2% of the weight. Drag the query and watch how the scores, the weights and the output respond. The values are $v_1 = (2, 0)$, $v_2 = (0, 2.5)$ and $v_3 = (-2, -1)$ (printed below the explorer); grey lines join the output to each value, thicker for a larger weight. The output is always a weighted average of the values, so it stays inside their triangle.
#
# Keys and values are drawn in the same plane only to save space. Keys live in the $d_k$-dimensional space where they are compared with the query, values in the $d_v$-dimensional space that the output shares; here both happen to be 2. Where a key sits in the picture says nothing about where the output goes: only the weights do, and they move the output between the values (§5 below changes the values alone).
#
# The third slider stretches $k_1$ (it multiplies its length, keeping its direction). The readout shows each key's cosine with the query beside its score: stretching $k_1$ leaves its cosine where it was and multiplies its score. This is §3's common mistake made visible: a long key can take the largest weight although another key points much more nearly the query's way.

# %% alt="The query explorer: keys and values in the plane, the query as an arrow, its softmax weights as bars and the output as a weighted mean of the values."
# NBVAL_IGNORE_OUTPUT
explorer = query_explorer()
explorer

# %% [markdown]
# The explorer's starting numbers, computed directly (compare them with its readout), and the lecture's second query $q_2 = (1, 1)$, which lies exactly between $k_1$ and $k_2$ and so gives them equal weight. The third key takes a little weight from both, so the numbers differ from the lecture's, which has only $k_1$ and $k_2$; the last two lines drop $k_3$ and give the lecture's (0.33, 0.67) and (0.50, 0.50):

# %%
keys_2d = torch.tensor(DEFAULT_KEYS).to(device)       # (3, 2)
values_2d = torch.tensor(DEFAULT_VALUES).to(device)   # (3, 2)
print("keys  :", DEFAULT_KEYS)
print("values:", DEFAULT_VALUES)
q_2d = torch.tensor([[1.0, 2.0], [1.0, 1.0]]).to(device)   # (2, 2): the lecture's q1 and q2
out_2d, w_2d = dot_product_attention(q_2d, keys_2d, values_2d)
for i in range(2):
    print(f"q{i + 1} = {q_2d[i].tolist()}:  weights {rounded(w_2d[i], 3)}   output {rounded(out_2d[i], 3)}")
_, w_two = dot_product_attention(q_2d, keys_2d[:2], values_2d[:2])   # the lecture's two keys only
for i in range(2):
    print(f"without k3, q{i + 1}: weights {rounded(w_two[i], 3)}")

# %% [markdown]
# And what the explorer shows when $k_1$ is stretched, with the $\sqrt{d_k}$ scaling switched off, at the query $q_1 = (1, 2)$ (computed by the explorer's own function; the explorer above does not move):

# %%
# C03: stretch k1 = (1, 0) by c; its cosine with q stays 0.447, its score becomes c
print("   c   score k1  score k2   cos k1  cos k2   weight k1  weight k2")
for c in (1.0, 2.0, 3.0):
    st = explorer.state(x=1.0, y=2.0, key_length=c, scaled=False)
    print(f"{c:4.1f}   {st['scores'][0]:7.2f}   {st['scores'][1]:7.2f}   {st['cosine(q, k)'][0]:6.3f}  {st['cosine(q, k)'][1]:6.3f}"
          f"   {st['weights'][0]:9.3f}  {st['weights'][1]:9.3f}")

# %% [markdown]
# ## 5. What Q, K and V each control (lecture notes 004 §9.9)
#
# | vector | what it does in the formula | like, in a library | for one token |
# |---|---|---|---|
# | Query | is compared with every key; it never reaches the output itself | the question you bring to the desk | what this token needs from the others |
# | Key | is compared with every query; it also never reaches the output | the label on a book's spine | how this token advertises itself |
# | Value | is averaged, with the weights, into the output | the book's contents | what this token passes on once chosen |
#
# So $W_Q$ learns *how to ask*, $W_K$ *how to be found*, and $W_V$ *what to hand over once found*. $Q$ and $K$ form the **matching path (匹配路径)**: the product $QK^\top$ only decides **how strongly** things match. $V$ forms the **content path (内容路径)**: its rows are what is actually averaged. The two paths can be changed independently.

# %%
# C10: the matching path (Q, K) and the content path (V) are separate
out0, w0 = dot_product_attention(Q, K, V)

V_new = V + torch.randn(V.shape).to(device)           # change the content only
out_v, w_v = dot_product_attention(Q, K, V_new)
print("change V:  max |weights diff| =", round((w_v - w0).abs().max().item(), 4),
      "  max |output diff| =", round((out_v - out0).abs().max().item(), 4))

Q_new = Q + torch.randn(Q.shape).to(device)           # change what is asked
out_q, w_q = dot_product_attention(Q_new, K, V)
print("change Q:  max |weights diff| =", round((w_q - w0).abs().max().item(), 4),
      "  max |output diff| =", round((out_q - out0).abs().max().item(), 4))

K_new = K + torch.randn(K.shape).to(device)           # change how keys are indexed
out_k, w_k = dot_product_attention(Q, K_new, V)
print("change K:  max |weights diff| =", round((w_k - w0).abs().max().item(), 4),
      "  max |output diff| =", round((out_k - out0).abs().max().item(), 4))

# %% [markdown]
# Changing $V$ leaves every weight exactly as it was and moves only the output. Changing $Q$ or $K$ re-weights the same values.
#
# ## 6. Shapes, and a check against PyTorch
#
# With $n$ queries, $m$ keys and values, and any batch axes in front:
#
# $$
# Q\in\mathbb{R}^{n\times d_k},\quad K\in\mathbb{R}^{m\times d_k},\quad V\in\mathbb{R}^{m\times d_v}
# \;\Longrightarrow\;
# \text{weights}\in\mathbb{R}^{n\times m},\quad \text{output}\in\mathbb{R}^{n\times d_v}.
# $$
#
# `attnlib` writes the computation out step by step so every intermediate can be inspected. PyTorch ships a fused version, `torch.nn.functional.scaled_dot_product_attention`. Both should give the same output, with or without masks (boolean: `True` = may attend; float: added to the scores; causal).
#
# With fewer queries than keys ($n = 4 < m = 6$ below) "causal" needs a convention. Both libraries align the mask at the **top left**: query $i$ sees keys $0, \dots, i$, so the last query sees only 4 of the 6 keys. Decoding with a cache of earlier keys needs the other convention, **bottom-right** alignment (query $i$ sees keys up to $i + m - n$, so the last query sees them all). The cell below prints how many keys each query sees under both conventions; only the top-left one is compared with PyTorch here.

# %%
# C27: shapes, and equality with torch.nn.functional.scaled_dot_product_attention
B, n, m, dk, dv = 2, 4, 6, 8, 5
q = torch.randn(B, n, dk).to(device)
k = torch.randn(B, m, dk).to(device)
v = torch.randn(B, m, dv).to(device)
bool_mask = (torch.rand(B, n, m) > 0.4).to(device)    # True = may attend
bool_mask[..., 0] = True                              # every query sees at least one key
float_mask = torch.randn(B, n, m).to(device)          # added to the scores

cases = {
    "no mask": {},
    "boolean mask": {"attn_mask": bool_mask},
    "float mask": {"attn_mask": float_mask},
    "causal": {"is_causal": True},
    "scale = 1": {"scale": 1.0},
}
print("causal, top-left: keys each query may see:", causal_mask(n, m).sum(-1).tolist())
print("causal, bottom-right (decoding with a cache):", torch.ones(n, m).tril(m - n).sum(-1).int().tolist())
diffs = {}
for name, kwargs in cases.items():
    ours, w = dot_product_attention(q, k, v, **kwargs)
    ref = F.scaled_dot_product_attention(q, k, v, **kwargs)
    diffs[name] = (ours - ref).abs().max().item()
    # float32 values of size ~1, summed over d_k = 8 features and <= 6 keys: rounding differences are ~1e-7, far below 1e-5
    print(f"{name:13s} out {tuple(ours.shape)}  weights {tuple(w.shape)}  max |diff| {'<' if diffs[name] < 1e-5 else '>='} 1e-5")

# %% [markdown]
# The differences themselves depend on the CPU or GPU the notebook runs on (each library sums in its own order), so they are printed in a cell whose output is not compared:

# %%
# NBVAL_IGNORE_OUTPUT
for name, d in diffs.items():
    print(f"{name:13s} max |diff| = {d:.1e}")

# %% [markdown]
# ## Exercises
#
# 1. **(explorer)** In the query explorer, switch the $\sqrt{d_k}$ scaling off and drag the query far out along the direction of $k_1$, e.g. to $(3, 0.5)$. What happens to the weights, and where does the output go? Can it ever leave the shaded triangle? Then stretch $k_1$ to 3 times its length.
#
# <details><summary>Answer</summary>
#
# The scores grow in proportion to the query's length, so the softmax sharpens: at $(3, 0.5)$ the weight of $k_1$ is 0.923 and the output $(1.84, 0.19)$ moves towards $v_1 = (2, 0)$. It never leaves the triangle: the weights are positive and sum to 1, so the output is a convex combination of the values. Without the $1/\sqrt{d_k}$ scale the sharpening starts sooner. Stretching $k_1$ multiplies its score by 3 as well, and the weight of $k_1$ rises above 0.99: a longer key sharpens the softmax just as a longer query does.
# </details>
#
# 2. **(explorer)** Put the query at the lecture's $q_2 = (1, 1)$, where $k_1$ and $k_2$ tie. How long must $k_1$ be for it to get twice the weight of $k_2$ (scale on)? Has its direction, or its cosine with the query, changed?
#
# <details><summary>Answer</summary>
#
# With the scale on, the scores are $c/\sqrt2$ and $1/\sqrt2$, so the weight ratio is $\exp((c-1)/\sqrt2)$. It equals 2 when $c = 1 + \sqrt2 \ln 2 \approx 1.98$: the slider's 2.0 is the nearest step (ratio 2.03). The cosine stays $0.707$: only the length changed.
# </details>
#
# 3. Tie the projections, $W_K = W_Q$, so that the score matrix $E$ is symmetric. Are the attention **weights** $\operatorname{softmax}(E)$ symmetric too? Try it with `masked_softmax(E_tied)`.
#
# <details><summary>Answer</summary>
#
# No, in general. Softmax normalises each row by its own sum $\sum_r \exp(e_{ir})$, and different rows have different sums, so $a_{ij} = \exp(e_{ij})/Z_i$ and $a_{ji} = \exp(e_{ij})/Z_j$ differ whenever $Z_i \ne Z_j$.
# </details>
#
# 4. A cross-attention layer gets queries of shape $(2, 7, 16)$ and keys of shape $(2, 11, 16)$. What shape must the values have if the output is to be $(2, 7, 32)$? What happens if the values have 10 rows instead of 11?
#
# <details><summary>Answer</summary>
#
# Values must be $(2, 11, 32)$: one row per key, and their width $d_v = 32$ becomes the output's width. The weights are $(2, 7, 11)$. With 10 rows, keys and values disagree on the number of positions $S$; `dot_product_attention` raises a `ValueError` that names both shapes.
# </details>
