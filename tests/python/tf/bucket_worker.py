"""One rank of the gradient-bucket tests (test_buckets.py), in a group of 3
(group.py). The model is two Dense layers with a slow gradient between
them: the second layer's gradients exist at once, the first layer's only
after SLOW_S seconds. Every gradient is its own bucket (bytes_per_pack 1).
Prints one JSON line (its report) last.

    bucket_worker.py MODE OUTDIR

MODE:
  tape         DistributedGradientTape, Keras 3 layers and optimizer (a plain
               Keras 3 optimizer joins every gradient before any update: only
               the reduction's overlap is ours to show)
  tape_one_op  the same with num_groups=1: one op for every gradient
  keras        Keras 3's DistributedOptimizer (it reduces in apply)
  tf_keras     tf_keras' DistributedOptimizer (TF_USE_LEGACY_KERAS=1)
  strategy     our MultiWorkerMirroredStrategy with TensorFlow's documented
               example: the replica context's all_reduce, then
               apply_gradients(..., experimental_aggregate_gradients=False)

  tape_mismatch  the tape, with rank 1's first layer one unit wider: its
               second bucket (the second layer's kernel) differs in shape

The report has the traced graph's structure (the all-reduce ops in the order
they are issued; whether the first and the last wait for the slow gradient;
whether some variable's update waits for the first but not for the last;
whether the second bucket reaches the engine before the first is reduced,
i.e. waits for the first's Start only, not for its Wait) and, where the
reduced gradients are the step's own, the times each step's first bucket
was reduced and its slow gradient was done. tape_mismatch reports each
rank's error and the sum of a 4-byte all-reduce made after it.

The slow gradient and the stamps are stateless numpy_functions: TensorFlow
orders a tf.function's stateful ops without resource inputs (py_function,
our collectives) in program order, which would order the stamps, not the
collectives.
"""
from __future__ import annotations

import json
import os
import sys
import time

import numpy as np

SLOW_S = 1.5
# Every gradient above 256 bytes (the smallest bias 512), so that each
# bucket's all-reduce is a Start and a Wait.
IN, HID, B, STEPS = 8, 128, 4, 3
UPDATE_OPS = {"AssignSubVariableOp", "AssignVariableOp", "AssignAddVariableOp", "ResourceApplyGradientDescent"}


def report(**kw):
    print(json.dumps(kw), flush=True)


def ancestors(op):
    """Every op ``op`` waits for (data and control inputs, transitively)."""
    seen, todo = set(), [op]
    while todo:
        o = todo.pop()
        for parent in [t.op for t in o.inputs] + list(o.control_inputs):
            if parent not in seen:
                seen.add(parent)
                todo.append(parent)
    return seen


def structure(graph):
    ops = graph.get_operations()
    # One all-reduce: a RingmasterAllReduce, or a Start (its Wait the op
    # whose end is the reduction's).
    reduces = [op for op in ops if op.type in ("RingmasterAllReduce", "RingmasterAllReduceStart")]
    waits = {op.inputs[-1].op: op for op in ops if op.type == "RingmasterAllReduceWait"}
    before = {op: ancestors(op) for op in reduces}
    # Issue order: each op waits for the ones issued before it.
    reduces.sort(key=lambda op: sum(1 for other in reduces if other in before[op]))
    slow = [op for op in ops if "slow_grad" in op.name and op.type.startswith("PyFunc")]
    assert len(slow) == 1, [op.name for op in ops if "slow_grad" in op.name]
    first, last = reduces[0], reduces[-1]
    updates = [op for op in ops if op.type in UPDATE_OPS]
    return {
        "allreduce_ops": len(reduces),
        "split": sum(1 for op in reduces if op in waits),
        "first_waits_for_slow": slow[0] in before[first],
        "last_waits_for_slow": slow[0] in before[last],
        "update_without_last": any(first in ancestors(u) and last not in ancestors(u) for u in updates),
        "second_before_first_reduced": len(reduces) > 1 and waits.get(first, first) not in before[reduces[1]],
    }


