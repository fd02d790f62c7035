"""A tf.distribute custom training loop, unchanged but for one line: the
strategy's constructor. Every collective the strategy makes (the
optimizer's gradient aggregation, strategy.reduce) runs on Ringmaster.

    ringmaster run examples/mwms/job.yaml     # a chief and two workers, locally

Synthetic linear-regression data (made here, nothing downloaded); each step
prints the global loss on the chief, and every rank prints a checksum of
its weights at the end: they must agree.
"""
import hashlib

import numpy as np
import ringmaster.tensorflow as rmtf
import tensorflow as tf
import tf_keras

strategy = rmtf.MultiWorkerMirroredStrategy()  # was: tf.distribute.MultiWorkerMirroredStrategy()

FEATURES, PER_REPLICA, STEPS = 32, 64, 40
GLOBAL = PER_REPLICA * strategy.num_replicas_in_sync
rng = np.random.RandomState(0)
x = rng.randn(STEPS * GLOBAL, FEATURES).astype(np.float32)
y = (x @ rng.randn(FEATURES, 1) + 0.1 * rng.randn(STEPS * GLOBAL, 1)).astype(np.float32)
options = tf.data.Options()
options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.DATA
dataset = tf.data.Dataset.from_tensor_slices((x, y)).batch(GLOBAL).with_options(options)

with strategy.scope():
    tf_keras.utils.set_random_seed(1)
    model = tf_keras.Sequential([tf_keras.Input((FEATURES,)), tf_keras.layers.Dense(64, activation="relu"),
                                 tf_keras.layers.Dense(1)])
    optimizer = tf_keras.optimizers.SGD(0.02)


def step(xb, yb):
    with tf.GradientTape() as tape:
        per_example = tf.reduce_sum(tf.square(model(xb, training=True) - yb), axis=1)
        loss = tf.nn.compute_average_loss(per_example, global_batch_size=GLOBAL)
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))  # all-reduced by the strategy
    return loss


@tf.function
def train_step(xb, yb):
    return strategy.reduce("SUM", strategy.run(step, args=(xb, yb)), axis=None)


rank = strategy.cluster_resolver.task_id + (1 if strategy.cluster_resolver.task_type == "worker" and
                                            "chief" in strategy.cluster_resolver.cluster_spec().as_dict() else 0)
for i, (xb, yb) in enumerate(strategy.experimental_distribute_dataset(dataset)):
    loss = float(train_step(xb, yb))
    if rank == 0:
        print(f"step {i:3d}: loss {loss:.4f}", flush=True)
digest = hashlib.sha256(b"".join(np.asarray(w).tobytes() for w in model.get_weights())).hexdigest()
print(f"rank {rank}: weights sha256 {digest}", flush=True)
