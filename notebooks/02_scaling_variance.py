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
# - why a sharp (saturated) row is bad for learning: its gradient nearly vanishes, though a row split between two keys still has plenty;
# - why the *square* root: dividing by $d_k$ instead flattens every row towards uniform;
# - what the $\sqrt{d_k}$ argument does *not* promise.
#
# **Lecture notes taught:** lecture notes 000 (*Chapter 2: the mathematics of attention*) §3 (why divide by the square root), and lecture notes 004 (*9 Attention and the Transformer*) §9.5 (scaled dot-product attention).
#
# **Read first:** `01_qkv_roles.ipynb` (queries, keys, and the score $q_i k_j^\top$).
#
# **Time:** about 60 minutes.

# %%
# %matplotlib inline
import math

import matplotlib.pyplot as plt
import torch

from attnlib import default_device, dot_product_attention, masked_softmax, set_seed
from attnlib.course.scaling import (
    dot_product_variance,
    entropy,
    jacobian_norm,
    max_weight,
    scores_for_widths,
    softmax_sharpness,
)
from attnlib.plotting import sharpness_curves, variance_errorbars
from attnlib.util.rounding import rounded
from attnlib.widgets import scaling_explorer

set_seed(0)
device = default_device()
# Random numbers are drawn on the CPU (with seeded generators) and then moved to `device`,
# so a run on a GPU sees the same inputs and prints the same rounded numbers.

# %% [markdown]
# ## 1. The scaled score
#
# Notebook 01 built the raw score between query row $q_i$ and key row $k_j$ as a dot product (点积). The Transformer (Vaswani et al., 2017) does not feed that number to the softmax directly; it first divides it by the square root of the shared width $d_k$:
#
# $$
# z_{ij} = \frac{q_i k_j^\top}{\sqrt{d_k}}, \qquad
# A = \operatorname{softmax}\!\left(\frac{QK^\top}{\sqrt{d_k}}\right), \qquad
# \operatorname{Attention}(Q, K, V) = AV .
# $$
#
# With $n$ queries and $m$ keys (the shapes of lecture notes 004 §9.5.2): $Q$ is $n\times d_k$ (one row per query), $K$ is $m\times d_k$ and $V$ is $m\times d_v$ (one row per key), so the score matrix and $A$ are $n\times m$, with one softmax per row, and the output $AV$ is $n\times d_v$.
#
# This is **scaled dot-product attention (缩放点积注意力)**. The factor looks cosmetic; this notebook shows what goes wrong without it. The argument has two halves: (1) the raw score grows with $d_k$ in a predictable way, and (2) large scores make the softmax saturate, which starves learning of gradient.

# %% [markdown]
# ## 2. The variance of $q\cdot k$ (方差)
#
# Take a deliberately simple model, only meant to show how things scale: every component $q_r$ and $k_r$ is drawn independently from one distribution (independent and identically distributed, **i.i.d.**, 独立同分布), with mean 0 and variance 1, and $q$ is independent of $k$.
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
# So the typical size (the standard deviation, 标准差) of a raw score is $\sqrt{d_k}$: a 64-wide head produces scores about 8 times larger than a 1-wide one, for no reason other than its width. Dividing by $\sqrt{d_k}$ undoes exactly that: $\operatorname{Var}(q\cdot k/\sqrt{d_k}) = d_k / d_k = 1$.
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
# ## 3. The Monte-Carlo (蒙特卡洛) experiment, with error bars
#
# Now the whole sum. For each width $d_k \in \{1, 4, 16, 64, 256, 1024\}$, `attnlib.course.scaling.dot_product_variance` draws $n = 10\,000$ independent pairs $(q, k)$, computes their dot products, and reports the sample variance together with its **standard error (标准误, SE)**. A sample variance is itself a random number; its standard error comes from the large-sample formula
#
# $$
# \operatorname{Var}(s^2) \approx \frac{m_4 - s^4}{n},
# $$
#
# where $m_4$ is the sample's fourth central moment: it measures how heavy the tails are (for a normal sample $m_4 = 3s^4$, so the formula becomes $2s^4/n$), and heavy tails make a variance harder to pin down. If the theory is right, each measured variance should land within a couple of standard errors of $d_k$, and the scaled variance within a couple of standard errors of 1. The experiment runs on the CPU with its own seeded generator, so the table below is the same on every machine.

# %%
# C05: Var(q·k) = d_k, and Var(q·k / sqrt(d_k)) = 1 — a Monte-Carlo table with standard errors
widths = [1, 4, 16, 64, 256, 1024]
table = dot_product_variance(widths, num_samples=10_000, generator=torch.Generator().manual_seed(0))

