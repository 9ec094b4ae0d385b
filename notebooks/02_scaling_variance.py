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
# # 02 · Why divide by $\sqrt{d_k}$: the variance of a dot product
#
# **What you will learn**
#
# - why the dot product $q\cdot k$ of two random vectors has variance $d_k$, derived in three lines;
# - a Monte-Carlo experiment that measures $\operatorname{Var}(q\cdot k)$ for $d_k = 1 \ldots 1024$, with error bars, and shows that dividing by $\sqrt{d_k}$ brings it back to 1;
# - what a large score spread does to a softmax row: without the scale, rows get sharper as $d_k$ grows (max weight up, entropy down);
# - why a sharp (saturated) row is bad for learning: its gradient nearly vanishes;
# - what the $\sqrt{d_k}$ argument does *not* promise.
#
# **Seed sections taught:** `000_c6f15091c249a51c.txt` §3 (why divide by the square root), and `004_cf2f09ec33ad5dce.txt` §9.5 (scaled dot-product attention).
#
# **Read first:** `01_qkv_roles.ipynb` (queries, keys, and the score $q_i k_j^\top$).
#
# **Time:** about 25 minutes.

# %%
# %matplotlib widget
import math

import matplotlib.pyplot as plt
import torch

from attnlib import default_device, dot_product_attention, masked_softmax, set_seed
from attnlib.plotting import sharpness_curves, variance_errorbars
from attnlib.rounding import rounded
from attnlib.scaling import (dot_product_variance, entropy, jacobian_norm, max_weight,
                             softmax_sharpness)
from attnlib.widgets import scaling_explorer

set_seed(0)
device = default_device()
# Random numbers are drawn on the CPU (with seeded generators) and then moved to `device`,
# so a run on a GPU sees the same inputs and prints the same rounded numbers.

# %% [markdown]
# ## 1. The scaled score
#
# Notebook 01 built the raw score between query row $q_i$ and key row $k_j$ as a dot product (点积). Transformers do not feed that number to the softmax directly; they first divide it by the square root of the shared width $d_k$:
#
# $$
# z_{ij} = \frac{q_i k_j^\top}{\sqrt{d_k}}, \qquad
# A = \operatorname{softmax}\!\left(\frac{QK^\top}{\sqrt{d_k}}\right), \qquad
# \operatorname{Attention}(Q, K, V) = AV .
# $$
#
# This is **scaled dot-product attention (缩放点积注意力)**. The factor looks cosmetic; this notebook shows what goes wrong without it. The argument has two halves: (1) the raw score grows with $d_k$ in a predictable way, and (2) large scores make the softmax saturate, which starves learning of gradient.

# %% [markdown]
# ## 2. The variance of $q\cdot k$ (方差)
#
# Take a deliberately simple model, only meant to show how things scale: every component $q_r$ and $k_r$ is drawn independently, with mean 0 and variance 1, and $q$ is independent of $k$.
#
# **One term.** For a single product $q_r k_r$, independence gives
# $\mathbb{E}[q_r k_r] = \mathbb{E}[q_r]\,\mathbb{E}[k_r] = 0$ and
# $\operatorname{Var}(q_r k_r) = \mathbb{E}[q_r^2 k_r^2] - 0 = \mathbb{E}[q_r^2]\,\mathbb{E}[k_r^2] = 1 \cdot 1 = 1$.
#
# **The sum.** Two different terms $q_r k_r$ and $q_s k_s$ ($r\ne s$) share no variables, so they are uncorrelated, and variances of uncorrelated terms add:
#
# $$
# \operatorname{Var}\!\left(\sum_{r=1}^{d_k} q_r k_r\right) = \sum_{r=1}^{d_k} \operatorname{Var}(q_r k_r) = d_k .
# $$
#
# So the typical size (standard deviation) of a raw score is $\sqrt{d_k}$: a 64-wide head produces scores about 8 times larger than a 1-wide one, for no reason other than its width. Dividing by $\sqrt{d_k}$ undoes exactly that: $\operatorname{Var}(q\cdot k/\sqrt{d_k}) = d_k / d_k = 1$.
#
# First, the one-term facts, measured:

# %%
# C05 (one term): E[q_r k_r] = 0 and Var(q_r k_r) = 1 for independent N(0, 1) components
gen = torch.Generator().manual_seed(0)           # a private CPU generator: same numbers on any machine
q_r = torch.randn(200_000, generator=gen, dtype=torch.float64)
k_r = torch.randn(200_000, generator=gen, dtype=torch.float64)
prod = q_r * k_r
print(f"mean of q_r k_r:     {prod.mean().item():+.3f}   (theory 0)")
print(f"variance of q_r k_r: {prod.var().item():.3f}    (theory 1)")