def main():
    mode, outdir = sys.argv[1], sys.argv[2]
    import tensorflow as tf
    tf.config.threading.set_inter_op_parallelism_threads(4)
    if mode in ("strategy", "tf_keras"):
        import tf_keras as keras
    else:
        import keras
    import ringmaster
    import ringmaster.tensorflow as rm

    stamps = {"slow": [], "reduced": []}

    def stamp(key):
        def record(x):
            stamps[key].append(time.monotonic())
            return x
        return record

    @tf.custom_gradient
    def slow_identity(x):
        def grad(dy):
            def sleep(d):
                time.sleep(SLOW_S)
                return stamp("slow")(d)
            g = tf.numpy_function(sleep, [dy], dy.dtype, stateful=False, name="slow_grad")
            g.set_shape(dy.shape)
            return g
        return tf.identity(x), grad

    def stamped(t):
        out = tf.numpy_function(stamp("reduced"), [t], t.dtype, stateful=False, name="stamp_reduced")
        out.set_shape(t.shape)
        return out

    strategy = rm.MultiWorkerMirroredStrategy() if mode == "strategy" else None
    rm.init()
    r = rm.rank()
    with strategy.scope() if strategy else _null():
        keras.utils.set_random_seed(1)
        wide = HID + (1 if mode == "tape_mismatch" and r == 1 else 0)
        dense1, dense2 = keras.layers.Dense(wide), keras.layers.Dense(HID)
        dense1.build((None, IN))
        dense2.build((None, wide))
        opt = keras.optimizers.SGD(0.01)
        if mode in ("keras", "tf_keras"):
            import ringmaster.tensorflow.keras as rmk
            opt = rmk.DistributedOptimizer(opt)
    variables = dense1.trainable_variables + dense2.trainable_variables
    one_pack = ringmaster.CommunicationOptions(bytes_per_pack=1)

    def forward_loss(x, y):
        h = slow_identity(dense1(x))
        return tf.reduce_mean(tf.square(dense2(tf.tanh(h)) - y))

    if mode == "strategy":
        options = tf.distribute.experimental.CommunicationOptions(bytes_per_pack=1)

        def replica_step(x, y):
            with tf.GradientTape() as tape:
                loss = forward_loss(x, y)
            grads = tape.gradient(loss, variables)
            grads = tf.distribute.get_replica_context().all_reduce("sum", grads, options=options)
            mark = stamped(grads[-1])
            opt.apply_gradients(zip(grads, variables), experimental_aggregate_gradients=False)
            return loss, mark

        @tf.function
        def step(x, y):
            return strategy.run(replica_step, args=(x, y))
    else:
        @tf.function
        def step(x, y):
            with tf.GradientTape() as tape:
                loss = forward_loss(x, y)
            mark = loss
            if mode == "tf_keras":
                # tf_keras' DistributedOptimizer reduces in compute_gradients, as Horovod's.
                grads_and_vars = opt.compute_gradients(loss, variables, tape=tape)
                opt.apply_gradients(grads_and_vars)
                return loss, mark
            if mode in ("tape", "tape_one_op", "tape_mismatch"):
                tape = rm.DistributedGradientTape(tape, num_groups=1 if mode == "tape_one_op" else 0,
                                                  options=one_pack)
            grads = tape.gradient(loss, variables)
            if mode in ("tape", "tape_one_op", "tape_mismatch"):
                mark = stamped(grads[-1])
            opt.apply_gradients(zip(grads, variables))
            return loss, mark

    rng = np.random.RandomState(r)
    x = tf.constant(rng.randn(B, IN).astype(np.float32))
    y = tf.constant(rng.randn(B, 1).astype(np.float32))
    graph = step.get_concrete_function(x, y).graph
    shape = structure(graph)
    if mode == "tape_mismatch":
        try:
            step(x, y)
            error = None
        except tf.errors.OpError as e:
            error = f"{type(e).__name__}: {e.message}"
        after = float(rm.allreduce(tf.constant(1.0), op=rm.Sum).numpy())  # the group goes on
        report(rank=r, mode=mode, **shape, error=error, after=after)
        return
    for _ in range(STEPS):
        step(x, y)
    report(rank=r, mode=mode, **shape, slow=stamps["slow"], reduced=stamps["reduced"])


class _null:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


if __name__ == "__main__":
    main()
