#!/usr/bin/env python3
"""Do several runs of the Keras benchmark agree? Reads each run's
summary.csv (bench_keras.py: every ratio's median over its rounds) and
writes one table: each ratio's median per run, how far apart the runs are,
and its goal judged in every run.

    bench/tensorflow/agree.py RUN_DIR [RUN_DIR ...] [--within 0.10] [--out FILE.md] [--csv FILE.csv]

± is half the range of the runs' medians over their mid-range,
(max - min) / (max + min): 0.10 means every run is within 10 % of the
middle of the runs. Exit status 0 whether or not they agree; the table says.
"""
from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path


def read_summary(path: Path) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def spread(values: list[float]) -> float:
    """(max - min) / (max + min) of positive values: the ± around the
    mid-range that covers them all."""
    hi, lo = max(values), min(values)
    return (hi - lo) / (hi + lo) if hi + lo > 0 else float("nan")


def table(runs: list[list[dict]], within: float) -> tuple[list[str], list[list]]:
    """Markdown lines and CSV rows (section, ratio, run, median, min, max, goal, verdict)."""
    n = len(runs)
    order = [(r["section"], r["ratio"]) for r in runs[0]]
    by_run = [{(r["section"], r["ratio"]): r for r in run} for run in runs]
    head = " | ".join(f"run {i + 1}" for i in range(n))
    lines: list[str] = []
    rows: list[list] = []
    section = None
    for key in order:
        if key[0] != section:
            section = key[0]
            lines += ["", f"**{section}**", "", f"| ratio | {head} | ± (runs) | goal | met in |",
                      "| --- | " + " | ".join("---:" for _ in range(n)) + " | ---: | --- | --- |"]
        got = [b.get(key) for b in by_run]
        medians = [float(g["median"]) if g and g["median"] else None for g in got]
        goal = next((g["goal"] for g in got if g and g["goal"]), "")
        met = sum(1 for g in got if g and g["verdict"] == "met")
        cells = " | ".join("—" if m is None else f"{m:.2f}x" for m in medians)
        known = [m for m in medians if m is not None]
        sp = spread(known) if len(known) == n else None
        agree = "—" if sp is None else f"{sp * 100:.0f} %" + ("" if sp <= within else " **(> " + f"{within * 100:.0f} %)**")
        lines.append(f"| {key[1]} | {cells} | {agree} | {goal} | {f'{met} of {n}' if goal else ''} |")
        for i, g in enumerate(got):
            if g:
                rows.append([key[0], key[1], i + 1, g["median"], g["min"], g["max"], goal, g["verdict"]])
    return lines, rows


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("runs", nargs="+", type=Path, help="directories holding a summary.csv each")
    p.add_argument("--within", type=float, default=0.10)
    p.add_argument("--out", type=Path)
    p.add_argument("--csv", type=Path)
    args = p.parse_args()
    runs = []
    for d in args.runs:
        f = d / "summary.csv"
        if not f.exists():
            sys.exit(f"agree: {f} does not exist")
        runs.append(read_summary(f))
    lines, rows = table(runs, args.within)
    text = "\n".join(lines).lstrip("\n") + "\n"
    if args.out:
        args.out.write_text(text)
    if args.csv:
        with open(args.csv, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["section", "ratio", "run", "median", "min", "max", "goal", "verdict"])
            w.writerows(rows)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
