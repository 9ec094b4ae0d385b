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
# # 09 · Long sequences: what attention costs, and how to compute it in blocks
#
# **What you will learn**
#
# - the idealised cost of one CNN, RNN and self-attention layer (compute, sequential steps, longest path between two positions), and what each column really means;
# - that full attention's memory grows like $n^2$, measured next to an `nn.RNN` and an `nn.Conv1d` layer as the sequence grows;
# - the **online softmax**: reading the keys in blocks while keeping a running maximum and a running sum, which gives *exactly* the same output as full attention while never holding the $n \times n$ score matrix, and a backward pass that recomputes the blocks, so that training never holds it either.
#
# **Seed sections taught:** lecture notes 004 (*9 Attention and the Transformer*) §9.7 (CNN, RNN and self-attention; §9.7.1 what the comparison means; §9.7.2 the trade-off for long sequences and the "blockwise strategy").
#
# **Read first:** `08_encoder_decoder.ipynb` (the whole Transformer); `03_softmax_gradient.ipynb` for why softmax is computed with the row maximum subtracted.
#
# **Time:** about 25 minutes; running it top to bottom takes under a minute on a quiet machine and longer on a busy one (most of it is measuring).

# %%
# %matplotlib inline
import math

import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

from attnlib import default_device, dot_product_attention, set_seed
from attnlib.core.blockwise import (
    blockwise_attention,
    blockwise_attention_lse,
    blockwise_attention_steps,
    query_tile,
)
from attnlib.course.costs import (
    complexity_table,
    counted_macs,
    fitted_slope,
    layer_costs,
    median_time,
    score_bytes,
    theoretical_costs,
    written_out_attention,
)
from attnlib.course.memory import allocated_bytes, largest_tensor_bytes
from attnlib.figures.sequence_costs import measured_cost_panels
from attnlib.util.device import num_threads
from attnlib.widgets import online_softmax_explorer

set_seed(0)
device = default_device()
# Random numbers are drawn on the CPU and then moved to `device`, so every device sees the same inputs.

# %% [markdown]
# ## 1. Three ways to let positions talk: the seed's table
#
# Let a sequence have $n$ positions, each a vector of width $d$, and let a convolution have kernel width $k$. The lecture compares one layer of each kind of network:

# %%
# C41: the idealised comparison (n positions, width d, kernel width k)
print(f"{'layer':15s} {'compute':11s} {'sequential steps':17s} {'longest path'}")
for row in complexity_table():
    print(f"{row['layer']:15s} {row['compute']:11s} {row['sequential_steps']:17s} {row['longest_path']}")

# %% [markdown]
# - **Compute (计算复杂度).** A convolutional layer (卷积神经网络, CNN) applies a $d \times d$ matrix for each of its $k$ taps at every position: $k\,n\,d^2$ multiply-adds. A recurrent layer (循环神经网络, RNN) applies two $d \times d$ matrices per position, one to the input and one to the previous state: $2\,n\,d^2$. Self-attention compares every pair of positions with a length-$d$ dot product ($QK^\top$: $n^2 d$) and then, for every position, sums $n$ value vectors of width $d$ with the weights ($n^2 d$ again): $2\,n^2 d$, plus $4 n d^2$ for its projections $W_Q, W_K, W_V, W_O$, which the table leaves out. The table's $O(\cdot)$ drops the constant factors; kept, they say that attention's pairwise part costs less than the RNN while $n < d$ and less than a $k$-tap CNN while $n < k\,d/2$. The next cell counts it for $d = 64$, $k = 3$.
# - **Sequential steps (串行步骤).** A CNN and self-attention compute all positions at once (in parallel, 并行); an RNN must finish position $t-1$ before it can start position $t$.
# - **Longest path (最长信息路径).** How many steps a signal from position 0 needs to reach position $n-1$. A convolution only sees a window of $k$ positions, so it needs on the order of $n/k$ stacked layers (about $2n/(k-1)$ for a centred kernel, measured below; fewer with dilated convolutions, 膨胀卷积); an RNN passes it through $n-1$ recurrent steps; self-attention connects any two positions in one step.
#
# > **Note on the slides:** the lecture's middle column counts "positions that can be computed in parallel within a layer": $O(n)$ for CNN, $O(1)$ for RNN, $O(n)$ for self-attention. The same fact is often stated the other way round, as the *minimum number of sequential operations*: $O(1)$, $O(n)$, $O(1)$ (the table above uses this form). Both say the RNN is the one that cannot be parallelised over positions. All three columns are idealised counts: what a layer really costs depends on the code that runs it and on the widths chosen, and a CNN's path length on how it widens its view (more layers, wider kernels or dilation).
#
# The compute column in numbers: the multiply-adds of one layer for $d = 64$ and $k = 3$, counted by `torch.utils.flop_counter.FlopCounterMode` (the counter §3 uses too) on the layers themselves, an `nn.Conv1d`, an `nn.RNN`, the written-out attention and four `nn.Linear` projections (`attnlib.course.costs.counted_macs`), and compared with the formulas above (`attnlib.course.costs.theoretical_costs`):

# %%
# C41: multiply-adds of one layer (d = 64, k = 3), counted: where attention overtakes the RNN (n = d) and the CNN (n = k d / 2)
ns_macs = [32, 64, 96, 128, 192, 256, 1024]
macs = counted_macs(ns_macs, d_model=64, kernel_size=3)      # FlopCounterMode on the layers, FLOPs / 2
formula = theoretical_costs(ns_macs, d_model=64, kernel_size=3)
print(f"{'n':>5s} {'CNN k n d^2':>12s} {'RNN 2 n d^2':>12s} {'attention 2 n^2 d':>18s} {'projections 4 n d^2':>20s}")
for i, n_i in enumerate(ns_macs):
    print(f"{n_i:5d} {macs['CNN'][i] / 1e6:11.2f}M {macs['RNN'][i] / 1e6:11.2f}M {macs['attention'][i] / 1e6:17.2f}M "
          f"{macs['projections'][i] / 1e6:19.2f}M")
pairs = [("CNN", formula.cnn_macs), ("RNN", formula.rnn_macs), ("attention", formula.attention_macs),
         ("projections", formula.projection_macs)]
agree = sum(int(c == f) for name, col in pairs for c, f in zip(macs[name], col))
print(f"counted = formula in {agree} of {len(pairs) * len(ns_macs)} entries")

