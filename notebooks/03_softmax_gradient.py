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
# # 03 · Softmax and its gradient
#
# **What you will learn**
#
# - how a row of scores becomes weights, and why adding a constant to the whole row changes nothing;
# - why every real implementation subtracts the row maximum first, and what happens if it does not (in float32, `exp` overflows above a logit of about 88.7, so a row of logits near 1000 gives `nan`);
# - the softmax Jacobian $\partial a_j/\partial z_r = a_j(\delta_{jr} - a_r)$, i.e. $J = \operatorname{diag}(a) - aa^\top$, checked against autograd, and why its rows sum to 0 (weights compete);
# - why a saturated, nearly one-hot row passes almost no gradient when its weights are used linearly (as attention uses them), and why cross-entropy after a softmax is different;
# - the three gradient paths of attention (lecture notes 000 (*Chapter 2: the mathematics of attention*) §7): to $V$ (the content path) and, through the weights $A$, to $Q$ and $K$ (the matching path); the five backward lines, intermediates $\partial L/\partial A$ and $\partial L/\partial Z$ included, written by hand and compared with autograd.
#
# **Lecture notes taught:** lecture notes 000 (*Chapter 2: the mathematics of attention*) §4 (from matching scores to normalised weights) and §7 (what the softmax gradient means).
#
# **Read first:** `02_scaling_variance.ipynb` (why scores are divided by $\sqrt{d_k}$).
#
# **Time:** about 60 minutes.

# %%
# %matplotlib inline
import math

import matplotlib.pyplot as plt
import torch

from attnlib import (
    attention_backward,
    default_device,
    dot_product_attention,
    masked_softmax,
    set_seed,
    softmax_jacobian,
)
from attnlib.course.examples import DEFAULT_LOGITS
from attnlib.course.scaling import jacobian_norm, spread_jacobians, spread_logits
from attnlib.plotting import jacobian_panels
from attnlib.util.rounding import rounded
from attnlib.widgets import jacobian_explorer

set_seed(0)
device = default_device()
# float64 where the device has it (MPS does not), so gradient checks are tight.
dtype = torch.float32 if device.type == "mps" else torch.float64


def below(err: float, bound: float) -> str:
    """A float error as a bound: the exact value varies in its last bits from one CPU/GPU to another."""
    return f"< {bound:.0e}" if err < bound else f"= {err:.1e}, NOT below {bound:.0e}"


# %% [markdown]
# ## 1. From scores to weights
#
# Fix one query $i$. Its scaled scores $z_{i1}, \ldots, z_{iS}$ against the $S$ keys it may read become **attention weights (注意力权重)** by a softmax taken along the key axis:
#
# $$
# a_{ij} = \frac{\exp(z_{ij})}{\sum_{r=1}^{S}\exp(z_{ir})}, \qquad
# o_i = \sum_{j=1}^{S} a_{ij}\, v_j .
# $$
#
# Every $a_{ij}$ is non-negative and each row sums to 1, so, without attention dropout, the output $o_i$ is a weighted average of the value rows, a **convex combination (凸组合)** of them (notebook 04 looks at it closely). The output projection keeps this for one head: $o_i W_O = \sum_j a_{ij}\,(v_j W_O)$ is a convex combination of the projected values $v_j W_O$ (notebook 04 checks it). What a Transformer does next is not bound by it: the sum over several heads, the residual connection and the feed-forward layer. In exact arithmetic a finite score always gets a strictly positive weight, but a computer can return an exact 0: in float32, $e^{x}$ underflows to 0 once $x$ is about 104 below the row maximum, and a key hidden by a mask gets weight exactly 0 by construction (notebook 05). So $a_{ij} \ge 0$, not $a_{ij} > 0$:

# %%
# a_ij >= 0, not > 0: a score 200 below the row max underflows to 0 in float32; a hidden key gets exactly 0
far = [0.0, -20.0, -200.0]
for dt_far in (torch.float64, torch.float32):
    w_far = masked_softmax(torch.tensor(far, dtype=dt_far))
    print(f"{str(dt_far):14s} softmax({far}) = [{', '.join(f'{x:.2g}' for x in w_far.tolist())}]")
