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
# # 08 · Encoder, decoder, and a tiny Transformer that learns to reverse
#
# **What you will learn**
#
# - why attention on its own is not yet a model, and which parts the Transformer adds around it;
# - the encoder block and the decoder block as code, in the original **Post-LN** order and the **Pre-LN** variant, and that ours give the same numbers as PyTorch's `nn.TransformerEncoderLayer` / `nn.TransformerDecoderLayer`;
# - why a Transformer normalises each token on its own (LayerNorm) instead of across the batch (BatchNorm), shown with padding;
# - how cross-attention connects the decoder to the encoder, and why its map is [target length × source length];
# - training a tiny encoder–decoder on sequence reversal, and reading the alignment it learned from its cross-attention.
#
# **Seed sections taught:** lecture notes 000 (*Chapter 2: the mathematics of attention*) §9 (attention is not yet a complete model), and lecture notes 004 (*9 Attention and the Transformer*) §9.13 (overall architecture: encoder and decoder blocks), §9.14 (causal masked attention), §9.15 (layer normalisation, and how it differs from BatchNorm) and §9.16 (passing information from the encoder to the decoder).
#
# **Read first:** `05_masking.ipynb` (padding and causal masks), `06_multi_head.ipynb` (multi-head attention) and `07_positional_encoding.ipynb` (positions).
#
# **Time:** about 40 minutes; running it top to bottom takes one to two minutes on a laptop CPU (most of it is the training and the decoding in §6).

# %%
# %matplotlib inline
import inspect
import math

import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F
from torch import nn

from attnlib import (
    causal_mask,
    default_device,
    dot_product_attention,
    padding_mask,
    plotting,
    set_seed,
)
from attnlib.core.multihead import split_heads
from attnlib.core.normalization import block_gradient_norms, norm_context_dependence
from attnlib.core.transformer import DecoderBlock, EncoderBlock, layer_norm
from attnlib.course.decoding import anti_diagonal_mass, trace_greedy_decoding
from attnlib.course.examples import (
    DEFAULT_SOURCE,
    Seq2SeqConfig,
    TrainConfig,
    trained_reversal_model,
    untrained_reversal_model,
)
from attnlib.figures.decoding import cross_attention_panel
from attnlib.models.seq2seq.model import Seq2SeqTransformer, greedy_decode
from attnlib.models.seq2seq.toy_tasks import EOS, make_batch, token_labels
from attnlib.models.seq2seq.training import sequence_accuracy, train_seq2seq
from attnlib.util.device import num_threads
from attnlib.widgets import decoding_explorer

set_seed(0)
device = default_device()
# Random numbers are drawn on the CPU and then moved to `device`, so every device sees the same inputs.

# %% [markdown]
# ## 1. Attention alone is not a model yet
#
# The previous notebooks built one operation: every position sends a query, compares it with every key, and reads back a weighted average of the values. That solves *exchanging information by content*. It leaves several things open:
#
# - **Order.** Nothing in $\operatorname{softmax}(QK^\top/\sqrt{d_k})V$ knows where a token sits. Shuffle the tokens and the outputs are shuffled the same way, nothing more (notebook 07 fixes this with positional encodings).
# - **Depth.** Each output row is a convex combination of value rows, so it lies inside their convex hull. With no projections ($V = X$) the value rows are the tokens themselves, so stacking such layers can only shrink the hull: the tokens are averaged towards one point. With a value projection the hull is that of $X W_V$, which can be larger than $X$'s, so the spread need not shrink, but the tokens can still lose what tells them apart; the general statement is **rank collapse (秩坍缩)**: Dong, Cordonnier and Loukas (2021, "Attention is not all you need: pure attention loses rank doubly exponentially with depth") prove that stacks of attention alone tend towards outputs whose rows are all the same, and that residual connections and FFNs are what stop it. Deep stacks need **residual connections (残差连接)** to carry each token's own signal past the mixing, and **normalisation (归一化)** to keep the scale of the activations in check.
# - **Per-token computation.** Attention mixes tokens but applies no non-linearity to any single token; a **position-wise feed-forward network (逐位置前馈网络, FFN)** does that.
# - **An output objective.** Something has to turn the final vectors into predictions: a linear layer and a softmax over the vocabulary.
#
# Order and depth are easy to see with parameter-free attention ($Q = K = V = X$) on six random tokens. Beside the mean distance of a token from the tokens' mean (the *spread*), which measures the scale, the table prints the *shape* of the six tokens: $\sigma_2/\sigma_1$, the second-largest singular value of the centred token matrix over the largest. It is 0 when the centred tokens lie on one line (rank 1: at most one direction tells them apart), and "-" once they are one point. The second stack scales the values by 3 ($Q = K = H$, $V = 3H$), the simplest value projection that enlarges the hull; for it the table also counts the distinct tokens (two tokens count as one when their distance is below 1/1000 of the largest distance between two of them). The last two stacks are the remedy, one piece at a time: a residual connection, $H \leftarrow H + \operatorname{attn}(H)$, and then a LayerNorm after it (with $\gamma = 1$, $\beta = 0$), $H \leftarrow \operatorname{LN}(H + \operatorname{attn}(H))$, a Post-LN block without its FFN:

# %%
# C18: bare attention has no notion of order, and stacked alone it collapses the tokens
X = torch.randn(6, 8).to(device)                       # (L, D) six tokens
perm = torch.tensor([3, 0, 5, 1, 4, 2]).to(device)

out, _ = dot_product_attention(X, X, X)
out_shuffled, _ = dot_product_attention(X[perm], X[perm], X[perm])
err = (out_shuffled - out[perm]).abs().max().item()
print(f"attention of the shuffled tokens vs the shuffled outputs: max |diff| {'<' if err < 1e-6 else '>='} 1e-6")

ones, zeros = torch.ones(8).to(device), torch.zeros(8).to(device)


def spread_and_shape(H):
    """Mean distance of a token from the tokens' mean, and sigma_2 / sigma_1 of the centred tokens."""
    centred = (H - H.mean(0)).double()                  # (L, D)
    sigma = torch.linalg.svdvals(centred)               # singular values, largest first
    return centred.norm(dim=-1).mean().item(), (sigma[1] / sigma[0]).item()


def distinct_tokens(H, tol=1e-3):
    """How many groups the tokens form, two tokens being one when their distance is below tol times the largest."""
    dist = torch.cdist(H.double(), H.double())          # (L, L)
    same = dist < tol * dist.max()
    return len({tuple(row) for row in same.tolist()})


def shown_ratio(spread, r):                                   # sigma_2 / sigma_1 means nothing once the tokens are one point
    return f"{r:4.2f}" if spread > 1e-2 else "   -"


