"""ringmaster.tensorflow.keras / ringmaster.keras (horovod.tensorflow.keras /
horovod.keras) on N ranks; every member runs this file identically:

    python tests/python/horovod/launch.py -n 2 -- python -m pytest -p no:cacheprovider -q -x \
        tests/python/horovod/test_keras.py

Each rank's data comes from a seed of its rank, so every rank can compute
what the others have and the expected result (the mean over ranks, the
statistics of the concatenated batch) locally; the assertions compare with
that, and with the other ranks' results (allgather).
Keras 3 (``keras``) and tf_keras (``import tf_keras``) are both used in this
one process: each family's objects are explicit, tf.keras is not used.
"""
from __future__ import annotations

import os

import numpy as np
import pytest
import tensorflow as tf

import keras
import tf_keras

import ringmaster.keras as hvd_keras
import ringmaster.tensorflow as rm
import ringmaster.tensorflow.keras as hvd

rm.init()
RANK, SIZE = rm.rank(), rm.size()


def rank_data(r, *shape, seed=0):
    return np.random.RandomState(1000 * seed + r).uniform(-1, 1, size=shape).astype(np.float32)


def gathered(value):
    """Every rank's value, in rank order (shape [SIZE, ...])."""
    t = tf.convert_to_tensor(np.asarray(value, dtype=np.float32))
    return rm.allgather(t[None]).numpy()


def assert_same_on_all_ranks(value):
    allv = gathered(value)
    for r in range(SIZE):
        np.testing.assert_allclose(allv[r], allv[0], rtol=1e-6, atol=1e-6, err_msg=f"rank {r} differs")


def keras3_sgd(lr=1.0):
    return keras.optimizers.SGD(lr)


def test_lazy_keras_attribute_and_reexports():
    assert rm.keras.DistributedOptimizer is hvd.DistributedOptimizer
    assert hvd.size() == SIZE and hvd.rank() == RANK
    assert hvd.Average == rm.Average and hvd.Sum == rm.Sum and hvd.Compression is rm.Compression
    assert hvd_keras.Adasum == rm.Adasum
    with pytest.raises(AttributeError):
        hvd.no_such_name
    with pytest.raises(ValueError, match="op currently only supports Average and Sum"):
        hvd.DistributedOptimizer(keras3_sgd(), op=rm.Max)


# ------------------------------------------------------ gradient averaging

@pytest.mark.parametrize("in_function", [False, True])
@pytest.mark.parametrize("op", ["Average", "Sum"])
def test_keras3_gradients_are_reduced(in_function, op):
    v = tf.Variable([0.0, 0.0, 0.0])
    opt = hvd.DistributedOptimizer(keras3_sgd(), op=getattr(rm, op))
    assert type(opt).__name__ == "SGD" and isinstance(opt, keras.optimizers.SGD)
    grad = tf.constant(rank_data(RANK, 3))

    def step():
        opt.apply_gradients([(grad, v)])

    (tf.function(step) if in_function else step)()
    grads = np.stack([rank_data(r, 3) for r in range(SIZE)])
    expected = -(grads.mean(0) if op == "Average" else grads.sum(0))
    np.testing.assert_allclose(v.numpy(), expected, rtol=1e-5, atol=1e-6)
    assert_same_on_all_ranks(v.numpy())


