"""TensorFlow over Ringmaster's collectives: Horovod's API, so a Horovod
user changes one import.

    import ringmaster.tensorflow as hvd     # was: import horovod.tensorflow as hvd
    hvd.init()
    tape = hvd.DistributedGradientTape(tape)

``ringmaster.tensorflow`` has ``horovod.tensorflow``'s names, signatures,
defaults and error types (Horovod 0.28.1; docs/python.md lists every name
and what differs). Beside them, TensorFlow's own spelling for tf.distribute
users: ``all_reduce(reduce_op, values, options=...)`` and ``reduce(op,
value, axis)``; every collective takes ``options=`` (ours or TensorFlow's
CommunicationOptions), merged over the job's ``communication`` block.

The collectives are TensorFlow ops compiled on first import against the
TensorFlow in use (see ``ringmaster.tensorflow.build``). They work eagerly
and inside ``tf.function``; values are plain tensors. CPU kernels only:
tensors on a GPU are copied to host memory by TensorFlow for the op and back.
"""
from __future__ import annotations

from typing import Any, Optional

import ringmaster  # first: loads libringmaster.so.N with RTLD_DEEPBIND, before TensorFlow's gRPC
import tensorflow as tf

from . import _basics, _build
from ._basics import (Adasum, Average, Max, Min, Product, Sum, ccl_built, check_num_rank_power_of_2, cross_rank,
                      cross_size, cuda_built, ddl_built, gloo_built, gloo_enabled,
                      handle_average_backwards_compatibility, init, is_homogeneous, is_initialized, local_rank,
                      local_size, mpi_built, mpi_enabled, mpi_threads_supported, nccl_built, rank, rocm_built,
                      shutdown, size, start_timeline, stop_timeline)
from ._basics import reduce_op_value as _reduce_op_value
from ._data import shard_dataset
from .process_sets import ProcessSet, add_process_set, global_process_set, remove_process_set
from ._tape import (DistributedGradientTape, DistributedOptimizer, PartialDistributedGradientTape,
                    broadcast_global_variables)
from .compression import Compression, compressed
from .functions import allgather_object, broadcast_object, broadcast_object_fn, broadcast_variables
from .mpi_ops import (_allreduce, _grouped_allreduce, _grouped_reducescatter,
                      _reducescatter, allgather, alltoall, barrier, broadcast, broadcast_, grouped_allgather,
                      join, local_rank_op, local_size_op, process_set_included_op, rank_op, size_op,
                      sparse_allreduce)
from .util import _executing_eagerly  # noqa: F401  (Horovod's tests import it from here too)

try:
    from ._tape import BroadcastGlobalVariablesHook  # noqa: F401  (TensorFlow 1 sessions)
except ImportError:  # this TensorFlow has no SessionRunHook
    pass

__all__ = [
    # Horovod's names
    "init", "shutdown", "is_initialized", "rank", "size", "local_rank", "local_size", "cross_rank",
    "cross_size", "is_homogeneous", "rank_op", "size_op", "local_rank_op", "local_size_op",
    "process_set_included_op", "mpi_threads_supported", "mpi_enabled", "mpi_built", "gloo_enabled",
    "gloo_built", "nccl_built", "ddl_built", "ccl_built", "cuda_built", "rocm_built", "start_timeline",
    "stop_timeline", "Average", "Sum", "Adasum", "Min", "Max", "Product", "Compression", "allreduce",
    "grouped_allreduce", "allgather", "grouped_allgather", "broadcast", "broadcast_", "broadcast_variables",
    "broadcast_object", "broadcast_object_fn", "allgather_object", "alltoall", "reducescatter",
    "grouped_reducescatter", "join", "barrier", "DistributedGradientTape", "PartialDistributedGradientTape",
    "DistributedOptimizer", "broadcast_global_variables", "ProcessSet", "global_process_set",
    "add_process_set", "remove_process_set", "SyncBatchNormalization", "LocalGradientAggregationHelper", "keras",
    "elastic", "handle_average_backwards_compatibility", "check_num_rank_power_of_2",
    # TensorFlow's spelling and ours
    "all_reduce", "reduce", "communication_options", "shard_dataset", "op_library_path",
    "MultiWorkerMirroredStrategy",
]

_ops = _build.load()


def op_library_path() -> str:
    """The path of the loaded op library: the package's prebuilt one for this
    TensorFlow, or the one built at first import (in the build cache)."""
    path = _build.loaded_path()
    assert path is not None  # _build.load() ran at import
    return path


