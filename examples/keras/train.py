"""A Keras 3 MLP on scikit-learn's digits (shipped with scikit-learn: nothing
is downloaded), data-parallel over Ringmaster's all-reduce.

Every rank trains on its own shard; the global batch (GLOBAL_BATCH) is split
evenly across ranks and the gradients are averaged by one RingmasterAllReduce
op per step. The chief prints per-step times and the final test accuracy;
every rank prints a checksum of its weights (they must all be the same).

    ringmaster run examples/keras/job.yaml      # from the repository root

With RINGMASTER_CHECKPOINT_DIR set (a volume in a pod, a directory locally),
rank 0 writes a checkpoint at the end of each epoch, and a restarted job
(restartPolicy OnFailure, say) resumes from the last one instead of epoch 1:
every rank takes it before the first step. Unset: no checkpoints.
Exit 0 when the test accuracy is at least MIN_ACCURACY.
"""
from __future__ import annotations

import hashlib
import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

try:
    import numpy as np
    import keras
    import tensorflow as tf
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    import ringmaster.tensorflow as rm
    import ringmaster.tensorflow.keras as rmk
except ImportError as e:
    sys.exit(f"train.py: {e} (python: {sys.executable}). Run it with a Python that has tensorflow, keras, "
             "scikit-learn and ringmaster: activate that virtual environment before `ringmaster run`, or "
             "set RINGMASTER_PYTHON to its python.")

GLOBAL_BATCH = 96
EPOCHS = 20
LEARNING_RATE = 0.05
MIN_ACCURACY = 0.90
SEED = 7


class StepTimes(keras.callbacks.Callback):
    """Prints the mean and max time of a training step, per epoch (chief only)."""

    def on_epoch_begin(self, epoch, logs=None):
        self.times = []

    def on_train_batch_begin(self, batch, logs=None):
        self.t0 = time.perf_counter()

    def on_train_batch_end(self, batch, logs=None):
        self.times.append(time.perf_counter() - self.t0)

    def on_epoch_end(self, epoch, logs=None):
        if rm.rank() == 0:
            ms = 1000 * np.array(self.times)
            print(f"epoch {epoch + 1:2d}: loss {logs['loss']:.4f} accuracy {logs['accuracy']:.4f} "
                  f"step {ms.mean():.2f} ms (max {ms.max():.2f} ms, {len(ms)} steps)", flush=True)


def main() -> int:
    rm.init()
    rank, size = rm.rank(), rm.size()
    if GLOBAL_BATCH % size:
        sys.exit(f"train.py: the global batch {GLOBAL_BATCH} does not split evenly across {size} ranks")
    local_batch = GLOBAL_BATCH // size

    x, y = load_digits(return_X_y=True)
    x = (x / 16.0).astype(np.float32)
    x_train, x_test, y_train, y_test = train_test_split(x, y, test_size=0.25, random_state=0, stratify=y)
    # This rank's shard; every rank runs the same number of steps (a
    # collective per step: a rank with one step more would wait forever).
    steps = len(x_train) // GLOBAL_BATCH
    xs, ys = x_train[rank::size][:steps * local_batch], y_train[rank::size][:steps * local_batch]

    keras.utils.set_random_seed(SEED + rank)  # different on purpose: rank 0's weights are broadcast
    model = keras.Sequential([
        keras.Input((64,)),
        keras.layers.Dense(128, activation="relu"),
        keras.layers.Dense(64, activation="relu"),
        keras.layers.Dense(10),
    ])
    optimizer = rmk.DistributedOptimizer(keras.optimizers.SGD(LEARNING_RATE, momentum=0.9))
    # jit_compile=False: the Ringmaster op has no XLA kernel (Keras 3 picks XLA by itself when a GPU is visible).
    model.compile(optimizer=optimizer, loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"], jit_compile=False)
    # Every rank: rank 0's newest checkpoint (or, without one, rank 0's initial weights).
    position = rmk.checkpoint.restore(model)
    start_epoch = rmk.checkpoint.initial_epoch(position)
    if rank == 0 and position is not None:
        print(f"resuming at epoch {start_epoch + 1} (step {position.step}) from "
              f"{rmk.checkpoint.latest()}", flush=True)
    if rank == 0:
        print(f"{size} ranks, global batch {GLOBAL_BATCH} ({local_batch} per rank), {steps} steps per epoch, "
              f"{len(x_train)} training and {len(x_test)} test images", flush=True)
    callbacks = [rmk.callbacks.BroadcastGlobalVariablesCallback(0), rmk.callbacks.MetricAverageCallback(),
                 StepTimes()]
    if rmk.checkpoint.checkpoint_directory() is not None:  # unset: no checkpoints (and no warning)
        callbacks.append(rmk.callbacks.CheckpointCallback())
    model.fit(xs, ys, batch_size=local_batch, epochs=EPOCHS, initial_epoch=start_epoch, shuffle=True, verbose=0,
              callbacks=callbacks)

    _, accuracy = model.evaluate(x_test, y_test, batch_size=256, verbose=0)
    digest = hashlib.sha256(b"".join(np.asarray(w).tobytes() for w in model.get_weights())).hexdigest()
    print(f"rank {rank}: weights sha256 {digest}", flush=True)
    rm.all_reduce("sum", tf.constant(0))  # a barrier: no rank ends (and stops the job) before all have printed
    if rank == 0:
        print(f"test accuracy {accuracy:.4f} (required >= {MIN_ACCURACY})", flush=True)
    if accuracy < MIN_ACCURACY:
        print(f"rank {rank}: FAIL: test accuracy {accuracy:.4f} < {MIN_ACCURACY}", flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