visible = torch.tensor([True, True, False])                  # True = may attend: key 3 is hidden
print("softmax([1, 0.5, 2]) with key 3 hidden =", rounded(masked_softmax(torch.tensor([1.0, 0.5, 2.0]), visible), 4))

# %% [markdown]
# From here on we drop the index $i$ and write one row as $z \mapsto a = \operatorname{softmax}(z)$.
#
# **Shift invariance (平移不变).** Adding the same constant $c$ to every score of a row multiplies numerator and denominator by $e^{c}$, which cancels:
# $\operatorname{softmax}(z + c\mathbf{1}) = \operatorname{softmax}(z)$. Only differences between scores matter.

# %%
# C08: softmax is unchanged by adding a constant to the whole row
z = torch.tensor([2.0, 1.0, 0.1, -1.5], dtype=dtype, device=device)
for c in [0.0, 10.0, -7.5, 500.0]:
    print(f"c = {c:>6}: softmax(z + c) = {rounded(masked_softmax(z + c), 4)}")

# %% [markdown]
# ## 2. Overflow (溢出), and the numerically stable (数值稳定) form
#
# The formula as written is fine on paper and fragile in a computer. In float32, $e^{x}$ is only representable up to $x \approx 88.7$; beyond that it becomes `inf`. That limit is not far away: without the scale, the raw scores of a 1024-wide head with unit-variance components have standard deviation 32 (notebook 02), so 88.7 is less than 3 standard deviations out, and trained weights can push scores further. Once a logit overflows, the denominator is $\infty$ and that logit's weight is $\infty/\infty$, which is `nan`; in the cell below every logit is near 1000, so the whole row is `nan`.
#
# The fix uses shift invariance: subtract the row maximum $m = \max_j z_j$ before exponentiating,
#
# $$
# a_j = \frac{\exp(z_j - m)}{\sum_r \exp(z_r - m)} .
# $$
#
# Now the largest exponent is $e^0 = 1$, nothing overflows, the denominator is at least 1, and by section 1 the result is mathematically the same. `attnlib.masked_softmax` (like `torch.softmax`) does exactly this.
#
# > **Common mistake**: writing softmax as `exp(z) / exp(z).sum()` straight from the formula.
# > It agrees with the stable form for small logits and silently returns `nan` for large ones:

# %%
# C08: naive exp overflows near logit 1000 in float32; the max-subtracted form does not
print("largest float32 x with finite exp(x):", round(math.log(torch.finfo(torch.float32).max), 2))
for z in ([1000.0, 999.0, 998.0], [3.0, 2.0, 1.0]):
    z32 = torch.tensor(z, dtype=torch.float32, device=device)
    naive = torch.exp(z32) / torch.exp(z32).sum()          # the formula, taken literally
    print(f"z = {z}")
    print(f"   exp(z)           = {rounded(torch.exp(z32), 2)}")
    print(f"   naive softmax    = {rounded(naive, 4)}")
    print(f"   masked_softmax   = {rounded(masked_softmax(z32), 4)}")
gap = (masked_softmax(torch.tensor([1000.0, 999.0, 998.0])) - masked_softmax(torch.tensor([3.0, 2.0, 1.0]))).abs().max().item()
print(f"softmax(1000 + [0, -1, -2]) vs softmax([3, 2, 1]): max |difference| {below(gap, 1e-6)} (float32)")

# %% [markdown]
# ## 3. The softmax Jacobian (雅可比矩阵)
#
# How does weight $a_j$ react when score $z_r$ moves? Write $a_j = e^{z_j}/Z$ with $Z = \sum_s e^{z_s}$, so $\partial Z/\partial z_r = e^{z_r}$. The quotient rule gives
#
# $$
# \frac{\partial a_j}{\partial z_r}
# = \frac{\delta_{jr}\, e^{z_j} Z - e^{z_j} e^{z_r}}{Z^2}
# = a_j\,\delta_{jr} - a_j a_r
# = a_j(\delta_{jr} - a_r),
# $$
#
# where $\delta_{jr}$ is 1 if $j = r$ and 0 otherwise. As a matrix,
#
# $$
# J = \operatorname{diag}(a) - a a^\top .
# $$
#
# Read it entry by entry: the diagonal $a_j(1 - a_j)$ is positive (raising your own score raises your weight), and every off-diagonal entry $-a_j a_r$ is negative (raising someone else's score lowers yours). `attnlib.softmax_jacobian` builds $J$ from the weights; here it is against `torch.autograd.functional.jacobian`, which differentiates the softmax exactly (up to rounding) by the chain rule (链式法则) through the computation graph (计算图), not by finite differences:

# %%
# C13: softmax_jacobian(a) = diag(a) - a aᵀ equals autograd's Jacobian of softmax
z = torch.tensor([2.0, 1.0, 0.2, -0.6, -1.5], dtype=dtype, device=device)
a = masked_softmax(z)
J_ours = softmax_jacobian(a)                                             # (S, S)
J_auto = torch.autograd.functional.jacobian(lambda x: torch.softmax(x, dim=-1), z)
print("weights a:", rounded(a, 4))
print("J (row j = a_j, column r = z_r):")
for row in rounded(J_ours, 4):
    print("   ", row)
tol = 1e-6 if dtype == torch.float32 else 1e-12                      # a few ulps of entries <= 1/4
print(f"max |J_ours - J_autograd| {below((J_ours - J_auto).abs().max().item(), tol)}")

# %% [markdown]
# **Rows and columns sum to zero, for two different reasons.**
#
# - *Rows: shift invariance.* Summing row $j$, $\sum_r \partial a_j/\partial z_r = \sum_r a_j(\delta_{jr} - a_r) = a_j - a_j\sum_r a_r = 0$, i.e. $J\mathbf{1} = 0$: moving every score by the same amount changes no weight (section 1).
# - *Columns: the budget.* Summing column $r$, $\sum_j \partial a_j/\partial z_r = a_r - a_r\sum_j a_j = 0$, i.e. $\mathbf{1}^\top J = 0$: this is the constraint $\sum_j a_j = 1$ seen from the other side. Whatever one score does, the weights cannot all go up together. Attention is a **competition (竞争)** for a fixed budget of weight.
#
# The two statements coincide here only because $J$ is symmetric ($a_j a_r = a_r a_j$); the cell prints both sums and the symmetry.

# %%
# C13: rows and columns of J sum to 0 (J is symmetric) — raising one score lowers the others
print("row sums of J:   ", rounded(J_ours.sum(dim=-1), 6))      # J 1 = 0: shift invariance
print("column sums of J:", rounded(J_ours.sum(dim=0), 6))       # 1ᵀJ = 0: the budget sum_j a_j = 1
print("max |J - Jᵀ|:    ", (J_ours - J_ours.T).abs().max().item())         # a_j a_r = a_r a_j exactly
dz = torch.zeros_like(z)
dz[0] = 0.1                                                              # raise score z_1 a little
print("a(z + 0.1 e_1) - a(z):", rounded(masked_softmax(z + dz) - a, 4))
print("J @ (0.1 e_1):        ", rounded(J_ours @ dz, 4))

# %% [markdown]
# Raising $z_1$ by 0.1 raises $a_1$ and lowers every other weight, in proportion to how much weight each had; the Jacobian predicts the change to first order.
#
# > **Common mistake**: differentiating softmax element by element, as if $a_j$ depended only on $z_j$ (using only the diagonal $a_j(1-a_j)$).
# > That drops the competition terms $-a_j a_r$, and the gradient that reaches the scores is wrong. Below, $g = \partial L/\partial a$ is a fixed **upstream gradient (上游梯度)**, what the loss sends back to the weights; the scores receive $J^\top g$:

# %%
# C13: the diagonal-only "derivative" is wrong; the full Jacobian matches autograd
g = torch.tensor([1.0, -2.0, 0.5, 0.0, 3.0], dtype=dtype, device=device)   # an upstream gradient dL/da
zz = z.clone().requires_grad_(True)
(masked_softmax(zz) * g).sum().backward()
print("autograd dL/dz:           ", rounded(zz.grad, 4))
print("full Jacobian  Jᵀ g:      ", rounded(J_ours.T @ g, 4))
print("diagonal only a(1-a) * g: ", rounded(a * (1 - a) * g, 4))