def __getattr__(name: str) -> Any:
    # Lazy, so `import ringmaster.tensorflow as hvd; hvd.keras...` works
    # without importing Keras for users who never touch it.
    if name == "keras":
        import importlib
        return importlib.import_module(".keras", __name__)
    if name == "SyncBatchNormalization":
        from .sync_batch_norm import SyncBatchNormalization
        return SyncBatchNormalization
    if name == "LocalGradientAggregationHelper":
        from .gradient_aggregation import LocalGradientAggregationHelper
        return LocalGradientAggregationHelper
    if name in ("MultiWorkerMirroredStrategy", "RingmasterCrossDeviceOps"):
        from . import strategy
        return getattr(strategy, name)
    if name == "elastic":
        import importlib
        return importlib.import_module(".elastic", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# ------------------------------------------------------------ collectives


def _check_sparse(op: int, prescale_factor: float, postscale_factor: float) -> None:
    if op == Adasum:
        raise NotImplementedError("The Adasum reduction does not support sparse tensors (and is not implemented "
                                  "by Ringmaster); pass sparse_as_dense=True")
    if op not in (Sum, Average):
        raise NotImplementedError("Only Sum and Average ops are supported with tf.IndexedSlices")
    if prescale_factor != 1.0 or postscale_factor != 1.0:
        raise NotImplementedError("Pre/postscale_factor are not supported with tf.IndexedSlices")


def _check_adasum(op: int) -> None:
    if op == Adasum:
        raise NotImplementedError("op=Adasum: the Adasum reduction is not implemented by Ringmaster")


def allreduce(tensor: Any, average: Any = None, device_dense: str = "", device_sparse: str = "",
              compression: Any = Compression.none, op: Any = None, prescale_factor: float = 1.0,
              postscale_factor: float = 1.0, name: Optional[str] = None,
              process_set: ProcessSet = global_process_set, ignore_name_scope: bool = False,
              options: Any = None) -> Any:
    """Reduces ``tensor`` (a tf.Tensor, tf.Variable or tf.IndexedSlices)
    across ranks; ``op`` defaults to Average. An IndexedSlices is reduced by
    all-gathering its values and indices, as Horovod does."""
    op = handle_average_backwards_compatibility(op, average)
    if isinstance(tensor, tf.IndexedSlices):
        _check_sparse(op, prescale_factor, postscale_factor)
        return sparse_allreduce(tensor, op, process_set, ignore_name_scope, options)
    _check_adasum(op)
    sent, ctx = compression.compress(tf.convert_to_tensor(tensor))
    reduced = _allreduce(sent, name=name, op=op, prescale_factor=prescale_factor,
                         postscale_factor=postscale_factor, ignore_name_scope=ignore_name_scope,
                         process_set=process_set, options=options)
    return compression.decompress(reduced, ctx)


def grouped_allreduce(tensors: Any, average: Any = None, device_dense: str = "", device_sparse: str = "",
                      compression: Any = Compression.none, op: Any = None, prescale_factor: float = 1.0,
                      postscale_factor: float = 1.0, process_set: ProcessSet = global_process_set,
                      ignore_name_scope: bool = False, name: Optional[str] = None, options: Any = None) -> Any:
    """allreduce() of a list in one op (IndexedSlices each by all-gather)."""
    op = handle_average_backwards_compatibility(op, average)
    tensors = list(tensors)
    if any(isinstance(t, tf.IndexedSlices) for t in tensors):
        _check_sparse(op, prescale_factor, postscale_factor)
    _check_adasum(op)
    out: list = [None] * len(tensors)
    dense = [i for i, t in enumerate(tensors) if not isinstance(t, tf.IndexedSlices)]
    reduced = compressed(compression, [tensors[i] for i in dense], lambda sent: _grouped_allreduce(
        sent, name=name, op=op, prescale_factor=prescale_factor, postscale_factor=postscale_factor,
        ignore_name_scope=ignore_name_scope, process_set=process_set, options=options))
    for i, r in zip(dense, reduced):
        out[i] = r
    for i, t in enumerate(tensors):
        if isinstance(t, tf.IndexedSlices):
            out[i] = sparse_allreduce(t, op, process_set, ignore_name_scope, options)
    return out


def reducescatter(tensor: Any, device_dense: str = "", compression: Any = Compression.none, op: Any = Average,
                  name: Optional[str] = None, process_set: ProcessSet = global_process_set,
                  ignore_name_scope: bool = False, prescale_factor: float = 1.0, postscale_factor: float = 1.0,
                  options: Any = None) -> Any:
    """Reduces ``tensor`` across ranks; rank r keeps its share of the first
    dimension (the first dim % size ranks get one row more)."""
    op = _reduce_op_value(op)
    _check_adasum(op)
    sent, ctx = compression.compress(tf.convert_to_tensor(tensor))
    reduced = _reducescatter(sent, name=name, op=op, ignore_name_scope=ignore_name_scope,
                             process_set=process_set, prescale_factor=prescale_factor,
                             postscale_factor=postscale_factor, options=options)
    return compression.decompress(reduced, ctx)


def grouped_reducescatter(tensors: Any, device_dense: str = "", compression: Any = Compression.none,
                          op: Any = Average, process_set: ProcessSet = global_process_set,
                          ignore_name_scope: bool = False, prescale_factor: float = 1.0,
                          postscale_factor: float = 1.0, options: Any = None) -> Any:
    """reducescatter() of a list in one op."""
    op = _reduce_op_value(op)
    _check_adasum(op)
    return compressed(compression, tensors, lambda sent: _grouped_reducescatter(
        sent, op=op, ignore_name_scope=ignore_name_scope, process_set=process_set,
        prescale_factor=prescale_factor, postscale_factor=postscale_factor, options=options))


# ------------------------------------------------ tf.distribute's spelling


def _reduce_op_name(op: Any) -> str:
    """'sum' or 'mean' (what tf.distribute's reduce ops are) from any spelling."""
    return _basics.engine_reduce_op_name(op) or "adasum"


_warned_sparse = False


def _densify(value: Any) -> Any:
    global _warned_sparse
    if isinstance(value, tf.IndexedSlices):
        if not _warned_sparse:
            _warned_sparse = True
            import warnings
            warnings.warn("ringmaster.tensorflow: converting tf.IndexedSlices to dense tensors for the "
                          "all-reduce (this can use a lot of memory for large embeddings)", stacklevel=3)
        return tf.convert_to_tensor(value)
    return value


def all_reduce(reduce_op: Any, values: Any, options: Any = None, name: Optional[str] = None) -> Any:
    """tf.distribute's argument order: reduces ``values`` (a tensor or a
    nested list/tuple/dict of tensors; ``None`` entries are passed through)
    across all ranks, in one op.

    reduce_op: "sum", "mean" (also "min", "max", "product"), a
    tf.distribute.ReduceOp or Horovod's constants. options:
    ringmaster.CommunicationOptions, tf.distribute.experimental.CommunicationOptions
    or CollectiveHints (None: the job's defaults). Returns the same structure.
    IndexedSlices are converted to dense tensors.
    """
    op = _reduce_op_value(reduce_op)
    _check_adasum(op)
    if type(values) in (list, tuple) and all(isinstance(v, tf.Tensor) for v in values):
        # A plain list of tensors (the common call): no tf.nest round trip,
        # which cost more than the op's own dispatch for a small eager call.
        if not values:
            return values
        return type(values)(_grouped_allreduce(list(values), name=name, op=op, options=options))
    flat = tf.nest.flatten(values, expand_composites=False)
    idx = [i for i, v in enumerate(flat) if v is not None]
    if not idx:
        return values
    reduced = _grouped_allreduce([tf.convert_to_tensor(_densify(flat[i])) for i in idx], name=name, op=op,
                                 options=options)
    out = list(flat)
    for i, r in zip(idx, reduced):
        out[i] = r
    return tf.nest.pack_sequence_as(values, out)


def reduce(reduce_op: Any, value: Any, axis: Optional[int] = None, options: Any = None) -> Any:
    """tf.distribute.Strategy.reduce's semantics. With ``axis`` it is the
    engine's Reduce (the one place that reduces along an axis, as
    ringmaster.Communicator.reduce is): each rank first reduces its value
    along that axis; MEAN then divides the global sum by the global element
    count along the axis (a short last batch weighs right). It runs on host
    memory, through tf.numpy_function. Without ``axis`` it is
    :func:`all_reduce`."""
    op = _reduce_op_name(reduce_op)
    if axis is None:
        return all_reduce(op, value, options=options)
    if op not in ("sum", "mean"):
        raise ValueError(f"reduce_op: reduce() along an axis supports sum and mean, got {reduce_op!r}")
    comm = _basics._comm()

    def along_axis(v: Any) -> Any:
        t = tf.convert_to_tensor(_densify(v))
        rank = t.shape.rank
        a = axis + rank if rank is not None and axis < 0 else axis
        out = tf.numpy_function(lambda x: comm.reduce(op, x, axis=a, options=options), [t], t.dtype,
                                stateful=True)
        if rank is not None and 0 <= a < rank:
            out.set_shape(t.shape[:a].concatenate(t.shape[a + 1:]))
        return out

    return tf.nest.pack_sequence_as(value, [along_axis(v) for v in tf.nest.flatten(value)])


def communication_options() -> "tf.distribute.experimental.CommunicationOptions":
    """The job's options (RINGMASTER_IMPLEMENTATION, RINGMASTER_BYTES_PER_PACK,
    RINGMASTER_TIMEOUT_SECONDS, as the operator injects them) as TensorFlow's
    CommunicationOptions."""
    from ringmaster import _core
    try:
        # Read as the communicator reads them (the C API): one parser.
        bpp, timeout, impl, _ = _core.job_options()
    except ringmaster.InvalidArgumentError as e:
        raise ValueError(str(e)) from None
    impls = tf.distribute.experimental.CommunicationImplementation
    return tf.distribute.experimental.CommunicationOptions(
        bytes_per_pack=bpp, timeout_seconds=timeout if timeout > 0 else None,
        implementation=getattr(impls, _core.enum_names("implementation")[impl]))