# %% [markdown]
# At $n = 64 = d$ attention's pairwise products cost as much as the RNN (0.52M each), and at $n = 96 = k\,d/2$ as much as the 3-tap CNN (1.18M each); at $n = 128$ attention (2.10M) is already dearer than both the RNN (1.05M) and the CNN (1.57M). The projections add half as much again as the pairwise part at $n = 256$ (4.19M on top of 8.39M), and they alone make attention dearer than the RNN at every $n$: $4nd^2$ is twice the RNN's $2nd^2$.
#
# The longest path can be checked with autograd: the output at the last position depends on the input at position 0 exactly when the gradient between them is non-zero. For $n = 16$ positions and kernel width $k = 3$:

# %%
# C41: the longest path, measured with gradients: when does output n-1 first depend on input 0?
n, width = 16, 4
x = torch.randn(1, n, width, requires_grad=True)              # (B, n, d)
conv_layers = {}
for kernel in (3, 5):
    # One Conv1d applied again and again (shared weights): for what can reach what, only its window matters.
    conv = nn.Conv1d(width, width, kernel_size=kernel, padding=kernel // 2)   # same width, "same" padding
    h, conv_layers[kernel] = x.transpose(1, 2), 0              # (B, d, n) as Conv1d wants
    while True:                                                # stack convolutions until y[n-1] sees x[0]
        h, conv_layers[kernel] = conv(h), conv_layers[kernel] + 1
        (g,) = torch.autograd.grad(h[:, :, -1].sum(), x, retain_graph=True)
        if g[0, 0].abs().sum() > 0:
            break
rnn_out, _ = nn.RNN(width, width, batch_first=True)(x)       # (B, n, d)
(g_rnn,) = torch.autograd.grad(rnn_out[:, -1].sum(), x)
attn_out, _ = dot_product_attention(x, x, x)                  # (B, n, d)
(g_attn,) = torch.autograd.grad(attn_out[:, -1].sum(), x)
rnn_layers = 1 if g_rnn[0, 0].abs().sum() > 0 else "more"
attn_layers = 1 if g_attn[0, 0].abs().sum() > 0 else "more"
print(f"{'layer':15s} {'layers until y[15] sees x[0]':29s} {'sequential steps inside one layer'}")
for kernel in (3, 5):
    print(f"{f'CNN (k = {kernel})':15s} {conv_layers[kernel]:<29d} 1")
print(f"{'RNN':15s} {rnn_layers!s:29s} {n}")
print(f"{'self-attention':15s} {attn_layers!s:29s} 1")
for kernel in (3, 5):
    print(f"k = {kernel}: CNN layers needed = ceil((n - 1) / ((k - 1) / 2)) =", math.ceil((n - 1) / ((kernel - 1) / 2)))

# %% [markdown]
# A centred kernel of width $k$ widens each output's view by $(k-1)/2$ positions on each side per layer, so the last position needs $\lceil (n-1) / ((k-1)/2) \rceil$ stacked layers to reach position 0: 15 for $k = 3$, 8 for $k = 5$, a path of length $O(n/k)$. (The cell applies one convolution again and again, with shared weights; separate weights per layer would reach exactly as far.) The RNN sees position 0 after one layer, but only through a chain of $n - 1 = 15$ recurrent updates, done one after another; self-attention reaches it in one step of a single layer.
#
# The third way to widen a CNN's view is **dilation (膨胀卷积)**: a 3-tap kernel with dilation $\delta$ reads positions $t - \delta$, $t$, $t + \delta$. Doubling the dilation at every layer (1, 2, 4, 8, ...) widens the view by $\delta$ on each side per layer, so after $L$ layers it spans $1 + 2 + \dots + 2^{L-1} = 2^L - 1$ positions each way, and the path between two positions has $O(\log n)$ layers (the row Vaswani et al. 2017 give dilated convolutions in their Table 1). The same gradient test:

# %%
# C41: a dilated CNN (k = 3, dilation 1, 2, 4, ... at layer 1, 2, 3, ...): when does y[15] first see x[0]?
h, dilated_layers = x.transpose(1, 2), 0                       # (B, d, n)
while True:
    dilation = 2**dilated_layers                               # 1, 2, 4, 8, ...
    conv = nn.Conv1d(width, width, kernel_size=3, padding=dilation, dilation=dilation)   # "same" padding
    h, dilated_layers = conv(h), dilated_layers + 1
    (g,) = torch.autograd.grad(h[:, :, -1].sum(), x, retain_graph=True)
    if g[0, 0].abs().sum() > 0:
        break
print(f"dilated CNN (k = 3, dilations {', '.join(str(2**i) for i in range(dilated_layers))}): "
      f"{dilated_layers} layers until y[15] sees x[0] (undilated k = 3: {conv_layers[3]} layers)")
print(f"view after {dilated_layers} layers: 2^{dilated_layers} - 1 = {2**dilated_layers - 1} positions on each side; "
      f"layers needed = ceil(log2(n)) = {math.ceil(math.log2(n))}")

# %% [markdown]
# Four layers instead of fifteen. A path of $O(\log n)$ is still longer than attention's single step, and each dilated layer still costs $k\,n\,d^2$.
#
# ## 2. Measured: time and memory as $n$ grows
#
# `attnlib.course.costs.layer_costs` runs one forward pass of each layer (width $d = 64$, one sequence, float32) for growing $n$, measures its median time (on one CPU thread, so that other programs sharing the CPU disturb it less), gives its number of **floating-point operations (FLOPs)** (by formula, two per multiply-add; the tests check the formula against `FlopCounterMode`), and counts its **peak memory** exactly: the bytes of the tensors the call creates that are alive at the same moment (`attnlib.course.memory.allocated_bytes` watches every operation and every tensor freed; see the module's docstring). Self-attention here is the written-out $\operatorname{softmax}(XX^\top/\sqrt d)X$, which holds the full $n \times n$ score matrix; it has no projections $W_Q, W_K, W_V, W_O$, so it does only the $2 n^2 d$ pairwise part of a real layer's work. Times depend on the machine, so this cell's output is not compared by the tests (the memory column is the same on every machine):

# %%
# NBVAL_IGNORE_OUTPUT
# C41: times measured on this machine (they differ between machines and runs); memory counted exactly
ns = [256, 512, 1024, 2048]
with num_threads(1):                                          # one CPU thread: other programs disturb the times less
    rows = layer_costs(ns, d_model=64, kernel_size=3, device=device, repeats=5)
print(f"{'layer':15s} {'n':>5s} {'time (ms)':>10s} {'peak tensor memory (MiB)':>25s}")
for r in rows:
    print(f"{r.layer:15s} {r.n:5d} {r.seconds * 1e3:10.2f} {r.peak_bytes / 2**20:25.2f}")
att = {r.n: r for r in rows if r.layer == "self-attention"}
for r in rows:
    if r.layer == "RNN" and r.n <= 1024:
        print(f"n = {r.n:4d}: RNN time / attention time = {r.seconds / att[r.n].seconds:6.1f}")

# %% alt="Measured time of one forward pass (left) and exactly counted peak memory (right) of a self-attention, an RNN and a CNN layer against sequence length n on log\u2013log axes, with \u221d n and \u221d n\u00b2 guide lines: attention's lines are the steepest."
# NBVAL_IGNORE_OUTPUT
# C41: the same numbers on log-log axes; a straight line of slope p means cost ∝ n^p
fig, axes = plt.subplots(1, 2, figsize=(9, 3.4), layout="constrained")
_ = measured_cost_panels(rows, axes)

# %% [markdown]
# On log-log axes a cost that grows like $n^p$ is a straight line of slope $p$; the dotted guides in both panels have slopes 1 and 2. Timings of small layers are noisy: on a CPU that other programs share, a few slow runs can move a median of five, so a line that zigzags in the time panel is the machine, not the layer; on a GPU, tiny kernels are dominated by launch overhead. The RNN's time in particular need not lie along the slope-1 guide at these sizes, although its work grows exactly like $n$: read the time panel for its rough shape only, and the memory panel (exact counts) for slopes. One timing lesson holds whenever the CPU is quiet: at $n = 256$ the RNN takes several times longer than attention although it does $n/d = 4$ times *fewer* FLOPs than this projection-free attention (the next cell prints the ratio): `nn.RNN` does $2nd^2 = 2.10$M multiply-adds, the written-out attention $2n^2d = 8.39$M, and a real attention layer's projections would add $4nd^2 = 4.19$M more (the counts of §1). The RNN's $n$ steps run one after another, each a tiny $d \times d$ product; attention's work is two large matrix products over all positions at once. On one CPU thread, as here, nothing runs in parallel in either case: what the gap measures is the fixed cost of each of $n$ dependent steps (a call, and a product too small to keep the arithmetic units busy) against one large product that keeps them busy. On several threads or a GPU the gap grows further by what the table's "sequential steps" column is about: attention can spread its positions over the parallel units, the RNN cannot. (No time ratio is quoted here, because they change from run to run and machine to machine: on a CPU busy with other jobs every time is inflated by waiting, and the stored output above may come from such a run, so rerun the cell on a quiet machine. At larger $n$ attention's $n^2$ arithmetic catches up.) Memory, counted exactly, is clear: attention's line has slope 2, the RNN's and the CNN's slope 1. The arithmetic says what must exist at the peak: the score matrix alone is $n^2$ numbers of 4 bytes, the RNN's and CNN's output $n \cdot d$; written-out attention holds two such matrices at once (the scores and their softmax):

# %%
# C41: what the arithmetic says (FLOPs counted as in §1), and the growth rate of the counted memory
print(f"{'n':>5s} {'n x n scores (MiB)':>19s} {'n x d output (MiB)':>19s} {'attention FLOPs / RNN FLOPs':>28s}")
by_layer = {name: [r for r in rows if r.layer == name] for name in ("self-attention", "RNN", "CNN")}
counted = counted_macs(ns, d_model=64, kernel_size=3)           # the same FlopCounterMode count as §1
for i, (att, rnn) in enumerate(zip(by_layer["self-attention"], by_layer["RNN"])):
    print(f"{att.n:5d} {att.largest_intermediate_bytes / 2**20:19.2f} {rnn.largest_intermediate_bytes / 2**20:19.2f} "
          f"{counted['attention'][i] / counted['RNN'][i]:28.1f}")
att_slope = fitted_slope(ns[1:], [r.peak_bytes for r in by_layer["self-attention"][1:]])
rnn_slope, cnn_slope = (fitted_slope(ns[1:], [r.peak_bytes for r in by_layer[name][1:]]) for name in ("RNN", "CNN"))
# Exact byte counts, so the slopes are the same on every machine: n^2 terms give 2, n terms 1.
print(f"fitted slope of the peak memory: attention {att_slope:.2f}, RNN {rnn_slope:.2f}, CNN {cnn_slope:.2f}")
held = min(r.peak_bytes / r.largest_intermediate_bytes for r in by_layer["self-attention"])
print(f"attention's peak / one n x n matrix, smallest over n: {held:.2f} (>= 2: scores and softmax both alive)")

# %% [markdown]
# The ratio of attention's to the RNN's compute is $2 n^2 d / (2 n d^2) = n/d$: at $n = d = 64$ they are equal, and at $n = 2048$ attention does 32 times more arithmetic. One layer with 8 heads at $n = 32{,}768$ would need $8 \times 32768^2 \times 4$ bytes $= 32$ GiB just for its score matrices:

# %%
# C41: the n^2 wall, per layer with 8 heads, float32
for n in (1024, 4096, 16384, 32768, 131072):
    print(f"n = {n:6d}: score matrices of 8 heads = {8 * score_bytes(n, n) / 2**30:8.2f} GiB")

# %% [markdown]
# A one-step path between any two positions does not make a layer fit for any length: the path is short *because* every pair gets a score, and those $n^2$ scores are what run out of memory. Long inputs call for **local attention (局部注意力)** (each position looks at a window), **sparse attention (稀疏注意力)** (a fixed pattern of pairs), **linear attention (线性注意力)** (an approximation that never forms the $n \times n$ matrix), or computing exact attention **in blocks (分块)**, the last of which is next.
#
# ## 3. Blockwise attention with an online softmax (在线 softmax)
#
# The $n \times n$ matrix exists only because the softmax needs a whole row at once: its denominator $\sum_j e^{s_j}$ runs over every key, and for numerical safety the row maximum is subtracted first (notebook 03). The trick is to compute both **incrementally**. Split the keys (and values) of one query's row into blocks $B_1, B_2, \ldots$ and keep three running quantities, which start empty, $m^{(0)} = -\infty$, $\ell^{(0)} = 0$, $a^{(0)} = 0$:
#
# - the running maximum $m$ of the scores seen so far,
# - the running sum $\ell = \sum_{j\ \text{seen}} e^{s_j - m}$,
# - the running numerator $a = \sum_{j\ \text{seen}} e^{s_j - m}\, v_j$.
#
# When block $B_b$ arrives, with its scores $s_j = q \cdot k_j/\sqrt{d_k}$:
#
# $$
# m^{(b)} = \max\!\Big(m^{(b-1)},\ \max_{j \in B_b} s_j\Big),\qquad
# \ell^{(b)} = e^{\,m^{(b-1)} - m^{(b)}}\,\ell^{(b-1)} + \sum_{j\in B_b} e^{\,s_j - m^{(b)}},
# $$
#
# $$
# a^{(b)} = e^{\,m^{(b-1)} - m^{(b)}}\,a^{(b-1)} + \sum_{j\in B_b} e^{\,s_j - m^{(b)}}\, v_j ,
# \qquad
# \text{output} = \frac{a^{(\text{last})}}{\ell^{(\text{last})}} .
# $$
#
# The factor $e^{m^{(b-1)} - m^{(b)}} \le 1$ re-expresses the old sums relative to the new maximum (it is 1 when the maximum did not change, and 0 at the first block, where there is nothing to rescale yet). By induction, after every block $\ell = \sum_{j\ \text{seen}} e^{s_j - m}$ exactly, so after the last block $a/\ell = \sum_j \operatorname{softmax}(s)_j\, v_j$: the same number full attention computes, not an approximation. Only a slice of the scores exists at any time: `attnlib.core.blockwise.blockwise_attention` also tiles the queries (256 rows at a time, or the block size if larger), so the live slice is at most tile × block, the same whatever $n$. (This is the idea behind FlashAttention-style kernels, which also keep the blocks in fast on-chip memory and, in the backward pass, recompute the blocks instead of storing them; `blockwise_attention` does that too, see the end of §3.)
#
# The running quantities after each block, for one query row of 12 keys in blocks of 4, against the prefix softmax computed directly. The draw is chosen so that each later block holds a larger score than all before it, so the rescaling happens twice:

# %%
# C42: the online softmax block by block, from the empty start; the maximum rises in blocks 1 and 2
gen = torch.Generator().manual_seed(26)                       # a draw where each later block holds a larger score
q1 = torch.randn(1, 8, generator=gen, dtype=torch.float64).to(device)    # one query
k1 = torch.randn(12, 8, generator=gen, dtype=torch.float64).to(device)   # twelve keys
v1 = torch.randn(12, 3, generator=gen, dtype=torch.float64).to(device)
s = (q1 @ k1.T / math.sqrt(8))[0]                             # (S,) all scores, for checking only
m_old, l_old = -math.inf, 0.0
print("start              : m = -inf, l = 0, a = 0 (no key read yet)")
for step in blockwise_attention_steps(q1, k1, v1, block_size=4):
    seen = s[: step.key_stop]
    m, l = step.running_max[0].item(), step.running_sum[0].item()
    print(f"block {step.block} (keys {step.key_start}..{step.key_stop - 1:2d}): block max {s[step.key_start:step.key_stop].max().item():.4f}, "
          f"m {m_old:.4f} -> {m:.4f}, rescale factor exp(m_old - m_new) = {math.exp(m_old - m):.4f}")
    print(f"{'':21s}l {l_old:.4f} -> {l:.4f}   (Σ exp(s - m) over keys 0..{step.key_stop - 1}: "
          f"{torch.exp(seen - m).sum().item():.4f})")
    if step.block > 0:                                        # does the sum go down? compare the two changes
        removed = l_old * (1 - math.exp(m_old - m))           # what the rescaling takes off the old sum
        added = torch.exp(s[step.key_start:step.key_stop] - m).sum().item()   # what the block's terms add
        print(f"{'':21s}rescaling removes l_old (1 - factor) = {removed:.4f}, the block adds {added:.4f}")
    m_old, l_old = m, l
full_out, _ = dot_product_attention(q1, k1, v1)
err = (step.output - full_out).abs().max().item()
print(f"output a / l vs full attention: max |diff| {'<' if err < 1e-12 else '>='} 1e-12 (float64 rounding)")

# %% [markdown]
# In block 1 the maximum rises from 0.1055 to 0.7341, so the old sum is multiplied by $e^{0.1055 - 0.7341} = 0.5333$ before the new block's terms are added, and the sum still grows (2.6990 → 3.1924). In block 2 the maximum rises again, the factor is 0.4944, and this time the sum goes *down* (3.1924 → 2.9961). It can go down only at such a block: where the maximum holds, the factor is 1 and the block only adds positive terms. At a rise it goes down exactly when the rescaling takes off more than the block adds, $\ell_{\text{old}}\,(1 - e^{m_{\text{old}} - m_{\text{new}}}) > \sum_{j \in B} e^{s_j - m_{\text{new}}}$: in block 1 the rescaling takes off 1.2596 and the block adds 1.7530, in block 2 it takes off 1.6141 and the block adds only 1.4177.
#
# One more case needs care: a block in which a query sees **no key at all** (causal attention's future, or padding). Its scores are all $-\infty$, so if every block so far was hidden, $m_{\text{old}} = m_{\text{new}} = -\infty$ and the factor $e^{-\infty - (-\infty)}$ is NaN: notebook 05's fully masked row again. The library subtracts 0 instead of $m$ while $m$ is still $-\infty$, so such a block leaves $m = -\infty$, $\ell = 0$, $a = 0$ untouched. Hiding the first block of keys from the query above:

# %%
# C42: a block with no visible key (the mask hides keys 0..3): the state stays empty, no NaN
allowed = torch.ones(1, 12, dtype=torch.bool).to(device)     # True = may attend
allowed[:, :4] = False                                       # the whole first block is hidden
print("the naive factor exp(m_old - m_new) with both -inf:", math.exp(-math.inf - (-math.inf)))
for step in blockwise_attention_steps(q1, k1, v1, allowed, block_size=4):
    print(f"block {step.block}: m = {step.running_max[0].item():.4f}, l = {step.running_sum[0].item():.4f}")
masked_full, _ = dot_product_attention(q1, k1, v1, allowed)
err = (step.output - masked_full).abs().max().item()
print(f"output vs full attention with the same mask: max |diff| {'<' if err < 1e-12 else '>='} 1e-12, "
      f"NaNs in the output: {int(step.output.isnan().sum())}")

# %% [markdown]
# Now on batched multi-head inputs, for several block sizes, with and without the causal mask, against our written-out attention and PyTorch's `F.scaled_dot_product_attention`:

# %%
# C42: blockwise attention gives the same output as full attention, for any block size
q = torch.randn(2, 4, 128, 32).to(device)                       # (B, H, L, Dh)
k = torch.randn(2, 4, 128, 32).to(device)                       # (B, H, S, Dh)
v = torch.randn(2, 4, 128, 32).to(device)
for causal in (False, True):
    full, _ = dot_product_attention(q, k, v, is_causal=causal)
    sdpa = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    for block in (8, 32, 100, 128):
        out = blockwise_attention(q, k, v, block_size=block, is_causal=causal)
        err = max((out - full).abs().max().item(), (out - sdpa).abs().max().item())
        # float32: each output sums 128 terms of size ~1, so rounding stays far below 1e-5
        print(f"causal={causal!s:5s} block={block:3d}: max |blockwise - full or SDPA| {'<' if err < 1e-5 else '>='} 1e-5")

# %% [markdown]
# ### How much memory it saves
#
# The largest score array: full attention holds $L \times S$ numbers at once. Blockwise attention holds one query tile's scores against one key block, tile × block. `attnlib.core.blockwise.blockwise_attention` cuts the queries into tiles of `attnlib.core.blockwise.query_tile(block)` rows, 256 (or the block size, if larger); a tile of all $L$ rows, as the explorer of §4 counts it, would hold $L \times \text{block}$. With $L = S = n$ and block = 256:

# %%
# C42: the largest score array, by arithmetic (float32, one head): full, one tile of all L rows, the library's tiles
block = 256
tile = query_tile(block)                                         # query rows per tile in blockwise_attention
print(f"query tile: {tile} rows, key block: {block} keys")
print(f"{'n':>6s} {'full L x S (MiB)':>17s} {'L x block (MiB)':>16s} {'tile x block (MiB)':>19s} {'full / (tile x block)':>22s}")
for n in (1024, 4096, 16384, 65536):
    full_b, all_rows_b, tile_b = score_bytes(n, n), score_bytes(n, block), score_bytes(tile, block)
    print(f"{n:6d} {full_b / 2**20:17.2f} {all_rows_b / 2**20:16.2f} {tile_b / 2**20:19.2f} {full_b / tile_b:22,.0f}")

# %% [markdown]
# The full matrix grows like $n^2$; one tile of all $L$ rows would grow like $n$; the library's slice is 0.25 MiB at every $n$, so the ratio grows like $n^2$ (16 at $n = 1024$, 65,536 at $n = 65{,}536$). Whether the slice is constant or linear, the memory that does grow with $n$ is the output, $n \times d$, which full attention returns too.

# %% [markdown]
# And counted exactly (the peak bytes of the tensors one call creates, one head of width 64, block = 256; an exact count, so the same on every machine and device). No input requires a gradient here; training comes at the end of this section:

# %%
# C42: peak tensor memory, written-out vs blockwise (block = 256), counted exactly
memory = {}
for n in (512, 1024, 2048):
    x = torch.randn(1, n, 64).to(device)                         # (B, n, D) one head
    memory[n] = (allocated_bytes(lambda: written_out_attention(x, x, x)),
                 allocated_bytes(lambda: blockwise_attention(x, x, x, block_size=block)))
    print(f"n = {n}: written-out {memory[n][0] / 2**20:7.2f} MiB, blockwise {memory[n][1] / 2**20:6.2f} MiB")

# %%
# C42: the saving
written, blockwise = memory[2048]
print(f"at n = 2048, blockwise / written-out peak memory = {blockwise / written:.3f} (< 1/4)")
print(f"from n = 1024 to 2048: written-out x{memory[2048][0] / memory[1024][0]:.2f}, blockwise x{memory[2048][1] / memory[1024][1]:.2f}")
extra = [memory[n][1] - n * 64 * 4 for n in memory]            # blockwise peak minus its (n, 64) float32 output
print("blockwise peak minus the n x 64 output it returns: "
      + ", ".join(f"{e / 2**20:.2f}" for e in extra) + " MiB at n = " + ", ".join(str(n) for n in memory))

# %% [markdown]
# Doubling $n$ multiplies the written-out peak by almost 4, as its two $n \times n$ matrices grow. The blockwise peak grows only by the output it returns, an $n \times 64$ array that full attention returns too; the rest is the same 1.13 MiB at every $n$: four 0.25 MiB arrays of one tile × block (the scores, the scores minus the running maximum, and two blocks' exponentials, since one block's is freed only when the next replaces it) and two 256 × 64 arrays (the scaled queries and the running numerator), plus a few vectors of 256. So the blockwise total grows linearly in $n$, and only because of the output.
#
# What blocks do not change is the arithmetic. Counting the floating-point operations of the matrix products (`torch.utils.flop_counter.FlopCounterMode`, an exact count) for the same calls:

# %%
# C42: blockwise attention does the same O(n^2 d) arithmetic as full attention
print(f"{'n':>5s} {'written-out GFLOP':>18s} {'blockwise GFLOP':>16s} {'4 n^2 d':>8s}")
flops = {}
for n in (512, 1024, 2048):
    x = torch.randn(1, n, 64).to(device)                         # (B, n, D) one head
    for name, fn in (("written-out", lambda: written_out_attention(x, x, x)),
                     ("blockwise", lambda: blockwise_attention(x, x, x, block_size=block))):
        with FlopCounterMode(display=False) as counter:
            fn()
        flops[name, n] = counter.get_total_flops()
    print(f"{n:5d} {flops['written-out', n] / 1e9:18.3f} {flops['blockwise', n] / 1e9:16.3f} {4 * n * n * 64 / 1e9:8.3f}")
print(f"from n = 1024 to 2048: written-out x{flops['written-out', 2048] / flops['written-out', 1024]:.0f}, "
      f"blockwise x{flops['blockwise', 2048] / flops['blockwise', 1024]:.0f}")

# %% [markdown]
# Both do $4 n^2 d$ operations ($QK^\top$ and the product with $V$, each $n^2 d$ multiply-adds of 2 operations), and both grow ×4 when $n$ doubles: blocks change the memory slope, not the compute slope. So in the long run the time of both should grow like $n^2$ too. Timed on this machine (one CPU thread, minimum of five runs; times differ between machines, so the tests do not compare this cell's output):

# %%
# NBVAL_IGNORE_OUTPUT
# C42: time of written-out and blockwise attention as n doubles (machine-dependent)
times = {}
with num_threads(1):
    for n in (512, 1024, 2048):
        x = torch.randn(1, n, 64).to(device)                     # (B, n, D) one head
        for name, fn in (("written-out", lambda: written_out_attention(x, x, x)),
                         ("blockwise", lambda: blockwise_attention(x, x, x, block_size=block))):
            fn()                                                   # warm-up
            times[name, n] = min(median_time(fn, repeats=1, warmup=0, device=device) for _ in range(5))
        print(f"n = {n:4d}: written-out {times['written-out', n] * 1e3:7.2f} ms, blockwise {times['blockwise', n] * 1e3:7.2f} ms")
for name in ("written-out", "blockwise"):
    print(f"{name:11s}: time x{times[name, 1024] / times[name, 512]:.1f} from 512 to 1024, "
          f"x{times[name, 2048] / times[name, 1024]:.1f} from 1024 to 2048")

# %% [markdown]
# These sizes are too small for the times to show the FLOP count's ×4 per doubling: read the factors as rough. Written-out attention's time often grows by more than ×4 at the last doubling, because its $n \times n$ matrices (a peak of 32.50 MiB at $n = 2048$, counted above) outgrow the CPU's caches, and every pass over them then waits for main memory. The blockwise loop works on cache-sized tiles but pays a fixed Python cost per block, which weighs most at small $n$. And a busy machine moves every time. In the project README's benchmark (8 heads, $n$ up to 8192) blockwise attention's time comes close to ×4 per doubling at the largest sizes, while written-out attention's again grows faster once its matrices no longer fit in the caches. Blocks save memory, not arithmetic. (On a GPU, FlashAttention is also faster than written-out attention, because it moves fewer bytes between the GPU's main memory and its on-chip memory.)
#
# ### In training too: a backward pass that recomputes the blocks
#
# Every count so far ran without gradients. Training also needs the backward pass, and autograd keeps for it whatever each operation's backward will read. Differentiating the loop of online-softmax steps as written, it would keep every block's exponentials $e^{s_j - m}$: $n \times n$ numbers in all, the very matrix the blocks were meant to avoid. FlashAttention (Dao et al. 2022) keeps the saving by writing the backward pass itself. Rabe and Staats (2021, *Self-attention does not need $O(n^2)$ memory*) get the same recomputation without writing one: they wrap each chunk's function in gradient checkpointing (`jax.checkpoint`), which runs it again during the backward pass. The forward pass saves, besides its inputs and its output, one number per query, the **log-sum-exp** $\mathrm{lse}_i = m_i + \log \ell_i$ of its scores. The backward pass then goes over the blocks again and recomputes each block's weights exactly, $p_{ij} = e^{s_{ij} - \mathrm{lse}_i}$ (which is $\operatorname{softmax}(s_i)_j$), and from them the block's share of the gradients: with $D_i = \sum_c \frac{\partial L}{\partial o_{ic}}\, o_{ic}$, the gradient of the scores is $\frac{\partial L}{\partial s_{ij}} = p_{ij}\big(\frac{\partial L}{\partial o_i} \cdot v_j - D_i\big)$ (the softmax Jacobian of notebook 03), and $\frac{\partial L}{\partial q}$, $\frac{\partial L}{\partial k}$, $\frac{\partial L}{\partial v}$ are sums over the blocks. The price is arithmetic: the backward pass computes the scores $QK^\top$ a second time (half of the forward's matrix products, not all of them), counted at the end of this section. `blockwise_attention` is written this way, as a `torch.autograd.Function`. What it keeps for the backward pass, read back from the autograd graph (`grad_fn.saved_tensors`):

# %%
# C42: what blockwise attention saves for the backward pass: the inputs, the output and one number per query
x = torch.randn(1, 1024, 64).to(device).requires_grad_()      # (B, n, D) one head, q = k = v = x
out, lse = blockwise_attention_lse(x, x, x, block_size=block)  # the output and the log-sum-exp it saves
for name, t in zip(("q", "k", "v", "attn_mask", "valid_lens", "output", "log-sum-exp"), out.grad_fn.saved_tensors):
    size = "none" if t is None else f"{tuple(t.shape)!s:14s} {t.numel() * t.element_size() / 2**20:6.3f} MiB"
    print(f"{name:12s} {size}" + ("  (the input x itself, no copy)" if t is not None and t.data_ptr() == x.data_ptr() else ""))
scores = x[0] @ x[0].T / math.sqrt(64)                         # (n, n), written out for the check only
err = (lse[0] - torch.logsumexp(scores, dim=-1)).abs().max().item()
print(f"log-sum-exp vs torch.logsumexp of the full score rows: max |diff| {'<' if err < 1e-4 else '>='} 1e-4")

# %% [markdown]
# Nothing of size $n \times n$: a float32 $1024 \times 1024$ matrix would be 4 MiB. Padding lengths `valid_lens`, when given, are saved as they are ($B \cdot L$ integers even for one length per query), not as a mask: each tile builds its own part of the padding mask from them, in the forward and in the backward pass (counted below). The backward's two steps on the 12-key example of above (blocks of 4), with the log-sum-exp the library saved: each block's weights recomputed as $e^{s - \mathrm{lse}}$, and the score gradient $p \odot (\frac{\partial L}{\partial o} V^\top - D)$, against full attention's weights and autograd through a full softmax:

# %%
# C42: the recomputation in the backward pass, on the 12-key example (float64)
out1, lse1 = blockwise_attention_lse(q1, k1, v1, block_size=4)     # lse1: (1,) what the forward saved
last = list(blockwise_attention_steps(q1, k1, v1, block_size=4))[-1]
m_last, l_last = last.running_max[0].item(), last.running_sum[0].item()
print(f"saved lse = {lse1[0].item():.4f} = m + log(l) = {m_last:.4f} + log({l_last:.4f}) = {m_last + math.log(l_last):.4f}")
_, w_full = dot_product_attention(q1, k1, v1)                   # (1, 12) full attention's weights
d_out = torch.tensor([[1.0, -2.0, 0.5]], dtype=torch.float64).to(device)   # some dL/d output, (1, Dv)
delta = (d_out * out1).sum(-1, keepdim=True)                   # (1, 1): D = dL/do · o
s_full = (q1 @ k1.T / math.sqrt(8)).requires_grad_()            # (1, 12) the scores, for autograd's reference
(ds_ref,) = torch.autograd.grad(torch.softmax(s_full, -1) @ v1, s_full, d_out)
for start in range(0, 12, 4):
    keys = slice(start, start + 4)
    p = torch.exp(s_full.detach()[:, keys] - lse1.unsqueeze(-1))   # (1, 4) the block's weights, recomputed
    ds = p * (d_out @ v1[keys].T - delta)                        # (1, 4) dL/ds for the block
    w_err = (p - w_full[:, keys]).abs().max().item()
    ds_err = (ds - ds_ref[:, keys]).abs().max().item()
    print(f"block {start // 4}: weights e^(s - lse) = [{', '.join(f'{x:.4f}' for x in p[0].tolist())}], "
          f"vs full softmax {'<' if w_err < 1e-12 else '>='} 1e-12; dL/ds vs autograd {'<' if ds_err < 1e-12 else '>='} 1e-12")
print(f"sum of the recomputed weights over all 12 keys: {torch.exp(s_full.detach() - lse1.unsqueeze(-1)).sum().item():.4f}")

# %% [markdown]
# The recomputed weights of the three blocks are the full softmax's, so they sum to 1 over all 12 keys, and no block needs another's. Its gradients are those of full attention, checked against autograd through `dot_product_attention` in float64, with padding and the causal mask:

# %%
# C42: blockwise attention's gradients equal autograd's through full attention (float64)
gen = torch.Generator().manual_seed(1)
q64, k64, v64 = (torch.randn(2, 4, 300, 16, generator=gen, dtype=torch.float64).to(device).requires_grad_()
                 for _ in range(3))                            # (B, H, n, Dh)
grad_out = torch.randn(2, 4, 300, 16, generator=gen, dtype=torch.float64).to(device)   # dL/d output
lens = torch.tensor([300, 123]).to(device)                      # the second sequence is padded after 123 keys
for causal in (False, True):
    out = blockwise_attention(q64, k64, v64, valid_lens=lens, is_causal=causal, block_size=64)
    ours = torch.autograd.grad(out, (q64, k64, v64), grad_out)
    full, _ = dot_product_attention(q64, k64, v64, valid_lens=lens, is_causal=causal)
    ref = torch.autograd.grad(full, (q64, k64, v64), grad_out)
    err = max((a - b).abs().max().item() for a, b in zip(ours, ref))
    print(f"causal={causal!s:5s}: max |blockwise - full| over dL/dq, dL/dk, dL/dv {'<' if err < 1e-12 else '>='} 1e-12")

# %% [markdown]
# And the memory of a training step, forward and backward together, counted exactly as before (inputs that require gradients, one head of width 64, block = 256), for written-out attention, for `blockwise_attention` (also with a padding length per query, `valid_lens` of shape $(1, n)$), and for the same online-softmax loop left to autograd (`blockwise_attention_steps`, whose steps are ordinary differentiable tensor operations):

# %%
# C42: peak tensor memory of forward + backward, counted exactly
train = {}
names = ("written-out", "blockwise", "blockwise, (1, n) lens", "loop under autograd")
print(f"{'n':>5s} " + " ".join(f"{name + ' (MiB)':>28s}" for name in names))
for n in (512, 1024, 2048):
    x = torch.randn(1, n, 64).to(device).requires_grad_()      # (B, n, D) one head
    g = torch.randn(1, n, 64).to(device)                       # dL/d output, the gradient arriving from above
    lens = torch.randint(1, n + 1, (1, n), generator=torch.Generator().manual_seed(n)).to(device)  # (B, L): per query
    cases = (lambda: written_out_attention(x, x, x),
             lambda: blockwise_attention(x, x, x, block_size=block),
             lambda: blockwise_attention(x, x, x, valid_lens=lens, block_size=block),
             lambda: list(blockwise_attention_steps(x, x, x, block_size=block))[-1].output)
    for name, fn in zip(names, cases):
        train[name, n] = allocated_bytes(lambda fn=fn: torch.autograd.grad(fn(), x, g))
    print(f"{n:5d} " + " ".join(f"{train[name, n] / 2**20:28.2f}" for name in names))
for name in names:
    print(f"{name:22s}: x{train[name, 1024] / train[name, 512]:.2f} from 512 to 1024, "
          f"x{train[name, 2048] / train[name, 1024]:.2f} from 1024 to 2048")
extra = [train["blockwise, (1, n) lens", n] - train["blockwise", n] for n in (512, 1024, 2048)]
print("per-query lengths add " + ", ".join(f"{e / 2**20:.4f}" for e in extra) + " MiB at n = 512, 1024, 2048; "
      f"one boolean tile x block slice is {query_tile(block) * block / 2**20:.4f} MiB")

# %% [markdown]
# Written-out attention's training peak grows ×3.85 and ×3.92 per doubling, like $n^2$: its backward reads the softmax matrix and builds $n \times n$ gradients from it. The loop left to autograd grows ×2.81 and ×3.43: quadratic again, because autograd saves every block's exponentials, although without gradients it holds only a few $n \times$ block slices of scores at a time (it does not cut the queries into tiles). `blockwise_attention`, with its own backward, grows ×1.24 and ×1.39: its peak is a fixed set of tile × block slices plus what grows with $n$, the output, the three gradients and one number per query, so the factor per doubling stays below 2 and rises towards 2 as the part linear in $n$ takes over (the unit tests check that the peak is exactly $a + b\,n$). With a padding length per query the peak is the same plus 0.0625 MiB at every $n$, one boolean tile × block slice of the padding mask: the lengths never become an $n \times n$ mask. The same kind of count, for 8 heads with blocks of 128 keys and $n$ up to 8192, is the training table in the project's README (`benchmarks/attention_memory.py`); its factors per doubling are not these, because its fixed part and its part per position have other sizes.

# %% [markdown]
# Recomputing costs arithmetic, not memory. The floating-point operations of the forward and of the backward pass, counted by `FlopCounterMode` as for the forward above ($n = 1024$, one head of width 64, in units of $n^2 d$):

# %%
# C42: the arithmetic of the backward pass, counted (FlopCounterMode, matrix products)
n, d = 1024, 64
x = torch.randn(1, n, d).to(device).requires_grad_()         # (B, n, D) one head
g = torch.randn(1, n, d).to(device)                         # dL/d output
passes = {}
for name, fn in (("written-out", lambda: written_out_attention(x, x, x)),
                 ("blockwise", lambda: blockwise_attention(x, x, x, block_size=block))):
    with FlopCounterMode(display=False) as counter:
        out = fn()
    forward = counter.get_total_flops()
    with FlopCounterMode(display=False) as counter:
        torch.autograd.grad(out, x, g)
    passes[name] = (forward, counter.get_total_flops())
    print(f"{name:11s}: forward {forward / (n * n * d):.0f} n^2 d, backward {passes[name][1] / (n * n * d):.0f} n^2 d")
total = {name: sum(f) for name, f in passes.items()}
print(f"forward + backward: written-out {total['written-out'] / (n * n * d):.0f} n^2 d, "
      f"blockwise {total['blockwise'] / (n * n * d):.0f} n^2 d, ratio {total['blockwise'] / total['written-out']:.2f}")

# %% [markdown]
# The written-out backward does four matrix products of $n^2 d$ multiply-adds each ($\frac{\partial L}{\partial V} = P^\top \frac{\partial L}{\partial O}$, $\frac{\partial L}{\partial P} = \frac{\partial L}{\partial O} V^\top$, and $\frac{\partial L}{\partial S}$ times $K$ and times $Q$): $8\,n^2 d$ operations. The blockwise backward does the same four and computes $QK^\top$ once more, $10\,n^2 d$; it does not redo the forward's product with $V$, because the output it needs for $D_i$ was saved. Forward and backward together that is $14$ against $12\,n^2 d$, ×1.17: the linear memory costs about a sixth more arithmetic.

# %% [markdown]
# ## 4. Explorer: the online softmax, block by block
#
# Four queries attend over 24 keys. Move **block size** and watch, for the chosen **query i**:
#
# - left: its scores, the block boundaries (thin grey vertical lines) and the **running max** $m$ after each block (red): it only ever steps up; a red triangle marks each block where it rose, which is where the old sums get rescaled (a rise can be too small to see as a step: the readout's factor $e^{m_{\text{old}} - m_{\text{new}}}$ then sits just below 1);
# - middle: the **running sum** $\ell$ after each block. It can go down only at a block with a triangle (a new, larger maximum multiplies it by $e^{m_{\text{old}} - m_{\text{new}}} < 1$), and it always ends on the full softmax's denominator (dashed), whatever the block size;
# - right: the **running output** $a/\ell$ (both components of the value), which lands on full attention's output (dashed) after the last block.
#
# Tick **shuffle the key order** to read the same keys in another order: the path changes, the end point does not. Untick **rescale** to see the classic bug, adding each block's $e^{s_j - m_{\text{new}}}$ to sums still measured against an older maximum: the sum and the output end off their dashed lines. The readout lists the numbers after each block, the output and its largest difference from full attention (around $10^{-16}$ in float64 when rescaling is on), and the bytes of the score arrays: $L \times S$ against one $L \times \text{block}$ slice.

# %% alt="The online softmax explorer: the running maximum and normaliser of blockwise attention block by block, and the partial outputs converging to the full-attention output."
# NBVAL_IGNORE_OUTPUT
online_softmax_explorer()

# %% [markdown]
# ## Exercises
#
# 1. **(explorer)** Set the block size to 1. What is the running sum after the first block, and why? Then set it to 24 (one block). What do the middle and right panels show?
#
# <details><summary>Answer</summary>
#
# With one key per block, after the first block (key 0) $m = s_0$ and $\ell = e^{s_0 - s_0} = 1$. Every later block either adds $e^{s_j - m} \le 1$ (no new maximum; equal to 1 on a tie) or rescales $\ell$ and then adds exactly 1 for the new maximum. With one block of all 24 keys each panel is a single flat step, sitting on its dashed line: one block is ordinary softmax, and the readout's one-block bytes equal the full $L \times S$ bytes.
# </details>
#
# 2. In the explorer, find a block where the running sum goes *down*. What happened to the running maximum at that block? Then untick **rescale**: for which block sizes is the output still right?
#
# <details><summary>Answer</summary>
#
# The maximum increased: the block contains a score larger than all scores before it. The old sum is multiplied by $e^{m_{\text{old}} - m_{\text{new}}} < 1$ so that it is measured relative to the new maximum, and the new block adds less than that shrinkage removed. The red staircase in the left panel steps up at exactly that block (a triangle). Without rescaling, the output is right only when the maximum never rises after the first block: with one block of all 24 keys, or when the first block already holds the largest score; otherwise the old terms keep too much weight. For the starting query 0, whose largest score sits at key 20, that means block sizes 21 to 24 in the unshuffled order.
# </details>
#
# 3. A model has 12 layers and 12 heads and is run on $n = 8192$ tokens in float16. How much memory would the attention score matrices of **one** layer take if they were all held at once, and how much with blocks of 128 keys?
#
# <details><summary>Answer</summary>
#
# Full: $12 \times 8192^2 \times 2$ bytes $= 1.5$ GiB per layer (and training keeps activations of all 12 layers for the backward pass). Blockwise, with all 8192 query rows against one block of 128 keys (the explorer's count): $12 \times 8192 \times 128 \times 2$ bytes $= 24$ MiB; with `attnlib.core.blockwise.blockwise_attention`'s tiles of 256 query rows, one tile × block slice is $12 \times 256 \times 128 \times 4$ bytes $= 1.5$ MiB, not half of that: the library computes the scores in float32 even for float16 inputs (and its forward holds a few such slices at once, §3). The cell after the exercises prints all three. Check with `12 * score_bytes(8192, 8192, dtype=torch.float16) / 2**30`.
# </details>
#
# 4. Blockwise attention does the same $O(n^2 d)$ arithmetic as full attention. What does it *not* fix, and which entry of the seed's table is unchanged?
#
# <details><summary>Answer</summary>
#
# It only removes the $n^2$ *memory*; the compute is still $O(n^2 d)$, so time still grows quadratically (the row "self-attention, $O(n^2 d)$" is unchanged; the FLOP count in §3 is the same for both and grows ×4 when $n$ doubles; the time follows it only roughly at the sizes timed there, and written-out attention's grows faster once its matrices outgrow the caches). Its backward pass even adds arithmetic: it computes $QK^\top$ again to recompute the blocks, $10\,n^2 d$ operations against written-out attention's $8\,n^2 d$ (§3). Reducing the arithmetic needs a different model of attention: local windows, sparse patterns, or low-rank / linear approximations, which in general no longer compute exactly the same output.
# </details>

# %%
# Exercise 3, checked: the numbers of its answer (float16 inputs, 12 heads)
print(f"full: 12 x 8192^2 float16 scores = {12 * score_bytes(8192, 8192, dtype=torch.float16) / 2**30:.2f} GiB")
print(f"one block of 128 keys against all 8192 rows: {12 * score_bytes(8192, 128, dtype=torch.float16) / 2**20:.2f} MiB")
q16 = torch.randn(1, 12, 512, 64).to(device).half()           # (B, H, n, Dh) float16
largest = largest_tensor_bytes(lambda: blockwise_attention(q16, q16, q16, block_size=128))
print(f"blockwise_attention: largest tensor {largest / 2**20:.2f} MiB = 12 x {query_tile(128)} x 128 x 4 bytes "
      f"{'(float32 scores)' if largest == 12 * score_bytes(query_tile(128), 128, dtype=torch.float32) else '(other)'}")
