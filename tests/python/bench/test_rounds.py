"""The arithmetic of the Keras benchmark's rounds (bench/tensorflow/rounds.py):
a ratio is only ever taken between figures of the same round."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

_path = Path(__file__).resolve().parents[3] / "bench" / "tensorflow" / "rounds.py"
_spec = importlib.util.spec_from_file_location("bench_rounds", _path)
rd = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = rd  # dataclasses look their module up
_spec.loader.exec_module(rd)

A, B, C = ("g1", "a"), ("g2", "b"), ("g2", "c")


def test_a_ratio_is_taken_within_each_round():
    medians = {(*A, 0): 10.0, (*B, 0): 40.0, (*A, 1): 20.0, (*B, 1): 50.0}
    r = rd.Ratio("s", "b over a", (B,), (A,))
    assert rd.per_round(r, medians, 2) == [4.0, 2.5]


def test_a_round_missing_either_side_has_no_ratio_and_is_not_borrowed():
    # g2 failed in round 1: its round-0 figure must not meet round 1's g1.
    medians = {(*A, 0): 10.0, (*B, 0): 40.0, (*A, 1): 20.0, (*A, 2): 5.0, (*B, 2): 5.0}
    r = rd.Ratio("s", "b over a", (B,), (A,))
    vals = rd.per_round(r, medians, 3)
    assert vals == [4.0, None, 1.0]
    s = rd.summarize(vals)
    assert (s.median, s.low, s.high, s.n) == (2.5, 1.0, 4.0, 2)


def test_sums_on_either_side():
    medians = {(*A, 0): 10.0, (*B, 0): 30.0, (*C, 0): 5.0}
    r = rd.Ratio("s", "a+c over b", (A, C), (B,))
    assert rd.per_round(r, medians, 1) == [pytest.approx(0.5)]


def test_a_denominator_can_be_the_largest_of_its_cases():
    medians = {("g", "step", 0): 12.0, ("g", "compute", 0): 10.0, ("g", "comm", 0): 8.0,
               ("g", "step", 1): 12.0, ("g", "compute", 1): 4.0, ("g", "comm", 1): 6.0}
    r = rd.Ratio("s", "step / max", (("g", "step"),), (("g", "compute"), ("g", "comm")), den_max=True)
    assert rd.per_round(r, medians, 2) == [pytest.approx(1.2), pytest.approx(2.0)]


def test_summary_spread_and_verdicts():
    s = rd.summarize([1.0, 1.2, 0.8, None, 1.1])
    assert s.median == pytest.approx(1.05) and s.n == 4
    assert s.spread == pytest.approx(0.2 / 1.05)
    assert rd.verdict((">=", 1.1), s) == "**not met**"
    assert rd.verdict(("<=", 1.1), s) == "met"
    assert rd.verdict(None, s) == ""
    assert rd.verdict((">=", 1.0), None) == "—"
    assert rd.summarize([None, None]) is None


def test_round_medians_drop_warmup_and_other_ranks():
    results = [
        {"group": "g1", "case": "a", "rank": 0, "round": 0, "times_s": [9.0, 0.010, 0.030, 0.020]},
        {"group": "g1", "case": "a", "rank": 1, "round": 0, "times_s": [9.0, 1.0, 1.0, 1.0]},
        {"group": "g1", "case": "a", "rank": 0, "round": 1, "times_s": [9.0]},  # only warm-up
    ]
    assert rd.round_medians(results, warmup=1) == {("g1", "a", 0): pytest.approx(20.0)}


def test_odd_rounds_run_in_reverse():
    assert rd.round_order(["x", "y", "z"], 0) == ["x", "y", "z"]
    assert rd.round_order(["x", "y", "z"], 1) == ["z", "y", "x"]


def test_each_case_takes_every_place_in_turn():
    cases = ["a", "b", "c"]
    firsts = [rd.rotated(cases, k)[0] for k in range(6)]
    assert firsts == ["a", "b", "c", "a", "b", "c"]
    assert sorted(rd.rotated(cases, 4)) == cases
    assert rd.rotated([], 3) == []


def test_table_and_plot_rows():
    medians = {(*A, 0): 10.0, (*B, 0): 40.0, (*A, 1): 20.0, (*B, 1): 50.0}
    r = rd.Ratio("Peer / ours", "b over a", (B,), (A,), (">=", 3.0), "b/a")
    lines, rows = rd.ratio_table([r], medians, 2)
    row = next(line for line in lines if line.startswith("| b over a"))
    assert "3.25x" in row and "2.50 – 4.00" in row and "4.00 | 2.50" in row and ">= 3x: met" in row
    assert rows == [["Peer / ours", "b/a", "b over a", 0, "4.0000", ">= 3x"],
                    ["Peer / ours", "b/a", "b over a", 1, "2.5000", ">= 3x"]]
