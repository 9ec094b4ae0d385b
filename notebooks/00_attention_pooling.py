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
# # 00 · Attention pooling (注意力池化): from a soft lookup to kernel regression
#
# **What you will learn**
#
# - the idea behind attention: a *query* chooses what to look at among *key–value* pairs;
# - the three steps every attention layer shares: scores → softmax weights → weighted sum of values;
# - why a distance has to be turned into a score before the softmax, and what goes wrong if it is not;
# - Nadaraya–Watson kernel regression as the simplest attention pooling, how the kernel width $\sigma$ trades wiggles against smoothness, and why it cannot extrapolate;
# - the common score functions (dot product, cosine, negative distance, Gaussian kernel);
# - additive attention, a small learned network that scores a query against a key, and what it can do that a dot product of projections cannot.
#
# **Lecture notes taught:** lecture notes 004 (*9 Attention and the Transformer*) §9.1 (the intuition: cues, Query/Key/Value), §9.2 (scores, weights and output), §9.3 (non-parametric attention pooling) and §9.4 (additive attention).
#
# **Read first:** nothing; this is the first notebook. You should know what a softmax is.
#
# **Time:** about 75 minutes.

# %%
# %matplotlib inline
import math

import torch

from attnlib import (
    SCORE_FUNCTIONS,
    AdditiveAttention,
    default_device,
    dot_product_attention,
    dot_score,
    euclidean_distance,
    masked_softmax,
    nadaraya_watson,
    set_seed,
)
from attnlib.core.pooling import (
    attention_pooling,
    fit_bandwidth,
    leave_one_out_pooling,
    toy_function,
    toy_regression_data,
)
from attnlib.plotting import kernel_regression_panels
from attnlib.util.rounding import rounded
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
# A convolution (卷积) or a fully connected layer (全连接层) applies the same learned weights, and a max- or average-pooling (池化) layer the same fixed rule, whatever the current goal is: no part of its input says "this is what I want right now". Attention gives the layer such an input, the **query**, and lets it decide which of the other inputs count for this output.
#
# ### Query, Key and Value
#
# Every candidate input is stored as a pair $(k_i, v_i)$, and a query $q$ arrives:
#
# - **Query (查询)** $q$: a description of what is wanted at this moment;
# - **Key (键)** $k_i$: the label candidate $i$ shows to the query; only keys are compared with the query;
# - **Value (值)** $v_i$: what candidate $i$ contributes if it is picked; only values reach the output.
#
# In this language the query carries the volitional cue. The nonvolitional cue is a key's own salience: how much it stands out regardless of what is asked, which is all that a layer without a query (fixed pooling, a fully connected layer) can respond to.
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
# Computing an output this way, as a weighted average of values chosen by a query, is called **attention pooling (注意力池化)**.
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
diff = max((out_lib - output).abs().max().item(), (w_lib - weights).abs().max().item())
print(f"dot_product_attention: max |diff| {'<' if diff < 1e-6 else '>='} 1e-6 (float32 rounding is ~1e-7)")

# %% [markdown]
# > **Common mistake:** expecting the scores themselves to lie between 0 and 1. A score $s_i$ can be *any* real number, negative or huge. Only after the softmax do the weights $\alpha_i$ lie strictly between 0 and 1 and add up to 1.

# %%
# C21: scores are any real numbers; weights lie in (0, 1) and sum to 1
scores = torch.tensor([-3.0, 0.0, 2.5, 4.0, -20.0]).to(device)
weights = masked_softmax(scores)
print("scores :", rounded(scores, 1))
print("weights:", ", ".join(f"{w:.3g}" for w in weights.tolist()))
print(f"smallest weight {weights.min().item():.3g} (> 0), largest {weights.max().item():.3g} (< 1)")
print("sum of weights:", round(weights.sum().item(), 6))

# %% [markdown]
# The weight of the score −20 is tiny but not zero: $e^{-20}/\sum_j e^{s_j} \approx 3\times10^{-11}$. "Strictly between 0 and 1" is a statement about real numbers, though. The smallest positive float32 number is about $1.4\times10^{-45} \approx e^{-103.3}$, and anything below half of it rounds to 0, so a score more than about 104 below the row's maximum gives a weight of exactly 0:

# %%
# C21: in float32, exp underflows: a score 110 below the maximum gets weight exactly 0.0
far = masked_softmax(torch.tensor([0.0, -110.0]).to(device))
print("scores [0, -110] -> float32 weights", far.tolist())
print(f"exp(-110) = {math.exp(-110):.2g}, below float32's smallest positive number {2.0 ** -149:.2g}")

