"""Ringmaster against MultiWorkerMirroredStrategy and Horovod 0.28.1 on a Keras
model's gradients and training step: N = 3 processes on 127.0.0.1, side by
side, one run.

    bench_keras.py [--out DIR] [--iters 20] [--warmup 3] [--model full|small]
                   [--horovod-python PY | --horovod-unavailable REASON]
    bench_keras.py --rank GROUP ...        (one rank; started by the launcher)

Launcher mode (the default) starts, one group after another, 3 ranks of this
script with their TF_CONFIG (worker 0..2, TensorFlow's ports) and
RINGMASTER_PORT (one agent port per rank, distinct from TF_CONFIG's), waits
for them with a deadline (all of a group's processes are killed when it
passes, and on any exit of the launcher), then prints a table and writes
DIR/results.csv (every rank's every iteration), DIR/summary.csv and
DIR/tables.md.

The horovod group runs Horovod 0.28.1 alone, in its own venv
(bench/tensorflow/horovod-venv: TensorFlow 2.13.1 and Keras 2.13, the newest
Horovod 0.28.1 builds against; the other groups run in scripts/tf-venv's
TensorFlow 2.20), under `horovodrun -np 3 --gloo -H localhost:3` with that
venv's python (--horovod-python); the same deadline, and horovodrun's
process group killed when it passes (horovodrun's per-rank middlemen then
end the ranks). Without --horovod-python the table says why it was not
measured (--horovod-unavailable).

The model (tf_keras, or Keras 3 for the Keras 3 fit): Dense 1024 -> 4096 ->
4096 -> 1024 -> 10, 8 gradients, 25,185,290 float32 (100.7 MB); a local
batch of 32 (global 96), plain SGD. Cases, each timed per iteration on every
rank (rank 0's in the table), `--warmup` iterations dropped:

  allreduce  the 8 gradient-shaped tensors summed across the ranks, inside a
             tf.function: rm.all_reduce("sum", grads) against
             strategy.run(fn) with get_replica_context().all_reduce(SUM,
             grads, CommunicationOptions(RING)); also Ringmaster eagerly.
             Checked after timing: every rank's (rank + 1) sums to 6.
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
             (what 3 ranks on this machine cost without communication) and
             one process alone (size 1).

Against Horovod, the same code on both sides (ringmaster.tensorflow is
Horovod-named): grouped_allreduce(grads, op=Sum) and per-tensor
allreduce(g, op=Sum) inside a tf.function (Horovod's DistributedGradientTape
reduces per tensor and fuses in its background thread), the custom-loop step
with DistributedGradientTape (default op Average), model.fit with Keras 2
(tf_keras 2.20 here, Keras 2.13 in Horovod's venv) and DistributedOptimizer +
BroadcastGlobalVariablesCallback; the step's and fit's compute floor on
Horovod's TensorFlow too (3 ranks, no all-reduce).
"""
from __future__ import annotations

import argparse
import csv
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
from ports import free_ports  # noqa: E402

N = 3
LOCAL_BATCH = 32
MODELS = {
    # units of the Dense layers after a 1024-wide input
    "full": (1024, [4096, 4096, 1024, 10]),   # 25,185,290 parameters
    "small": (256, [512, 512, 256, 10]),      # 526,090 parameters (smoke test)
}

# group name -> (ranks, env additions, cases in order)
GROUPS = {
    "rm-tf_keras": (N, {"TF_USE_LEGACY_KERAS": "1"},
                    ["allreduce/ringmaster", "allreduce-eager/ringmaster", "allreduce-engine/ringmaster",
                     "allreduce-grouped/ringmaster",
                     "allreduce-pertensor/ringmaster", "step/ringmaster", "step/none",
                     "fit-tf_keras/ringmaster", "fit-tf_keras/none"]),
    "mwms": (N, {"TF_USE_LEGACY_KERAS": "1"}, ["allreduce/mwms", "step/mwms", "fit-tf_keras/mwms"]),
    # The same code as "mwms" under ringmaster.tensorflow.MultiWorkerMirroredStrategy
    "rm-mwms": (N, {"TF_USE_LEGACY_KERAS": "1"}, ["allreduce/rm-mwms", "step/rm-mwms", "fit-tf_keras/rm-mwms"]),
    "rm-keras3": (N, {}, ["fit-keras3/ringmaster", "fit-keras3/none"]),
    "single": (1, {"TF_USE_LEGACY_KERAS": "1"}, ["step/none", "fit-tf_keras/none"]),
    # Horovod's venv (Keras 2.13 is tf.keras there: no TF_USE_LEGACY_KERAS)
    "horovod": (N, {}, ["allreduce-grouped/horovod", "allreduce-pertensor/horovod", "step/horovod", "step/none",
                        "fit-keras2/horovod", "fit-keras2/none"]),
}
HOROVOD_GROUP = "horovod"


