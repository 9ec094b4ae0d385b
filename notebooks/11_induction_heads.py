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
# - that a 2-layer model trained on random tokens with a repeated segment learns, after a long,
#   slow stretch, to copy the segment's second occurrence from its first (**in-context learning
#   (上下文学习)**), and that this happens in a short stretch of training (a **phase change**);
# - which heads do it, measured one score at a time. The textbook **induction head (归纳头)**
#   circuit is a layer-0 head that looks at the previous token and a layer-1 head that attends to the
#   token after the earlier copy of the current token, found through its keys (**K-composition**),
#   and copies it. With segments of random length it forms here, and we measure each part; one layer
#   is not enough. A different setup (one fixed segment length, another initialisation and seed)
#   gave a different circuit: the setup decides which circuit a model learns;
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
from dataclasses import replace

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
# Each training sequence has 48 tokens from a vocabulary of 64. A segment occurs twice. Its
# length is drawn for each sequence, uniformly from 2 to 16 tokens; the distance between its two
# starts is then drawn uniformly from what fits (at least the length, so the two occurrences do
# not overlap), and where the first starts likewise. So the second occurrence cannot be found by
# position, and no one distance back leads from a token of the second occurrence to its earlier
# copy in every sequence. It can only be predicted by finding the earlier copy of the current
# token *in the context* and reading what came after it.
#
# Token 0 of the second occurrence cannot be guessed (nothing says the copy starts there); its tokens
# 1, 2, … can. We score them separately: the **loss on the first occurrence** and the **loss on the
# second occurrence** (each the mean loss of predicting its tokens 1 onward). Their difference is the
# **in-context score** (second minus first): 0 for a model that ignores the context, strongly
# negative for one that copies. It is our task's version of the in-context learning score of
# Olsson et al. (2022), but not the same quantity: theirs compares a late and an early token of
# ordinary text, ours the two occurrences of a segment.

# %%
setup = ind.TrainSetup()
task = setup.task
print(task)
example = ind.repeat_batch(task, 1, torch.Generator().manual_seed(3))
f0, s0, L = int(example.first[0]), int(example.second[0]), int(example.row_lengths()[0])
row = example.ids[0].tolist()
print(f"segment length: drawn uniformly from {task.min_segment} to {task.segment}; distance "
      f"between the starts: from the length to {task.seq_len} minus the length")
print(f"this sequence: length {L}, first occurrence at {f0}..{f0 + L - 1}, second at "
      f"{s0}..{s0 + L - 1} (distance {s0 - f0})")
big = ind.repeat_batch(task, 4096, torch.Generator().manual_seed(4))
dist = big.second - big.first
print(f"over 4096 sequences: distances {int(dist.min())} to {int(dist.max())}; the most common "
      f"one occurs in {show(100 * torch.bincount(dist).max() / 4096, 1)} % of them")
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
# embeddings. The heads' matrices start from PyTorch's default initialisation (`init="torch"`:
# s.d. 0.072 at width 64, printed below) rather than GPT-2's 0.02: with the smaller weights the
# scores barely depend on the tokens at first, and in our trials the model stayed much longer before the
# drop (those trials are not shown here). AdamW without weight decay (`weight_decay=0.0`: plain Adam), learning rate $10^{-3}$, batches of 32 fresh
# sequences, seed 1. The whole run (printed below) takes several minutes on a CPU, longer than this
# notebook should, so it was done once with `python -m attnlib.course.induction --write`, and
# `attnlib` ships its record: the loss of every step, the scores every 100 steps, and the weights
# every 300 steps (float16).
#
# To see that the record is this code's run, the next cell trains the same model from the same seed
# for its first steps, with a progress bar, and compares its losses with the shipped ones.

# %%
model, run = ind.load_run("two_layer")
print(run.setup)
print(
    f"shipped run: {len(run.losses)} steps, evaluated every {run.setup.eval_every} steps "
    f"({len(run.snapshots)} snapshots, every {int(run.snapshot_steps[1] - run.snapshot_steps[0])} "
    f"steps); it took {run.seconds / 60:.0f} minutes on the shared 2-core machine that trained it"
)
for init in ("gpt2", "torch"):  # the two initialisations of the heads' matrices
    w_q = ind.induction_model(replace(run.setup, init=init)).blocks[0].attn.w_q.weight
    print(f"init={init!r}: s.d. of layer 0's W_Q before training {show(w_q.std(), 3)}")

