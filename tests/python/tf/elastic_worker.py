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
Each epoch trains every sample once across the group, whatever resets
happen in it: the committed state holds ``seen``, the samples of the epoch
the group has trained, and each (re)start of ``fit`` deals the samples left
among the members there are now (shard_rest): global batches of size() *
LOCAL_BATCH in order, each dealt round-robin by rank. Resuming at a member's
own batch offset instead would train some samples twice and skip others
once the size changed.
$ELASTIC_SETS=1: process sets [0, 1] and [1, 2] (hvd.init(process_sets=...));
as every batch begins each member of a set sums rank() + 1 over it.
Lines (unix times in seconds; R and S are the rank and size at the time):
  start rank R pid P restart N at T
  step rank R pid P epoch E batch B at T      (every finished batch)
  trained rank R epoch E batch B samples I,J,... at T  (its samples; elastic mode)
  set ID rank R size S sum X at T             ($ELASTIC_SETS: the set's sum)
  set ID held rank R size S at T              ($ELASTIC_SETS: the group lacks its ranks)
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

import ringmaster.tensorflow as hvd_tf  # noqa: E402  (horovod.tensorflow: allreduce in a process set)
import ringmaster.tensorflow.keras as hvd  # noqa: E402  (Horovod's: import horovod.tensorflow.keras as hvd)

EPOCHS = int(os.environ.get("ELASTIC_EPOCHS", "4"))
STEPS = int(os.environ.get("ELASTIC_STEPS", "6"))
HIDDEN = int(os.environ.get("ELASTIC_HIDDEN", "16"))
LOCAL_BATCH = 8
STEP_SLEEP = float(os.environ.get("ELASTIC_STEP_SLEEP", "0"))


def say(text: str) -> None:
    print(f"{text} at {time.time():.3f}", flush=True)


def shard_rest(seen: int, total: int, rank: int, size: int, local_batch: int) -> tuple:
    """The samples of the epoch not trained yet (seen..total-1, the epoch's
    order), dealt to this member: global batches of size * local_batch in
    order, each dealt round-robin (member r takes every size-th sample from
    the r-th), so the group trains each sample once and every member runs
    the same number of steps. A last global batch smaller than the group
    joins the one before (no member gets an empty batch). Returns this
    member's batches (arrays of sample indices) and, for each, how many
    samples of the epoch the group has trained once it is done."""
    left = np.arange(seen, total)
    if len(left) < size:
        raise ValueError(f"{len(left)} samples left in the epoch for {size} members")
    ends = list(range(size * local_batch, len(left), size * local_batch)) + [len(left)]
    if len(ends) > 1 and ends[-1] - ends[-2] < size:
        del ends[-2]
    starts = [0] + ends[:-1]
    return [left[a:b][rank::size] for a, b in zip(starts, ends)], [seen + e for e in ends]


def main() -> int:
    first = os.environ.get("RINGMASTER_RESTART_COUNT", "0") == "0"
    if not first:
        time.sleep(float(os.environ.get("ELASTIC_REJOIN_DELAY", "0")))
    sets = [hvd.ProcessSet([0, 1]), hvd.ProcessSet([1, 2])] if os.environ.get("ELASTIC_SETS") == "1" else []
    hvd.init(process_sets=sets)
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
    data = {"rank": rank, "batches": []}

    steps_done = [0]
    marker = os.environ.get("ELASTIC_KILL_MARKER")
    checkpointing = os.environ.get("ELASTIC_MODE") == "checkpoint"
    if checkpointing:
        state = None
        position = hvd.checkpoint.restore(model)
        where = {"epoch": hvd.checkpoint.initial_epoch(position), "batch": 0}
    else:
        # seen: the samples of the current epoch the group has trained (Position).
        state = hvd.elastic.KerasState(model, batch=0, epoch=0, seen=0)
        def on_reset() -> None:
            say(f"reset rank {hvd.rank()} size {hvd.size()} pid {pid}")

        state.register_reset_callbacks([on_reset])
        where = state.__dict__  # epoch and batch, kept by the elastic callbacks

    class Trace(keras.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            if checkpointing:
                where.update(epoch=epoch, batch=0)

        def on_train_batch_begin(self, batch, logs=None):
            if (first and steps_done[0] > 0 and (where["epoch"], where["batch"], rank) in kills
                    and not (marker and os.path.exists(marker))):
                if marker:
                    open(marker, "w").close()
                say(f"kill rank {data['rank']} pid {pid} epoch {where['epoch']} batch {where['batch']}")
                os.kill(pid, signal.SIGKILL)
                os._exit(137)  # PID 1 of a container ignores its own SIGKILL: die as abruptly
            # After the commit (CommitStateCallback's, at this batch's begin):
            # a failure here rolls back no finished batch.
            for ps in sets:
                if ps.size() is None:
                    say(f"set {ps.process_set_id} held rank {hvd.rank()} size {hvd.size()}")
                elif ps.included():
                    got = hvd_tf.allreduce(tf.constant(float(hvd.rank() + 1)), op=hvd.Sum, process_set=ps)
                    say(f"set {ps.process_set_id} rank {hvd.rank()} size {hvd.size()} sum {float(got):g}")

        def on_train_batch_end(self, batch, logs=None):
            steps_done[0] += 1
            if checkpointing:
                where["batch"] = batch + 1
            else:
                samples = ",".join(str(i) for i in data["batches"][batch])
                say(f"trained rank {data['rank']} epoch {where['epoch']} batch {where['batch']} samples {samples}")
            say(f"step rank {data['rank']} pid {pid} epoch {where['epoch']} batch {where['batch']}")
            time.sleep(STEP_SLEEP)  # after the line: its time is the step's end

    class Position(keras.callbacks.Callback):
        """Moves state.seen at each batch's end, before the commit that the
        next batch's begin makes (CommitStateCallback), so the position a
        commit saves matches its weights."""

        def __init__(self, ends):
            super().__init__()
            self.ends = ends

        def on_train_batch_end(self, batch, logs=None):
            state.seen = self.ends[batch]

        def on_epoch_end(self, epoch, logs=None):
            state.seen = 0

    @hvd.elastic.run
    def train(state):
        # Commit first, then the position moves: the order Horovod's examples use.
        # UpdateBatchStateCallback only counts batches here (state.batch, for the
        # lines above): Keras 3 runs the steps fit is given, and the position
        # the epoch resumes from is state.seen.
        callbacks = [hvd.elastic.CommitStateCallback(state), hvd.elastic.UpdateBatchStateCallback(state),
                     hvd.elastic.UpdateEpochStateCallback(state)]
        while state.epoch < EPOCHS:
            # The samples the group has not trained yet this epoch, dealt among
            # the members there are now (the size may have changed in a reset).
            batches, ends = shard_rest(state.seen, len(x), hvd.rank(), hvd.size(), LOCAL_BATCH)
            data.update(rank=hvd.rank(), batches=batches)
            ds = tf.data.Dataset.from_generator(
                lambda bs=batches: ((x[b], y[b]) for b in bs),
                output_signature=(tf.TensorSpec((None, 8), tf.float32), tf.TensorSpec((None, 1), tf.float32)))
            # Its length known: fit runs exactly these steps (no extra batch begins).
            ds = ds.apply(tf.data.experimental.assert_cardinality(len(batches)))
            model.fit(ds, epochs=1, verbose=0, callbacks=callbacks + [Position(ends), Trace()])

    if checkpointing:
        r, n = hvd.rank(), hvd.size()  # a fixed group: every size()-th sample from rank()
        model.fit(x[r::n], y[r::n], batch_size=LOCAL_BATCH, epochs=EPOCHS, initial_epoch=where["epoch"],
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
