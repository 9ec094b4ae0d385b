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
# # 07 · Positional encoding
#
# **What you will learn**
#
# - that self-attention on its own (without a mask) cannot see the order of its inputs: permuting the tokens just permutes the outputs (*equivariance*), and a symmetric pooling on top makes the result fully order-blind (*invariance*); a causal mask already breaks this symmetry;
# - how positions are injected by simple addition, $X' = X + P$, and that this breaks the symmetry;
# - the sinusoidal table of the original Transformer, checked entry by entry against its formula;
# - why sines and cosines: moving from position $pos$ to $pos + k$ rotates every (sin, cos) pair by an angle that depends on $k$ alone;
# - that the dot product of two positions' encodings depends only on how far apart they are, but the position part of an attention score does not (which is what rotary position embedding, RoPE, repairs);
# - what "the encoding works for any length" does and does not promise, tested on a model trained on lengths 2 to 6.
#
# **Seed sections taught:** lecture notes 004 (*9 Attention and the Transformer*) §9.11 (why self-attention needs positional encoding) and §9.12 (sinusoidal positional encoding: formula, why sin/cos, what length extrapolation really means).
#
# **Read first:** `06_multi_head.ipynb` (the multi-head layer used here as "self-attention").
#
# **Time:** about 30 minutes.

# %%
# %matplotlib inline
import itertools
import math

import matplotlib.pyplot as plt
import torch
from torch import nn

from attnlib import default_device, plotting, set_seed
from attnlib.core.multihead import MultiHeadAttention
from attnlib.core.positional import (
    PositionalEncoding,
    offset_rotation,
    permute_tokens,
    rotary_embedding,
    sinusoidal_encoding,
    sinusoidal_frequencies,
)
from attnlib.course.examples import (
    VARIABLE_LENGTH_TRAIN_CONFIG,
    Seq2SeqConfig,
    TrainConfig,
    trained_reversal_model,
    trained_variable_length_reversal_model,
)
from attnlib.figures.positions import positions_rotation_figure
from attnlib.models.seq2seq.model import greedy_decode
from attnlib.models.seq2seq.toy_tasks import NUM_SPECIAL, make_batch
from attnlib.models.seq2seq.training import sequence_accuracy
from attnlib.util.rounding import (
    rounded as show,  # rounds for printing: same digits on every device
)
from attnlib.widgets import positions_explorer

set_seed(0)


def below(err, tol):
    """'< tol' when the error is below the bound (the same text on every device); otherwise the error itself."""
    return f"< {tol:.0e}".replace("e-0", "e-") if err < tol else f"= {err:.1e}, NOT below {tol:.0e}"

device = default_device()
# Random numbers are drawn on the CPU and then moved to `device`, so every device sees the same inputs.

# %% [markdown]
# ## 1. Self-attention does not know the order
#
# A convolution knows which inputs are neighbours; a recurrent network reads its inputs one after another. Self-attention does neither: without a mask, every score $q_i\cdot k_j$ depends only on the *contents* of tokens $i$ and $j$, never on where they stand (a causal mask already breaks this symmetry; see the end of this section). What does that mean precisely?
#
# Let $\Pi$ be a **permutation matrix (置换矩阵)**: $\Pi X$ is $X$ with its rows (tokens) reordered. (We write $\Pi$, not $P$, because $P$ will be the positional-encoding table from section 2 on.) Without positional information, self-attention satisfies
#
# $$
# \operatorname{SA}(\Pi X) = \Pi\,\operatorname{SA}(X).
# $$
#
# Reordering the input reorders the output in the same way and changes nothing else. This property is called **permutation equivariance (排列等变)**. To see why: $\Pi X$ gives queries $\Pi Q$, keys $\Pi K$, values $\Pi V$, so the score matrix becomes $\Pi QK^\top \Pi^\top$ (rows *and* columns permuted); softmax acts row by row, so the weights are $\Pi A\Pi^\top$; and the output is $\Pi A\Pi^\top \Pi V = \Pi AV$, because $\Pi^\top \Pi = I$.
#
# > **Correction to the slides.** The lecture slides say that self-attention "is permutation invariant". That is not accurate. *Invariant* (**排列不变**) would mean $\operatorname{SA}(\Pi X) = \operatorname{SA}(X)$: the same output whatever the order. Self-attention keeps one output per position, and those outputs move with their tokens: it is *equivariant*. Only after a **symmetric pooling (对称池化)** over positions (a sum, mean or max, which ignore order) does the result become invariant.
#
# Numbers: a multi-head self-attention layer, a sequence of 6 tokens, and a random permutation; then the same checks for all $6! = 720$ orderings at once.

# %%
# C29: SA(ΠX) = Π SA(X) (equivariant) but SA(ΠX) != SA(X) (not invariant); mean pooling is invariant
gen = torch.Generator().manual_seed(0)
L, d, h = 6, 16, 4
torch.manual_seed(0)
sa = MultiHeadAttention(d, h).to(device)
x = torch.randn(1, L, d, generator=gen).to(device)      # (B=1, L, D)
perm = torch.randperm(L, generator=gen)                  # a random reordering of the 6 tokens
print("permutation:", perm.tolist())