# %%
# NBVAL_IGNORE_OUTPUT
n_check = 200  # the progress bar's text changes with the machine's speed, so nbval skips it
_, rerun = ind.train_induction(run.setup, steps=n_check)

# %%
diff = (rerun.losses - run.losses[:n_check]).abs().max()
print(
    f"first {n_check} steps retrained here vs shipped: largest difference of a step's loss "
    f"{show(diff, 2)} (the shipped losses are stored in float16)"
)

# %% [markdown]
# The retrained steps give the shipped losses to the 2 decimals printed (float16 storage, and the
# float rounding of another CPU, stay below that). The slow unit test
# `test_retraining_repeats_the_shipped_run` retrains the first 4000 steps and checks what must
# hold on any CPU (a training run's last bits differ between CPUs): still before the drop at step
# 2500, past the drop at 4000, with the circuit's scores there.
#
# Now the record of the whole run, on a fixed held-out batch of 256 sequences (C51). Where the drop
# starts and ends is found from the record itself: the stretch of evaluations around the fastest
# fall of the in-context score in which it falls at least a quarter as fast
# (`attnlib.course.induction.phase_change`).

# %%
steps = run.eval_steps
m = run.metrics
pc = ind.phase_change(run)
print(f"the drop: steps {pc['start']} to {pc['end']} ({pc['end'] - pc['start']} of {len(run.losses)} steps); "
      f"the in-context score goes from {show(pc['before'], 2)} to {show(pc['after'], 2)}, "
      f"{show(100 * pc['fall'], 0):.0f} % of its whole fall")
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

# %% alt="Left: the training loss of each step and the held-out losses on the first and second occurrence stay near 4.2 until the drop between steps 3200 and 3500 (red dashed lines), where the second-occurrence loss falls to about 1.3 and the training loss to about 3.8; right: the in-context score falls to about -2.9 and the copy accuracy rises to about 0.8 at the same drop."
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
for key in ("start", "end"):
    ax.axvline(pc[key], color="C3", ls="--", lw=1)
ax.set(
    xlabel="training step",
    ylabel="loss (nats)",
    title="a slow stretch, then the drop (red: start and end)",
)
ax.legend(fontsize=7)
ax = axes[1]
ax.plot(steps, m["in_context"], color="C1", label="in-context score (2nd − 1st)")
ax.plot(steps, m["copy_acc"], color="C2", label="copy accuracy (2nd occurrence)")
ax.axhline(0, color="0.6", lw=0.8)
for key in ("start", "end"):
    ax.axvline(pc[key], color="C3", ls="--", lw=1)
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
# Which heads copy, and how? We measure, per head, on the held-out batch:
#
# - the **previous-token score**: the mean weight from position $t$ to $t-1$;
# - the **induction (prefix-matching) score**: from a position $q$ of the second occurrence, the
#   mean weight on the token *after* the earlier copy of $q$'s token, position $q-d+1$ ($d$ the
#   distance between the occurrences): where a textbook induction head looks, since that token is
#   the one to predict;
# - the **copying score** of Elhage et al.: the eigenvalues $\lambda$ of the head's OV circuit on the
#   tokens, $W_E W_V W_O W_U$ ($V \times V$), give $\sum\lambda / \sum|\lambda|$; near 1 means
#   "the head raises the logit of the token it reads".

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
# **The textbook scores, head by head.** One layer-0 head stands out as a previous-token head, and
# both layer-1 heads as induction heads. Layer-0 head 1 has a
# previous-token score of 0.35 (a mean over all positions 1 to 47); every other head has at most 0.03. Both layer-1 heads have
# induction scores of 0.58 and 0.57 (layer 0's heads: 0.02) and copying scores of 0.91 and 0.88.
# But a mean over all positions can hide where a head does its job, so we look closer: for layer 0,
# the weight on the previous token at each position; for layer 1, the mean weight on each offset
# from the earlier copy of the query's token, and the induction score split by where the key lies.

