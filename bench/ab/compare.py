#!/usr/bin/env python3
"""Two builds of `ringmaster` side by side in one run: did a change cost
anything? For each group size N and message size, the two binaries run
`ringmaster bench -n N -b S -e S -a auto --json` in turn (A, B, A, B, ...),
so drifts of a noisy machine fall on both; the table gives each one's
median over the rounds and B / A.

  bench/ab/compare.py --a OLD/bin/ringmaster --b NEW/bin/ringmaster \
      [--ranks 2 4] [--sizes 4 64M] [--rounds 5] [--batches 5] [--pin 0]

Latency rows (small sizes) compare the per-call time; bandwidth rows the bus
bandwidth (busbw = bytes / time * 2(N-1)/N), both from the median per-call
time that `ringmaster bench` reports for its timed batches.
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys


def parse_size(text: str) -> int:
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(float(text[:-1]) * units[text[-1].upper()]) if text[-1].upper() in units else int(text)


def one_run(binary: str, ranks: int, size: int, batches: int, pin: str) -> float:
    """The median per-call time in microseconds of one `ringmaster bench`."""
    cmd = (["taskset", "-c", pin] if pin else []) + [binary, "bench", "-n", str(ranks), "-b", str(size), "-e", str(size), "-a", "auto", "--json",
           "--batches", str(batches)]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        sys.exit(f"compare: {' '.join(cmd)} failed ({p.returncode}): {p.stderr[-2000:]}")
    rows = [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]
    if len(rows) != 1 or not rows[0].get("correct"):
        sys.exit(f"compare: {' '.join(cmd)}: expected one correct result, got {p.stdout[-2000:]}")
    return float(rows[0]["median_us"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--a", required=True, help="the reference build's ringmaster (before)")
    ap.add_argument("--b", required=True, help="the build under test's ringmaster (after)")
    ap.add_argument("--ranks", type=int, nargs="+", default=[2, 4])
    ap.add_argument("--sizes", nargs="+", default=["4", "64M"])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--batches", type=int, default=5)
    ap.add_argument("--pin", default="", help="CPUs for taskset -c (e.g. 0): steadier on a shared machine")
    a = ap.parse_args()
    print("| N | bytes | metric | A (before) | B (after) | B / A | A's spread | B's spread |")
    print("|---|---|---|---|---|---|---|---|")
    for n in a.ranks:
        for text in a.sizes:
            size = parse_size(text)
            times = {"a": [], "b": []}
            for _ in range(a.rounds):
                for key in ("a", "b"):
                    times[key].append(one_run(getattr(a, key), n, size, a.batches, a.pin))
            med = {k: statistics.median(v) for k, v in times.items()}
            spread = {k: (max(v) - min(v)) / statistics.median(v) for k, v in times.items()}
            if size <= 64 << 10:
                metric, va, vb, ratio = "µs per call", med["a"], med["b"], med["b"] / med["a"]
                fa, fb = f"{va:.1f}", f"{vb:.1f}"
            else:
                bus = lambda t: size / (t * 1e-6) * 2 * (n - 1) / n / 1e9  # noqa: E731
                metric, va, vb = "busbw GB/s", bus(med["a"]), bus(med["b"])
                ratio, fa, fb = vb / va, f"{va:.3f}", f"{vb:.3f}"
            print(f"| {n} | {text} | {metric} | {fa} | {fb} | {ratio:.3f} | {spread['a']:.0%} | {spread['b']:.0%} |",
                  flush=True)


if __name__ == "__main__":
    main()
