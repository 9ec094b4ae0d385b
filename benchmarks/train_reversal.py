"""Train the tiny encoder-decoder on sequence reversal from scratch, as notebook 08 does (C40).

The settings are `attnlib.course.examples.Seq2SeqConfig()` and `TrainConfig()` (notebook 08's, the
figure's and the tests'): a vocabulary of 13 ids (PAD, BOS, EOS and the letters a-j), source
length 6, d_model 64, 4 heads, d_ff 128, one encoder and one decoder block, Adam, at most
`steps` steps; the held-out exact-sequence accuracy of greedy decoding is checked every
`eval_every` steps and training stops at the target. Seeded with `TrainConfig().seed`, on one CPU
thread. Then the decoder's cross-attention on 512 fresh held-out sequences is measured: the
average weight each output position puts on the source position it must copy (the
anti-diagonal).

With --write-weights the trained model is saved as attnlib/data/reversal.pt (a float32
state_dict and both configs), the file `attnlib.course.examples.trained_reversal_model()` loads.
Re-create it whenever a config changes.

With --min-len 2 every training source has a length drawn from 2..6 instead (notebook 07's
second model, `VARIABLE_LENGTH_TRAIN_CONFIG`); --write-weights then writes
attnlib/data/reversal_lengths_2_6.pt, which `trained_variable_length_reversal_model()` loads.

Run:  .venv/bin/python benchmarks/train_reversal.py [--device cpu|cuda] [--no-progress]
                                                    [--write-weights] [--min-len 2]
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import asdict
from pathlib import Path

import torch

import attnlib
from attnlib.course.decoding import anti_diagonal_mass
from attnlib.course.examples import (
    REVERSAL_WEIGHTS,
    VARIABLE_LENGTH_REVERSAL_WEIGHTS,
    VARIABLE_LENGTH_TRAIN_CONFIG,
    Seq2SeqConfig,
    TrainConfig,
)
from attnlib.models.seq2seq.model import Seq2SeqTransformer, greedy_decode
from attnlib.models.seq2seq.toy_tasks import make_batch
from attnlib.models.seq2seq.training import sequence_accuracy, train_seq2seq
from attnlib.util.device import num_threads

WEIGHTS_PATH = Path(attnlib.__file__).resolve().parent / REVERSAL_WEIGHTS
VARIABLE_LENGTH_WEIGHTS_PATH = (
    Path(attnlib.__file__).resolve().parent / VARIABLE_LENGTH_REVERSAL_WEIGHTS
)


def write_weights(
    model: Seq2SeqTransformer,
    model_config: Seq2SeqConfig,
    train_config: TrainConfig,
    path: Path = WEIGHTS_PATH,
) -> None:
    """Save the float32 state_dict and the configs it was trained with."""
    state = {
        k: v.detach().to("cpu", torch.float32).contiguous() for k, v in model.state_dict().items()
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save(
        {
            "model_config": asdict(model_config),
            "train_config": asdict(train_config),
            "state_dict": state,
        },
        path,
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    parser.add_argument(
        "--write-weights", action="store_true", help=f"save the trained model as {WEIGHTS_PATH}"
    )
    parser.add_argument(
        "--min-len",
        type=int,
        default=None,
        choices=[VARIABLE_LENGTH_TRAIN_CONFIG.min_len],
        help="train on source lengths min-len..6 (notebook 07's second model)",
    )
    args = parser.parse_args()
    device = torch.device(args.device)
    model_config = Seq2SeqConfig()
    train_config = TrainConfig() if args.min_len is None else VARIABLE_LENGTH_TRAIN_CONFIG
    weights_path = WEIGHTS_PATH if args.min_len is None else VARIABLE_LENGTH_WEIGHTS_PATH
    attnlib.set_seed(train_config.seed)
    with num_threads(1):  # a model this small trains fastest on one thread
        model = Seq2SeqTransformer(model_config).to(device)
        history = train_seq2seq(model, train_config, progress=not args.no_progress)
    print(
        f"device={device}, torch {torch.__version__}, parameters="
        f"{sum(p.numel() for p in model.parameters())}"
    )
    print(f"{'step':>6} | {'loss':>7} | {'held-out accuracy':>17}")
    for step, acc in zip(history.eval_steps, history.accuracies, strict=True):
        print(f"{step:>6} | {history.losses[step - 1]:>7.4f} | {acc:>17.4f}")
    test = make_batch(
        train_config.task,
        512,
        train_config.seq_len,
        model_config.vocab_size,
        split="test",
        min_len=train_config.min_len,
        device=device,
    )
    decoded = greedy_decode(model, test.src, test.src_valid_lens)
    accuracy = sequence_accuracy(decoded.tokens, test.tgt_out)
    mass = anti_diagonal_mass(decoded.cross_weights[-1], test.src_valid_lens)
    print(f"fresh held-out accuracy (512 sequences): {accuracy:.4f}")
    target = train_config.target_accuracy
    if not history.reached:
        print(
            f"did NOT reach {target:.0%} exact-sequence accuracy in {history.seconds:.1f} s "
            f"({history.steps} steps); anti-diagonal cross-attention mass: {mass:.3f}"
        )
        return 1
    print(
        f"reached {target:.0%} exact-sequence accuracy in {history.seconds:.1f} s "
        f"({history.steps} steps); anti-diagonal cross-attention mass: {mass:.3f}"
    )
    if args.write_weights:
        write_weights(model, model_config, train_config, weights_path)
        print(f"wrote {weights_path} ({weights_path.stat().st_size / 1024:.0f} KiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