print(f"{'d_k':>5} | {'Var(q·k) ± SE':>18} | {'Var / d_k':>9} | {'SE / d_k':>8} | {'Var(q·k/√d_k) ± SE':>19} | {'|Var − d_k| / SE':>16}")
print("-" * 91)
for d, v, se, vs, ses in zip(table.d_k, table.variance.tolist(), table.stderr.tolist(),
                             table.variance_scaled.tolist(), table.stderr_scaled.tolist()):
    print(f"{d:>5} | {v:>9.2f} ± {se:<6.2f} | {v / d:>9.3f} | {se / d:>8.3f} | {vs:>10.3f} ± {ses:<6.3f} | {abs(v - d) / se:>16.2f}")
z = (table.variance - torch.tensor(widths, dtype=torch.float64)).abs() / table.stderr
print(f"largest |Var − d_k| / SE over the six widths: {z.max().item():.2f} (chance alone stays below about 3)")

# %% [markdown]
# The ratio column $\operatorname{Var}/d_k$ hovers around 1 at every width: the variance really grows in proportion to $d_k$. The last column says how many standard errors each estimate is from the theory. Chance alone puts an estimate more than 2 SE away about once in 20 and more than 3 SE away about once in 370, so among six widths one value above 2 (here 2.19 at $d_k = 64$) is unremarkable; a value above 3 would be a reason to doubt the theory.
#
# The error bar grows with $d_k$, and the column SE/$d_k$ shows it as a fraction of $d_k$. That fraction is largest at $d_k = 1$: there the score is a single product of two normals, whose heavy tails (fourth moment $\mathbb{E}[(q_rk_r)^4] = 9$) give $\operatorname{SE}/d_k \approx \sqrt{8/n} \approx 2.8\%$ (the table prints 0.031: its SE is itself estimated from the sample's own fourth moment, which heavy tails make noisy). It falls to about $\sqrt{3.5/n} \approx 1.9\%$ at $d_k = 4$ and settles at $\sqrt{2/n} \approx 1.4\%$ once the dot product is close to normal (exercise 3 derives all three). The scaled column has the same relative error bars, since it is the same samples divided by $\sqrt{d_k}$.
#
# The same table as a picture. $\operatorname{Var}(q\cdot k)/d_k$ is also the variance of the scaled score $q\cdot k/\sqrt{d_k}$ (same samples), so one series shows both; on a linear axis around the theory's 1, the $\pm 2$ SE bars are visible. Five of the six bars cross the dotted line; the bar of $d_k = 64$, 2.19 SE away, stops just short of it (at 0.997), which is what chance does about once in 20 widths:

# %% alt="Sampled Var(q\u00b7k)/d_k for d_k = 1 to 1024 (log axis) with \u00b12 SE error bars, all close to the dotted theoretical value 1."
# C05: the picture — Var(q·k)/d_k (= the variance of the scaled score) lies within about 2 SE of 1
fig, ax = plt.subplots(figsize=(5.6, 3.6), layout="constrained")
_ = variance_errorbars(table, ax)
reach = z <= 2                                                     # z from the table above
top = (table.variance + 2 * table.stderr) / torch.tensor(widths, dtype=torch.float64)
print(f"±2 SE bars that reach the theory's 1: {int(reach.sum())} of {len(widths)}")
for i in (~reach).nonzero().flatten().tolist():
    print(f"  d_k = {widths[i]}: {z[i].item():.2f} SE away, its bar ends at {top[i].item():.3f}")

# %% [markdown]
# ## 4. What a wide score spread does to softmax (饱和)
#
# Why care about the size of the scores? Because softmax only looks at *differences* between scores, and differences of size 30 are enormous on the exponential scale: $e^{30}\approx 10^{13}$. When the scores of one row spread over tens of units, the largest one (sometimes the largest two) takes essentially all the weight and the row becomes nearly **one-hot (独热)**: one weight close to 1, all others close to 0. This is called **saturation (饱和)** of the softmax.
#
# Two numbers describe how sharp a row $a$ is:
#
# - its **max weight** $\max_j a_j$: $1/S$ for a uniform row over $S$ keys, 1 for a one-hot row;
# - its **entropy (熵)** $H(a) = -\sum_j a_j \log a_j$: $\log S$ for a uniform row, 0 for a one-hot row.
#
# Here are two queries, each against 16 random keys at $d_k = 512$, once with the raw dot product and once with the scaled one. Beside the max weight and the entropy we print $\lVert J\rVert_F = \sqrt{\sum_{j,r} J_{jr}^2}$, the size (Frobenius norm) of the softmax Jacobian (雅可比矩阵) $J = \operatorname{diag}(a) - aa^\top$ that section 5 will use: it measures how much the row's weights move when its scores move.