# %% alt="Left: layer-0 head 1 puts about 0.95 of its weight on the previous token at positions 1 to 17 and almost none after, while head 0 stays near 0 throughout; right: both layer-1 heads put about 0.58 of their weight on the earlier copy + 1 and almost none on every other offset."
with torch.no_grad():
    att = model(held.ids, output_attentions=True).attentions
prev_head = int(scores["previous"][0].argmax())
t = torch.arange(1, 48)
on_prev = att[0][:, :, t, t - 1].mean(0)  # (H, 47): mean weight on t - 1 at position t = 1..47
for h in range(2):
    print(f"layer 0 head {h}: mean weight on the previous token at positions 1..17: "
          f"{show(on_prev[h, :17].mean(), 2)}, at positions 18..47: {show(on_prev[h, 17:].mean(), 2)}")
offsets = list(range(0, 17))
match = ind.match_profile(att, held, offsets)  # (layers, H, 17): weight on q - d + o
for h in range(2):
    o = offsets[int(match[1, h].argmax())]
    print(f"layer 1 head {h}: from the second occurrence, most weight on the earlier copy + {o} "
          f"(mean {show(match[1, h, o], 2)})")
# where the induction target lies: a key at position <= 17 or later
q = held.positions("second")
key = q - (held.second - held.first)[:, None] + 1  # the token after the earlier copy
rows = torch.arange(q.shape[0])[:, None]
on_key = att[1].permute(0, 2, 3, 1)[rows, q, key]  # (B, n, H)
for name, where in (("at positions 1..17", held.valid() & (key <= 17)),
                    ("at positions 18..47", held.valid() & (key > 17))):
    share = where.sum() / held.valid().sum()
    w = (on_key * where[..., None]).sum((0, 1)) / where.sum()
    print(f"targets {name}: {show(100 * share, 0):.0f} % of them; layer-1 heads' weight there "
          f"{show(w, 2)}")
fig, axes = plt.subplots(1, 2, figsize=(10, 3))
for h in range(2):
    axes[0].plot(t, on_prev[h], "o-", ms=2, label=f"layer 0 head {h}")
    axes[1].plot(offsets, match[1, h], "o-", ms=3, label=f"layer 1 head {h}")
axes[0].set(xlabel="query position t", ylabel="mean weight on t − 1",
            title="layer 0: attention to the previous token")
axes[1].set(xlabel="o: key = earlier copy of the query's token + o", ylabel="mean weight",
            title="layer 1: where it looks from the 2nd occurrence")
for ax in axes:
    ax.legend(fontsize=8)
fig.tight_layout()

# %% [markdown]
# **What formed, as measured (C52).** The textbook circuit, with one limit. Layer-0 head 1 is a
# previous-token head at positions 1 to 17: there it puts 0.95 of its weight on the token before.
# From position 18 on it does not (0.01). (The 0.35 of the
# table is the mean over all 47 positions: 17 near 0.95, 30 near 0.01.) The two layer-1
# heads, from a position $q$ of the second occurrence, put most weight on the earlier copy of
# $q$'s token plus 1 (0.58 and 0.57), the token to predict. When that key lies at positions 1 to
# 17, where the previous-token head works, they find it with weight 0.74 and 0.73; when it lies
# later, almost never (0.01). 78 % of the targets lie early (the first occurrence must leave room
# for the second after it, so it starts early more often than late). So training built the
# textbook circuit where most of the targets are, and not beyond.
#
# How the two halves fit: at a key position $j$ the previous-token head writes (a vector of) the
# token $x_{j-1}$. A layer-1 head at $q$ whose query holds $x_q$ matches the key $j$ where
# $x_{j-1} = x_q$: that is $j = q - d + 1$, right after the earlier copy of $x_q$. Its value at $j$
# holds $x_j = x_{q+1}$, and its OV circuit copies it to the output.
#
# The next cell checks that the layer-1 heads read the previous-token head's output through their
# keys (**K-composition**), two ways. By the weights: Elhage et al.'s composition score
# $\lVert W_{QK}^{(1)} (W_{OV}^{(0)})^{\mathsf T}\rVert_F / (\lVert W_{QK}^{(1)}\rVert_F
# \lVert W_{OV}^{(0)}\rVert_F)$ for each layer-0 head (rows) and layer-1 head (columns), and the Q-
# and V-composition scores likewise (LayerNorm gains folded in, as in their paper), beside the
# score of random matrices of the same shapes. By the effect: recompute layer 1's weights with one
# layer-0 head's output removed from layer 1's *keys only*.