# %% [markdown]
# ## 4. Saturation: when the gradient vanishes (梯度消失)
#
# When one weight approaches 1 and the rest approach 0, every entry of $J$ goes to 0: the diagonal $a_j(1-a_j)$ is tiny both for $a_j \approx 1$ and for $a_j \approx 0$, and so are all products $a_j a_r$. The scores then get almost no gradient from any upstream gradient $\partial L/\partial a$ of ordinary size. Attention delivers exactly that, because it uses its weights *linearly*: $O = AV$, so $\partial L/\partial A = GV^\top$ carries no factor that grows as a weight shrinks. Largest possible entry: $a_j(1-a_j) \le 1/4$, reached at $a_j = 1/2$.
#
# Below, the same five logits are stretched so that their standard deviation (their **spread** $\sigma$) grows. Dividing logits by a **temperature (温度)** $T$ does the same job, so $\sigma$ plays the role of $1/T$: $\sigma = 0$ gives a uniform row, large $\sigma$ a nearly one-hot one.

# %%
# C14: as the row saturates, every Jacobian entry (and so the gradient to the scores) shrinks
z0 = torch.tensor(DEFAULT_LOGITS, dtype=dtype, device=device)
print(f"{'spread σ':>8} | {'max weight':>10} | {'largest |J_jr|':>14} | {'‖J‖_F':>7}")
print("-" * 50)
for sigma in [0.0, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0]:
    a_s = masked_softmax(spread_logits(z0, sigma))
    J_s = softmax_jacobian(a_s)
    print(f"{sigma:>8.1f} | {a_s.max().item():>10.4f} | {J_s.abs().max().item():>14.4f} | {jacobian_norm(a_s).item():>7.4f}")

# %% [markdown]
# > **Common mistake**: concluding that a saturated softmax always kills learning.
# > In a classifier the softmax is followed by the cross-entropy (交叉熵) $\mathrm{CE} = -\log a_y$ ($y$ the correct class). Its upstream gradient $\partial\mathrm{CE}/\partial a_y = -1/a_y$ is *not* bounded: it grows exactly as fast as row $y$ of $J$ (every entry of which carries the factor $a_y$) shrinks, and the two combine to $\partial\mathrm{CE}/\partial z = a - y_{\text{one-hot}}$, which does not vanish when the row is confidently wrong. Below, the $\sigma = 8$ row of the table (key 1 takes 0.9986) with the correct answer at key 2:

# %%
# C14's limit: a saturated row passes almost nothing to a linear loss, but plenty to cross-entropy
z8 = spread_logits(z0, 8.0).detach().requires_grad_(True)      # (S,) the saturated row of the table
y = 1                                                          # the correct key is key 2 (index 1)
(g_lin,) = torch.autograd.grad(masked_softmax(z8)[y], z8)       # L = a_y, used linearly
(g_ce,) = torch.autograd.grad(-torch.log(masked_softmax(z8)[y]), z8)   # L = CE = -log a_y
a8, y_onehot = masked_softmax(z8).detach(), torch.nn.functional.one_hot(torch.tensor(y), len(z0)).to(device=device, dtype=dtype)
print("weights a:              ", rounded(a8, 4))
print(f"L = a_2:      dL/dz = {rounded(g_lin, 4)}   ‖dL/dz‖ = {g_lin.norm().item():.4f}")
print(f"L = -log a_2: dL/dz = {rounded(g_ce, 4)}   ‖dL/dz‖ = {g_ce.norm().item():.4f}")
print(f"cross-entropy: max |dL/dz - (a - y)| {below((g_ce - (a8 - y_onehot)).abs().max().item(), 1e-12 if dtype == torch.float64 else 1e-6)}")

# %% [markdown]
# The same saturated row passes a gradient of norm 0.0020 to the linear loss and 1.41 to the cross-entropy (in the key-1 and key-2 entries, +0.9986 and −0.9986): the log undoes the saturation. Attention uses its weights linearly, so for attention the small-gradient argument holds; it is the reason for the scale, not a statement about every softmax.

