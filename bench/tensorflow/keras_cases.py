"""The Keras benchmark's cases (bench_keras.py), shared by the groups'
runners: the model, its data and gradients' shapes, the timing loop, and
each kind of case (a reduction of the 8 gradient-shaped tensors, the tape,
the custom-loop step, model.fit), timed and checked on one rank."""
from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING

from keras_groups import MODELS, N

if TYPE_CHECKING:
    from keras_rank import Rank


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
