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
# # 00 · Attention pooling: from a soft lookup to kernel regression
#
# **What you will learn**
#
# - the idea behind attention: a *query* chooses what to look at among *key–value* pairs;
# - the three steps every attention layer shares: scores → softmax weights → weighted sum of values;
# - why a distance has to be turned into a score before the softmax, and what goes wrong if it is not;
# - Nadaraya–Watson kernel regression as the simplest attention pooling, and how the kernel width trades wiggles against smoothness;
# - the common score functions (dot product, cosine, negative distance, Gaussian kernel);
# - additive attention, which scores queries and keys of *different* widths with a small learned network.
#
# **Seed sections taught:** `004_cf2f09ec33ad5dce.txt` §9.1 (the intuition: cues, Query/Key/Value), §9.2 (scores, weights and output), §9.3 (non-parametric attention pooling) and §9.4 (additive attention).
#
# **Read first:** nothing; this is the first notebook. You should know what a softmax is.
#
# **Time:** about 30 minutes.

# %%
# %matplotlib widget
import torch

from attnlib import (AdditiveAttention, SCORE_FUNCTIONS, default_device, dot_product_attention, dot_score,
                     euclidean_distance, masked_softmax, nadaraya_watson, set_seed)
from attnlib.plotting import kernel_regression_panels
from attnlib.pooling import attention_pooling, toy_function, toy_regression_data
from attnlib.rounding import rounded
from attnlib.widgets import additive_attention_explorer, kernel_regression_explorer

set_seed(0)
device = default_device()
# Random numbers are drawn on the CPU and then moved to `device`, so every device sees the same inputs.

# %% [markdown]
# ## 1. Cues: what makes us look at something (§9.1)
#
# Psychology distinguishes two reasons for paying attention to something:
#
# - a **volitional cue (随意线索)** comes from our current goal: "I am looking for my keys", so the eye searches for keys;
# - a **nonvolitional cue (不随意线索)** comes from the scene itself: a bright red object among grey ones catches the eye whether or not we want it to.
#
# Convolutions, pooling layers and ordinary fully connected layers process their input with fixed parameters. Nothing in them states, for each output, *what it is looking for*. Attention adds exactly that: an explicit **query** that biases which inputs are selected.
#
# ### Query, Key and Value
#
# Every candidate input is stored as a pair $(k_i, v_i)$, and a query $q$ arrives:
#
# - **Query (查询)** $q$: the information we are currently after, the goal of the search;
# - **Key (键)** $k_i$: the index of candidate $i$, the part that is compared with the query;
# - **Value (值)** $v_i$: the content candidate $i$ actually carries, which ends up in the output.
#
# A Python `dict` performs a *hard* lookup: the query must equal one key exactly, and you get that one value back. Attention performs a *soft* lookup: every key matches the query to some degree, and the answer is a blend of all the values, weighted by how well their keys matched.

# %% [markdown]
# ## 2. Scores, weights, output (§9.2)
#
# With $m$ key–value pairs $(k_1, v_1), \dots, (k_m, v_m)$ the computation has three steps.
#
# 1. A **score function (评分函数)** $a$ rates how relevant each key is to the query: the **attention score (注意力分数)**
# $$ s_i = a(q, k_i). $$
# 2. A softmax turns the scores into **attention weights (注意力权重)**:
# $$ \alpha_i = \frac{\exp(s_i)}{\sum_{j=1}^{m}\exp(s_j)}, \qquad \alpha_i > 0, \qquad \sum_{i=1}^{m}\alpha_i = 1 . $$
# 3. The **output** is the weighted sum of the values:
# $$ o = \sum_{i=1}^{m} \alpha_i v_i . $$
#
# In short: query and keys → scores → softmax → weights; weights × values → sum → output. Here is one query, four keys and four two-dimensional values, with the dot product $a(q, k) = q\cdot k$ as the score:

# %%
# C19: scores -> softmax -> weights; weights x values -> output
q = torch.tensor([[1.0, 0.5]]).to(device)                                   # (1, 2)  one query
keys = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [-1.0, 0.0]]).to(device)  # (4, 2)
values = torch.tensor([[1.0, 0.0], [0.0, 2.0], [3.0, 3.0], [-2.0, 1.0]]).to(device)  # (4, 2)

