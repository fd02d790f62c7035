"""Local gradient aggregation: ``backward_passes_per_step`` for the
distributed optimizers.

Each backward pass adds its gradients to per-variable accumulators on this
rank; only every ``backward_passes_per_step``-th pass all-reduces the sums
(one collective for the whole list) and lets the optimizer apply them. The
other passes only advance the optimizer's iteration counter, so learning rate
schedules still see every batch.

Interface (what an optimizer wrapper calls; eager and graph/``tf.function``
alike)::

    helper = LocalGradientAggregationHelper(
        backward_passes_per_step=4,
        allreduce_func=lambda grads, variables: reduced_grads,  # one collective, same order
        sparse_as_dense=False, average_aggregated_gradients=False,
        process_set=None, scale_local_gradients=True)
    helper.register_local_var(var)       # never all-reduced (see below)
    grads = helper.compute_gradients(grads, variables)
    helper.apply_gradients(lambda: base_apply(grads), optimizer, global_step=None)

``compute_gradients(grads, variables)`` adds ``grads`` to the accumulators and
counts the pass; on the ``backward_passes_per_step``-th pass it returns the
all-reduced sums (divided by ``backward_passes_per_step`` when
``average_aggregated_gradients``) and clears the accumulators, otherwise it
returns the local sums (which ``apply_gradients`` then ignores).
``apply_gradients(apply_fn, optimizer, global_step=None)`` runs ``apply_fn()``
on the pass that reduced, and otherwise increments ``optimizer.iterations``
(when the optimizer has one) and ``global_step`` (a TF1 global step
variable, when given). Eagerly these are Python branches; in a graph they are
``tf.cond`` on ``counter`` (every rank takes the same branch, so the
collective runs on all of them or on none). ``counter`` (a ``tf.Variable``) is
the number of passes since the last reduction.

Variables registered with ``register_local_var`` keep their own rank's
gradient (not all-reduced); with ``scale_local_gradients`` it is divided by
the number of ranks, so that its scale matches the averaged ones.

``tf.IndexedSlices`` gradients are made dense with ``sparse_as_dense``;
without it they raise ``ValueError`` (a sparse gradient cannot be summed into
a fixed accumulator).
"""
from __future__ import annotations

from typing import Any, Callable, List, Optional, Sequence

import tensorflow as tf

__all__ = ["LocalGradientAggregationHelper", "LocalGradientAggregationHelperEager", "variable_key",
           "reduce_except_local"]


def variable_key(var: Any) -> Any:
    """A hashable identity for a tf.Variable or a Keras 3 variable (the same
    key for a Keras 3 variable and the tf.Variable it wraps)."""
    if isinstance(var, tf.Variable):
        return var.ref()
    inner = getattr(var, "_value", None)
    if isinstance(inner, tf.Variable):
        return inner.ref()
    return id(var)


def _group_size(process_set: Any) -> int:
    if process_set is not None and hasattr(process_set, "size"):
        try:
            return int(process_set.size())
        except Exception:  # a process set not registered yet: fall back to the group
            pass
    import ringmaster.tensorflow as rm
    return int(rm.size())


def reduce_except_local(grads: Sequence[Any], variables: Sequence[Any], allreduce_func: Callable,
                        local_keys: set, scale_local_gradients: bool, process_set: Any = None) -> List[Any]:
    """All-reduces the gradients of the variables not in ``local_keys`` (one
    call of ``allreduce_func(grads, variables)``); the local ones keep this
    rank's value, divided by the number of ranks if ``scale_local_gradients``."""
    grads, variables = list(grads), list(variables)
    if not local_keys:
        return list(allreduce_func(grads, variables))
    shared = [i for i, v in enumerate(variables) if variable_key(v) not in local_keys]
    out = list(grads)
    if shared:
        reduced = allreduce_func([grads[i] for i in shared], [variables[i] for i in shared])
        for i, g in zip(shared, reduced):
            out[i] = g
    if scale_local_gradients:
        n = _group_size(process_set)
        for i, v in enumerate(variables):
            g = out[i]
            if g is None or variable_key(v) not in local_keys:
                continue
            if isinstance(g, tf.IndexedSlices):
                out[i] = tf.IndexedSlices(g.values / tf.cast(n, g.values.dtype), g.indices, g.dense_shape)
            else:
                out[i] = g / tf.cast(n, g.dtype)
    return out


