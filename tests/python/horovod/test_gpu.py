"""The all-reduce's GPU kernel (ringmaster.tensorflow on GPU tensors): every
member runs this file (launch.py -n N -- python -m pytest ...).

The registration check runs everywhere; the device cases need a TensorFlow
with CUDA and a GPU (they skip otherwise: docs/gpu.md says where they ran).
Members share the machine's GPUs round-robin; with fewer GPUs than members
NCCL cannot run (two ranks on one GPU), so the engine stages through the
host (implementation RING)."""
from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf
from tensorflow.python.framework import kernels

import ringmaster.tensorflow as hvd

hvd.init()
R, N = hvd.rank(), hvd.size()
GPUS = tf.config.list_physical_devices("GPU")
needs_gpu = pytest.mark.skipif(not GPUS, reason="no GPU (or a TensorFlow without CUDA): see docs/gpu.md")


def test_the_allreduce_has_a_gpu_kernel_and_the_others_do_not():
    devices = {k.device_type for k in kernels.get_registered_kernels_for_op("RingmasterAllReduce").kernel}
    assert devices == {"CPU", "GPU"}, devices
    for op in ("RingmasterBroadcast", "RingmasterAllGather"):
        assert {k.device_type for k in kernels.get_registered_kernels_for_op(op).kernel} == {"CPU"}, op


def options():
    impl = tf.distribute.experimental.CommunicationImplementation
    return tf.distribute.experimental.CommunicationOptions(
        implementation=impl.NCCL if len(GPUS) >= N else impl.RING)


def on_gpu(f):
    with tf.device(f"/gpu:{R % max(1, len(GPUS))}"):
        return f()


@needs_gpu
@pytest.mark.parametrize("dtype", [tf.float32, tf.float16, tf.int32], ids=lambda d: d.name)
@pytest.mark.parametrize("op", ["Sum", "Average"])
def test_allreduce_of_gpu_tensors_stays_on_the_gpu(dtype, op):
    x = on_gpu(lambda: tf.fill([4097], tf.cast(R + 1, dtype)))
    y = on_gpu(lambda: hvd.allreduce(x, op=getattr(hvd, op), options=options()))
    assert "GPU" in y.device, y.device
    total = N * (N + 1) / 2
    want = total if op == "Sum" else (total // N if dtype.is_integer else total / N)
    np.testing.assert_allclose(y.numpy().astype(np.float64), np.full([4097], want), rtol=1e-3)


@needs_gpu
def test_grouped_allreduce_on_gpu_in_a_tf_function_with_its_gradient():
    a = on_gpu(lambda: tf.Variable(tf.fill([1000], float(R))))
    b = on_gpu(lambda: tf.Variable(tf.fill([3, 5], float(2 * R))))

    @tf.function
    def step():
        with tf.GradientTape() as tape:
            ra, rb = hvd.grouped_allreduce([a * 1.0, b * 1.0], op=hvd.Sum, options=options())
            loss = tf.reduce_sum(ra) + tf.reduce_sum(rb)
        return ra, rb, tape.gradient(loss, [a, b])

    ra, rb, (ga, gb) = on_gpu(step)
    s = sum(range(N))
    np.testing.assert_allclose(ra.numpy(), np.full([1000], s))
    np.testing.assert_allclose(rb.numpy(), np.full([3, 5], 2 * s))
    np.testing.assert_allclose(ga.numpy(), np.full([1000], N))  # the gradient of a sum is a sum of ones


@needs_gpu
def test_what_the_gpu_kernel_does_not_take_runs_on_the_cpu_kernel():
    x = on_gpu(lambda: tf.fill([8], 1.0))
    y = on_gpu(lambda: hvd.allreduce(x, op=hvd.Sum, prescale_factor=2.0))
    assert "CPU" in y.device, y.device
    np.testing.assert_allclose(y.numpy(), np.full([8], 2.0 * N))
