"""One rank of a MultiWorkerMirroredStrategy test group (group.py starts 3):
TensorFlow's strategy (--impl tf) or ours (--impl ours, the constructor the
only line that differs). Prints one JSON line (its report) last.

    strategy_worker.py SCENARIO OUTDIR --impl {ours,tf} [--function]

Scenarios:
  examples  TensorFlow's two documented option examples, strategy.reduce
            with axis on uneven batches, gathers, a custom training loop,
            tf_keras model.fit and Keras 3 model.fit, every result reported
  stall     rank 2 stalls; the others' reduce with a 2 s timeout
            (CollectiveHints in strategy.reduce; --function:
            CommunicationOptions in the replica context's all_reduce inside
            a tf.function) must raise DeadlineExceededError
  kill      rank 2 SIGKILLs itself; the others must get UnavailableError
  keras3_ref  (one process, no TF_CONFIG) Keras 3 fit on the global batches
"""
from __future__ import annotations

import json
import os
import signal
import sys
import time
import traceback
from pathlib import Path

import numpy as np

IN, B, RANKS, STEPS = 8, 8, 3, 6
GB = B * RANKS


def report(**kw):
    print(json.dumps(kw), flush=True)


def rank() -> int:
    task = json.loads(os.environ["TF_CONFIG"])["task"]
    return 0 if task["type"] == "chief" else int(task["index"]) + 1


def make_strategy(impl: str):
    import tensorflow as tf
    if impl == "ours":
        import ringmaster.tensorflow as rmtf
        return rmtf.MultiWorkerMirroredStrategy()
    return tf.distribute.MultiWorkerMirroredStrategy()


def data():
    rng = np.random.RandomState(0)
    x = rng.randn(STEPS * GB, IN).astype(np.float32)
    w = rng.randn(IN, 1)
    y = (x @ w + 0.1 * rng.randn(STEPS * GB, 1)).astype(np.float32)
    return x, y


def dataset(tf):
    x, y = data()
    ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(GB)
    opts = tf.data.Options()
    opts.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.DATA
    return ds.with_options(opts)


def flat_weights(model) -> list:
    return [float(v) for w in model.get_weights() for v in np.asarray(w).ravel()]


def local(strategy, value) -> list:
    return np.asarray(strategy.experimental_local_results(value)[0]).tolist()


def guarded(out: dict, key: str, fn) -> None:
    """out[key] = fn(), or the error it raised (type and first line)."""
    try:
        out[key] = fn()
    except Exception as e:  # noqa: BLE001  (the report says what failed)
        first = str(e).strip().splitlines()[0][:300] if str(e).strip() else ""
        out[key] = {"error": type(e).__name__, "message": first}
        print(f"{key}: {traceback.format_exc()}", file=sys.stderr, flush=True)


