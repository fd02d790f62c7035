"""Gradients averaged across ranks, with Horovod's names:
DistributedGradientTape, PartialDistributedGradientTape, the TensorFlow 1
DistributedOptimizer, broadcast_global_variables and its session hook."""
from __future__ import annotations

from typing import Any, List, Optional, Sequence

import tensorflow as tf

from . import _buckets
from ._basics import Adasum, Average, reduce_op_value, size
from .process_sets import ProcessSet, global_process_set
from .compression import Compression, compressed
from .functions import broadcast_variables
from .mpi_ops import _grouped_allreduce, pipelined, sparse_allreduce


def _split(items: List[int], parts: int) -> List[List[int]]:
    """``items`` in ``parts`` consecutive groups of near-equal length."""
    parts = max(1, min(parts, len(items)))
    q, r = divmod(len(items), parts)
    out, start = [], 0
    for i in range(parts):
        end = start + q + (1 if i < r else 0)
        out.append(items[start:end])
        start = end
    return out


def _key(variable: Any) -> Any:
    """A hashable identity for tf.Variable, Keras 3's Variable (which has no
    ref()) and a watched tensor."""
    from .gradient_aggregation import variable_key
    return variable_key(variable)


def _check_groups(groups: Any) -> None:
    if groups is None:
        return
    ok = (isinstance(groups, int) and not isinstance(groups, bool) and groups >= 0) or (
        isinstance(groups, (list, tuple)) and all(isinstance(g, (list, tuple)) for g in groups))
    if not ok:
        raise ValueError("groups should be a non-negative integer or a list of list of tf.Variable, "
                         f"got {groups!r}")


def allreduce_gradients(grads: Sequence[Any], variables: Optional[Sequence[Any]] = None,
                        compression: Any = Compression.none, sparse_as_dense: bool = False, op: Any = Average,
                        gradient_predivide_factor: float = 1.0, num_groups: int = 0, groups: Any = None,
                        process_set: ProcessSet = global_process_set, options: Any = None) -> List[Any]:
    """The gradients reduced across ranks: dense ones in buckets of
    bytes_per_pack (the options', else the job's, else 16 MiB), each its own
    op, the last variables' first, so that a bucket is reduced while backprop
    still computes the earlier layers' gradients (_buckets.py); with
    ``groups`` or ``num_groups``, one op per group instead. IndexedSlices by
    all-gather (or densified with sparse_as_dense), None passed through."""
    op = reduce_op_value(op)
    if op == Adasum:
        raise NotImplementedError("op=Adasum: the Adasum reduction is not implemented by Ringmaster")
    if gradient_predivide_factor != 1.0 and op != Average:
        raise ValueError("gradient_predivide_factor not supported with op != Average")
    _check_groups(groups)
    if not process_set.included():
        return list(grads)  # a rank outside the process set keeps its own gradients (Horovod's rule)
    # Average split as Horovod does: 1/f before the sum, f/size after.
    pre, post = (1.0 / gradient_predivide_factor, gradient_predivide_factor) if op == Average else (1.0, 1.0)
    grads = list(grads)
    out: List[Any] = list(grads)
    dense: List[int] = []
    for i, g in enumerate(grads):
        if g is None:
            continue
        if isinstance(g, tf.IndexedSlices):
            if sparse_as_dense:
                grads[i] = tf.convert_to_tensor(g)
            else:
                out[i] = sparse_allreduce(g, op, process_set, options=options)
                continue
        dense.append(i)
    if isinstance(groups, (list, tuple)) and variables is not None:
        refs = [_key(v) for v in variables]
        member = {}
        for gi, group in enumerate(groups):
            for v in group:
                member[_key(v)] = gi
        buckets: dict = {}
        for i in dense:
            buckets.setdefault(member.get(refs[i], -1), []).append(i)
        plan = list(buckets.values())
    elif isinstance(groups, int) and groups > 0:
        plan = _split(dense, groups)
    elif num_groups > 0:
        plan = _split(dense, num_groups)
    else:
        plan = _buckets.plan_for(grads, dense, options)  # buckets, the last layers' first
    with pipelined():  # in a graph, each bucket on the wire while the next is computed (mpi_ops)
        for idx in plan:
            if not idx:
                continue
            reduced = compressed(compression, [grads[i] for i in idx], lambda sent: _grouped_allreduce(
                sent, op=op, prescale_factor=pre, postscale_factor=post, process_set=process_set,
                options=options))
            for i, r in zip(idx, reduced):
                out[i] = r
    return out