scores = dot_score(q, keys)          # (1, 4)  s_i = q . k_i
weights = masked_softmax(scores)     # (1, 4)  alpha_i
output = weights @ values            # (1, 2)  o = sum_i alpha_i v_i
print("scores :", rounded(scores[0], 4))
print("weights:", rounded(weights[0], 4))
print("output :", rounded(output[0], 4))

# the same three steps in one library call (scale=1.0: no 1/sqrt(d) yet; notebook 02 explains it)
out_lib, w_lib = dot_product_attention(q, keys, values, scale=1.0)
print("same as dot_product_attention:", bool(torch.allclose(out_lib, output)) and bool(torch.allclose(w_lib, weights)))

# %% [markdown]
# > **Common mistake:** expecting the scores themselves to lie between 0 and 1. A score $s_i$ can be *any* real number, negative or huge. Only after the softmax do the weights $\alpha_i$ lie strictly between 0 and 1 and add up to 1.

# %%
# C21: scores are any real numbers; weights lie in (0, 1) and sum to 1
scores = torch.tensor([-3.0, 0.0, 2.5, 4.0, -20.0]).to(device)
weights = masked_softmax(scores)
print("scores :", rounded(scores, 1))
print("weights:", rounded(weights, 4))
print("all weights in (0, 1):", bool(((weights > 0) & (weights < 1)).all()))
print("sum of weights:", round(weights.sum().item(), 6))

# %% [markdown]
# Softmax reads a **larger** score as **more relevant**. Dot products, cosine similarities and learned networks already produce scores of that kind. A *distance* $d(q, k_i)$ runs the other way, since a nearer key is more relevant. It has to be flipped into a score that grows as the distance shrinks, for example $s_i = -d(q, k_i)$, or the Gaussian kernel's $-\tfrac12 d(q, k_i)^2$.
#
# > **Common mistake:** feeding a positive distance straight into the softmax. The softmax then gives the largest weight to the **farthest** key, the opposite of what was meant.

# %%
# C20: a positive distance given to softmax favours the farthest key
key_pos = torch.tensor([[0.0], [1.0], [2.0], [3.0], [4.0]]).to(device)   # (5, 1)  five keys on a line
query_pos = torch.tensor([[0.2]]).to(device)                            # (1, 1)  a query near key 0
dist = euclidean_distance(query_pos, key_pos)                           # (1, 5)  |q - k_i|
for name, s in [("+distance (wrong)", dist),
                ("-distance", -dist),
                ("Gaussian -d^2/2", SCORE_FUNCTIONS["gaussian"](query_pos, key_pos))]:
    w = masked_softmax(s)[0]
    print(f"{name:18s} weights {rounded(w, 3)}"
          f"  -> largest weight on key {int(w.argmax())} at x = {key_pos[int(w.argmax()), 0].item():g}")

# %% [markdown]
# ## 3. Non-parametric attention pooling (§9.3)
#
# **Non-parametric attention pooling (非参数注意力池化)** uses a similarity or kernel fixed in advance to hand out the weights; nothing in the scoring rule is learned. Given training pairs $\{(x_i, y_i)\}_{i=1}^{n}$, the prediction at a new input $x$ is
#
# $$ f(x) = \sum_{i=1}^{n} \alpha(x, x_i)\, y_i . $$
#
# Read it as attention: the new input $x$ is the **query**, the training inputs $x_i$ are the **keys**, and the training targets $y_i$ are the **values**.
#
# ### The Gaussian kernel: Nadaraya–Watson regression
#
# With the Gaussian kernel the weights are a softmax of negative squared distances. This is **Nadaraya–Watson kernel regression (Nadaraya–Watson 核回归)**:
#
# $$ f(x) = \sum_{i=1}^{n} \operatorname{softmax}_i\!\left(-\tfrac12 (x - x_i)^2\right) y_i,
# \qquad
# \alpha(x, x_i) = \frac{\exp\!\left[-\tfrac12 (x - x_i)^2\right]}{\sum_{j=1}^{n}\exp\!\left[-\tfrac12 (x - x_j)^2\right]} . $$
#
# The nearer a training point is to the query, the larger its weight. The lecture uses a kernel of width 1. We add a **kernel width** (bandwidth) $h$ and write $-(x - x_i)^2 / (2h^2)$, which is the same formula when $h = 1$.
#
# Our data: 40 noisy samples of $f(x) = 2\sin x + x^{0.8}$ at random points in $[0, 5)$.

