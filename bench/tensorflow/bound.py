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
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import rounds as rd  # noqa: E402

_MWMS = (("mwms", "allreduce/mwms"),)
ROWS = [rd.Ratio("bound", "MWMS / the engine out of place", _MWMS, (("rm-tf_keras", "allreduce-engine-out/ringmaster"),)),
        rd.Ratio("bound", "MWMS / the engine in place", _MWMS, (("rm-tf_keras", "allreduce-engine/ringmaster"),)),
        rd.Ratio("bound", "MWMS / the op (rm.all_reduce, tf.function)", _MWMS,
                 (("rm-tf_keras", "allreduce/ringmaster"),))]


def round_medians(results_csv: Path) -> tuple[dict, int]:
    """rounds.py's medians, (group, case, round) -> rank 0's median ms over
    the timed iterations, from results.csv; and the number of rounds."""
    times: dict[tuple[str, str, int], list[float]] = defaultdict(list)
    with open(results_csv, newline="") as f:
        for r in csv.DictReader(f):
            if r["rank"] == "0" and r["warmup"] != "1":
                times[(r["group"], r["case"], int(r["round"]))].append(float(r["time_ms"]))
    rounds = 1 + max((k for _, _, k in times), default=-1)
    return {key: statistics.median(v) for key, v in times.items()}, rounds


def bound(run: Path) -> dict[str, rd.Summary]:
    """Each row's median and min-max over the rounds where both cases ran."""
    medians, rounds = round_medians(run / "results.csv")
    out = {}
    for ratio in ROWS:
        s = rd.summarize(rd.per_round(ratio, medians, rounds))
        if s is not None:
            out[ratio.name] = s
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="+", type=Path)
    args = ap.parse_args()
    print("| run | " + " | ".join(r.name for r in ROWS) + " |")
    print("| --- |" + " ---: |" * len(ROWS))
    for run in args.runs:
        b = bound(run)
        cells = [f"{b[r.name].median:.2f}x ({b[r.name].low:.2f}-{b[r.name].high:.2f})" if r.name in b else "—"
                 for r in ROWS]
        print(f"| {run.name} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