class DistributedGradientTape:
    """Wraps a tf.GradientTape: ``gradient()`` returns the gradients reduced
    across ranks (``op``: Average by default). Everything else is the
    wrapped tape's. ``options`` (ours): CommunicationOptions for the reduction."""

    def __init__(self, gradtape: tf.GradientTape, device_dense: str = "", device_sparse: str = "",
                 compression: Any = Compression.none, sparse_as_dense: bool = False, op: Any = Average,
                 gradient_predivide_factor: float = 1.0, num_groups: int = 0, groups: Any = None,
                 process_set: ProcessSet = global_process_set, scale_local_gradients: bool = True,
                 options: Any = None) -> None:
        op = reduce_op_value(op)
        if gradient_predivide_factor != 1.0 and op != Average:
            raise ValueError("gradient_predivide_factor not supported with op != Average")
        _check_groups(groups)
        self._tape = gradtape
        self._kwargs = dict(compression=compression, sparse_as_dense=sparse_as_dense, op=op,
                            gradient_predivide_factor=gradient_predivide_factor, num_groups=num_groups,
                            groups=groups, process_set=process_set, options=options)
        self._local_sources: set = set()
        self._scale_local_gradients = scale_local_gradients

    def register_local_source(self, source: Any) -> None:
        """A variable whose gradient stays local (model parallelism)."""
        self._local_sources.add(_key(source))

    def gradient(self, target: Any, sources: Any, output_gradients: Any = None,
                 use_generic_names: bool = False, **kwargs: Any) -> Any:
        grads = self._tape.gradient(target, sources, output_gradients=output_gradients, **kwargs)
        flat_sources = tf.nest.flatten(sources)
        flat_grads = tf.nest.flatten(grads, expand_composites=False)
        shared = [i for i, s in enumerate(flat_sources) if _key(s) not in self._local_sources]
        reduced = allreduce_gradients([flat_grads[i] for i in shared], [flat_sources[i] for i in shared],
                                      **self._kwargs)
        out = list(flat_grads)
        for i, g in zip(shared, reduced):
            out[i] = g
        if self._scale_local_gradients and self._local_sources:
            # A local gradient divided by the size, as the averaged ones are.
            ps = self._kwargs.get("process_set")
            n = ps.size() if ps is not None and ps.size() else size()
            for i, s in enumerate(flat_sources):
                if _key(s) in self._local_sources and out[i] is not None:
                    out[i] = out[i] / tf.cast(n, out[i].dtype)
        return tf.nest.pack_sequence_as(grads, out, expand_composites=False) if not isinstance(
            grads, list) else out

    def get_local_and_global_gradients(self, target: Any, sources: Any, output_gradients: Any = None,
                                       use_generic_names: bool = False) -> Any:
        """(local, global): lists of (source, gradient) pairs, split by
        register_local_source, with the gradients of gradient()."""
        grads = self.gradient(target, sources, output_gradients=output_gradients)
        local, shared = [], []
        for s, g in zip(sources, grads):
            (local if _key(s) in self._local_sources else shared).append((s, g))
        return local, shared

    def __enter__(self) -> "DistributedGradientTape":
        self._tape.__enter__()
        return self

    def __exit__(self, *exc: Any) -> Any:
        return self._tape.__exit__(*exc)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._tape, name)


def PartialDistributedGradientTape(gradtape: tf.GradientTape, device_dense: str = "", device_sparse: str = "",
                                   compression: Any = Compression.none, sparse_as_dense: bool = False,
                                   op: Any = Average, gradient_predivide_factor: float = 1.0,
                                   num_groups: int = 0, groups: Any = None,
                                   process_set: ProcessSet = global_process_set,
                                   local_layers: Any = None,
                                   scale_local_gradients: bool = True) -> DistributedGradientTape:
    """A DistributedGradientTape whose ``local_layers``' variables keep their
    local gradients (model-parallel parts)."""
    tape = DistributedGradientTape(gradtape, device_dense, device_sparse, compression, sparse_as_dense, op,
                                   gradient_predivide_factor, num_groups, groups, process_set,
                                   scale_local_gradients)
    layers = [] if local_layers is None else (local_layers if isinstance(local_layers, (list, tuple))
                                              else [local_layers])
    for layer in layers:
        if not hasattr(layer, "trainable_weights"):
            raise ValueError("All local layers must be of tf.keras.layers.Layer type.")
        for var in layer.trainable_weights:
            tape.register_local_source(var)
    return tape


def broadcast_global_variables(root_rank: int) -> Any:
    """TensorFlow 1 graphs: broadcasts every global variable from root_rank."""
    if tf.executing_eagerly():
        raise RuntimeError("broadcast_global_variables() does not support eager execution. Please use "
                           "`broadcast_variables(<model/optimizer variables>, root_rank)` instead.")
    return broadcast_variables(tf.compat.v1.global_variables(), root_rank)