# ===================================================================== rank


def percentile(sorted_xs, q):
    if not sorted_xs:
        return float("nan")
    k = (len(sorted_xs) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(sorted_xs) - 1)
    return sorted_xs[lo] + (sorted_xs[hi] - sorted_xs[lo]) * (k - lo)


class Rank:
    def __init__(self, group, args):
        self.group, self.args = group, args
        if group == HOROVOD_GROUP:
            self.rank = int(os.environ["HOROVOD_RANK"])  # set by horovodrun
        else:
            self.rank = int(json.loads(os.environ.get("TF_CONFIG", '{"task":{"index":0}}'))["task"]["index"])
        self.size = GROUPS[group][0]
        self.results = []

    def record(self, case, times):
        import tensorflow as tf
        self.results.append({"case": case, "rank": self.rank, "size": self.size, "times_s": times,
                             "tf_version": tf.__version__})
        print(f"[{self.group} rank {self.rank}] {case}: median {statistics.median(times[self.args.warmup:]) * 1e3:.1f} ms",
              file=sys.stderr, flush=True)

    def dump(self):
        path = Path(self.args.out) / f"rank-{self.group}-{self.rank}.json"
        path.write_text(json.dumps(self.results))


def timed(fn, total, barrier=None):
    """Calls fn() `total` times back to back; fn must block until its step is
    done. Returns every call's wall time in seconds."""
    if barrier:
        barrier()
    times = []
    for _ in range(total):
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


