"""The program of tests/python/tf/test_elastic.py and bench/recovery.py: a
rank of a Keras 3 job under `ringmaster run` that trains with Horovod's
elastic API (``ringmaster.tensorflow.keras.elastic``), one import changed.

A tiny MLP on synthetic data (deterministic: no shuffling, no dropout),
EPOCHS epochs of STEPS steps, committing every batch. Each rank starts from
different weights on purpose (the first sync makes them rank 0's).

$ELASTIC_KILL="EPOCH:BATCH:RANK[,...]": the first incarnation of that rank
(in TF_CONFIG's order, whatever the group renumbered it to) kills itself
with SIGKILL as batch BATCH of epoch EPOCH begins. "First":
RINGMASTER_RESTART_COUNT 0 or unset (`ringmaster run` counts; a pod the
operator replaces has none), the process has trained a step itself (a new
incarnation resumes right at that batch) and $ELASTIC_KILL_MARKER, when
set, does not exist yet (it is created first: a file on a volume that
outlives the container, for restarts the kubelet makes in place).
$ELASTIC_REJOIN_DELAY: seconds a later incarnation (RINGMASTER_RESTART_COUNT
above 0) waits before it joins: a replacement that cannot start at once,
for elastic size (the others go on without it, then let it in).
$ELASTIC_OUT: a directory for each rank's final weights (rank-R.npz).
$ELASTIC_EPOCHS, $ELASTIC_STEPS, $ELASTIC_HIDDEN: the size of the run (the
benchmark's); $ELASTIC_STEP_SLEEP: seconds each step sleeps after it (a
benchmark that kills from outside at a given step polls logs).
$ELASTIC_MODE=checkpoint: what users do without recovery in place, for the
benchmark: no elastic API; a checkpoint at each epoch's end
($RINGMASTER_CHECKPOINT_DIR), restored by every rank at start; a member's
failure fails the others too and the whole job restarts from it.
Each rank trains its share of the data: every size()-th example from its
rank(), taken again when the group's size changes (a reset callback), as
the global batch stays LOCAL_BATCH per member.
Lines (unix times in seconds; R and S are the rank and size at the time):
  start rank R pid P restart N at T
  step rank R pid P epoch E batch B at T      (every finished batch)
  reset rank R size S pid P at T              (a recovery in place began)
  kill rank R pid P epoch E batch B at T
  done rank R pid P steps S weights sha256 H
"""
from __future__ import annotations

import hashlib
import json
import os
import signal
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import ringmaster.tensorflow.keras as hvd  # noqa: E402  (Horovod's: import horovod.tensorflow.keras as hvd)

EPOCHS = int(os.environ.get("ELASTIC_EPOCHS", "4"))
STEPS = int(os.environ.get("ELASTIC_STEPS", "6"))
HIDDEN = int(os.environ.get("ELASTIC_HIDDEN", "16"))
LOCAL_BATCH = 8
STEP_SLEEP = float(os.environ.get("ELASTIC_STEP_SLEEP", "0"))


def say(text: str) -> None:
    print(f"{text} at {time.time():.3f}", flush=True)