stacks = {"V = H": X, "V = 3H": X, "H + attn(H)": X, "LN(H + attn(H))": X}
print("mean distance of a token from the tokens' mean (spread), and sigma2/sigma1 of the centred tokens")
print("layers  V = H (no projection)  V = 3H, distinct tokens   H + attn(H) (residual)  LN(H + attn(H)) (Post-LN, no FFN)")
growth = {}
for depth in range(13):
    (s1, r1), (s3, r3), (sr, rr), (sn, rn) = (spread_and_shape(H) for H in stacks.values())
    if depth <= 6 or depth == 12:                       # 4 significant digits: the large spreads are float32
        print(f"{depth:6d}  {s1:13.3f}  {shown_ratio(s1, r1)}  {s3:10.4g}  {shown_ratio(s3, r3)}  {distinct_tokens(stacks['V = 3H']):3d}"
              f"  {sr:17.4g}  {shown_ratio(sr, rr)}  {sn:17.2f}  {shown_ratio(sn, rn)}")
    if depth == 5:
        growth = {"V = 3H": s3, "residual": sr}
    if depth == 6:
        growth = {name: now / before for (name, before), now in zip(growth.items(), (s3, sr))}
    H, G, R, N = stacks.values()
    stacks = {                                          # one more layer of each kind
        "V = H": dot_product_attention(H, H, H)[0],                         # attention only
        "V = 3H": dot_product_attention(G, G, 3 * G)[0],                    # values scaled by 3
        "H + attn(H)": R + dot_product_attention(R, R, R)[0],               # with a residual connection
        "LN(H + attn(H))": layer_norm(N + dot_product_attention(N, N, N)[0], ones, zeros, 1e-5),  # and LayerNorm
    }
print(f"growth of the spread from layer 5 to layer 6: V = 3H x{growth['V = 3H']:.2f}, H + attn(H) x{growth['residual']:.2f}")

# %% [markdown]
# With $V = H$, after six attention-only layers the six tokens are almost the same vector (spread 2.270 → 0.021), and from layer 3 on they lie on one line ($\sigma_2/\sigma_1$ 0.57 → 0.01 at layer 3, 0.00 from layer 4): the sequence has lost what told its tokens apart. With $V = 3H$ the spread *grows* (2.27 → 1119 by layer 6), but that is only the scale: the shape collapses just the same. By layer 4, $\sigma_2/\sigma_1$ is 0.00 and only 2 distinct tokens are left, two points that then fly apart by a factor of 3 per layer (×3.00 from layer 5 to 6). So both stacks collapse: $V = H$ to one point, $V = 3H$ to two points on an exploding scale. This is rank collapse in miniature, and the blow-up is why normalisation is needed.
#
# The last two stacks show what each remedy does on the same six tokens. The residual connection carries each token's own signal past the mixing: $\sigma_2/\sigma_1$ stays between 0.42 and 0.47 from layer 1 on, but the scale about doubles per layer (×2.03 from layer 5 to 6; spread 115.8 at layer 6, 7529 at layer 12). A LayerNorm after the residual sum keeps the scale in check (spread 2.27 → 0.76 at layer 6), but on its own it does not stop the collapse, it only slows it ($\sigma_2/\sigma_1$ 0.12 at layer 6, 0.05 at layer 12). The Transformer block adds the third piece, the per-token FFN, and trained weights; Dong et al. show that the FFN too slows the collapse. The rest of this notebook puts the pieces together.
#
# ## 2. The encoder block
#
# An **encoder (编码器)** layer of the original Transformer has two sub-layers, each wrapped in a residual connection followed by **LayerNorm (层归一化)** ("Add & Norm", 残差连接与层归一化):
#
# ```
# x ──► multi-head self-attention ──► + x ──► LayerNorm ──► FFN ──► + ──► LayerNorm ──► out
#    └──────── residual ─────────────┘                 └── residual ─┘
# ```
#
# Written as equations, this **Post-LN** order (后置层归一化: normalise *after* adding) is
#
# $$
# h = \operatorname{LN}_1\big(x + \operatorname{SelfAttn}(x)\big), \qquad
# \text{out} = \operatorname{LN}_2\big(h + \operatorname{FFN}(h)\big),
# $$
#
# with $\operatorname{FFN}(h) = W_2\,\operatorname{ReLU}(W_1 h + b_1) + b_2$ applied to every position separately. The **Pre-LN** variant (前置层归一化) normalises the *input* of each sub-layer and leaves the residual path untouched:
#
# $$
# h = x + \operatorname{SelfAttn}\big(\operatorname{LN}_1(x)\big), \qquad
# \text{out} = h + \operatorname{FFN}\big(\operatorname{LN}_2(h)\big).
# $$
#
# > **Note on the slides:** the lecture figure draws the original Post-LN layout (Add & Norm after each sub-layer). Many current models (GPT-2 and most large language models) use Pre-LN instead, because deep Pre-LN stacks train more easily; §2 ends with a small experiment at initialisation that measures how the gradient reaches each block in both orders (it shows less than the usual story says). Both are "a Transformer block"; they are not the same function, as the numbers below show.
#
# Here is `attnlib`'s encoder block, read straight from the library (`norm_first=True` selects Pre-LN):

# %%
# NBVAL_IGNORE_OUTPUT
# (the source of the installed library, printed as it is)
print(inspect.getsource(EncoderBlock.forward))

# %% [markdown]
# Our block copies the weights of PyTorch's own `nn.TransformerEncoderLayer` with `from_torch`, so the two can be compared on the same input. A batch of two sequences, the second padded after 3 tokens. PyTorch's `src_key_padding_mask` uses the opposite convention to ours (`True` = padding), so it gets the negated mask:

# %%
# C34: our encoder block equals nn.TransformerEncoderLayer (Post-LN and Pre-LN) given the same weights
D, heads, d_ff = 16, 4, 32
x = torch.randn(2, 5, D).to(device)                    # (B, L, D)
valid = torch.tensor([5, 3]).to(device)                # real lengths; row 1 has 2 padding tokens
blocks = {}
for norm_first in (False, True):
    torch_layer = nn.TransformerEncoderLayer(D, heads, dim_feedforward=d_ff, dropout=0.0,
                                             batch_first=True, norm_first=norm_first).to(device).eval()
    ours = EncoderBlock.from_torch(torch_layer)
    y, w = ours(x, valid_lens=valid)
    y_ref = torch_layer(x, src_key_padding_mask=~padding_mask(valid, 5))   # torch: True = padding
    name = "Pre-LN " if norm_first else "Post-LN"
    blocks[name] = y
    err = (y - y_ref).abs().max().item()
    print(f"{name}: out {tuple(y.shape)}, weights {tuple(w.shape)}, max |ours - torch| {'<' if err < 1e-5 else '>='} 1e-5")