# %% [markdown]
# The softmax hands the most weight to the **largest** score. That suits a dot product, a cosine or a learned scoring network, where bigger already means "a better match". A *distance* $d(q, k_i)$ means the opposite: the smaller it is, the better the match. So a distance must first be turned around into a score that rises as the distance falls, such as $s_i = -d(q, k_i)$ or, for the Gaussian kernel, $-\tfrac12 d(q, k_i)^2$.
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
    print(f"{name:18s} weights [{', '.join(f'{x:.2g}' for x in w.tolist())}]"   # 2 significant digits: small weights stay visible
          f"  -> largest weight on key {int(w.argmax())} at x = {key_pos[int(w.argmax()), 0].item():g}")

# %% [markdown]
# ## 3. Non-parametric attention pooling (§9.3)
#
# In **non-parametric attention pooling (非参数注意力池化)** the score is a formula we choose before seeing any data, a similarity or a kernel; there is no weight in it for training to adjust. Given training pairs $\{(x_i, y_i)\}_{i=1}^{n}$, the prediction at a new input $x$ is
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
# The nearer a training point is to the query, the larger its weight. The lecture uses a kernel of width 1. We add a **kernel width** (bandwidth, 带宽) $\sigma$ and write $-(x - x_i)^2 / (2\sigma^2)$, which is the same formula when $\sigma = 1$. (We call it $\sigma$, the standard deviation of the Gaussian bump, because $h$ will be the hidden width of additive attention in §5.)
#
# Our data: 40 samples of $f(x) = 2\sin x + x^{0.8}$ at random points in $[0, 5)$, each with Gaussian noise of standard deviation 0.5 added (variance 0.25).

# %%
noise = 0.5                                          # s.d. of the noise added to each y_i
x_train, y_train = toy_regression_data(40, noise=noise, generator=torch.Generator().manual_seed(0), device=device)  # (40,), (40,)
print("training points:", x_train.shape[0], f"  noise s.d. {noise} (variance {noise ** 2})")
print("x range: [", round(x_train.min().item(), 3), ",", round(x_train.max().item(), 3), "]")
print("first three (x_i, y_i):", list(zip(rounded(x_train[:3], 3), rounded(y_train[:3], 3))))

# %%
# C22: Nadaraya-Watson at one query (sigma = 1, the lecture notes' form): nearer keys get more weight
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
# A narrow kernel (small $\sigma$) lets only the closest points vote. The fit follows every point, including its noise. A wide kernel lets many points vote. The fit is smooth but flattens real structure. The table measures both effects: the error on the training points themselves, and the error against the noiseless function over the data's range.

# %%
# C22: the smoothing trade-off of the kernel width
grid = torch.linspace(x_train.min().item(), x_train.max().item(), 200).to(device)
y_grid = toy_function(grid)
print("    σ    train MSE   MSE vs true f")
for sigma in [0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0]:
    fit_train, _ = nadaraya_watson(x_train, x_train, y_train, bandwidth=sigma)
    fit_grid, _ = nadaraya_watson(grid, x_train, y_train, bandwidth=sigma)
    mse_train = ((fit_train - y_train) ** 2).mean().item()
    mse_true = ((fit_grid - y_grid) ** 2).mean().item()
    print(f"{sigma:5.2f}   {mse_train:9.4f}   {mse_true:13.4f}")
noise_mse = ((y_train - toy_function(x_train)) ** 2).mean().item()   # what the true f itself scores
print(f"the true f on the training points: MSE {noise_mse:.3f} (the noise variance {noise ** 2} is its expected value)")

# %% [markdown]
# The training error only grows with $\sigma$. The error against the true function is large at both ends and smallest near $\sigma \approx 0.2$. A fit that found $f$ exactly would score the noise on the training points: 0.25 on average over draws, 0.153 on this draw (the last line). A training error below that (0.0293 at $\sigma = 0.02$, well below; 0.1295 at $\sigma = 0.2$, a little below) means the fit is absorbing noise: each point is partly predicting itself. From $\sigma = 0.5$ on (0.1831) the training error is above what $f$ itself scores. Below, three fits on the left. On the right are the weights $\alpha(x, x_i)$ for $\sigma = 0.2$: the query $x$ runs down, each training point's column sits at its $x_i$ across. Each query looks at a narrow band of nearby keys, so the bright cells lie along the diagonal $x = x_i$. The colour scale stops at the largest weight of a query *inside* the data's range; the corners, where a single end point takes most of the weight, are drawn in the top colour.

