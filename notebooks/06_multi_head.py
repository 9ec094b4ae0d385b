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
# # 06 · Multi-head attention
#
# **What you will learn**
#
# - what a *head* is, and how $h$ heads with their own projections are concatenated and mixed by $W_O$;
# - why computing all heads with one big projection and a reshape is *the same* as $h$ separate small projections;
# - that `attnlib.MultiHeadAttention` matches PyTorch's `nn.MultiheadAttention` to float32 rounding, masks included (and the mask convention that trips people up);
# - why one wide head of the same total width is a different model from $h$ narrow heads;
# - that the heads are not copies of one another.
#
# **Seed sections taught:** lecture notes 000 (*Chapter 2: the mathematics of attention*) §8 (multi-head attention) and lecture notes 004 (*9 Attention and the Transformer*) §9.10 (multi-head self-attention: motivation, each head, concatenation and output projection).
#
# **Read first:** `05_masking.ipynb` (masks and `valid_lens`, used again here).
#
# **Time:** about 30 minutes.

# %%
# %matplotlib inline
import math

import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F
from torch import nn

from attnlib import causal_mask, default_device, dot_product_attention, padding_mask, set_seed
from attnlib.core.multihead import (
    MultiHeadAttention,
    head_projection,
    merge_heads,
    multihead_by_separate_heads,
    one_wide_head,
    split_heads,
)
from attnlib.figures.heads import heads_weight_maps_figure
from attnlib.util.rounding import (
    rounded as show,  # rounds for printing: same digits on every device
)
from attnlib.widgets import heads_explorer

set_seed(0)


def below(err, tol):
    """'< tol' when the error is below the bound (the same text on every device); otherwise the error itself."""
    return f"< {tol:.0e}".replace("e-0", "e-") if err < tol else f"= {err:.1e}, NOT below {tol:.0e}"

device = default_device()
# Random numbers are drawn on the CPU and then moved to `device`, so every device sees the same inputs.

# %% [markdown]
# ## 1. Why more than one head?
#
# One attention **head (头)** gives each query exactly one row of weights: one way of distributing its attention over the keys. But a token usually has several reasons to look elsewhere at once. A verb may want its subject (a grammatical link) *and* the words that say when something happened (a semantic link); one position may care about its close neighbours *and* about something far away. A single softmax row has to compromise between all of these.
#
# **Multi-head attention (多头注意力)** runs several heads side by side. Each head has its **own** projections, so it compares queries and keys in its own **representation subspace (表示子空间)** and produces its own weight rows. For head $r$ (lecture notes 000 §8, lecture notes 004 §9.10):
#
# $$
# \operatorname{head}_r = \operatorname{Attention}\big(X W_Q^{(r)},\; X W_K^{(r)},\; X W_V^{(r)}\big),
# \qquad W_Q^{(r)}, W_K^{(r)}, W_V^{(r)} \in \mathbb{R}^{d\times d/h}.
# $$
#
# Lecture notes 004 §9.10.2 write the same head with three separate inputs, $\operatorname{head}_r = \operatorname{Attention}(Q W_r^Q, K W_r^K, V W_r^V)$: the rows that ask (queries) may come from one sequence and the rows that answer (keys and values) from another. In **self-attention (自注意力)** all three are $X$, as in most of this notebook. In **cross-attention (交叉注意力)**, notebook 08's decoder, the queries come from the target being written and the keys and values from the encoded source, so the two lengths may differ. A layer built as `mha = MultiHeadAttention(d, h)` is then called as `mha(query, key, value)`, with the three inputs given separately; section 3 checks a cross-attention call as well.
#
# **Counting.** The formulas number heads $r = 1, \ldots, h$ and so does the text (head 1 is the first); in the code head $r$ is index `r - 1`. Tokens, queries and batch rows are named by their code index, from 0: *query 0* is the first token.
#
# Then the heads' outputs for each token are placed side by side (**concatenation, 拼接**) and mixed by an **output projection (输出投影)** $W_O$:
#
# $$
# \operatorname{MHA}(X) = \operatorname{Concat}(\operatorname{head}_1, \ldots, \operatorname{head}_h)\, W_O, \qquad W_O \in \mathbb{R}^{d\times d}.
# $$
#
# With the usual choice $d_k = d_v = d/h$, the concatenation is $h \cdot d/h = d$ wide again, so the layer maps width $d$ to width $d$ and can be stacked. In steps:
#
# 1. **project**: head $r$ makes its own queries, keys and values with $W_Q^{(r)}, W_K^{(r)}, W_V^{(r)}$;
# 2. **attend**: it scores, normalises and averages on its own, which leaves a $d/h$-wide vector per token;
# 3. **concatenate**: a token's $h$ vectors are laid end to end into one $d$-wide vector;
# 4. **mix**: $W_O$ combines features that came from different heads (before it, head 1's features never meet head 2's).
#
# Here is the shape of everything for a batch of 2 sequences of 5 tokens, $d = 16$, $h = 4$:

# %%
# C16: the shapes of multi-head attention, d = 16, h = 4, so each head has width d/h = 4
gen = torch.Generator().manual_seed(0)
B, L, d, h = 2, 5, 16, 4
torch.manual_seed(0)
mha = MultiHeadAttention(d, h).to(device)
x = torch.randn(B, L, d, generator=gen).to(device)     # (B, L, D)

out, weights = mha(x, x, x)                             # self-attention: query = key = value = x
print("input  x       ", tuple(x.shape), "  (B, L, D)")
print("Q split in heads", tuple(split_heads(mha.w_q(x), h).shape), "(B, H, L, Dh)")
print("weights        ", tuple(weights.shape), "(B, H, L, S): one row per head and query")
print("output         ", tuple(out.shape), "  (B, L, D)")
print("parameters:", sum(p.numel() for p in mha.parameters()), "= 4 projections of", d, "x", d, "+ 4 biases")

# %% [markdown]
# ## 2. One big projection, reshaped, is $h$ small projections
#
# Nobody runs $h$ separate matrix products in practice. `MultiHeadAttention` stores one $d\times d$ matrix per role, computes $XW_Q$ once, and **reshapes** the result: features $0..3$ go to head 1, $4..7$ to head 2, and so on (`split_heads`, shape `(B, L, D)` → `(B, H, L, Dh)`). Why is that allowed? Because the columns of a matrix product are computed independently: columns $(r-1)\,d_h \ldots r\,d_h - 1$ of $XW_Q$ (counting columns from 0, heads from 1) are exactly $X$ times the matching columns of $W_Q$. Those columns *are* $W_Q^{(r)}$ (and `nn.Linear`'s bias is cut the same way: head $r$ adds its own slice of it). So the big matrix is just the $h$ small ones laid side by side,
#
# $$
# W_Q = \big[\,W_Q^{(1)} \;\; W_Q^{(2)} \;\; \cdots \;\; W_Q^{(h)}\,\big],
# $$
#
# and the reshape hands each head its own projection. (`nn.Linear` stores a weight transposed, as `(out, in)`: the code's `(Dh, D)` matrix of head $r$ is $W_Q^{(r)\top}$, and `F.linear(x, w)` computes $x\,w^\top = X W_Q^{(r)}$.) Let us check both steps: the slice of $XW_Q$ against $X W_Q^{(r)}$ computed with head $r$'s own small matrix, the other way round, $h$ independent small `nn.Linear(d, d/h)` layers stacked into one $d\times d$ layer and reshaped; and the whole layer against `multihead_by_separate_heads`, which really loops over $h$ separate projections and attention calls:

# %%
# C16: the reshape hands head r exactly X W_Q^(r); the whole layer equals h separate heads
q_heads = split_heads(mha.w_q(x), h)                          # (B, H, L, Dh) from ONE big projection
gaps = []
for r in range(h):
    w_r, b_r = head_projection(mha.w_q, r, h)                  # index r = head r + 1: its (Dh, D) weight W_Q^(r+1) transposed, its bias slice
    gaps.append((q_heads[:, r] - F.linear(x, w_r, b_r)).abs().max().item())
print("max |split_heads(X W_Q)[r] - X W_Q^(r)| over the 4 heads", below(max(gaps), 1e-6))

