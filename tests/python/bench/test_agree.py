"""bench/tensorflow/agree.py: how far apart several runs' medians are, and
in how many runs a goal held."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

_path = Path(__file__).resolve().parents[3] / "bench" / "tensorflow" / "agree.py"
_spec = importlib.util.spec_from_file_location("bench_agree", _path)
agree = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = agree
_spec.loader.exec_module(agree)


def row(ratio, median, verdict, section="s", goal=">= 2x"):
    return {"section": section, "ratio": ratio, "median": median, "min": "", "max": "", "goal": goal,
            "verdict": verdict}


def test_spread_is_half_the_range_over_the_mid_range():
    assert agree.spread([0.9, 1.1]) == pytest.approx(0.1)
    assert agree.spread([2.0, 2.0, 2.0]) == 0.0


def test_table_flags_runs_that_disagree_and_counts_goals_met():
    runs = [[row("a", "2.0", "met"), row("b", "1.0", "not met")],
            [row("a", "2.2", "met"), row("b", "1.5", "not met")],
            [row("a", "2.1", "met"), row("b", "", "—")]]
    lines, rows = agree.table(runs, within=0.10)
    a = next(line for line in lines if line.startswith("| a "))
    b = next(line for line in lines if line.startswith("| b "))
    assert "2.00x | 2.20x | 2.10x | 5 % | >= 2x | 3 of 3" in a
    # a run without a figure: no agreement claimed
    assert "1.00x | 1.50x | — | — | >= 2x | 0 of 3" in b
    assert [(r[1], r[2]) for r in rows] == [("a", 1), ("a", 2), ("a", 3), ("b", 1), ("b", 2), ("b", 3)]


def test_a_spread_over_the_bound_is_marked():
    runs = [[row("a", "1.0", "met")], [row("a", "1.5", "met")]]
    lines, _ = agree.table(runs, within=0.10)
    assert "20 % **(> 10 %)**" in next(line for line in lines if line.startswith("| a "))