# %% alt="Nadaraya\u2013Watson fits of noisy training points for kernel widths \u03c3 = 0.05, 0.2 and 1 against the dashed true function (narrow widths wiggle, wide ones smooth), next to the weights of \u03c3 = 0.2 as a heatmap of queries against training inputs, bright along the diagonal."
# C22: the picture (fits for three widths; weights of one of them)
grid_full = torch.linspace(0.0, 5.0, 101).to(device)
fits = {f"σ = {s:g}": nadaraya_watson(grid_full, x_train, y_train, bandwidth=s)[0] for s in (0.05, 0.2, 1.0)}
_, w_grid = nadaraya_watson(grid_full, x_train, y_train, bandwidth=0.2)   # (101, 40)
_ = kernel_regression_panels(x_train, y_train, grid_full, fits, w_grid, y_true=toy_function(grid_full),
                             weights_title="weights α(x, x_i), σ = 0.2")

# %% [markdown]
# ### What happens at the edges of the data
#
# Left of the first training point ($x_1 \approx 0.55$) all three fits stay far from the true curve, which falls to $f(0) = 0$. This is not bad luck. A Nadaraya–Watson prediction is a weighted *average* of the $y_i$, with positive weights summing to 1, so it always lies between the smallest and the largest $y_i$ (the same "inside the hull" property as the output of one attention head; notebook 04 shows which later parts of a Transformer keep it and which, such as dropout or a residual connection (残差连接), let the output leave the hull). It cannot follow a trend past the data: outside it the nearest points take over. With a narrow kernel the fit is flat at the end point's $y$; with a wide one it changes slowly; neither follows the true curve down to 0. The "MSE vs true f" column above was measured only between the first and the last training point, so it does not see this:

# %%
# C22: outside the data a Nadaraya-Watson fit cannot follow the trend and stays inside [min y_i, max y_i]
print(f"y_i range: [{y_train.min().item():.3f}, {y_train.max().item():.3f}];  first x_i = {x_train.min().item():.3f}")
edge = torch.tensor([0.0, 0.25, 0.5]).to(device)
print("  x      true f   " + "   ".join(f"fit σ={s:<4g}" for s in (0.05, 0.2, 1.0)))
fits_edge = [nadaraya_watson(edge, x_train, y_train, bandwidth=s)[0] for s in (0.05, 0.2, 1.0)]
for i, x in enumerate(edge.tolist()):
    print(f"{x:4.2f}   {toy_function(edge[i]).item():7.3f}   " + "   ".join(f"{f[i].item():10.3f}" for f in fits_edge))
y_full = toy_function(grid_full)
for s in (0.05, 0.2, 1.0):
    err = (nadaraya_watson(grid_full, x_train, y_train, bandwidth=s)[0] - y_full) ** 2
    err_inside = (nadaraya_watson(grid, x_train, y_train, bandwidth=s)[0] - y_grid) ** 2   # the table's grid
    print(f"σ = {s:<4g}  MSE vs true f on [0, 5]: {err.mean().item():.3f}   on the data's range only (table): {err_inside.mean().item():.3f}")

# %% [markdown]
# ### Try it
#
# Move the query and the kernel width $\sigma$. The top panel shows the data, the true function (dashed), the smallest and largest $y_i$ (grey dashed lines, which the fit never crosses), the fitted curve and the prediction at the query (the star). The bottom panel shows every key's weight at its position $x_i$, divided by the largest weight so that both narrow and wide kernels fill the panel. The readout gives the largest weight itself and its key, the **effective number of neighbours** $1/\sum_i \alpha_i^2$ (1 when one key takes all the weight, 40 when all share it equally), and, for the current $\sigma$, the two errors of the table above. The **score** menu swaps the Gaussian kernel for the other score functions of the next section, including the wrong "+distance".

# %% alt="The kernel regression explorer: training points, the fitted curve and one query's prediction, with that query's attention weights over the training inputs as bars (divided by the largest)."
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
# | Gaussian kernel (高斯核) | $-\lVert q - k\rVert^2 / (2\sigma^2)$ | its softmax is the normalised Gaussian kernel |
#
# They can rank the same keys differently. Take the query $q = (1, 0.5)$, a long key $k_1 = (3, 0)$ that points roughly the query's way (26.6° off), a short key $k_2 = (1, 0.6)$ that points almost exactly the query's way (4.4° off) and lies close to it, and a key $k_3 = (-1, 0)$ opposite to $k_1$. The first lines print the keys' lengths, angles and distances:

# %%
# C23: dot, cosine, negative Euclidean distance and Gaussian kernel on one query and three keys
q = torch.tensor([[1.0, 0.5]]).to(device)                              # (1, 2)
keys = torch.tensor([[3.0, 0.0], [1.0, 0.6], [-1.0, 0.0]]).to(device)  # (3, 2): long k1, near k2, opposite k3
cos = SCORE_FUNCTIONS["cosine"](q, keys)[0]
angle = torch.rad2deg(torch.acos(cos.clamp(-1.0, 1.0)))
print("key   length   cos(q, k)   angle to q   distance |q - k|")
for j in range(3):
    print(f"k{j + 1}   {keys[j].norm().item():6.3f}   {cos[j].item():9.3f}   {angle[j].item():9.1f}°"
          f"   {(q[0] - keys[j]).norm().item():16.3f}")
print()
print("score          scores (k1, k2, k3)          weights (k1, k2, k3)")
for name in ["dot", "cosine", "neg_euclidean", "gaussian"]:
    s = SCORE_FUNCTIONS[name](q, keys)[0]
    w = masked_softmax(s)
    print(f"{name:13s}  {str(rounded(s, 3)):27s}"
          f"  {rounded(w, 3)}")

# %% [markdown]
# The dot product prefers the long key $k_1$ (score 3.0 against 1.3), although $k_2$ is better aligned (cosine 0.997 against 0.894). The three others prefer $k_2$, which points almost the same way as $q$ and lies closest to it (distance 0.1).
#
# On our one-dimensional data each score treats $x$ as a vector with a single component. The dot product then simply favours the largest $x_i$ for any query $x > 0$ (at $x = 0$ every score is 0 and the weights are uniform). The cosine of two positive numbers is always 1, so every point gets the same weight and the "fit" is a flat line at the mean of $y$. The menu of the explorer above shows both.
#
# In the explorer and in the next cell the width $\sigma$ is used by *every* score, not only the Gaussian: the other scores are divided by $\sigma$ before the softmax. Dividing scores by a number is a **temperature (温度)**: a small $\sigma$ sharpens the weights, a large one flattens them. So at $\sigma = 0.5$ the "dot" row is $\operatorname{softmax}_i(2\,x\,x_i)$ and "+distance" is $\operatorname{softmax}_i(2\,|x - x_i|)$. Here are the numbers at the query $x = 1$ with $\sigma = 0.5$:

# %%
# C23 (and C20): each score on the 1-D data at x = 1, sigma = 0.5 (non-Gaussian scores divided by sigma)
x1 = torch.tensor([1.0]).to(device)
print("score               f(1)     largest weight   at x_i")
for name in ["gaussian", "neg_euclidean", "dot", "cosine", "distance (wrong)"]:
    pred, w = attention_pooling(x1, x_train, y_train, name, 0.5)
    j = int(w[0].argmax())
    print(f"{name:17s}  {pred.item():7.4f}   {w[0, j].item():14.4f}   {x_train[j].item():6.3f}")
print(f"true f(1) = {toy_function(x1).item():.4f};  mean of y = {y_train.mean().item():.4f}")
w_dot = masked_softmax(2.0 * x1 * x_train)      # the "dot" row written out: x * x_i / 0.5
print(f"dot by hand, softmax(2 x x_i): largest weight {w_dot.max().item():.4f} at x_i = {x_train[int(w_dot.argmax())].item():.3f}")

# %% [markdown]
# Keep the word "non-parametric" where it belongs: it is about the **scoring rule**. A network can pool with a fixed kernel and still learn every layer around that pooling.
#
# The step to a **parametric** score is small: give the kernel one learnable weight, $-\big(w\,(x - x_i)\big)^2/2$, that is a width $\sigma = 1/w$ that training chooses. The loss cannot be the plain training error: the table above shows it only grows with $\sigma$, so minimising it would drive $\sigma$ to 0, each point predicting itself. Instead each training point is predicted from the *other* points only (its own key is masked), and $\sigma$ follows the gradient of that **leave-one-out (留一法)** error (`attnlib.core.pooling.fit_bandwidth`, Adam on $\log\sigma$, starting from $\sigma = 1$):

