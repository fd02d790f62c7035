"""The Keras benchmark's runners (bench_keras.py), one per kind of group:
each initialises its framework on a rank and returns (run_case, barrier),
run_case(case) mapping a case's name to the code that times it
(keras_cases.py)."""
from __future__ import annotations

import os
from typing import TYPE_CHECKING

from keras_cases import (FitTimer, all_equal, build_model, data, fit_case, grad_shapes, hvd_api_allreduce,
                         keras_module, reduce_case, step_case, tape_case, timed)
from keras_groups import LOCAL_BATCH, N

if TYPE_CHECKING:
    from keras_rank import Rank


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
    # --bytes-per-pack: packs, as TensorFlow's own CommunicationOptions example
    # sets them so that weight updates overlap the all-reduce.
    opts = tf.distribute.experimental.CommunicationOptions(implementation=impl,
                                                           bytes_per_pack=r.args.bytes_per_pack)
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