# %%
# C06, C14: two rows at d_k = 512 — raw scores saturate the softmax (one fully, one onto two keys)
d_k, S = 512, 16
dt = torch.float32 if device.type == "mps" else torch.float64   # float64 where the device has it
v = torch.eye(S, dtype=dt, device=device)                 # (S, S): the output is then the weight row itself
print(f"uniform row over S = {S} keys: max weight {1 / S:.4f} | entropy {math.log(S):.4f} nats | "
      f"‖J‖_F = √(S−1)/S = {math.sqrt(S - 1) / S:.4f}")
for seed in (6, 1):
    gen = torch.Generator().manual_seed(seed)
    q = torch.randn(1, d_k, generator=gen).to(device=device, dtype=dt)   # (L=1, d_k)
    k = torch.randn(S, d_k, generator=gen).to(device=device, dtype=dt)   # (S, d_k)
    print(f"query of seed {seed}:")
    for label, scale in [("raw q·k    ", 1.0), ("q·k / √d_k ", 1 / math.sqrt(d_k))]:
        _, w = dot_product_attention(q, k, v, scale=scale)    # w: (1, S)
        scores = (q @ k.T * scale).cpu()
        print(f"  {label} score std {scores.std().item():6.2f} | max weight {max_weight(w).item():.4f} | "
              f"entropy {entropy(w).item():.4f} nats | ‖J‖_F {jacobian_norm(w).item():.4f}")
        print("               top 3 weights:", rounded(w[0].sort(descending=True).values[:3], 4))

# %% [markdown]
# The raw row of seed 6 is truly saturated: one key holds 0.9998 of the weight, and its $\lVert J\rVert_F = 0.0003$ is about a thousandth of the uniform row's 0.242. The raw row of seed 1 is sharp too, but it splits its weight between two keys (0.757 and 0.243), and such a row has *more* gradient than a uniform one: $\lVert J\rVert_F = 0.368$. The reason: for an even two-way split $a = (\tfrac12, \tfrac12, 0, \ldots)$ the Jacobian is $\begin{pmatrix} 1/4 & -1/4 \\ -1/4 & 1/4 \end{pmatrix}$ in the two live positions and 0 elsewhere, norm $0.5$; a uniform row over 16 keys spreads its sensitivity thinly, $\sqrt{S-1}/S = 0.242$. So $\lVert J\rVert$ first *rises* as a row sharpens from uniform onto a few keys, and vanishes only as the row approaches one-hot. Both scaled rows stay soft.
#
# The two seeds were *picked* to show one row of each kind. Which kind is typical? The same code over the seeds 0 to 49:

# %%
# C06: how typical are the two rows? The largest raw weight of the rows of seeds 0-49 (same code)
tops, top2 = [], []
for seed in range(50):
    gen = torch.Generator().manual_seed(seed)
    q = torch.randn(1, d_k, generator=gen).to(device=device, dtype=dt)   # (1, d_k)
    k = torch.randn(S, d_k, generator=gen).to(device=device, dtype=dt)   # (S, d_k)
    _, w = dot_product_attention(q, k, v, scale=1.0)
    tops.append(max_weight(w).item())
    top2.append(w[0].sort(descending=True).values[:2].sum().item())   # the two largest weights together
tops, top2 = torch.tensor(tops), torch.tensor(top2)
for lo, hi in [(0.99, 1.01), (0.85, 0.99), (0.5, 0.85), (0.0, 0.5)]:
    print(f"largest raw weight in [{lo:.2f}, {min(hi, 1.0):.2f}{']' if hi > 1 else ')'}: "
          f"{int(((tops >= lo) & (tops < hi)).sum())} of 50 rows")
shared = (tops >= 0.5) & (tops < 0.85)
print(f"the {int(shared.sum())} rows with largest weight in [0.50, 0.85): the two largest weights sum to",
      rounded(top2[shared].sort(descending=True).values, 2))

# %% [markdown]
# Saturation is the typical case: 38 of the 50 raw rows put at least 0.99 of their weight on one key, and only 7 share it out as the seed-1 row does (largest weight between 0.5 and 0.85), mostly between two keys: in 5 of those 7 the two largest weights sum to 1.0 (rounded to two decimals), and the other two keep 0.96 and 0.77 on their top two; no row stays below 0.5.
#
# One row is one sample. `softmax_sharpness` averages the max weight, the entropy and $\lVert J\rVert_F$ over 512 random queries (16 keys each), for every width from 1 to 1024, with and without the scale. The two columns use the same random draws (two generators with the same seed), so at $d_k = 1$, where the scale is $1/\sqrt1 = 1$, they must agree exactly:

# %%
# C06: averaged over queries — without the scale, larger d_k gives sharper rows
all_widths = [2**e for e in range(11)]
raw = softmax_sharpness(all_widths, scaled=False, num_keys=16, generator=torch.Generator().manual_seed(0))
scl = softmax_sharpness(all_widths, scaled=True, num_keys=16, generator=torch.Generator().manual_seed(0))

print(f"{'d_k':>5} | {'max weight raw':>14} {'scaled':>7} | {'entropy raw':>11} {'scaled':>7} | {'‖J‖_F raw':>9} {'scaled':>7}")
print("-" * 76)
for i, d in enumerate(all_widths):
    print(f"{d:>5} | {raw.max_weight[i].item():>14.3f} {scl.max_weight[i].item():>7.3f} | "
          f"{raw.entropy[i].item():>11.3f} {scl.entropy[i].item():>7.3f} | "
          f"{raw.jacobian_norm[i].item():>9.3f} {scl.jacobian_norm[i].item():>7.3f}")
same = max((raw.max_weight[0] - scl.max_weight[0]).abs().item(), (raw.entropy[0] - scl.entropy[0]).abs().item(),
           (raw.jacobian_norm[0] - scl.jacobian_norm[0]).abs().item())
print(f"d_k = 1, raw vs scaled: largest |difference| = {same:.1e} (same draws, scale 1)")
drops = raw.entropy[:-1] - raw.entropy[1:]
print(f"raw entropy at each doubling of d_k: smallest drop {drops.min().item():.3f} nats (> 0: it falls every time)")
print(f"scaled entropy over all widths: range {(scl.entropy.max() - scl.entropy.min()).item():.3f} nats (< 0.2)")
peak = int(raw.jacobian_norm.argmax())
print(f"raw ‖J‖_F: {raw.jacobian_norm[0].item():.3f} at d_k = 1, peak {raw.jacobian_norm[peak].item():.3f} "
      f"at d_k = {all_widths[peak]}, {raw.jacobian_norm[-1].item():.3f} at d_k = 1024")

# %% alt="Softmax entropy (left) and largest weight (right) against d_k: raw scores (red circles) collapse to one-hot weights as d_k grows, scaled scores (blue squares) stay spread."
# C06: the picture — entropy (left) and max weight (right) against d_k, raw (red circles) and scaled (blue squares)
fig, axes = plt.subplots(1, 2, figsize=(9.6, 3.6), layout="constrained")
_ = sharpness_curves(raw, scl, axes)

# %% [markdown]
# With the raw dot product the mean entropy falls from 2.49 nats at $d_k = 1$ (close to uniform, $\log 16 \approx 2.77$) to 0.08 nats at $d_k = 1024$, and the mean max weight climbs from 0.17 to 0.97. With the scale, both move far less (entropy between 2.35 and 2.49 nats, max weight between 0.17 and 0.25). The raw $\lVert J\rVert_F$ column first rises (0.286 → 0.334 at $d_k = 4$) and only then falls: the rows sharpen from near-uniform onto a few keys, the two-way-split effect above, before they approach one-hot.
#
# The scaled columns do drift, though, and not by chance, but most of it happens between $d_k = 1$ and $d_k = 16$: the max weight climbs from 0.174 to 0.240 and the entropy falls from 2.490 to 2.374 nats. From $d_k = 16$ to 1024 they level off (max weight 0.239 to 0.253, entropy 2.346 to 2.380, not monotone). The scaled scores have variance 1 *over all pairs* at every width, but the softmax sees one row at a time, and a row's sharpness depends on the spread of its own 16 scores, roughly $\lVert q\rVert$ times the spread of the keys, divided by $\sqrt{d_k}$. At small $d_k$ the length of a query varies a lot from one query to the next. The same draws, row by row:

# %%
# C06: variance 1 over all pairs is not variance 1 in every row — the spread of each scaled row's own scores
gen = torch.Generator().manual_seed(0)   # softmax_sharpness's seed: the same draws, scored by the same scores_for_widths
q_all = torch.randn(512, max(all_widths), generator=gen, dtype=torch.float64)   # (L, 1024), as in softmax_sharpness
k_all = torch.randn(16, max(all_widths), generator=gen, dtype=torch.float64)    # (S, 1024)
z_rows = scores_for_widths(q_all, k_all, all_widths, scaled=True)              # (widths, L, S)
row_sd = z_rows.std(dim=-1)                                                     # (widths, L): s.d. of each row's scores
lo, hi = torch.quantile(row_sd, torch.tensor([0.1, 0.9], dtype=torch.float64), dim=-1)   # (widths,) each
print(f"{'d_k':>5} | {'Var over all pairs':>18} | {'s.d. within a row: 10th - 90th percentile':>42} | {'mean max weight':>15}")
for i, d in enumerate(all_widths):
    if d in (1, 4, 16, 1024):
        print(f"{d:>5} | {z_rows[i].var().item():>18.2f} | {lo[i].item():>19.2f} - {hi[i].item():<20.2f} | "
              f"{max_weight(masked_softmax(z_rows[i])).mean().item():>15.3f}")

# %% [markdown]
# At $d_k = 1$ the middle 80 % of rows have a score spread anywhere from 0.13 to 1.59: many rows are nearly flat (a short query), a few are sharp, and the flat ones pull the mean max weight down to 0.174. At $d_k = 1024$ every query has nearly the same length, and the rows' spreads lie between 0.75 and 1.22, so the rows really do look alike. "Variance 1 over all pairs" is not "variance 1 in every row"; the scale removes the growth with $d_k$, which is what the raw columns show, not every difference between widths.
#
# ## 5. Why saturation hurts: the gradient vanishes (梯度消失)
#
# The last column of the table, $\lVert J\rVert_F$, is the size of the softmax **Jacobian** $J = \operatorname{diag}(a) - aa^\top$, the matrix that carries gradients from the weights back to the scores (notebook 03 derives it). For a one-hot row every entry of $J$ is 0 (and near one-hot, every entry is tiny, as for the seed-6 row above): nudging any score changes no weight, so a saturated row's scores, and through them its query and keys, receive almost no learning signal. That is the real reason for the scale: at initialisation, when $Q$ and $K$ are roughly random, the raw scores of a wide head would push most rows into this flat region before the network has learnt anything.
#
# Autograd tells the same story. Below, for 512 random queries against 16 keys, a loss $L = \sum_{i,j} g_{ij} a_{ij}$ with a fixed random upstream gradient $g$ is differentiated with respect to the scores, once raw and once scaled:

# %%
# C14: over 512 random rows at d_k = 512, far less gradient reaches the raw (saturated) scores
gen = torch.Generator().manual_seed(3)
d_k, S, L = 512, 16, 512
q = torch.randn(L, d_k, generator=gen).to(device)           # (L, d_k)
k = torch.randn(S, d_k, generator=gen).to(device)           # (S, d_k)
g_up = torch.randn(L, S, generator=gen).to(device)          # (L, S) a fixed upstream gradient dL/da
means = {}
for label, scale in [("raw q·k    ", 1.0), ("q·k / √d_k ", 1 / math.sqrt(d_k))]:
    z = (q @ k.T * scale).detach().requires_grad_(True)      # (L, S) the scores
    a = masked_softmax(z)
    (a * g_up).sum().backward()
    grad, jn = z.grad.norm(dim=-1), jacobian_norm(a.detach())   # (L,), (L,)
    means[label] = (grad.mean().item(), jn.mean().item())
    print(f"{label} mean ‖dL/dz‖ per row = {grad.mean().item():.3f}   mean ‖J‖_F = {jn.mean().item():.3f}   "
          f"mean max weight = {max_weight(a.detach()).mean().item():.3f}")
(g_raw, j_raw), (g_scl, j_scl) = means.values()
print(f"scaled / raw: mean gradient × {g_scl / g_raw:.1f}, mean ‖J‖_F × {j_scl / j_raw:.1f}")
print(f"scaled rows: largest ‖dL/dz‖ / (‖J‖_F ‖g‖) = {(grad / (jn * g_up.norm(dim=-1))).max().item():.2f} (a bound, not an equality)")
z = (q @ k.T * scale).detach().requires_grad_(True)            # the scaled scores again
(masked_softmax(z) * torch.ones_like(g_up)).sum().backward()    # g = 1 for every key: g along 1
ones = z.grad.norm(dim=-1).max().item()
print(f"scaled rows, g = (1, ..., 1): largest ‖dL/dz‖ {'< 1e-5' if ones < 1e-5 else f'= {ones:.1e}'} "
      f"(float32 rounding), at mean ‖J‖_F {j_scl:.3f}")