out, _ = sa(x, x, x)                                     # SA(X)
x_perm = permute_tokens(x, perm)                         # ΠX
out_perm, _ = sa(x_perm, x_perm, x_perm)                 # SA(ΠX)

# bound 1e-6: float32 rounding of sums of 16 products (about 1e-7), not an exact 0
print("max |SA(ΠX) - Π SA(X)|", below((out_perm - permute_tokens(out, perm)).abs().max().item(), 1e-6), " (equivariant)")
print("max |SA(ΠX) - SA(X)|   =", show((out_perm - out).abs().max(), 3), " (not invariant)")
print("max |mean_i SA(ΠX) - mean_i SA(X)|",
      below((out_perm.mean(1) - out.mean(1)).abs().max().item(), 1e-6), " (pooling makes it invariant)")

all_perms = torch.tensor(list(itertools.permutations(range(L))))       # (720, 6)
x_all = x[0][all_perms.to(device)]                                      # (720, L, D): every ΠX, one batch
out_all, _ = sa(x_all, x_all, x_all)
print(f"all {len(all_perms)} permutations: max |SA(ΠX) - Π SA(X)|",
      below((out_all - out[0][all_perms.to(device)]).abs().max().item(), 1e-6),
      "; max |mean_i SA(ΠX) - mean_i SA(X)|", below((out_all.mean(1) - out.mean(1)).abs().max().item(), 1e-6))

# %% [markdown]
# Equivariance is a problem for language: *dog bites man* and *man bites dog* contain the same three tokens, so each token gets the same output in both sentences, only listed in another order. After pooling the two sentences would be indistinguishable.
#
# **A causal mask already sees order.** All of this holds for attention *without a mask*. The causal mask of notebook 05 lets query $i$ read only the keys $j \le i$: the first token sees itself, the last sees everyone. Which tokens a query may read now depends on where it stands, so reordering the tokens changes more than the order of the outputs. The same layer, the same $X$ and the same permutations, with `is_causal=True`:

# %%
# C29 (its limit): with a causal mask the same layer is no longer permutation equivariant
out_c, _ = sa(x, x, x, is_causal=True)
out_c_perm, _ = sa(x_perm, x_perm, x_perm, is_causal=True)
print("causal: max |SA(ΠX) - Π SA(X)| =", show((out_c_perm - permute_tokens(out_c, perm)).abs().max(), 3),
      " for the permutation above (without the mask: < 1e-6)")
out_c_all, _ = sa(x_all, x_all, x_all, is_causal=True)
gaps_c = (out_c_all - out_c[0][all_perms.to(device)]).abs().amax(dim=(1, 2))    # (720,), one per permutation
print("causal, the 719 permutations other than the identity: max |SA(ΠX) - Π SA(X)| from",
      show(gaps_c[1:].min(), 3), "to", show(gaps_c[1:].max(), 3))
print("the smallest, for", all_perms[1 + int(gaps_c[1:].argmin())].tolist(), "(the last two tokens swapped)")
print("keys each query may read:", [int(n) for n in torch.ones(L, L).tril().sum(1)])

# %% [markdown]
# Not one ordering leaves the causal layer's outputs merely permuted: even swapping the last two tokens changes their outputs by 0.171. So a causal decoder (notebook 08) gets some order information from its mask alone, even with no positional encoding. An encoder's unmasked self-attention gets none; it needs positions to be written into its input.
#
# ## 2. Injecting positions: $X' = X + P$
#
# The fix of the original Transformer leaves attention alone and changes its input. A **positional encoding (位置编码)** is a matrix $P \in \mathbb{R}^{n\times d}$ with one row per position, the same shape as the embeddings $X \in \mathbb{R}^{n\times d}$, and the first layer receives their sum
#
# $$
# X' = X + P .
# $$
#
# Now a token's vector depends on *what* it is and *where* it is. When the tokens are reordered, their embeddings move but the position rows stay put, so every token that moved meets a different position vector and the equivariance is gone (in the permutation printed above only token 1 keeps its place). Below, `P_table` is this $P$; $\Pi$ is still the permutation.

# %%
# C30: X' = X + P, and with positions the permutation no longer just permutes the output
pos_enc = PositionalEncoding(d, max_positions=64).to(device)
P_table = sinusoidal_encoding(L, d, device=device)              # (L, D): the table P
x_prime = pos_enc(x)                                            # (1, L, D)
print("PositionalEncoding(x) vs x + P: max |diff| =", (x_prime - (x + P_table)).abs().max().item(), "(the same additions)")

xp_perm = pos_enc(x_perm)                                       # positions added AFTER reordering: ΠX + P
out_pe, _ = sa(x_prime, x_prime, x_prime)
out_pe_perm, _ = sa(xp_perm, xp_perm, xp_perm)
print("with positions: max |SA(ΠX + P) - Π SA(X + P)| =",
      show((out_pe_perm - permute_tokens(out_pe, perm)).abs().max(), 3), " (no longer equivariant)")