# %% [markdown]
# Same weights, different order, different function. In Post-LN the last operation is a LayerNorm, so every output token has mean 0 and standard deviation 1 over its features (the gain and shift start at 1 and 0). In Pre-LN the output is a residual sum, and its scale is whatever the sub-layers added:

# %%
# C34: Post-LN and Pre-LN are different functions of the same weights
post, pre = blocks["Post-LN"], blocks["Pre-LN "]
mean_err = post.mean(-1).abs().max().item()
std_err = (post.std(-1, unbiased=False) - 1).abs().max().item()
print(f"Post-LN: every token's mean {'<' if mean_err < 1e-5 else '>='} 1e-5 in size, its std within "
      f"{'1e-3' if std_err < 1e-3 else 'more than 1e-3'} of 1")
pre_std = pre.std(-1, unbiased=False)
print(f"Pre-LN : the tokens' std ranges from {pre_std.min().item():.2f} to {pre_std.max().item():.2f}")
print(f"max |Post-LN - Pre-LN| = {(post - pre).abs().max().item():.2f}")


# %% [markdown]
# Why might the order matter for training? A Pre-LN block adds its sub-layers' outputs to the **residual stream (残差流)**, the running sum $x + \ldots$ that the residual connections carry unchanged from block to block, and no normalisation touches that sum until the end, while in Post-LN every block ends with a LayerNorm that the gradient must pass through. A seeded experiment at initialisation measures what reaches each block: a stack of encoder blocks ($d = 64$, 4 heads, float64, on the CPU), a random input and a random target, a mean-squared-error loss, and the gradient norm of each block's parameters (`attnlib.core.normalization.block_gradient_norms`). A Pre-LN stack's output is an un-normalised residual sum, so Pre-LN models put **one more LayerNorm after the last block** (GPT-2's final `ln_f`, the `norm=` argument of `nn.TransformerEncoder`); the Pre-LN stack here has it. (`attnlib`'s `Seq2SeqTransformer(norm_first=True)`, one block on each side, has none.)
#
# First 12 blocks and one seed, counted two ways: all of a block's parameters (with the Pre-LN final norm counted in its last block), and only the attention and FFN weights, which both orders have in the same places:

# %%
# Post-LN vs Pre-LN at initialisation: gradient norm of each block's parameters in a 12-block stack
def seeded_stack(norm_first, depth=12, seed=0, d=64):
    """depth encoder blocks (d, 4 heads, float64), a final LayerNorm for Pre-LN, an input and a target."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)                              # the same initial weights for both orders
        stack = nn.ModuleList(EncoderBlock(d, 4, 4 * d, norm_first=norm_first) for _ in range(depth)).double()
        final_norm = nn.LayerNorm(d).double()                # Pre-LN's norm after the last block
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(8, 16, d, generator=gen, dtype=torch.float64)        # (B, L, D)
    target = torch.randn(8, 16, d, generator=gen, dtype=torch.float64)   # (B, L, D)
    return stack, (final_norm if norm_first else None), x, target

grads = {}
for norm_first in (False, True):
    stack, final_norm, x_in, target = seeded_stack(norm_first)
    for count_norms in (True, False):
        grads[norm_first, count_norms] = block_gradient_norms(stack, x_in, target, final_norm=final_norm,
                                                              count_norms=count_norms)
print("         all parameters (LayerNorm γ, β too)   attention and FFN weights only")
print("block          Post-LN     Pre-LN                  Post-LN     Pre-LN")
for i in range(12):
    print(f"{i:5d}  {grads[False, True][i]:15.3f} {grads[True, True][i]:10.3f}  "
          f"{grads[False, False][i]:23.3f} {grads[True, False][i]:10.3f}")
ratio = {key: g[-1] / g[0] for key, g in grads.items()}
print(f"last / first {ratio[False, True]:10.2f} {ratio[True, True]:10.2f}  "
      f"{ratio[False, False]:23.2f} {ratio[True, False]:10.2f}")

# %% [markdown]
# Counted with their LayerNorms, *both* stacks jump at the last block (0.377 in Post-LN, 0.330 in Pre-LN): that block's output norm (Post-LN's `norm2`, Pre-LN's final norm) sits right in front of the loss, and its gain and shift get a large gradient of their own. That jump says where the loss is, not which order is better. Like for like, with the norms left out, the Post-LN stack's gradients rise mildly from block 0 to block 11 (0.166 → 0.199, highest at block 10 with 0.203; last / first 1.20) and the Pre-LN stack's fall (0.179 → 0.141; 0.79). One seed and one depth prove little, so the same like-for-like count for three seeds at depths 6, 12 and 24, with the gradient norm of the last block itself (this takes a few seconds):

# %%
# Like for like (attention and FFN weights only), three seeds at each of three depths
print("depth  last / first block, seeds 0 1 2   last block's gradient norm, seeds 0 1 2")
print("             Post-LN          Pre-LN        Post-LN           Pre-LN")
for depth in (6, 12, 24):
    ratios, last = {False: [], True: []}, {False: [], True: []}
    for seed in (0, 1, 2):
        for norm_first in (False, True):
            stack, final_norm, x_in, target = seeded_stack(norm_first, depth, seed)
            g = block_gradient_norms(stack, x_in, target, final_norm=final_norm)
            ratios[norm_first].append(g[-1] / g[0])
            last[norm_first].append(g[-1])
    cols = [" ".join(f"{v:.2f}" for v in values) for values in (ratios[False], ratios[True], last[False], last[True])]
    print(f"{depth:5d}  {cols[0]:>14s}  {cols[1]:>14s}  {cols[2]:>14s}  {cols[3]:>15s}")

# %% [markdown]
# What these nine pairs of stacks show, and what they do not:
#
# - **Post-LN: no robust rise towards the output.** Its last / first ratio lies between 0.95 and 1.38 and does not move the same way for every seed (seed 2 gives 1.07, 0.95, 0.95); the last block's gradient stays about the same at every depth (0.18 to 0.22).
# - **Pre-LN: the gradient shrinks towards the output, and more so the deeper the stack.** Last / first is 0.80–0.91 at depth 6, 0.72–0.79 at depth 12 and 0.55–0.64 at depth 24 for all three seeds, and the last block's gradient falls with depth (0.15–0.16, 0.13–0.14, 0.11–0.12).
# - So the two orders already differ at initialisation, and the difference grows with depth, but here it is Pre-LN whose profile changes with depth, while Post-LN's stays roughly level.
#
# Xiong et al. (2020, "On Layer Normalization in the Transformer Architecture") make two points. Their bound on the last layer's gradient is smaller in Pre-LN by a factor that shrinks like $1/\sqrt{\text{depth}}$ (their explanation: the final norm divides by a residual stream that grows with depth); this toy stack agrees in direction, Pre-LN's last block getting less gradient the deeper the stack. And in translation models at initialisation they measure Post-LN gradients that grow towards the output, which they tie to Post-LN's need for a small learning rate with a warm-up; with random inputs and targets, this stack shows no clear rise of that kind. For Pre-LN their Figure 3 shows gradients about equal in every layer at initialisation; this toy's Pre-LN profile instead falls towards the output (last / first 0.55–0.64 at depth 24), which is what Shleifer, Weston and Ott (2021, "NormFormer: Improved Transformer Pretraining with Extra Normalization") report for Pre-LN *during pretraining*: the gradients at early layers are much larger than at later ones. So at initialisation this toy disagrees with the one measurement at initialisation cited here (Xiong et al.'s level Pre-LN profile) and resembles one made during training. What training does with these profiles is their claim, not something these cells show.

# %% [markdown]
# ## 3. The decoder block and the causal mask
#
# A **decoder (解码器)** layer has three sub-layers, each again with a residual connection and LayerNorm:
#
# 1. **masked (causal) multi-head self-attention** over the target tokens produced so far;
# 2. **encoder–decoder cross-attention (交叉注意力)**: queries from the decoder, keys and values from the encoder's output;
# 3. the position-wise FFN.
#
# In Post-LN form:
#
# $$
# h_1 = \operatorname{LN}_1\big(y + \operatorname{SelfAttn}_{\text{causal}}(y)\big),\quad
# h_2 = \operatorname{LN}_2\big(h_1 + \operatorname{CrossAttn}(h_1, Y_{\text{enc}})\big),\quad
# \text{out} = \operatorname{LN}_3\big(h_2 + \operatorname{FFN}(h_2)\big).
# $$
#
# After the last decoder layer a linear layer maps each position to one score per vocabulary entry, and a softmax turns the scores into the probabilities of the next token.
#
# The self-attention must be **causal**, with a **causal mask (因果掩码)**: when the decoder is trained, it reads the whole target sequence at once, and position $i$ must not peek at positions $j > i$, or it would simply copy the answer it is asked to predict. The additive mask
#
# $$
# M_{ij} = \begin{cases} 0, & j \le i,\\ -\infty, & j > i,\end{cases}
# \qquad A = \operatorname{softmax}\!\Big(\frac{QK^\top}{\sqrt{d_k}} + M\Big)
# $$
#
# gives the future exactly zero weight; equivalently, position $i$ computes its output *as if the sequence ended at $i$*. (Notebook 05 checks by perturbing future tokens that earlier outputs do not move.) A **padding mask** does a different job: it hides the filler tokens after a sequence's real end. The decoder uses both kinds: causal in its self-attention, padding on the source in its cross-attention.
#
# Our decoder block against PyTorch's `nn.TransformerDecoderLayer`, with a causal target mask and a padded source (`tgt_mask` and `memory_key_padding_mask` again use `True` = hidden):

# %%
# C35: our decoder block equals nn.TransformerDecoderLayer (Post-LN and Pre-LN) given the same weights
T, S = 4, 6
y_in = torch.randn(2, T, D).to(device)                  # (B, T, D) decoder input
memory = torch.randn(2, S, D).to(device)                # (B, S, D) encoder output
mem_valid = torch.tensor([6, 4]).to(device)             # source lengths
for norm_first in (False, True):
    torch_layer = nn.TransformerDecoderLayer(D, heads, dim_feedforward=d_ff, dropout=0.0,
                                             batch_first=True, norm_first=norm_first).to(device).eval()
    decoder_block = DecoderBlock.from_torch(torch_layer)
    res = decoder_block(y_in, memory, memory_valid_lens=mem_valid)  # a DecoderOutput
    out, self_w, cross_w = res.out, res.self_weights, res.cross_weights
    out_ref = torch_layer(y_in, memory, tgt_mask=~causal_mask(T, device=device), tgt_is_causal=True,
                          memory_key_padding_mask=~padding_mask(mem_valid, S))
    name = "Pre-LN " if norm_first else "Post-LN"
    err = (out - out_ref).abs().max().item()
    print(f"{name}: out {tuple(out.shape)}, max |ours - torch| {'<' if err < 1e-5 else '>='} 1e-5")
print("causal self-attention, weight on any future position:", self_w.triu(diagonal=1).abs().max().item())
print("cross-attention, weight on any padded source position:", cross_w[1, :, :, 4:].abs().max().item())

# %% [markdown]
# ## 4. LayerNorm, and why not BatchNorm
#
# For one token $x \in \mathbb{R}^d$, LayerNorm computes a mean and a variance **over that token's own features**,
#
# $$
# \mu = \frac1d\sum_{j=1}^{d} x_j,\qquad
# \sigma^2 = \frac1d\sum_{j=1}^{d}(x_j-\mu)^2,\qquad
# \operatorname{LN}(x) = \gamma \odot \frac{x-\mu}{\sqrt{\sigma^2+\epsilon}} + \beta ,
# $$
#
# with a learned gain $\gamma$ and shift $\beta$ of width $d$. Nothing outside the token enters. `attnlib.core.transformer.layer_norm` writes exactly this out; it agrees with PyTorch's:

# %%
# C38: LayerNorm written out equals F.layer_norm
z = torch.randn(2, 5, D).to(device)
gamma, beta = torch.randn(D).to(device), torch.randn(D).to(device)
diff = (layer_norm(z, gamma, beta, 1e-5) - F.layer_norm(z, (D,), gamma, beta, 1e-5)).abs().max().item()
print(f"max |layer_norm - F.layer_norm| {'<' if diff < 1e-5 else '>='} 1e-5")

# %% [markdown]
# **BatchNorm (批归一化)** normalises each feature channel with statistics taken **across the batch and all positions**. For a sequence tensor of shape $[B, L, D]$ that means every token's output depends on the other sentences in the batch, on how long they are, and on how many padding tokens were appended. Take one sentence (token 0 of batch row 0 is the one we watch) and change only its *surroundings*: add padding, or put a different sentence next to it in the batch:

# %%
# C38: a token's LayerNorm output ignores the batch, the length and the padding; BatchNorm's does not
sentence = torch.randn(1, 5, D)                                     # the sentence we watch
other = torch.randn(1, 5, D)
contexts = {
    "alone in the batch":         sentence,
    "padded to length 9":         torch.cat([sentence, torch.zeros(1, 4, D)], dim=1),
    "next to another sentence":   torch.cat([sentence, other], dim=0),
    "next to a short, padded one": torch.cat([sentence, torch.cat([other[:, :2], torch.zeros(1, 3, D)], 1)], 0),
}
base = contexts["alone in the batch"].to(device)
print(f"{'context of the same sentence':30s} {'LayerNorm change':>17s} {'BatchNorm change':>17s}")
for name, ctx in contexts.items():
    change = norm_context_dependence(base, ctx.to(device))          # max |change| of token [0, 0]'s output
    print(f"{name:30s} {change.layer_norm + 0.0:17.3f} {change.batch_norm + 0.0:17.3f}")

# %% [markdown]
# LayerNorm's column is exactly zero: a token is normalised by its own statistics, the same in training and at inference, whatever batch it travels in. That is why it suits variable-length sequences.
#
# > **Correction to the slides:** the slides say a Transformer cannot use BatchNorm. Nothing in the architecture forbids it; LayerNorm is a design choice, and with padded batches of varying length a sensible one (research models do use batch statistics: Shen et al., 2020, "PowerNorm: Rethinking Batch Normalization in Transformers", train Transformers with a modified BatchNorm). What the table shows is **training-mode** BatchNorm, which normalises with the statistics of the batch in hand. After training, in **eval mode**, BatchNorm uses its stored running statistics: a fixed scale and shift per feature, the same whatever else is in the batch:

# %%
# C38: BatchNorm is not forbidden; in eval mode (running statistics) it ignores the batch too
bn = nn.BatchNorm1d(D).to(device)                               # normalises (B, D, L): channels = features
for ctx in contexts.values():                                   # training mode: running statistics get updated
    bn(ctx.to(device).transpose(1, 2))
bn.eval()
alone = bn(base.transpose(1, 2))[0, :, 0]                       # token [0, 0], alone
crowded = bn(contexts["next to a short, padded one"].to(device).transpose(1, 2))[0, :, 0]
updates = int(bn.num_batches_tracked)
kept = (1 - bn.momentum) ** updates                             # share of the initial statistics still in them
run_mean, run_var = bn.running_mean.abs().max().item(), (bn.running_var.min().item(), bn.running_var.max().item())
bn.train()
crowded_train = bn(contexts["next to a short, padded one"].to(device).transpose(1, 2))[0, :, 0]
alone_train = bn(base.transpose(1, 2))[0, :, 0]
print(f"eval mode:     change of token [0, 0] between contexts = {(alone - crowded).abs().max().item() + 0.0:.3f}")
print(f"training mode: change of token [0, 0] between contexts = {(alone_train - crowded_train).abs().max().item():.3f}")
print(f"eval mode used running statistics after {updates} updates with momentum {bn.momentum}: {kept:.2f} of them is "
      f"still the initial mean 0 and variance 1;\n  running mean within ±{run_mean:.2f} of 0, running variance {run_var[0]:.2f} to {run_var[1]:.2f}")

# %% [markdown]
# This BatchNorm is barely trained: its running statistics come from the four batches above, and with momentum 0.1 each update keeps 0.9 of the old values, so $0.9^4 = 0.66$ of them is still the initial mean 0 and variance 1 (the running means lie within ±0.24 of 0, the variances between 0.72 and 1.19). In eval mode it only shifts and rescales each feature a little. The point does not depend on that: whatever the running statistics are, eval mode applies the same fixed numbers to every token.
#
# ## 5. From the encoder to the decoder: cross-attention
#
# Let the encoder turn the source into $Y = (y_1, \ldots, y_n)$, one vector per source position. In the decoder's cross-attention:
#
# - the **queries** come from the decoder's current target representation $H_{\text{dec}}$ (one row per target position): the output of the block's first sub-layer, $H_{\text{dec}} = \operatorname{LN}_1(y + \operatorname{SelfAttn}(y))$ in Post-LN, and $\operatorname{LN}_2(h_1)$ with $h_1 = y + \operatorname{SelfAttn}(\operatorname{LN}_1(y))$ in Pre-LN,
# - the **keys** and the **values** both come from the encoder output $Y$:
#
# $$
# Q = H_{\text{dec}} W_Q,\qquad K = Y W_K,\qquad V = Y W_V,\qquad
# \operatorname{CrossAttention}(H_{\text{dec}}, Y) = \operatorname{softmax}\!\Big(\frac{QK^\top}{\sqrt{d_k}} + M\Big) V ,
# $$
#
# where $M$ is the padding mask of the source ($M_{tj} = -\infty$ when source position $j$ is padding, 0 otherwise): a target position may read every real source position, past or future, so there is no causal part.
#
# So each target position asks "which source positions do I need now?" and reads back a mixture of the source. The weight matrix has one row per **target** position and one column per **source** position, $[T, S]$, and $T \ne S$ is fine. With the decoder block from §3 (the Pre-LN one, the loop's last; $T = 4$ target positions, $S = 6$ source positions, the second source padded after 4), we take $H_{\text{dec}}$ from the block's own first sub-layer (its `norm1`, `self_attn` and `norm2`), compute $Q$, $K$, the masked scores and the softmax by hand, and compare the weights with those the block returned:

# %%
# C39: cross-attention takes Q from the decoder and K, V from the encoder; its map is [target length, source length]
blk = decoder_block                                         # the Pre-LN block of §3
with torch.no_grad():
    h = blk.norm1(y_in)
    self_out, _ = blk.self_attn(h, h, h, is_causal=True)
    h_dec = blk.norm2(y_in + self_out)                      # (B, T, D): what the cross-attention's queries read
    attn = blk.cross_attn
    Q = split_heads(attn.w_q(h_dec), heads)                 # (B, H, T, Dh) from the decoder
    K = split_heads(attn.w_k(memory), heads)                # (B, H, S, Dh) from the encoder output
    V = split_heads(attn.w_v(memory), heads)                # (B, H, S, Dh) from the encoder output
    scores = Q @ K.transpose(-2, -1) / math.sqrt(D // heads)                # (B, H, T, S)
    scores = scores.masked_fill(~padding_mask(mem_valid, S)[:, None, None, :], float("-inf"))
    by_hand = scores.softmax(-1)                            # (B, H, T, S)
err = (by_hand - cross_w).abs().max().item()
print("H_dec, Q from the decoder:", tuple(h_dec.shape), tuple(Q.shape), "  K, V from the encoder:", tuple(K.shape), tuple(V.shape))
print("cross-attention weights (B, H, T, S):", tuple(cross_w.shape), "; one head's map is [target length, source length] =",
      list(cross_w.shape[-2:]))
print(f"softmax(Q K^T / sqrt(d_k)) by hand vs the block's weights: max |diff| {'<' if err < 1e-6 else '>='} 1e-6")
row_err = (cross_w.sum(-1) - 1).abs().max().item()
print(f"every row sums to 1: max |row sum - 1| {'<' if row_err < 1e-6 else '>='} 1e-6")

# %% [markdown]
# ## 6. A tiny encoder–decoder learns to reverse a sequence
#
# Now the whole model: token embeddings plus sinusoidal positions, one encoder block, one decoder block, and a linear layer to the vocabulary (`attnlib.models.seq2seq.model.Seq2SeqTransformer`, $d = 64$, 4 heads; all its settings and the training's are in `attnlib.course.examples.Seq2SeqConfig` and `TrainConfig`). The task is generated, nothing is downloaded: the source is 6 letters drawn from `a`–`j`, and the target is the same letters backwards. The vocabulary also holds three special tokens: padding `·`, begin-of-sequence `<s>` and end-of-sequence `</s>`.
#
# During training the decoder is fed the *correct* previous tokens rather than its own guesses (**teacher forcing, 教师强制**): it reads the target shifted right by one, `<s> y1 … y6` (7 tokens), and must predict `y1 … y6 </s>` (7 tokens), the token at each position being the one that comes next. All 7 positions are trained at once, in one pass, which is exactly why its self-attention must be causal: position $t$ must not see $y_{t+1}$, the answer it is asked for. Every sequence is put in a training or a held-out split by a hash of its content, so the accuracy below is measured on sequences the model never trained on. One example:

# %%
model_cfg, train_cfg = Seq2SeqConfig(), TrainConfig()  # notebook 08's settings, shared with its figure and tests
example_batch = make_batch(train_cfg.task, 1, train_cfg.seq_len, model_cfg.vocab_size, split="test",
                           generator=torch.Generator().manual_seed(1))
print("source       :", " ".join(token_labels(example_batch.src[0])))
print("decoder reads:", " ".join(token_labels(example_batch.tgt_in[0])))
print("must predict :", " ".join(token_labels(example_batch.tgt_out[0])))

# %% [markdown]
# Training uses Adam on the cross-entropy of the predicted tokens. Every 50 steps the model decodes 2048 sequences of the held-out split greedily (**greedy decoding, 贪心解码**: explained below), and training stops once at least 99.5% of them come out exactly right. Those 2048 are a **validation set (验证集)**: they decide when to stop, though the model never trains on them. The cell prints how many steps and seconds that took. Both differ from machine to machine, the steps too: training runs in float32, and another CPU rounds its sums differently, so after a hundred Adam steps the weights are not bit-identical, and a held-out check can land just under the target on one CPU and just over it on another (we have seen the same code stop at different checks on two CPUs). So nbval does not compare this cell's numbers; the cell after the plot prints only what holds on every CPU, and from the decoding on, the numbers come from the shipped model:

# %%
# NBVAL_IGNORE_OUTPUT
set_seed(train_cfg.seed)                                # the model and its batches do not depend on the cells above
with num_threads(1):                                    # a model this small trains fastest on one CPU thread
    model_here = Seq2SeqTransformer(model_cfg).to(device)
    history = train_seq2seq(model_here, train_cfg, progress=False)
print(f"{history.steps} steps, {history.seconds:.1f} s; last held-out check: {history.final_accuracy:.3f} of "
      f"{train_cfg.eval_size} sequences exactly right (target {train_cfg.target_accuracy})")

# %% alt="The training loss (cross-entropy, log scale) of the tiny encoder\u2013decoder against the training step, falling from about 3 to 0.001, with the held-out exact-sequence accuracy (right axis), measured every 50 steps, rising to the 99.5% target."
# NBVAL_IGNORE_OUTPUT
# (the curve's exact shape depends on the device; the facts are printed below)
fig, ax = plt.subplots(figsize=(6, 3), layout="constrained")
_ = plotting.curves(range(1, len(history.losses) + 1), history.losses, ax=ax, logy=True,
                title="training loss (cross-entropy per target token)", xlabel="step", ylabel="loss")
ax2 = ax.twinx()
_ = ax2.plot(history.eval_steps, history.accuracies, "o-", color="C2")
_ = ax2.set_ylim(0, 1.02)
_ = ax2.set_ylabel("held-out exact-sequence accuracy", color="C2")

# %%
# What the run above shows on every CPU (its step count and its curve differ between CPUs)
print(f"reached the target of {train_cfg.target_accuracy} held-out accuracy before the limit of {train_cfg.steps} steps: "
      f"{'yes' if history.final_accuracy >= train_cfg.target_accuracy and history.steps < train_cfg.steps else 'no'}; "
      f"held-out checks every {train_cfg.eval_every} steps; Adam at a fixed learning rate of {train_cfg.lr}, no warm-up")

# %% [markdown]
# The loss does not fall smoothly: Adam at a fixed learning rate from the first step, with no **warm-up** (a learning rate that starts small and grows over the first steps), can overshoot, and a curve of this run can show a spike on the way down (where, and whether, depends on the CPU, as above). The Annotated Transformer and the UvA Deep Learning Tutorial 6 both train with a warm-up; Xiong et al. (§2) tie Post-LN's need for one to its gradients at initialisation. For one encoder and one decoder block this rate works without it.
#
# Greedy decoding writes one token at a time: start from `<s>`, run the decoder, take the most likely token, append it, and repeat until `</s>`. From here on the numbers come from the model `attnlib` ships (`trained_reversal_model()`: trained by this same code with this same seed, and saved), so they are the same on every machine; the model trained above is close to it but not bit-identical on other hardware. We score 1000 fresh held-out sequences (drawn with their own generator from the same held-out split as the validation set, so the check below first counts how many of them the stopping rule also saw), and measure how much cross-attention weight output position $t$ (counting from 0) puts on source position $n-1-t$, the letter it has to write; the same model before training is the baseline:

# %%
# C35, C40: the output layer; the trained model learned reversal, and its cross-attention shows the alignment
model = trained_reversal_model(device)                  # the shipped weights
held_out = make_batch(train_cfg.task, 1000, train_cfg.seq_len, model_cfg.vocab_size, split="test",
                      generator=torch.Generator().manual_seed(2), device=device)
with torch.random.fork_rng(devices=[]):                 # redo the training cell's draws up to its validation set
    set_seed(train_cfg.seed)
    Seq2SeqTransformer(model_cfg)                       # the model's initial weights come first
    validation = make_batch(train_cfg.task, train_cfg.eval_size, train_cfg.seq_len, model_cfg.vocab_size,
                            split="test", min_len=train_cfg.min_len)
seen = {tuple(row) for row in validation.src.tolist()}
overlap = sum(tuple(row) in seen for row in held_out.src.tolist())
print(f"of the 1000 scored sequences, {overlap} are also in the {train_cfg.eval_size} of the validation set")
with torch.no_grad():
    probs = model(held_out.src, held_out.tgt_in, src_valid_lens=held_out.src_valid_lens).logits.softmax(-1)   # (B, T, V)
sum_err = (probs.sum(-1) - 1).abs().max().item()
print(f"output layer: probabilities over the vocabulary, shape (B, T, V) = {tuple(probs.shape)}; "
      f"max |sum - 1| {'<' if sum_err < 1e-5 else '>='} 1e-5")
for name, m in (("untrained", untrained_reversal_model(device=device)), ("trained", model)):
    decoded = greedy_decode(m, held_out.src, held_out.src_valid_lens)
    tokens, cross_maps = decoded.tokens, decoded.cross_weights
    print(f"{name:9s}: exact-sequence accuracy on 1000 fresh held-out sequences {sequence_accuracy(tokens, held_out.tgt_out):.2f}, "
          f"mean cross-attention weight on the anti-diagonal {anti_diagonal_mass(cross_maps[-1], held_out.src_valid_lens):.2f}")
print("(a uniform map would put 1/6 = 0.17 on the anti-diagonal)")

# %% [markdown]
# Only 6 of the 1000 scored sequences were also in the validation set, too few to move the accuracy. The picture behind the anti-diagonal number, for one held-out sequence of six different letters, `b g a e j d`: rows are output positions $t = 0, 1, \ldots$, columns the source letters, averaged over the four heads. To write the first output letter the decoder looks at the *last* source letter, then moves one position left at each step: the anti-diagonal. The model does know *where* each source letter sits (sinusoidal positions are added to the source embeddings); what nobody told it is *which* source position to read at each output position (the **alignment, 对齐**). It learned that alignment from the task alone.

# %% alt="The cross-attention map of one held-out example: each output step attends mostly to the mirrored source position, an anti-diagonal."
# C40: the cross-attention map of one held-out example
example_src = torch.tensor(DEFAULT_SOURCE).to(device)    # "b g a e j d", in the held-out split
trace = trace_greedy_decoding(model, example_src)
fig, ax = plt.subplots(figsize=(4.2, 3.6), layout="constrained")
_ = cross_attention_panel(trace, ax=ax)
print("map shape [steps T, source S]:", list(trace.cross_weights[-1].shape[-2:]))

# %% [markdown]
# The map (and the explorer in §7) is not assembled while decoding. `trace_greedy_decoding` first decodes, then runs the decoder once, teacher-forced, over what it wrote (`<s>` and the output), and reads every row from that single pass. That is exact because the decoder is causal (C36): row $t$ cannot see the tokens after position $t$, so it is what step $t$ saw when it had only those tokens. Checked by redoing the decoding step by step, one pass over `<s>` $y_1 \ldots y_t$ for each $t$:

# %%
# C36 at work: row t of one teacher-forced pass equals the row step t computed from its prefix alone
with torch.no_grad():
    memory_enc = model.encode(example_src[None]).memory                 # (1, S, D)
    step_rows = [model.decode(trace.tgt_in[None, : t + 1], memory_enc).cross_weights[-1][0, :, t]   # (H, S): last row
                 for t in range(trace.num_steps)]
step_err = (torch.stack(step_rows, dim=1) - trace.cross_weights[-1]).abs().max().item()    # (H, T, S)
print(f"{trace.num_steps} prefix passes vs one teacher-forced pass: max |diff| of the cross-attention rows "
      f"{'<' if step_err < 1e-6 else '>='} 1e-6")

# %% [markdown]
# ### Computable is not the same as generalised
#
# The sinusoidal positions let the model tell position 3 from position 7 (notebook 07), and position 7 is in its table (it covers 16 positions). So a source of 8 letters can be *represented*. But this model only ever saw sources of exactly 6 letters. Decoding sources of other lengths with the same weights:

# %%
# C33 (second half): trained only on length 6; decode shorter and longer sources with the same weights
print("source  sequences exactly  letters right  first letter  source position read most")
print("length    right (of 1000)  (all letters)         right  at output t = 0, 1, ..., n-1")
for n in (4, 5, 6, 7, 8):
    batch = make_batch(train_cfg.task, 1000, n, model_cfg.vocab_size, split="test",
                       generator=torch.Generator().manual_seed(10), device=device)
    decoded = greedy_decode(model, batch.src, batch.src_valid_lens)
    tokens, cross_maps = decoded.tokens, decoded.cross_weights
    right = (tokens[:, :n] == batch.tgt_out[:, :n]).float()              # (B, n) letter by letter
    # per sequence the source position with the most weight (average of heads), then its most common value
    read = cross_maps[-1].mean(1)[:, :n].argmax(-1).mode(0).values       # (n,)
    print(f"{n:6d}  {round(sequence_accuracy(tokens, batch.tgt_out) * 1000):17d}  {right.mean().item():13.2f}  "
          f"{right[:, 0].mean().item():12.2f}  {' '.join(str(j) for j in read.tolist())}")

# %% [markdown]
# At length 6 every one of the 1000 held-out sequences comes out right; at every other length not one of the 1000 does. The last column shows what the model learned instead of "reverse": at output position $t$ it reads source position $5 - t$, exactly as at length 6, cut off at the last letter when the source is shorter (`3 3 3 2` at length 4). So at lengths 7 and 8 it reverses the first six letters, where it should start from the seventh or eighth, and then writes `</s>`: its letters match the target only by chance: about 1 in 10 (there are 10 letters) at each of the first six positions, and never after them, hence 0.09 and 0.07. At lengths 4 and 5 it starts on the last source letter, so the first letter is right (1.00), and then stays on it for too long. Being able to compute an answer (the positions exist, the attention could look anywhere) is not the same as having learned the rule for inputs unlike the training data.

# %% [markdown]
# The explorer below only offers sources of length 6, so here is the map of one held-out source of length 8 (rows are output positions, averaged over heads, as above). The bright cells follow the length-6 anti-diagonal, starting at source position 5 instead of 7, and stay on position 0 after it: the model writes the first six letters reversed, then `</s>`. Greedy decoding stops at `</s>`, so the two rows after it were never decoded: the trace fills them with padding and the panel greys them out, and the list of positions read stops at the `</s>` row.

# %% alt="The cross-attention map of a length-8 source (training used only length 6), rows labelled with what the model wrote: the bright cells follow a length-6 anti-diagonal starting at source position 5 instead of 7, then stay on position 0 while it writes </s>; the two rows after </s>, never decoded, are grey."
# C33 (second half): one length-8 source, its cross-attention map and what the model wrote
long_src = make_batch(train_cfg.task, 1, 8, model_cfg.vocab_size, split="test",
                      generator=torch.Generator().manual_seed(11), device=device).src[0]
long_trace = trace_greedy_decoding(model, long_src)
fig, ax = plt.subplots(figsize=(4.6, 4.0), layout="constrained")
_ = cross_attention_panel(long_trace, ax=ax)
print("source     :", " ".join(token_labels(long_src)))
print("reversed   :", " ".join(token_labels(long_src.flip(0))))
print("model wrote:", " ".join(token_labels(long_trace.tokens)))
eos_row = long_trace.tokens.tolist().index(EOS)                    # the row that writes </s>
print(f"source position read most at t = 0, 1, ..., {eos_row} (the </s> row):",
      " ".join(str(j) for j in long_trace.cross_weights[-1].mean(0)[: eos_row + 1].argmax(-1).tolist()))

# %% [markdown]
# ## 7. Explorer: decoding position by position
#
# The explorer replays greedy decoding of a source with notebook 08's model: the trained one (the shipped weights) or, with **trained model** unticked, the same model before training. Positions count from 0. Move **output position t** to reveal one more row at a time (the stored picture shows $t = 3$; the axes count positions, and the readout names the tokens; the cell after the explorer prints the readout of the stored picture):
#
# - left, the decoder's **causal self-attention**: position $t$ can only look at the tokens it has read so far (`<s>` and its own earlier outputs), so everything above the diagonal stays hidden (hatched);
# - middle, the **cross-attention** row of position $t$ over the source: where it looked to decide what to write;
# - right, the **next-token probabilities** at position $t$, with the source and what has been written at positions 0 to $t$ (the token position $t$ writes included).
#
# Pick another **source**: `a a b b c c` and `c c c c c c` repeat letters, so the letters alone no longer say which position to read. Pick a single **head** to see how the heads split the work; "average of heads" is the picture above. The readout lists the numbers of the current row, including the source position reversal needs.

# %% alt="The decoding explorer: the decoder's self-attention and cross-attention maps at one step of greedy decoding, and the probabilities of the next token."
# NBVAL_IGNORE_OUTPUT
explorer = decoding_explorer(step=3)
explorer

# %%
# The readout of the stored picture (output position t = 3, average of heads), as the explorer shows it
from attnlib.widgets.framework.readout import shown_name

for key, value in explorer.state(step=3).items():
    if isinstance(value, list):
        value = " ".join(f"{v:.2f}" for v in value)
    elif isinstance(value, float):
        value = f"{value:.2f}"
    print(f"{shown_name(key)}: {value}")  # the name the readout shows (in the notebook's language)

# %% [markdown]
# ## Exercises
#
# 1. **(explorer)** In the decoding explorer, step through the example with the average over heads, then with each head alone. Which output position writes the letter at source position 0, and what does the last position (the one that writes `</s>`) look at? Then untick **trained model**: what is left of the anti-diagonal?
#
# <details><summary>Answer</summary>
#
# With 6 source letters, output position 5 writes the last output letter, which is the *first* source letter, so its cross-attention row peaks at source position 0 (0.92 in the average over heads). Position 6, which writes `</s>`, has no letter to copy, yet it also looks at source position 0, even more (0.99). Nothing in training says where that row should look (any row that lets it write `</s>` is right); this model keeps reading where position 5 did, as the length-8 example above shows too (its `</s>` row, output position 6, also reads source position 0). Single heads differ from the average: all four follow the anti-diagonal, but not equally sharply (at output position 4 head 0 puts 0.86 on source position 1, head 1 only 0.44, the rest on its neighbours), and head 3 at output position 2 even peaks on a neighbour, source position 4 instead of 3. Untrained, the rows are smeared over the source with no anti-diagonal (its mass is about the uniform 0.17), and the output is not the reversed source.
# </details>
#
# 2. Train the same model with Pre-LN blocks, `Seq2SeqTransformer(dataclasses.replace(model_cfg, norm_first=True))` (after `set_seed(train_cfg.seed)`, as above). Does it still learn the task, and does the anti-diagonal still appear?
#
# <details><summary>Answer</summary>
#
# Yes. With one block on each side both orders train easily: in our runs on two CPUs the Pre-LN model passed the 99.5% held-out check after 150 steps on both, got 995 to 1000 of the 1000 held-out sequences of the cell above right, and put 0.76 to 0.79 of its cross-attention on the anti-diagonal. Do not compare its step count with the Post-LN run's stored above: that one stops at a different check on different CPUs (§6), so neither order is shown to train faster. Training is not bit-identical across CPUs, so your numbers may differ a little. Xiong et al. locate Pre-LN's advantage in deep stacks; §2's experiment shows only that the two orders' gradient profiles at initialisation differ more the deeper the stack.
# </details>
#
# 3. Train on the copy task instead (`dataclasses.replace(train_cfg, task="copy")` for `train_seq2seq`, and `"copy"` in `make_batch`). What shape should the cross-attention map take, and why?
#
# <details><summary>Answer</summary>
#
# Output step $t$ has to write source letter $t$, so the weight concentrates on the main diagonal instead of the anti-diagonal. The map always follows *which source position each output needs*.
# </details>
#
# 4. In the LayerNorm/BatchNorm table, which context changes BatchNorm's output the most? Explain with the formula for the batch mean of a feature why every context changes it, and say whether the ordering of the three rows is a law or a property of this draw.
#
# <details><summary>Answer</summary>
#
# Putting another sentence next to it (1.351, against 0.860 padded and 1.040 next to a short, padded one). BatchNorm's mean for feature $j$ is $\mu_j = \frac{1}{N}\sum_{b,t} x_{b,t,j}$ over all $N = B \cdot L$ token positions, padding included, and its variance likewise. Padding adds zeros, which pull every $\mu_j$ towards 0 (by the factor $5/9$ here) and change the variance; another sentence adds five random tokens, which move $\mu_j$ and the variance by random amounts. Any change of the batch changes the statistics our token is normalised with, and so its output. Which context moves it most depends on the draw (on how far the other sentence's feature means happen to lie from ours), so the ordering is not a law: try another seed. The law is the LayerNorm column: its statistics come from the token's own $d$ features only, so it is exactly 0 every time.
# </details>
