"""Time and peak extra memory of written-out attention, blockwise attention and SDPA (C41, C42).

For each n: B=1, H=8, Dh=64, float32, on the CPU by default, forward only (no autograd).
Written-out is softmax(QKᵀ/√d)V with the (n, n) score matrix in memory; blockwise is
``attnlib.blockwise_attention`` (online softmax over key blocks); SDPA is
``torch.nn.functional.scaled_dot_product_attention``. Times are wall-clock medians, the three
methods interleaved round by round; "CPU ms" is the process CPU time of the same calls
(with one thread, what the call itself used, however busy the machine). Memory is reported
twice: "tensors MiB" is the exact peak of the tensors the call creates
(``attnlib.course.memory.allocated_bytes``, the same on every machine); "process MiB" is what the
system saw (``benchmarks/_rss.py``: the process's peak resident-set growth on the CPU,
``max_memory_allocated`` on CUDA, which also include kernels' scratch buffers and allocator
noise). Next to them the size of one H·n·n float32 score matrix for comparison.

A second table counts training: the exact peak of the forward *and* backward pass
(``torch.autograd.grad`` of the output against a fixed upstream gradient) with q, k, v requiring
gradients. Blockwise attention's backward recomputes each block from the saved log-sum-exp (and
builds each tile's padding mask from ``valid_lens``, when given, instead of an (n, n) mask), so its
peak stays linear in n; the last column is its growth per doubling of n (linear: below 2, rising
towards 2). The written-out version is skipped above ``--train-max-written`` (its backward holds
several H·n·n matrices: about 6 GiB at n=8192).

Run:  .venv/bin/python benchmarks/attention_memory.py            (n = 512 ... 8192, minutes)
      .venv/bin/python benchmarks/attention_memory.py --quick    (n = 256 ... 1024, seconds)
      .venv/bin/python benchmarks/attention_memory.py --only-training   (the second table only)
The written-out version needs about 4.5 GiB of RAM at n=8192.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

import attnlib
from attnlib.core.blockwise import blockwise_attention
from attnlib.course.costs import median_time, written_out_attention
from attnlib.course.memory import allocated_bytes

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _rss import peak_extra_memory  # a benchmark helper, not part of attnlib

MiB = 2**20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="n = 256, 512, 1024 only")
    parser.add_argument("--device", default="cpu", help="cpu (default) or cuda")
    parser.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch CPU threads (default 1: steadier on a shared machine)",
    )
    parser.add_argument("--repeats", type=int, default=3, help="timed runs per cell (median)")
    parser.add_argument("--block-size", type=int, default=128)
    parser.add_argument(
        "--only-training", action="store_true", help="only the forward+backward memory table"
    )
    parser.add_argument(
        "--train-max-written",
        type=int,
        default=4096,
        help="largest n for the written-out version in the training table (default 4096)",
    )
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    ns = [256, 512, 1024] if args.quick else [512, 1024, 2048, 4096, 8192]
    heads, head_dim = 8, 64
    attnlib.set_seed(0)
    print(
        f"device={device}, threads={torch.get_num_threads()}, B=1, H={heads}, Dh={head_dim}, "
        f"float32, block_size={args.block_size}, median of {args.repeats}, torch "
        f"{torch.__version__}"
    )
    if not args.only_training:
        inference_table(args, device, ns, heads, head_dim)
    training_table(args, device, ns, heads, head_dim)


def inference_table(args, device, ns, heads, head_dim) -> None:
    """Time and memory of the forward pass alone, under ``torch.no_grad()``."""
    print(
        f"{'n':>6} | {'method':<11} | {'median ms':>10} | {'CPU ms':>10} | "
        f"{'tensors MiB':>11} | {'process MiB':>11} | {'H·n² scores MiB':>15}"
    )
    print("-" * 97)
    results = {}
    with torch.no_grad():
        for n in ns:
            q, k, v = [torch.randn(1, heads, n, head_dim, device=device) for _ in range(3)]
            methods = {
                "written-out": lambda: written_out_attention(q, k, v),
                "blockwise": lambda: blockwise_attention(q, k, v, block_size=args.block_size),
                "SDPA": lambda: F.scaled_dot_product_attention(q, k, v),
            }
            reference = F.scaled_dot_product_attention(q, k, v)
            err = (blockwise_attention(q, k, v, block_size=args.block_size) - reference).abs()
            # Memory first (after a warm-up call each), then the timings interleaved: each
            # round times every method once, so a busy moment on a shared machine slows all
            # three alike instead of one of them.
            peaks, exact = {}, {}
            for name, fn in methods.items():
                fn()
                peaks[name] = peak_extra_memory(fn, device=device)
                exact[name] = allocated_bytes(fn)
            times = {name: [] for name in methods}
            cpu = {name: [] for name in methods}
            for _ in range(args.repeats):
                for name, fn in methods.items():
                    start = time.process_time()
                    times[name].append(median_time(fn, repeats=1, warmup=0, device=device))
                    cpu[name].append(time.process_time() - start)
            for name in methods:
                seconds, peak = statistics.median(times[name]), peaks[name]
                cpu_s = statistics.median(cpu[name]) if device.type == "cpu" else float("nan")
                results[n, name] = (seconds, exact[name], cpu_s)
                print(
                    f"{n:>6} | {name:<11} | {seconds * 1e3:>10.1f} | {cpu_s * 1e3:>10.1f} | "
                    f"{exact[name] / MiB:>11.1f} | {peak / MiB:>11.1f} | "
                    f"{heads * n * n * 4 / MiB:>15.1f}"
                )
            print(f"{'':>6} | max |blockwise - SDPA| = {float(err.max()):.2e}")
            q = k = v = reference = err = None  # free them before the next n
    n = ns[-1]
    mem_ratio = results[n, "blockwise"][1] / results[n, "written-out"][1]
    time_ratio = results[n, "blockwise"][0] / results[n, "SDPA"][0]
    cpu_ratio = results[n, "blockwise"][2] / results[n, "SDPA"][2]
    print(
        f"CPU-time ratio (blockwise/SDPA, n={n}): {cpu_ratio:.2f} (steadier than wall time "
        f"when other processes share the cores)"
    )
    print(
        f"exact memory ratio (blockwise/written-out, n={n}): {mem_ratio:.3f}; "
        f"time ratio (blockwise/SDPA, n={n}): {time_ratio:.2f}"
    )


def training_table(args, device, ns, heads, head_dim) -> None:
    """Exact peak tensor bytes of forward + backward with q, k, v requiring gradients."""
    print()
    print("training: exact peak tensor MiB of forward + backward (q, k, v require grad)")
    print(
        f"{'n':>6} | {'written-out':>11} | {'blockwise':>9} | {'SDPA':>7} | "
        f"{'blockwise x per doubling':>24}"
    )
    print("-" * 71)
    previous = None
    for n in ns:
        q, k, v = [
            torch.randn(1, heads, n, head_dim, device=device, requires_grad=True) for _ in range(3)
        ]
        grad_out = torch.randn(1, heads, n, head_dim, device=device)

        def train(attention):
            return lambda: torch.autograd.grad(attention(q, k, v), (q, k, v), grad_out)

        methods = {
            "blockwise": train(
                lambda a, b, c: blockwise_attention(a, b, c, block_size=args.block_size)
            ),
            "SDPA": train(F.scaled_dot_product_attention),
        }
        if n <= args.train_max_written:
            methods["written-out"] = train(written_out_attention)
        peak = {name: allocated_bytes(fn) for name, fn in methods.items()}
        written = f"{peak['written-out'] / MiB:11.1f}" if "written-out" in peak else f"{'-':>11}"
        growth = f"{peak['blockwise'] / previous:24.2f}" if previous else f"{'':>24}"
        print(
            f"{n:>6} | {written} | {peak['blockwise'] / MiB:9.1f} | {peak['SDPA'] / MiB:7.1f} | "
            f"{growth}".rstrip()
        )
        previous = peak["blockwise"]
        q = k = v = grad_out = None  # free them before the next n


if __name__ == "__main__":
    main()
