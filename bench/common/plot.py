#!/usr/bin/env python3
"""One PNG from one CSV: the plots of docs/benchmarks/*.md whose bench does
not draw its own.

    python3 bench/common/plot.py CSV --x COLUMN --y COLUMN[,COLUMN...] --out PNG
        [--group COLUMN[,COLUMN...]] [--facet COLUMN] [--where COLUMN=VALUE ...]
        [--logx [BASE]] [--logy] [--hline Y] [--labels] [--highlight PREFIX]
        [--series-label FORMAT] [--title TEXT] [--xlabel TEXT] [--ylabel TEXT]

A series is one value of --group (its columns joined by "/", or named by
--series-label, a format of the row's columns: "run {run}"), or one --y
column when several are given (or both: "group / column"). If every x value
is a number the series are lines against x (sorted); otherwise they are
grouped bars, the x values in the order they first appear. --facet draws one
panel per value of that column, three to a row. --where keeps the rows whose
column equals the value (repeatable). Empty y cells (and, with --logy,
values <= 0) are skipped. Needs matplotlib (Agg backend: no display).

From Python: plot_csv(csv_path, x, y, out, group=None, facet=None, ...).
"""
from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path


def _number(text):
    try:
        return float(text)
    except (TypeError, ValueError):
        return None


def _columns(value):
    if value is None:
        return []
    if isinstance(value, str):
        return [c for c in value.split(",") if c]
    return list(value)


def plot_csv(csv_path, x, y, out, group=None, facet=None, where=None, logx=None, logy=False,
             hline=None, labels=False, highlight=None, title=None, xlabel=None, ylabel=None,
             series_label=None):
    """Draws CSV's column(s) y against column x into the PNG out; returns out."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ys, groups = _columns(y), _columns(group)
    with open(csv_path, newline="") as f:
        rows = list(csv.DictReader(f))
    for cond in where or []:
        col, _, want = cond.partition("=")
        rows = [r for r in rows if r.get(col) == want]
    if not rows:
        raise SystemExit(f"plot: no rows in {csv_path} (after --where {where})")
    for col in [x, *ys, *groups] + ([facet] if facet else []):
        if col not in rows[0]:
            raise SystemExit(f"plot: no column {col!r} in {csv_path} (columns: {', '.join(rows[0])})")

    numeric_x = all(_number(r[x]) is not None for r in rows)
    panels = list(dict.fromkeys(r[facet] for r in rows)) if facet else [None]
    cols = min(3, len(panels))
    nrows = (len(panels) + cols - 1) // cols
    fig, grid = plt.subplots(nrows, cols, figsize=(6.5 * cols, 4.8 * nrows), squeeze=False)
    axes = [ax for line in grid for ax in line]
    for ax in axes[len(panels):]:
        ax.axis("off")

    def series_of(r, col):
        name = series_label.format(**r) if series_label else "/".join(r[g] for g in groups)
        if len(ys) > 1:
            name = f"{name} / {col}" if name else col
        return name or col

    for ax, panel in zip(axes, panels):
        sel = [r for r in rows if facet is None or r[facet] == panel]
        series = {}
        for r in sel:
            for col in ys:
                v = _number(r[col])
                if v is None or (logy and v <= 0):
                    continue
                series.setdefault(series_of(r, col), []).append((r[x], v))
        if numeric_x:
            colours = plt.get_cmap("tab20").colors if len(series) > 10 else [None] * len(series)
            for (name, pts), colour in zip(series.items(), colours):
                pts = sorted((float(a), b) for a, b in pts)
                bold = highlight and name.startswith(highlight)
                ax.plot([a for a, _ in pts], [b for _, b in pts], marker="o", markersize=3, label=name,
                        linewidth=2.5 if bold else 1.2, color=colour)
            if logx:
                ax.set_xscale("log", base=logx)
        else:
            cats = list(dict.fromkeys(r[x] for r in sel))
            width = 0.8 / max(1, len(series))
            for i, (name, pts) in enumerate(series.items()):
                at = {a: b for a, b in pts}
                xs = [j + (i - (len(series) - 1) / 2) * width for j, c in enumerate(cats) if c in at]
                vs = [at[c] for c in cats if c in at]
                bars = ax.bar(xs, vs, width, label=name)
                if labels:
                    ax.bar_label(bars, labels=[f"{v:g}" for v in vs], fontsize=7, padding=2)
            ax.set_xticks(range(len(cats)))
            ax.set_xticklabels(cats, rotation=20 if max(len(c) for c in cats) > 12 else 0, ha="right"
                               if max(len(c) for c in cats) > 12 else "center", fontsize=8)
        if logy:
            ax.set_yscale("log")
        if hline is not None:
            ax.axhline(hline, color="black", linewidth=0.8, linestyle="--")
        ax.set_xlabel(x if xlabel is None else xlabel)
        ax.set_ylabel(ylabel if ylabel is not None else (ys[0] if len(ys) == 1 else ""))
        ax.set_title(f"{facet} = {panel}" if facet else (title or ""), fontsize=10)
        ax.grid(True, which="both" if numeric_x else "major", axis="both" if numeric_x else "y", alpha=0.3)
        if len(series) > 1 or groups:
            ax.legend(fontsize=7)
    if facet and title:
        fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("csv", type=Path)
    p.add_argument("--x", required=True, help="the x column")
    p.add_argument("--y", required=True, help="the y column, or several separated by commas")
    p.add_argument("--out", type=Path, required=True, help="the PNG to write")
    p.add_argument("--group", help="column(s) whose values name the series, separated by commas")
    p.add_argument("--facet", help="one panel per value of this column")
    p.add_argument("--where", action="append", default=[], metavar="COLUMN=VALUE", help="keep only these rows")
    p.add_argument("--logx", type=float, nargs="?", const=10, help="log x axis (numeric x), base 10 or BASE")
    p.add_argument("--logy", action="store_true", help="log y axis")
    p.add_argument("--hline", type=float, help="a dashed line at this y (e.g. 1 for ratios)")
    p.add_argument("--labels", action="store_true", help="write each bar's value on it")
    p.add_argument("--highlight", help="draw the series whose name starts with this thicker")
    p.add_argument("--series-label", help="a series' name from its row, e.g. 'run {run}' (default: the group's values)")
    p.add_argument("--title")
    p.add_argument("--xlabel")
    p.add_argument("--ylabel")
    a = p.parse_args(argv)
    out = plot_csv(a.csv, a.x, a.y, a.out, group=a.group, facet=a.facet, where=a.where, logx=a.logx,
                   logy=a.logy, hline=a.hline, labels=a.labels, highlight=a.highlight, title=a.title,
                   xlabel=a.xlabel, ylabel=a.ylabel, series_label=a.series_label)
    print(f"plot: wrote {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