def main() -> int:
    first = os.environ.get("RINGMASTER_RESTART_COUNT", "0") == "0"
    if not first:
        time.sleep(float(os.environ.get("ELASTIC_REJOIN_DELAY", "0")))
    hvd.init()
    rank, pid = hvd.rank(), os.getpid()
    kills = set()
    for spec in filter(None, os.environ.get("ELASTIC_KILL", "").split(",")):
        e, b, r = (int(v) for v in spec.split(":"))
        kills.add((e, b, r))
    say(f"start rank {rank} pid {pid} restart {os.environ.get('RINGMASTER_RESTART_COUNT')}")

    keras.utils.set_random_seed(100 + rank)
    model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(HIDDEN, activation="relu"),
                              keras.layers.Dense(1)])
    model.compile(optimizer=hvd.DistributedOptimizer(keras.optimizers.SGD(0.05, momentum=0.9)), loss="mse",
                  jit_compile=False)
    cluster = json.loads(os.environ["TF_CONFIG"])["cluster"]
    members = len(cluster.get("chief", [])) + len(cluster.get("worker", []))  # TF_CONFIG's, whatever size() is
    rng = np.random.default_rng(0)
    x = rng.normal(size=(members * STEPS * LOCAL_BATCH, 8)).astype(np.float32)
    y = (x @ rng.normal(size=(8, 1)) + 0.1 * np.sin(3 * x[:, :1])).astype(np.float32)
    data = {}

    def take_share() -> None:
        r, n = hvd.rank(), hvd.size()
        data.update(rank=r, x=x[r::n], y=y[r::n])

    take_share()

    steps_done = [0]
    marker = os.environ.get("ELASTIC_KILL_MARKER")
    checkpointing = os.environ.get("ELASTIC_MODE") == "checkpoint"
    if checkpointing:
        state = None
        position = hvd.checkpoint.restore(model)
        where = {"epoch": hvd.checkpoint.initial_epoch(position), "batch": 0}
    else:
        state = hvd.elastic.KerasState(model, batch=0, epoch=0)
        def on_reset() -> None:
            take_share()
            say(f"reset rank {hvd.rank()} size {hvd.size()} pid {pid}")

        state.register_reset_callbacks([on_reset])
        where = state.__dict__  # epoch and batch, kept by the elastic callbacks

    class Trace(keras.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            if checkpointing:
                where.update(epoch=epoch, batch=0)

        def on_train_batch_begin(self, batch, logs=None):
            if first and steps_done[0] > 0 and (where["epoch"], where["batch"], rank) in kills:
                if marker:
                    if os.path.exists(marker):
                        return
                    open(marker, "w").close()
                say(f"kill rank {data['rank']} pid {pid} epoch {where['epoch']} batch {where['batch']}")
                os.kill(pid, signal.SIGKILL)
                os._exit(137)  # PID 1 of a container ignores its own SIGKILL: die as abruptly

        def on_train_batch_end(self, batch, logs=None):
            steps_done[0] += 1
            if checkpointing:
                where["batch"] = batch + 1
            say(f"step rank {data['rank']} pid {pid} epoch {where['epoch']} batch {where['batch']}")
            time.sleep(STEP_SLEEP)  # after the line: its time is the step's end

    @hvd.elastic.run
    def train(state):
        # Commit first, then the position moves: the order Horovod's examples use.
        callbacks = [hvd.elastic.CommitStateCallback(state), hvd.elastic.UpdateBatchStateCallback(state),
                     hvd.elastic.UpdateEpochStateCallback(state), Trace()]
        while state.epoch < EPOCHS:
            start = state.batch * LOCAL_BATCH  # a resumed epoch goes on from its next batch
            if start >= len(data["x"]):  # the epoch's share, at the group's new size, is done
                state.epoch, state.batch = state.epoch + 1, 0
                continue
            model.fit(data["x"][start:], data["y"][start:], batch_size=LOCAL_BATCH, epochs=1, shuffle=False,
                      verbose=0, callbacks=callbacks)

    if checkpointing:
        model.fit(data["x"], data["y"], batch_size=LOCAL_BATCH, epochs=EPOCHS, initial_epoch=where["epoch"],
                  shuffle=False, verbose=0, callbacks=[hvd.callbacks.CheckpointCallback(), Trace()])
    else:
        train(state)
    weights = model.get_weights()
    digest = hashlib.sha256(b"".join(np.asarray(w).tobytes() for w in weights)).hexdigest()
    out = os.environ.get("ELASTIC_OUT")
    if out:
        np.savez(os.path.join(out, f"rank-{hvd.rank()}.npz"), *weights)
    print(f"done rank {hvd.rank()} pid {pid} steps {steps_done[0]} weights sha256 {digest}", flush=True)
    hvd.allreduce(tf.constant(0.0), op=hvd.Sum)  # a barrier: no rank ends the job before all have printed
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