# %% [markdown]
# The raw rows pass about a fifth of the gradient the scaled rows pass *to their scores* (0.054 against 0.287 per row, a factor 5.3), and their mean $\lVert J\rVert_F$ falls by a similar factor (0.063 against 0.306, a factor 4.9). The size of $J$ sets the gradient *on average*, as an upper bound: row by row $\lVert J^\top g\rVert \le \lVert J\rVert_F\,\lVert g\rVert$, and for these scaled rows the gradient reaches at most 0.57 of that bound. A particular $g$ can get far less: one that is the same for every key ($g$ along $\mathbf 1$) gets nothing back at any $\lVert J\rVert$, since $J\mathbf 1 = 0$ (notebook 03 §3); the last line prints its gradient at float32 rounding level.
#
# The scores are not what training adjusts, though, and the two scores are not the same quantity: the raw score is $z = q\cdot k$, the scaled one $z = q\cdot k/\sqrt{d_k}$. So the gradient that reaches the queries and keys (and, through them, $W_Q$ and $W_K$) carries an extra factor $1/\sqrt{d_k}$ in the scaled layer only: $\partial L/\partial Q = HK/\sqrt{d_k}$ with $H = \partial L/\partial Z$ (notebook 03 §6), against $HK$ raw. Measured like for like, at the queries and keys, on the same draws and the same $g$ (in float64):

# %%
# C14, like for like: the gradient that reaches the queries and keys, raw against scaled (same q, k, g as above)
print(f"{'':11s} | {'‖dL/dz_i‖ mean':>14} {'median':>7} | {'‖dL/dq_i‖ mean':>14} {'median':>7} | "
      f"{'rows with ‖dL/dq_i‖ < 0.01':>26} | {'top 10 % rows: share of Σ‖dL/dq_i‖²':>35} | {'‖dL/dK‖_F':>9}")