print("row norms: |x_i| averages", show(x.norm(dim=-1).mean(), 2), "(about sqrt(d) = 4); every |P_i| =",
      show(P_table.norm(dim=-1).max(), 2), "= sqrt(d/2)")

# %% [markdown]
# **How large is $P$ next to $X$?** Each row of the table has norm exactly $\sqrt{d/2} = 2.83$ (every pair adds $\sin^2 + \cos^2 = 1$). Our embeddings have entries drawn from $N(0, 1)$, so a row has norm about $\sqrt d = 4$ (4.14 on average here): the two terms are of comparable size, and neither drowns the other. That is a choice, not a law. The original Transformer multiplies its embedding vectors by $\sqrt{d_{model}}$ before adding $P$ (so does the Annotated Transformer); notebook 08's model, like this notebook, adds them unscaled. With embeddings much smaller than $P$ the first layer would see mostly positions, with much larger ones hardly any.

# %% [markdown]
# ## 3. The sinusoidal table
#
# Which $P$? The original Transformer uses a fixed, formula-generated table, the **sinusoidal positional encoding (正弦位置编码)**. With $d$ the model width, position $pos$ and pair index $i = 0, 1, \ldots, d/2 - 1$:
#
# $$
# P_{pos,\,2i} = \sin\!\left(\frac{pos}{10000^{2i/d}}\right), \qquad
# P_{pos,\,2i+1} = \cos\!\left(\frac{pos}{10000^{2i/d}}\right).
# $$
#
# Each pair of columns $(2i, 2i+1)$ is a sine and a cosine of the same **frequency (频率)** $\omega_i = 10000^{-2i/d}$. The first pair turns fast (wavelength $2\pi \approx 6.3$ positions), the last slowly: its wavelength is $2\pi\cdot 10000^{(d-2)/d}$, which for our $d = 16$ is $2\pi\cdot 10000^{14/16} \approx 2\pi\cdot 3162 \approx 19\,869$ positions (the last number printed below). Only for large $d$ does it come close to $2\pi\cdot 10000$: at $d = 512$ it is $2\pi\cdot 9647$. One frequency per pair of columns is why the curves in the lecture's plot have a different period for every pair. We check `sinusoidal_encoding` against the formula, entry by entry, with Python's `math.sin` and `math.cos`:

# %%
# C31: every entry of the table against the closed form
num_pos, d_pe = 100, 16
table = sinusoidal_encoding(num_pos, d_pe, dtype=torch.float64)       # (100, 16)
closed = torch.tensor([[math.sin(p / 10000 ** (c / d_pe)) if c % 2 == 0 else math.cos(p / 10000 ** ((c - 1) / d_pe))
                        for c in range(d_pe)] for p in range(num_pos)], dtype=torch.float64)
# bounds: float64 angles below 100 rad keep ~1e-14 absolute error; float32 rounds each entry to ~6e-8
print("max |table - closed form|, float64", below((table - closed).abs().max().item(), 1e-12))
print("max |float32 table - closed form| ",
      below((sinusoidal_encoding(num_pos, d_pe, device=device).double().cpu() - closed).abs().max().item(), 1e-6))
print("row pos=1:", show(table[1], 4))

omegas = sinusoidal_frequencies(d_pe, dtype=torch.float64)
print("frequencies w_i:   ", show(omegas, 5))
print("wavelengths 2pi/w_i:", show(2 * math.pi / omegas, 1))
print("last wavelength / 2pi =", show(1 / omegas[-1], 1), " = 10000^(14/16); 10000^(510/512) at d = 512:",
      show(10000 ** (510 / 512), 1))

# %% alt="The sinusoidal positional encoding table (d = 16) as a heatmap of positions against columns: fast-changing columns on the left, slow ones on the right."
# C31: the table as a picture: fast columns on the left, slow ones on the right
fig, ax = plt.subplots(figsize=(5.5, 3.6), layout="constrained")
_ = plotting.heatmap(table, ax=ax, cmap="cividis", vmin=-1.0, vmax=1.0, title="sinusoidal positional encoding, d = 16",
                     xlabel="column (even: sin, odd: cos)", ylabel="position pos")

