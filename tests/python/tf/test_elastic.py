"""Recovery in place with Horovod's elastic API for Keras 3 (`@run`,
`KerasState`, the commit/batch/epoch callbacks), under `ringmaster run`.

A chief and two workers of elastic_worker.py, restartPolicy OnFailure.
test_elastic_keras_shrinks_without_a_late_member_and_grows_when_it_joins:
runPolicy.elastic (minWorkers 1, a rejoin bound of 2 s); worker 0 (rank 1)
is killed and its new incarnation waits 6 s before it joins. The others go
on as a group of two (worker 1 renumbered to rank 1, each taking its new
share of the data), then let it in at a commit (no rollback) and finish as
three, every rank with the same weights. Process sets [0, 1] and [1, 2]
are in use: [1, 2] is held while the group is two, and both work again
once it is three.

test_elastic_keras_recovers_in_place_twice_the_leader_included: worker 1
(rank 2) kills itself with SIGKILL in the middle of `model.fit` (as batch 2
of epoch 1 begins), then the chief (rank 0, which hosts formation) as batch
4 of epoch 2 begins. The survivors keep their processes (their PIDs do not
change, `ringmaster run` started them once), only the victims restart; the
survivors reset, each new incarnation takes their committed state, and
training goes on having lost at most the step in flight. At the end the
weights are bit-identical on every rank and equal (rtol 1e-5) to an
uninterrupted run of the same batches. Process sets [0, 1] and [1, 2] are
in use before each kill and after each recovery: the library adds them
again on the survivors, meeting the new incarnation's own adds, and each
set's sum is its members' (rank + 1 each).

Every run, the uninterrupted one included: across the group, each epoch
trains each sample exactly once (a batch trained before a failure and
committed is not trained again; none is skipped, whatever the group's size
after a reset).
"""
from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Optional

import numpy as np
import pytest

from group import python_job_yaml, ringmaster_run

HERE = Path(__file__).resolve().parent
WORKER = HERE / "elastic_worker.py"
EPOCHS, STEPS = 4, 6  # elastic_worker.py's defaults
SAMPLES = 3 * STEPS * 8  # an epoch: TF_CONFIG's members x STEPS x the local batch (elastic_worker.py)
REPLICA = {0: "chief-0", 1: "worker-0", 2: "worker-1"}
START = re.compile(r"^\[(\S+)\] start rank (\d) pid (\d+) restart (\d+) at [\d.]+$", re.M)
STEP = re.compile(r"^\[(\S+)\] step rank (\d) pid (\d+) epoch (\d+) batch (\d+) at [\d.]+$", re.M)
KILL = re.compile(r"^\[(\S+)\] kill rank (\d) pid (\d+) epoch (\d+) batch (\d+) at [\d.]+$", re.M)
DONE = re.compile(r"^\[(\S+)\] done rank (\d) pid (\d+) steps (\d+) weights sha256 ([0-9a-f]{64})$", re.M)
TRAINED = re.compile(r"^\[(\S+)\] trained rank (\d) epoch (\d+) batch (\d+) samples ([\d,]+) at [\d.]+$", re.M)
SET_SUM = re.compile(r"^\[(\S+)\] set (\d) rank (\d) size (\d) sum ([\d.]+) at ([\d.]+)$", re.M)
SET_SUM_AT = re.compile(r"^\[\S+\] set (\d) rank (\d) size (\d) sum", re.M)
SET_HELD = re.compile(r"^\[(\S+)\] set (\d) held rank (\d) size (\d) at [\d.]+$", re.M)
SET_RANKS = {1: [0, 1], 2: [1, 2]}  # elastic_worker.py's, with ELASTIC_SETS=1


def check_each_sample_once(out: str, epochs: int) -> None:
    """Across every member, each epoch trained each sample exactly once."""
    per_epoch: dict = {}
    for _, _, epoch, _, samples in TRAINED.findall(out):
        per_epoch.setdefault(int(epoch), []).extend(int(i) for i in samples.split(","))
    assert sorted(per_epoch) == list(range(epochs)), sorted(per_epoch)
    for epoch, samples in per_epoch.items():
        twice = sorted({i for i in samples if samples.count(i) > 1})
        skipped = sorted(set(range(SAMPLES)) - set(samples))
        assert not twice and not skipped and len(samples) == SAMPLES, (epoch, "twice", twice, "skipped", skipped)