@pytest.mark.parametrize("family", ["tf_keras", "tf_keras_legacy"])
def test_tf_keras_minimize_reduces_gradients(family):
    opts = tf_keras.optimizers.legacy if family == "tf_keras_legacy" else tf_keras.optimizers
    opt = hvd.DistributedOptimizer(opts.SGD(1.0))
    assert type(opt).__name__ == "SGD"
    v = tf.Variable([0.0, 0.0, 0.0])
    c = tf.constant(rank_data(RANK, 3))

    @tf.function
    def step():
        opt.minimize(lambda: tf.reduce_sum(v * c), [v])

    step()
    expected = -np.stack([rank_data(r, 3) for r in range(SIZE)]).mean(0)
    np.testing.assert_allclose(v.numpy(), expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("family", ["keras3", "tf_keras", "tf_keras_legacy"])
def test_sparse_as_dense(family):
    rows, dim = 20, 4
    if family == "keras3":
        opt = hvd.DistributedOptimizer(keras3_sgd(), sparse_as_dense=True)
    else:
        opts = tf_keras.optimizers.legacy if family == "tf_keras_legacy" else tf_keras.optimizers
        opt = hvd.DistributedOptimizer(opts.SGD(1.0), sparse_as_dense=True)
    table = tf.Variable(np.zeros((rows, dim), np.float32))
    ids = [np.random.RandomState(7 + r).randint(0, rows, size=5) for r in range(SIZE)]
    weights = [rank_data(r, 5, dim, seed=3) for r in range(SIZE)]

    @tf.function
    def step():
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(tf.gather(table, ids[RANK]) * weights[RANK])
        if family == "keras3":
            g = tape.gradient(loss, table)
            assert isinstance(g, tf.IndexedSlices)
            opt.apply_gradients([(g, table)])
        else:
            opt.apply_gradients(opt._compute_gradients(loss, [table], tape=tape))

    step()
    expected = np.zeros((rows, dim), np.float32)
    for r in range(SIZE):
        np.add.at(expected, ids[r], -weights[r] / SIZE)
    np.testing.assert_allclose(table.numpy(), expected, rtol=1e-5, atol=1e-6)


# --------------------------------------------------- gradient aggregation

@pytest.mark.parametrize("family", ["keras3", "tf_keras", "tf_keras_legacy"])
@pytest.mark.parametrize("average_aggregated_gradients", [True, False])
def test_gradient_aggregation(family, average_aggregated_gradients):
    passes = 3
    if family == "keras3":
        base = keras3_sgd()
    else:
        base = (tf_keras.optimizers.legacy if family == "tf_keras_legacy" else tf_keras.optimizers).SGD(1.0)
    opt = hvd.DistributedOptimizer(base, backward_passes_per_step=passes,
                                   average_aggregated_gradients=average_aggregated_gradients,
                                   sparse_as_dense=True)
    x = tf.Variable([0.0])
    y = tf.Variable([1.0, 2.0])
    scale = float(RANK + 1)

    @tf.function
    def step():
        with tf.GradientTape() as tape:
            # d/dx = scale, d/dy = [-scale, 0] (an IndexedSlices: gather)
            loss = tf.reduce_sum(scale * x - scale * tf.gather(y, [0]))
        if family == "keras3":
            opt.apply_gradients(zip(tape.gradient(loss, [x, y]), [x, y]))
        else:
            opt.apply_gradients(opt._compute_gradients(loss, [x, y], tape=tape))

    mean_scale = np.mean([r + 1.0 for r in range(SIZE)])
    total = 7
    for i in range(total):
        step()
        cycles = (i + 1) // passes
        per_cycle = mean_scale * (1 if average_aggregated_gradients else passes)
        np.testing.assert_allclose(x.numpy(), [-cycles * per_cycle], rtol=1e-5)
        np.testing.assert_allclose(y.numpy(), [1.0 + cycles * per_cycle, 2.0], rtol=1e-5)
        assert int(opt.iterations.numpy()) == i + 1
    assert int(opt._agg_helper.counter.numpy()) == total % passes


def test_gradient_aggregation_eager_and_inf_is_cleared():
    passes = 2
    opt = hvd.DistributedOptimizer(keras3_sgd(), backward_passes_per_step=passes)
    x = tf.Variable(0.0)
    for i in range(2 * passes):
        g = tf.constant(float("inf")) if i == 0 else tf.constant(1.0)
        opt.apply_gradients([(g, x)])  # eager
        if i == 0:
            assert x.numpy() == 0.0  # not applied yet
    # The first cycle applied inf; the second cycle starts from cleared accumulators.
    assert all(np.isfinite(a.numpy()).all() for a in opt._agg_helper.locally_aggregated_grads.values())
    assert int(opt._agg_helper.counter.numpy()) == 0


def test_partial_distributed_optimizer():
    if SIZE == 1:
        pytest.skip("needs more than one rank")
    local = keras.layers.Dense(2)
    shared = keras.layers.Dense(2)
    model = keras.Sequential([keras.Input((3,)), local, shared])
    opt = hvd_keras.PartialDistributedOptimizer(keras3_sgd(), local_layers=[local])
    before = [v.numpy().copy() for v in model.trainable_weights]
    grads = [tf.constant(rank_data(RANK, *v.shape, seed=10 + i)) for i, v in enumerate(model.trainable_weights)]
    opt.apply_gradients(zip(grads, model.trainable_weights))
    local_ids = {id(v) for v in local.trainable_weights}
    for i, v in enumerate(model.trainable_weights):
        if id(v) in local_ids:
            expected = before[i] - rank_data(RANK, *v.shape, seed=10 + i) / SIZE
        else:
            expected = before[i] - np.mean([rank_data(r, *v.shape, seed=10 + i) for r in range(SIZE)], 0)
        np.testing.assert_allclose(v.numpy(), expected, rtol=1e-5, atol=1e-6)


# ----------------------------------------------------------- config, save

@pytest.mark.parametrize("family", ["keras3", "tf_keras", "tf_keras_legacy"])
def test_from_config_round_trip(family):
    if family == "keras3":
        opt = keras.optimizers.Adam(0.003)
    else:
        opt = (tf_keras.optimizers.legacy if family == "tf_keras_legacy" else tf_keras.optimizers).Adam(0.003)
    hopt = hvd.DistributedOptimizer(opt, backward_passes_per_step=2)
    cfg = hopt.get_config()
    assert cfg["name"] == "DistributedAdam"
    assert abs(cfg["learning_rate"] - 0.003) < 1e-9
    copy1 = hopt.from_config(cfg)
    assert cfg == copy1.get_config()
    copy2 = hopt.__class__.from_config(cfg)
    assert cfg == copy2.get_config()
    assert getattr(type(copy2), "_ringmaster_distributed", False) and copy2._agg_helper is not None


def _linear_problem(r, n=8):
    return rank_data(r, n, 3, seed=20), rank_data(r, n, 1, seed=21)


def _expected_after_one_step(w0, b0, lr):
    """Full-batch SGD step on MSE with the gradient averaged over ranks."""
    grads_w, grads_b = [], []
    for r in range(SIZE):
        x, y = _linear_problem(r)
        w, b = tf.Variable(w0), tf.Variable(b0)
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(x @ w + b - y))
        gw, gb = tape.gradient(loss, [w, b])
        grads_w.append(gw.numpy())
        grads_b.append(gb.numpy())
    return w0 - lr * np.mean(grads_w, 0), b0 - lr * np.mean(grads_b, 0)