# %% [markdown]
# ## 4. Why sines and cosines: an offset is a rotation
#
# Take one frequency $\omega$ and look at the pair $(\sin\omega\,pos,\ \cos\omega\,pos)$ as a point on the unit circle. By the addition formulas
#
# $$
# \sin(a+b) = \sin a\cos b + \cos a \sin b, \qquad \cos(a+b) = \cos a\cos b - \sin a\sin b,
# $$
#
# moving $k$ positions ahead is a fixed $2\times 2$ linear map:
#
# $$
# \begin{bmatrix}\sin\omega(pos+k)\\ \cos\omega(pos+k)\end{bmatrix}
# =
# \begin{bmatrix}\cos\omega k & \sin\omega k\\ -\sin\omega k & \cos\omega k\end{bmatrix}
# \begin{bmatrix}\sin\omega\,pos\\ \cos\omega\,pos\end{bmatrix}.
# $$
#
# The matrix is a **rotation (旋转)** by the angle $\omega k$, and it contains $k$ and $\omega$ but **not** $pos$. In the plane the pictures below draw (x = sin, y = cos) it turns the point **clockwise**: it is the textbook matrix $\begin{bmatrix}\cos\theta & -\sin\theta\\ \sin\theta & \cos\theta\end{bmatrix}$ with $\theta = -\omega k$, the sign flipped only because our pair lists the sine first. So "$k$ steps later" looks the same, a rotation by $\omega_i k$ in every pair, wherever in the sequence we are. A linear layer can therefore express a relative offset, which is the argument for this design. We check it for every frequency of a $d = 64$ encoding, 1000 positions and several offsets:

# %%
# C32: for every frequency, every position and several offsets, pair(pos + k) = R(k) pair(pos)
d_big, n_pos = 64, 1000
pe = sinusoidal_encoding(n_pos + 400, d_big, dtype=torch.float64, device=device)    # (1400, 64)
w = sinusoidal_frequencies(d_big, dtype=torch.float64, device=device)               # (32,)
pairs = torch.stack([pe[:, 0::2], pe[:, 1::2]], dim=-1)                             # (1400, 32, 2): (sin, cos) per frequency
worst = 0.0
for k in (1, 7, 50, 333):
    R = offset_rotation(torch.tensor(float(k), dtype=torch.float64, device=device), w)   # (32, 2, 2), one per frequency
    moved = (R @ pairs[:n_pos].unsqueeze(-1)).squeeze(-1)                           # (1000, 32, 2)
    worst = max(worst, (moved - pairs[k:k + n_pos]).abs().max().item())
# bound: float64 angles up to ~1400 rad carry ~1e-13 absolute error
print(f"checked {d_big // 2} frequencies x {n_pos} positions x 4 offsets; max error", below(worst, 1e-10))

R_example = offset_rotation(5.0, float(w[2]))
print(f"R(k=5) for i=2 at d = {d_big} (w = {float(w[2]):.4f}):", show(R_example, 4))
gap_0 = (R_example.to(device) @ pairs[0, 2] - pairs[5, 2]).abs().max().item()
gap_900 = (R_example.to(device) @ pairs[900, 2] - pairs[905, 2]).abs().max().item()
print("the same matrix moves pos 0 -> 5 and pos 900 -> 905: max errors", below(gap_0, 1e-12), "and", below(gap_900, 1e-12))

# %% [markdown]
# ### The dot product of two positions depends only on their distance
#
# The rotation has a consequence one can see in a single number. The dot product of the encodings of positions $p$ and $p + k$ adds up, pair by pair, $\sin a\sin b + \cos a\cos b = \cos(a - b)$:
#
# $$
# PE(p)\cdot PE(p+k) = \sum_{i=0}^{d/2-1} \big[\sin\omega_i p\,\sin\omega_i(p+k) + \cos\omega_i p\,\cos\omega_i(p+k)\big] = \sum_{i=0}^{d/2-1}\cos(\omega_i k).
# $$
#
# It depends on the offset $k$ and not on $p$: shifting both positions by the same amount changes nothing, the encoding's similarity is **translation invariant (平移不变)** (a property of the table; the next subsection shows that attention's scores do not inherit it). So the matrix of all dot products $G = PP^\top$ is constant along each diagonal (a **Toeplitz matrix (托普利茨矩阵)**), largest ($d/2$) on the main diagonal and smaller, not monotonically, further away:

# %% alt="The dot product PE(p)\u00b7PE(q) of 64 positions as a heatmap: constant along every diagonal, so it depends only on the offset q \u2212 p."
# C32: PE(p)·PE(p + k) = Σ_i cos(w_i k), the same for every p (d = 16, 64 positions)
n_sim = 64
P64 = sinusoidal_encoding(n_sim, d_pe, dtype=torch.float64)               # (64, 16)
G = P64 @ P64.T                                                          # (64, 64): G[p, q] = PE(p)·PE(q)
spread = max((G.diagonal(k) - G.diagonal(k).mean()).abs().max().item() for k in range(n_sim))
print("largest spread along any diagonal of G (float64 rounding only)", below(spread, 1e-12))
ks = torch.arange(n_sim, dtype=torch.float64)
sum_cos = torch.cos(ks[:, None] * omegas[None]).sum(-1)                   # (64,): Σ_i cos(w_i k)
print("max |G[0, k] - sum_i cos(w_i k)|", below((G[0] - sum_cos).abs().max().item(), 1e-12))
for k in (0, 1, 2, 5, 10, 20, 40):
    print(f"k = {k:2d}: PE(p)·PE(p + k) = {float(sum_cos[k]):6.3f}")

