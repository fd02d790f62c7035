"""Gradient buckets (ringmaster.tensorflow._buckets): the rule against
TensorFlow's own group_by_size, the size's precedence, and, in groups of 3
real processes (bucket_worker.py), that a bucket is reduced while backprop
still runs and that a variable's update waits only for its own bucket, in
DistributedGradientTape, both DistributedOptimizers and our
MultiWorkerMirroredStrategy."""
from __future__ import annotations

import random
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from group import base_env, run_group

WORKER = Path(__file__).resolve().parent / "bucket_worker.py"


def test_buckets_follow_tensorflows_group_by_size_on_the_reversed_gradients(op_library):
    import tensorflow as tf
    from tensorflow.python.distribute import cross_device_utils
    from ringmaster.tensorflow import _buckets
    rng = random.Random(7)
    for trial in range(200):
        n = rng.randint(1, 12)
        elements = [rng.choice([1, 3, 16, 100, 1000, 4096]) for _ in range(n)]
        dtypes = [rng.choice([tf.float32, tf.float16, tf.float64]) for _ in range(n)]
        limit = rng.choice([1, 64, 1000, 8192, 1 << 20])
        values = [tf.zeros([e], dtype=d) for e, d in zip(elements, dtypes)]
        ours = _buckets.plan(list(range(n)), [_buckets.nbytes(v) for v in values], limit)
        # TensorFlow packs the reversed list (cross_device_ops: "values follow
        # the order in which they are calculated").
        theirs = cross_device_utils.group_by_size(list(reversed(values)), limit)
        assert [len(b) for b in ours] == [len(p) for p in theirs], (trial, elements, limit)
        assert [i for b in ours for i in b] == list(reversed(range(n)))


def test_a_gradient_of_unknown_size_joins_the_current_bucket(op_library):
    from ringmaster.tensorflow import _buckets
    assert _buckets.plan([0, 1, 2, 3], [4, None, 100, 4], 8) == [[3, 2], [1, 0]]
    assert _buckets.plan([], [], 8) == []
    with pytest.raises(ValueError, match="bucket size"):
        _buckets.plan([0], [4], 0)


def test_the_bucket_size_is_the_calls_then_the_jobs_then_sixteen_mib(op_library, tmp_path):
    script = textwrap.dedent('''
        import json, sys
        import tensorflow as tf
        import ringmaster
        from ringmaster.tensorflow import _buckets
        co = tf.distribute.experimental.CommunicationOptions
        print(json.dumps([_buckets.bucket_bytes(None), _buckets.bucket_bytes(co(bytes_per_pack=1000)),
                          _buckets.bucket_bytes(ringmaster.CommunicationOptions(bytes_per_pack=7)),
                          _buckets.bucket_bytes(co())]))
    ''')
    import json

    def sizes(env):
        p = subprocess.run([sys.executable, "-c", script], env=base_env(env), capture_output=True, text=True,
                           timeout=300)
        assert p.returncode == 0, p.stderr[-3000:]
        return json.loads(p.stdout.strip().splitlines()[-1])

    assert sizes({}) == [16 << 20, 1000, 7, 16 << 20]
    assert sizes({"RINGMASTER_BYTES_PER_PACK": "4096"}) == [4096, 1000, 7, 4096]


# mode -> extra environment; each gradient is its own bucket.
MODES = {"tape": {}, "keras": {"RINGMASTER_BYTES_PER_PACK": "1"},
         "tf_keras": {"RINGMASTER_BYTES_PER_PACK": "1", "TF_USE_LEGACY_KERAS": "1"}, "strategy": {}}


def group(mode, outdir, env=None):
    results = run_group(mode, outdir / mode, timeout=300, extra_env=env, worker=WORKER)
    for r in results:
        assert r.returncode == 0 and r.report, r
    return [r.report for r in results]


@pytest.mark.parametrize("mode", sorted(MODES))
def test_each_bucket_is_its_own_op_and_waits_only_for_its_own_gradients(op_library, outdir, mode):
    for rep in group(mode, outdir, MODES[mode]):
        assert rep["allreduce_ops"] == 4, rep  # two Dense layers: kernel and bias each
        # Each a Start and a Wait: the second bucket is handed to the engine
        # while the first is still being reduced (its Start waits for the
        # first's Start, not for its result).
        assert rep["split"] == 4 and rep["second_before_first_reduced"], rep
        # The second layer's bias comes first and does not wait for the slow
        # gradient; the first layer's kernel comes last and does.
        assert not rep["first_waits_for_slow"] and rep["last_waits_for_slow"], rep
        # Weight updates per bucket: some update waits for the first bucket
        # and not for the last (a plain Keras 3 optimizer under the tape joins
        # every gradient first: Keras's doing, not the reduction's).
        if mode != "tape":
            assert rep["update_without_last"], rep
        if mode in ("tape", "strategy"):
            # Seen at run time: every step's first bucket was reduced before
            # its slow gradient was computed (the step's last gradient).
            assert len(rep["reduced"]) == len(rep["slow"]) == 3, rep
            for reduced, slow in list(zip(rep["reduced"], rep["slow"]))[1:]:
                assert reduced < slow, rep


def test_one_op_for_every_gradient_waits_for_the_whole_backward_pass(op_library, outdir):
    """The test above can fail: with num_groups=1 (one op, today's grouping
    of Horovod's users) the reduction ends after the slow gradient, and
    every update waits for it."""
    for rep in group("tape_one_op", outdir):
        assert rep["allreduce_ops"] == 1 and rep["first_waits_for_slow"], rep
        assert not rep["second_before_first_reduced"], rep
        assert not rep["update_without_last"], rep
        for reduced, slow in list(zip(rep["reduced"], rep["slow"]))[1:]:
            assert reduced > slow, rep


def test_a_bucket_whose_shapes_differ_fails_on_every_member_naming_both_shapes(op_library, outdir):
    """The Start agrees before it hands the call over: rank 1's second layer
    is one input wider, so its second bucket (that layer's kernel) fails on
    every member in Horovod's style, naming the ranks and both shapes, and
    the group goes on."""
    reports = group("tape_mismatch", outdir, {"RINGMASTER_BYTES_PER_PACK": "1"})
    for rep in reports:
        assert rep["split"] == 4, rep
        error = rep["error"] or ""
        assert error.startswith("FailedPreconditionError") and "mismatched shapes" in error, rep
        assert "rank 1" in error and "[128,128]" in error and "[129,128]" in error, rep
        assert rep["after"] == 3.0, rep