class LocalGradientAggregationHelper:
    """Accumulates gradients locally and all-reduces them every
    ``backward_passes_per_step`` passes (see the module's docstring)."""

    def __init__(self, backward_passes_per_step: int, allreduce_func: Callable, sparse_as_dense: bool = False,
                 average_aggregated_gradients: bool = False, process_set: Any = None,
                 scale_local_gradients: bool = True, **_ignored: Any) -> None:
        # **_ignored: Horovod's graph helper also takes rank= and optimizer_type=.
        if int(backward_passes_per_step) <= 0:
            raise ValueError("backward_passes_per_step must be > 0")
        self.backward_passes_per_step = int(backward_passes_per_step)
        self.allreduce_grads = allreduce_func
        self.sparse_as_dense = bool(sparse_as_dense)
        self.average_aggregated_gradients = bool(average_aggregated_gradients)
        self.process_set = process_set
        self.scale_local_gradients = bool(scale_local_gradients)
        self._local_vars: set = set()
        self.locally_aggregated_grads: dict = {}
        with tf.init_scope():
            self.counter = tf.Variable(0, dtype=tf.int32, trainable=False, name="aggregation_counter")

    def register_local_var(self, var: Any) -> None:
        """This variable's gradient stays local (never all-reduced)."""
        self._local_vars.add(variable_key(var))

    # -- accumulation

    def _dense(self, grad: Any) -> Any:
        if isinstance(grad, tf.IndexedSlices):
            if not self.sparse_as_dense:
                raise ValueError("IndexedSlices are not supported when `backward_passes_per_step` > 1 and "
                                 "`sparse_as_dense` is False: pass sparse_as_dense=True")
            return tf.convert_to_tensor(grad)
        return grad

    def _accumulator(self, index: int, grad: Any, var: Any) -> tf.Variable:
        acc = self.locally_aggregated_grads.get(index)
        if acc is None:
            shape = var.shape if var is not None and var.shape.is_fully_defined() else grad.shape
            # Lifted out of any tf.function: the accumulators live across steps
            # (and across retraces of the step function).
            with tf.init_scope():
                acc = tf.Variable(tf.zeros(shape, dtype=grad.dtype), trainable=False,
                                  name=f"aggregated_grad_{index}")
            self.locally_aggregated_grads[index] = acc
        return acc

    def _reduce(self, sums: List[Any], variables: Sequence[Any]) -> List[Any]:
        idx = [i for i, g in enumerate(sums) if g is not None]
        reduced = reduce_except_local([sums[i] for i in idx], [variables[i] for i in idx], self.allreduce_grads,
                                      self._local_vars, self.scale_local_gradients, self.process_set)
        out: List[Any] = [None] * len(sums)
        for i, g in zip(idx, reduced):
            if self.average_aggregated_gradients:
                g = g / tf.cast(self.backward_passes_per_step, g.dtype)
            out[i] = g
        return out

    def _clear(self) -> List[Any]:
        ops = [self.counter.assign(0)]
        for acc in self.locally_aggregated_grads.values():
            ops.append(acc.assign(tf.zeros_like(acc)))
        return ops

    def compute_gradients(self, grads: Sequence[Any], variables: Sequence[Any]) -> List[Any]:
        grads = [None if g is None else self._dense(g) for g in grads]
        variables = list(variables) if variables is not None else [None] * len(grads)
        updates = []
        for i, (g, v) in enumerate(zip(grads, variables)):
            if g is None:
                continue
            acc = self._accumulator(i, g, v)
            updates.append(acc.assign_add(g))
        with tf.control_dependencies(updates):
            sums = [None if g is None else self.locally_aggregated_grads[i].read_value()
                    for i, g in enumerate(grads)]
            counted = self.counter.assign_add(1)

        if tf.executing_eagerly():
            if int(self.counter.numpy()) != self.backward_passes_per_step:
                return sums
            reduced = self._reduce(sums, variables)
            self._clear()
            return reduced

        present = [i for i, s in enumerate(sums) if s is not None]

        def reduce_and_clear():
            reduced = self._reduce(sums, variables)
            with tf.control_dependencies([r for r in reduced if r is not None]):
                clears = self._clear()
            with tf.control_dependencies(clears):
                return [tf.identity(reduced[i]) for i in present]

        def keep():
            return [tf.identity(sums[i]) for i in present]

        with tf.control_dependencies([counted]):
            pred = tf.equal(self.counter.read_value(), self.backward_passes_per_step)
        chosen = tf.cond(pred, reduce_and_clear, keep)
        chosen = chosen if isinstance(chosen, (list, tuple)) else [chosen]
        out: List[Any] = [None] * len(sums)
        for i, t in zip(present, chosen):
            out[i] = t
        return out

    # -- application

    @staticmethod
    def _bump(optimizer: Any, global_step: Any) -> List[Any]:
        ops = []
        it = None
        if optimizer is not None:
            it = getattr(optimizer, "_iterations", None)
            if it is None or not hasattr(it, "assign_add"):
                try:
                    it = optimizer.iterations
                except Exception:
                    it = None
        if it is not None and hasattr(it, "assign_add"):
            ops.append(it.assign_add(1))
        if global_step is not None:
            ops.append(global_step.assign_add(1))
        return ops

    def apply_gradients(self, apply_grads_closure: Callable[[], Any], optimizer: Any = None, *args: Any,
                        global_step: Any = None, **kwargs: Any) -> Any:
        """Runs ``apply_grads_closure()`` on the pass that reduced; else
        advances ``optimizer.iterations`` and ``global_step``. (Extra
        positional/keyword arguments are accepted and ignored, as Horovod's
        helper is called with the optimizer's own arguments.)"""
        if tf.executing_eagerly():
            if int(self.counter.numpy()) == 0:
                return apply_grads_closure()
            self._bump(optimizer, global_step)
            return None

        def apply():
            result = apply_grads_closure()
            deps = [] if result is None or isinstance(result, (bool, int)) else [result]
            with tf.control_dependencies(deps):
                return tf.constant(True)

        def skip():
            with tf.control_dependencies(self._bump(optimizer, global_step)):
                return tf.constant(False)

        return tf.cond(tf.equal(self.counter.read_value(), 0), apply, skip)


# Horovod has a separate class for eager execution; this one does both.
LocalGradientAggregationHelperEager = LocalGradientAggregationHelper