fig, ax = plt.subplots(figsize=(4.2, 3.6), layout="constrained")
_ = plotting.heatmap(G, ax=ax, cmap="cividis", vmin=float(G.min()), vmax=float(G.max()),
                     title="PE(p)·PE(q), d = 16", xlabel="position q", ylabel="position p")

# %% [markdown]
# ### But an attention score is not this dot product
#
# With $X' = X + P$ the score of query $i$ and key $j$ is $(x_i + p_i)\,W_Q W_K^\top (x_j + p_j)^\top$ (scaled by $1/\sqrt{d_k}$). It has four parts: content with content, two mixed ones, and a **position term** $p_i\,W_Q W_K^\top p_j^\top$. The position term is $PE(p_i)\cdot PE(p_j)$ when $W_Q W_K^\top$ is the identity. For learned (here: random) $W_Q, W_K$ it is a different bilinear form, and nothing makes it a function of $j - i$: the rotation argument was about the plain dot product. Two checks at $d = 16$ over 64 positions: the position term for random $W_Q, W_K$ with $N(0, 1/16)$ entries, and the whole score of one token $u$ repeated at every position, so that content cannot be the reason two scores differ.

# %%
# C32 (its limit): PE(p)·PE(p + k) depends on k only, the position term of a score does not
gen_w = torch.Generator().manual_seed(1)
W_Q = torch.randn(d_pe, d_pe, generator=gen_w, dtype=torch.float64) / 4    # (16, 16), entries N(0, 1/16)
W_K = torch.randn(d_pe, d_pe, generator=gen_w, dtype=torch.float64) / 4
T = P64 @ W_Q @ W_K.T @ P64.T                                              # (64, 64): T[i, j] = p_i W_Q W_Kᵀ p_jᵀ
print("k = 1 diagonal, PE(p)·PE(p + 1):            spread", below(G.diagonal(1).max().item() - G.diagonal(1).min().item(), 1e-12))
print(f"k = 1 diagonal, p_i W_Q W_Kᵀ p_(i+1)ᵀ:      from {T.diagonal(1).min().item():.2f} to {T.diagonal(1).max().item():.2f}")

u = torch.randn(d_pe, generator=gen_w, dtype=torch.float64)                # one token, at all 64 positions
x_same = u + P64                                                           # (64, 16): X + P for that token
s_add = x_same @ W_Q @ W_K.T @ x_same.T                                    # (64, 64): its (unscaled) scores
print(f"the same token everywhere, X + P: k = 1 diagonal of its scores from {s_add.diagonal(1).min().item():.2f} "
      f"to {s_add.diagonal(1).max().item():.2f}")

# Rotary position embedding: no table added; rotate each query and key by its own position instead
q_rot = rotary_embedding((u @ W_Q).expand(n_sim, d_pe))                   # (64, 16): query of u at position i
k_rot = rotary_embedding((u @ W_K).expand(n_sim, d_pe))                   # (64, 16): key of u at position j
s_rot = q_rot @ k_rot.T                                                    # (64, 64)
spread_rot = max((s_rot.diagonal(k) - s_rot.diagonal(k).mean()).abs().max().item() for k in range(-n_sim + 1, n_sim))
print("the same token everywhere, RoPE: largest spread along any diagonal of its scores", below(spread_rot, 1e-12))

# %% [markdown]
# The table's similarity is exactly translation invariant (spread below $10^{-12}$), but the position term of a score is not: along the $k = 1$ diagonal it runs from −2.47 to 5.00, so "one step to the right" is worth a different score at different places. The same token placed everywhere gets $k = 1$ scores from −12.32 to −0.34. A model *can* learn weights that use relative offsets (the rotation of section 4 says a linear map is able to express them), but nothing in $X + P$ forces its scores to depend on $j - i$ alone.
#
# **Rotary position embedding (RoPE, 旋转位置编码)** builds that in. It adds nothing to the input; instead it turns each pair of query and key features by the angle $pos\cdot\omega_i$, the angles of our table (`attnlib.core.positional.rotary_embedding`). A score is then $R(i)\,q \cdot R(j)\,k = q\cdot R(j - i)\,k$, because turning both vectors by the same extra angle leaves a dot product alone. The last line above checks it: with RoPE the same token's scores are constant along every diagonal, to float64 rounding.

