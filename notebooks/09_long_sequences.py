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
# - the **online softmax**: reading the keys in blocks while keeping a running maximum and a running sum, which gives *exactly* the same output as full attention while never holding the $n \times n$ score matrix.
#
# **Seed sections taught:** `004_cf2f09ec33ad5dce.txt` §9.7 (CNN, RNN and self-attention; §9.7.1 what the comparison means; §9.7.2 the trade-off for long sequences and the "blockwise strategy").
#
# **Read first:** `08_encoder_decoder.ipynb` (the whole Transformer); `03_softmax_gradient.ipynb` for why softmax is computed with the row maximum subtracted.
#
# **Time:** about 25 minutes; running it top to bottom takes about 20 seconds (most of it measuring).

# %%
# %matplotlib widget
import math

import matplotlib.pyplot as plt
import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from attnlib import default_device, dot_product_attention, set_seed
from attnlib.blockwise import blockwise_attention, blockwise_attention_steps
from attnlib.costs import (allocated_bytes, complexity_table, fitted_slope, layer_costs, score_bytes,
                           written_out_attention)
from attnlib.figures.sequence_costs import measured_cost_panels
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
# - **Compute.** A convolution applies a $d \times d$ matrix for each of its $k$ taps at every position: $k\,n\,d^2$. A recurrent layer (循环神经网络, RNN) applies a $d \times d$ matrix once per position: $n\,d^2$. Self-attention compares every pair of positions with a length-$d$ dot product: $n^2 d$ (plus the $n d^2$ of its projections, which the table leaves out). So attention is the cheapest of the three while $n < d$, and the most expensive once $n \gg d$.
# - **Sequential steps.** A CNN and self-attention compute all positions at once; an RNN must finish position $t-1$ before it can start position $t$.
# - **Longest path.** How many steps a signal from position 0 needs to reach position $n-1$. A convolution only sees $k$ neighbours, so it needs about $n/k$ stacked layers (fewer with dilated convolutions); an RNN passes it through $n-1$ recurrent steps; self-attention connects any two positions in one step.
#
# > **Note on the slides:** the lecture's middle column counts "positions that can be computed in parallel within a layer": $O(n)$ for CNN, $O(1)$ for RNN, $O(n)$ for self-attention. The same fact is often stated the other way round, as the *minimum number of sequential operations*: $O(1)$, $O(n)$, $O(1)$ (the table above uses this form). Both say the RNN is the one that cannot be parallelised over positions. The complexities also depend on the implementation, the channel widths and how a CNN grows its receptive field.
#
# The longest path can be checked with autograd: the output at the last position depends on the input at position 0 exactly when the gradient between them is non-zero. For $n = 16$ positions and kernel width $k = 3$:

# %%
# C41: the longest path, measured with gradients: when does output n-1 first depend on input 0?
n, width = 16, 4
x = torch.randn(1, n, width, requires_grad=True)              # (B, n, d)
conv = nn.Conv1d(width, width, kernel_size=3, padding=1)       # same width, "same" padding
h, conv_layers = x.transpose(1, 2), 0                          # (B, d, n) as Conv1d wants
while True:                                                    # stack convolutions until y[n-1] sees x[0]
    h, conv_layers = conv(h), conv_layers + 1
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
print(f"{'CNN (k = 3)':15s} {conv_layers:<29d} 1")
print(f"{'RNN':15s} {rnn_layers!s:29s} {n}")
print(f"{'self-attention':15s} {attn_layers!s:29s} 1")
print("CNN layers needed = ceil((n - 1) / ((k - 1) / 2)) =", math.ceil((n - 1) / ((3 - 1) / 2)))

# %% [markdown]
# A centred kernel of width $k$ widens each output's view by $(k-1)/2$ positions on each side per layer, so the last position needs $\lceil (n-1) / ((k-1)/2) \rceil = 15$ stacked layers to reach position 0: a path of length $O(n/k)$. The RNN sees position 0 after one layer, but only through a chain of $n - 1 = 15$ recurrent updates, done one after another; self-attention reaches it in one step of a single layer.
#
# ## 2. Measured: time and memory as $n$ grows
#
# `attnlib.costs.layer_costs` runs one forward pass of each layer (width $d = 64$, one sequence, float32) for growing $n$, measures its median time and counts its **peak memory** exactly: the bytes of the tensors the call creates that are alive at the same moment (`attnlib.costs.allocated_bytes` watches every operation and every tensor freed; see the module's docstring). Self-attention here is the written-out $\operatorname{softmax}(XX^\top/\sqrt d)X$, which holds the full $n \times n$ score matrix. Times depend on the machine, so this cell's output is not compared by the tests (the memory column is the same on every machine):

# %%
# NBVAL_IGNORE_OUTPUT
# C41: times measured on this machine (they differ between machines and runs); memory counted exactly
ns = [256, 512, 1024, 2048]
rows = layer_costs(ns, d_model=64, kernel_size=3, device=device, repeats=2)
print(f"{'layer':15s} {'n':>5s} {'time (ms)':>10s} {'peak tensor memory (MiB)':>25s}")
for r in rows:
    print(f"{r.layer:15s} {r.n:5d} {r.seconds * 1e3:10.2f} {r.peak_bytes / 2**20:25.2f}")

