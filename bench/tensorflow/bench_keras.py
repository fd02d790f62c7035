"""Ringmaster against MultiWorkerMirroredStrategy and Horovod 0.28.1 on a Keras
model's gradients and training step: N = 3 processes on 127.0.0.1, side by
side, in rounds, one run.

    bench_keras.py [--out DIR] [--rounds 7] [--iters 6] [--warmup 2]
                   [--model full|small] [--groups G,G,...] [--cases C,C,...]
                   [--horovod-python PY | --horovod-unavailable REASON]
    bench_keras.py --rank GROUP ...        (one rank; started by the launcher)

Rounds. K times (--rounds), the launcher runs each group in turn: it
starts the group's ranks, waits until each has formed its group and says it
is ready, then tells them to run their cases (--warmup + --iters iterations
each), takes their results and ends them before the next group starts. A
round is every group once, back to back, in the order given (reversed in
odd rounds, so that a drift within a round falls on each side of a ratio in
turn). Within a group, the cases start one later each round
(rotated), so that no case is always the first or the last of its
process's life. Every ratio is computed per round, between groups that ran
in that round, and reported as its median over the rounds with the min-max spread
and every round's value (rounds.py). Start-up is outside the timed part;
the rounds table says what it cost. --keep G,G keeps those groups' ranks
through all rounds instead (a waiting rank polls a file every 50 ms, no
CPU), for a machine with the memory: here a rank holds 2-3.7 GB after a
few rounds, and six groups of them do not fit in 24 GiB. Horovod's ranks
are never kept: their background thread coordinates over Gloo every 1 ms
even with nothing to reduce (7-13 % of a vCPU per waiting rank here).

Each group has its own deadline per round (--group-timeout); a group that
fails or passes it is killed and left out of the later rounds, the others
go on. Every process is killed when the launcher exits. Output in DIR:
tables.md, ratios.csv (every ratio per round) and ratios.png, summary.csv
(each ratio's median and spread), results.csv (every rank's every
iteration, by round), each rank's log.

The horovod group runs Horovod 0.28.1 in its own venv
(bench/tensorflow/horovod-venv: TensorFlow 2.13.1 and Keras 2.13, the newest
Horovod 0.28.1 builds against; the other groups run in scripts/tf-venv's
TensorFlow) under `horovodrun -np 3 --gloo -H localhost:3` with that venv's
python (--horovod-python). Without --horovod-python the table says why it
was not measured (--horovod-unavailable).

The model (tf_keras, or Keras 3 for the Keras 3 fit): Dense 1024 -> 4096 ->
4096 -> 1024 -> 10, 8 gradients, 25,185,290 float32 (100.7 MB); a local
batch of 32 (global 96), plain SGD. Cases, timed per iteration on every
rank (rank 0's in the tables), the warm-up iterations of each round dropped:

  allreduce*  the 8 gradient-shaped tensors summed across the ranks:
             rm.all_reduce("sum", grads), grouped_allreduce(grads, op=Sum),
             [allreduce(g, op=Sum) for g in grads], each in a tf.function
             and eagerly (-eager); strategy.run(fn) with
             get_replica_context().all_reduce(SUM, grads,
             CommunicationOptions(RING)) under TensorFlow's strategy and
             ours; and the engine alone on NumPy arrays of the same shapes
             (allreduce-engine: ringmaster.default_communicator(), in place,
             one call), what our Python paths are measured against; and out
             of place (allreduce-engine-out: all_reduce(arrays, out=...), the
             inputs only read), the work TensorFlow's semantics ask of the op
             on tensors held elsewhere, as the captured gradients here; and
             one call per tensor, out of place (allreduce-engine-pertensor),
             the work 8 eager per-tensor calls must do: each returns its sum
             before the next starts, and eager inputs are held by Python;
             and in place on 8 buffers TensorFlow allocated
             (allreduce-engine-tf): NumPy gets huge pages for large arrays,
             TensorFlow's tensors do not.
             Every one is checked after timing: each rank's (rank + 1) sums
             to 6.
  strategy-run-eager  strategy.run(fn) eagerly under our strategy, fn the
             all-reduce case's with its all_reduce replaced by a merge_call
             that hands the 8 tensors back, no all-reduce: TensorFlow's own
             cost of running a replica function eagerly (a thread per
             replica and the merge_call hand-off), which its all_reduce
             eagerly pays on top of the op.
  tape       DistributedGradientTape(op=Sum) over a loss linear in 8
             variables of the gradients' shapes (its gradients are 8
             tensors of those shapes), and the same tape without it
             (tape/none): the tape's cost over the engine's; and the same
             tape without it, then the engine on the very buffers of its
             gradients (tape-engine: in place in a tf.function, where the
             op may overwrite them; out of place eagerly, where Python holds
             them), the work DistributedGradientTape must do, in one call.
  step       custom loop (tf.function): forward, backward, all-reduce, SGD
             apply. rm.DistributedGradientTape against strategy.run(step)
             (the replica all-reduces the gradients itself, with RING, and
             applies them with skip_gradients_aggregation).
  fit        model.fit, one batch per iteration (a callback stamps the end
             of each batch): tf_keras under MWMS against tf_keras and Keras 3
             with rm.keras.DistributedOptimizer (+ BroadcastGlobalVariables).
  rm-mwms    the allreduce, step and fit cases of MWMS, the same code under
             ringmaster.tensorflow.MultiWorkerMirroredStrategy (the
             constructor the only change).
  compute    the same step / fit without any all-reduce: 3 ranks at once
             and one process alone (size 1).

Against Horovod, the same code on both sides (ringmaster.tensorflow is
Horovod-named): the grouped and per-tensor all-reduces, the custom-loop step
with DistributedGradientTape (default op Average), model.fit with Keras 2
and DistributedOptimizer + BroadcastGlobalVariablesCallback, and the step's
and fit's compute floor on Horovod's TensorFlow.
"""
from __future__ import annotations

import argparse
import csv
import gc
import json
import os
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve()
sys.path.insert(0, str(HERE.parents[1] / "common"))
sys.path.insert(0, str(HERE.parents[2] / "common" / "ports"))
sys.path.insert(0, str(HERE.parent))
from free_ports import free_ports  # noqa: E402  (common/ports/free_ports.py)
import rounds as rd  # noqa: E402

N = 3
LOCAL_BATCH = 32
MODELS = {
    # units of the Dense layers after a 1024-wide input
    "full": (1024, [4096, 4096, 1024, 10]),   # 25,185,290 parameters
    "small": (256, [512, 512, 256, 10]),      # 526,090 parameters (smoke test)
}

RM_ALLREDUCES = ["allreduce/ringmaster", "allreduce-eager/ringmaster", "allreduce-engine/ringmaster",
                 "allreduce-engine-out/ringmaster", "allreduce-engine-pertensor/ringmaster",
                 "allreduce-engine-tf/ringmaster", "allreduce-copy/none", "allreduce-fresh/ringmaster",
                 "allreduce-grouped/ringmaster", "allreduce-grouped-eager/ringmaster",
                 "allreduce-pertensor/ringmaster", "allreduce-pertensor-eager/ringmaster",
                 "tape/ringmaster", "tape/none", "tape-eager/ringmaster", "tape-eager/none",
                 "tape-engine/ringmaster", "tape-eager-engine/ringmaster"]