# the other direction: h independent small projections, stacked into one big one, then reshaped
torch.manual_seed(4)
small = [nn.Linear(d, d // h).to(device) for _ in range(h)]    # head r's own (Dh, D) weight and (Dh,) bias
big = nn.Linear(d, d).to(device)
with torch.no_grad():
    big.weight.copy_(torch.cat([m.weight for m in small]))     # (D, D): the h small weights stacked
    big.bias.copy_(torch.cat([m.bias for m in small]))         # (D,)
gaps_up = [(split_heads(big(x), h)[:, r] - small[r](x)).abs().max().item() for r in range(h)]
print("h separate nn.Linear(16, 4) vs one stacked nn.Linear(16, 16) + split_heads: max |diff|", below(max(gaps_up), 1e-6))

out_sep, weights_sep = multihead_by_separate_heads(mha, x, x, x)
print("one projection + reshape vs h separate heads:")
print("   outputs: max |diff|", below((out - out_sep).abs().max().item(), 1e-6))
print("   weights: max |diff|", below((weights - weights_sep).abs().max().item(), 1e-6))
print("merge_heads(split_heads(x)) - x: max |diff| =", (merge_heads(split_heads(x, h)) - x).abs().max().item(),
      "(exact: it only moves numbers)")

# %% [markdown]
# The lecture's two-head picture labels the first token's outputs (query 0 here) $b_{1,1}$ (from head 1) and $b_{1,2}$ (from head 2). They are two *pieces* of a representation, each $d/h$ wide. Only after concatenation and $W_O$ do they become the token's final output:

# %%
# C16: token 0's head outputs b_11, b_12 are concatenated, then W_O gives its final output
torch.manual_seed(1)
mha2 = MultiHeadAttention(d, 2).to(device)
q2, k2, v2 = (split_heads(proj(x), 2) for proj in (mha2.w_q, mha2.w_k, mha2.w_v))   # (B, 2, L, 8) each
heads_out, _ = dot_product_attention(q2, k2, v2)                                     # (B, 2, L, 8)
b_11, b_12 = heads_out[0, 0, 0], heads_out[0, 1, 0]                                  # heads 1, 2 of token 0, batch row 0
concat = torch.cat([b_11, b_12])                                                     # (16,)
final = mha2.w_o(concat)                                                             # (16,)
print("b_11 width:", b_11.numel(), " b_12 width:", b_12.numel(), " concat width:", concat.numel())
print("W_O(concat) vs the layer's output for token 0: max |diff|",
      below((final - mha2(x, x, x)[0][0, 0]).abs().max().item(), 1e-6))

# %% [markdown]
# ## 3. The same numbers as `nn.MultiheadAttention`
#
# PyTorch's own layer packs $W_Q, W_K, W_V$ into one `in_proj_weight` of shape $(3d, d)$; `MultiHeadAttention.from_torch` splits it and copies every weight. Then the two layers should agree to float32 rounding, with and without masks, and also in cross-attention, where 3 queries from another sequence read the 5 tokens of `x`:

# %%
# C16: parity with torch.nn.MultiheadAttention (same weights), no mask / padding / padding + causal / cross-attention
# bound 1e-5: float32 sums of 16 products of O(1) numbers, then softmax; rounding is ~1e-7 per step
torch.manual_seed(2)
torch_mha = nn.MultiheadAttention(d, h, batch_first=True).to(device)
ours = MultiHeadAttention.from_torch(torch_mha)

valid_lens = torch.tensor([5, 3]).to(device)
real_token = padding_mask(valid_lens, L)          # (B, S), ours: True = real token, may attend
future = causal_mask(L, device=device)            # (L, S), ours: True = j <= i, may attend
y = torch.randn(B, 3, d, generator=torch.Generator().manual_seed(3)).to(device)   # (B, 3, D): another sequence

runs = {   # name: (query, our keywords, torch keywords); keys and values are always x
    "no mask": (x, dict(), dict()),
    "padding": (x, dict(valid_lens=valid_lens), dict(key_padding_mask=~real_token)),
    "padding + causal": (x, dict(valid_lens=valid_lens, is_causal=True),
                         dict(key_padding_mask=~real_token, attn_mask=~future)),
    "cross + padding": (y, dict(valid_lens=valid_lens), dict(key_padding_mask=~real_token)),
}
for name, (query, our_kw, torch_kw) in runs.items():
    o1, w1 = ours(query, x, x, **our_kw)
    o2, w2 = torch_mha(query, x, x, average_attn_weights=False, **torch_kw)   # torch masks: True = HIDDEN
    diff = max((o1 - o2).abs().max().item(), (w1 - w2).abs().max().item())
    print(f"{name:17s} max |ours - torch| over outputs and weights", below(diff, 1e-5))
print("cross-attention: query", tuple(y.shape), "keys/values", tuple(x.shape), "-> output", tuple(o1.shape),
      "weights", tuple(w1.shape), "(B, H, L, S)")

# %% [markdown]
# > **Common mistake.** `nn.MultiheadAttention`'s `key_padding_mask` and boolean `attn_mask` mean the **opposite** of ours: in PyTorch `True` = "ignore this key". That is why the cell above passes `~real_token` and `~future`. Hand it our mask unchanged and nothing complains, but the layer attends *only to the padding*, and a sequence with no padding becomes all NaN:

# %%
# C16: the inverted-mask mistake, with numbers
o_wrong, w_wrong = torch_mha(x, x, x, key_padding_mask=real_token, average_attn_weights=False)   # not inverted!
nan_count = int(torch.isnan(o_wrong[0]).sum())
print(f"batch row 0 (no padding): {nan_count} of {o_wrong[0].numel()} output entries are NaN")
print("w_wrong[1, 0, 0] (batch row 1, head 1, query 0):", show(w_wrong[1, 0, 0], 3),
      " <- all on keys 3 and 4, the 2 padding keys")

# %% [markdown]
# ## 4. One wide head is not $h$ heads
#
# Could we skip the splitting and use one head of the full width $d$? It has exactly the same parameters. But it is a different model. Write $q_i^{(r)}, k_j^{(r)}$ for the pieces of $q_i, k_j$ that head $r$ gets. The wide head's score is
#
# $$
# \frac{q_i\cdot k_j}{\sqrt{d}} = \frac{1}{\sqrt{d}}\sum_{r=1}^{h} q_i^{(r)}\cdot k_j^{(r)}
# = \frac{1}{\sqrt h}\sum_{r=1}^{h} s_{ij}^{(r)}, \qquad s_{ij}^{(r)} = \frac{q_i^{(r)}\cdot k_j^{(r)}}{\sqrt{d/h}} ,
# $$
#
# a single blend of all heads' scores, pushed through **one** softmax. So each query gets one weight row, and all $d$ value features are mixed with those same weights. With $h$ heads each query gets $h$ rows, each computed from its own slice and applied to its own slice of the values. A wide head cannot attend to token 2 with half its features and to token 0 with the other half; $h$ heads can (a hand-built example after the next cell shows it). Note also what the wide head is *not*: it blends the heads' **scores** before one softmax, which is not the average of the heads' weight maps (the last lines below print both).

# %%
# C17: one wide head (same projections, one softmax) differs from h heads
out_wide, w_wide = one_wide_head(mha, x, x, x)
print("weights: h heads", tuple(weights.shape), " vs one wide head", tuple(w_wide.shape))
print("outputs differ, max |MHA - wide head| =", show((out - out_wide).abs().max(), 3))

# the wide head's scores are the per-head scores summed and divided by sqrt(h), as in the formula above
q_h, k_h = split_heads(mha.w_q(x), h), split_heads(mha.w_k(x), h)          # (B, H, L, Dh)
s_heads = q_h @ k_h.transpose(-2, -1) / math.sqrt(d // h)                   # (B, H, L, S)
w_from_heads = torch.softmax(s_heads.sum(1) / math.sqrt(h), dim=-1)         # (B, L, S)
print("wide-head weights vs softmax(sum_r s^(r) / sqrt(h)): max |diff|", below((w_wide - w_from_heads).abs().max().item(), 1e-6))
print("wide-head weights vs the mean of the 4 heads' maps: max |diff| =", show((w_wide - weights.mean(1)).abs().max(), 2))
print("query 0's row: wide head", show(w_wide[0, 0], 3))
for r in range(h):
    print(f"               head {r + 1}   ", show(weights[0, r, 0], 3))

# %% [markdown]
# Random projections show that the two models differ, not what $h$ heads can do that one wide head cannot. So here are two heads built by hand, the kind of pair notebook 10 finds in a trained model: one reads the **previous token**, the other always reads **token 0**. Four tokens, $d = 8$, $h = 2$ ($d_h = 4$). Token $t$ is $x_t = [p_t \mid c_t]$: a one-hot position $p_t$ in features 0..3 and a content $c_t$ in features 4..7 ($c_0 = [1, 2, 3, 4]$, $c_1 = [5, 6, 7, 8]$, ...). $W_Q$ and $W_K$ read only the positions: head 1's query at position $i$ is $30\,e_{i-1}$ (the zero vector at position 0, which has no previous token) and head 2's is $30\,e_0$, and both heads' keys are the key's own position $e_j$; so head 1's score is $30/\sqrt{4} = 15$ on key $i - 1$ and 0 elsewhere, head 2's is 15 on key 0. $W_V = W_O = I$, so head 1 returns the first half of what it reads and head 2 the second half. The wide head is the same four matrices with one softmax (`one_wide_head`): its score $30/\sqrt 8$ is on key $i-1$ *and* on key 0.

# %%
# C17: two hand-built heads do two jobs at once (previous token | token 0); the wide head of the same weights cannot
L4, d8, beta = 4, 8, 30.0
pos = torch.eye(L4)                                                    # (L, 4) one-hot positions
content = torch.arange(1.0, 17.0).reshape(L4, 4)                       # (L, 4) each token's content: [1 2 3 4], [5 6 7 8], ...
x_hand = torch.cat([pos, content], dim=-1)[None].to(device)           # (B=1, L=4, D=8): x_t = [p_t | c_t]

shift = torch.diag(torch.ones(L4 - 1), diagonal=-1)                    # (4, 4): p_i -> e_(i-1) (row-vector convention)
to_first = torch.zeros(L4, L4)
to_first[:, 0] = 1.0                                                   # (4, 4): p_i -> e_0, for every i
W_Q = torch.zeros(d8, d8)                                              # x W_Q: columns 0..3 head 1, 4..7 head 2
W_Q[:4, :4], W_Q[:4, 4:] = beta * shift, beta * to_first              # head 1 asks for position i - 1, head 2 for position 0
W_K = torch.zeros(d8, d8)
W_K[:4, :4], W_K[:4, 4:] = torch.eye(L4), torch.eye(L4)                # both heads' keys: the key's own position
hand = MultiHeadAttention(d8, 2, bias=False).to(device)
with torch.no_grad():                                                  # nn.Linear stores weights as (out, in): transpose
    hand.w_q.weight.copy_(W_Q.T)
    hand.w_k.weight.copy_(W_K.T)
    hand.w_v.weight.copy_(torch.eye(d8))                               # W_V = I
    hand.w_o.weight.copy_(torch.eye(d8))                               # W_O = I

out_hand, w_hand = hand(x_hand, x_hand, x_hand)                        # (1, L, D), (1, H=2, L, S)
out_wide_hand, w_wide_hand = one_wide_head(hand, x_hand, x_hand, x_hand)  # (1, L, D), (1, L, S)
print("query 3's weights over keys 0..3:")
print("   head 1 (previous token):", show(w_hand[0, 0, 3], 3))
print("   head 2 (token 0):       ", show(w_hand[0, 1, 3], 3))
print("   one wide head:          ", show(w_wide_hand[0, 3], 3))
wanted = torch.cat([x_hand[0, 2, :4], x_hand[0, 0, 4:]])              # [first half of v_2 | second half of v_0]
print("[v_2's first half | v_0's second half]:", show(wanted, 2))
print("2 heads' output for query 3:           ", show(out_hand[0, 3], 2),
      " max |diff|", below((out_hand[0, 3] - wanted).abs().max().item(), 1e-3))
print("wide head's output for query 3:        ", show(out_wide_hand[0, 3], 2),
      " max |diff| =", show((out_wide_hand[0, 3] - wanted).abs().max(), 2))
print("   ... which is (v_0 + v_2) / 2, to 2 decimals:", show((x_hand[0, 0] + x_hand[0, 2]) / 2, 2))

# %% [markdown]
# Each head puts all its weight (1.0 to three decimals) on its own key, 2 and 0, and the concatenation is $[$first half of $v_2 \mid$ second half of $v_0]$: the position of token 2 and the content of token 0. The wide head has the same parameters but one row of weights for all 8 features. Its row splits evenly between keys 2 and 0, and its output is the average $(v_0 + v_2)/2$ in every feature: it cannot take one half from one token and the other half from another. That is the sense of lecture notes 000 §8: a wide head still has only one set of position weights (一个宽头仍只有一组位置权重).
#
# ## 5. The heads are not copies
#
# > **Common mistake.** Multi-head attention is sometimes pictured as one head's result repeated $h$ times. Lecture notes 004 §9.10 warn against this: every head has its **own** projection parameters, learns its own relation, and the concatenation still goes through $W_O$.
#
# Two checks. First, the heads' weight maps differ from each other (a table of the mean absolute difference between each pair of heads' maps: zeros would mean copies). Second, the real layer's output differs from what we would get by copying head 1's output into every slot:

# %%
# C28: the heads' weight maps differ pairwise (0 would mean copies)
gap = (weights[:, :, None] - weights[:, None, :]).abs().mean(dim=(0, 3, 4))   # (H, H)
print("mean |A_r - A_s| between heads r, s:")
for r in range(h):
    print(f"   head {r + 1}:", show(gap[r], 3))

# C28: copying head 1 into all h slots is a different layer
v_h = split_heads(mha.w_v(x), h)                                  # (B, H, S, Dh)
heads_out, _ = dot_product_attention(q_h, k_h, v_h)               # (B, H, L, Dh): the real heads
copied = heads_out[:, :1].expand(-1, h, -1, -1)                   # head 1 repeated h times
out_copied = mha.w_o(merge_heads(copied))
print("real layer vs heads concatenated + W_O: max |diff|",
      below((mha.w_o(merge_heads(heads_out)) - out).abs().max().item(), 1e-6))
print("real layer vs 'head 1 copied h times': max diff =", show((out - out_copied).abs().max(), 3))

# %% [markdown]
# These heads have **random** projections, so their maps differing is almost automatic: the check shows that each head has its own parameters, not that heads learn different relations. What trained heads do is measured in notebook 10 (`10_real_heads.ipynb`): all 72 heads (6 layers × 12) of a pretrained model, where some heads look almost only at the previous token, others at one special token, and the twelve heads of one layer, fed the same input, still attend differently.
#
# A caution from lecture notes 000 §8: different heads *can* end up with different jobs, but nothing in the architecture makes a head stand for a nameable linguistic notion ("the syntax head"). Nor is a weight map an explanation of a prediction. A big weight on key $j$ says only that this head, at this layer, copies a lot of $v_j$ into query $i$'s piece of the output; that piece is mixed with every other head's piece by $W_O$, added to the token's own input by a residual connection (taught in notebook 08; notebook 04 shows that it takes the output out of the values' convex hull) and passed through the feed-forward network (notebook 08) before anything is predicted.
#
# ## 6. Explore: number of heads, with and without positions
#
# The sentence *the cat sat on the mat* with random embeddings ($d = 16$) and fixed random projections ($W_Q$ is multiplied by 2, the explorer's `score_gain=2.0`, so that the random scores are not all nearly equal and the maps show some contrast, as a trained model's would). The slider sets $h$ (1, 2, 4 or 8 heads, $d_h = 16/h$); the projections stay the same, only how their output is cut into heads changes. Every head has a panel (heads that do not exist at the chosen $h$ are hatched). In the left column: the panel "one wide head (Dh = 16)", the wide head of the same projections, and the **average** of the $h$ heads' maps. The checkbox adds the sinusoidal positional encoding of notebook 07 to the embeddings. The readout prints $h$, $d_h$, the mean difference between the heads' maps, how far their average is from the wide head, and how far apart the rows of the two *the* tokens (queries 0 and 4) are.
#
# Things to look for:
# - the wide head's map is the same for every $h$: it depends only on $W_Q, W_K$ (section 4's formula; the table's last column rebuilds it at each $h$ from the $h$ heads' scores, $\operatorname{softmax}\big(\tfrac{1}{\sqrt h}\sum_r s^{(r)}\big)$, and compares it with the map at $h = 1$), while the average of the heads' maps changes with $h$ and equals it only at $h = 1$, where the single head *is* the wide head (the table below prints exactly 0.0 there, and 0.299 to 0.602 for $h = 2$ to 8);
# - without positions the two *the* rows are identical in every head, and so are the two *the* columns: both tokens have the same embedding, hence the same query and the same key. Tick "+ positions" and they split.

# %% alt="The heads explorer at h = 4 without positions: the wide head's weight map (top left), the maps of heads 1 to 4 cut from the same projections, their mean (bottom left), and empty slots for heads 5 to 8."
# NBVAL_IGNORE_OUTPUT
heads_explorer()

# %% [markdown]
# The same explorer's readout at a few settings, computed by a fresh instance (the one above stays where the text says):

# %%
# C17, C28: the explorer's numbers at other settings (a fresh instance; the displayed one is not moved)
probe = heads_explorer()
from attnlib.course.examples import demo_projections

data = demo_projections()                                               # the explorer's input and projections (its defaults)
q_all, k_all = F.linear(data.x, data.w_q), F.linear(data.x, data.w_k)   # (1, L, D), float64
wide_1 = torch.as_tensor(probe.compute(heads=1, positions=False).arrays["wide"], dtype=torch.float64)  # (L, S)
rows_gap = "max |row 0 - row 4| ('the'), all heads"
print("            mean |A_r - A_s|   max |mean of heads - wide|   max |row 0 - row 4| ('the')   max |row 0 - row 4| ('the')"
      "   max |wide rebuilt at h - wide at h = 1|")
print("h   Dh      no positions       no positions                 no positions                  + positions      "
      "             no positions")
for h_ in (1, 2, 4, 8):
    plain, with_pos = probe.state(heads=h_, positions=False), probe.state(heads=h_, positions=True)
    s_heads = split_heads(q_all, h_) @ split_heads(k_all, h_).transpose(-2, -1) / math.sqrt(16 // h_)  # (1, H, L, S)
    wide_h = torch.softmax(s_heads.sum(1) / math.sqrt(h_), dim=-1)[0]   # (L, S) section 4: one softmax of the blend
    gap_wide = (wide_h - wide_1).abs().max().item()
    print(f"{h_:<3d} {16 // h_:<7d} {show(plain['mean |A_r - A_s| between heads'], 3):<18} "
          f"{show(plain['max |mean of heads - wide head|'], 3):<28} "
          f"{below(plain[rows_gap], 1e-9):<29} {show(with_pos[rows_gap], 3):<29} {below(gap_wide, 1e-12)}")

# %% [markdown]
# The key picture: the wide head's single map ("one wide head (Dh = 16)", as in the explorer's top-left panel) next to the four maps of the same projections cut into 4 heads.

# %% alt="The attention weight map of one wide head (Dh = 16) next to the four maps of the same projections cut into 4 heads, each head attending differently."
# C28, C17: the key picture (also saved as figures/heads_weight_maps.png)
fig = plt.figure(figsize=(14.0, 3.3), layout="constrained")
_ = heads_weight_maps_figure(fig)

# %% [markdown]
# ## Exercises
#
# 1. **(widget)** Step the number of heads from 1 to 8. What happens to the head width $d_h$, and how does the mean difference between heads' maps change? Without positions, which rows *and columns* of every map are identical, and why? What changes when you tick "+ positions"?
# 2. `MultiHeadAttention(12, 5)` raises an error. Why must $h$ divide $d$ here, and what would you have to change to allow $h = 5$?
# 3. In section 4 the wide head's scores were $\frac{1}{\sqrt h}\sum_r s^{(r)}$. If all $h$ heads happened to produce *the same* score matrix $s$, would the wide head then equal each of the heads? (Hint: compare $\sqrt h\, s$ with $s$.)
# 4. Count the parameters of `MultiHeadAttention(512, 8)` and of `MultiHeadAttention(512, 1)`. What does the choice of $h$ change, if not the parameter count?
#
# <details><summary>Answer</summary>
#
# 1. $d_h = 16, 8, 4, 2$. With one head there is nothing to compare (difference 0); with 2, 4, 8 heads the mean difference is 0.166, 0.183 and 0.197 (the table above): far from copies at every $h$. (Read nothing into their order: it belongs to this draw of random projections, not to $h$.) The rows of *the* (queries 0 and 4) are identical in every map, and so are the columns of *the* (keys 0 and 4): both tokens have the same embedding and there is no position information, so they have the same query and the same key. With "+ positions" the two tokens' inputs differ and their rows split (the largest gap is 0.18 to 0.48, depending on $h$).
# 2. Each head takes an equal slice $d/h$ of the features and the concatenation must be $d$ wide again; 12 is not divisible by 5. You would need a head width $d_h$ chosen separately (e.g. $d_h = 3$, projections $d \to h\,d_h = 15$) and a $W_O$ of shape $15\times 12$.
# 3. No. The wide head would use the scores $\frac{1}{\sqrt h}\sum_r s = \sqrt h\, s$: the same ranking, but a sharper softmax, as if the temperature were divided by $\sqrt h$. That is the *only* difference: every head has the same weight row softmax$(s)$, and applying one row to each slice of $V$ and concatenating is the same as applying it to all of $V$ at once. So $h$ heads with identical scores give softmax$(s)\,V$, the wide head softmax$(\sqrt h\, s)\,V$.
# 4. Both have $4\,(512\cdot 512 + 512) = 1\,050\,624$ parameters. The number of heads changes how the same parameters are *used*: how many softmax rows each query gets and how many features each of them sees.
# </details>