def examples(impl: str) -> None:
    import tensorflow as tf
    import tf_keras
    strategy = make_strategy(impl)
    r = rank()
    out: dict = {"rank": r, "replicas": strategy.num_replicas_in_sync}
    co = tf.distribute.experimental
    # TensorFlow's documented CommunicationOptions example (as written).
    options = co.CommunicationOptions(bytes_per_pack=50 * 1024 * 1024, timeout_seconds=120,
                                      implementation=co.CommunicationImplementation.NCCL)
    with strategy.scope():
        variables = [tf.Variable([1.0, 2.0, 3.0]), tf.Variable([[4.0], [5.0]])]
        optimizer = tf_keras.optimizers.SGD(1.0)

    def documented_step():
        k = float(r + 1)
        grads = [tf.constant([1.0, 1.0, 1.0]) * k, tf.constant([[2.0], [3.0]]) * k]
        grads = tf.distribute.get_replica_context().all_reduce('sum', grads, options=options)
        optimizer.apply_gradients(zip(grads, variables), experimental_aggregate_gradients=False)
        return grads

    def documented(run):
        grads = run()
        return {"grads": [local(strategy, g) for g in grads], "vars": [v.numpy().tolist() for v in variables]}

    guarded(out, "documented_eager", lambda: documented(lambda: strategy.run(documented_step)))
    guarded(out, "documented_function", lambda: documented(tf.function(lambda: strategy.run(documented_step))))

    # TensorFlow's documented CollectiveHints example (strategy.reduce).
    hints = co.CollectiveHints(timeout_seconds=120.0)
    v = strategy.run(lambda: tf.constant([1.0, 2.0]) * float(r + 1))
    guarded(out, "hints_reduce", lambda: strategy.reduce("sum", v, axis=None,
                                                         experimental_hints=hints).numpy().tolist())
    out["plain_reduce"] = strategy.reduce("sum", v, axis=None).numpy().tolist()

    # MEAN along the batch axis with uneven batches: rank r has r + 1 rows.
    rows = strategy.run(lambda: tf.constant([[float(r * 10 + i), 1.0] for i in range(r + 1)]))
    guarded(out, "mean_axis0", lambda: strategy.reduce(tf.distribute.ReduceOp.MEAN, rows, axis=0).numpy().tolist())
    guarded(out, "sum_axis0", lambda: strategy.reduce("SUM", rows, axis=0).numpy().tolist())

    # Gathers: cross-replica (uneven along axis 0) and in the replica context (axis 1).
    guarded(out, "gather_axis0", lambda: local(strategy, strategy.gather(rows, axis=0)))
    guarded(out, "all_gather_axis1", lambda: local(strategy, strategy.run(
        lambda: tf.distribute.get_replica_context().all_gather(tf.fill([2, 2], float(r)), axis=1))))
    # Integers, and a mean of them (a float in TensorFlow).
    ints = strategy.run(lambda: tf.constant([r + 1, 10 * (r + 1)], dtype=tf.int64))
    guarded(out, "int_sum", lambda: strategy.reduce("SUM", ints, axis=None).numpy().tolist())

    # A custom training loop: experimental_distribute_dataset, strategy.run,
    # the optimizer's own aggregation (batch_reduce_to).
    def custom_loop():
        with strategy.scope():
            tf_keras.utils.set_random_seed(1)
            model = tf_keras.Sequential([tf_keras.Input((IN,)), tf_keras.layers.Dense(16, activation="tanh"),
                                         tf_keras.layers.Dense(1)])
            opt = tf_keras.optimizers.SGD(0.05)

        def step(x, y):
            with tf.GradientTape() as tape:
                per_example = tf.reduce_sum(tf.square(model(x, training=True) - y), axis=1)
                loss = tf.nn.compute_average_loss(per_example, global_batch_size=GB)
            grads = tape.gradient(loss, model.trainable_variables)
            opt.apply_gradients(zip(grads, model.trainable_variables))
            return loss

        @tf.function
        def train(x, y):
            return strategy.reduce("SUM", strategy.run(step, args=(x, y)), axis=None)

        losses = [float(train(x, y)) for x, y in strategy.experimental_distribute_dataset(dataset(tf))]
        return {"losses": losses, "weights": flat_weights(model)}

    guarded(out, "custom_loop", custom_loop)

    guarded(out, "tf_keras_fit", lambda: fit(tf, tf_keras, strategy))
    import keras
    guarded(out, "keras3_fit", lambda: fit(tf, keras, strategy))
    if impl == "ours":
        # TensorFlow's strategy tests: gathers of shapes that differ beyond
        # the gathered axis, or of different ranks, raise InvalidArgumentError
        # matching "Shape mismatch", eagerly and in a tf.function; and the
        # group goes on. (Not run under TensorFlow's own: its collectives stay
        # aborted after such an error.)
        def mismatch(run):
            try:
                run()
                return "returned"
            except tf.errors.OpError as e:
                return {"error": type(e).__name__, "shape_mismatch": "Shape mismatch" in str(e),
                        "names_ranks": all(f"rank {i}" in str(e) for i in range(3))}

        wide = strategy.experimental_distribute_values_from_function(lambda _: tf.ones([1, r + 1]))
        out["gather_mismatch_eager"] = mismatch(lambda: strategy.gather(wide, axis=0))
        out["gather_mismatch_function"] = mismatch(tf.function(lambda: strategy.gather(wide, axis=0)))
        out["all_gather_rank_mismatch"] = mismatch(lambda: strategy.run(
            lambda: tf.distribute.get_replica_context().all_gather(tf.ones([1] * (r + 1)), axis=0)))
        out["after_mismatch"] = strategy.reduce("sum", v, axis=None).numpy().tolist()
    report(**out)