# group name -> (ranks, env additions, cases in order)
GROUPS = {
    "rm-tf_keras": (N, {"TF_USE_LEGACY_KERAS": "1"},
                    RM_ALLREDUCES + ["step/ringmaster", "step/none", "fit-tf_keras/ringmaster", "fit-tf_keras/none"]),
    "mwms": (N, {"TF_USE_LEGACY_KERAS": "1"}, ["allreduce/mwms", "step/mwms", "fit-tf_keras/mwms"]),
    # The same code as "mwms" under ringmaster.tensorflow.MultiWorkerMirroredStrategy
    "rm-mwms": (N, {"TF_USE_LEGACY_KERAS": "1"},
                ["allreduce/rm-mwms", "allreduce-eager/rm-mwms", "strategy-run-eager/rm-mwms", "step/rm-mwms",
                 "fit-tf_keras/rm-mwms"]),
    "rm-keras3": (N, {}, ["fit-keras3/ringmaster", "fit-keras3/none"]),
    "single": (1, {"TF_USE_LEGACY_KERAS": "1"}, ["step/none", "fit-tf_keras/none"]),
    # Horovod's venv (Keras 2.13 is tf.keras there: no TF_USE_LEGACY_KERAS)
    "horovod": (N, {}, ["allreduce-grouped/horovod", "allreduce-pertensor/horovod", "step/horovod", "step/none",
                        "fit-keras2/horovod", "fit-keras2/none"]),
}
HOROVOD_GROUP = "horovod"
RM = "rm-tf_keras"
# Groups whose ranks can never be kept between their turns (--keep):
# Horovod's background thread coordinates over Gloo every cycle (1 ms) even
# with nothing to reduce, 7-13 % of a vCPU per rank measured here while it
# waited, which the other groups' turns would pay for.
NEVER_KEPT = {HOROVOD_GROUP}


def ref_words(ref):
    """A same-work row's reference, in words."""
    words = {"allreduce-engine-out/ringmaster": "the engine out of place",
             "allreduce-engine-pertensor/ringmaster": "the engine per tensor, out of place",
             "strategy-run-eager/rm-mwms": "strategy.run's own eager cost",
             "tape-engine/ringmaster": "the same tape without it, then the engine in place on its gradients",
             "tape-eager-engine/ringmaster": "the same tape without it, then the engine out of place on its "
                                             "gradients"}
    return " + ".join(words[case] for _, case in ref)


def ratios(horovod: bool) -> list[rd.Ratio]:
    """The report's figures. Each is a per-round ratio of groups that ran in
    the same round; > 1 in the peer sections means Ringmaster is faster."""
    R = rd.Ratio
    out = [
        R("MWMS (RING) / Ringmaster", "all-reduce, rm.all_reduce (tf.function)",
          (("mwms", "allreduce/mwms"),), ((RM, "allreduce/ringmaster"),), (">=", 5.0), "all-reduce"),
        R("MWMS (RING) / Ringmaster", "training step, custom loop (tf.function)",
          (("mwms", "step/mwms"),), ((RM, "step/ringmaster"),), (">=", 2.0), "step"),
        R("MWMS (RING) / Ringmaster", "model.fit step, tf_keras both",
          (("mwms", "fit-tf_keras/mwms"),), ((RM, "fit-tf_keras/ringmaster"),), (">=", 2.0), "fit tf_keras"),
        R("MWMS (RING) / Ringmaster", "model.fit step, Keras 3 (ours) vs tf_keras (MWMS)",
          (("mwms", "fit-tf_keras/mwms"),), (("rm-keras3", "fit-keras3/ringmaster"),), (">=", 2.0), "fit Keras 3"),
        R("TensorFlow's MWMS / ours, the constructor changed", "all-reduce (tf.function)",
          (("mwms", "allreduce/mwms"),), (("rm-mwms", "allreduce/rm-mwms"),), (">=", 2.0), "all-reduce"),
        R("TensorFlow's MWMS / ours, the constructor changed", "training step, custom loop",
          (("mwms", "step/mwms"),), (("rm-mwms", "step/rm-mwms"),), (">=", 2.0), "step"),
        R("TensorFlow's MWMS / ours, the constructor changed", "model.fit step, tf_keras",
          (("mwms", "fit-tf_keras/mwms"),), (("rm-mwms", "fit-tf_keras/rm-mwms"),), (">=", 2.0), "fit"),
        R("Our strategy / the same step on Ringmaster's API (a cost)", "all-reduce (tf.function)",
          (("rm-mwms", "allreduce/rm-mwms"),), ((RM, "allreduce/ringmaster"),), ("<=", 1.1), "all-reduce"),
        R("Our strategy / the same step on Ringmaster's API (a cost)", "training step, custom loop",
          (("rm-mwms", "step/rm-mwms"),), ((RM, "step/ringmaster"),), ("<=", 1.1), "step"),
        R("Our strategy / the same step on Ringmaster's API (a cost)", "model.fit step, tf_keras",
          (("rm-mwms", "fit-tf_keras/rm-mwms"),), ((RM, "fit-tf_keras/ringmaster"),), ("<=", 1.1), "fit"),
    ]
    engine = ((RM, "allreduce-engine/ringmaster"),)
    for name, key, short in [
            ("rm.all_reduce, tf.function", (RM, "allreduce/ringmaster"), "all_reduce tf.f"),
            ("rm.all_reduce, eager", (RM, "allreduce-eager/ringmaster"), "all_reduce eager"),
            ("grouped_allreduce, tf.function", (RM, "allreduce-grouped/ringmaster"), "grouped tf.f"),
            ("grouped_allreduce, eager", (RM, "allreduce-grouped-eager/ringmaster"), "grouped eager"),
            ("per-tensor allreduce, tf.function", (RM, "allreduce-pertensor/ringmaster"), "per-tensor tf.f"),
            ("per-tensor allreduce, eager", (RM, "allreduce-pertensor-eager/ringmaster"), "per-tensor eager"),
            ("our strategy's all_reduce (CrossDeviceOps), tf.function", ("rm-mwms", "allreduce/rm-mwms"),
             "strategy tf.f"),
            ("our strategy's all_reduce (CrossDeviceOps), eager", ("rm-mwms", "allreduce-eager/rm-mwms"),
             "strategy eager")]:
        out.append(R("Our Python paths / the engine alone on the same buffers (a cost)", name, (key,), engine,
                     ("<=", 1.1), short))
    engine_out = ((RM, "allreduce-engine-out/ringmaster"),)
    for name, key, short in [
            ("rm.all_reduce, tf.function", (RM, "allreduce/ringmaster"), "all_reduce tf.f / out"),
            ("rm.all_reduce, eager", (RM, "allreduce-eager/ringmaster"), "all_reduce eager / out")]:
        out.append(R("Our Python paths / the engine alone on the same buffers (a cost)",
                     f"{name} / the engine out of place (inputs only read, as the op's captured ones)", (key,),
                     engine_out, ("<=", 1.1), short))
    out.append(R("Our Python paths / the engine alone on the same buffers (a cost)",
                 "the engine out of place / in place", engine_out, engine, None, "engine out / in"))
    out.append(R("Our Python paths / the engine alone on the same buffers (a cost)",
                 "the engine in place on buffers TensorFlow allocated / on NumPy's (huge pages)",
                 ((RM, "allreduce-engine-tf/ringmaster"),), engine, None, "engine TF / NumPy"))
    # Eager inputs are held by Python, so eagerly the op cannot reduce in
    # place: the same work is the engine out of place (per tensor for the
    # per-tensor calls, which run one after the other).
    same = "/ the engine doing the same work"
    for name, key, ref, short in [
            ("grouped_allreduce, eager", (RM, "allreduce-grouped-eager/ringmaster"), engine_out, "grouped eager / out"),
            ("per-tensor allreduce, eager", (RM, "allreduce-pertensor-eager/ringmaster"),
             ((RM, "allreduce-engine-pertensor/ringmaster"),), "per-tensor eager / per tensor"),
            ("our strategy's all_reduce (CrossDeviceOps), eager", ("rm-mwms", "allreduce-eager/rm-mwms"),
             engine_out + (("rm-mwms", "strategy-run-eager/rm-mwms"),), "strategy eager / out + run"),
            ("DistributedGradientTape, tf.function", (RM, "tape/ringmaster"), ((RM, "tape-engine/ringmaster"),),
             "tape tf.f / tape, engine"),
            ("DistributedGradientTape, eager", (RM, "tape-eager/ringmaster"), ((RM, "tape-eager-engine/ringmaster"),),
             "tape eager / tape, engine")]:
        out.append(R("Our Python paths / the engine alone on the same buffers (a cost)", f"{name} {same}: {ref_words(ref)}",
                     (key,), ref, ("<=", 1.1), short))
    out.append(R("Our Python paths / the engine alone on the same buffers (a cost)",
                 "rm.all_reduce on tensors made in the graph (in place), tf.function / (the engine + the copy "
                 "that made them)", ((RM, "allreduce-fresh/ringmaster"),), engine + ((RM, "allreduce-copy/none"),),
                 ("<=", 1.1), "fresh tf.f"))
    out.append(R("Our Python paths / the engine alone on the same buffers (a cost)",
                 "a fresh copy of the 8 tensors alone (tf.raw_ops.Snapshot, tf.function) / the engine",
                 ((RM, "allreduce-copy/none"),), engine, None, "copy alone"))
    for name, mode, short in [("DistributedGradientTape, tf.function", "tape", "tape tf.f"),
                              ("DistributedGradientTape, eager", "tape-eager", "tape eager")]:
        out.append(R("Our Python paths / the engine alone on the same buffers (a cost)",
                     f"{name} / (the engine + the same tape without it)", ((RM, f"{mode}/ringmaster"),),
                     engine + ((RM, f"{mode}/none"),), ("<=", 1.1), short))
    if horovod:
        H = HOROVOD_GROUP
        out += [
            R("Horovod 0.28.1 (Gloo) / Ringmaster", "all-reduce, grouped_allreduce(grads, op=Sum) (tf.function)",
              ((H, "allreduce-grouped/horovod"),), ((RM, "allreduce-grouped/ringmaster"),), (">=", 1.1), "grouped"),
            R("Horovod 0.28.1 (Gloo) / Ringmaster", "all-reduce, per-tensor allreduce(g, op=Sum) (tf.function)",
              ((H, "allreduce-pertensor/horovod"),), ((RM, "allreduce-pertensor/ringmaster"),), (">=", 1.1),
              "per-tensor"),
            R("Horovod 0.28.1 (Gloo) / Ringmaster", "training step, custom loop, DistributedGradientTape",
              ((H, "step/horovod"),), ((RM, "step/ringmaster"),), (">=", 1.0), "step"),
            R("Horovod 0.28.1 (Gloo) / Ringmaster", "model.fit step, Keras 2, DistributedOptimizer",
              ((H, "fit-keras2/horovod"),), ((RM, "fit-tf_keras/ringmaster"),), (">=", 1.0), "fit"),
            R("Horovod 0.28.1 (Gloo) / Ringmaster", "compute floor, custom loop step, no all-reduce (TF builds)",
              ((H, "step/none"),), ((RM, "step/none"),), None, "floor step"),
            R("Horovod 0.28.1 (Gloo) / Ringmaster", "compute floor, model.fit step, no all-reduce (TF builds)",
              ((H, "fit-keras2/none"),), ((RM, "fit-tf_keras/none"),), None, "floor fit"),
        ]
    return out