# %%
kcomp = ind.composition_scores(model, "k")
qcomp = ind.composition_scores(model, "q")
vcomp = ind.composition_scores(model, "v")
base = ind.random_composition_baseline(
    model.config.d_model, model.config.d_model // model.config.num_heads
)
print("composition scores, rows: layer-0 head, columns: layer-1 head")
print("K:", show(kcomp, 2), "\nQ:", show(qcomp, 2), "\nV:", show(vcomp, 2))
print("random matrices of the same shapes:", show(base, 2))
off = offsets[int(match[1].mean(0).argmax())]  # where layer 1 looks (measured above)
kp = ind.key_path_induction(model, held, offset=off)
print(f"\nlayer-1 heads' weight on the earlier copy + {off}, with a layer-0 head's output removed "
      "from layer 1's KEYS only:")
for h0 in range(2):
    print(f"  without layer-0 head {h0} in the keys: {show(kp[h0], 2)}")
print(f"  nothing removed:                    {show(kp[2], 2)}")

# %% [markdown]
# K-composition from the previous-token head (layer-0 head 1) into both layer-1 heads is 0.23 and
# 0.24, above the 0.13 of random matrices; from head 0 it is below the random level (0.06). The
# effect agrees: without layer-0 head 1 in its keys, layer 1 no longer finds the token after the
# earlier copy (its weight there drops from 0.58 and 0.57 to 0.02 and 0.01); without head 0 in its
# keys, it finds it at least as well (0.65 and 0.62). So: the core of the textbook two-layer circuit of
# Elhage et al. and Olsson et al., a previous-token head read through the keys of two induction
# heads, working where the previous-token head works (positions up to 17); section 5 shows that
# layer-0 head 0 contributes too.
#
# **The setup decides the circuit.** The first setup tried for this notebook had every segment 16
# tokens long and the GPT-2 initialisation (seed 0, 3000 steps): it differs from the run above in
# four ways (segment length, initialisation, seed, length of training), so the comparison does not
# say which of them made the difference. A model trained on it copies
# as well (copy accuracy 0.87 at the end), but with another circuit. `attnlib` keeps that run's
# final weights, so we can measure it on its own held-out batch:

# %%
model_fixed, run_fixed = ind.load_run("fixed_length")
held_fixed = run_fixed.setup.eval_batch()
with torch.no_grad():
    att_fixed = model_fixed(held_fixed.ids, output_attentions=True).attentions
back_fixed = ind.lookback_profile(att_fixed, 20)  # (layers, H, 21): weight on t - k
match_fixed = ind.match_profile(att_fixed, held_fixed, [1, 16])
print(run_fixed.setup)
for h in range(2):
    k = int(back_fixed[0, h].argmax())
    print(f"layer 0 head {h}: most weight {k} back ({show(back_fixed[0, h, k], 2)}); on the "
          f"previous token {show(back_fixed[0, h, 1], 2)}")
print("layer 1 heads' weight on the earlier copy + 16:", show(match_fixed[1, :, 1], 2),
      "| + 1:", show(match_fixed[1, :, 0], 2))
print("copy accuracy at the end:", show(run_fixed.metrics["copy_acc"][-1], 2))