def fit(tf, keras, strategy=None):
    """model.fit on the global batches (under strategy.scope(), if any)."""
    import contextlib
    with strategy.scope() if strategy is not None else contextlib.nullcontext():
        keras.utils.set_random_seed(2)
        model = keras.Sequential([keras.Input((IN,)), keras.layers.Dense(16, activation="tanh"),
                                  keras.layers.Dense(1)])
        model.compile(optimizer=keras.optimizers.SGD(0.05), loss="mse")
    hist = model.fit(dataset(tf), epochs=2, verbose=0)
    return {"loss": [float(x) for x in hist.history["loss"]], "weights": flat_weights(model)}


def keras3_reference() -> None:
    """One process, no strategy, the same global batches: what a
    data-parallel Keras 3 fit must reproduce."""
    import tensorflow as tf
    import keras
    report(keras3_fit=fit(tf, keras))


def stall(function: bool) -> None:
    import tensorflow as tf
    strategy = make_strategy("ours")
    r = rank()
    strategy.reduce("SUM", strategy.run(lambda: tf.constant([1.0])), axis=None)  # every member in and working
    if r == 2:
        report(rank=r, stalled=True)
        time.sleep(600)  # the harness kills it
        return
    timeout = 2.0
    co = tf.distribute.experimental
    v = strategy.run(lambda: tf.constant([1.0, 2.0]))
    if function:
        options = co.CommunicationOptions(timeout_seconds=timeout)

        @tf.function
        def f():
            return strategy.run(lambda: tf.distribute.get_replica_context().all_reduce(
                "sum", tf.constant([2.0]), options=options))
        f = f.get_concrete_function()  # traced before the clock starts
        call = f
    else:
        hints = co.CollectiveHints(timeout_seconds=timeout)

        def call():
            return strategy.reduce("sum", v, axis=None, experimental_hints=hints)
    t0 = time.monotonic()
    message = ""
    try:
        call()
        outcome = "returned"
    except tf.errors.DeadlineExceededError as e:
        outcome, message = "DeadlineExceededError", str(e)
    except tf.errors.OpError as e:
        outcome, message = type(e).__name__, str(e)
    report(rank=r, outcome=outcome, elapsed=time.monotonic() - t0, timeout=timeout, message=message)
    os._exit(0)  # do not wait for the stalled peer at exit


def kill(outdir: Path) -> None:
    import tensorflow as tf
    strategy = make_strategy("ours")
    r = rank()

    @tf.function
    def f():
        return strategy.run(lambda: tf.distribute.get_replica_context().all_reduce(
            "sum", [tf.constant([1.0]), tf.constant([2.0])]))

    f()
    if r == 2:
        time.sleep(1.0)
        (outdir / "killed-at").write_text(repr(time.time()))
        os.kill(os.getpid(), signal.SIGKILL)
    message = ""
    try:
        f()  # blocks on the dead rank until the engine notices
        outcome = "returned"
    except tf.errors.UnavailableError as e:
        outcome, message = "UnavailableError", str(e)
    except tf.errors.OpError as e:
        outcome, message = type(e).__name__, str(e)
    t = time.time()
    killed_at = float((outdir / "killed-at").read_text()) if (outdir / "killed-at").exists() else None
    report(rank=r, outcome=outcome, message=message, after_kill=None if killed_at is None else t - killed_at)
    os._exit(0)  # TensorFlow's coordination service would wait for the dead task


def main() -> None:
    scenario, outdir = sys.argv[1], Path(sys.argv[2])
    flags = sys.argv[3:]
    impl = flags[flags.index("--impl") + 1] if "--impl" in flags else "ours"
    if scenario == "examples":
        examples(impl)
        os._exit(0)  # every rank has reported; skip TensorFlow's shutdown barrier
    elif scenario == "keras3_ref":
        keras3_reference()
    elif scenario == "stall":
        stall("--function" in flags)
    elif scenario == "kill":
        kill(outdir)
    else:
        raise SystemExit(f"unknown scenario {scenario}")


if __name__ == "__main__":
    main()