# ===================================================================== rank


class Rank:
    def __init__(self, group, args):
        self.group, self.args = group, args
        if group == HOROVOD_GROUP:
            self.rank = int(os.environ["HOROVOD_RANK"])  # set by horovodrun
        else:
            self.rank = int(json.loads(os.environ.get("TF_CONFIG", '{"task":{"index":0}}'))["task"]["index"])
        self.size = GROUPS[group][0]
        self.round = args.first_round
        self.results = []
        self.out = Path(args.out)

    def record(self, case, times, correct=None):
        import tensorflow as tf
        self.results.append({"case": case, "rank": self.rank, "size": self.size, "round": self.round,
                             "times_s": times, "tf_version": tf.__version__, "correct": correct})
        print(f"[{self.group} rank {self.rank} round {self.round}] {case}: median "
              f"{statistics.median(times[self.args.warmup:]) * 1e3:.1f} ms", file=sys.stderr, flush=True)

    def signal_file(self, name, text=""):
        """Writes DIR/name at once (a rename), for the launcher to see."""
        tmp = self.out / f".{name}.tmp"
        tmp.write_text(text)
        os.replace(tmp, self.out / name)

    def wait_for_round(self):
        """True when the launcher says go for this round, False when it says
        stop (or is gone)."""
        go = self.out / f"go-{self.group}-{self.round}"
        stops = (self.out / "stop", self.out / f"stop-{self.group}")
        while True:
            if go.exists():
                return True
            if any(f.exists() for f in stops):
                return False
            try:
                os.kill(self.args.launcher_pid, 0)
            except OSError:
                return False
            time.sleep(0.05)

    def serve(self, run_case, cases, barrier):
        """Ready, then one pass over the cases per round until told to stop."""
        self.signal_file(f"ready-{self.group}-{self.rank}")
        while self.wait_for_round():
            self.results = []
            for case in rd.rotated(cases, self.round):
                run_case(case)
                gc.collect()
            if barrier:
                barrier()
            self.signal_file(f"rank-{self.group}-{self.rank}-r{self.round}.json", json.dumps(self.results))
            self.round += 1


def timed(fn, total, barrier=None):
    """Calls fn() `total` times; fn must block until its step is done.
    With `barrier`, every call starts together on the ranks (the barrier is
    outside the timed part), so a case without a collective of its own (a
    copy, a tape without the all-reduce) is timed as the cases with one
    are: back to back, its ranks drift apart and contend less for memory,
    which made such references look cheaper. Returns every call's wall time
    in seconds."""
    times = []
    for _ in range(total):
        if barrier:
            barrier()
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return times


def keras_module():
    if os.environ.get("TF_USE_LEGACY_KERAS") == "1":
        import tf_keras as keras
    else:
        import keras
    return keras


def build_model(keras, model_name, seed=1):
    width, units = MODELS[model_name]
    keras.utils.set_random_seed(seed)
    layers = [keras.Input((width,))]
    for i, u in enumerate(units):
        layers.append(keras.layers.Dense(u, activation=None if i == len(units) - 1 else "relu"))
    return keras.Sequential(layers)


def grad_shapes(model_name):
    """The trainable variables' shapes of build_model, in its order (each
    Dense layer's kernel, then its bias), without building it."""
    width, units = MODELS[model_name]
    shapes, prev = [], width
    for u in units:
        shapes += [(prev, u), (u,)]
        prev = u
    return shapes