# %% [markdown]
# This is why notebook 02 insisted on the $1/\sqrt{d_k}$ factor: without it, the scores of a wide head spread over tens of units at initialisation and most rows saturate. A saturated row passes almost no gradient to its query and its keys, so most positions stop adapting, while the few unsaturated rows carry the whole signal (notebook 02 §5 measures this like for like, at the queries and keys: averaged over rows the raw layer even passes more, but through a few of its rows). The key picture shows $J$ for a soft, a peaked and a saturated row on one colour scale, $[-1/4, 1/4]$ in cividis as in the explorer below (bright: positive, dark: negative):

# %% alt="The softmax Jacobian as three heatmaps on one colour scale, for logit spreads \u03c3 = 0.5, 2 and 6: the larger the spread, the closer the Jacobian is to zero."
# C13, C14: the picture — J for σ = 0.5, 2 and 6, on one colour scale
fig, axes = plt.subplots(1, 3, figsize=(10.5, 3.4), layout="constrained")
_ = jacobian_panels(spread_jacobians(DEFAULT_LOGITS, [0.5, 2.0, 6.0]), axes)

# %% [markdown]
# ## 5. Try it: the Jacobian explorer
#
# Drag **logit spread σ** from 0 (uniform row) to 10 (nearly one-hot); the slider plays in the browser from frames the kernel computed once. Two menus choose the **base logits** (the five logits of section 4, or the same row with its top two tied) and the **upstream** gradient $g = \partial L/\partial a$ (the loss $L = a_1$, $L = a_2$, or a fixed mixed vector). The four panels stand in one row, from left to right:
#
# - *first*: the weights $a = \operatorname{softmax}(z)$;
# - *second*: $J = \operatorname{diag}(a) - aa^\top$ with its entries written in, on a fixed colour scale $[-1/4, 1/4]$ (cividis, readable in grey): the diagonal is bright (positive), off-diagonal entries dark (negative), and everything drifts to the mid-grey of 0 as the row saturates;
# - *third*: the upstream $g$ (grey) beside the gradient that reaches the scores, $\partial L/\partial z = J^\top g = a \odot (g - a\cdot g)$ (blue). With $L = a_1$ only $a_1$ is asked to grow, yet *every* score gets a gradient: $z_1$ up, all the others down, summing to 0. That is the competition of section 3, seen as gradient;
# - *fourth*: $\lVert J\rVert_F$ (red), the max weight (blue dashed) and $\lVert\partial L/\partial z\rVert$ (dark grey) against $\sigma$, with the current $\sigma$ marked.
#
# With the tied base row the max weight only approaches 1/2 and $\lVert J\rVert_F$ approaches 0.5 however large $\sigma$ gets (0.5000 at $\sigma = 8$, printed below): the two tied keys stay sensitive to each other (the two-way split of notebook 02), while the norm of the untied row collapses (0.0028 at $\sigma = 8$). The readout prints the logits, the weights, $J$, its row sums (always 0), $g$, $\partial L/\partial z$ and its sum (always 0), and the norms.

# %% alt="The Jacobian explorer: the softmax weights as bars, the Jacobian J as a heatmap, the upstream gradient g beside the gradient J\u1d40g that reaches the logits, and \u2016J\u2016_F, the largest weight and \u2016\u2202L/\u2202z\u2016 against the logit spread \u03c3, where the gradient dies as the row saturates."
# NBVAL_IGNORE_OUTPUT
explorer = jacobian_explorer()
explorer

# %%
# C13, C14: the explorer's numbers at three spreads, from its pure function (nothing on screen moves)
for sigma in [0.0, 1.0, 8.0]:
    state = explorer.state(spread=sigma)
    print(f"σ = {sigma}: weights {[round(x, 3) + 0.0 for x in state['weights a']]}, "
          f"largest |row sum| {below(max(abs(x) for x in state['row sums of J']), 1e-12)}, ‖J‖_F {state['‖J‖_F']:.4f}, "
          f"L = a1: dL/dz {[round(x, 3) + 0.0 for x in state['∂L/∂z = Jᵀg']]}")
