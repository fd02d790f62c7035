"""Ratios measured in rounds: the pure arithmetic of bench_keras.py's report.

A benchmark that runs each group once, one after the other, compares groups
that ran minutes apart while the machine's load drifted. In rounds, every
group runs a few iterations, then the next group, and the whole sequence
repeats; a ratio is taken per round, between groups that ran back to back,
and the report gives its median over the rounds with the spread (min-max).

Everything here works on plain numbers: `medians` maps (group, case, round)
to rank 0's median time in ms for that round. No TensorFlow, no processes.
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Optional, Sequence

Key = tuple[str, str]  # (group, case)


@dataclass(frozen=True)
class Ratio:
    """One figure of the report: sum(num) / sum(den), per round.

    The numerator and denominator are sums so that a cost can be compared to
    two references at once (DistributedGradientTape against the engine plus
    the tape alone). `den_max`: the denominator is the largest of its cases
    instead (a step against max(compute alone, communication alone): the
    step that overlaps the two perfectly). `goal` is ('>=', x) or ('<=', x)
    on the median, or None for a figure that is reported but not judged."""
    section: str
    name: str
    num: tuple[Key, ...]
    den: tuple[Key, ...]
    goal: Optional[tuple[str, float]] = None
    short: str = ""
    den_max: bool = False
    keys: tuple[Key, ...] = field(init=False)

    def __post_init__(self):
        object.__setattr__(self, "keys", self.num + self.den)


def per_round(ratio: Ratio, medians: dict, rounds: int) -> list[Optional[float]]:
    """The ratio in each round, None where any of its cases has no figure in
    that round (a group failed, a case was left out): never a numerator of
    one round over a denominator of another."""
    out: list[Optional[float]] = []
    for k in range(rounds):
        parts = [medians.get((g, c, k)) for g, c in ratio.keys]
        if any(p is None for p in parts):
            out.append(None)
            continue
        num = sum(parts[:len(ratio.num)])
        den = (max if ratio.den_max else sum)(parts[len(ratio.num):])
        out.append(num / den if den > 0 else None)
    return out


@dataclass(frozen=True)
class Summary:
    median: float
    low: float
    high: float
    n: int

    @property
    def spread(self) -> float:
        """Half the min-max range over the median: the +-fraction the
        rounds agree within."""
        return (self.high - self.low) / 2 / self.median if self.median else float("nan")


def summarize(values: Sequence[Optional[float]]) -> Optional[Summary]:
    xs = [v for v in values if v is not None]
    if not xs:
        return None
    return Summary(statistics.median(xs), min(xs), max(xs), len(xs))


def verdict(goal: Optional[tuple[str, float]], s: Optional[Summary]) -> str:
    """'met' / 'not met' on the median over rounds; '' without a goal, '—'
    without figures."""
    if goal is None:
        return ""
    if s is None:
        return "—"
    op, x = goal
    ok = s.median >= x if op == ">=" else s.median <= x
    return "met" if ok else "**not met**"


def goal_text(goal: Optional[tuple[str, float]]) -> str:
    return "" if goal is None else f"{goal[0]} {goal[1]:g}x"


def round_medians(results: list[dict], warmup: int, rank: int = 0) -> dict:
    """(group, case, round) -> rank `rank`'s median per-iteration ms of that
    round, warm-up iterations dropped. `results` are the ranks' records:
    {"group", "case", "rank", "round", "times_s"}."""
    out = {}
    for r in results:
        if r["rank"] != rank:
            continue
        times = r["times_s"][warmup:]
        if times:
            out[(r["group"], r["case"], r["round"])] = statistics.median(times) * 1e3
    return out


def ratio_table(ratios: Sequence[Ratio], medians: dict, rounds: int) -> tuple[list[str], list[list]]:
    """Markdown lines (one table per section) and CSV rows (section, short,
    name, round, value, goal) for the plot."""
    lines: list[str] = []
    rows: list[list] = []
    section = None
    head = " | ".join(f"r{k}" for k in range(rounds))
    for ratio in ratios:
        if ratio.section != section:
            section = ratio.section
            lines += ["", f"**{section}**", "",
                      f"| ratio | median | min – max | ± | {head} | goal |",
                      "| --- | ---: | ---: | ---: | " + " | ".join("---:" for _ in range(rounds)) + " | --- |"]
        vals = per_round(ratio, medians, rounds)
        s = summarize(vals)
        cells = " | ".join("—" if v is None else f"{v:.2f}" for v in vals)
        if s is None:
            lines.append(f"| {ratio.name} | — | — | — | {cells} | {goal_text(ratio.goal)} |")
        else:
            g = goal_text(ratio.goal)
            lines.append(f"| {ratio.name} | {s.median:.2f}x | {s.low:.2f} – {s.high:.2f} | {s.spread * 100:.0f} % | "
                         f"{cells} | {g + ': ' + verdict(ratio.goal, s) if g else ''} |")
        for k, v in enumerate(vals):
            rows.append([ratio.section, ratio.short or ratio.name, ratio.name, k, "" if v is None else f"{v:.4f}",
                         goal_text(ratio.goal)])
    return lines, rows


def case_table(keys: Sequence[tuple[str, Key]], medians: dict, rounds: int) -> list[str]:
    """Markdown: each case's per-round median ms, and the median over rounds."""
    head = " | ".join(f"r{k}" for k in range(rounds))
    lines = [f"| case | group | median over rounds (ms) | {head} |",
             "| --- | --- | ---: | " + " | ".join("---:" for _ in range(rounds)) + " |"]
    for label, (g, c) in keys:
        vals = [medians.get((g, c, k)) for k in range(rounds)]
        s = summarize(vals)
        cells = " | ".join("—" if v is None else f"{v:.1f}" for v in vals)
        lines.append(f"| {label} | {g} | {'—' if s is None else f'{s.median:.1f}'} | {cells} |")
    return lines


def round_order(groups: Sequence[str], k: int) -> list[str]:
    """Round k's order of the groups: as given in even rounds, reversed in
    odd ones, so that a drift within a round falls on both sides of a ratio
    in turn."""
    return list(groups) if k % 2 == 0 else list(reversed(groups))


def rotated(cases: Sequence[str], k: int) -> list[str]:
    """Round k's order of a group's cases: rotated by k. A case's time
    depends on where it runs in its process's life (in one run here the same
    op, in the same graph, took 125 ms as its group's first case and 146 ms
    as its fourth), so no case keeps one place."""
    if not cases:
        return []
    k %= len(cases)
    return list(cases[k:]) + list(cases[:k])
