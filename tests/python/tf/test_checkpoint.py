"""Whole-job restarts resume from the last checkpoint
(ringmaster.tensorflow.keras.checkpoint and callbacks.CheckpointCallback).

test_checkpoint_resume_under_ringmaster_run: a chief and two workers of
checkpoint_worker.py under `ringmaster run`, restartPolicy OnFailure and a
backoffLimit. Worker 1's first incarnation exits abruptly (os._exit(3)) in
epoch 3, after the checkpoint of epoch 2's end exists; the other two fail
(Unavailable, naming worker 1) and are restarted too. Every restarted rank
restores before its first step and finishes. The output proves the step
count: the restarted ranks began at epoch 3 / step 12 (not 0), trained the
remaining 12 steps and ended at the planned 24; all ranks' final weights
are bit-identical, and equal to those of a second run without a failure
(the training is deterministic: no shuffling, no dropout, a fixed
reduction order).

test_checkpoint_unit: one process: a writer killed in the middle of a
checkpoint leaves the previous one as the latest; save and restore give
bit-identical state; keep; a damaged newest checkpoint is skipped; a
checkpoint of another model is an InvalidArgumentError naming the variable;
no directory is no error; every_n_batches positions.
"""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from group import base_env, free_ports, python_job_yaml, ringmaster_run

HERE = Path(__file__).resolve().parent
WORKER = HERE / "checkpoint_worker.py"
EPOCHS, STEPS, CRASH_EPOCH = 6, 4, 3  # as in checkpoint_worker.py


def run_job(tmp: Path, name: str, crash: bool, timeout: float = 400) -> str:
    env = {"RINGMASTER_CHECKPOINT_DIR": str(tmp / name / "checkpoints"), "PYTHONUNBUFFERED": "1",
           "TF_CPP_MIN_LOG_LEVEL": "2", "CUDA_VISIBLE_DEVICES": "", "RINGMASTER_FORMATION_TIMEOUT_SECONDS": "120"}
    if crash:
        env["CKPT_TEST_CRASH_MARKER"] = str(tmp / name / "crashed")
    (tmp / name).mkdir(parents=True)
    job = tmp / name / "job.yaml"
    job.write_text(python_job_yaml("ckpt-resume", [sys.executable, str(WORKER), "job"], env))
    return ringmaster_run(str(job), timeout, cwd=tmp / name,
                          drop_env=("TF_USE_LEGACY_KERAS", "RINGMASTER_CHECKPOINT_DIR"))


REPLICA = {"0": "chief-0", "1": "worker-0", "2": "worker-1"}
START = re.compile(r"^\[(\S+)\] start rank (\d) restart (\d+) resumed (none|epoch (\d+) batch (\d+) step (\d+)) "
                   r"iterations (\d+) weights sha256 ([0-9a-f]{64})$", re.M)
DONE = re.compile(r"^\[(\S+)\] done rank (\d) trained (\d+) iterations (\d+) weights sha256 ([0-9a-f]{64})$", re.M)