for label, scale in [("raw q·k", 1.0), ("q·k / √d_k", 1 / math.sqrt(d_k))]:
    q64 = q.detach().cpu().double().requires_grad_(True)      # (L, d_k)
    k64 = k.detach().cpu().double().requires_grad_(True)      # (S, d_k)
    z = q64 @ k64.T * scale                                   # (L, S)
    z.retain_grad()
    (masked_softmax(z) * g_up.cpu().double()).sum().backward()
    gz, gq = z.grad.norm(dim=-1), q64.grad.norm(dim=-1)      # (L,), (L,)
    sq = (gq**2).sort(descending=True).values
    share = (sq[: L // 10].sum() / sq.sum()).item()
    print(f"{label:11s} | {gz.mean().item():>14.3f} {gz.median().item():>7.1e} | {gq.mean().item():>14.3f} {gq.median().item():>7.1e} | "
          f"{100 * (gq < 0.01).double().mean().item():>25.1f}% | {100 * share:>34.0f}% | {k64.grad.norm().item():>9.1f}")

# %% [markdown]
# Averaged over rows, the raw layer sends *more* gradient to its queries than the scaled one (1.226 against 0.286 per row) and more to its keys (76.1 against 7.0): there is no $1/\sqrt{d_k}$ in its chain rule. So "less gradient" is the wrong summary. What saturation does is **concentrate** the signal. Without the scale, 55.7 % of the queries get less than 0.01, the median row gets 2.6e-03 (about a hundredth of the scaled median, 2.7e-01), and a tenth of the rows carry 95 % of the squared gradient. Most queries get essentially nothing and stop moving, while a few unsaturated rows get large updates. With the scale no row gets less than 0.01, and the top tenth carry 30 %. The scale keeps every row trainable.
#
# > **Common mistake**: reading the $\sqrt{d_k}$ argument as a guarantee that every attention layer's scores have variance 1.
# > The derivation assumed independent components with mean 0 and variance 1, and $q$ independent of $k$. Trained queries and keys satisfy none of this exactly: their components have other variances, and a query is often *meant* to line up with some key. The scale fixes the dependence on $d_k$; it does not normalise the scores. Notebook 10 measures this in a trained model (see `10_real_heads.ipynb`, §7 "Var(q·k)/d_k in trained heads"): there $\operatorname{Var}(q\cdot k)/d_k$ is not 1, and it misses in both directions, from about 0.5 to over 100 across the 72 heads. Two departures from the model, measured here on random numbers:

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
# With variance-4 components the scaled score has variance $\sigma^4 = 16$, and with correlated $q$ and $k$ the scores are no longer centred at 0 at all: each term $q_r(q_r + 0.5k_r)$ has mean 1 and variance $2 + 0.25 = 2.25$, so the scaled score has mean $\sqrt{64} = 8$ and variance 2.25 (measured: 7.99 and 2.28). The scale is a sensible default that removes the width effect; what actually keeps trained scores in a good range is the combination of the scale with initialisation, normalisation layers and learning. T5 (Raffel et al., 2020), for one, computes $QK^\top$ without any scale and folds the $1/\sqrt{d_k}$ into the initialisation of $W_Q$ instead.
#
# ## 6. Try it: the scaling explorer
#
# Two sliders: **d_k** (powers of 2 from 1 to 1024) and **score ×**, the factor the raw score $q\cdot k$ is multiplied by: 1 (no scale), $1/\sqrt{d_k}$ (the Transformer's choice) or $1/d_k$. Both play in the browser, from frames computed once by the kernel. A checkbox, **fixed x-axis**, changes how the histogram is drawn (the kernel then recomputes the frames).
#
# - *top left*: a histogram of 2000 random scores (components i.i.d. $N(0,1)$, the same draws at every setting) with the normal curve of the variance the theory predicts, $c^2 d_k$ for a factor $c$.
#   - **Both axes follow the setting**: the x-axis spans $\pm 5$ theoretical standard deviations (read its tick labels: $\pm 80$ at $d_k = 256$ unscaled, $\pm 5$ scaled), the y-axis is chosen per setting, and scores beyond $\pm 5$ standard deviations are counted in the readout instead of being piled into end bins.
#   - So the histogram *looks* much the same at every width past the smallest few; only its tick labels grow. Tick **fixed x-axis** to see the growth itself: the axis then stays at the widest range the current factor reaches over all widths ($\pm 160$, i.e. $\pm 5\sqrt{1024}$, for the raw score; $\pm 5$ for the other two factors), and the raw histogram widens from a narrow spike at $d_k = 16$ to most of the axis at $d_k = 1024$, while the $1/d_k$ one shrinks into the two bins either side of 0. A bell narrower than one bin would be drawn as a single spike, so in this mode the curve is the normal density averaged over each bin, the height the bars should have.
#   - The theory predicts only the *variance*. At $d_k = 1$ a score is the product of two normals, with a sharp peak at 0 and heavy tails, visibly not the bell; the bell shape appears as $d_k$ grows, because a sum of many independent terms is close to normal (the central limit theorem, 中心极限定理), not because the variance argument says so.
# - *top right*: the softmax row of one query over 16 keys. One row is one sample and jumps about from width to width; the dashed red line is the mean max weight of the 256 rows of the bottom panels, which does not.
# - *bottom*: the mean entropy and the mean $\lVert J\rVert_F$ of 256 such rows against $d_k$, for the three factors (red: 1, blue: $1/\sqrt{d_k}$, grey dashed: $1/d_k$); the circle marks the current setting. With $1/d_k$ the scores shrink towards 0 as $d_k$ grows (variance $1/d_k$), so every row flattens towards uniform: entropy climbs to $\log S$ and $\lVert J\rVert_F$ settles at the uniform row's 0.242, whatever the scores say. Only the square root keeps the variance at 1 for every width.
#
# The readout lists the scale factor, the histogram's half-range, the sampled and theoretical variance of the scores and their ratio, the max weight, entropy and Jacobian norm of the row on the right, the two means of the bottom panels and the mean max weight of the dashed line.

# %% alt="The scaling explorer: a histogram of sampled scores with the theoretical normal curve, one query's softmax row, and mean entropy and mean gradient norm against d_k for three scalings."
# NBVAL_IGNORE_OUTPUT
explorer = scaling_explorer()
explorer

# %% [markdown]
# The numbers of the starting setting ($d_k = 256$, factor 1) and of the two other factors at the same width, computed by the explorer's pure function (`explorer.state(...)` moves nothing on screen):

# %%
# C05, C06, C14: the explorer's readout at d_k = 256 for the three scale factors; then, x-axis fixed, the spread at three widths
for scale in ["1", "1/√d_k", "1/d_k"]:
    s = explorer.state(d_k=256, scale=scale)
    var = s['Var(score), theory']                                  # 256, 1 or 1/256
    theory = f"{var:g}" if var >= 1 else f"1/{round(1 / var)} = {var:.4f}"
    print(f"score × {scale:6s}: Var sampled/theory {s['sampled / theory']:.3f} (theory {theory}) | "
          f"row: max weight {s['row: max weight']:.3f}, entropy {s['row: entropy (nats)']:.3f} | "
          f"256 rows: mean entropy {s['256 rows: mean entropy']:.3f}, mean ‖J‖_F {s['256 rows: mean ||J||_F']:.3f}")
for scale in ["1", "1/d_k"]:
    fixed = [explorer.state(d_k=d, scale=scale, fixed_axis=True) for d in (16, 256, 1024)]
    halves = ", ".join(f"±{st['histogram half-range']:g}" for st in fixed)
    print(f"fixed x-axis, score × {scale:5s}: half-range {halves}; "
          f"sampled sd of the scores at d_k = 16, 256, 1024: "
          + ", ".join(f"{st['Var(score), sampled'] ** 0.5:.3f}" for st in fixed))

# %% [markdown]
# ## Exercises
#
# 1. **(widget)** With the factor at 1, move $d_k$ from 1 to 1024 and watch the row on the right. At about which $d_k$ does the *mean* entropy (bottom left) drop below 1 nat? Then set the factor to $1/\sqrt{d_k}$, and then to $1/d_k$: what happens to the histogram's tick labels and to the markers? Finally, with the factor back at 1, tick **fixed x-axis** and move $d_k$ again.
#
# <details><summary>Answer</summary>
#
# The red curve reaches 1 nat at about $d_k = 16$: it is about 1.25 nats at $d_k = 8$ and 0.99 at $d_k = 16$ (the table of section 4, from other random draws, gives 1.36 and 0.92). With $1/\sqrt{d_k}$ the histogram's x-axis stays at $\pm 5$ (variance 1) at every $d_k$, and the marker sits on the flat blue curve, between 2.27 and 2.49 nats: the rows look alike whatever the width. With $1/d_k$ the axis shrinks to $\pm 5/\sqrt{d_k}$ ($\pm 0.156$ at $d_k = 1024$) and the marker climbs the grey curve to $\log 16 \approx 2.77$: every row is nearly uniform, and $\lVert J\rVert_F$ sits at the uniform value 0.242.
#
# The single row on the right is one query, and it need not sharpen at every step: with the factor at 1 its max weight is 0.92 at $d_k = 256$, only 0.38 at $d_k = 512$ (there its three largest scores happen to lie within 0.5 of one another, so the weight splits 0.38, 0.38, 0.24) and 1.00 at $d_k = 1024$. The mean over 256 rows is what changes steadily: the dashed line (their mean max weight) climbs and the mean entropy below falls (the mean $\lVert J\rVert_F$ first rises, from 0.285 at $d_k = 1$ to 0.316 at $d_k = 2$, and only then falls).
#
# With the x-axis fixed at $\pm 160$ the raw histogram visibly widens: its sampled standard deviation is 3.986 at $d_k = 16$, 16.148 at 256 and 32.962 at 1024, close to $\sqrt{d_k} = 4, 16, 32$ (the numbers cell above prints them).
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
# For a nearly normal sample with variance $\sigma^2 = d_k$, $\operatorname{SE}(s^2) = \sqrt{2\sigma^4/(n-1)} \approx d_k\sqrt{2/n}$. With $n = 10\,000$ that is $0.0141\,d_k$: 14.5 at $d_k = 1024$, close to the 14.3 in the table. (The exact fourth moment is $3d_k^2 + 6d_k$, which adds a correction for small $d_k$: $\operatorname{Var}(s^2) \approx (m_4 - d_k^2)/n = (2d_k^2 + 6d_k)/n$, so $\operatorname{SE}/d_k \approx \sqrt{(2 + 6/d_k)/n}$: $\sqrt{8/n} \approx 0.028$ at $d_k = 1$, $\sqrt{3.5/n} \approx 0.019$ at $d_k = 4$, and $\sqrt{2/n}$ for large $d_k$.)
# </details>
#
# 4. A query is compared with itself: what are the mean and variance of $q\cdot q$ when $q$ has $d_k$ independent $N(0,1)$ components?
#
# <details><summary>Answer</summary>
#
# $q\cdot q = \sum_r q_r^2$ is a chi-squared variable with $d_k$ degrees of freedom: mean $d_k$, variance $2d_k$. Unlike $q\cdot k$ it is not centred at 0. This is the self-score only when queries and keys come from the *same* projection, $W_Q = W_K$ (then $e_{ii} = \lVert x_iW_Q\rVert^2 \ge 0$), and then a token's score with itself tends to stand out. With separate $W_Q$ and $W_K$, as in a Transformer, $e_{ii} = x_iW_QW_K^\top x_i^\top$ has mean 0 at random initialisation; notebook 01 (`01_qkv_roles.ipynb`, §3) shows what tied projections do to the score matrix (it becomes symmetric).
# </details>