def hvd_api_allreduce(r: Rank, case, hvd, tf, keras, barrier):
    """allreduce-grouped / allreduce-pertensor with a Horovod-named module
    (horovod.tensorflow or ringmaster.tensorflow): the same code on both."""
    kind = case.split("/")[0]
    total = r.args.warmup + r.args.iters
    model = build_model(keras, r.args.model)
    shapes = [v.shape for v in model.trainable_variables]
    grads = [tf.random.normal(s, seed=r.rank) for s in shapes]

    if kind == "allreduce-grouped":
        @tf.function
        def reduce(ts):
            return hvd.grouped_allreduce(ts, op=hvd.Sum)
    else:
        @tf.function
        def reduce(ts):
            return [hvd.allreduce(t, op=hvd.Sum) for t in ts]

    def call():
        out = reduce(grads)
        out[-1].numpy()

    r.record(case, timed(call, total, barrier))
    fills = [tf.fill(s, float(r.rank + 1)) for s in shapes]
    got = reduce(fills)
    r.results[-1]["correct"] = all(bool(tf.reduce_all(g == float(N * (N + 1) // 2))) for g in got)


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


def run_ringmaster(r: Rank, cases):
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

    for case in cases:
        kind, peer = case.split("/")
        if kind in ("allreduce-grouped", "allreduce-pertensor"):
            hvd_api_allreduce(r, case, rm, tf, keras, barrier)
        elif kind in ("allreduce", "allreduce-eager"):
            model = build_model(keras, r.args.model)
            shapes = [v.shape for v in model.trainable_variables]
            grads = [tf.random.normal(s, seed=r.rank) for s in shapes]

            if kind == "allreduce":
                @tf.function
                def reduce(ts):
                    return rm.all_reduce("sum", ts)
            else:
                def reduce(ts):
                    return rm.all_reduce("sum", ts)

            def call():
                out = reduce(grads)
                out[-1].numpy()

            r.record(case, timed(call, total, barrier))
            fills = [tf.fill(s, float(r.rank + 1)) for s in shapes]
            got = reduce(fills)
            ok = all(bool(tf.reduce_all(g == float(N * (N + 1) // 2))) for g in got)
            r.results[-1]["correct"] = ok
            del model, grads, fills, got
        elif kind == "allreduce-engine":
            # The engine alone on the same 8 buffers (NumPy, in place, one
            # call): what the op's all-reduce is measured against.
            import numpy as np
            import ringmaster
            comm = ringmaster.default_communicator()
            model = build_model(keras, r.args.model)
            shapes = [tuple(v.shape) for v in model.trainable_variables]
            arrays = [np.random.default_rng(r.rank).standard_normal(s).astype(np.float32) for s in shapes]
            r.record(case, timed(lambda: comm.all_reduce(arrays, "sum"), total, barrier))
            fills = [np.full(s, float(r.rank + 1), np.float32) for s in shapes]
            comm.all_reduce(fills, "sum")
            r.results[-1]["correct"] = all(bool((f == float(N * (N + 1) // 2)).all()) for f in fills)
            del model, arrays, fills
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
    barrier()


def run_mwms(r: Rank, cases, ours: bool = False):
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

    for case in cases:
        kind, _ = case.split("/")
        if kind == "allreduce":
            with strategy.scope():
                model = build_model(keras, r.args.model)
            shapes = [v.shape for v in model.trainable_variables]
            grads = [tf.random.normal(s, seed=r.rank) for s in shapes]

            @tf.function
            def reduce(ts):
                def fn(*vs):
                    # identity: puts the inputs on the replica's device
                    return tf.distribute.get_replica_context().all_reduce(
                        SUM, [tf.identity(v) for v in vs], options=opts)
                return strategy.run(fn, args=tuple(ts))

            def call():
                out = reduce(grads)
                out[-1].numpy()

            r.record(case, timed(call, total, barrier))
            fills = [tf.fill(s, float(r.rank + 1)) for s in shapes]
            got = reduce(fills)
            ok = all(bool(tf.reduce_all(g == float(N * (N + 1) // 2))) for g in got)
            r.results[-1]["correct"] = ok
            del model, grads, fills, got
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
            del model, opt, step
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
            del model
        else:
            raise ValueError(case)
    barrier()


def run_horovod(r: Rank, cases):
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

    for case in cases:
        kind, peer = case.split("/")
        if kind in ("allreduce-grouped", "allreduce-pertensor"):
            hvd_api_allreduce(r, case, hvd, tf, keras, barrier)
        elif kind == "step":
            step_case(r, case, tf, keras, hvd if peer == "horovod" else None, loss_fn, x, y, total, barrier)
        elif kind == "fit-keras2":
            import horovod.tensorflow.keras as hvdk
            fit_case(r, case, tf, keras, hvdk if peer == "horovod" else None, loss_fn, x, y, total, barrier)
        else:
            raise ValueError(case)
    barrier()


def run_single(r: Rank, cases):
    import tensorflow as tf
    keras = keras_module()
    total = r.args.warmup + r.args.iters
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    x, y = data(tf, r.args.model, r.rank, LOCAL_BATCH)
    for case in cases:
        kind, _ = case.split("/")
        if kind == "step":
            step_case(r, case, tf, keras, None, loss_fn, x, y, total)
        else:
            fit_case(r, case, tf, keras, None, loss_fn, x, y, total)


def rank_main(args):
    # A bound of its own, should the launcher be killed without reaping it.
    signal.alarm(args.group_timeout + 60)
    r = Rank(args.rank, args)
    cases = GROUPS[args.rank][2]
    if args.cases:
        cases = [c for c in cases if c in args.cases.split(",")]
    if args.rank in ("mwms", "rm-mwms"):
        run_mwms(r, cases, ours=args.rank == "rm-mwms")
    elif args.rank == HOROVOD_GROUP:
        run_horovod(r, cases)
    elif args.rank == "single":
        run_single(r, cases)
    else:
        run_ringmaster(r, cases)
    r.dump()
    print(json.dumps({"group": args.rank, "rank": r.rank, "done": True}), flush=True)
    # TensorFlow's collective runtime can hang at interpreter exit; the
    # results are written, so leave at once.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


# ================================================================= launcher


_children: list = []


def kill_children():
    for p in _children:
        if p.poll() is None:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except OSError:
                pass
        try:
            p.wait(timeout=5)
        except Exception:
            pass
    _children.clear()


def start_horovod(group, args, out: Path, cmd):
    """horovodrun -np 3 --gloo -H localhost:3 with Horovod's venv python: one
    process (its own session) that starts the 3 ranks, each through a
    middleman that ends its rank when horovodrun dies. Every rank's output in
    DIR/log-horovod/rank.N/, horovodrun's own in DIR/log-horovod-run.txt."""
    py = Path(args.horovod_python)
    horovodrun = py.parent / "horovodrun"
    logdir = out / f"log-{group}"
    env = dict(os.environ)
    for k in list(env):
        if k.startswith(("TF_CONFIG", "TF_USE_LEGACY_KERAS", "RINGMASTER_", "HOROVOD_", "VIRTUAL_ENV", "PYTHONPATH")):
            env.pop(k)
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    env["CUDA_VISIBLE_DEVICES"] = ""
    env["PYTHONUNBUFFERED"] = "1"
    env["PATH"] = f"{py.parent}:{env.get('PATH', '')}"
    hcmd = [str(horovodrun), "-np", str(N), "--gloo", "-H", f"localhost:{N}", "--start-timeout", "120",
            "--output-filename", str(logdir), str(py)] + cmd[1:]
    lf = open(out / f"log-{group}-run.txt", "w")
    print("$ " + " ".join(hcmd), file=lf, flush=True)
    p = subprocess.Popen(hcmd, env=env, stdout=lf, stderr=subprocess.STDOUT, start_new_session=True, cwd=str(out))
    _children.append(p)
    return [lf]


def run_group(group, args, out: Path, log):
    ranks, extra_env, _ = GROUPS[group]
    ports = free_ports(2 * ranks)
    tf_ports, agent_ports = ports[:ranks], ports[ranks:]
    cluster = {"worker": [f"127.0.0.1:{p}" for p in tf_ports]}
    for f in out.glob(f"rank-{group}-*.json"):
        f.unlink()
    cmd = [sys.executable, str(HERE), "--rank", group, "--out", str(out), "--iters", str(args.iters),
           "--warmup", str(args.warmup), "--model", args.model]
    if args.cases:
        cmd += ["--cases", args.cases]
    logs = []
    t_start = time.time()
    if group == HOROVOD_GROUP:
        logs = start_horovod(group, args, out, cmd)
    for i in range(ranks if group != HOROVOD_GROUP else 0):
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
            env.setdefault("RINGMASTER_TIMEOUT_SECONDS", str(args.group_timeout))
        lf = open(out / f"log-{group}-{i}.txt", "w")
        logs.append(lf)
        p = subprocess.Popen(cmd, env=env, stdout=lf, stderr=subprocess.STDOUT, start_new_session=True)
        _children.append(p)
    deadline = time.time() + args.group_timeout
    failed = None
    try:
        while True:
            codes = [p.poll() for p in _children]
            if any(c not in (None, 0) for c in codes):
                failed = f"a rank exited with {codes}"
                break
            if all(c == 0 for c in codes):
                break
            if time.time() > deadline:
                failed = f"timed out after {args.group_timeout} s"
                break
            time.sleep(0.5)
    finally:
        kill_children()
        for lf in logs:
            lf.close()
    print(f"bench_keras: group {group}: {time.time() - t_start:.0f} s{'; FAILED: ' + failed if failed else ''}",
          file=log, flush=True)
    if failed:
        if group == HOROVOD_GROUP:
            tails = [("horovodrun", out / f"log-{group}-run.txt")]
        else:
            tails = [(f"rank {i}", out / f"log-{group}-{i}.txt") for i in range(ranks)]
        for name, f in tails:
            tail = f.read_text(errors="replace")[-3000:] if f.exists() else "(no log)"
            print(f"--- {group} {name} (tail) ---\n{tail}", file=log, flush=True)
        return []
    results = []
    for i in range(ranks):
        f = out / f"rank-{group}-{i}.json"
        if not f.exists():
            print(f"bench_keras: group {group}: FAILED: rank {i} wrote no {f.name}", file=log, flush=True)
            return []
        results += json.loads(f.read_text())
    for res in results:
        res["group"] = group
    return results


def stats(times_ms):
    s = sorted(times_ms)
    return statistics.median(s), percentile(s, 0.1), percentile(s, 0.9)


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
    return " / ".join(f"{x:.2f}" for x in os.getloadavg())


def launcher_main(args):
    import tensorflow as tf  # noqa: F401  (version only; cheap next to the groups)
    out = Path(args.out).resolve()  # absolute: horovodrun's ranks run in another directory
    out.mkdir(parents=True, exist_ok=True)
    signal.signal(signal.SIGTERM, lambda *_: (kill_children(), sys.exit(143)))
    groups = args.groups.split(",")
    horovod_skipped = None
    if HOROVOD_GROUP in groups and not args.horovod_python:
        groups.remove(HOROVOD_GROUP)
        horovod_skipped = args.horovod_unavailable or "no --horovod-python given"
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    load_start = load()
    results = []
    try:
        for g in groups:
            print(f"bench_keras: group {g} ({GROUPS[g][0]} ranks), load {load()}", file=sys.stderr, flush=True)
            results += run_group(g, args, out, sys.stderr)
    finally:
        kill_children()
    load_end = load()

    w, units = MODELS[args.model]
    dims = [w] + units
    params = sum(a * b + b for a, b in zip(dims, dims[1:]))
    with open(out / "results.csv", "w", newline="") as f:
        wr = csv.writer(f)
        wr.writerow(["group", "case", "rank", "size", "iteration", "warmup", "time_ms"])
        for res in results:
            for i, t in enumerate(res["times_s"]):
                wr.writerow([res["group"], res["case"], res["rank"], res["size"], i, int(i < args.warmup),
                             f"{t * 1e3:.3f}"])

    def row(group, case, rank=0):
        for res in results:
            if res["group"] == group and res["case"] == case and res["rank"] == rank:
                t = [x * 1e3 for x in res["times_s"][args.warmup:]]
                return stats(t) + (len(t), res.get("correct"))
        return None

    def fmt(s):
        return "—" if s is None else f"{s[0]:.1f} ({s[1]:.1f} / {s[2]:.1f})"

    def ratio(a, b):
        return "—" if a is None or b is None else f"{a[0] / b[0]:.2f}x"

    summary = []
    lines = [f"Command: `{args.command}` ({started}, {params:,} float32 parameters in 8 gradients, "
             f"{params * 4 / 1e6:.1f} MB; N = {N} processes, local batch {LOCAL_BATCH}, "
             f"{args.iters} iterations after {args.warmup} warm-up, rank 0's per-iteration times)",
             "",
             f"Machine: {machine()}; load average (1 / 5 / 15 min) {load_start} at the start, {load_end} at the end. "
             f"TensorFlow {tf.__version__}.",
             "",
             "Each cell: median (p10 / p90) of the per-iteration time in ms. ratio = MWMS median / Ringmaster median "
             "(> 1: Ringmaster is faster).",
             "",
             "| case | Ringmaster | MWMS (RING) | MWMS / Ringmaster | goal |",
             "| --- | ---: | ---: | ---: | --- |"]
    pairs = [
        ("all-reduce of the gradients (tf.function)", ("rm-tf_keras", "allreduce/ringmaster"),
         ("mwms", "allreduce/mwms"), 5.0),
        ("all-reduce, Ringmaster eager", ("rm-tf_keras", "allreduce-eager/ringmaster"),
         ("mwms", "allreduce/mwms"), 5.0),
        ("training step, custom loop (tf.function)", ("rm-tf_keras", "step/ringmaster"),
         ("mwms", "step/mwms"), 2.0),
        ("model.fit step, tf_keras both", ("rm-tf_keras", "fit-tf_keras/ringmaster"),
         ("mwms", "fit-tf_keras/mwms"), 2.0),
        ("model.fit step, Keras 3 (Ringmaster) vs tf_keras (MWMS)", ("rm-keras3", "fit-keras3/ringmaster"),
         ("mwms", "fit-tf_keras/mwms"), 2.0),
    ]
    for name, a, b, goal in pairs:
        ra, rb = row(*a), row(*b)
        met = "—" if ra is None or rb is None else ("met" if rb[0] / ra[0] >= goal else "**not met**")
        lines.append(f"| {name} | {fmt(ra)} | {fmt(rb)} | {ratio(rb, ra)} | >= {goal:.0f}x: {met} |")
        summary.append([name, "ringmaster", *(ra[:3] if ra else ["", "", ""]), "", ""])
        summary.append([name, "mwms", *(rb[:3] if rb else ["", "", ""]), ratio(rb, ra), f">= {goal:.0f}x"])
    # ringmaster.tensorflow.MultiWorkerMirroredStrategy: the same code as MWMS's
    # rows, only the constructor differs (its goals: >= 2x TensorFlow's
    # strategy, within 1.1x of the same step with DistributedGradientTape).
    lines += ["", "MultiWorkerMirroredStrategy's code unchanged but for its constructor "
              "(`ringmaster.tensorflow.MultiWorkerMirroredStrategy`): against TensorFlow's strategy (ratio = "
              "TensorFlow's median / ours) and against the same step written with Ringmaster's "
              "DistributedGradientTape / DistributedOptimizer (ratio = ours / theirs):", "",
              "| case | ours | TensorFlow's MWMS | MWMS / ours | goal | Ringmaster API | ours / API | goal |",
              "| --- | ---: | ---: | ---: | --- | ---: | ---: | --- |"]
    for name, ours_key, tf_key, api_key in [
            ("all-reduce of the gradients (tf.function)", "allreduce/rm-mwms", "allreduce/mwms",
             ("rm-tf_keras", "allreduce/ringmaster")),
            ("training step, custom loop (tf.function)", "step/rm-mwms", "step/mwms",
             ("rm-tf_keras", "step/ringmaster")),
            ("model.fit step, tf_keras", "fit-tf_keras/rm-mwms", "fit-tf_keras/mwms",
             ("rm-tf_keras", "fit-tf_keras/ringmaster"))]:
        ro, rt, ra = row("rm-mwms", ours_key), row("mwms", tf_key), row(*api_key)
        met2 = "—" if ro is None or rt is None else ("met" if rt[0] / ro[0] >= 2.0 else "**not met**")
        met11 = "—" if ro is None or ra is None else ("met" if ro[0] / ra[0] <= 1.1 else "**not met**")
        lines.append(f"| {name} | {fmt(ro)} | {fmt(rt)} | {ratio(rt, ro)} | >= 2x: {met2} | {fmt(ra)} | "
                     f"{ratio(ro, ra)} | <= 1.1x: {met11} |")
        summary.append([name + " (our strategy)", "rm-mwms", *(ro[:3] if ro else ["", "", ""]), "", ""])
        summary.append([name + " (our strategy)", "mwms", *(rt[:3] if rt else ["", "", ""]), ratio(rt, ro),
                        ">= 2x"])
    # The op against the engine alone on the same 8 buffers (goal: the op within 1.2x).
    engine = row("rm-tf_keras", "allreduce-engine/ringmaster")
    lines += ["", "The op against the engine alone on the same 8 buffers (NumPy arrays of the gradients' shapes, "
              "in place, one call: `ringmaster.default_communicator().all_reduce(arrays, \"sum\")`); "
              "ratio = op median / engine median:", "",
              "| case | median (p10 / p90) | op / engine | goal |", "| --- | ---: | ---: | --- |",
              f"| the engine alone | {fmt(engine)} | | |"]
    for name, key in [("the op, tf.function", ("rm-tf_keras", "allreduce/ringmaster")),
                      ("the op, eager", ("rm-tf_keras", "allreduce-eager/ringmaster"))]:
        op = row(*key)
        met = "—" if op is None or engine is None else ("met" if op[0] / engine[0] <= 1.2 else "**not met**")
        lines.append(f"| {name} | {fmt(op)} | {ratio(op, engine)} | <= 1.2x: {met} |")
        summary.append([name + " vs the engine alone", "ringmaster", *(op[:3] if op else ["", "", ""]),
                        ratio(op, engine), "<= 1.2x"])
    summary.append(["the engine alone, same 8 buffers", "ringmaster", *(engine[:3] if engine else ["", "", ""]),
                    "", ""])
    lines += ["", "Compute without any all-reduce (the floor of a step; the same model, batch and optimizer):", "",
              "| case | 3 ranks at once, no all-reduce | 1 process alone | Ringmaster step | MWMS step |",
              "| --- | ---: | ---: | ---: | ---: |"]
    for name, k3, k1, rmk, mwk in [
            ("custom loop step", ("rm-tf_keras", "step/none"), ("single", "step/none"),
             ("rm-tf_keras", "step/ringmaster"), ("mwms", "step/mwms")),
            ("model.fit step, tf_keras", ("rm-tf_keras", "fit-tf_keras/none"), ("single", "fit-tf_keras/none"),
             ("rm-tf_keras", "fit-tf_keras/ringmaster"), ("mwms", "fit-tf_keras/mwms")),
            ("model.fit step, Keras 3", ("rm-keras3", "fit-keras3/none"), None,
             ("rm-keras3", "fit-keras3/ringmaster"), None)]:
        cells = [row(*k) if k else None for k in (k3, k1, rmk, mwk)]
        lines.append(f"| {name} | " + " | ".join(fmt(c) for c in cells) + " |")
        summary.append([name + " (compute, 3 ranks)", "none", *(cells[0][:3] if cells[0] else ["", "", ""]), "", ""])
        summary.append([name + " (compute, 1 process)", "none", *(cells[1][:3] if cells[1] else ["", "", ""]), "", ""])
    # communication estimate: step minus the 3-rank compute floor
    floor, rms, mws = row("rm-tf_keras", "step/none"), row("rm-tf_keras", "step/ringmaster"), row("mwms", "step/mwms")
    if floor and rms and mws:
        lines += ["", f"Custom loop: step minus the 3-rank compute floor = {rms[0] - floor[0]:.1f} ms (Ringmaster) "
                  f"and {mws[0] - floor[0]:.1f} ms (MWMS); with that floor, the best possible ratio for an "
                  f"all-reduce of zero time would be {mws[0] / floor[0]:.2f}x."]
    bad = [f"{r['group']}/{r['case']} rank {r['rank']}" for r in results if r.get("correct") is False]
    if bad:
        lines += ["", "WRONG RESULTS: " + ", ".join(bad)]
    failed = [g for g in groups if not any(r["group"] == g for r in results)]
    if failed:
        lines += ["", "FAILED groups (see the logs in the out dir): " + ", ".join(failed)]

    # ------------------------------------------------ Horovod 0.28.1, same run
    hv_tf = next((r.get("tf_version") for r in results if r["group"] == HOROVOD_GROUP), None)
    rm_tf = next((r.get("tf_version") for r in results if r["group"] == "rm-tf_keras"), tf.__version__)
    lines += ["", f"Against Horovod 0.28.1 (Gloo, `horovodrun -np {N} --gloo -H localhost:{N}`), same model, "
              f"same N, same machine, same run; different TensorFlow builds: Ringmaster on TensorFlow {rm_tf}, "
              f"Horovod on TensorFlow {hv_tf or '2.13.1'} (the newest Horovod 0.28.1 builds against; "
              "bench/tensorflow/horovod-venv). The same code on both sides (Horovod-named API). "
              "ratio = Horovod median / Ringmaster median (> 1: Ringmaster is faster).", ""]
    if horovod_skipped:
        lines.append(f"horovod: not measured: {horovod_skipped}")
    else:
        lines += ["| case | Ringmaster | Horovod 0.28.1 | Horovod / Ringmaster | goal |",
                  "| --- | ---: | ---: | ---: | --- |"]
        hpairs = [
            ("all-reduce, grouped_allreduce(grads, op=Sum) (tf.function)",
             ("rm-tf_keras", "allreduce-grouped/ringmaster"), (HOROVOD_GROUP, "allreduce-grouped/horovod")),
            ("all-reduce, per-tensor allreduce(g, op=Sum) (tf.function)",
             ("rm-tf_keras", "allreduce-pertensor/ringmaster"), (HOROVOD_GROUP, "allreduce-pertensor/horovod")),
            ("all-reduce, Ringmaster's rm.all_reduce vs Horovod grouped_allreduce",
             ("rm-tf_keras", "allreduce/ringmaster"), (HOROVOD_GROUP, "allreduce-grouped/horovod")),
            ("training step, custom loop, DistributedGradientTape (tf.function)",
             ("rm-tf_keras", "step/ringmaster"), (HOROVOD_GROUP, "step/horovod")),
            ("model.fit step, Keras 2 (tf_keras 2.20 / Keras 2.13), DistributedOptimizer",
             ("rm-tf_keras", "fit-tf_keras/ringmaster"), (HOROVOD_GROUP, "fit-keras2/horovod")),
            ("compute floor, custom loop step, no all-reduce (3 ranks)",
             ("rm-tf_keras", "step/none"), (HOROVOD_GROUP, "step/none")),
            ("compute floor, model.fit step, no all-reduce (3 ranks)",
             ("rm-tf_keras", "fit-tf_keras/none"), (HOROVOD_GROUP, "fit-keras2/none")),
        ]
        for name, a, b in hpairs:
            ra, rb = row(*a), row(*b)
            floor = name.startswith("compute floor")
            met = "—" if ra is None or rb is None or floor else ("met" if rb[0] / ra[0] >= 1.0 else "**not met**")
            lines.append(f"| {name} | {fmt(ra)} | {fmt(rb)} | {ratio(rb, ra)} | "
                         f"{'(TF builds compared)' if floor else '>= 1x: ' + met} |")
            summary.append([name, "ringmaster", *(ra[:3] if ra else ["", "", ""]), "", ""])
            summary.append([name, "horovod", *(rb[:3] if rb else ["", "", ""]), ratio(rb, ra),
                            "" if floor else ">= 1x"])
        hs, hf = row(HOROVOD_GROUP, "step/horovod"), row(HOROVOD_GROUP, "step/none")
        rs, rf = row("rm-tf_keras", "step/ringmaster"), row("rm-tf_keras", "step/none")
        if hs and hf and rs and rf:
            lines += ["", f"Custom loop, step minus its own TensorFlow's 3-rank compute floor: "
                      f"{rs[0] - rf[0]:.1f} ms (Ringmaster, TF {rm_tf}) and {hs[0] - hf[0]:.1f} ms "
                      f"(Horovod, TF {hv_tf})."]
    text = "\n".join(lines) + "\n"
    (out / "tables.md").write_text(text)
    with open(out / "summary.csv", "w", newline="") as f:
        wr = csv.writer(f)
        wr.writerow(["case", "peer", "median_ms", "p10_ms", "p90_ms", "peer_over_ringmaster", "goal"])
        for s in summary:
            wr.writerow([f"{v:.3f}" if isinstance(v, float) else v for v in s])
    print(text)
    print(f"bench_keras: wrote {out}/tables.md, results.csv, summary.csv", file=sys.stderr)
    return 1 if bad or failed else 0


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", default="build-bench/keras")
    p.add_argument("--iters", type=int, default=20)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--model", choices=sorted(MODELS), default="full")
    p.add_argument("--groups", default="rm-tf_keras,mwms,rm-mwms,rm-keras3,single,horovod",
                   help="groups to run, in this order (default: all)")
    p.add_argument("--horovod-python", default="",
                   help="the python of bench/tensorflow/horovod-venv (the horovod group needs it)")
    p.add_argument("--horovod-unavailable", default="",
                   help="why there is no Horovod venv (printed in the table instead of its rows)")
    p.add_argument("--cases", default="", help="only these cases (comma-separated, e.g. step/mwms)")
    p.add_argument("--group-timeout", type=int, default=600, help="seconds for one group, start to end")
    p.add_argument("--command", default="bench/tensorflow/bench_keras.py")
    p.add_argument("--rank", default="", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.rank:
        rank_main(args)
    else:
        sys.exit(launcher_main(args))


if __name__ == "__main__":
    main()