if hasattr(tf.compat.v1.train, "SessionRunHook"):
    class BroadcastGlobalVariablesHook(tf.compat.v1.train.SessionRunHook):
        """Broadcasts the global variables from root_rank once the session is
        created (TensorFlow 1 MonitoredTrainingSession)."""

        def __init__(self, root_rank: int, device: str = "",
                     process_set: ProcessSet = global_process_set) -> None:
            super().__init__()
            self.root_rank, self.device, self.process_set = root_rank, device, process_set
            self.bcast_op: Any = None

        def begin(self) -> None:
            if self.bcast_op is None or self.bcast_op.graph != tf.compat.v1.get_default_graph():
                self.bcast_op = broadcast_variables(tf.compat.v1.global_variables(), self.root_rank,
                                                    process_set=self.process_set)

        def after_create_session(self, session: Any, coord: Any) -> None:
            session.run(self.bcast_op)


def _is_keras_optimizer(optimizer: Any) -> bool:
    names = [c.__module__ for c in type(optimizer).__mro__]
    return any(n.startswith(("keras", "tf_keras", "tensorflow.python.keras")) for n in names)


def DistributedOptimizer(optimizer: Any, name: Optional[str] = None, use_locking: bool = False,
                         device_dense: str = "", device_sparse: str = "", compression: Any = Compression.none,
                         sparse_as_dense: bool = False, backward_passes_per_step: int = 1, op: Any = Average,
                         gradient_predivide_factor: float = 1.0, average_aggregated_gradients: bool = False,
                         num_groups: int = 0, groups: Any = None,
                         process_set: ProcessSet = global_process_set) -> Any:
    """Wraps a tf.compat.v1.train.Optimizer (its compute_gradients returns
    the reduced gradients) or a Keras optimizer (see
    ringmaster.tensorflow.keras.DistributedOptimizer)."""
    if _is_keras_optimizer(optimizer):
        from . import keras as _keras
        return _keras.DistributedOptimizer(
            optimizer, name=name, device_dense=device_dense, device_sparse=device_sparse, compression=compression,
            sparse_as_dense=sparse_as_dense, gradient_predivide_factor=gradient_predivide_factor, op=op,
            backward_passes_per_step=backward_passes_per_step,
            average_aggregated_gradients=average_aggregated_gradients, num_groups=num_groups, groups=groups,
            process_set=process_set)
    if not isinstance(optimizer, tf.compat.v1.train.Optimizer):
        raise ValueError(f"Provided optimizer doesn't inherit from either legacy TensorFlow or Keras optimizer: "
                         f"{optimizer}")
    if backward_passes_per_step < 1:
        raise ValueError(f"backward_passes_per_step: must be >= 1, got {backward_passes_per_step}")
    op = reduce_op_value(op)
    if gradient_predivide_factor != 1.0 and op != Average:
        raise ValueError("gradient_predivide_factor not supported with op != Average")
    _check_groups(groups)
    kwargs = dict(compression=compression, sparse_as_dense=sparse_as_dense, op=op,
                  gradient_predivide_factor=gradient_predivide_factor, num_groups=num_groups, groups=groups,
                  process_set=process_set)
    base = type(optimizer)

    class _Distributed(tf.compat.v1.train.Optimizer):
        def __init__(self) -> None:
            super().__init__(name=name or f"Distributed{base.__name__}", use_locking=use_locking)
            self._optimizer = optimizer

            self._aggregation = None
            if backward_passes_per_step > 1:
                from .gradient_aggregation import LocalGradientAggregationHelper
                self._aggregation = LocalGradientAggregationHelper(
                    backward_passes_per_step, lambda g, v: allreduce_gradients(g, v, **kwargs),
                    sparse_as_dense=sparse_as_dense, average_aggregated_gradients=average_aggregated_gradients,
                    process_set=process_set)

        def compute_gradients(self, *args: Any, **kw: Any) -> List[Any]:
            pairs = self._optimizer.compute_gradients(*args, **kw)
            grads, variables = [g for g, _ in pairs], [v for _, v in pairs]
            if self._aggregation is not None:
                grads = self._aggregation.compute_gradients(grads, variables)
            else:
                grads = allreduce_gradients(grads, variables, **kwargs)
            return list(zip(grads, variables))

        def apply_gradients(self, grads_and_vars: Any, global_step: Any = None, name: Any = None) -> Any:
            if self._aggregation is None:
                return self._optimizer.apply_gradients(grads_and_vars, global_step=global_step, name=name)
            pairs = list(grads_and_vars)
            return self._aggregation.apply_gradients(
                lambda: self._optimizer.apply_gradients(pairs, global_step=global_step, name=name),
                self._optimizer, global_step=global_step)

        def get_slot(self, *args: Any, **kw: Any) -> Any:
            return self._optimizer.get_slot(*args, **kw)

        def get_slot_names(self, *args: Any, **kw: Any) -> Any:
            return self._optimizer.get_slot_names(*args, **kw)

        def variables(self, *args: Any, **kw: Any) -> Any:
            return self._optimizer.variables(*args, **kw)

    return _Distributed()