# %% [markdown]
# ## 5. Explore: position, offset, frequency, base
#
# Sliders choose the position $pos$, the offset $k$, the frequency index $i$ (for $d = 16$, so $i = 0..7$) and the base of the wavelengths (10000 in the original Transformer). Four panels:
#
# - **top left**, the unit circle in the plane of columns $(2i, 2i+1)$: every position's pair as a grey dot, the pair at $pos$ (blue), the pair at $pos + k$ (red) and, circled, $R(k)$ applied to the blue point. The matrix $R(k)$ is printed in the corner;
# - **top right**, the table (yellow = +1, dark blue = −1), with rows $pos$ (blue line) and $pos + k$ (red line) marked and the pair of columns framed in black;
# - **bottom left**, the angle $\omega_i k \bmod 2\pi$ of *every* pair for the chosen $k$, the offset's "fingerprint" (red dot: the pair on the circle);
# - **bottom right**, $PE(pos)\cdot PE(pos + k)$ against $k$: the grey curve is $\sum_i\cos(\omega_i k)$, the blue dots are read from the table at the current $pos$, the red one is the chosen $k$.
#
# The readout prints $\omega_i$, its wavelength, the angle $\omega_i k$ (as it is, and reduced mod $2\pi$ as the fingerprint panel plots it), $R(k)$, the two pairs with $R(k)$ times the first, and the dot product beside $\sum_i\cos(\omega_i k)$.
#
# Things to try: move $pos$ and watch the circle's arms turn together while the fingerprint and the dots do not move at all (the offset, not the position, sets them); grow $k$ and see the fast pairs wrap around while the slow ones (large $i$) hardly move; lower the base to 100 and the slow pairs turn faster, so the dot product falls further with $k$: within 32 positions it drops to about −2, where with base 10000 it stays above 1.8.

# %% alt="The positions explorer: one frequency pair at pos and pos + k on the unit circle, the encoding table with those rows marked and the pair of columns framed, the angle \u03c9_i\u00b7k of every pair as bars, and PE(pos)\u00b7PE(pos + k) against the offset k."
# NBVAL_IGNORE_OUTPUT
positions_explorer()

# %% [markdown]
# The explorer's readout for $k = 5$ and every frequency index $i$, from a fresh instance (the one above stays where it is). The turn $\omega_i k$ is the rotation; the angle you *see* between the blue and red arms is the turn reduced to $[0, \pi]$, read here from the two pairs themselves as $\arccos(\text{pair at } pos \cdot \text{pair at } pos + k)$:

# %%
# C32: turn w_i k versus the angle seen between the arms, k = 5, d = 16 (the explorer's readout)
probe = positions_explorer()
print("i   turn w_i k (rad)   mod 2π   angle between the arms")
for i in range(8):
    st = probe.state(k=5, i=i)
    seen = math.acos(max(-1.0, min(1.0, sum(a * b for a, b in zip(st["pair at pos"], st["pair at pos + k"])))))
    print(f"{i}   {show(st['angle w_i k (rad, not reduced mod 2π)'], 3):<18} "
          f"{show(st['angle w_i k mod 2π (as plotted)'], 3):<8} {show(seen, 3)}")

# %% [markdown]
# The key picture: the table, four of its sine columns as curves (each drawn as the continuous sine it samples, with the table's integer positions as dots), and four different starting positions each moved by $k = 5$ in pair $i = 2$ of the $d = 16$ table ($\omega_2 = 0.1$): every arrow turns clockwise by the same angle, 0.50 rad. (Section 4's printed $R(k = 5)$ for $i = 2$ was for $d = 64$, where $\omega_2 = 0.5623$.)

# %% alt="The d = 16 encoding table, four of its sine columns as curves with different periods, and pair i = 2 on the unit circle, where four starting positions each moved by k = 5 turn clockwise by the same 0.50 rad."
# C31, C32: the key picture (also saved as figures/positions_rotation.png)
fig = plt.figure(figsize=(13.0, 3.8), layout="constrained")
_ = positions_rotation_figure(fig)

# %% [markdown]
# ## 6. Beyond the training length
#
# Because the encoding comes from a formula, any position has an encoding: the formula has no table size to run past. (A module that caches the formula's values does have one: `PositionalEncoding(max_positions=...)` refuses longer inputs with a clear error, below, and can simply be built larger.) This is what people mean by the encoding allowing **length extrapolation (长度外推)**. A **learned positional embedding (可学习位置嵌入)**, one trained vector per position, simply has no row for a position it never had.

# %%
# C33: the formula gives finite encodings far beyond any training length
far = sinusoidal_encoding(100_001, 16, device=device)[[10_000, 100_000]]     # (2, 16)
print("PE at pos 10,000: non-finite entries", int((~torch.isfinite(far[0])).sum()), "of 16; first values:",
      show(far[0, :4], 4))
print("PE at pos 100,000: non-finite entries", int((~torch.isfinite(far[1])).sum()), "of 16")

# a learned table of 512 positions has no row 600 (looked up on the CPU)
learned = nn.Embedding(512, 16)
try:
    learned(torch.tensor([600]))
except IndexError as err:
    print("learned table, position 600 -> IndexError:", err)

# our module stores a finite table and says so clearly; build it larger, or call the formula directly
try:
    PositionalEncoding(16, max_positions=512)(torch.zeros(1, 600, 16))
except ValueError as err:
    print("PositionalEncoding(max_positions=512) on 600 tokens -> ValueError:", err)