# %% [markdown]
# ## 3. The Monte-Carlo experiment, with error bars
#
# Now the whole sum. For each width $d_k \in \{1, 4, 16, 64, 256, 1024\}$, `attnlib.statistics.dot_product_variance` draws $n = 10\,000$ independent pairs $(q, k)$, computes their dot products, and reports the sample variance together with its **standard error** (SE). A sample variance is itself a random number; its standard error comes from the large-sample formula
#
# $$
# \operatorname{Var}(s^2) \approx \frac{m_4 - s^4}{n},
# $$
#
# where $m_4$ is the sample's fourth central moment. If the theory is right, each measured variance should land within a couple of standard errors of $d_k$, and the scaled variance within a couple of standard errors of 1. The experiment runs on the CPU with its own seeded generator, so the table below is the same on every machine.

# %%
# C05: Var(q·k) = d_k, and Var(q·k / sqrt(d_k)) = 1 — a Monte-Carlo table with standard errors
widths = [1, 4, 16, 64, 256, 1024]
table = dot_product_variance(widths, num_samples=10_000, generator=torch.Generator().manual_seed(0))

print(f"{'d_k':>5} | {'Var(q·k) ± SE':>18} | {'Var / d_k':>9} | {'Var(q·k/√d_k) ± SE':>19} | {'|Var − d_k| / SE':>16}")
print("-" * 80)
for d, v, se, vs, ses in zip(table.d_k, table.variance.tolist(), table.stderr.tolist(),
                             table.variance_scaled.tolist(), table.stderr_scaled.tolist()):
    print(f"{d:>5} | {v:>9.2f} ± {se:<6.2f} | {v / d:>9.3f} | {vs:>10.3f} ± {ses:<6.3f} | {abs(v - d) / se:>16.2f}")
z = (table.variance - torch.tensor(widths, dtype=torch.float64)).abs() / table.stderr
print("every width within 3 standard errors of d_k:", bool((z < 3).all()))

# %% [markdown]
# The ratio column $\operatorname{Var}/d_k$ hovers around 1 at every width: the variance really grows in proportion to $d_k$. The last column says how many standard errors each estimate is from the theory; numbers below 2 or so are what chance alone produces. Notice also that the error bar grows with $d_k$ but stays the same *fraction* of $d_k$ (about $\sqrt{2/n}\approx 1.4\%$), which is why the scaled column has nearly constant error bars.
#
# The same table as a picture (both axes logarithmic, bars are $\pm 2$ SE):

# %%
# C05: the picture — the unscaled variance follows the line d_k, the scaled one stays at 1
fig, ax = plt.subplots(figsize=(5.2, 3.8), layout="constrained")
_ = variance_errorbars(table, ax)

# %% [markdown]
# ## 4. What a wide score spread does to softmax (饱和)
#
# Why care about the size of the scores? Because softmax only looks at *differences* between scores, and differences of size 30 are enormous on the exponential scale: $e^{30}\approx 10^{13}$. When the scores of one row spread over tens of units, the largest one takes essentially all the weight and the row becomes nearly **one-hot**. This is called **saturation (饱和)** of the softmax.
#
# Two numbers describe how sharp a row $a$ is:
#
# - its **max weight** $\max_j a_j$: $1/S$ for a uniform row over $S$ keys, 1 for a one-hot row;
# - its **entropy (熵)** $H(a) = -\sum_j a_j \log a_j$: $\log S$ for a uniform row, 0 for a one-hot row.
#
# Here is one query against 16 random keys at $d_k = 512$, once with the raw dot product and once with the scaled one:

# %%
# C06: one row at d_k = 512 — raw scores saturate the softmax, scaled ones do not
gen = torch.Generator().manual_seed(1)
d_k, S = 512, 16
q = torch.randn(1, d_k, generator=gen).to(device)         # (L=1, d_k)
k = torch.randn(S, d_k, generator=gen).to(device)         # (S, d_k)
v = torch.eye(S).to(device)                               # (S, S): the output is then the weight row itself

for label, scale in [("raw q·k      ", 1.0), ("q·k / √d_k   ", 1 / math.sqrt(d_k))]:
    _, w = dot_product_attention(q, k, v, scale=scale)    # w: (1, S)
    scores = (q @ k.T * scale).cpu()
    print(f"{label} score std {scores.std().item():6.2f} | max weight {max_weight(w).item():.3f} | "
          f"entropy {entropy(w.double()).item():.3f} nats (uniform: {math.log(S):.3f})")
    print("              top 4 weights:", rounded(w[0].sort(descending=True).values[:4], 3))

# %% [markdown]
# One row is one sample. `softmax_sharpness` averages the max weight and the entropy over 512 random queries (16 keys each), for every width from 1 to 1024, with and without the scale:

