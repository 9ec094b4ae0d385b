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
# # 11 · Induction heads: a small GPT learns to copy from its context
#
# **What you will learn**
#
# - what a **decoder-only (仅解码器)** model is: the decoder block of notebook 08 without the
#   cross-attention, stacked, trained to predict every next token at once, with the **causal mask
#   (因果掩码)** of notebook 05 keeping each position from seeing the future;
# - that a 2-layer model trained on random tokens with a repeated segment learns, after a long
#   plateau, to copy the segment's second occurrence from its first (**in-context learning
#   (上下文学习)**), and that this happens in a short stretch of training (a **phase change**);
# - which heads do it, measured one score at a time: a layer-0 head that looks at the previous
#   token, a layer-1 head that looks at the token *after* the earlier copy of the current token
#   (an **induction head (归纳头)**) and copies it, and how the second reads the first through its
#   keys (**K-composition**); and that one layer is not enough;
# - that a head's importance is what removing it does, not how striking its weights look (notebook
#   10's lesson, measured again);
# - how a decoder writes text one token at a time (**autoregressive (自回归)** decoding) and what
#   the **KV cache (键值缓存)** saves.
#
# **Sections of the lecture notes taught:** lecture notes 004 (*9 Attention and the Transformer*)
# §9.13.2 (the decoder block) and §9.14 (causal masked attention); lecture notes 000 (*Chapter 2:
# the mathematics of attention*) §6 (the matrix form and the mask) and §8 (multi-head attention:
# no head is promised to mean anything, so we measure what each one does).
#
# **Read first:** `05_masking.ipynb` (the causal mask), `06_multi_head.ipynb` (heads),
# `08_encoder_decoder.ipynb` (the decoder block, greedy decoding), `10_real_heads.ipynb` (measuring
# heads, ablation).
#
# **Time:** about 40 minutes. The training run was done once and ships with attnlib; the notebook
# loads it and repeats its first steps to show it is the same run.

# %%
# %matplotlib inline
import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F

from attnlib import set_seed
from attnlib.course import induction as ind
from attnlib.course.kv_cache import cache_size_table, decode_cost_table
from attnlib.models.gpt import GPT, GPTConfig
from attnlib.util.rounding import rounded as show  # rounds for printing: same digits everywhere

set_seed(0)

# %% [markdown]
# ## 1. A decoder alone, and what it is trained to do
#
# The decoder block of lecture notes 004 §9.13.2 has three sub-layers: causal self-attention,
# cross-attention to the encoder, and the FFN. A **decoder-only** language model drops the encoder
# and with it the cross-attention. What is left is a stack of blocks of causal self-attention (and,
# in general, an FFN), between a token embedding with position vectors at the bottom and an
# **unembedding (反嵌入)** at the top that turns each position's vector into one score (logit) per
# vocabulary token. Our model (`attnlib.models.gpt.GPT`) is built from the same
# `dot_product_attention` and `causal_mask` as notebooks 01–05, in the Pre-LN order of notebook 08
# (normalise, then the sub-layer, then add).
#
# The training objective is **next-token prediction**: position $t$ reads tokens $0..t$ and is scored
# on token $t+1$. So the targets are the inputs shifted left by one, and one forward pass gives a
# loss at *every* position at once:
#
# $$\mathcal L = \frac{1}{T-1}\sum_{t=0}^{T-2} -\log p_\theta\big(x_{t+1} \mid x_0, \dots, x_t\big).$$
#
# That is only honest if position $t$ really cannot see $x_{t+1}$: the causal mask of §9.14
# ($M_{ij} = -\infty$ for $j > i$). The cell checks it on the model itself: change every token after
# $t$, and the logits at positions $0..t$ must not move.

# %%
cfg = GPTConfig(
    vocab_size=64, max_len=48, d_model=64, num_heads=2, num_layers=2, attention_only=True
)
model64 = GPT(cfg).double().eval()  # untrained, float64 so that "unchanged" means exactly
ids = torch.randint(0, 64, (1, 12))
inputs, targets = ids[:, :-1], ids[:, 1:]  # the targets are the inputs shifted by one
with torch.no_grad():
    logits = model64(inputs).logits  # (B, T, V): a prediction at every position