@pytest.mark.parametrize("family", ["keras3", "tf_keras", "tf_keras_legacy"])
def test_fit_broadcast_and_average(family):
    """fit with BroadcastGlobalVariablesCallback (root: the last rank) and
    DistributedOptimizer: the first step starts from root's weights and
    applies the mean gradient."""
    lr, root = 0.1, SIZE - 1
    k = keras if family == "keras3" else tf_keras
    init = k.initializers.Constant(float(RANK + 1))
    model = k.Sequential([k.layers.Dense(1, kernel_initializer=init, bias_initializer=init, input_shape=(3,))])
    if family == "keras3":
        opt = hvd.DistributedOptimizer(keras.optimizers.SGD(lr))
        model.compile(optimizer=opt, loss="mse", jit_compile=False)
    else:
        opts = tf_keras.optimizers.legacy if family == "tf_keras_legacy" else tf_keras.optimizers
        model.compile(optimizer=hvd.DistributedOptimizer(opts.SGD(lr)), loss="mse")
    x, y = _linear_problem(RANK)
    model.fit(x, y, batch_size=len(x), epochs=1, verbose=0, shuffle=False,
              callbacks=[hvd.callbacks.BroadcastGlobalVariablesCallback(root)])
    w, b = model.get_weights()
    ew, eb = _expected_after_one_step(np.full((3, 1), root + 1.0, np.float32), np.full((1,), root + 1.0, np.float32),
                                      lr)
    np.testing.assert_allclose(w, ew, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(b, eb, rtol=1e-5, atol=1e-6)
    assert_same_on_all_ranks(w)


def test_broadcast_callback_local_variables():
    if SIZE == 1:
        pytest.skip("needs more than one rank")
    root = SIZE - 1
    init = keras.initializers.Constant(float(RANK))
    first = keras.layers.Dense(3, kernel_initializer=init, bias_initializer=init, trainable=False)
    model = keras.Sequential([keras.Input((3,)), first,
                              keras.layers.Dense(3, kernel_initializer=init, bias_initializer=init, trainable=False)])
    model.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse", jit_compile=False)
    cb = hvd.callbacks.BroadcastGlobalVariablesCallback(root_rank=root, local_variables=list(first.variables))
    model.fit(np.ones((2, 3), np.float32), np.ones((2, 3), np.float32), verbose=0, callbacks=[cb])
    local = {id(v) for v in first.variables}
    for v in model.variables:
        want = float(RANK) if id(v) in local else float(root)
        np.testing.assert_allclose(np.asarray(v), np.full(v.shape, want))
    with pytest.raises(ValueError):
        hvd.callbacks.BroadcastGlobalVariablesCallback(0, local_variables=["not a variable"])


@pytest.mark.parametrize("family", ["keras3", "tf_keras_legacy"])
def test_load_model_wraps_optimizer(family, tmp_path):
    k = keras if family == "keras3" else tf_keras
    model = k.Sequential([k.layers.Dense(1, input_shape=(3,), kernel_initializer="ones")])
    if family == "keras3":
        model.compile(optimizer=keras.optimizers.SGD(0.1, momentum=0.5), loss="mse")
        path = str(tmp_path / f"m{RANK}.keras")
    else:
        model.compile(optimizer=tf_keras.optimizers.legacy.SGD(0.1, momentum=0.5), loss="mse")
        path = str(tmp_path / f"m{RANK}.h5")
    x0, y0 = _linear_problem(0)
    model.fit(x0, y0, batch_size=len(x0), verbose=0)  # the optimizer's state, the same on every rank
    model.save(path)
    if family == "keras3":
        # ringmaster.keras.load_model: keras.models.load_model (ringmaster.tensorflow.keras's uses tf.keras,
        # which is tf_keras under TF_USE_LEGACY_KERAS=1).
        loaded = (hvd if tf.keras is keras else hvd_keras).load_model(path)
    else:
        # ringmaster.tensorflow.keras.load_model loads with tf.keras (Keras 3 here, tf_keras under
        # TF_USE_LEGACY_KERAS=1); the shared implementation given tf_keras is what it runs then.
        from ringmaster.tensorflow.keras import _optimizer
        loaded = _optimizer.load_model(tf_keras, lambda cls: _optimizer.distributed_class(cls, op=rm.Average), path,
                                       None, None, legacy_opts=True)
    opt = loaded.optimizer
    assert getattr(type(opt), "_ringmaster_distributed", False), type(opt).__mro__
    assert type(opt).__name__ == "SGD"
    np.testing.assert_allclose(float(np.asarray(opt.momentum if family == "keras3" else opt._get_hyper("momentum"))),
                               0.5)
    # The restored optimizer averages: one more step on different data leaves equal weights everywhere.
    x, y = _linear_problem(RANK)
    loaded.fit(x, y, batch_size=len(x), verbose=0)
    assert_same_on_all_ranks(loaded.get_weights()[0])


# ---------------------------------------------------------------- callbacks

def _lr_recorder(k, sink):
    class Recorder(k.callbacks.Callback):
        def on_train_batch_begin(self, batch, logs=None):
            sink.append(float(np.asarray(self.model.optimizer.learning_rate)))

    return Recorder()


@pytest.mark.parametrize("family", ["keras3", "tf_keras_legacy"])
def test_lr_warmup_and_schedule(family):
    k = keras if family == "keras3" else tf_keras
    initial_lr, steps, warmup = 0.1 * SIZE, 4, 2
    model = k.Sequential([k.layers.Dense(1, input_shape=(3,))])
    opt = keras.optimizers.SGD(initial_lr) if family == "keras3" else tf_keras.optimizers.legacy.SGD(
        initial_lr, momentum=0.9)
    if family == "keras3":
        model.compile(optimizer=hvd.DistributedOptimizer(opt), loss="mse", jit_compile=False)
    else:
        model.compile(optimizer=hvd.DistributedOptimizer(opt), loss="mse")
    lrs = []
    x, y = rank_data(RANK, steps * 2, 3), rank_data(RANK, steps * 2, 1)
    callbacks = [
        hvd.callbacks.LearningRateWarmupCallback(initial_lr=initial_lr, warmup_epochs=warmup),
        hvd.callbacks.LearningRateScheduleCallback(initial_lr=initial_lr, multiplier=0.5, start_epoch=warmup,
                                                   end_epoch=warmup + 2),
        hvd.callbacks.LearningRateScheduleCallback(initial_lr=initial_lr, multiplier=lambda e: 1.0 / (e + 1),
                                                   start_epoch=warmup + 2),
        _lr_recorder(k, lrs),
    ]
    hist = model.fit(x, y, batch_size=2, epochs=warmup + 3, verbose=0, callbacks=callbacks, shuffle=False)
    expected = []
    for epoch in range(warmup + 3):
        for batch in range(steps):
            if epoch < warmup:
                e = epoch + batch / steps + 1.0 / steps
                expected.append(initial_lr / SIZE * (e * (SIZE - 1) / warmup + 1))
            elif epoch < warmup + 2:
                expected.append(initial_lr * 0.5 ** (epoch - warmup))
            else:
                expected.append(initial_lr / (epoch + 1))
    np.testing.assert_allclose(lrs, expected, rtol=1e-5)
    np.testing.assert_allclose(hist.history["lr"], [expected[(e + 1) * steps - 1] for e in range(warmup + 3)],
                               rtol=1e-5)
    if family == "tf_keras_legacy":  # the momentum correction is undone after each batch
        np.testing.assert_allclose(float(model.optimizer._get_hyper("momentum")), 0.9, rtol=1e-6)


@pytest.mark.parametrize("family", ["keras3", "tf_keras"])
def test_metric_average_callback(family):
    k = keras if family == "keras3" else tf_keras
    own = []

    class Before(k.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            own.append(float(logs["loss"]))

    model = k.Sequential([k.layers.Dense(1, input_shape=(3,), kernel_initializer="zeros")])
    model.compile(optimizer=k.optimizers.SGD(0.0), loss="mse", **({"jit_compile": False} if k is keras else {}))
    # Different data per rank: different losses (zero weights: the loss is mean(y^2)).
    x = rank_data(RANK, 6, 3)
    y = rank_data(RANK, 6, 1, seed=5) * (RANK + 1)
    hist = model.fit(x, y, batch_size=6, epochs=2, verbose=0,
                     callbacks=[Before(), hvd.callbacks.MetricAverageCallback()])
    mine = float(np.mean(y ** 2))
    np.testing.assert_allclose(own, [mine, mine], rtol=1e-5)
    expected = np.mean([np.mean((rank_data(r, 6, 1, seed=5) * (r + 1)) ** 2) for r in range(SIZE)])
    np.testing.assert_allclose(hist.history["loss"], [expected, expected], rtol=1e-5)


def test_best_model_checkpoint(tmp_path):
    cb = hvd.callbacks.BestModelCheckpoint(monitor="loss")
    assert cb.filepath is None and cb.save_best_only and cb.monitor == "loss"
    cb2 = hvd_keras.callbacks.BestModelCheckpoint(monitor="loss", mode="min")
    cb2.filepath = str(tmp_path / f"best{RANK}.keras")
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse", jit_compile=False)
    model.fit(rank_data(RANK, 4, 3), rank_data(RANK, 4, 1), verbose=0, epochs=2, callbacks=[cb2])
    assert os.path.exists(cb2.filepath)


# ------------------------------------------------------------ sync batch norm

def test_sync_batch_norm_statistics_are_global():
    rows = [r + 2 for r in range(SIZE)]  # different batch sizes: weighted by size
    data = [rank_data(r, rows[r], 4, seed=30) * (r + 1) + r for r in range(SIZE)]
    bn = rm.SyncBatchNormalization(momentum=0.5, epsilon=1e-3)
    assert isinstance(bn, tf.keras.layers.BatchNormalization)
    x = tf.constant(data[RANK])
    with tf.GradientTape() as tape:
        tape.watch(x)
        out = bn(x, training=True)
        loss = tf.reduce_sum(out * tf.constant(rank_data(RANK, rows[RANK], 4, seed=31)))
    dx = tape.gradient(loss, x)

    full = np.concatenate(data)
    mean, var = full.mean(0), full.var(0)
    np.testing.assert_allclose(out.numpy(), (data[RANK] - mean) / np.sqrt(var + 1e-3), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(bn.moving_mean.numpy(), 0.5 * mean, rtol=1e-4, atol=1e-5)
    if SIZE > 1:
        with pytest.raises(ValueError):
            rm.SyncBatchNormalization(fused=True)

    # The gradient equals a plain BatchNormalization's on the concatenated batch (one process).
    ref = keras.layers.BatchNormalization(epsilon=1e-3)
    xf = tf.constant(full)
    with tf.GradientTape() as tape:
        tape.watch(xf)
        up = np.concatenate([rank_data(r, rows[r], 4, seed=31) for r in range(SIZE)])
        ref_loss = tf.reduce_sum(ref(xf, training=True) * up)
    dfull = tape.gradient(ref_loss, xf).numpy()
    start = sum(rows[:RANK])
    np.testing.assert_allclose(dx.numpy(), dfull[start:start + rows[RANK]], rtol=1e-3, atol=1e-4)


def test_sync_batch_norm_in_fit():
    k = tf.keras  # the family SyncBatchNormalization is built on (tf_keras under TF_USE_LEGACY_KERAS=1)
    model = k.Sequential([k.Input((4,)), rm.SyncBatchNormalization(), k.layers.Dense(1)])
    model.compile(optimizer=hvd.DistributedOptimizer(k.optimizers.SGD(0.05)), loss="mse",
                  **({"jit_compile": False} if k is keras else {}))
    model.fit(rank_data(RANK, 8, 4, seed=40), rank_data(RANK, 8, 1, seed=41), batch_size=4, epochs=2, verbose=0,
              callbacks=[hvd.callbacks.BroadcastGlobalVariablesCallback(0)])
    for w in model.get_weights():
        assert_same_on_all_ranks(w)