def test_checkpoint_resume_under_ringmaster_run(op_library, tmp_path):
    out = run_job(tmp_path, "crash", crash=True)
    tail = out[-8000:]
    crashes = re.findall(r"^\[worker-1\] crash rank 2 epoch (\d+) batch (\d+)$", out, re.M)
    assert crashes == [(str(CRASH_EPOCH), "1")], tail
    # The group aborted naming the culprit on the others, and they failed (to be restarted).
    assert re.search(r"^\[(chief-0|worker-0)\] .*/job:worker/task:1", out, re.M), tail
    starts = START.findall(out)
    by_rank: dict = {}
    for replica, rank, restart, resumed, epoch, batch, step, iterations, sha in starts:
        assert replica == REPLICA[rank], starts
        by_rank.setdefault(rank, []).append((int(restart), resumed, epoch, batch, step, int(iterations), sha))
    assert sorted(by_rank) == ["0", "1", "2"], tail
    resumed_shas = set()
    for rank, runs in by_rank.items():
        # The first incarnation started from nothing; every rank was restarted (the whole group failed)
        # and its last incarnation began at the checkpoint of epoch CRASH_EPOCH's start, not at 0.
        assert runs[0][:2] == (0, "none") and runs[0][5] == 0, (rank, runs)
        last = runs[-1]
        assert last[0] >= 1, f"rank {rank} was not restarted: {runs}\n{tail}"
        assert (int(last[2]), int(last[3]), int(last[4])) == (CRASH_EPOCH, 0, CRASH_EPOCH * STEPS), (rank, runs)
        assert last[5] == CRASH_EPOCH * STEPS, (rank, runs)  # the optimizer's step count, restored
        resumed_shas.add(last[6])
    assert len(resumed_shas) == 1, f"the ranks did not start the restart alike: {by_rank}"
    done = DONE.findall(out)
    assert sorted(r for _, r, _, _, _ in done) == ["0", "1", "2"], tail
    for replica, rank, trained, iterations, _ in done:
        assert replica == REPLICA[rank]
        # Only the steps after the checkpoint were trained again, and the total is the planned number.
        assert int(trained) == (EPOCHS - CRASH_EPOCH) * STEPS, done
        assert int(iterations) == EPOCHS * STEPS, done
    finals = {sha for _, _, _, _, sha in done}
    assert len(finals) == 1, f"weights differ between ranks: {done}"
    # The same job without a failure ends with the same weights.
    clean = run_job(tmp_path, "clean", crash=False)
    assert "crash rank" not in clean
    clean_done = DONE.findall(clean)
    assert sorted(r for _, r, _, _, _ in clean_done) == ["0", "1", "2"], clean[-8000:]
    assert all(int(t) == EPOCHS * STEPS and int(i) == EPOCHS * STEPS for _, _, t, i, _ in clean_done), clean_done
    assert {sha for _, _, _, _, sha in clean_done} == finals, (clean_done, done)


def test_checkpoint_unit(op_library, tmp_path):
    port = free_ports(1)[0]
    env = base_env({"TF_CONFIG": json.dumps({"cluster": {"chief": [f"127.0.0.1:{port}"]},
                                             "task": {"type": "chief", "index": 0}})})
    env.pop("RINGMASTER_CHECKPOINT_DIR", None)
    d = tmp_path / "ckpt"
    killed = subprocess.run([sys.executable, str(WORKER), "die-mid-write", str(d)], env=env, capture_output=True,
                            text=True, timeout=180)
    assert killed.returncode == 9, killed.stderr[-4000:]
    p = subprocess.run([sys.executable, str(WORKER), "unit", str(d)], env=env, capture_output=True, text=True,
                       timeout=180)
    assert p.returncode == 0, p.stderr[-4000:]
    out = json.loads(p.stdout.strip().splitlines()[-1])
    # The killed writer left its temporary directory and the previous checkpoint, which is the latest.
    assert len(out["after_kill"]) == 2 and out["after_kill"][0].startswith(".tmp-ckpt-000000000008-"), out
    assert out["after_kill"][1] == "ckpt-000000000004" and out["after_kill_restored"] == [1, 0, 4], out
    assert out["save_path"] == "ckpt-000000000008", out
    assert out["after_save"] == ["ckpt-000000000004", "ckpt-000000000008"], out  # the stale one removed
    assert out["other_differs"] and out["restored"] == [7, 0, 8] and out["restored_equal"], out
    assert out["kept"] == ["ckpt-000000000016", "ckpt-000000000020"], out
    assert out["damaged_restored"] == [9, 0, 16], out
    assert len(out["damaged_warning"]) == 1 and "sha256 does not match" in out["damaged_warning"][0], out
    m = out["mismatch"]
    assert "model variable 0" in m and "dense" in m and "kernel" in m and "float32[8, 17] here" in m \
        and "float32[8, 16] in the checkpoint" in m, m
    assert "optimizer variables" in out["mismatch_optimizer"] and "momentum" in out["mismatch_optimizer"], out
    assert out["no_dir_restore"] is None, out
    assert len(out["no_dir_warnings"]) == 1 and "RINGMASTER_CHECKPOINT_DIR" in out["no_dir_warnings"][0], out
    assert out["every_n"] == [[0, 2, 2], [1, 0, 4], [1, 2, 6], [2, 0, 8]], out
    assert out["bad_every_n"].startswith("every_n_batches:"), out
