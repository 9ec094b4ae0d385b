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

Run:  .venv/bin/python benchmarks/attention_memory.py            (n = 512 ... 8192, minutes)
      .venv/bin/python benchmarks/attention_memory.py --quick    (n = 256 ... 1024, seconds)
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


if __name__ == "__main__":
    main()
