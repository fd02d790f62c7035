"""bench/tensorflow/bound.py: MWMS's all-reduce over the engine's, per round,
from a run's results.csv (rank 0, warm-up dropped)."""
from __future__ import annotations

import csv
import importlib.util
import sys
from pathlib import Path

import pytest

_path = Path(__file__).resolve().parents[3] / "bench" / "tensorflow" / "bound.py"
_spec = importlib.util.spec_from_file_location("bench_bound", _path)
bound = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = bound
_spec.loader.exec_module(bound)

FIELDS = ["group", "case", "rank", "size", "round", "iteration", "warmup", "time_ms"]


def write(tmp_path: Path, rows: list[tuple]) -> Path:
    with open(tmp_path / "results.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(FIELDS)
        for case, rank, rnd, warmup, ms in rows:
            group = "mwms" if case.endswith("/mwms") else "rm-tf_keras"
            w.writerow([group, case, rank, 3, rnd, 0, warmup, ms])
    return tmp_path


def test_ratio_per_round_of_rank_0_timed_medians(tmp_path):
    mwms, out, inp = "allreduce/mwms", "allreduce-engine-out/ringmaster", "allreduce-engine/ringmaster"
    rows = []
    for rnd, (m, o) in enumerate([(500, 100), (480, 120), (600, 100)]):
        rows += [(mwms, 0, rnd, 0, m), (mwms, 0, rnd, 0, m + 2), (mwms, 0, rnd, 0, m - 2),
                 (out, 0, rnd, 0, o), (out, 0, rnd, 1, 1.0),  # a warm-up call, dropped
                 (out, 1, rnd, 0, 1.0)]  # another rank's, not read
    rows += [(inp, 0, 0, 0, 50.0)]  # in place ran in one round only
    got = bound.bound(write(tmp_path, rows))
    out_of_place, in_place = got["MWMS / the engine out of place"], got["MWMS / the engine in place"]
    assert (out_of_place.median, out_of_place.low, out_of_place.high, out_of_place.n) == pytest.approx((5.0, 4.0, 6.0, 3))
    assert (in_place.median, in_place.low, in_place.high, in_place.n) == pytest.approx((10.0, 10.0, 10.0, 1))
    assert "MWMS / the op (rm.all_reduce, tf.function)" not in got  # never ran: no row, not a zero
