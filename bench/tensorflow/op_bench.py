"""The TensorFlow op's all-reduce through two builds of the package, side by
side in one run: the gradients of scripts/bench keras's model (8 tensors,
25,185,290 float32, 100.7 MB) summed by 3 ranks on 127.0.0.1 with
`grouped_allreduce(op=Sum)` inside a tf.function, rounds interleaved
(A, B, A, B, ...), each round a fresh group of 3 processes per build.

    python op_bench.py --a LABEL=SITE_DIR --b LABEL=SITE_DIR [--rounds 3] [--iters 10]

SITE_DIR: a directory holding an installed `ringmaster` package (pip
install --target), put first on PYTHONPATH for its group, so both builds
run under the same interpreter and TensorFlow. Prints, per build, the
median step over rounds (each round's rank-0 median) with min-max, and the
ratio of B to A in each round.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

# The launcher of the all-reduce benchmark (one process per rank with a
# deadline, rank 0's JSON lines) and the benchmarks' free ports.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "allreduce"))
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "common" / "ports"))
from free_ports import free_ports  # noqa: E402  (common/ports/free_ports.py)
from run import run_group  # noqa: E402

SHAPES = [(1024, 4096), (4096,), (4096, 4096), (4096,), (4096, 1024), (1024,), (1024, 10), (10,)]


def rank_main(iters: int, warmup: int) -> None:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf

    import ringmaster.tensorflow as hvd
    hvd.init()
    grads = [tf.fill(s, float(hvd.rank() + 1)) for s in SHAPES]
    step = tf.function(lambda gs: hvd.grouped_allreduce(gs, op=hvd.Sum))
    times = []
    for i in range(warmup + iters):
        t0 = time.perf_counter()
        out = step(grads)
        _ = out[-1].numpy()  # the step is done when its last result is
        if i >= warmup:
            times.append(time.perf_counter() - t0)
    assert float(out[0][0, 0]) == 6.0 and float(out[-1][0]) == 6.0, "1 + 2 + 3"
    print(json.dumps({"rank": hvd.rank(), "median": statistics.median(times), "op": hvd.op_library_path(),
                      "library": __import__("ringmaster").library_path()}), flush=True)


def group(site: str, iters: int, warmup: int) -> dict:
    """Rank 0's result of one group of 3 ranks running with `site` first on PYTHONPATH."""
    ports = free_ports(3)
    cluster = {"worker": [f"127.0.0.1:{p}" for p in ports]}
    envs = [dict(os.environ, PYTHONPATH=site, CUDA_VISIBLE_DEVICES="", RINGMASTER_TIMEOUT_SECONDS="120",
                 TF_CONFIG=json.dumps({"cluster": cluster, "task": {"type": "worker", "index": i}}))
            for i in range(3)]
    cmd = [sys.executable, __file__, "--rank", str(iters), str(warmup)]
    return run_group([cmd] * 3, env=envs, timeout=600)[-1]


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "--rank":
        rank_main(int(sys.argv[2]), int(sys.argv[3]))
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--a", required=True)
    ap.add_argument("--b", required=True)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=3)
    args = ap.parse_args()
    builds = [tuple(x.split("=", 1)) for x in (args.a, args.b)]
    got: dict = {label: [] for label, _ in builds}
    loads = []
    for _ in range(args.rounds):
        loads.append(os.getloadavg()[0])
        for label, site in builds:
            r = group(site, args.iters, args.warmup)
            got[label].append(r["median"])
            print(f"op_bench: {label}: {r['median'] * 1e3:.1f} ms (op {r['op']})", file=sys.stderr)
    (a, _), (b, _) = builds
    print(f"3 ranks, 100.7 MB in 8 tensors, {args.rounds} rounds x {args.iters} steps, load "
          f"{min(loads):.1f}-{max(loads):.1f}\n")
    print("| build | step, median of rounds (ms) | min-max |")
    print("| --- | ---: | ---: |")
    for label in (a, b):
        xs = got[label]
        print(f"| {label} | {statistics.median(xs) * 1e3:.1f} | {min(xs) * 1e3:.1f}-{max(xs) * 1e3:.1f} |")
    ratios = [y / x for x, y in zip(got[a], got[b])]
    print(f"\n{b} / {a} per round: {', '.join(f'{r:.2f}' for r in ratios)} (median {statistics.median(ratios):.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