# %%
# C22 extended: a parametric kernel, its width learned from the data by the leave-one-out error
sigma_fit, losses = fit_bandwidth(x_train, y_train, init=1.0)
loo_fit = ((leave_one_out_pooling(x_train, y_train, sigma_fit) - y_train) ** 2).mean().item()
print(f"learned σ = {sigma_fit:.2f} after {len(losses)} Adam steps;  leave-one-out MSE {losses[0]:.3f} "
      f"at σ = 1 -> {losses[-1]:.3f} before the last step, {loo_fit:.3f} at the learned σ")
for s in (1.0, sigma_fit, 0.2):
    fit_grid, _ = nadaraya_watson(grid, x_train, y_train, bandwidth=s)
    print(f"σ = {s:.2f}: MSE vs true f {((fit_grid - y_grid) ** 2).mean().item():.3f}")

# %% [markdown]
# The learned width, 0.36, comes from the 40 noisy points alone; the true function was never used. Its error against the true $f$, 0.051, is a fifth of the starting width's 0.269, though not as low as the 0.031 of $\sigma = 0.2$, the table's best, which could only be found by peeking at $f$. Learning the score is what attention layers do from here on: the next section replaces the single width by a whole scoring network with learnable weights (shown untrained there).
#
# The learned width can be read in a second way, and the seed's remark (lecture notes 004 §9.3.3) that "non-parametric" describes the scoring rule, not the whole model, is exactly this reading. Dividing every input by $\sigma$ first, a learned feature $x/\sigma = w\,x$, and then pooling with the fixed, parameter-free kernel of width 1 gives the same fit:

# %%
# C22: the learned width is a learned feature x / σ under a fixed width-1 kernel (non-parametric pooling, learned input)
w_learned = 1 / sigma_fit
fit_sigma, _ = nadaraya_watson(grid, x_train, y_train, bandwidth=sigma_fit)                # width σ on x
fit_feature, _ = nadaraya_watson(grid * w_learned, x_train * w_learned, y_train, bandwidth=1.0)  # width 1 on w·x
gap = (fit_sigma - fit_feature).abs().max().item()
print(f"w = 1/σ = {w_learned:.1f};  max |fit(σ on x) - fit(width 1 on w·x)| {'<' if gap < 1e-5 else '>='} 1e-5 (float32 rounding)")

# %% [markdown]
# So the pooling step itself can stay non-parametric while a learned part of the model in front of it (here one weight, in a Transformer whole projection matrices) decides what the kernel compares.
#
# ## 5. Additive attention (§9.4)
#
# What if the queries and keys have **different widths**, say $d_q = 4$ and $d_k = 6$? Then the raw dot product $q^\top k$ is not defined:

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
# Different widths alone are no reason to give up the dot product, though. Project both sides to a shared width first, $\tilde q = q W_Q$ with $W_Q \in \mathbb{R}^{d_q\times h}$ and $\tilde k = k W_K$ with $W_K \in \mathbb{R}^{d_k\times h}$, and take $\tilde q \cdot \tilde k$. This is exactly what every Transformer does (notebook 01). On the same shapes:

# %%
# C24: a dot product of projections handles d_q = 4 != d_k = 6 just as well
g = torch.Generator().manual_seed(1)                     # private: the global generator is not moved
W_Q = torch.randn(4, 8, generator=g).to(device)          # (d_q, h)
W_K = torch.randn(6, 8, generator=g).to(device)          # (d_k, h)
s_proj = dot_score(queries @ W_Q, keys @ W_K)            # (B, L, S) = (2, 3, 5)
print("projected dot-product scores:", tuple(s_proj.shape))
# ... but for a fixed key it is a *linear* function of the query: doubling q doubles every score
lin_err = (dot_score(2 * queries @ W_Q, keys @ W_K) - 2 * s_proj).abs().max().item()
print(f"max |s(2q) - 2 s(q)| {'<' if lin_err < 1e-4 else '>='} 1e-4  (zero up to float32 rounding)")