def set_sums(out: str) -> list:
    """(replica, set id, rank, size, sum, time) of each process-set sum, checked: the members' rank + 1."""
    sums = [(rep, int(i), int(r), int(n), float(x), float(t)) for rep, i, r, n, x, t in SET_SUM.findall(out)]
    for rep, i, r, n, x, _ in sums:
        assert r in SET_RANKS[i], (rep, i, r)
        assert x == sum(m + 1 for m in SET_RANKS[i]), (rep, i, r, n, x)
    return sums


def run_job(tmp: Path, name: str, kill: str = "", timeout: float = 600, env: Optional[dict] = None,
            run_policy: tuple = ()) -> tuple:
    d = tmp / name
    (d / "out").mkdir(parents=True)
    env = {"PYTHONUNBUFFERED": "1", "TF_CPP_MIN_LOG_LEVEL": "2", "CUDA_VISIBLE_DEVICES": "",
           "RINGMASTER_FORMATION_TIMEOUT_SECONDS": "120", "ELASTIC_OUT": str(d / "out"), "ELASTIC_KILL": kill,
           **(env or {})}
    (d / "job.yaml").write_text(python_job_yaml(name, [sys.executable, str(WORKER)], env, run_policy=run_policy))
    out = ringmaster_run(str(d / "job.yaml"), timeout, cwd=d, drop_env=("TF_USE_LEGACY_KERAS",))
    weights = {r: [w for _, w in sorted(np.load(d / "out" / f"rank-{r}.npz").items(),
                                        key=lambda kv: int(kv[0].split("_")[1]))] for r in range(3)}
    return out, weights


@pytest.fixture(scope="module")
def uninterrupted(op_library, tmp_path_factory):
    out, weights = run_job(tmp_path_factory.mktemp("elastic"), "elastic-clean")
    done = DONE.findall(out)
    assert sorted(int(r) for _, r, _, _, _ in done) == [0, 1, 2], out[-6000:]
    assert all(int(s) == EPOCHS * STEPS for _, _, _, s, _ in done), done
    assert len({h for *_, h in done}) == 1, done
    check_each_sample_once(out, EPOCHS)
    return weights


def check_recovered(out: str, weights: dict, reference: dict, victims: set) -> None:
    tail = out[-8000:]
    starts: dict = {}
    for replica, rank, pid, restart in START.findall(out):
        assert replica == REPLICA[int(rank)], replica
        starts.setdefault(int(rank), []).append(int(pid))
    killed = {int(r) for _, r, _, _, _ in KILL.findall(out)}
    assert killed == victims, tail
    for rank in range(3):
        # The victims alone started again; a survivor kept its one process.
        assert len(starts[rank]) == (2 if rank in victims else 1), (rank, starts, tail)
        assert f"[ringmaster]   {REPLICA[rank]}: started {2 if rank in victims else 1}x" in out, tail
    done = {int(r): (int(pid), int(steps), h) for _, r, pid, steps, h in DONE.findall(out)}
    assert sorted(done) == [0, 1, 2], tail
    for rank, (pid, steps, _) in done.items():
        assert pid == starts[rank][-1], (rank, pid, starts)
    # A survivor of every failure trained each planned step once, plus at most the one in
    # flight per failure (redone after the reset): the committed steps were kept.
    for rank in set(range(3)) - victims:
        finished = [(int(e), int(b)) for _, r, _, e, b in STEP.findall(out) if int(r) == rank]
        assert len(finished) <= EPOCHS * STEPS + len(victims), (rank, len(finished))
        assert sorted(set(finished)) == [(e, b) for e in range(EPOCHS) for b in range(1, STEPS + 1)], finished
    assert "reset rank" in out, tail
    check_each_sample_once(out, EPOCHS)
    # Bit-identical on every rank, and the same training as without a failure.
    assert len({h for _, _, h in done.values()}) == 1, done
    for rank in range(3):
        for got, want in zip(weights[rank], reference[rank]):
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=0)


def test_elastic_keras_recovers_in_place_twice_the_leader_included(uninterrupted, tmp_path):
    out, weights = run_job(tmp_path, "elastic-kill", kill="1:2:2,2:4:0", env={"ELASTIC_SETS": "1"})
    check_recovered(out, weights, uninterrupted, victims={0, 2})
    # The process sets worked before the first kill and after the last recovery,
    # on every member of each (the victims' new incarnations included).
    sums = set_sums(out)
    kills = sorted(float(t) for t in re.findall(r"^\[\S+\] kill rank \d pid \d+ epoch \d+ batch \d+ at ([\d.]+)$",
                                                out, re.M))
    assert len(kills) == 2, kills
    for when in (lambda t: t < kills[0], lambda t: t > kills[1]):
        used = {(i, r) for _, i, r, _, _, t in sums if when(t)}
        assert used == {(1, 0), (1, 1), (2, 1), (2, 2)}, used
    assert not SET_HELD.findall(out), SET_HELD.findall(out)
    # The survivors said who failed, and where the group resumed each time.
    assert re.search(r"^\[(chief-0|worker-0)\] .*/job:worker/task:1", out, re.M), out[-6000:]
    assert re.search(r"resuming after step 8 from /job:(chief|worker)/task:0; /job:worker/task:1 takes its state",
                     out), out[-6000:]
    assert re.search(r"resuming after step 16 from /job:worker/task:[01]; /job:chief/task:0 takes its state",
                     out), out[-6000:]


