"""``SyncBatchNormalization``: batch normalization whose training statistics
are those of the global batch (every rank's batch together).

In training, each rank sums its inputs, their squares and its element count
over the reduction axes; one Ringmaster all-reduce (sum) of the three gives
the global mean and variance (E[x^2] - E[x]^2), so ranks with different batch
sizes are weighted by their sizes. The all-reduce has a gradient (the
all-reduced sum of the incoming gradients), so the backward pass sees the
dependence of the statistics on every rank's inputs. Inference uses the
moving averages, as usual. With one rank it is plain BatchNormalization.

The base class is ``tf.keras.layers.BatchNormalization`` (Keras 3, or
tf_keras under TF_USE_LEGACY_KERAS=1), as Horovod's.
"""
from __future__ import annotations

import importlib
from typing import Any

import tensorflow as tf

__all__ = ["SyncBatchNormalization"]

_BatchNormalization = tf.keras.layers.BatchNormalization
_KERAS3 = (_BatchNormalization.__module__ or "").startswith("keras.src.")


def _rm() -> Any:
    return importlib.import_module("ringmaster.tensorflow")


def _sum_across_ranks(x: tf.Tensor) -> tf.Tensor:
    from .keras import _impl

    @tf.custom_gradient
    def allreduce_sum(t):
        def grad(dy):
            return _impl.grouped_allreduce([dy], op=_impl.op_sum())[0]

        return _impl.grouped_allreduce([t], op=_impl.op_sum())[0], grad

    return allreduce_sum(x)


class SyncBatchNormalization(_BatchNormalization):
    """Synchronous batch normalization: statistics all-reduced across ranks
    in training. ``fused=True`` is not supported (ValueError)."""

    def __init__(self, fused: Any = False, **kwargs: Any) -> None:
        if fused in (True, None):
            raise ValueError("SyncBatchNormalization does not support fused=True.")
        if not kwargs.get("name", None):
            kwargs["name"] = "sync_batch_normalization"
        if _KERAS3:
            super().__init__(**kwargs)  # Keras 3 has no fused kernel (nor argument)
        else:
            super().__init__(fused=fused, **kwargs)

    def _global_moments(self, inputs: Any, axes: Any, keep_dims: bool, weights: Any) -> Any:
        x = tf.convert_to_tensor(inputs)
        out_dtype = x.dtype
        if x.dtype in (tf.float16, tf.bfloat16):
            x = tf.cast(x, tf.float32)
        axes = [int(a) for a in axes]
        if weights is None:
            local_sum = tf.reduce_sum(x, axis=axes, keepdims=True)
            local_sq = tf.reduce_sum(tf.square(x), axis=axes, keepdims=True)
            shape = tf.shape(x)
            n = tf.cast(tf.reduce_prod(tf.gather(shape, axes)), x.dtype)
            local_n = tf.ones_like(local_sum) * n
        else:
            w = tf.cast(weights, x.dtype)
            w = tf.broadcast_to(w, tf.shape(x))
            local_sum = tf.reduce_sum(x * w, axis=axes, keepdims=True)
            local_sq = tf.reduce_sum(tf.square(x) * w, axis=axes, keepdims=True)
            local_n = tf.reduce_sum(w, axis=axes, keepdims=True)
        stacked = tf.stack([local_sum, local_sq, local_n])
        total = _sum_across_ranks(stacked)
        g_sum, g_sq, g_n = total[0], total[1], total[2]
        g_n = tf.maximum(g_n, tf.keras.backend.epsilon())
        mean = g_sum / g_n
        variance = tf.maximum(g_sq / g_n - tf.square(mean), 0.0)
        if not keep_dims:
            mean = tf.squeeze(mean, axis=axes)
            variance = tf.squeeze(variance, axis=axes)
        return tf.cast(mean, out_dtype), tf.cast(variance, out_dtype)

    def _moments(self, inputs: Any, *args: Any, **kwargs: Any) -> Any:
        if _rm().size() <= 1:
            return super()._moments(inputs, *args, **kwargs)
        if _KERAS3:
            # Keras 3: _moments(inputs, mask); mean/variance without the reduced axes.
            mask = args[0] if args else kwargs.get("mask")
            weights = None
            if mask is not None:
                weights = tf.expand_dims(tf.cast(mask, tf.float32), -1)
            return self._global_moments(inputs, self._reduction_axes, False, weights)
        # tf_keras: _moments(inputs, reduction_axes, keep_dims, mask=None).
        names = ["reduction_axes", "keep_dims", "mask"]
        values = dict(zip(names, args))
        values.update(kwargs)
        mask = values.get("mask")
        weights = None
        if mask is not None:
            weights = tf.expand_dims(tf.cast(mask, tf.float32), -1)
        return self._global_moments(inputs, values["reduction_axes"], bool(values.get("keep_dims", False)),
                                    weights)
