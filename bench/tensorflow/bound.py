#!/usr/bin/env python3
"""What bounds the op's all-reduce against MWMS in a run of scripts/bench
keras: MWMS's all-reduce over the engine alone (out of place, the op's work
on captured tensors; and in place), and over the op, each a per-round ratio
of rank 0's median times (the run's results.csv), given as the median over
the rounds with its min-max. If the engine itself is under 5x MWMS in the
same rounds, no op over it can be 5x.

    bench/tensorflow/bound.py RUN_DIR [RUN_DIR ...]
"""
from __future__ import annotations

import argparse
import csv
import statistics
from collections import defaultdict
from pathlib import Path

ROWS = [("MWMS / the engine out of place", "allreduce/mwms", "allreduce-engine-out/ringmaster"),
        ("MWMS / the engine in place", "allreduce/mwms", "allreduce-engine/ringmaster"),
        ("MWMS / the op (rm.all_reduce, tf.function)", "allreduce/mwms", "allreduce/ringmaster")]


def round_medians(results_csv: Path) -> dict[tuple[str, int], float]:
    """(case, round) -> rank 0's median time over the timed iterations."""
    times: dict[tuple[str, int], list[float]] = defaultdict(list)
    with open(results_csv, newline="") as f:
        for r in csv.DictReader(f):
            if r["rank"] == "0" and r["warmup"] != "1":
                times[(r["case"], int(r["round"]))].append(float(r["time_ms"]))
    return {k: statistics.median(v) for k, v in times.items()}


def bound(run: Path) -> dict[str, tuple[float, float, float]]:
    """Each row's (median, min, max) over the rounds where both cases ran."""
    med = round_medians(run / "results.csv")
    rounds = sorted({k for _, k in med})
    out = {}
    for name, num, den in ROWS:
        rs = [med[(num, k)] / med[(den, k)] for k in rounds if (num, k) in med and (den, k) in med]
        if rs:
            out[name] = (statistics.median(rs), min(rs), max(rs))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="+", type=Path)
    args = ap.parse_args()
    print("| run | " + " | ".join(name for name, _, _ in ROWS) + " |")
    print("| --- |" + " ---: |" * len(ROWS))
    for run in args.runs:
        b = bound(run)
        cells = [f"{b[n][0]:.2f}x ({b[n][1]:.2f}-{b[n][2]:.2f})" if n in b else "—" for n, _, _ in ROWS]
        print(f"| {run.name} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