def data(tf, model_name, rank, batch):
    width, units = MODELS[model_name]
    g = tf.random.Generator.from_seed(100 + rank)
    x = g.normal([batch, width])
    y = g.uniform([batch], 0, units[-1], dtype=tf.int64)
    return x, y


class FitTimer:
    """Stamps the end of each training batch (on_train_batch_end)."""

    def __init__(self, keras):
        parent = self

        class _Cb(keras.callbacks.Callback):
            def on_train_batch_begin(self, batch, logs=None):
                if batch == 0:
                    parent.stamps.append(time.perf_counter())

            def on_train_batch_end(self, batch, logs=None):
                parent.stamps.append(time.perf_counter())

        self.stamps = []
        self.callback = _Cb()

    def times(self):
        return [b - a for a, b in zip(self.stamps, self.stamps[1:])]


def all_equal(tensors_or_arrays, value):
    import numpy as np
    return all(bool((np.asarray(t) == value).all()) for t in tensors_or_arrays)


def reduce_case(r: Rank, case, tf, reduce, eager, barrier, want=lambda rank: float(N * (N + 1) // 2)):
    """Times reduce(grads) on the 8 gradient-shaped tensors (in a
    tf.function unless eager), then checks it on each rank's rank + 1: each
    element must be want(rank) (the sum over the ranks by default)."""
    total = r.args.warmup + r.args.iters
    shapes = grad_shapes(r.args.model)
    fn = reduce if eager else tf.function(reduce)
    grads = [tf.random.normal(s, seed=r.rank) for s in shapes]

    def call():
        out = fn(grads)
        out[-1].numpy()

    times = timed(call, total, barrier)
    got = fn([tf.fill(s, float(r.rank + 1)) for s in shapes])
    r.record(case, times, all_equal(got, want(r.rank)))


def hvd_api_allreduce(r: Rank, case, hvd, tf, barrier):
    """allreduce-grouped[-eager] / allreduce-pertensor[-eager] with a
    Horovod-named module (horovod.tensorflow or ringmaster.tensorflow): the
    same code on both."""
    kind = case.split("/")[0]
    if kind.startswith("allreduce-grouped"):
        def reduce(ts):
            return hvd.grouped_allreduce(ts, op=hvd.Sum)
    else:
        def reduce(ts):
            return [hvd.allreduce(t, op=hvd.Sum) for t in ts]
    reduce_case(r, case, tf, reduce, kind.endswith("-eager"), barrier)


def tape_case(r: Rank, case, tf, api, barrier, comm=None):
    """tape[-eager]: the gradients of sum(v * c) over 8 variables of the
    gradients' shapes are the 8 tensors c; with `api`, through its
    DistributedGradientTape(op=Sum). With `comm` (tape[-eager]-engine), the
    same tape without it, then the engine sums its gradients: in place in a
    tf.function (the op may overwrite gradients made in the graph), out of
    place eagerly (Python holds eager gradients). Checked with c = rank + 1."""
    kind = case.split("/")[0]
    eager = "-eager" in kind
    total = r.args.warmup + r.args.iters
    shapes = grad_shapes(r.args.model)
    vs = [tf.Variable(tf.zeros(s)) for s in shapes]
    cs = [tf.Variable(tf.random.normal(s, seed=r.rank)) for s in shapes]

    def grads():
        with tf.GradientTape() as tape:
            loss = tf.add_n([tf.reduce_sum(v * c) for v, c in zip(vs, cs)])
        if api is not None:
            tape = api.DistributedGradientTape(tape, op=api.Sum)
        return tape.gradient(loss, vs)

    fn = grads if eager else tf.function(grads)
    if comm is not None:
        import numpy as np
        outs = [np.empty(s, np.float32) for s in shapes]
        tape_alone = fn

        def fn():
            # _numpy_internal: the tensor's own buffer, writable (numpy()
            # copies, np.asarray is read-only), so the engine reduces the
            # very buffers the tape made, as the op does.
            arrays = [g._numpy_internal() for g in tape_alone()]
            if eager:
                comm.all_reduce(arrays, "sum", out=outs)
                return outs
            comm.all_reduce(arrays, "sum")
            return arrays
        times = timed(fn, total, barrier)
    else:
        times = timed(lambda: fn()[-1].numpy(), total, barrier)
    for c, s in zip(cs, shapes):
        c.assign(tf.fill(s, float(r.rank + 1)))
    want = float(N * (N + 1) // 2) if api is not None or comm is not None else float(r.rank + 1)
    r.record(case, times, all_equal(fn(), want))


def step_case(r: Rank, case, tf, keras, api, loss_fn, x, y, total, barrier=None):
    """The custom-loop step (tf.function): forward, backward, SGD apply;
    with `api` (ringmaster.tensorflow or horovod.tensorflow: the same
    names), the variables broadcast first and the gradients reduced by its
    DistributedGradientTape; without, the compute alone."""
    model = build_model(keras, r.args.model)
    opt = keras.optimizers.SGD(0.01)
    if api is not None:
        api.broadcast_variables(model.variables, root_rank=0)

    @tf.function
    def step(x, y):
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
        if api is not None:
            tape = api.DistributedGradientTape(tape)
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    r.record(case, timed(lambda: step(x, y).numpy(), total, barrier))


def fit_case(r: Rank, case, tf, keras, api_keras, loss_fn, x, y, total, barrier=None, **compile_kw):
    """model.fit, one batch per iteration; with `api_keras` (the keras
    module of ringmaster.tensorflow or horovod.tensorflow), its
    DistributedOptimizer and BroadcastGlobalVariablesCallback."""
    model = build_model(keras, r.args.model)
    opt = keras.optimizers.SGD(0.01)
    callbacks = []
    if api_keras is not None:
        opt = api_keras.DistributedOptimizer(opt)
        callbacks.append(api_keras.callbacks.BroadcastGlobalVariablesCallback(0))
    model.compile(optimizer=opt, loss=loss_fn, **compile_kw)
    timer = FitTimer(keras)
    ds = tf.data.Dataset.from_tensors((x, y)).repeat()
    if barrier is not None:
        barrier()
    model.fit(ds, epochs=1, steps_per_epoch=total, verbose=0, callbacks=callbacks + [timer.callback])
    r.record(case, timer.times())



def ringmaster_runner(r: Rank):
    """rm.init(), then (run_case, barrier) for the rm-* groups."""
    import ringmaster.tensorflow as rm  # before TensorFlow (ringmaster's docs)
    import tensorflow as tf

    rm.init()
    assert rm.size() == r.size and rm.rank() == r.rank, (rm.size(), rm.rank())
    total = r.args.warmup + r.args.iters
    one = tf.ones([1])

    def barrier():
        rm.all_reduce("sum", one).numpy()

    keras = keras_module()
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    x, y = data(tf, r.args.model, r.rank, LOCAL_BATCH)

    def run_case(case):
        kind, peer = case.split("/")
        if kind.startswith(("allreduce-grouped", "allreduce-pertensor")):
            hvd_api_allreduce(r, case, rm, tf, barrier)
        elif kind in ("allreduce", "allreduce-eager"):
            reduce_case(r, case, tf, lambda ts: rm.all_reduce("sum", ts), kind == "allreduce-eager", barrier)
        elif kind == "allreduce-copy":
            # What TensorFlow's semantics cost when the op cannot write into
            # its inputs (held elsewhere, as the captured gradients here): a
            # fresh output buffer and a copy. Snapshot copies exactly then.
            reduce_case(r, case, tf, lambda ts: [tf.raw_ops.Snapshot(input=t) for t in ts], False, barrier,
                        want=lambda rank: float(rank + 1))
        elif kind == "allreduce-fresh":
            # The op on tensors made in the graph (no other reference, as a
            # training step's gradients): it reduces them in place.
            reduce_case(r, case, tf, lambda ts: rm.all_reduce("sum", [tf.raw_ops.Snapshot(input=t) for t in ts]),
                        False, barrier)
        elif kind == "allreduce-engine":
            # The engine alone on the same 8 buffers (NumPy, in place, one
            # call): what the Python paths are measured against.
            import numpy as np
            import ringmaster
            comm = ringmaster.default_communicator()
            shapes = grad_shapes(r.args.model)
            arrays = [np.random.default_rng(r.rank).standard_normal(s).astype(np.float32) for s in shapes]
            times = timed(lambda: comm.all_reduce(arrays, "sum"), total, barrier)
            fills = [np.full(s, float(r.rank + 1), np.float32) for s in shapes]
            comm.all_reduce(fills, "sum")
            r.record(case, times, all_equal(fills, float(N * (N + 1) // 2)))
        elif kind == "allreduce-engine-out":
            # The engine out of place on the same 8 buffers: the inputs are
            # only read, the sums go to 8 other arrays (made once, as
            # TensorFlow's allocator reuses the op's outputs).
            import numpy as np
            import ringmaster
            comm = ringmaster.default_communicator()
            shapes = grad_shapes(r.args.model)
            arrays = [np.random.default_rng(r.rank).standard_normal(s).astype(np.float32) for s in shapes]
            outs = [np.empty(s, np.float32) for s in shapes]
            times = timed(lambda: comm.all_reduce(arrays, "sum", out=outs), total, barrier)
            fills = [np.full(s, float(r.rank + 1), np.float32) for s in shapes]
            comm.all_reduce(fills, "sum", out=outs)
            r.record(case, times, all_equal(outs, float(N * (N + 1) // 2)))
        elif kind == "allreduce-engine-tf":
            # The engine in place on 8 buffers TensorFlow allocated (kept):
            # NumPy asks the kernel for huge pages on large arrays
            # (madvise), TensorFlow's allocator does not: the same
            # reduction on pages of another size.
            import ringmaster
            comm = ringmaster.default_communicator()
            shapes = grad_shapes(r.args.model)
            kept = [tf.random.normal(s, seed=r.rank) * 1.0 for s in shapes]
            arrays = [t._numpy_internal() for t in kept]  # the tensors' own buffers, writable
            times = timed(lambda: comm.all_reduce(arrays, "sum"), total, barrier)
            for a in arrays:
                a.fill(float(r.rank + 1))
            comm.all_reduce(arrays, "sum")
            r.record(case, times, all_equal(arrays, float(N * (N + 1) // 2)))
        elif kind == "allreduce-engine-pertensor":
            # The engine out of place, one call per tensor, one after the
            # other: what 8 eager per-tensor calls on Python-held tensors do.
            import numpy as np
            import ringmaster
            comm = ringmaster.default_communicator()
            shapes = grad_shapes(r.args.model)
            arrays = [np.random.default_rng(r.rank).standard_normal(s).astype(np.float32) for s in shapes]
            outs = [np.empty(s, np.float32) for s in shapes]

            def per_tensor(values):
                for a, o in zip(values, outs):
                    comm.all_reduce(a, "sum", out=o)

            times = timed(lambda: per_tensor(arrays), total, barrier)
            per_tensor([np.full(s, float(r.rank + 1), np.float32) for s in shapes])
            r.record(case, times, all_equal(outs, float(N * (N + 1) // 2)))
        elif kind.startswith("tape"):
            if kind.endswith("-engine"):
                import ringmaster
                tape_case(r, case, tf, None, barrier, ringmaster.default_communicator())
            else:
                tape_case(r, case, tf, rm if peer == "ringmaster" else None, barrier)
        elif kind == "step":
            step_case(r, case, tf, keras, rm if peer == "ringmaster" else None, loss_fn, x, y, total, barrier)
        elif kind.startswith("fit"):
            # rm-keras3 runs with Keras 3, rm-tf_keras with tf_keras (env)
            import ringmaster.tensorflow.keras as rmk
            compile_kw = {} if os.environ.get("TF_USE_LEGACY_KERAS") == "1" else {"jit_compile": False}
            fit_case(r, case, tf, keras, rmk if peer == "ringmaster" else None, loss_fn, x, y, total, barrier,
                     **compile_kw)
        else:
            raise ValueError(case)

    return run_case, barrier


def mwms_runner(r: Rank, ours: bool = False):
    """TensorFlow's strategy, or ours (ours=True): the constructor is the
    only difference."""
    import tensorflow as tf

    impl = tf.distribute.experimental.CommunicationImplementation.RING
    opts = tf.distribute.experimental.CommunicationOptions(implementation=impl)
    if ours:
        import ringmaster.tensorflow as rmtf
        strategy = rmtf.MultiWorkerMirroredStrategy(communication_options=opts)
    else:
        strategy = tf.distribute.MultiWorkerMirroredStrategy(communication_options=opts)
    assert strategy.num_replicas_in_sync == r.size, strategy.num_replicas_in_sync
    total = r.args.warmup + r.args.iters
    keras = keras_module()
    SUM = tf.distribute.ReduceOp.SUM

    @tf.function
    def barrier_fn(v):
        return strategy.run(lambda t: tf.distribute.get_replica_context().all_reduce(SUM, tf.identity(t)),
                            args=(v,))

    one = tf.ones([1])

    def barrier():
        barrier_fn(one).numpy()

    x, y = data(tf, r.args.model, r.rank, LOCAL_BATCH)
    global_batch = LOCAL_BATCH * r.size

    def reduce(ts):
        def fn(*vs):
            # identity: puts the inputs on the replica's device
            return tf.distribute.get_replica_context().all_reduce(SUM, [tf.identity(v) for v in vs], options=opts)
        return strategy.run(fn, args=tuple(ts))

    def run_case(case):
        kind, _ = case.split("/")
        if kind in ("allreduce", "allreduce-eager"):
            reduce_case(r, case, tf, reduce, kind == "allreduce-eager", barrier)
        elif kind == "strategy-run-eager":
            # TensorFlow's own machinery around an eager all_reduce: the same
            # replica function as reduce()'s, its all_reduce replaced by a
            # merge_call that hands the values back (the hand-off between
            # the replica's thread and the caller's that an all_reduce
            # makes), no all-reduce.
            def handoff(ts):
                def fn(*vs):
                    return tf.distribute.get_replica_context().merge_call(
                        lambda _, *a: a, args=tuple(tf.identity(v) for v in vs))
                return strategy.run(fn, args=tuple(ts))
            reduce_case(r, case, tf, handoff, True, barrier, want=lambda rank: float(rank + 1))
        elif kind == "step":
            with strategy.scope():
                model = build_model(keras, r.args.model)
                opt = keras.optimizers.SGD(0.01)
                loss_obj = keras.losses.SparseCategoricalCrossentropy(
                    from_logits=True, reduction=keras.losses.Reduction.NONE)

            @tf.function
            def step(x, y):
                def replica_step(x, y):
                    with tf.GradientTape() as tape:
                        per_example = loss_obj(y, model(x, training=True))
                        loss = tf.nn.compute_average_loss(per_example, global_batch_size=global_batch)
                    grads = tape.gradient(loss, model.trainable_variables)
                    grads = tf.distribute.get_replica_context().all_reduce(SUM, grads, options=opts)
                    opt.apply_gradients(zip(grads, model.trainable_variables), skip_gradients_aggregation=True)
                    return loss
                per_replica = strategy.run(replica_step, args=(tf.identity(x), tf.identity(y)))
                return strategy.reduce(SUM, per_replica, axis=None)

            r.record(case, timed(lambda: step(x, y).numpy(), total, barrier))
        elif kind == "fit-tf_keras":
            with strategy.scope():
                model = build_model(keras, r.args.model)
                model.compile(optimizer=keras.optimizers.SGD(0.01),
                              loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
            timer = FitTimer(keras)
            # The global batch, every worker the same rows; MWMS splits each
            # batch into the replicas' 32 (no sharding: data is synthetic).
            gx = tf.concat([data(tf, r.args.model, i, LOCAL_BATCH)[0] for i in range(r.size)], 0)
            gy = tf.concat([data(tf, r.args.model, i, LOCAL_BATCH)[1] for i in range(r.size)], 0)
            ds = tf.data.Dataset.from_tensors((gx, gy)).repeat()
            o = tf.data.Options()
            o.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.OFF
            ds = ds.with_options(o)
            per_replica = next(iter(strategy.experimental_distribute_dataset(ds)))[0]
            local = strategy.experimental_local_results(per_replica)[0]
            assert local.shape[0] == LOCAL_BATCH, f"MWMS gives a replica {local.shape[0]} rows, not {LOCAL_BATCH}"
            barrier()
            model.fit(ds, epochs=1, steps_per_epoch=total, verbose=0, callbacks=[timer.callback])
            r.record(case, timer.times())
        else:
            raise ValueError(case)

    return run_case, barrier


def horovod_runner(r: Rank):
    import horovod.tensorflow as hvd
    import tensorflow as tf

    hvd.init()
    assert hvd.size() == r.size and hvd.rank() == r.rank, (hvd.size(), hvd.rank())
    assert hvd.gloo_enabled(), "Horovod is not running on Gloo"
    total = r.args.warmup + r.args.iters
    one = tf.ones([1])

    def barrier():
        hvd.allreduce(one, op=hvd.Sum).numpy()

    keras = keras_module()  # Keras 2.13 (tf.keras) in Horovod's venv
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    x, y = data(tf, r.args.model, r.rank, LOCAL_BATCH)

    def run_case(case):
        kind, peer = case.split("/")
        if kind.startswith(("allreduce-grouped", "allreduce-pertensor")):
            hvd_api_allreduce(r, case, hvd, tf, barrier)
        elif kind == "step":
            step_case(r, case, tf, keras, hvd if peer == "horovod" else None, loss_fn, x, y, total, barrier)
        elif kind == "fit-keras2":
            import horovod.tensorflow.keras as hvdk
            fit_case(r, case, tf, keras, hvdk if peer == "horovod" else None, loss_fn, x, y, total, barrier)
        else:
            raise ValueError(case)

    return run_case, barrier


def single_runner(r: Rank):
    import tensorflow as tf
    keras = keras_module()
    total = r.args.warmup + r.args.iters
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    x, y = data(tf, r.args.model, r.rank, LOCAL_BATCH)

    def run_case(case):
        if case.split("/")[0] == "step":
            step_case(r, case, tf, keras, None, loss_fn, x, y, total)
        else:
            fit_case(r, case, tf, keras, None, loss_fn, x, y, total)

    return run_case, None


def rank_main(args):
    # A bound of its own, should the launcher be killed without reaping it.
    signal.alarm(args.total_timeout + 60)
    r = Rank(args.rank, args)
    cases = GROUPS[args.rank][2]
    if args.cases:
        cases = [c for c in cases if c in args.cases.split(",")]
    if args.rank in ("mwms", "rm-mwms"):
        run_case, barrier = mwms_runner(r, ours=args.rank == "rm-mwms")
    elif args.rank == HOROVOD_GROUP:
        run_case, barrier = horovod_runner(r)
    elif args.rank == "single":
        run_case, barrier = single_runner(r)
    else:
        run_case, barrier = ringmaster_runner(r)
    r.serve(run_case, cases, barrier)
    print(json.dumps({"group": args.rank, "rank": r.rank, "rounds": r.round, "done": True}), flush=True)
    # TensorFlow's collective runtime can hang at interpreter exit; the
    # results are written, so leave at once.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


# ================================================================= launcher


class Groups:
    """The groups' processes, kept from start to end; every one killed on
    the way out."""

    def __init__(self, args, out: Path, log):
        self.args, self.out, self.log = args, out, log
        self.procs: dict[str, list] = {}
        self.logs: list = []
        self.failed: dict[str, str] = {}

    def ranks(self, group):
        return GROUPS[group][0]

    def rank_cmd(self, group, first_round):
        cmd = [sys.executable, str(HERE), "--rank", group, "--out", str(self.out), "--iters", str(self.args.iters),
               "--warmup", str(self.args.warmup), "--model", self.args.model,
               "--total-timeout", str(self.args.total_timeout), "--launcher-pid", str(os.getpid()),
               "--first-round", str(first_round)]
        if self.args.cases:
            cmd += ["--cases", self.args.cases]
        return cmd

    def start(self, group, first_round=0):
        """Starts the group's ranks (their first round: first_round) and waits
        until each says it is ready (formed); False, with the reason in
        self.failed, if not. A port picked as free can be taken by another
        process before a rank binds it: then the group starts once more, on
        other ports."""
        if self.start_once(group, first_round) or group == HOROVOD_GROUP or not self.port_taken(group):
            return group not in self.failed
        print(f"bench_keras: group {group}: a port it picked was taken meanwhile; starting it again on others",
              file=self.log, flush=True)
        del self.failed[group]
        return self.start_once(group, first_round)

    def port_taken(self, group):
        logs = [self.out / f"log-{group}-{i}.txt" for i in range(self.ranks(group))]
        return any("address already in use" in f.read_text(errors="replace").lower() for f in logs if f.exists())

    def start_once(self, group, first_round):
        ranks, extra_env, _ = GROUPS[group]
        for f in [self.out / f"stop-{group}", *self.out.glob(f"ready-{group}-*")]:
            f.unlink(missing_ok=True)
        cmd = self.rank_cmd(group, first_round)
        if group == HOROVOD_GROUP:
            self.procs[group] = [self.start_horovod(group, cmd)]
        else:
            ports = free_ports(2 * ranks)
            tf_ports, agent_ports = ports[:ranks], ports[ranks:]
            cluster = {"worker": [f"127.0.0.1:{p}" for p in tf_ports]}
            self.procs[group] = []
            for i in range(ranks):
                env = dict(os.environ)
                for k in ("TF_CONFIG", "TF_USE_LEGACY_KERAS", "RINGMASTER_PORT"):
                    env.pop(k, None)
                env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
                env["CUDA_VISIBLE_DEVICES"] = ""
                env["PYTHONUNBUFFERED"] = "1"
                env.update(extra_env)
                if ranks > 1:
                    env["TF_CONFIG"] = json.dumps({"cluster": cluster, "task": {"type": "worker", "index": i},
                                                   "environment": "cloud"})
                    # one agent port per rank, none of them TensorFlow's (TF_CONFIG's)
                    env["RINGMASTER_PORT"] = ",".join(map(str, agent_ports))
                    env.setdefault("RINGMASTER_FORMATION_TIMEOUT_SECONDS", "120")
                    # A collective's deadline: the ranks of a group wait for
                    # each other between rounds only in files, never in one.
                    env.setdefault("RINGMASTER_TIMEOUT_SECONDS", str(self.args.group_timeout))
                lf = open(self.out / f"log-{group}-{i}.txt", "w")
                self.logs.append(lf)
                self.procs[group].append(subprocess.Popen(cmd, env=env, stdout=lf, stderr=subprocess.STDOUT,
                                                          start_new_session=True))
        return self.wait(group, [self.out / f"ready-{group}-{i}" for i in range(ranks)], "start")

    def start_horovod(self, group, cmd):
        """horovodrun -np 3 --gloo -H localhost:3 with Horovod's venv python:
        one process (its own session) that starts the 3 ranks, each through a
        middleman that ends its rank when horovodrun dies. Every rank's output
        in DIR/log-horovod/rank.N/, horovodrun's own in DIR/log-horovod-run.txt."""
        py = Path(self.args.horovod_python)
        env = dict(os.environ)
        for k in list(env):
            if k.startswith(("TF_CONFIG", "TF_USE_LEGACY_KERAS", "RINGMASTER_", "HOROVOD_", "VIRTUAL_ENV",
                             "PYTHONPATH")):
                env.pop(k)
        env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
        env["CUDA_VISIBLE_DEVICES"] = ""
        env["PYTHONUNBUFFERED"] = "1"
        env["PATH"] = f"{py.parent}:{env.get('PATH', '')}"
        hcmd = [str(py.parent / "horovodrun"), "-np", str(N), "--gloo", "-H", f"localhost:{N}",
                "--start-timeout", "120", "--output-filename", str(self.out / f"log-{group}"), str(py)] + cmd[1:]
        lf = open(self.out / f"log-{group}-run.txt", "w")
        self.logs.append(lf)
        print("$ " + " ".join(hcmd), file=lf, flush=True)
        return subprocess.Popen(hcmd, env=env, stdout=lf, stderr=subprocess.STDOUT, start_new_session=True,
                                cwd=str(self.out))

    def wait(self, group, files, what):
        """Until every file exists; fails the group (killed) if one of its
        processes exits first or the deadline passes."""
        deadline = time.time() + self.args.group_timeout
        while not all(f.exists() for f in files):
            codes = [p.poll() for p in self.procs[group]]
            if any(c is not None for c in codes):
                return self.fail(group, f"{what}: a process exited ({codes}) before writing "
                                 f"{', '.join(f.name for f in files if not f.exists())}")
            if time.time() > deadline:
                return self.fail(group, f"{what}: timed out after {self.args.group_timeout} s")
            time.sleep(0.05)
        return True

    def run_round(self, group, k):
        """Tells the group to run round k; its ranks' results, or [] if it
        failed."""
        files = [self.out / f"rank-{group}-{i}-r{k}.json" for i in range(self.ranks(group))]
        (self.out / f"go-{group}-{k}").touch()
        if not self.wait(group, files, f"round {k}"):
            return []
        results = []
        for f in files:
            for res in json.loads(f.read_text()):
                res["group"] = group
                results.append(res)
        return results

    def fail(self, group, reason):
        self.failed[group] = reason
        self.kill(group)
        print(f"bench_keras: group {group}: FAILED: {reason}", file=self.log, flush=True)
        if group == HOROVOD_GROUP:
            tails = [("horovodrun", self.out / f"log-{group}-run.txt")]
        else:
            tails = [(f"rank {i}", self.out / f"log-{group}-{i}.txt") for i in range(self.ranks(group))]
        for name, f in tails:
            tail = f.read_text(errors="replace")[-3000:] if f.exists() else "(no log)"
            print(f"--- {group} {name} (tail) ---\n{tail}", file=self.log, flush=True)
        return False

    def kill(self, group):
        for p in self.procs.get(group, []):
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except OSError:
                    pass
            try:
                p.wait(timeout=5)
            except Exception:
                pass

    def end(self, group):
        """Tells one group's ranks to leave, then kills what is left of it."""
        (self.out / f"stop-{group}").touch()
        self.settle(self.procs.get(group, []))
        self.kill(group)

    def stop(self):
        """Tells every rank to leave, gives them a moment, then kills what is
        left."""
        (self.out / "stop").touch()
        self.settle([p for ps in self.procs.values() for p in ps])
        for g in list(self.procs):
            self.kill(g)
        for lf in self.logs:
            lf.close()

    @staticmethod
    def settle(procs, seconds=10):
        end = time.time() + seconds
        while time.time() < end and any(p.poll() is None for p in procs):
            time.sleep(0.1)


def machine():
    cpu = "unknown CPU"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{os.cpu_count()} vCPU ({cpu}), Linux {os.uname().release}"


def load():
    return os.getloadavg()[0]


def clean(out: Path):
    for pattern in ("go-*", "ready-*", "rank-*.json", "stop", "stop-*", ".*.tmp"):
        for f in out.glob(pattern):
            f.unlink()


def launcher_main(args):
    import tensorflow as tf  # noqa: F401  (version only; cheap next to the groups)
    out = Path(args.out).resolve()  # absolute: horovodrun's ranks run in another directory
    out.mkdir(parents=True, exist_ok=True)
    clean(out)
    groups_arg = args.groups.split(",")
    unknown = [g for g in groups_arg if g not in GROUPS]
    if unknown:
        sys.exit(f"bench_keras: unknown group(s) {unknown}; groups: {', '.join(GROUPS)}")
    horovod_skipped = None
    if HOROVOD_GROUP in groups_arg and not args.horovod_python:
        groups_arg.remove(HOROVOD_GROUP)
        horovod_skipped = args.horovod_unavailable or "no --horovod-python given"
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    t0 = time.time()
    gs = Groups(args, out, sys.stderr)
    signal.signal(signal.SIGTERM, lambda *_: (gs.stop(), sys.exit(143)))
    results, round_log = [], []
    try:
        keep = {g for g in args.keep.split(",") if g} - NEVER_KEPT
        for g in groups_arg:
            if g not in keep:
                continue
            ts = time.time()
            ok = gs.start(g)
            print(f"bench_keras: group {g} ({GROUPS[g][0]} ranks) {'ready' if ok else 'failed'} in "
                  f"{time.time() - ts:.0f} s, load {load():.1f}", file=sys.stderr, flush=True)
        start_s = time.time() - t0
        for k in range(args.rounds):
            order = [g for g in rd.round_order(groups_arg, k) if g not in gs.failed]
            l0, ts, per_group = load(), time.time(), []
            for g in order:
                tg = time.time()
                if g not in keep:
                    if not gs.start(g, first_round=k):
                        per_group.append(f"{g} failed to start")
                        continue
                    started_s = time.time() - tg
                got = gs.run_round(g, k)
                if g not in keep:
                    gs.end(g)
                results += got
                per_group.append(f"{g} {time.time() - tg:.0f} s" +
                                 (f" ({started_s:.0f} s of it to start)" if g not in keep else ""))
            round_log.append((k, order, l0, load(), time.time() - ts, per_group))
            print(f"bench_keras: round {k}: {time.time() - ts:.0f} s ({', '.join(per_group)}), load {l0:.1f} -> "
                  f"{load():.1f}", file=sys.stderr, flush=True)
    finally:
        gs.stop()
    return report(args, out, results, round_log, gs.failed, horovod_skipped, started, start_s, time.time() - t0,
                  tf.__version__)


def report(args, out, results, round_log, failed, horovod_skipped, started, start_s, total_s, tf_version):
    """tables.md, ratios.csv, ratios.png, summary.csv and results.csv from
    the rounds' results; 1 when a result was wrong or a group failed."""
    w, units = MODELS[args.model]
    dims = [w] + units
    params = sum(a * b + b for a, b in zip(dims, dims[1:]))
    with open(out / "results.csv", "w", newline="") as f:
        wr = csv.writer(f)
        wr.writerow(["group", "case", "rank", "size", "round", "iteration", "warmup", "time_ms"])
        for res in results:
            for i, t in enumerate(res["times_s"]):
                wr.writerow([res["group"], res["case"], res["rank"], res["size"], res["round"], i,
                             int(i < args.warmup), f"{t * 1e3:.3f}"])
    medians = rd.round_medians(results, args.warmup)
    figures = ratios(horovod=horovod_skipped is None)
    ratio_lines, ratio_rows = rd.ratio_table(figures, medians, args.rounds)
    with open(out / "ratios.csv", "w", newline="") as f:
        wr = csv.writer(f)
        wr.writerow(["section", "short", "ratio", "round", "value", "goal"])
        wr.writerows(ratio_rows)
    with open(out / "summary.csv", "w", newline="") as f:
        wr = csv.writer(f)
        wr.writerow(["section", "ratio", "median", "min", "max", "spread_pct", "rounds", "goal", "verdict"])
        for ratio in figures:
            s = rd.summarize(rd.per_round(ratio, medians, args.rounds))
            wr.writerow([ratio.section, ratio.name] + (["", "", "", "", 0] if s is None else
                        [f"{s.median:.4f}", f"{s.low:.4f}", f"{s.high:.4f}", f"{s.spread * 100:.1f}", s.n]) +
                        [rd.goal_text(ratio.goal), rd.verdict(ratio.goal, s).strip("*")])
    hv_tf = next((r.get("tf_version") for r in results if r["group"] == HOROVOD_GROUP), None)
    lines = [f"Command: `{args.command}` ({started}; {params:,} float32 parameters in 8 gradients, "
             f"{params * 4 / 1e6:.1f} MB; N = {N} processes, local batch {LOCAL_BATCH}; {args.rounds} rounds of "
             f"{args.warmup} warm-up + {args.iters} timed iterations per case; rank 0's times)",
             "",
             f"Machine: {machine()}. TensorFlow {tf_version} (Ringmaster, MWMS), "
             f"{hv_tf or '2.13.1'} (Horovod 0.28.1). Start-up of the kept groups {start_s:.0f} s, whole run "
             f"{total_s:.0f} s.",
             "",
             "Each ratio is taken per round (rK) between groups that ran back to back in that round; median "
             "and min – max over the rounds, ± = half the range over the median. Goals are judged on the "
             "median. Peer / Ringmaster > 1: Ringmaster is faster; a cost (ours / reference) <= 1.1 is within "
             "10 %."]
    lines += ratio_lines
    if horovod_skipped:
        lines += ["", f"horovod: not measured: {horovod_skipped}"]
    lines += ["", "**Rounds** (load: the 1-minute load average at the start and end of the round)", "",
              "| round | order | seconds | load | per group |", "| --- | --- | ---: | --- | --- |"]
    for k, order, l0, l1, secs, per_group in round_log:
        lines.append(f"| r{k} | {', '.join(order)} | {secs:.0f} | {l0:.1f} -> {l1:.1f} | {'; '.join(per_group)} |")
    case_keys = []
    for g in GROUPS:
        for c in GROUPS[g][2]:
            if any(k[0] == g and k[1] == c for k in medians):
                case_keys.append((c, (g, c)))
    lines += ["", "**Each case's median per-iteration time (ms), per round**", ""]
    lines += rd.case_table(case_keys, medians, args.rounds)
    bad = sorted({f"{r['group']}/{r['case']} rank {r['rank']} round {r['round']}" for r in results
                  if r.get("correct") is False})
    if bad:
        lines += ["", "WRONG RESULTS: " + ", ".join(bad)]
    if failed:
        lines += ["", "FAILED groups (see the logs in the out dir): " +
                  "; ".join(f"{g}: {why}" for g, why in failed.items())]
    text = "\n".join(lines) + "\n"
    (out / "tables.md").write_text(text)
    print(text)
    try:
        from plot import plot_csv
        plot_csv(out / "ratios.csv", x="short", y="value", out=out / "ratios.png", group="round",
                 facet="section", series_label="round {round}", hline=1,
                 title=f"Keras model, N = {N}: each ratio per round", xlabel="", ylabel="ratio")
    except Exception as e:  # the tables stand without the plot
        print(f"bench_keras: no plot ({type(e).__name__}: {e})", file=sys.stderr)
    print(f"bench_keras: wrote {out}/tables.md, ratios.csv, ratios.png, summary.csv, results.csv", file=sys.stderr)
    return 1 if bad or failed else 0


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", default="build-bench/keras")
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--iters", type=int, default=6, help="timed iterations per case and round")
    p.add_argument("--warmup", type=int, default=2, help="warm-up iterations per case and round (dropped)")
    p.add_argument("--model", choices=sorted(MODELS), default="full")
    # The default order puts the groups of each ratio next to each other
    # (Keras 3 | MWMS | our strategy | Ringmaster's API | Horovod), so that
    # a ratio compares figures taken seconds apart, not minutes.
    p.add_argument("--groups", default="rm-keras3,mwms,rm-mwms,rm-tf_keras,horovod,single",
                   help="groups, in a round's order (default: all)")
    p.add_argument("--horovod-python", default="",
                   help="the python of bench/tensorflow/horovod-venv (the horovod group needs it)")
    p.add_argument("--horovod-unavailable", default="",
                   help="why there is no Horovod venv (printed in the table instead of its rows)")
    p.add_argument("--cases", default="", help="only these cases (comma-separated, e.g. step/mwms)")
    p.add_argument("--group-timeout", type=int, default=600,
                   help="seconds for one group to start, and for one group's round")
    p.add_argument("--total-timeout", type=int, default=5400,
                   help="a rank's own bound on its life, should the launcher vanish")
    p.add_argument("--keep", default="",
                   help="groups whose ranks live through all rounds instead of starting for each turn (horovod "
                        "never: its ranks do not wait quietly); each rank holds 2-3.7 GB after a few rounds here")
    p.add_argument("--command", default="bench/tensorflow/bench_keras.py")
    p.add_argument("--rank", default="", help=argparse.SUPPRESS)
    p.add_argument("--launcher-pid", type=int, default=0, help=argparse.SUPPRESS)
    p.add_argument("--first-round", type=int, default=0, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.rank:
        rank_main(args)
    else:
        sys.exit(launcher_main(args))


if __name__ == "__main__":
    main()
