"""Train the tiny encoder-decoder on sequence reversal from scratch, as notebook 08 does (C40).

Seed 0 and the settings of notebook 08's training cell: vocabulary of 13 ids (PAD, BOS, EOS
and the letters a-j), source length 6, d_model 64, 4 heads, d_ff 128, one encoder and one
decoder block, Adam (lr 3e-3), batches of 128, at most 1500 steps; the held-out
exact-sequence accuracy of greedy decoding is checked every 50 steps and training stops at
99%. Then the decoder's cross-attention on 512 fresh held-out sequences is measured: the
average weight each output position puts on the source position it must copy (the
anti-diagonal).

Run:  .venv/bin/python benchmarks/train_reversal.py [--device cpu|cuda] [--no-progress]
"""

from __future__ import annotations

import argparse
import sys

import torch

import attnlib
from attnlib.seq2seq import (Seq2SeqTransformer, anti_diagonal_mass, cross_attention_maps,
                             make_batch, sequence_accuracy, train_seq2seq)

VOCAB_SIZE, SEQ_LEN, TARGET = 13, 6, 0.99  # as in notebook 08


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    args = parser.parse_args()
    device = torch.device(args.device)
    attnlib.set_seed(0)
    model = Seq2SeqTransformer(VOCAB_SIZE, d_model=64, num_heads=4, d_ff=128).to(device)
    history = train_seq2seq(model, task="reverse", seq_len=SEQ_LEN, steps=1500, batch_size=128,
                            lr=3e-3, target_accuracy=TARGET, progress=not args.no_progress)
    print(f"device={device}, torch {torch.__version__}, parameters="
          f"{sum(p.numel() for p in model.parameters())}")
    print(f"{'step':>6} | {'loss':>7} | {'held-out accuracy':>17}")
    for step, acc in zip(history.eval_steps, history.accuracies):
        print(f"{step:>6} | {history.losses[step - 1]:>7.4f} | {acc:>17.4f}")
    test = make_batch("reverse", 512, SEQ_LEN, VOCAB_SIZE, split="test", device=device)
    tokens, maps = cross_attention_maps(model, test.src, test.src_valid_lens)
    accuracy = sequence_accuracy(tokens, test.tgt_out)
    mass = anti_diagonal_mass(maps[-1], test.src_valid_lens)
    print(f"fresh held-out accuracy (512 sequences): {accuracy:.4f}")
    if not history.reached:
        print(f"did NOT reach {TARGET:.0%} exact-sequence accuracy in {history.seconds:.1f} s "
              f"({history.steps} steps); anti-diagonal cross-attention mass: {mass:.3f}")
        return 1
    print(f"reached {TARGET:.0%} exact-sequence accuracy in {history.seconds:.1f} s "
          f"({history.steps} steps); anti-diagonal cross-attention mass: {mass:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