# %%
# C06: averaged over queries — without the scale, larger d_k gives sharper rows
all_widths = [2**e for e in range(11)]
gen = torch.Generator().manual_seed(0)
raw = softmax_sharpness(all_widths, scaled=False, num_keys=16, generator=gen)
scl = softmax_sharpness(all_widths, scaled=True, num_keys=16, generator=gen)

print(f"{'d_k':>5} | {'max weight raw':>14} {'scaled':>7} | {'entropy raw':>11} {'scaled':>7} | {'‖J‖_F raw':>9} {'scaled':>7}")
print("-" * 76)
for i, d in enumerate(all_widths):
    print(f"{d:>5} | {raw.max_weight[i].item():>14.3f} {scl.max_weight[i].item():>7.3f} | "
          f"{raw.entropy[i].item():>11.3f} {scl.entropy[i].item():>7.3f} | "
          f"{raw.jacobian_norm[i].item():>9.3f} {scl.jacobian_norm[i].item():>7.3f}")
print("raw entropy falls at every step:", bool((raw.entropy[1:] < raw.entropy[:-1]).all()))
print("scaled entropy stays within 0.2 nats:", bool((scl.entropy.max() - scl.entropy.min()) < 0.2))

# %%
# C06: the picture — entropy and max weight against d_k, raw (red) and scaled (blue)
fig, ax = plt.subplots(figsize=(5.2, 3.8), layout="constrained")
_ = sharpness_curves(raw, scl, ax)

# %% [markdown]
# With the raw dot product the mean entropy falls from about $2.4$ nats (close to uniform, $\log 16 \approx 2.77$) to about $0.1$ nats at $d_k = 1024$, and the mean max weight climbs towards 1. With the scale, both stay put: the scaled scores have variance 1 at every width, so the rows look the same whatever $d_k$ is.
#
# ## 5. Why saturation hurts: the gradient vanishes
#
# The last column of the table, $\lVert J\rVert_F$, is the size of the softmax **Jacobian** $J = \operatorname{diag}(a) - aa^\top$, the matrix that carries gradients from the weights back to the scores (notebook 03 derives it). For a one-hot row every entry of $J$ is 0: nudging any score changes no weight, so the scores — and through them $W_Q$ and $W_K$ — receive almost no learning signal. That is the real reason for the scale: at initialisation, when $Q$ and $K$ are roughly random, the raw scores of a wide head would push the network into this flat region before it has learnt anything.
#
# Autograd tells the same story. Below, for 512 random queries against 16 keys, a loss $L = \sum_{i,j} g_{ij} a_{ij}$ with a fixed random upstream gradient $g$ is differentiated with respect to the scores, once raw and once scaled:

# %%
# C14: over 512 random rows at d_k = 512, far less gradient reaches the raw (saturated) scores
gen = torch.Generator().manual_seed(3)
d_k, S, L = 512, 16, 512
q = torch.randn(L, d_k, generator=gen).to(device)           # (L, d_k)
k = torch.randn(S, d_k, generator=gen).to(device)           # (S, d_k)
g_up = torch.randn(L, S, generator=gen).to(device)          # (L, S) a fixed upstream gradient dL/da
for label, scale in [("raw q·k    ", 1.0), ("q·k / √d_k ", 1 / math.sqrt(d_k))]:
    z = (q @ k.T * scale).detach().requires_grad_(True)      # (L, S) the scores
    a = masked_softmax(z)
    (a * g_up).sum().backward()
    print(f"{label} mean ‖dL/dz‖ per row = {z.grad.norm(dim=-1).mean().item():.3f}   "
          f"mean ‖J‖_F = {jacobian_norm(a.detach()).mean().item():.3f}   "
          f"mean max weight = {max_weight(a.detach()).mean().item():.3f}")

# %% [markdown]
# > **Common mistake**: reading the $\sqrt{d_k}$ argument as a guarantee that every attention layer's scores have variance 1.
# > The derivation assumed independent components with mean 0 and variance 1, and $q$ independent of $k$. Trained queries and keys satisfy none of this exactly: their components have other variances, and a query is often *meant* to line up with some key. The scale fixes the dependence on $d_k$; it does not normalise the scores. Two departures from the model, measured:

# %%
# The assumptions matter: other component variances, or q correlated with k, break Var = 1
gen = torch.Generator().manual_seed(2)
d_k, n = 64, 20_000
q = torch.randn(n, d_k, generator=gen, dtype=torch.float64)
k = torch.randn(n, d_k, generator=gen, dtype=torch.float64)
cases = {
    "model: independent, variance 1": (q, k),
    "components with variance 4 (σ = 2)": (2 * q, 2 * k),
    "k = q + noise (correlated)": (q, q + 0.5 * k),
}
for name, (qq, kk) in cases.items():
    z = (qq * kk).sum(-1) / math.sqrt(d_k)
    print(f"{name:36s} Var(q·k/√d_k) = {z.var().item():6.2f}   mean = {z.mean().item():+6.2f}")