losses = F.cross_entropy(logits[0], targets[0], reduction="none")  # (T,)
print("inputs ", inputs[0].tolist())
print("targets", targets[0].tolist())
print(
    "logits",
    tuple(logits.shape),
    "| loss at each of the",
    losses.numel(),
    "positions:",
    show(losses, 2),
)
print(
    "mean loss",
    show(losses.mean(), 3),
    "| log(64) =",
    show(torch.log(torch.tensor(64.0)), 3),
    "(a uniform guess over 64 tokens)",
)
t = 5
changed = inputs.clone()
changed[:, t + 1 :] = torch.randint(0, 64, (1, inputs.shape[1] - t - 1))  # a different future
with torch.no_grad():
    logits2 = model64(changed).logits
print(
    f"positions 0..{t}: largest change of a logit when tokens {t + 1}.. change:",
    float((logits2[0, : t + 1] - logits[0, : t + 1]).abs().max()),
)
print(
    f"position {t + 1}: largest change:",
    show((logits2[0, t + 1] - logits[0, t + 1]).abs().max(), 2),
)

# %% [markdown]
# The change at positions $0..t$ is exactly 0.0 (in float64: not small, zero), and position $t+1$,
# which reads a changed token, moves. The unit tests check the rest of the model against an
# independent implementation: transformers' `GPT2LMHeadModel`, built from a small `GPT2Config` and
# given the same weights, gives the same logits in float64 (`tests/test_gpt_parity.py`, C49).

# %% [markdown]
# ## 2. The task: random tokens with a repeated segment
#
# Each training sequence has 48 tokens from a vocabulary of 64. A segment occurs twice, at a random
# distance, so the second occurrence cannot be found by position: it can only be predicted by
# finding the earlier copy of the current token *in the context* and reading what came after it.
# SETUP_PROSE
#
# Token 0 of the second occurrence cannot be guessed (nothing says the copy starts there); its tokens
# 1, 2, … can. We score them separately: the **loss on the first occurrence** and the **loss on the
# second occurrence** (each the mean loss of predicting its tokens 1 onward). Their difference is the
# **in-context score** (second minus first): 0 for a model that ignores the context, strongly
# negative for one that copies.

# %%
setup = ind.TrainSetup()
task = setup.task
print(task)
example = ind.repeat_batch(task, 1, torch.Generator().manual_seed(3))
f0, s0, L = int(example.first[0]), int(example.second[0]), example.segment
row = example.ids[0].tolist()
print(f"first occurrence at {f0}..{f0 + L - 1}, second at {s0}..{s0 + L - 1} (distance {s0 - f0})")
print(
    "tokens:",
    " ".join(
        f"[{v}" if i in (f0, s0) else (f"{v}]" if i in (f0 + L - 1, s0 + L - 1) else str(v))
        for i, v in enumerate(row)
    ),
)

# %% [markdown]
# ## 3. Training, and the phase change
#
# The model: 2 layers of causal self-attention with 2 heads each, width 64, **no FFN** (an
# attention-only model, so that every computation is a head's), learned positions, tied
# embeddings. AdamW, learning rate $10^{-3}$, batches of 32 fresh sequences. The whole run
# (printed below) takes several minutes on a laptop CPU, longer than this notebook should, so it was
# done once with `python -m attnlib.course.induction --write`, and `attnlib` ships its record: the
# loss of every step, the scores every few steps, and the weights at each of those steps (float16).
#
# To see that the record is this code's run, the next cell trains the same model from the same seed
# for its first steps, with a progress bar, and compares its losses with the shipped ones.

# %%
model, run = ind.load_run("two_layer")
print(
    f"shipped run: {len(run.losses)} steps, evaluated every {run.setup.eval_every} steps "
    f"({len(run.snapshots)} snapshots)"
)
n_check = 200
_, rerun = ind.train_induction(run.setup, steps=n_check)
diff = (rerun.losses - run.losses[:n_check]).abs().max()
print(
    f"first {n_check} steps retrained here vs shipped: largest difference of a step's loss "
    f"{show(diff, 2)} (the shipped losses are stored in float16)"
)

# %% [markdown]
# RUN_PROSE