RESET = re.compile(r"^\[(\S+)\] reset rank (\d) size (\d) pid (\d+) at [\d.]+$", re.M)


def test_elastic_keras_shrinks_without_a_late_member_and_grows_when_it_joins(op_library, tmp_path):
    epochs = 10  # long enough (0.3 s steps) for the late member to join before the end
    out, weights = run_job(tmp_path, "elastic-shrink", kill="1:2:1",
                           env={"ELASTIC_EPOCHS": str(epochs), "ELASTIC_STEP_SLEEP": "0.3",
                                "ELASTIC_REJOIN_DELAY": "6", "ELASTIC_SETS": "1"},
                           run_policy=("recovery: InPlace", "elastic: {minWorkers: 1, rejoinTimeoutSeconds: 2}"))
    tail = out[-8000:]
    starts = {}
    for replica, _, pid, _ in START.findall(out):
        starts.setdefault(replica, []).append(int(pid))
    assert {r: len(p) for r, p in starts.items()} == {"chief-0": 1, "worker-0": 2, "worker-1": 1}, (starts, tail)
    # The survivors formed without worker 0, then with it again.
    for replica in ("chief-0", "worker-1"):
        assert re.search(rf"^\[{replica}\] ringmaster: \S+: formed with 2 of 3 members \(without /job:worker/task:0\)",
                         out, re.M), tail
        assert re.search(rf"^\[{replica}\] ringmaster: \S+: formed with 3 of 3 members", out, re.M), tail
    # Their resets, in order: the shrink (worker 1 becomes rank 1 of 2), then the growth.
    resets = {}
    for replica, rank, size, pid in RESET.findall(out):
        resets.setdefault(replica, []).append((int(rank), int(size), int(pid)))
    assert [(r, s) for r, s, _ in resets["chief-0"]] == [(0, 2), (0, 3)], resets
    assert [(r, s) for r, s, _ in resets["worker-1"]] == [(1, 2), (2, 3)], resets
    assert "worker-0" not in resets, resets  # the newcomer takes the state, it does not reset
    # The survivors kept their processes; training ran to the last epoch at both sizes.
    for replica in ("chief-0", "worker-1"):
        assert {pid for *_, pid in resets[replica]} == set(starts[replica]), (resets, starts)
    sizes_seen = {int(s) for _, _, s, _ in RESET.findall(out)}
    assert sizes_seen == {2, 3}, sizes_seen
    done = {replica: (int(r), int(steps), h) for replica, r, _, steps, h in DONE.findall(out)}
    assert {replica: r for replica, (r, _, _) in done.items()} == {"chief-0": 0, "worker-0": 1, "worker-1": 2}, done
    last = [(int(e), int(b)) for rep, r, _, e, b in STEP.findall(out) if rep == "chief-0"][-1]
    assert last[0] == epochs - 1, last
    # Bit-identical on every rank at the end.
    assert len({h for _, _, h in done.values()}) == 1, done
    for rank in (1, 2):
        for got, want in zip(weights[rank], weights[0]):
            np.testing.assert_array_equal(got, want)
    # Each sample once per epoch, at sizes 3, 2 and 3 again.
    check_each_sample_once(out, epochs)
    # Process sets: [0, 1] works as two (the chief and worker 1 then) and [1, 2] is
    # held there (rank 2 is gone); both work as three before the kill and after the growth.
    sums = set_sums(out)
    held = {(int(i), int(n)) for _, i, _, n in SET_HELD.findall(out)}
    assert held == {(2, 2)}, held
    assert {(i, n) for _, i, _, n, _, _ in sums} == {(1, 3), (2, 3), (1, 2)}, sorted(set(sums))[:20]
    grown = out.index("[chief-0] reset rank 0 size 3 ")
    after = {(int(i), int(r)) for i, r, n in SET_SUM_AT.findall(out[grown:]) if n == "3"}
    assert after == {(1, 0), (1, 1), (2, 1), (2, 2)}, after