tie = explorer.state(spread=8.0, base="tie")
print(f"top two tied, σ = 8.0: weights {[round(x, 3) + 0.0 for x in tie['weights a']]}, ‖J‖_F {tie['‖J‖_F']:.4f}")

# %% [markdown]
# ## 6. The three gradient paths through attention
#
# Now the whole single-head layer, $Z = QK^\top/\sqrt{d_k}$, $A = \operatorname{softmax}(Z)$ row by row, $O = AV$, with some loss $L$ downstream and its upstream gradient $G = \partial L/\partial O$ (same shape as $O$). Lecture notes 000 §7 speak of **three gradient paths (梯度通路)** and write out the gradients to $V$ and to $A$, then, through $H = \partial L/\partial Z$, to $Q$ and $K$. We count the paths by where they end, at the three inputs $V$, $Q$ and $K$; $\partial L/\partial A$ and $\partial L/\partial Z$ are then intermediates on the way to $Q$ and $K$. Follow the graph backwards, with $s = 1/\sqrt{d_k}$:
#
# 1. $O = AV$ is a matrix product, so the **content path** gets $\dfrac{\partial L}{\partial V} = A^\top G$, and the weights get $\dfrac{\partial L}{\partial A} = G V^\top$.
# 2. Each row goes through softmax, so row $i$ of $H = \partial L/\partial Z$ is $J_i^\top (\partial L/\partial A)_i$ with $J_i = \operatorname{diag}(a_i) - a_i a_i^\top$. Since $J_i$ is symmetric this simplifies to $H = A \odot \big(\partial L/\partial A - \operatorname{rowsum}(A \odot \partial L/\partial A)\big)$.
# 3. $Z = QK^\top s$, so the **matching path** gets $\dfrac{\partial L}{\partial Q} = HK\,s$ and $\dfrac{\partial L}{\partial K} = H^\top Q\,s$.
#
# So one backward pass trains both *what is passed on* (through $V$) and *how queries and keys match* (through $Q$ and $K$); from there the gradients flow on into $W_Q$, $W_K$, $W_V$ and the inputs. The cell below writes the five lines out and checks each one against autograd, the two intermediates included: `A.retain_grad()` keeps autograd's $\partial L/\partial A$, and a copy of the scores made a leaf gives autograd's $\partial L/\partial Z$. `attnlib.attention_backward` is the same five lines:

# %%
# C15: the five backward lines, written out, each against autograd
gen = torch.Generator().manual_seed(0)
L_q, S_k, d_k, d_v = 4, 6, 8, 5
q = torch.randn(L_q, d_k, generator=gen, dtype=torch.float64).to(device=device, dtype=dtype).requires_grad_(True)
k = torch.randn(S_k, d_k, generator=gen, dtype=torch.float64).to(device=device, dtype=dtype).requires_grad_(True)
v = torch.randn(S_k, d_v, generator=gen, dtype=torch.float64).to(device=device, dtype=dtype).requires_grad_(True)
G = torch.randn(L_q, d_v, generator=gen, dtype=torch.float64).to(device=device, dtype=dtype)   # dL/dO
s = 1 / math.sqrt(d_k)

out, A = dot_product_attention(q, k, v)               # A is the graph's own weight tensor
A.retain_grad()                                       # keep autograd's dL/dA
out.backward(G)                                       # autograd: L = sum(G * O)
Z = (q @ k.T * s).detach().requires_grad_(True)       # (L, S) the scores as a leaf: autograd's dL/dZ
(masked_softmax(Z) @ v.detach()).backward(G)

with torch.no_grad():
    Qd, Kd, Vd, Ad = q.detach(), k.detach(), v.detach(), A.detach()
    dV = Ad.T @ G                                     # (S, d_v)  content path
    dA = G @ Vd.T                                     # (L, S)    intermediate
    H = Ad * (dA - (Ad * dA).sum(-1, keepdim=True))   # (L, S)    dL/dZ: the softmax backward
    dQ = H @ Kd * s                                   # (L, d_k)  matching path
    dK = H.T @ Qd * s                                 # (S, d_k)  matching path