# %% [markdown]
# > **Common mistake.** "Sinusoidal encodings extrapolate, so the model works on longer sequences." Having a vector for position 51 is not the same as knowing what to do with it (lecture notes 004 §9.12.3). Suppose every training sequence had 50 tokens: the weights were fitted to inputs whose rows carried positions 0 to 49, and to the attention patterns of 50-token inputs. Positions 50 and beyond add vectors the weights never met. Whether the model still works on longer inputs is an empirical question, answered by testing on them. Notebook 08 trains a small encoder–decoder Transformer, with exactly this sinusoidal encoding added to its embeddings, to reverse sequences of 6 letters. That model saw a *single* length, which makes it an extreme case: it fails on a *shorter* source too, where every position was seen in training, so its failures cannot all be blamed on unseen positions. Its shipped weights, decoded on 100 held-out sources of each length (notebook 08 runs 1000 per length, with the same result):

# %%
# C33 (second half): every position has an encoding, yet a model trained on length 6 reverses only length 6
model, model_cfg, train_cfg = trained_reversal_model(device), Seq2SeqConfig(), TrainConfig()
print(f"trained on length {train_cfg.seq_len}; its position table covers {model_cfg.max_positions} positions")
for n in (4, 6, 8):
    batch = make_batch(train_cfg.task, 100, n, model_cfg.vocab_size, split="test",
                       generator=torch.Generator().manual_seed(10), device=device)
    tokens = greedy_decode(model, batch.src, batch.src_valid_lens).tokens
    print(f"source length {n}: share of the 100 reversed exactly right = {sequence_accuracy(tokens, batch.tgt_out):.2f}")

# %% [markdown]
# At length 6 every one of the 100 comes out right; at lengths 4 and 8 not one does, although positions 0 to 8 all have perfectly good encodings. Notebook 08 shows what the model learned instead: at output step $t$ it reads source position $5 - t$, as at length 6, whatever the length of the source: at length 8 it reverses the first six letters and skips the last two; at length 4, which has no positions 4 and 5, it stays on the last letter until $5 - t$ exists (it reads `3 3 3 2`). That is a rule for one length, not a failure to extrapolate.
#
# To ask the real question, the same network was trained the same way on sources of *every* length from 2 to 6 (`attnlib.course.examples.trained_variable_length_reversal_model`, written by `benchmarks/train_reversal.py --min-len 2 --write-weights`). It is tested below on lengths 2 to 10, 100 held-out sources each. Besides the share reversed exactly, the table gives the share of the $n$ output letters that are right (guessing among the letters gets about one in ten of them, printed in the header) and the source position that output step 0 reads most often (the head average of its cross-attention; it should read position $n - 1$, the last letter):

# %%
# C33: a model trained on every length 2..6 works on all of them, and not beyond
model_26 = trained_variable_length_reversal_model(device)
cfg_26 = VARIABLE_LENGTH_TRAIN_CONFIG
print(f"trained on source lengths {cfg_26.min_len} to {cfg_26.seq_len}")
guess = 1 / (model_cfg.vocab_size - NUM_SPECIAL)                                    # one letter of the 10 at random
print(f"length  reversed exactly  letters right (guessing: {guess:.2f})  step 0 reads position (most often; should be n - 1)")
for n in range(2, 11):
    batch = make_batch(cfg_26.task, 100, n, model_cfg.vocab_size, split="test",
                       generator=torch.Generator().manual_seed(10), device=device)
    decoded = greedy_decode(model_26, batch.src, batch.src_valid_lens)
    letters = (decoded.tokens[:, :n] == batch.tgt_out[:, :n]).float().mean().item()
    first_read = decoded.cross_weights[-1][:, :, 0].mean(dim=1).argmax(dim=-1)   # (B,): step 0, heads averaged
    print(f"{n:<7d} {sequence_accuracy(decoded.tokens, batch.tgt_out):<17.2f} {letters:<29.2f} "
          f"{int(first_read.cpu().mode().values)}")

# %% [markdown]
# On the lengths it was trained on, the model reverses 0.97 to 1.00 of the sources, and output step 0 reads position $n - 1$ as it should. From length 7 on it fails: 0.02 of the sources at length 7 and none from 8 on, with 0.07 to 0.09 of the letters right at lengths 8 to 10, no better than guessing. From length 6 on, output step 0 reads position 5 (most often) whatever the length: in training the last letter was never further out than position 5, so "start from the last letter" was learned only for the places where the last letter had been. Positions 6 to 9 have perfectly good encodings, and the weights do not know what to do with them. This is the failure the common mistake above is about, now without the confound of a single training length.
#
# There is also a purely numerical limit. The angle $pos\cdot\omega_i$ grows with $pos$, and in float32 a large number has few digits left after the decimal point, so $\sin$ of it is computed from a rounded angle. If the angles are computed in float32 (as a naive implementation would) instead of float64 (as `sinusoidal_encoding` does before it casts), the error grows with the position:

# %%
# C33: float32 angles lose accuracy far out (computed on the CPU: this is about float32 arithmetic)
w32 = sinusoidal_frequencies(16, dtype=torch.float32)
w64 = sinusoidal_frequencies(16, dtype=torch.float64)
for p in (1_000, 100_000, 10_000_000):
    a32 = torch.tensor(float(p), dtype=torch.float32) * w32
    a64 = p * w64
    err = torch.cat([(a32.sin().double() - a64.sin()).abs(), (a32.cos().double() - a64.cos()).abs()]).max().item()
    print(f"pos {p:>10,}: max |PE computed in float32 - float64| ~ {err:.0e}")

# %% [markdown]
# At ten million positions an entry of the float32 encoding is off by as much as 0.06. The cure is to compute the angles in float64, as `sinusoidal_encoding` does; it is *not* a reason to change the scheme. Rotary position embedding (RoPE), met at the end of section 4, rotates queries and keys by the very same angles $pos\cdot\omega_i$, so it needs the same care: computed from float32 angles its cosines and sines are off by as much at the same position. `attnlib.core.positional.rotary_embedding` computes its angles in float64 and only then casts the cosines and sines to the input's dtype. Rotating the pair $(1, 0)$ returns $(\cos, \sin)$ of the angle, so the rotation itself shows which angles were used:

# %%
# C33: RoPE uses the same angles pos·w_i, so it has the same float32 problem; rotary_embedding's angles are float64
p = 10_000_000
pair = torch.tensor([[1.0, 0.0] * 8])                                     # (L=1, D=16): (a, b) = (1, 0) in every pair
turned = rotary_embedding(pair, torch.tensor([float(p)]))[0]              # (16,): (cos, sin) of p w_i for every i
exact = torch.stack([(p * w64).cos(), (p * w64).sin()], dim=-1).flatten()  # (16,), float64
a32 = torch.tensor(float(p), dtype=torch.float32) * w32
naive = torch.stack([a32.cos(), a32.sin()], dim=-1).flatten()             # the rotation from float32 angles
print(f"pos {p:,}: rotary_embedding (float64 angles, float32 output): max |error| ~ {(turned.double() - exact).abs().max().item():.0e}")
print(f"pos {p:,}: the same rotation from float32 angles:              max |error| ~ {(naive.double() - exact).abs().max().item():.0e}")

# %% [markdown]
# Models adopt relative schemes such as RoPE for what section 4 showed: a score $q_i\cdot k_j$ that depends on the two positions only through $j - i$. How such models are trained to use long contexts is beyond this chapter.
#
# ## Exercises
#
# 1. **(widget)** Fix $i = 0$ and $k = 5$ and move $pos$. Does the angle between the blue and red arms change? Does the fingerprint panel change? Now fix $pos$ and $k$ and move $i$ from 0 to 7: what happens to the angle, and why?
# 2. The check in section 1 used mean pooling. Would *max* pooling over positions also give an order-independent result? Would taking the output at position 0 (as some classifiers do with a special first token) be invariant without positional encoding?
# 3. Show from the rotation formula that $R(k_1)R(k_2) = R(k_1 + k_2)$ and $R(k)^{-1} = R(-k)$. What does this say about going $k$ positions *back*?
# 4. With $d = 512$, what is the longest wavelength in the table, roughly? Why might a model have trouble telling positions 100 and 101 apart using only the slowest pairs?
#
# <details><summary>Answer</summary>
#
# 1. With $i$ fixed the angle is always $\omega_0 k = 5$ rad clockwise, whatever $pos$ (on screen the arms are $2\pi - 5 \approx 1.28$ rad apart, the same turn seen counter-clockwise): the red point is the blue one rotated by the same matrix, and the fingerprint (which depends on $k$ only) does not move. Increasing $i$ lowers $\omega_i$, so the turn $\omega_i k$ falls: 5.0, 1.581, 0.5, 0.158, … rad (the table after the explorer). The angle you *see* between the arms does not fall at first: it goes from 1.283 rad at $i = 0$ **up** to 1.581 rad at $i = 1$, because the 5-rad turn at $i = 0$ went more than halfway round the circle and so looks like a short turn the other way. From $i = 1$ on the turn is below $\pi$, the two angles agree, and they shrink together: at $i = 7$ (0.002 rad) the two points almost coincide.
# 2. Yes: max over positions ignores order just as the mean does. The output at position 0 is *not* invariant: after a permutation position 0 holds another token, and by equivariance its output is that token's output. (With a fixed special token always placed first, it is, because that token's query sees the other tokens only as an unordered set.)
# 3. Rotations by angles $\omega k_1$ and $\omega k_2$ compose to a rotation by $\omega(k_1 + k_2)$, and the inverse of a rotation is the rotation by the opposite angle. So moving back $k$ positions is also a fixed linear map, $R(-k) = R(k)^\top$.
# 4. $\omega_{255} = 10000^{-510/512}\approx 1.04\times 10^{-4}$, a wavelength of about $2\pi/\omega \approx 60\,000$ positions. Over one step the slowest pairs change by about $10^{-4}$, tiny next to everything else in the vector; the fast pairs are what distinguish neighbouring positions.
# </details>