# %%
steps = run.eval_steps
m = run.metrics
pc = ind.phase_change(run)
print("phase change (in-context score at 10 %, 50 %, 90 % of its final value): steps", pc)
for i in range(0, len(steps), max(1, len(steps) // 10)):
    print(
        f"step {int(steps[i]):5d}  loss {show(m['loss'][i], 2):.2f}  first {show(m['first'][i], 2):.2f}"
        f"  second {show(m['second'][i], 2):.2f}  in-context {show(m['in_context'][i], 2):+.2f}"
        f"  copy accuracy {show(m['copy_acc'][i], 2):.2f}"
    )
print(
    f"final step {int(steps[-1])}: loss {show(m['loss'][-1], 2)}, in-context {show(m['in_context'][-1], 2)}, "
    f"copy accuracy {show(m['copy_acc'][-1], 2)}"
)

# %%
fig, axes = plt.subplots(1, 2, figsize=(10, 3.4))
ax = axes[0]
ax.plot(
    torch.arange(1, len(run.losses) + 1),
    run.losses,
    color="0.75",
    lw=0.6,
    label="training loss (each step)",
)
ax.plot(steps, m["first"], label="held-out: first occurrence")
ax.plot(steps, m["second"], label="held-out: second occurrence")
for key, ls in (("start", ":"), ("end", "--")):
    ax.axvline(pc[key], color="C3", ls=ls, lw=1)
ax.set(
    xlabel="training step",
    ylabel="loss (nats)",
    title="the plateau, then the drop (red: 10 % and 90 %)",
)
ax.legend(fontsize=7)
ax = axes[1]
ax.plot(steps, m["in_context"], color="C1", label="in-context score (2nd − 1st)")
ax.plot(steps, m["copy_acc"], color="C2", label="copy accuracy (2nd occurrence)")
ax.axhline(0, color="0.6", lw=0.8)
ax.set(
    xlabel="training step",
    ylabel="nats / fraction",
    title="in-context learning appears at the drop",
)
ax.legend(fontsize=7)
fig.tight_layout()

# %% [markdown]
# ## 4. The circuit, head by head
#
# CIRCUIT_INTRO

# %%
held = run.setup.eval_batch()
scores = ind.head_scores(model, held)
print("head            previous-token  induction (prefix matching)  copying")
for layer in range(2):
    for h in range(2):
        print(
            f"layer {layer} head {h}   {show(scores['previous'][layer, h], 2):6.2f}"
            f"          {show(scores['induction'][layer, h], 2):6.2f}"
            f"                      {show(scores['copying'][layer, h], 2):6.2f}"
        )

# %% [markdown]
# SCORES_PROSE

# %%
kcomp = ind.composition_scores(model, "k")
qcomp = ind.composition_scores(model, "q")
vcomp = ind.composition_scores(model, "v")
base = ind.random_composition_baseline(cfg.d_model, cfg.d_model // cfg.num_heads)
print("composition scores, rows: layer-0 head, columns: layer-1 head")
print("K:", show(kcomp, 2), "\nQ:", show(qcomp, 2), "\nV:", show(vcomp, 2))
print("random matrices of the same shapes:", show(base, 2))
kp = ind.key_path_induction(model, held)
print("\nlayer-1 induction scores with a layer-0 head's output removed from layer 1's KEYS only:")
for h0 in range(2):
    print(f"  without layer-0 head {h0} in the keys: {show(kp[h0], 2)}")
print(f"  nothing removed:                    {show(kp[2], 2)}")

# %% [markdown]
# COMPOSITION_PROSE

# %% [markdown]
# ### The control: one layer
#
# The same data, the same training, but a single layer of 2 heads (C53).

# %%
model1, run1 = ind.load_run("one_layer")
m1 = run1.metrics
print(f"1-layer model, {len(run1.losses)} steps:")
for i in range(0, len(run1.eval_steps), max(1, len(run1.eval_steps) // 6)):
    print(
        f"step {int(run1.eval_steps[i]):5d}  loss {show(m1['loss'][i], 2):.2f}  in-context "
        f"{show(m1['in_context'][i], 2):+.2f}  copy accuracy {show(m1['copy_acc'][i], 2):.2f}"
    )
s1 = ind.head_scores(model1, held)
print(
    "final: induction scores",
    show(s1["induction"][0], 2),
    "| previous-token",
    show(s1["previous"][0], 2),
    "| in-context",
    show(s1["in_context"], 2),
    "| copy accuracy",
    show(s1["copy_acc"], 2),
)
fig, ax = plt.subplots(figsize=(6, 3))
ax.plot(steps, m["in_context"], label="2 layers")
ax.plot(run1.eval_steps, m1["in_context"], label="1 layer")
ax.axhline(0, color="0.6", lw=0.8)
ax.set(
    xlabel="training step",
    ylabel="in-context score (nats)",
    title="the control: one layer does not learn to copy",
)
ax.legend()
fig.tight_layout()

# %% [markdown]
# CONTROL_PROSE

# %% [markdown]
# ## 5. Ablation: remove a head, measure the loss
#
# `head_mask` (as in notebook 10) multiplies each head's output by 0 before $W_O$. We remove each
# head in turn and measure the losses on the held-out batch (C54).

# %%
table = ind.ablation_table(model, held)
print("removed           1st occ. loss  2nd occ. loss  in-context  copy accuracy")
for r in table:
    name = "nothing" if r["layer"] is None else f"layer {r['layer']} head {r['head']}"
    print(
        f"{name:16s}  {show(r['first'], 2):8.2f}      {show(r['second'], 2):8.2f}     "
        f"{show(r['in_context'], 2):+6.2f}      {show(r['copy_acc'], 2):6.2f}"
    )

# %% [markdown]
# ABLATION_PROSE

# %% [markdown]
# ## 6. Writing with the model: autoregressive decoding and the KV cache
#
# A decoder writes one token at a time: predict, append the prediction, predict again. Recomputing
# every earlier position at every step is wasted work, because with the causal mask position $j$'s
# keys and values never change once written. The **KV cache** keeps them: at each step only the new
# token goes through the model, its query meets the cached keys, and its own key and value are
# appended.
#
# A prompt that holds the start of a segment and, later, the segment's first token again: the trained
# model should continue with the rest of the segment.

# %%
g = torch.Generator().manual_seed(11)
seg = torch.randint(0, 64, (10,), generator=g)
prompt = torch.cat(
    [torch.randint(0, 64, (6,), generator=g), seg, torch.randint(0, 64, (9,), generator=g), seg[:2]]
)[None]
out_cached, logits_cached = model.generate(prompt, 8, use_cache=True)
out_plain, logits_plain = model.generate(prompt, 8, use_cache=False)
print("segment          ", seg.tolist())
print(
    "prompt ends with ",
    prompt[0, -2:].tolist(),
    "| the model writes",
    out_cached[0, prompt.shape[1] :].tolist(),
)
print("the segment goes on", seg[2:10].tolist())
print(
    "same tokens with and without the cache:",
    bool(torch.equal(out_cached, out_plain)),
    "| largest logit difference",
    show((logits_cached - logits_plain).abs().max(), 4),
)

# %% [markdown]
# The cost of one new token, counted by `torch.utils.flop_counter.FlopCounterMode` (matrix products,
# 2 FLOPs per multiply-add) on this model, with and without the cache:

# %%
rows = decode_cost_table(model, [1, 8, 16, 24, 32, 40, 46])
print("prefix  FLOPs with cache  FLOPs without   cache (numbers)")
for r in rows:
    print(f"{r.prefix:6d}  {r.flops_cached:16,d}  {r.flops_uncached:13,d}   {r.cache_numbers:,d}")
fig, ax = plt.subplots(figsize=(6, 3))
ax.plot([r.prefix for r in rows], [r.flops_cached for r in rows], "o-", label="with the KV cache")
ax.plot(
    [r.prefix for r in rows], [r.flops_uncached for r in rows], "s-", label="recomputing the prefix"
)
ax.set(
    xlabel="prefix length p", ylabel="FLOPs for token p + 1", title="work per new token (counted)"
)
ax.legend()
fig.tight_layout()

# %% [markdown]
# KV_PROSE

# %%
for r in cache_size_table():
    print(
        f"{r.name}: {r.num_layers} layers x {r.num_kv_heads} K/V heads x {r.head_dim} -> "
        f"{r.tokens} tokens: {r.numbers:,d} numbers = {r.bytes / 2**30:.2f} GiB"
    )

# %% [markdown]
# CACHE_PROSE

# %% [markdown]
# ## 7. The training replayed
#
# The explorer plays the shipped run's snapshots. Pick a checkpoint (the slider), a head (the menu)
# and a query position: the left panel is the head's attention on one held-out sequence, with the
# cells where an induction head should look marked in red; the right panel is the loss and the
# in-context score with a marker at the checkpoint; below, the query's row. Move the checkpoint
# across the drop and watch layer 1's stripe appear.

# %% alt="The induction explorer: a head's attention map on one held-out sequence at a training checkpoint, with the induction targets marked, the loss and in-context curves with a marker at the checkpoint, and the query position's weights as bars."
from attnlib.widgets.explorers.induction import induction_explorer

explorer = induction_explorer()
explorer

# %%
first, last = 0, len(run.snapshots) - 1
for c in (first, last):
    st = explorer.state(checkpoint=c, head=2)
    print(
        f"checkpoint {c} (step {st['step']}): {st['head']}: induction score {show(st['induction (prefix-matching) score'], 2)}, "
        f"in-context {show(st['in-context score (2nd − 1st occurrence loss)'], 2)}"
    )

# %% [markdown]
# ## Summary
#
# SUMMARY_PROSE