# %% [markdown]
# With a fixed length, its layer-0 heads look 16 and 15 tokens back, not 1, and its layer-1 heads
# look at the earlier copy + 16 (0.36 and 0.49), not + 1 (0.02). From the key $j = q - d + 16$,
# 16 back is $x_{q-d}$, the earlier copy of the query's token, and 15 back is the token to
# predict. That key is not in the query's future only if the distance $d$ is at least 16; with
# every segment 16 long (and a gap of at least 0 between the occurrences) it always was. A head that looks $k$ back reaches the earlier copy
# only where the distance is at least $k$; with lengths from 2 to 16 the distances go down to 2
# (section 2), so 16 back fails in many sequences, while the previous token works in all of them.
# Both are induction
# algorithms (find the earlier copy, copy what followed it); which heads carry it out depends on
# the setup. (Notebook 10's lesson again: a head is not promised to do the thing it is named for.)

# %% [markdown]
# ### The control: one layer
#
# The same data, the same training, but a single layer of 2 heads (C53).

# %% alt="The in-context score against the training step: the 2-layer model's drops sharply to about -2.9 around step 3300, while the 1-layer model's creeps down only to about -0.4."
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
# The 1-layer model has no drop: its in-context score creeps to -0.44 (presumably it raises the logits of
# tokens it has seen in the context, so the second occurrence becomes a little easier; we do not measure this here) and its copy
# accuracy rises only to 0.1; no head scores above 0.05 as an induction head. One layer cannot do the
# induction step: a head can only look up a position by what is *at* that position, and what it
# must match, the token before, is put there by an earlier layer.

# %% [markdown]
# ## 5. Ablation: remove a head, measure the loss
#
# `head_mask` (as in notebook 10) multiplies each head's output by 0 before $W_O$. We remove each
# head in turn and measure the losses on the held-out batch (C54).

# %%
table = ind.ablation_table(model, held)
both = torch.ones(2, 2)
both[1] = 0.0  # remove both layer-1 heads at once
with torch.no_grad():
    r_both = ind.occurrence_losses(model(held.ids, head_mask=both).logits, held)
table.insert(-1, {"layer": 1, "head": "0+1", **r_both})
print("removed           1st occ. loss  2nd occ. loss  in-context  copy accuracy")
for r in table:
    name = "nothing" if r["layer"] is None else f"layer {r['layer']} head {r['head']}"
    print(
        f"{name:16s}  {show(r['first'], 2):8.2f}      {show(r['second'], 2):8.2f}     "
        f"{show(r['in_context'], 2):+6.2f}      {show(r['copy_acc'], 2):6.2f}"
    )

# %% [markdown]
# Removing the previous-token head (layer-0 head 1) undoes copying: copy accuracy 0.03, in-context
# score -0.04 (the second occurrence is hardly easier than the first). Removing layer-0 head 0,
# which the induction heads do not read through their keys, still costs about half of the copy
# accuracy (0.44, against 0.81) and most of the in-context score (-1.07, against -2.94): its
# V-composition into both layer-1 heads (0.17 and 0.18, section 4) is above the random level, so
# the weights suggest it feeds their values, a part of the circuit the textbook picture leaves
# out. Removing either layer-1 head alone costs some copy accuracy (0.72 and 0.72, against 0.81)
# and about 0.7 nats on the second occurrence (1.99 and 1.91, against 1.25), though each shows the
# induction pattern; only removing both undoes copying (0.01), and then both losses (4.29 and
# 4.31) are above the uniform guess log 64 = 4.159 of section 1: the two layer-1 heads do the
# same job, and either one does most of it (in-context -2.21 and -2.28). A head whose attention looks like the mechanism
# can still matter little on its own, here because another head does the same thing: importance is
# what removing it does (C54), not what its weights look like (notebook 10, C48).

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

# %% alt="FLOPs for the next token against the prefix length: with the KV cache the line stays nearly flat below 100,000, without it the line rises almost straight to 4,596,224 at prefix 46."
rows = decode_cost_table(model, [1, 8, 16, 24, 32, 40, 46])
print("prefix  FLOPs with cache  FLOPs without   cache after the step (numbers)")
for r in rows:
    print(f"{r.prefix:6d}  {r.flops_cached:16,d}  {r.flops_uncached:13,d}   {r.cache_numbers:,d}")