# %% [markdown]
# With variance-4 components the scaled score has variance $\sigma^4 = 16$, and with correlated $q$ and $k$ the scores are no longer centred at 0 at all. The scale is a sensible default that removes the width effect; what actually keeps trained scores in a good range is the combination of the scale with initialisation, normalisation layers and learning.
#
# ## 6. Try it: the scaling explorer
#
# Move the **d_k** slider (powers of 2 from 1 to 1024) and flip **divide scores by √d_k**:
#
# - *left*: a histogram of 2000 random scores with the normal curve the theory predicts (variance $d_k$ raw, 1 scaled). Raw scores spread out as $d_k$ grows; scaled ones do not move.
# - *middle*: the softmax row of one query over 16 keys.
# - *right*: the mean entropy of such rows against $d_k$, raw (red) and scaled (blue); the circle marks the current setting.
#
# The readout lists the sampled variance of the scores, and the max weight, entropy and Jacobian norm of the row in the middle.

# %%
# NBVAL_IGNORE_OUTPUT
explorer = scaling_explorer()
explorer

# %% [markdown]
# The numbers of the starting setting ($d_k = 256$, unscaled), printed from a plain cell:

# %%
# C05, C06, C14: the explorer's readout at its starting setting, and after switching the scale on
for setting in [dict(d_k=256, scaled=False), dict(d_k=256, scaled=True)]:
    state = explorer.set(**setting)
    print(setting, {k: round(v, 3) if isinstance(v, float) else v for k, v in state.items()})

# %% [markdown]
# ## Exercises
#
# 1. **(widget)** With the scale switched off, move $d_k$ from 1 to 1024 and watch the row in the middle. At about which $d_k$ does the *mean* entropy (right panel) drop below 1 nat? Then switch the scale on: what happens to the histogram and to the entropy curve marker?
#
# <details><summary>Answer</summary>
#
# The red curve reaches 1 nat at about $d_k = 16$: it is about 1.25 nats at $d_k = 8$ and 0.99 at $d_k = 16$ (the table of section 4, from other random draws, gives 1.36 and 0.92). With the scale on, the histogram collapses to the same narrow bell (variance 1) at every $d_k$, and the marker sits on the flat blue curve near 2.3–2.4 nats: the rows look the same whatever the width.
# </details>
#
# 2. Suppose the components of $q$ and $k$ are independent with mean 0 but variance $\sigma^2$. What is $\operatorname{Var}(q\cdot k)$, and what would you divide by to bring it back to 1? Check your answer against the "variance 4" line of section 5.
#
# <details><summary>Answer</summary>
#
# Each term has variance $\mathbb{E}[q_r^2]\,\mathbb{E}[k_r^2] = \sigma^4$, so $\operatorname{Var}(q\cdot k) = d_k\sigma^4$. Dividing by $\sigma^2\sqrt{d_k}$ gives variance 1. With $\sigma = 2$, dividing only by $\sqrt{d_k}$ leaves $\sigma^4 = 16$, which is what section 5 measured (about 16).
# </details>
#
# 3. Why is the standard error in the table roughly $d_k\sqrt{2/n}$? (Hint: for a normal sample, $\operatorname{Var}(s^2) = 2\sigma^4/(n-1)$; the dot product of two long random vectors is close to normal.)
#
# <details><summary>Answer</summary>
#
# For a nearly normal sample with variance $\sigma^2 = d_k$, $\operatorname{SE}(s^2) = \sqrt{2\sigma^4/(n-1)} \approx d_k\sqrt{2/n}$. With $n = 10\,000$ that is $0.0141\,d_k$: 14.5 at $d_k = 1024$, close to the 14.3 in the table. (The exact fourth moment is $3d_k^2 + 6d_k$, which adds a small correction for small $d_k$: at $d_k = 1$ the SE is $\sqrt{8/n} \approx 0.028$.)
# </details>
#
# 4. A query is compared with itself: what are the mean and variance of $q\cdot q$ when $q$ has $d_k$ independent $N(0,1)$ components?
#
# <details><summary>Answer</summary>
#
# $q\cdot q = \sum_r q_r^2$ is a chi-squared variable with $d_k$ degrees of freedom: mean $d_k$, variance $2d_k$. Unlike $q\cdot k$ it is not centred at 0, so a token's score with itself tends to stand out — one more way real scores depart from the simple model.
# </details>