tol = 1e-5 if dtype == torch.float32 else 1e-10
for name, ours, auto in [("dV = AᵀG", dV, v.grad), ("dA = GVᵀ", dA, A.grad), ("H = A ⊙ (dA − rowsum)", H, Z.grad),
                         ("dQ = HK·s", dQ, q.grad), ("dK = HᵀQ·s", dK, k.grad)]:
    print(f"{name:22s} shape {str(tuple(ours.shape)):8s} max |ours - autograd| {below((ours - auto).abs().max().item(), tol)}")
lib = attention_backward(Qd, Kd, Vd, Ad, G)
print("attnlib.attention_backward vs the lines above: max |difference|",
      below(max((a - b).abs().max().item() for a, b in zip(lib, (dQ, dK, dV))), tol))
print("dL/dV row 1, ours:    ", rounded(dV[0], 4))
print("dL/dV row 1, autograd:", rounded(v.grad[0], 4))
print("dL/dQ row 1, ours:    ", rounded(dQ[0], 4))
print("dL/dQ row 1, autograd:", rounded(q.grad[0], 4))

# %% [markdown]
# **On to the parameters.** Lecture notes 000 §7 end with the remark that these gradients travel on, through linear layers, to the projection weights (投影权重) and the input representations. With row vectors, $Q = X_q W_Q$, $K = X_s W_K$ and $V = X_s W_V$ ($X_q$ the query-side inputs, $X_s$ the source the keys and values are read from). A linear map $Y = XW$ passes back $\partial L/\partial W = X^\top\,\partial L/\partial Y$ and $\partial L/\partial X = \partial L/\partial Y\,W^\top$, so
#
# $$
# \frac{\partial L}{\partial W_Q} = X_q^\top \frac{\partial L}{\partial Q},\qquad
# \frac{\partial L}{\partial W_K} = X_s^\top \frac{\partial L}{\partial K},\qquad
# \frac{\partial L}{\partial W_V} = X_s^\top \frac{\partial L}{\partial V},\qquad
# \frac{\partial L}{\partial X_s} = \frac{\partial L}{\partial K}W_K^\top + \frac{\partial L}{\partial V}W_V^\top ,
# $$
#
# the last one a sum because $X_s$ feeds both $K$ and $V$ (in self-attention, $X_q = X_s$, the query term $\partial L/\partial Q\,W_Q^\top$ joins the sum). Against autograd:

# %%
# C15, the last step: dQ, dK, dV flow on through the projections into W_Q, W_K, W_V and the inputs
gen = torch.Generator().manual_seed(1)
d_model = 7
shapes = [(L_q, d_model), (S_k, d_model), (d_model, d_k), (d_model, d_k), (d_model, d_v)]
X_q, X_s, W_Q, W_K, W_V = (torch.randn(*shape, generator=gen, dtype=torch.float64).to(device=device, dtype=dtype)
                           .requires_grad_(True) for shape in shapes)    # seeded on the CPU, then moved
Q_p, K_p, V_p = X_q @ W_Q, X_s @ W_K, X_s @ W_V       # (L, d_k), (S, d_k), (S, d_v)
out_p, A_p = dot_product_attention(Q_p, K_p, V_p)
out_p.backward(G)                                     # autograd, all the way to the leaves
with torch.no_grad():
    dQ_p, dK_p, dV_p = attention_backward(Q_p, K_p, V_p, A_p, G)   # the five lines
    ours = {"dW_Q = X_qᵀ dQ": X_q.T @ dQ_p, "dW_K = X_sᵀ dK": X_s.T @ dK_p, "dW_V = X_sᵀ dV": X_s.T @ dV_p,
            "dX_q = dQ W_Qᵀ": dQ_p @ W_Q.T, "dX_s = dK W_Kᵀ + dV W_Vᵀ": dK_p @ W_K.T + dV_p @ W_V.T}
for (name, mine), leaf in zip(ours.items(), (W_Q, W_K, W_V, X_q, X_s)):
    print(f"{name:25s} shape {str(tuple(mine.shape)):7s} max |ours - autograd| {below((mine - leaf.grad).abs().max().item(), tol)}")