# %%
# NBVAL_IGNORE_OUTPUT
# C41: the same numbers on log-log axes; a straight line of slope p means cost ∝ n^p
fig, axes = plt.subplots(1, 2, figsize=(9, 3.4), layout="constrained")
_ = measured_cost_panels(rows, axes)

# %% [markdown]
# On log-log axes a cost that grows like $n^p$ is a straight line of slope $p$. The dotted guides have slopes 1 and 2. Timings of small layers on a busy CPU are noisy (and on a GPU, tiny kernels are dominated by launch overhead), but memory is clear: attention's line has slope 2, the RNN's and the CNN's slope 1. The arithmetic says what must exist at the peak: the score matrix alone is $n^2$ numbers of 4 bytes, the RNN's and CNN's output $n \cdot d$; written-out attention holds two such matrices at once (the scores and their softmax):

# %%
# C41: what the arithmetic says, and the growth rate of the counted memory
print(f"{'n':>5s} {'n x n scores (MiB)':>19s} {'n x d output (MiB)':>19s} {'attention FLOPs / RNN FLOPs':>28s}")
by_layer = {name: [r for r in rows if r.layer == name] for name in ("self-attention", "RNN", "CNN")}
for att, rnn in zip(by_layer["self-attention"], by_layer["RNN"]):
    print(f"{att.n:5d} {att.largest_intermediate_bytes / 2**20:19.2f} {rnn.largest_intermediate_bytes / 2**20:19.2f} "
          f"{att.flops / rnn.flops:28.1f}")
att_slope = fitted_slope(ns[1:], [r.peak_bytes for r in by_layer["self-attention"][1:]])
rnn_slope, cnn_slope = (fitted_slope(ns[1:], [r.peak_bytes for r in by_layer[name][1:]]) for name in ("RNN", "CNN"))
# Exact byte counts, so the slopes are the same on every machine: n^2 terms give 2, n terms 1.
print(f"fitted slope of the peak memory: attention {att_slope:.2f}, RNN {rnn_slope:.2f}, CNN {cnn_slope:.2f}")
print("attention's memory grows like n^2 (fitted slope between 1.9 and 2.1):", 1.9 < att_slope < 2.1)
print("it holds two n x n matrices (scores and softmax) at every n:",
      all(r.peak_bytes >= 2 * r.largest_intermediate_bytes for r in by_layer["self-attention"]))

# %% [markdown]
# The ratio of attention's to the RNN's compute is $n^2 d / (n d^2) = n/d$: at $n = d = 64$ they are equal, and at $n = 2048$ attention does 32 times more arithmetic. One layer with 8 heads at $n = 32{,}768$ would need $8 \times 32768^2 \times 4$ bytes $= 32$ GiB just for its score matrices:

# %%
# C41: the n^2 wall, per layer with 8 heads, float32
for n in (1024, 4096, 16384, 32768, 131072):
    print(f"n = {n:6d}: score matrices of 8 heads = {8 * score_bytes(n, n) / 2**30:8.2f} GiB")

# %% [markdown]
# So "every position can look at every other one directly" and "suitable for arbitrarily long sequences" are not the same statement. Long inputs call for local attention, sparse attention, linear-attention approximations, or computing exact attention **in blocks**, the last of which is next.
#
# ## 3. Blockwise attention with an online softmax
#
# The $n \times n$ matrix exists only because the softmax needs a whole row at once: its denominator $\sum_j e^{s_j}$ runs over every key, and for numerical safety the row maximum is subtracted first (notebook 03). The trick is to compute both **incrementally**. Split the keys (and values) of one query's row into blocks $B_1, B_2, \ldots$ and keep three running quantities:
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
# The factor $e^{m^{(b-1)} - m^{(b)}} \le 1$ re-expresses the old sums relative to the new maximum (it is 1 when the maximum did not change). By induction, after every block $\ell = \sum_{j\ \text{seen}} e^{s_j - m}$ exactly, so after the last block $a/\ell = \sum_j \operatorname{softmax}(s)_j\, v_j$: the same number full attention computes, not an approximation. Only an $L \times \text{block}$ slice of scores exists at any time. (This is the idea behind FlashAttention-style kernels, which also keep the blocks in fast on-chip memory.)
#
# The running quantities after each block, for one query row of 10 keys in blocks of 4, against the prefix softmax computed directly:

# %%
# C42: the running max and running sum after each block equal the max and sum over the keys seen so far
q1 = torch.randn(1, 8, dtype=torch.float64).to(device)        # one query
k1 = torch.randn(10, 8, dtype=torch.float64).to(device)       # ten keys
v1 = torch.randn(10, 3, dtype=torch.float64).to(device)
s = (q1 @ k1.T / math.sqrt(8))[0]                             # (S,) all scores, for checking only
for step in blockwise_attention_steps(q1, k1, v1, block_size=4):
    seen = s[: step.key_stop]
    m, l = step.running_max[0].item(), step.running_sum[0].item()
    print(f"keys 0..{step.key_stop - 1}: m = {m:.4f} (max of seen {seen.max().item():.4f}), "
          f"l = {l:.4f} (Σ exp(s - m) over seen {torch.exp(seen - m).sum().item():.4f})")
full_out, _ = dot_product_attention(q1, k1, v1)
print("output equals full attention:", torch.allclose(step.output, full_out, atol=1e-12))

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
        ok = (out - full).abs().max().item() < 1e-5 and (out - sdpa).abs().max().item() < 1e-5
        print(f"causal={causal!s:5s} block={block:3d}: max |blockwise - full| < 1e-5 and vs SDPA: {ok}")

# %% [markdown]
# ### How much memory it saves
#
# The largest score array: full attention holds $L \times S$ numbers, blockwise attention $L \times \text{block}$. With $L = S = n$ and a fixed block, the first grows like $n^2$, the second like $n$:

# %%
# C42: the largest intermediate, by arithmetic (float32, one head)
block = 256
print(f"{'n':>6s} {'full L x S (MiB)':>17s} {'blockwise L x block (MiB)':>26s} {'ratio':>7s}")
for n in (1024, 4096, 16384, 65536):
    full_b, block_b = score_bytes(n, n), score_bytes(n, block)
    print(f"{n:6d} {full_b / 2**20:17.2f} {block_b / 2**20:26.2f} {full_b / block_b:7.0f}")

# %% [markdown]
# And counted exactly (the peak bytes of the tensors one call creates, one head of width 64; an exact count, so the same on every machine and device):

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
print("at n = 2048, blockwise needs less than 1/4 of the written-out memory:", blockwise < written / 4)

# %% [markdown]
# ## 4. Explorer: the online softmax, block by block
#
# Four queries attend over 24 keys. Move **block size** and watch, for the chosen **query i**:
#
# - left: its scores, the block boundaries (dotted) and the **running max** $m$ after each block (red): it only ever steps up;
# - middle: the **running sum** $\ell$ after each block; it *drops* whenever a new, larger maximum rescales it by $e^{m_{\text{old}} - m_{\text{new}}}$, and it always ends on the full softmax's denominator (dashed), whatever the block size;
# - right: the bytes of the largest score array, full $L \times S$ against one $L \times \text{block}$.
#
# The readout shows the numbers, including the largest difference between the blockwise and the full output (around $10^{-16}$ in float64).

# %%
# NBVAL_IGNORE_OUTPUT
online_softmax_explorer()

# %% [markdown]
# ## Exercises
#
# 1. **(explorer)** Set the block size to 1. What is the running sum after the first block, and why? Then set it to 24 (one block). How many points does the middle panel show, and where is it?
#
# <details><summary>Answer</summary>
#
# With one key per block, after the first block $m = s_1$ and $\ell = e^{s_1 - s_1} = 1$. Every later block either adds $e^{s_j - m} < 1$ (no new maximum) or rescales $\ell$ and then adds exactly 1 for the new maximum. With one block of all 24 keys there is a single point, sitting on the dashed line: one block is ordinary softmax, and the "largest score array" bar equals the full one.
# </details>
#
# 2. In the explorer, find a block where the running sum goes *down*. What happened to the running maximum at that block?
#
# <details><summary>Answer</summary>
#
# The maximum increased: the block contains a score larger than all scores before it. The old sum is multiplied by $e^{m_{\text{old}} - m_{\text{new}}} < 1$ so that it is measured relative to the new maximum, and the new block adds less than that shrinkage removed. The red staircase in the left panel steps up at exactly that block.
# </details>
#
# 3. A model has 12 layers and 12 heads and is run on $n = 8192$ tokens in float16. How much memory would the attention score matrices of **one** layer take if they were all held at once, and how much with blocks of 128 keys?
#
# <details><summary>Answer</summary>
#
# Full: $12 \times 8192^2 \times 2$ bytes $= 1.5$ GiB per layer (and training keeps activations of all 12 layers for the backward pass). Blockwise: $12 \times 8192 \times 128 \times 2$ bytes $= 24$ MiB. Check with `12 * score_bytes(8192, 8192, dtype=torch.float16) / 2**30`.
# </details>
#
# 4. Blockwise attention does the same $O(n^2 d)$ arithmetic as full attention. What does it *not* fix, and which entry of the seed's table is unchanged?
#
# <details><summary>Answer</summary>
#
# It only removes the $n^2$ *memory*; the compute is still $O(n^2 d)$, so time still grows quadratically (the row "self-attention, $O(n^2 d)$" is unchanged). Reducing the arithmetic needs a different model of attention: local windows, sparse patterns, or low-rank / linear approximations, which in general no longer compute exactly the same output.
# </details>
