"""``horovod.tensorflow.keras`` (Horovod 0.28.1) over Ringmaster.

    import ringmaster.tensorflow.keras as hvd   # was: import horovod.tensorflow.keras as hvd
    hvd.init()
    opt = hvd.DistributedOptimizer(tf.keras.optimizers.SGD(0.01 * hvd.size()))
    model.compile(optimizer=opt, loss=..., jit_compile=False)   # the collectives have no XLA kernel
    model.fit(..., callbacks=[hvd.callbacks.BroadcastGlobalVariablesCallback(0),
                              hvd.callbacks.MetricAverageCallback()])

Works with Keras 3 and with tf_keras optimizers and models (``tf.keras`` is
tf_keras under TF_USE_LEGACY_KERAS=1); the optimizer's family is read from
the optimizer itself. There is no strategy scope: the model and optimizer are
ordinary single-device objects, and one Ringmaster collective all-reduces the
gradients of a step.

The basics (``init``, ``rank``, ``size``, ``Average``, ``Compression``, ...)
are ``ringmaster.tensorflow``'s, looked up when first used.
"""
from __future__ import annotations

from typing import Any

import tensorflow as tf

from . import _impl, _optimizer, callbacks, checkpoint, elastic

# Names re-exported from ringmaster.tensorflow on first access (so importing
# this module never needs ringmaster.tensorflow to be fully initialised).
_REEXPORTS = (
    "init", "shutdown", "is_initialized", "start_timeline", "stop_timeline",
    "size", "local_size", "cross_size", "rank", "local_rank", "cross_rank",
    "mpi_threads_supported", "mpi_enabled", "mpi_built", "gloo_enabled", "gloo_built",
    "nccl_built", "ddl_built", "ccl_built", "cuda_built", "rocm_built",
    "ProcessSet", "global_process_set", "add_process_set", "remove_process_set",
    "Average", "Sum", "Adasum", "Min", "Max", "Product", "Compression",
)

__all__ = list(_REEXPORTS) + [
    "DistributedOptimizer", "broadcast_global_variables", "allreduce", "allgather", "broadcast",
    "reducescatter", "load_model", "callbacks", "checkpoint", "elastic", "SyncBatchNormalization",
]


def __getattr__(name: str) -> Any:
    if name in _REEXPORTS:
        return _impl.rm_attr(name)
    if name == "SyncBatchNormalization":
        from ..sync_batch_norm import SyncBatchNormalization
        return SyncBatchNormalization
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list:
    return sorted(set(globals()) | set(__all__))


class _Default:
    """A default argument resolved from ringmaster.tensorflow at call time."""

    def __init__(self, name: str) -> None:
        self.name = name

    def resolve(self) -> Any:
        if self.name == "Compression.none":
            comp = getattr(_impl.rm(), "Compression", None)
            return None if comp is None else comp.none
        return getattr(_impl.rm(), self.name, None)

    def __repr__(self) -> str:
        return self.name


_COMPRESSION_NONE = _Default("Compression.none")
_GLOBAL_PROCESS_SET = _Default("global_process_set")
_AVERAGE = _Default("Average")


def _resolve(value: Any) -> Any:
    return value.resolve() if isinstance(value, _Default) else value


def DistributedOptimizer(optimizer: Any, name: Any = None, device_dense: str = '', device_sparse: str = '',
                         compression: Any = _COMPRESSION_NONE, sparse_as_dense: bool = False,
                         gradient_predivide_factor: float = 1.0, op: Any = _AVERAGE,
                         backward_passes_per_step: int = 1, average_aggregated_gradients: bool = False,
                         num_groups: int = 0, groups: Any = None, process_set: Any = _GLOBAL_PROCESS_SET,
                         scale_local_gradients: bool = True) -> Any:
    """An optimizer of the same class and config as ``optimizer`` whose
    gradients are combined across ranks (``op``: Average or Sum) before they
    are applied.

    Keras 3 optimizers: ``apply`` (what ``apply_gradients`` and ``model.fit``
    call) reduces the gradients. tf_keras optimizers (new and legacy):
    ``compute_gradients``/``_compute_gradients``/``get_gradients`` (what
    ``minimize`` and ``model.fit`` call) return them reduced, as Horovod's.

    backward_passes_per_step > 1 accumulates that many passes locally and
    reduces and applies once (``average_aggregated_gradients``: divide the sum
    by backward_passes_per_step); the counter is ``opt._agg_helper.counter``.
    sparse_as_dense makes ``tf.IndexedSlices`` gradients dense first.
    gradient_predivide_factor f scales by 1/f before the sum and f/size after.
    groups: an int (that many collectives) or lists of variables reduced
    together; default one collective for all gradients. device_dense /
    device_sparse are accepted for compatibility (the collectives run where
    ringmaster.tensorflow places them).
    """
    op = _resolve(op)
    groups = _optimizer.check_optimizer_args(op, gradient_predivide_factor, num_groups, groups)
    return _optimizer.create_distributed_optimizer(
        optimizer, name=name, compression=_resolve(compression), sparse_as_dense=sparse_as_dense,
        gradient_predivide_factor=gradient_predivide_factor, op=op,
        backward_passes_per_step=backward_passes_per_step,
        average_aggregated_gradients=average_aggregated_gradients, groups=groups,
        process_set=_resolve(process_set), scale_local_gradients=scale_local_gradients)


def broadcast_global_variables(root_rank: int) -> Any:
    """Broadcasts the TF1 global variables from root_rank (graph mode only;
    eagerly it raises RuntimeError, as Horovod's: use
    callbacks.BroadcastGlobalVariablesCallback or broadcast_variables)."""
    return _impl.broadcast_global_variables(root_rank)


def allreduce(value: Any, name: Any = None, average: Any = None, prescale_factor: float = 1.0,
              postscale_factor: float = 1.0, op: Any = None, compression: Any = _COMPRESSION_NONE) -> Any:
    """Reduces a tensor-compatible value across ranks (``op`` default
    Average). Returns a tensor (eagerly), the value in graph mode."""
    return _impl.allreduce(value, name, average, prescale_factor, postscale_factor, op, _resolve(compression))


def allgather(value: Any, name: Any = None) -> Any:
    """Concatenates every rank's value along the first dimension (rank order)."""
    return _impl.allgather(value, name)


def broadcast(value: Any, root_rank: int, name: Any = None) -> Any:
    """root_rank's value on every rank."""
    return _impl.broadcast(value, root_rank, name)


def reducescatter(value: Any, name: Any = None, op: Any = _AVERAGE) -> Any:
    """Reduces across ranks and gives each rank its slice of the first dimension."""
    return _impl.reducescatter(value, name, _resolve(op))


def load_model(filepath: Any, custom_optimizers: Any = None, custom_objects: Any = None,
               compression: Any = _COMPRESSION_NONE, legacy_opts: bool = False) -> Any:
    """``tf.keras.models.load_model`` whose restored optimizer is a
    DistributedOptimizer of the saved class (its state included).
    custom_optimizers: more optimizer classes to wrap; legacy_opts: the saved
    optimizer is a ``tf.keras.optimizers.legacy`` one."""
    compression = _resolve(compression)

    def make_class(cls: type) -> type:
        return _optimizer.distributed_class(cls, compression=compression, op=_impl.op_average(),
                                       process_set=_impl.default_process_set())

    return _optimizer.load_model(tf.keras, make_class, filepath, custom_optimizers, custom_objects, legacy_opts)