# %%
x_train, y_train = toy_regression_data(40, generator=torch.Generator().manual_seed(0), device=device)  # (40,), (40,)
print("training points:", x_train.shape[0])
print("x range: [", round(x_train.min().item(), 3), ",", round(x_train.max().item(), 3), "]")
print("first three (x_i, y_i):", list(zip(rounded(x_train[:3], 3), rounded(y_train[:3], 3))))

# %%
# C22: Nadaraya-Watson at one query (h = 1, the seed's form): nearer keys get more weight
x_query = torch.tensor([2.0]).to(device)
prediction, weights = nadaraya_watson(x_query, x_train, y_train, bandwidth=1.0)   # (1,), (1, 40)
dist = (x_query - x_train).abs()
by_distance = torch.argsort(dist)                  # keys from nearest to farthest
print("rank    x_i    |x - x_i|   weight")
for rank in [0, 1, 4, 9, 19, 29, 39]:
    i = int(by_distance[rank])
    print(f"{rank + 1:4d}   {x_train[i].item():6.3f}   {dist[i].item():7.3f}   {weights[0, i].item():.4f}")
print(f"prediction f(2.0) = {prediction.item():.4f};  true 2 sin 2 + 2^0.8 = {toy_function(x_query).item():.4f}")

# %% [markdown]
# ### The kernel width controls smoothing
#
# A narrow kernel (small $h$) lets only the closest points vote. The fit follows every point, including its noise. A wide kernel lets many points vote. The fit is smooth but flattens real structure. The table measures both effects: the error on the training points themselves, and the error against the noiseless function over the data's range.

# %%
# C22: the smoothing trade-off of the kernel width
grid = torch.linspace(x_train.min().item(), x_train.max().item(), 200).to(device)
y_grid = toy_function(grid)
print("    h    train MSE   MSE vs true f")
for h in [0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0]:
    fit_train, _ = nadaraya_watson(x_train, x_train, y_train, bandwidth=h)
    fit_grid, _ = nadaraya_watson(grid, x_train, y_train, bandwidth=h)
    mse_train = ((fit_train - y_train) ** 2).mean().item()
    mse_true = ((fit_grid - y_grid) ** 2).mean().item()
    print(f"{h:5.2f}   {mse_train:9.4f}   {mse_true:13.4f}")

# %% [markdown]
# The training error only grows with $h$. The error against the true function is large at both ends and smallest near $h \approx 0.2$. Below, three fits on the left. On the right are the weights $\alpha(x, x_i)$ for $h = 0.2$, one row per query on a grid and one column per training point sorted by $x_i$. Each query looks at a narrow band of nearby keys, which makes a bright diagonal.

# %%
# C22: the picture (fits for three widths; weights of one of them)
grid_full = torch.linspace(0.0, 5.0, 101).to(device)
fits = {f"h = {h:g}": nadaraya_watson(grid_full, x_train, y_train, bandwidth=h)[0] for h in (0.05, 0.2, 1.0)}
_, w_grid = nadaraya_watson(grid_full, x_train, y_train, bandwidth=0.2)   # (101, 40)
_ = kernel_regression_panels(x_train, y_train, grid_full, fits, w_grid, y_true=toy_function(grid_full),
                             weights_title="weights α(x, x_i), h = 0.2")

# %% [markdown]
# ### Try it
#
# Move the query and the kernel width. The top panel shows the data (each point's size grows with its weight for the current query), the true function (dashed) and the fitted curve. The bottom panel shows every key's weight at its position $x_i$, divided by the largest weight so that both narrow and wide kernels fill the panel. The readout below the figure gives the largest weight itself, the key it belongs to, the prediction and the sum of the weights (always 1). The **score** menu swaps the Gaussian kernel for the other score functions of the next section, including the wrong "+distance".

# %%
# NBVAL_IGNORE_OUTPUT
kernel_explorer = kernel_regression_explorer()
kernel_explorer

# %% [markdown]
# ## 4. Other score functions (§9.3.3)
#
# For vector inputs the usual non-parametric choices are:
#
# | score | formula $a(q, k)$ | notes |
# |---|---|---|
# | dot product (点积) | $q^\top k$ | grows with the lengths of $q$ and $k$ |
# | cosine similarity (余弦相似度) | $\dfrac{q^\top k}{\lVert q\rVert\,\lVert k\rVert}$ | direction only, in $[-1, 1]$ |
# | negative Euclidean distance (负欧氏距离) | $-\lVert q - k\rVert$ | nearer is larger |
# | Gaussian kernel (高斯核) | $-\lVert q - k\rVert^2 / (2h^2)$ | its softmax is the normalised Gaussian kernel |
#
# They can rank the same keys differently. With a long key $k_1$ along the query's direction and a short key $k_2$ close to the query:

# %%
# C23: dot, cosine, negative Euclidean distance and Gaussian kernel on one query and three keys
q = torch.tensor([[1.0, 0.5]]).to(device)                              # (1, 2)
keys = torch.tensor([[3.0, 0.0], [1.0, 0.6], [-1.0, 0.0]]).to(device)  # (3, 2): long k1, near k2, opposite k3
print("score          scores (k1, k2, k3)          weights (k1, k2, k3)")
for name in ["dot", "cosine", "neg_euclidean", "gaussian"]:
    s = SCORE_FUNCTIONS[name](q, keys)[0]
    w = masked_softmax(s)
    print(f"{name:13s}  {str(rounded(s, 3)):27s}"
          f"  {rounded(w, 3)}")

# %% [markdown]
# The dot product prefers the long key $k_1$. The three others prefer $k_2$, which points almost the same way as $q$ and lies closest to it.
#
# On our one-dimensional data each score treats $x$ as a vector of length one. The dot product then simply favours the largest $x_i$. The cosine of two positive numbers is always 1, so every point gets the same weight and the "fit" is a flat line at the mean of $y$. The menu of the explorer above shows both. Here are the numbers at the query $x = 1$ with $h = 0.5$:

# %%
# C23 (and C20): each score on the 1-D data at x = 1, h = 0.5
x1 = torch.tensor([1.0]).to(device)
print("score               f(1)     largest weight   at x_i")
for name in ["gaussian", "neg_euclidean", "dot", "cosine", "distance (wrong)"]:
    pred, w = attention_pooling(x1, x_train, y_train, name, 0.5)
    j = int(w[0].argmax())
    print(f"{name:17s}  {pred.item():7.4f}   {w[0, j].item():14.4f}   {x_train[j].item():6.3f}")
print(f"true f(1) = {toy_function(x1).item():.4f};  mean of y = {y_train.mean().item():.4f}")

# %% [markdown]
# "Non-parametric" describes the **scoring rule** only: it has nothing to learn. It does not mean that a model using such pooling has no parameters anywhere else.
#
# ## 5. Additive attention (§9.4)
#
# What if the queries and keys have **different widths**, say $d_q = 4$ and $d_k = 6$? Then $q^\top k$ is not even defined:

# %%
# C24: the dot product needs equal widths
queries = torch.randn(2, 3, 4).to(device)   # (B=2, L=3 queries, d_q=4)
keys = torch.randn(2, 5, 6).to(device)      # (B=2, S=5 keys, d_k=6)
values = torch.randn(2, 5, 2).to(device)    # (B=2, S=5, d_v=2)
try:
    dot_score(queries, keys)
except ValueError as err:
    print(f"ValueError: {err}")

# %% [markdown]
# **Additive attention (可加性注意力)** solves this with a small learned network. It is also the choice when one wants a learned, non-linear notion of relevance. It was the standard score in the classic RNN sequence-to-sequence models; the original Transformer uses the scaled dot product instead (notebook 02).
#
# With $W_q \in \mathbb{R}^{h\times d_q}$, $W_k \in \mathbb{R}^{h\times d_k}$ and $w_v \in \mathbb{R}^{h}$, the score of query $i$ against key $j$ is
#
# $$ e_{ij} = w_v^\top \tanh\!\left(W_q q_i + W_k k_j\right). $$
#
# | parameter | job |
# |---|---|
# | $W_q$ | maps a query into a shared hidden space of width $h$ |
# | $W_k$ | maps a key into the same hidden space |
# | $w_v$ | turns a hidden vector into one number, the score |
#
# (The seed writes the last vector as $\boldsymbol v$. We call it $w_v$ so it is not confused with the values.)
#
# In code the sum is done for every pair at once by **broadcasting**: the projected queries $(B, L, h)$ get a key axis, $(B, L, 1, h)$; the projected keys $(B, S, h)$ get a query axis, $(B, 1, S, h)$; their sum is a feature tensor of shape $(B, L, S, h)$. Then $\tanh$, then $w_v$ reduces the last axis to the scores $(B, L, S)$.