# %% [markdown]
# The same holds with a mask: hidden positions have $a_{ij} = 0$, so by step 2 they also get $H_{ij} = 0$ and pass no gradient to the keys they hide. `is_causal=True` is aligned top-left, as in PyTorch's `F.scaled_dot_product_attention`: query $i$ may read keys $j \le i$ (both counted from 1). With $L = 4$ queries and $S = 6$ keys, keys 5 *and* 6 are hidden from every query (notebook 05 treats masks and their alignment in full).

# %%
# C15 with a causal mask: still equal to autograd, and hidden (i, j) get no gradient
for t in (q, k, v):
    t.grad = None
out_c, A_c = dot_product_attention(q, k, v, is_causal=True)
out_c.backward(G)
dq_c, dk_c, dv_c = attention_backward(q.detach(), k.detach(), v.detach(), A_c.detach(), G)
err = max((o - a).abs().max().item() for o, a in [(dq_c, q.grad), (dk_c, k.grad), (dv_c, v.grad)])
print(f"causal: dQ, dK, dV against autograd, max |difference| {below(err, tol)}")
print("weight each key gets, summed over the 4 queries:", rounded(A_c.detach().sum(0), 4))
for j in (4, 5):
    print(f"key {j + 1} is hidden from every query (top-left: query i reads keys <= i), so dL/dK row {j + 1} =",
          rounded(dk_c[j], 4))

# %% [markdown]
# ## Exercises
#
# 1. **(widget)** In the explorer, at about which spread $\sigma$ does $\lVert J\rVert_F$ fall below 0.05? What is the max weight there? Then find the spread where $\lVert J\rVert_F$ is largest: is the row uniform there?
#
# <details><summary>Answer</summary>
#
# $\lVert J\rVert_F$ drops below 0.05 at $\sigma \approx 4.45$ (on the slider's 0.1 steps: 0.052 at 4.4, 0.048 at 4.5), where the max weight is already about 0.97. Its maximum, 0.409, is not at $\sigma = 0$ but at $\sigma \approx 0.64$, where the max weight is 0.42 (the slider's 0.6 and 0.7 both show 0.409): for the uniform row $J = (I - \mathbf{1}\mathbf{1}^\top/S)/S$ has norm $\sqrt{S-1}/S = 0.40$ for $S = 5$, and a slightly uneven row is a little more sensitive. Once one weight dominates, the norm falls quickly towards 0.
# </details>
#
# 2. Show that $J$ is symmetric and that $J\mathbf{1} = 0$. What does $J\mathbf{1} = 0$ say about adding the same constant to every score? Connect it to section 1.
#
# <details><summary>Answer</summary>
#
# $J_{jr} = a_j\delta_{jr} - a_j a_r$ is unchanged by swapping $j$ and $r$. $(J\mathbf{1})_j = a_j - a_j \sum_r a_r = 0$. So a change of the scores along $\mathbf{1}$ (the same constant added to every score) changes the weights by $J\,c\mathbf{1} = 0$ to first order — and section 1 showed it changes them by exactly 0, at every order.
# </details>
#
# 3. For which $a_j$ is the diagonal entry $a_j(1-a_j)$ largest, and what is the largest absolute value any entry of a softmax Jacobian can take?
#
# <details><summary>Answer</summary>
#
# $a(1-a)$ is largest at $a = 1/2$, where it is $1/4$. Off-diagonal entries satisfy $|a_j a_r| \le a_j(1 - a_j) \le 1/4$ because $a_r \le 1 - a_j$. So every entry lies in $[-1/4, 1/4]$, which is why the explorer uses that fixed colour range.
# </details>
#
# 4. In float16 the largest finite number is 65504. Above which logit does a naive `exp` overflow in float16? Why is computing attention scores in float16 without the max shift even more dangerous than in float32?
#
# <details><summary>Answer</summary>
#
# $\ln 65504 \approx 11.09$, so any logit above about 11.1 overflows. Unscaled scores of a 64-wide head have standard deviation about 8 (notebook 02), so values above 11 are common (about one score in twelve); in float32 the limit is 88.7. Subtracting the row max keeps every exponent at most $e^0 = 1$ whatever the dtype (`masked_softmax` also does its arithmetic in float32 for half-precision inputs).
# </details>