# %% [markdown]
# So what does additive attention add? Lecture notes 004 §9.4.1 gives two reasons to use it: queries and keys of different widths, or the wish to compute relevance with a learnable non-linear transformation. The projections above already solve the width problem; the non-linear score is what only additive attention offers. The projected dot product $\tilde q \cdot \tilde k = q\,(W_Q W_K^\top)\,k^\top$ is **linear in $q$** for a fixed key (and linear in $k$ for a fixed query): its score over the space of queries is a flat plane. **Additive attention (可加性注意力)** replaces it with a small learned network with a $\tanh$ inside, so the score can be a curved, learned function of query and key together. It was common in the RNN encoder–decoder (编码器–解码器) models (Bahdanau et al., 2015), next to the multiplicative scores of Luong et al. (2015); the original Transformer uses the scaled dot product instead (notebook 02), which has no parameters of its own beside the projections and runs as one matrix product.
#
# From here on we follow the lecture notes' convention: vectors are columns and a matrix multiplies them from the left, $W_q q$. So $W_q$ is $h\times d_q$, shaped like the transpose of the $d_q\times h$ matrix $W_Q$ above, which multiplied a row vector from the right ($q W_Q$); both map $d_q$ numbers to $h$ (the two are separate matrices with their own entries). With $W_q \in \mathbb{R}^{h\times d_q}$, $W_k \in \mathbb{R}^{h\times d_k}$ and $w_v \in \mathbb{R}^{h}$, the score of query $i$ against key $j$ is
#
# $$ e_{ij} = w_v^\top \tanh\!\left(W_q q_i + W_k k_j\right). $$
#
# | parameter | job |
# |---|---|
# | $W_q$ | carries a query ($d_q$ numbers) to $h$ hidden features |
# | $W_k$ | carries a key ($d_k$ numbers) to the same $h$ features, so the two can be added |
# | $w_v$ | weighs the $h$ features after the $\tanh$ and adds them up: one score per pair |
#
# (The lecture notes write the last vector as $\boldsymbol v$. We call it $w_v$ so it is not confused with the values.)
#
# In code the sum is done for every pair at once by **broadcasting (广播)**: the projected queries $(B, L, h)$ get a key axis, $(B, L, 1, h)$; the projected keys $(B, S, h)$ get a query axis, $(B, 1, S, h)$; their sum is a feature tensor of shape $(B, L, S, h)$. Then $\tanh$, then $w_v$ reduces the last axis to the scores $(B, L, S)$.

# %%
# C24: additive attention with d_q = 4, d_k = 6, h = 8; the broadcast feature tensor is (B, L, S, h)
additive = AdditiveAttention(d_q=4, d_k=6, d_hidden=8).to(device)
features = additive.features(queries, keys)   # tanh(W_q q_i + W_k k_j) for every pair
out, weights = additive(queries, keys, values)
print("queries ", tuple(queries.shape), " keys", tuple(keys.shape), " values", tuple(values.shape))
print("features", tuple(features.shape), "= [batch, n_q, n_k, h]")
print("weights ", tuple(weights.shape), " output", tuple(out.shape))

# one score written out by hand: e_ij = w_v . tanh(W_q q_i + W_k k_j), for the 2nd query and the 3rd key
# of batch 0 (indices [0, 1] and [0, 2] in 0-based Python)
with torch.no_grad():
    e_23 = additive.w_v.weight[0] @ torch.tanh(additive.w_q.weight @ queries[0, 1] + additive.w_k.weight @ keys[0, 2])
    gap = (e_23 - additive.scores(queries, keys)[0, 1, 2]).abs().item()
    print(f"e_23 by hand = {e_23.item():.3f};  |by hand - module| {'<' if gap < 1e-6 else '>='} 1e-6")
    print("weights of batch 0 (rows: queries, columns: keys):")
    for row in weights[0]:
        print("  ", rounded(row, 3))
    # why these weights are nearly uniform: |tanh| < 1, so every score lies within ±Σ|w_v|
    w_v = additive.w_v.weight[0]                                       # (h,)
    all_scores = additive.scores(queries, keys)                        # (B, L, S)
    print(f"w_v: largest |entry| {w_v.abs().max().item():.3f} (nn.Linear's default draws within ±1/√h = {1 / 8 ** 0.5:.3f}), "
          f"Σ|w_v| = {w_v.abs().sum().item():.2f}")
    print(f"all 30 scores lie in [{all_scores.min().item():.2f}, {all_scores.max().item():.2f}], "
          f"all weights in [{weights.min().item():.2f}, {weights.max().item():.2f}] (uniform over 5 keys: {1 / 5:.2f})")

