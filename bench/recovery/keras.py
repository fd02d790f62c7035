"""Recovery in place against a whole-job restart from a checkpoint, on the
same Keras 3 job (tests/python/tf/elastic_worker.py: a chief and two
workers under `ringmaster run`, restartPolicy OnFailure), one worker
SIGKILLed as batch KILL_BATCH of epoch KILL_EPOCH begins.

  in place    @hvd.elastic.run, a commit every batch: the survivors keep
              their processes, the victim alone restarts and takes their state.
  elastic     in place with runPolicy.elastic {minWorkers: 1,
              rejoinTimeoutSeconds: 0.5}: the survivors do not wait for the
              victim's new process (its TensorFlow start); they go on as two
              after the bound (the rest of each epoch dealt between them,
              each sample still trained once) and let it in at a later
              commit. Not the same job recovered faster: it goes on with
              fewer workers, and may finish on two.
  checkpoint  what users do today: a checkpoint at each epoch's end; the
              survivors fail too, every rank restarts and restores it.

Per mode and round: the recovery time (from the kill to the next completed
step on every survivor: the ranks other than the victim) and the steps lost (completed steps thrown away: the
kill's position minus the position training resumed from; the step in
flight is lost in both modes and not counted). Prints a Markdown table.

  $(scripts/tf-venv | tail -1) bench/recovery/keras.py [--rounds 3]
(the wheel installed in that venv; RINGMASTER_CLI or build/bin/ringmaster.)
"""
from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "python" / "tf"))
from group import python_job_yaml, ringmaster_run  # noqa: E402

WORKER = REPO / "tests" / "python" / "tf" / "elastic_worker.py"
EPOCHS, STEPS, KILL_EPOCH, KILL_BATCH = 4, 6, 1, 2
KILL = re.compile(r"^\[\S+\] kill rank (\d) pid \d+ epoch (\d+) batch (\d+) at ([\d.]+)$", re.M)
STEP = re.compile(r"^\[\S+\] step rank (\d) pid \d+ epoch (\d+) batch (\d+) at ([\d.]+)$", re.M)
# Where a rank's recovery begins: its reset (in place) or its new process's start (checkpoint).
BEGIN = re.compile(r"^\[\S+\] (?:reset|start) rank (\d) (?:size \d+ )?pid \d+ (?:restart \S+ )?at ([\d.]+)$", re.M)


def one_round(tmp: Path, mode: str) -> tuple:
    d = tmp / mode
    d.mkdir(parents=True)
    env = {"PYTHONUNBUFFERED": "1", "TF_CPP_MIN_LOG_LEVEL": "2", "CUDA_VISIBLE_DEVICES": "",
           "RINGMASTER_FORMATION_TIMEOUT_SECONDS": "120", "ELASTIC_KILL": f"{KILL_EPOCH}:{KILL_BATCH}:2",
           "ELASTIC_EPOCHS": str(EPOCHS), "ELASTIC_STEPS": str(STEPS)}
    run_policy: tuple = ()
    if mode == "checkpoint":
        env.update(ELASTIC_MODE="checkpoint", RINGMASTER_CHECKPOINT_DIR=str(d / "ckpt"))
    if mode == "elastic":
        run_policy = ("recovery: InPlace", "elastic: {minWorkers: 1, rejoinTimeoutSeconds: 0.5}")
    (d / "job.yaml").write_text(python_job_yaml(f"recovery-{mode}", [sys.executable, str(WORKER)], env,
                                                run_policy=run_policy))
    out = ringmaster_run(str(d / "job.yaml"), 600, cwd=d, drop_env=("TF_USE_LEGACY_KERAS",))
    (kill,) = KILL.findall(out)
    survivors = {"0", "1", "2"} - {kill[0]}  # the victim is the last rank: the others keep their ranks
    killed_at = float(kill[3])
    kill_pos = int(kill[1]) * STEPS + int(kill[2])
    # A step that a survivor finishes just after the kill began before it (the victim
    # contributed): what counts is the first step after the rank's recovery began.
    began = {}
    for rank, at in BEGIN.findall(out):
        if float(at) > killed_at:
            began.setdefault(rank, float(at))
    recovered, resumed = {}, {}
    for rank, epoch, batch, at in STEP.findall(out):
        if rank in survivors and rank in began and float(at) > began[rank] and rank not in recovered:
            recovered[rank] = float(at) - killed_at
            resumed[rank] = int(epoch) * STEPS + int(batch) - 1  # the step it completed follows this position
    assert sorted(recovered) == sorted(survivors), out[-4000:]
    return max(recovered.values()), kill_pos - min(resumed.values())


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    rows = {"in place": [], "elastic": [], "checkpoint": []}
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.rounds):
            for mode in rows:
                rows[mode].append(one_round(Path(tmp) / str(i), mode.replace(" ", "")))
                print(f"round {i} {mode}: {rows[mode][-1][0]:.2f} s, {rows[mode][-1][1]} steps lost",
                      file=sys.stderr, flush=True)
    med = {m: statistics.median(t for t, _ in r) for m, r in rows.items()}
    print("| mode | recovery time, median (s) | each round (s) | steps lost, each round |")
    print("| --- | ---: | --- | --- |")
    for m, r in rows.items():
        print(f"| {m} | {med[m]:.2f} | {', '.join(f'{t:.2f}' for t, _ in r)} | {', '.join(str(s) for _, s in r)} |")
    print(f"\nwhole-job restart / recovery in place: {med['checkpoint'] / med['in place']:.1f}x "
          f"(N = 3, {os.cpu_count()} CPUs); elastic: the survivors train again, as two, after "
          f"{med['elastic']:.2f} s (the job goes on with fewer workers)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
