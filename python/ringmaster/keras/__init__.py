"""``horovod.keras`` (Horovod 0.28.1) over Ringmaster: the same API as
``ringmaster.tensorflow.keras`` for the standalone ``keras`` package.

    import ringmaster.keras as hvd              # was: import horovod.keras as hvd
    hvd.init()
    model.compile(optimizer=hvd.DistributedOptimizer(keras.optimizers.SGD(0.01 * hvd.size())), ...)

The optimizer's family (Keras 3 or tf_keras) is read from the optimizer
itself; ``load_model`` uses ``keras.models.load_model``; the callbacks
subclass ``keras.callbacks.Callback``.
"""
from __future__ import annotations

from typing import Any

import keras

from ringmaster.tensorflow.keras import _impl, _optimizer
from ringmaster.tensorflow.keras import _Default, _resolve

from ringmaster.tensorflow.keras import checkpoint

from . import callbacks

_REEXPORTS = (
    "init", "shutdown", "is_initialized", "start_timeline", "stop_timeline",
    "size", "local_size", "cross_size", "rank", "local_rank", "cross_rank",
    "mpi_threads_supported", "mpi_enabled", "mpi_built", "gloo_enabled", "gloo_built",
    "nccl_built", "ddl_built", "ccl_built", "cuda_built", "rocm_built",
    "ProcessSet", "global_process_set", "add_process_set", "remove_process_set",
    "Average", "Sum", "Adasum", "Min", "Max", "Product", "Compression",
)

__all__ = list(_REEXPORTS) + [
    "DistributedOptimizer", "PartialDistributedOptimizer", "broadcast_global_variables", "allreduce",
    "allgather", "broadcast", "reducescatter", "load_model", "callbacks", "checkpoint",
]


def __getattr__(name: str) -> Any:
    if name in _REEXPORTS:
        return _impl.rm_attr(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list:
    return sorted(set(globals()) | set(__all__))


_COMPRESSION_NONE = _Default("Compression.none")
_GLOBAL_PROCESS_SET = _Default("global_process_set")
_AVERAGE = _Default("Average")


def DistributedOptimizer(optimizer: Any, name: Any = None, device_dense: str = '', device_sparse: str = '',
                         compression: Any = _COMPRESSION_NONE, sparse_as_dense: bool = False,
                         gradient_predivide_factor: float = 1.0, op: Any = _AVERAGE, num_groups: int = 0,
                         groups: Any = None) -> Any:
    """An optimizer of the same class and config as ``optimizer`` whose
    gradients are averaged (``op``: Average or Sum) across ranks before they
    are applied; see ringmaster.tensorflow.keras.DistributedOptimizer."""
    op = _resolve(op)
    groups = _optimizer.check_optimizer_args(op, gradient_predivide_factor, num_groups, groups)
    return _optimizer.create_distributed_optimizer(
        optimizer, name=name, compression=_resolve(compression), sparse_as_dense=sparse_as_dense,
        gradient_predivide_factor=gradient_predivide_factor, op=op, groups=groups,
        process_set=_impl.default_process_set())


def _is_layer(layer: Any) -> bool:
    if isinstance(layer, keras.layers.Layer):
        return True
    return hasattr(layer, "trainable_weights") and hasattr(layer, "call")


def PartialDistributedOptimizer(optimizer: Any, name: Any = None, device_dense: str = '', device_sparse: str = '',
                                compression: Any = _COMPRESSION_NONE, sparse_as_dense: bool = False,
                                gradient_predivide_factor: float = 1.0, op: Any = _AVERAGE, groups: Any = None,
                                process_set: Any = _GLOBAL_PROCESS_SET, local_layers: Any = None,
                                scale_local_gradients: bool = True) -> Any:
    """A DistributedOptimizer whose gradients for the trainable weights of
    ``local_layers`` stay on each rank (not all-reduced; divided by the
    number of ranks when scale_local_gradients)."""
    op = _resolve(op)
    groups = _optimizer.check_optimizer_args(op, gradient_predivide_factor, 0, groups)
    if local_layers is None:
        local_layers = []
    elif _is_layer(local_layers):
        local_layers = [local_layers]
    elif not all(_is_layer(layer) for layer in local_layers):
        raise ValueError("All local layers must be of tf.keras.layers.Layer type.")
    local_vars = [v for layer in local_layers for v in layer.trainable_weights]
    return _optimizer.create_distributed_optimizer(
        optimizer, local_vars=local_vars, name=name, compression=_resolve(compression),
        sparse_as_dense=sparse_as_dense, gradient_predivide_factor=gradient_predivide_factor, op=op,
        groups=groups, process_set=_resolve(process_set), scale_local_gradients=scale_local_gradients)


def broadcast_global_variables(root_rank: int) -> Any:
    """Broadcasts the TF1 global variables from root_rank (graph mode only;
    eagerly it raises RuntimeError, as Horovod's)."""
    return _impl.broadcast_global_variables(root_rank)


def allreduce(value: Any, name: Any = None, average: bool = True, prescale_factor: float = 1.0,
              postscale_factor: float = 1.0, op: Any = None, compression: Any = _COMPRESSION_NONE) -> Any:
    """Reduces a tensor-compatible value across ranks: the average if
    ``average`` (else the sum), unless ``op`` is given."""
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
    """``keras.models.load_model`` whose restored optimizer is a
    DistributedOptimizer of the saved class (its state included)."""
    compression = _resolve(compression)

    def make_class(cls: type) -> type:
        return _optimizer.distributed_class(cls, compression=compression, op=_impl.op_average(),
                                       process_set=_impl.default_process_set())

    return _optimizer.load_model(keras, make_class, filepath, custom_optimizers, custom_objects, legacy_opts)