steps_c = {(b.flops_cached - a.flops_cached) // (b.prefix - a.prefix) for a, b in zip(rows, rows[1:])}
print("with the cache, FLOPs added per extra prefix token:", sorted(steps_c))
n_tok = [r.prefix + 1 for r in rows]  # n: the tokens the step's forward pass sees
# what does not depend on n: the projections and the unembedding of one position
a_proj = rows[0].flops_cached - 512 * n_tok[0]
fits = all(
    r.flops_cached == a_proj + 512 * n and r.flops_uncached == a_proj * n + 512 * n * n
    for r, n in zip(rows, n_tok)
)
print(f"every row fits: with the cache {a_proj:,d} + 512·n, without it {a_proj:,d}·n + 512·n² "
      f"(n = p + 1): {fits}")
print(f"without / with the cache: {[r.flops_uncached // r.flops_cached for r in rows]} (= n); "
      f"512·n² overtakes {a_proj:,d}·n only beyond n = {a_proj // 512}")
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
# With the cache the work of a step grows by the same amount per extra prefix token (the new query
# meets one more key): 74,752 FLOPs after 1 token and 97,792 after 46. Without it, each step
# recomputes all positions, and the scores of all positions with all earlier ones: 149,504 FLOPs
# after 1 token, 4,596,224 after 46. Every row fits $73{,}728 + 512\,n$ with the cache and
# $73{,}728\,n + 512\,n^2$ without it ($n = p + 1$ tokens; the 73,728 are the projections and the
# unembedding of one position), so the cache saves a factor of exactly $n$. At this size the
# per-position term dominates: without the cache a step grows almost linearly with $n$, and the
# square (and, summed over a whole text, the cube) of the length takes over only beyond 144
# tokens, three times this model's 48. The cache's size is $2 \cdot \text{layers} \cdot \text{tokens} \cdot
# (\text{K/V heads} \cdot d_{\text{head}})$ numbers (keys and values): after the step that writes
# token 2 it holds 512 numbers, after token 47 12,032. For a real model, computed (not run):

# %%
for r in cache_size_table():
    print(f"{r.name}: query heads per K/V head: {r.group_size}, bytes a number: {r.bytes // r.numbers}")
    print(
        f"{r.name}: {r.num_layers} layers x {r.num_kv_heads} K/V heads x {r.head_dim} -> "
        f"{r.tokens} tokens: {r.numbers:,d} numbers = {r.bytes / 2**30:.2f} GiB"
    )

# %% [markdown]
# Llama-2-7B caches 2.00 GiB for 4096 tokens (2 bytes a number). Llama-3-8B has as many layers
# but only 8 K/V heads, each shared by a group of 4 query heads (**grouped-query
# attention (分组查询注意力)**, GQA), and caches 0.50 GiB: a quarter, the group size. The unit tests
# check that such a model equals a multi-head one with each K/V head repeated over its group, and
# that its cache is smaller by exactly the group size (C50).

# %% [markdown]
# ## 7. The training replayed
#
# The explorer plays the shipped run's snapshots. Pick a checkpoint (the slider), a head (the menu)
# and a query position: the left panel is the head's attention on one held-out sequence; the right
# panel is the loss and the in-context score with a marker at the checkpoint; below, the query's
# row, with two marks above it when the query is in the second occurrence: red where a textbook
# induction head would look (the token after the earlier copy), black where this model's layer-1
# heads look most at the end of training (measured on the held-out batch: the earlier copy + 1, so
# here the black mark covers the red one). Move the checkpoint across the drop (steps 3200 to
# 3500, between the checkpoints at steps 3000, 3300 and 3600) and watch layer 1's stripe appear, and layer-0 head 1's stripe just below the diagonal in
# the first 17 rows.

# %% alt="The induction explorer: a head's attention map on one held-out sequence at a training checkpoint, the loss and in-context curves with a marker at the checkpoint, and the query position's weights as bars with the textbook and the measured induction targets marked."
from attnlib.widgets.explorers.induction import induction_explorer

explorer = induction_explorer()
explorer

# %%
first, last = 0, len(run.snapshots) - 1
for c in (first, last):
    st = explorer.state(checkpoint=c, head=2)
    target = st[f"this model's target: earlier copy + {explorer.data['replay']['found_offset']}"]
    print(
        f"checkpoint {c} (step {st['step']}): {st['head']}, query {st['query position, token']}: "
        f"most attended key {st['most attended key, weight']}, this model's target {target}"
    )

# %% [markdown]
# ## Summary
#
# - A decoder-only model is the decoder block without cross-attention, stacked. It is trained on
#   every next token at once; the causal mask (lecture notes 004 §9.14) makes that honest, and we
#   checked it on the model: the logits before a changed token do not move at all.
# - Trained on random tokens with a repeated segment of 2 to 16 tokens, the 2-layer attention-only
#   model learns slowly for a long stretch, then in 300 steps (3200 to 3500) makes 52 % of the fall of its
#   in-context score, and by the end has learnt to copy the second occurrence from the first (copy accuracy 0.81 at the end, in-context score -2.94). One layer does not.
# - What formed is the core of the textbook induction circuit, measured: a layer-0 previous-token head (0.95 of
#   its weight on the token before, at positions 1 to 17; not beyond), and two layer-1 heads that
#   attend to the token after the earlier copy of the current token (0.58 and 0.57) and copy it.
#   They find it through their keys: K-composition from the previous-token head 0.23 and 0.24
#   against 0.13 for random matrices, and without that head's output in their keys their weight
#   there falls to 0.02 and 0.01. In a run with every segment 16 long (and another initialisation,
#   seed and length of training), a different circuit formed (layer-0 heads 16 and 15 back): the
#   setup decides the circuit.
# - Ablation, not the look of the weights, says what matters: the previous-token head is
#   necessary, the other layer-0 head carries about half of the copy accuracy, and either layer-1 head alone does most
#   of the copying (about three quarters of the in-context score).
# - Decoding with the KV cache gives the same tokens and logits as recomputing; it divides the work
#   of a new token by the number of tokens $n$ (at this size, $73{,}728\,n + 512\,n^2$ FLOPs become
#   $73{,}728 + 512\,n$; the square dominates only beyond 144 tokens), at a memory cost that GQA
#   divides by its group size.
#
# ## Exercises
#
# 1. With every segment 16 long, the layer-0 heads looked 16 and 15 back (section 4). Which fact
#    about that data made "16 back" reach the earlier copy in *every* sequence, and why does it
#    not with lengths from 2 to 16?
# 2. In section 5, removing one layer-1 head costs far less than removing both. Does that mean that head does not copy?
#    What would you measure to tell "does nothing" from "does what the other head already does"?
# 3. With the cache, why does the work per token still grow with the prefix at all?
#
# <details><summary>Answer</summary>
#
# 1. The distance between the occurrences was always at least the length, 16, so from a key $j$
#    16 back is $j - 16 = q - d$ (with $j = q - d + 16 \le q$), the earlier copy of the query's
#    token. With lengths from 2 to 16 the distance can be as short as 2; where it is below 16,
#    the key $q - d + 16$ lies after the query, where the causal mask hides it. One back (the
#    previous token) works in every sequence.
# 2. No: both heads' weights show the pattern (0.58 and 0.57 on the target), both OV circuits copy
#    (0.91 and 0.88), and with one removed the other keeps most of the copying (accuracy 0.72, in-context -2.21 and
#    -2.28), though the second-occurrence loss rises by about 0.7 nats. Removing both
#    undoes it (0.01). Each row of the table that removes one layer-1 head already measures the
#    other one alone (with both layer-0 heads kept, which it needs): it copies on its own (0.72).
#    Removing all the other heads would not do, since removing the previous-token head alone
#    undoes copying (0.03).
# 3. The new query is compared with every cached key and mixes every cached value: per layer,
#    (prefix + 1) · width multiply-adds for the scores and as many for the mix, so each extra prefix
#    token adds 2 · 2 · 64 · 2 = 512 FLOPs here (2 FLOPs a multiply-add, 2 layers), the step
#    printed under the table.
#
# </details>