# %%
# C24: additive attention with d_q = 4, d_k = 6, h = 8; the broadcast feature tensor is (B, L, S, h)
additive = AdditiveAttention(d_q=4, d_k=6, d_hidden=8).to(device)
features = additive.features(queries, keys)   # tanh(W_q q_i + W_k k_j) for every pair
out, weights = additive(queries, keys, values)
print("queries ", tuple(queries.shape), " keys", tuple(keys.shape), " values", tuple(values.shape))
print("features", tuple(features.shape), "= [batch, n_q, n_k, h]")
print("weights ", tuple(weights.shape), " output", tuple(out.shape))

# one score written out by hand: e_ij = w_v . tanh(W_q q_i + W_k k_j), for batch 0, query 1, key 2
with torch.no_grad():
    e_12 = additive.w_v.weight[0] @ torch.tanh(additive.w_q.weight @ queries[0, 1] + additive.w_k.weight @ keys[0, 2])
    print("e_12 by hand equals the module's score:", bool(torch.allclose(e_12, additive.scores(queries, keys)[0, 1, 2])))
    print("weights of batch 0 (rows: queries, columns: keys):")
    for row in weights[0]:
        print("  ", rounded(row, 3))

# %% [markdown]
# The module is untrained, so its weights are still close to uniform; training would shape $W_q$, $W_k$ and $w_v$.
#
# Like the dot-product version, additive attention accepts `valid_lens` to hide padding keys. Here batch row 0 has only 2 real keys, so keys 3 to 5 get weight exactly 0:

# %%
# C24 with padding: batch 0 has 2 valid keys, batch 1 has all 5
with torch.no_grad():
    _, w_pad = additive(queries, keys, values, valid_lens=torch.tensor([2, 5]).to(device))
print("batch 0, query 0:", rounded(w_pad[0, 0], 3))
print("batch 1, query 0:", rounded(w_pad[1, 0], 3))

# %% [markdown]
# The explorer below scores a two-dimensional query against five keys of width three ($d_q = 2 \neq d_k = 3$, $h = 6$). On the left is the slice of the feature tensor for this one query: $\tanh(W_q q + W_k k_j)$, one row per key and one column per hidden unit. On the right are the resulting weights.

# %%
# NBVAL_IGNORE_OUTPUT
additive_explorer = additive_attention_explorer()
additive_explorer

# %% [markdown]
# ## Exercises
#
# 1. **(explorer)** In the kernel-regression explorer, choose **+distance (wrong)** and slide the query from 0 to 5. Which key gets the largest weight, and what does the fitted curve look like?
#
# <details><summary>Answer</summary>
#
# The key farthest from the query wins: for queries on the left the rightmost training point dominates, and for queries on the right the leftmost one does. The fitted curve has nothing to do with the data near the query. Negating the distance ("−distance") fixes it.
# </details>
#
# 2. **(explorer)** With the Gaussian score, move the width $h$ from its smallest to its largest value. Describe the fitted curve at both ends, and say which end matches the "train MSE" column of the table and which the "MSE vs true f" column.
#
# <details><summary>Answer</summary>
#
# At $h \approx 0.05$ the curve chases individual points, noise included. Its training error is small but it wiggles away from the true function between points. At $h = 5$ almost every point gets the same weight and the curve flattens towards the mean of $y$ (large error everywhere). The training error keeps rising with $h$; the error against the true function is smallest in between (near $h \approx 0.2$ here).
# </details>
#
# 3. Why is the "cosine" fit a flat line on this data, and what would change if some $x_i$ were negative?
#
# <details><summary>Answer</summary>
#
# For scalars, $\cos(x, x_i) = \operatorname{sign}(x)\operatorname{sign}(x_i)$. All our inputs are positive, so every score is the same, every weight is $1/40$, and $f(x)$ is the mean of $y$. With negative $x_i$, a positive query would give the positive keys higher scores than the negative ones: the fit becomes a two-level step, still blind to distance.
# </details>
#
# 4. Additive attention with batch 2, 3 queries of width 4, 5 keys of width 6 and hidden width 8: what are the shapes of $W_q$, $W_k$, $w_v$ and of the feature tensor? How many scores are computed?
#
# <details><summary>Answer</summary>
#
# $W_q$ is $8\times4$, $W_k$ is $8\times6$, $w_v$ has 8 entries; the features are $(2, 3, 5, 8)$ and the scores $(2, 3, 5)$: 30 scores.
# </details>