# %% [markdown]
# The weights are close to uniform, and the reason is PyTorch's default initialisation, not the lack of training as such. `nn.Linear` draws the entries of $w_v$ within $\pm 1/\sqrt{h} = \pm 0.354$; since $|\tanh| < 1$, every score lies within $\pm\sum_r |w_{v,r}| = \pm 1.46$, and these 30 scores span only −0.24 to 0.47, so no weight leaves 0.16 to 0.25. Untrained does not mean uniform: the explorer below is also untrained but draws larger weights, and at its starting query it already gives $k_1$ a weight of 0.809 (printed after it). Training would shape $W_q$, $W_k$ and $w_v$.
#
# Sequences of different lengths are stored in one tensor by filling the shorter ones up with dummy positions, **padding (填充)**, which must get no weight. Like the dot-product version, additive attention accepts `valid_lens`, the number of real keys in each batch row, to hide the padding keys (notebook 05 treats masks in full). Here batch row 0 has only 2 real keys, so keys 3 to 5 get weight exactly 0:

# %%
# C24 with padding: batch 0 has 2 valid keys, batch 1 has all 5
with torch.no_grad():
    _, w_pad = additive(queries, keys, values, valid_lens=torch.tensor([2, 5]).to(device))
print("batch 0, query 0:", rounded(w_pad[0, 0], 3))
print("batch 1, query 0:", rounded(w_pad[1, 0], 3))

# %% [markdown]
# ### Try it: a curved score against a flat one
#
# The explorer below scores a two-dimensional query against five keys of width three ($d_q = 2 \neq d_k = 3$) in two ways, both with hidden width $h = 6$: a (random, untrained) additive attention, and a dot product of random projections, $(qW_Q)\cdot(kW_K)/\sqrt{h}$. The two heatmaps show the score of one key, chosen in the **surface of key** menu ($k_4$ at the start), for **every** query in the plane $q_1, q_2 \in [-3, 3]$, with 9 contour lines spread over that key's range; the label in the corner names the key. All keys share one colour scale per score. The red dot is the current query and the dashed red line the queries with the same $q_2$. The projected dot product is a plane: straight, parallel, evenly spaced contours, for every key. The additive score bends and flattens where its $\tanh$ units saturate. The bars on the right are the weights of all five keys for the current query, under both scores (the values are $v_j = j - 1$; the readout gives both outputs). The explorer starts at $q = (0, -1.5)$, where additive attention gives $k_1$ most of the weight.

# %% alt="The additive attention explorer: the score of one key (k4) over the query plane under additive attention (curved contours) and under a projected dot product (straight, parallel contours), and the weights of all five keys for the current query under both."
# NBVAL_IGNORE_OUTPUT
additive_explorer = additive_attention_explorer()
additive_explorer

# %% [markdown]
# Curvature changes what the weights can do. Under a dot product the difference of two keys' scores, $\tilde q\cdot(\tilde k_a - \tilde k_b)$, is linear in $q$: along any straight line of queries it changes sign at most once, so once a key has lost to another it can never win back. Additive scores have no such limit. Walk the query along the dashed line $q_2 = -1.5$, from $q_1 = -3$ to $3$ (the numbers come from the explorer's pure function at each point; the explorer above does not move). The first lines list which key has the largest weight, and where that changes; the table gives the weights of $k_1$ and $k_4$ and the score of $k_4$ at five points of the line:

# %%
# C24: along q2 = -1.5, which key wins under each score? (additive: k4 -> k1 -> k4; dot: each key wins once at most)
line = [round(-3.0 + 0.1 * i, 1) for i in range(61)]
states = {q1: additive_explorer.state(q1=q1, q2=-1.5) for q1 in line}
for name in ("additive weight", "dot weight"):
    winners = [int(torch.tensor(states[q1][name]).argmax()) for q1 in line]
    changes = [f"k{a + 1} -> k{b + 1} at q1 = {line[i + 1]:.1f}"
               for i, (a, b) in enumerate(zip(winners, winners[1:])) if a != b]
    print(f"{name:15s} starts with k{winners[0] + 1};", "; ".join(changes))
print()
print("        additive weight    additive    dot weight     dot score")
print("  q1       k1      k4       score k4     k1      k4        k4")
for q1 in (-3.0, -1.5, 0.0, 1.5, 3.0):
    st = states[q1]
    a, e, d, s = st["additive weight"], st["additive score e_j"], st["dot weight"], st["dot score (qW_Q)·(kW_K)/√h"]
    print(f"{q1:4.1f}   {a[0]:6.3f}  {a[3]:6.3f}   {e[3]:9.2f}   {d[0]:6.3f}  {d[3]:6.3f}   {s[3]:8.2f}")

