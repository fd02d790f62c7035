"""Kubeflow's simple TFJob example, data-parallel over Ringmaster.

Kubeflow's `examples/tensorflow/simple.yaml` (training-operator) runs two
workers with the command

    python /opt/tf-mnist-with-summaries/mnist.py --epochs=1

The Keras example image (examples/keras/Dockerfile) has this script at that
path, so the TFJob runs unchanged with only its image replaced. It takes the
same flags as the script Kubeflow's image has (--batch-size, --learning-rate,
--epochs, --log-interval, --log-path), prints its progress in the same line
format (so a metrics collector that parses those lines still works), writes
TensorBoard summaries under --log-path (when the image has TensorBoard:
TensorFlow's own wheel no longer brings it), and trains the same kind of model: a
convolution and two dense layers in a custom loop with `tf.GradientTape`.

What differs, and why:
- The gradients are averaged across the job's replicas
  (`DistributedGradientTape`), and every replica starts from worker 0's
  weights, so the replicas train one model together instead of each its own.
  Each trains on its shard of the data; every replica ends with the same
  weights and prints their checksum.
- The data is scikit-learn's 8x8 digits, shipped with scikit-learn, instead
  of MNIST downloaded at start: a pod on a cluster without Internet access
  still runs.
"""
from __future__ import annotations

import argparse
import hashlib
import importlib.util
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from sklearn.datasets import load_digits  # noqa: E402
from sklearn.model_selection import train_test_split  # noqa: E402

import ringmaster.tensorflow as rm  # noqa: E402

SEED = 7


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch-size", type=int, default=64,
                        help="input batch size for training, per replica (default: 64)")
    parser.add_argument("--learning-rate", type=float, default=0.001, help="learning rate (default: 0.001)")
    parser.add_argument("--epochs", type=int, default=10, metavar="N",
                        help="number of epochs to train (default: 10)")
    parser.add_argument("--log-interval", type=int, default=100, metavar="N",
                        help="how many batches to wait before logging training status (default: 100)")
    parser.add_argument("--log-path", type=str,
                        default=os.path.join(os.getenv("TEST_TMPDIR", "/tmp"),
                                             "tensorflow/mnist/logs/mnist_with_summaries"),
                        help="summaries log PATH")
    args = parser.parse_args(argv)
    for name in ("batch_size", "epochs", "log_interval"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1, not {getattr(args, name)}")
    return args


def model() -> tf.keras.Model:
    return tf.keras.Sequential([
        tf.keras.Input((8, 8, 1)),
        tf.keras.layers.Conv2D(32, 3, activation="relu"),
        tf.keras.layers.Flatten(),
        tf.keras.layers.Dense(128, activation="relu"),
        tf.keras.layers.Dense(10),
    ])


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    rm.init()
    rank, size = rm.rank(), rm.size()

    x, y = load_digits(return_X_y=True)
    x = (x / 16.0).astype(np.float32).reshape(-1, 8, 8, 1)
    x_train, x_test, y_train, y_test = train_test_split(x, y, test_size=0.25, random_state=0, stratify=y)
    # This replica's shard, cut to the same number of steps on every replica:
    # each step is a collective, and a replica with one more would wait alone.
    steps = len(x_train) // (args.batch_size * size)
    if steps == 0:
        sys.exit(f"mnist.py: --batch-size {args.batch_size} x {size} replicas is more than the "
                 f"{len(x_train)} training images")
    xs, ys = x_train[rank::size][:steps * args.batch_size], y_train[rank::size][:steps * args.batch_size]
    train_ds = tf.data.Dataset.from_tensor_slices((xs, ys)).shuffle(len(xs), seed=SEED + rank).batch(args.batch_size)
    test_ds = tf.data.Dataset.from_tensor_slices((x_test, y_test)).batch(256)

    tf.keras.utils.set_random_seed(SEED + rank)  # different on purpose: worker 0's weights are broadcast
    net = model()
    loss_object = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    optimizer = tf.keras.optimizers.Adam(learning_rate=args.learning_rate)
    train_loss = tf.keras.metrics.Mean(name="train_loss")
    train_accuracy = tf.keras.metrics.SparseCategoricalAccuracy(name="train_accuracy")
    test_loss = tf.keras.metrics.Mean(name="test_loss")
    test_accuracy = tf.keras.metrics.SparseCategoricalAccuracy(name="test_accuracy")
    writers = {}
    if importlib.util.find_spec("tensorboard") is not None:
        writers = {part: tf.summary.create_file_writer(os.path.join(args.log_path, part)) for part in ("train", "test")}
    elif rank == 0:
        print(f"mnist.py: no summaries in {args.log_path}: TensorBoard is not installed", flush=True)

    @tf.function
    def train_step(images: tf.Tensor, labels: tf.Tensor) -> None:
        with tf.GradientTape() as tape:
            predictions = net(images, training=True)
            loss = loss_object(labels, predictions)
        tape = rm.DistributedGradientTape(tape)
        gradients = tape.gradient(loss, net.trainable_variables)
        optimizer.apply_gradients(zip(gradients, net.trainable_variables))
        train_loss(loss)
        train_accuracy(labels, predictions)

    rm.broadcast_variables(net.variables, root_rank=0)
    for epoch in range(args.epochs):
        for metric in (train_loss, train_accuracy, test_loss, test_accuracy):
            metric.reset_state()
        for step, (images, labels) in enumerate(train_ds):
            train_step(images, labels)
            if step == 0:  # the optimizer's slots exist now: start them equal too
                rm.broadcast_variables(optimizer.variables, root_rank=0)
            if step % args.log_interval == 0:
                seen = step * args.batch_size * size
                print(f"Train Epoch: {epoch + 1} [{seen}/{len(x_train)} ({100.0 * seen / len(x_train):.0f}%)]\t"
                      f"loss={train_loss.result():.4f}, accuracy={train_accuracy.result() * 100:.4f}", flush=True)
        for images, labels in test_ds:
            predictions = net(images, training=False)
            test_loss(loss_object(labels, predictions))
            test_accuracy(labels, predictions)
        metrics = {"train": (train_loss, train_accuracy), "test": (test_loss, test_accuracy)}
        for part, writer in writers.items():
            with writer.as_default():
                tf.summary.scalar("loss", metrics[part][0].result(), step=epoch)
                tf.summary.scalar("accuracy", metrics[part][1].result(), step=epoch)
            writer.flush()
        print(f"Test Loss: {test_loss.result():.4f}, Test Accuracy: {test_accuracy.result() * 100:.4f}\n", flush=True)

    digest = hashlib.sha256(b"".join(v.numpy().tobytes() for v in net.trainable_variables)).hexdigest()
    print(f"rank {rank} of {size}: weights sha256 {digest}", flush=True)
    rm.all_reduce("sum", tf.constant(0))  # a barrier: no replica ends before every one has printed
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
