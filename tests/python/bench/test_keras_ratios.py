"""The Keras benchmark's figures (bench/tensorflow/keras_ratios.py): every
ratio names cases its groups run, and the shaped-link bench runs every case
its ratios need."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench" / "tensorflow"))
import keras_ratios  # noqa: E402
from keras_groups import GROUPS  # noqa: E402


@pytest.mark.parametrize("shaped", [False, True])
@pytest.mark.parametrize("horovod", [False, True])
def test_every_ratio_names_a_case_its_group_runs(horovod, shaped):
    figures = keras_ratios.ratios(horovod=horovod, shaped=shaped)
    assert figures
    for ratio in figures:
        for group, case in ratio.keys:
            assert case in GROUPS[group][2], (ratio.name, group, case)


def test_the_shaped_bench_runs_every_case_its_ratios_need():
    cases = set(keras_ratios.SHAPED_CASES.split(","))
    needed = {case for r in keras_ratios.ratios(horovod=True, shaped=True) for _, case in r.keys}
    assert needed <= cases, needed - cases
    bound = [r for r in keras_ratios.ratios(horovod=True, shaped=True) if r.den_max]
    assert {r.short for r in bound} == {"ringmaster", "mwms", "horovod"}
    # Each system's step against its own compute floor and its own all-reduce.
    assert all(len(r.den) == 2 for r in bound)