# %% [markdown]
# - **Additive: a key wins back.** $k_4$ has the largest weight at both ends of the line (0.382 at $q_1 = -3$, 0.584 at $q_1 = 3$) and $k_1$ in the middle (0.809 at $q_1 = 0$): $k_4$ loses to $k_1$ at $q_1 = -0.7$ and wins back at $q_1 = 0.9$, by margins the bars show plainly.
# - **Why: a valley.** The additive score of $k_4$ falls from 0.55 to −1.06 and rises again to 1.52 along a straight line.
# - **Dot product: equal steps.** Its dot score, linear along the line, changes in equal steps (0.72, 0.53, 0.34, 0.15, −0.04: 0.19 per 1.5 in $q_1$).
# - **Dot product: one stretch each.** Each key wins on one stretch of the line only: $k_1$ up to $q_1 = -0.1$, $k_4$ from 0.0 to 0.2, $k_3$ from 0.3 on.
#
# ## Exercises
#
# 1. **(explorer)** In the kernel-regression explorer, choose **+distance (wrong)** and slide the query from 0 to 5. Which key gets the largest weight, and what does the fitted curve look like?
#
# <details><summary>Answer</summary>
#
# The key farthest from the query wins: for queries up to $x = 2.65$ the rightmost training point ($x_i = 4.85$) has the largest weight, from $x = 2.70$ on the leftmost one ($x_i = 0.549$) does; the switch is at the midpoint of the two. At the starting $\sigma = 0.5$ the fitted curve is an average dominated by the far end of the data: 1.69 for every query up to $x = 1$ and 2.67 from $x = 4$ on, whatever the data near the query say (the true $f(1) = 2.68$, $f(4) = 1.52$). Negating the distance ("−distance") fixes it.
# </details>
#
# 2. **(explorer)** With the Gaussian score, move the width $\sigma$ from its smallest value (0.05) to its largest (5). Describe the fitted curve at both ends. Watch the readout's "train MSE" and "MSE vs true f": which one only grows, and at which $\sigma$ is the other one smallest? What does the effective number of neighbours do?
#
# <details><summary>Answer</summary>
#
# At $\sigma = 0.05$ the curve chases individual points, noise included (about 3.6 effective neighbours at $x = 2.5$). Its training error is the smallest of the range (0.069), but it wiggles away from the true function between points (MSE vs true f 0.066). At $\sigma = 5$ the effective number of neighbours is almost 40: every point gets nearly the same weight, and the curve flattens towards the mean of $y$ (train MSE 0.593, MSE vs true f 0.627). The training error only grows with $\sigma$; the error against the true function is smallest in between: 0.029 at the slider's $\sigma = 0.158$ (0.031 at $\sigma = 0.2$, the best width of the coarser table above).
# </details>
#
# 3. Why is the "cosine" fit a flat line on this data, and what would change if some $x_i$ were negative?
#
# <details><summary>Answer</summary>
#
# For scalars, $\cos(x, x_i) = \operatorname{sign}(x)\operatorname{sign}(x_i)$. All our inputs are positive, so every score is the same, every weight is $1/40$, and $f(x)$ is the mean of $y$. With negative $x_i$, a positive query would give the positive keys higher scores than the negative ones: the fit becomes a two-level step, still blind to distance.
# </details>
#
# 4. **(explorer)** In the additive explorer, move the query along a straight line (keep $q_2$ fixed and drag $q_1$), and try several keys in the **surface of key** menu. Watch the contour lines the red dot crosses in each heatmap. Why are the dot product's steps between contour lines the same length everywhere, and what happens to the additive score far from the origin?
#
# <details><summary>Answer</summary>
#
# The projected dot product is linear in $q$, so equal steps of $q$ change it by equal amounts: its contours are parallel, evenly spaced lines and its score grows without bound along most directions. The additive score is $w_v^\top\tanh(\cdot)$: far from the origin its $\tanh$ units saturate at $\pm 1$, so the score levels off (wide gaps between contours) and its contours bend. Its range is bounded by $\sum_r |w_{v,r}|$.
# </details>
#
# 5. Additive attention with batch 2, 3 queries of width 4, 5 keys of width 6 and hidden width 8: what are the shapes of $W_q$, $W_k$, $w_v$ and of the feature tensor? How many scores are computed?
#
# <details><summary>Answer</summary>
#
# $W_q$ is $8\times4$, $W_k$ is $8\times6$, $w_v$ has 8 entries; the features are $(2, 3, 5, 8)$ and the scores $(2, 3, 5)$: 30 scores.
# </details>
