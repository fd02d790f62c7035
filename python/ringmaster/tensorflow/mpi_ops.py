"""The collectives as TensorFlow ops, with Horovod's names and signatures
(``horovod.tensorflow.mpi_ops``), and their gradients.

Every op first agrees with the other members on what is being done (the
kernel all-gathers one small record): a member whose shapes, dtypes, root or
op differ makes the call fail with FailedPreconditionError on every member,
naming the members and their shapes, and the group stays usable.

Ordering: every rank must issue the same collectives in the same order.
Inside a graph each op gets a control dependency on the previous Ringmaster
op of the same graph, so the program order is the execution order. Inside
``pipelined()`` (the gradient buckets) an all-reduce is two ops: its Start,
ordered so, hands the call to the engine and returns; its Wait, which
nothing is ordered after, ends when the engine is done. The next bucket
then reaches the engine while this one is on the wire.
"""
from __future__ import annotations

import contextlib
import contextvars
import os
import re
import threading
import weakref
from typing import Any, Callable, Iterator, List, Optional, Sequence

import ringmaster  # first: loads libringmaster.so.N with RTLD_DEEPBIND, before TensorFlow's gRPC
import tensorflow as tf
from tensorflow.python.framework import ops as _tf_ops

from . import _basics, _build  # _basics: where Horovod's tests look (hvd.mpi_ops._basics)
from ._basics import (Average, Sum, Adasum, Min, Max, Product, ccl_built, cross_rank, cross_size,  # noqa: F401
                      cuda_built, ddl_built, gloo_built, gloo_enabled, handle_average_backwards_compatibility, init,
                      is_homogeneous, is_initialized, local_rank, local_size, mpi_built, mpi_enabled,
                      mpi_threads_supported, nccl_built, rank, reduce_op_value, rocm_built, shutdown, size,
                      start_timeline, stop_timeline)
from . import process_sets
from .process_sets import (ProcessSet, add_process_set, check_process_set, global_process_set,  # noqa: F401
                           remove_process_set, root_in_set)

_ops = _build.load()  # builds on the first import (cached), then tf.load_op_library

_lock = threading.Lock()
_last_op: "weakref.WeakKeyDictionary[Any, Any]" = weakref.WeakKeyDictionary()
_pipelined: "contextvars.ContextVar[bool]" = contextvars.ContextVar("ringmaster_pipelined", default=False)
_gpus: List[bool] = []  # [whether TensorFlow sees a GPU], once asked


def _normalize_name(name: str) -> str:
    """An op name TensorFlow accepts."""
    return re.sub("[^a-zA-Z0-9_]", "_", name)


def _op_name(name: Optional[str], default: Callable[[], str]) -> Optional[str]:
    if tf.executing_eagerly():
        return None
    return _normalize_name(name if name is not None else default())


# Whose error types the ops made here raise for a mismatch across members:
# Horovod's (FailedPreconditionError) by default, TensorFlow's strategy's
# (InvalidArgumentError, "Shape mismatch ...") inside tensorflow_errors().
_errors: contextvars.ContextVar[str] = contextvars.ContextVar("ringmaster_errors", default="horovod")


@contextlib.contextmanager
def tensorflow_errors() -> Iterator[None]:
    """The ops made in this block raise TensorFlow's strategy's error types
    (our MultiWorkerMirroredStrategy makes its ops in one)."""
    token = _errors.set("tensorflow")
    try:
        yield
    finally:
        _errors.reset(token)


@contextlib.contextmanager
def pipelined() -> Iterator[None]:
    """Inside a graph, the host all-reduces made in this block are split in
    a Start and a Wait (see the top), so that consecutive calls are on the
    wire back to back. Eager calls, calls of at most 256 bytes, calls that
    may run on a GPU and every call under RINGMASTER_TF_SPLIT_BUCKETS=0
    keep one op."""
    token = _pipelined.set(True)
    try:
        yield
    finally:
        _pipelined.reset(token)


def _split_allreduce(tensors: Sequence[Any], device: Optional[str]) -> bool:
    """Whether an all-reduce of ``tensors`` is made as Start and Wait."""
    if not _pipelined.get() or tf.executing_eagerly() or os.environ.get("RINGMASTER_TF_SPLIT_BUCKETS") == "0":
        return False
    if device is None:  # where TensorFlow places it: on a GPU, if it sees one
        if not _gpus:
            _gpus.append(bool(tf.config.list_logical_devices("GPU")))
        if _gpus[0]:
            return False
    from . import _buckets
    sizes = [_buckets.nbytes(t) for t in tensors]
    return None in sizes or sum(sizes) > 256  # at most 256 bytes: the agreement carries them


def _option_attrs(options: Any) -> dict:
    """The op's option attributes: rm_options' fields, as the core encodes
    them, and whose error types it raises."""
    bpp, timeout, implementation, algorithm = ringmaster.CommunicationOptions.from_any(options)._to_c()
    return {"bytes_per_pack": bpp, "timeout_seconds": timeout, "implementation": implementation,
            "algorithm": algorithm, "errors": _errors.get()}


def _check_no_xla() -> None:
    from tensorflow.python.ops import control_flow_util
    if control_flow_util.GraphOrParentsInXlaContext(tf.compat.v1.get_default_graph()):
        raise ValueError(
            "ringmaster.tensorflow: the Ringmaster collectives have no XLA kernel and cannot run inside a "
            "function compiled with jit_compile=True. Compile the Keras model with "
            "model.compile(..., jit_compile=False) (Keras 3 picks XLA automatically when a GPU is visible), "
            "or use tf.function(jit_compile=False).")


def _issue(make_op: Callable[[], Any]) -> Any:
    """Runs one Ringmaster op; in a graph, after the previous one of that graph."""
    if tf.executing_eagerly():
        return make_op()
    _check_no_xla()
    graph = tf.compat.v1.get_default_graph()
    with _lock:
        prev = _last_op.get(graph)
        with tf.control_dependencies([prev] if prev is not None else []):
            out = make_op()
        first = out[0] if isinstance(out, (list, tuple)) else out
        op = getattr(first, "op", first)
        if op is not None:
            _last_op[graph] = op
    return out


def _list_op(tensors: Sequence[Any], process_set: ProcessSet, name: Optional[str], what: str,
             make: Callable[[List[tf.Tensor], Optional[str], int], Any]) -> List[tf.Tensor]:
    """One op over a list of tensors (none: no op): the process set checked
    (make gets its id), a graph name derived from the tensors', issued after
    the graph's previous Ringmaster op."""
    set_id = check_process_set(process_set)
    ts = [tf.convert_to_tensor(v) for v in tensors]
    if not ts:
        return []
    name = _op_name(name, lambda: f"Ringmaster{what}_{ts[0].name}" if len(ts) == 1 else
                    f"RingmasterGrouped{what}_{ts[0].name}_{ts[-1].name}")
    return list(_issue(lambda: make(ts, name, set_id)))


def _set_of(op: Any) -> ProcessSet:
    """The process set an op of ours ran in (its gradient runs in the same)."""
    set_id = op.get_attr("process_set_id")
    if set_id == 0:
        return global_process_set
    ps = ProcessSet(process_sets._sets[set_id][0])
    ps.process_set_id = set_id
    return ps


def assign(variable: Any, value: Any) -> Any:
    """variable := value for tf.Variable, Keras 3's Variable and TF1's RefVariable."""
    if hasattr(variable, "assign"):
        return variable.assign(value)
    return tf.compat.v1.assign(variable, value)


# ------------------------------------------------------------------ ops


def _allreduce_device(set_id: int, prescale_factor: float, postscale_factor: float) -> Optional[str]:
    """Where the all-reduce must run: None (where TensorFlow places it: GPU
    tensors on the op's GPU kernel) unless the GPU kernel does not take the
    call (a process set, pre/post-scaling) or RINGMASTER_TF_GPU_KERNEL=0 asks
    for the CPU kernel (TensorFlow then copies GPU tensors to the host and
    back, as before the GPU kernel existed)."""
    if set_id != 0 or prescale_factor != 1.0 or postscale_factor != 1.0 or \
            os.environ.get("RINGMASTER_TF_GPU_KERNEL", "1") == "0":
        return "/cpu:0"
    return None


def _grouped_allreduce(tensors: Sequence[Any], name: Optional[str] = None, op: int = Sum,
                       prescale_factor: float = 1.0, postscale_factor: float = 1.0,
                       ignore_name_scope: bool = False, process_set: ProcessSet = global_process_set,
                       options: Any = None) -> List[tf.Tensor]:
    """One op for the list (the engine packs it by bytes_per_pack); inside
    ``pipelined()``, a Start and a Wait."""
    split: List[Optional[str]] = []  # [the device] when made as Start and Wait

    def make(ts: List[tf.Tensor], name: Optional[str], set_id: int) -> Any:
        device = _allreduce_device(set_id, prescale_factor, postscale_factor)
        kind = _ops.ringmaster_all_reduce
        if _split_allreduce(ts, device):
            split.append(device)
            kind = _ops.ringmaster_all_reduce_start
        with tf.device(device) if device else contextlib.nullcontext():
            out = kind(ts, reduce_op=int(op), process_set_id=set_id, prescale_factor=float(prescale_factor),
                       postscale_factor=float(postscale_factor), ignore_name_scope=bool(ignore_name_scope),
                       name=name, **_option_attrs(options))
        return [*out.started, out.handle] if split else out  # Start's first output names it (_issue)

    out = _list_op(tensors, process_set, name, "Allreduce", make)
    if not split:
        return out
    with tf.device(split[0]) if split[0] else contextlib.nullcontext():
        return list(_ops.ringmaster_all_reduce_wait(out[:-1], out[-1]))


def _allreduce(tensor: Any, name: Optional[str] = None, op: int = Sum, prescale_factor: float = 1.0,
               postscale_factor: float = 1.0, ignore_name_scope: bool = False,
               process_set: ProcessSet = global_process_set, options: Any = None) -> tf.Tensor:
    return _grouped_allreduce([tensor], name=name, op=op, prescale_factor=prescale_factor,
                              postscale_factor=postscale_factor, ignore_name_scope=ignore_name_scope,
                              process_set=process_set, options=options)[0]


def grouped_allgather(tensors: Sequence[Any], name: Optional[str] = None, ignore_name_scope: bool = False,
                      process_set: ProcessSet = global_process_set, options: Any = None) -> List[tf.Tensor]:
    """Concatenates every rank's tensors along the first dimension, which may
    differ per rank (the other dimensions may not)."""
    return _list_op(tensors, process_set, name, "Allgather", lambda ts, name, set_id: _ops.ringmaster_all_gather(
        ts, process_set_id=set_id, ignore_name_scope=bool(ignore_name_scope), name=name, **_option_attrs(options)))


def allgather(tensor: Any, name: Optional[str] = None, ignore_name_scope: bool = False,
              process_set: ProcessSet = global_process_set, options: Any = None) -> tf.Tensor:
    """Concatenates every rank's ``tensor`` along the first dimension, which
    may differ per rank (the other dimensions may not)."""
    t = tf.convert_to_tensor(tensor)
    name = _op_name(name, lambda: f"RingmasterAllgather_{t.name}")
    return grouped_allgather([t], name=name, ignore_name_scope=ignore_name_scope, process_set=process_set,
                             options=options)[0]


def _grouped_broadcast(tensors: Sequence[Any], root_rank: int, name: Optional[str] = None,
                       ignore_name_scope: bool = False, process_set: ProcessSet = global_process_set,
                       options: Any = None) -> List[tf.Tensor]:
    return _list_op(tensors, process_set, name, "Broadcast", lambda ts, name, set_id: _ops.ringmaster_broadcast(
        ts, root_rank=root_in_set(root_rank, set_id), process_set_id=set_id, ignore_name_scope=bool(ignore_name_scope), name=name,
        **_option_attrs(options)))


def broadcast(tensor: Any, root_rank: int, name: Optional[str] = None, ignore_name_scope: bool = False,
              process_set: ProcessSet = global_process_set, options: Any = None) -> tf.Tensor:
    """root_rank's ``tensor`` on every rank."""
    return _grouped_broadcast([tensor], root_rank, name=name, ignore_name_scope=ignore_name_scope,
                              process_set=process_set, options=options)[0]


def broadcast_(variables: Sequence[Any], root_rank: int, name: Optional[str] = None,
               process_set: ProcessSet = global_process_set, options: Any = None) -> List[tf.Tensor]:
    """Assigns root_rank's values to ``variables`` on every rank (one op for
    all of them) and returns their new values."""
    variables = list(variables)
    if not variables:
        return []
    values = _grouped_broadcast([v.read_value() if hasattr(v, "read_value") else tf.convert_to_tensor(v)
                                 for v in variables], root_rank, name=name, process_set=process_set,
                                options=options)
    assigns = [assign(v, x) for v, x in zip(variables, values)]
    if tf.executing_eagerly():
        return [v.read_value() if hasattr(v, "read_value") else v for v in variables]
    with tf.control_dependencies(assigns):
        return [tf.identity(v) for v in variables]


def alltoall(tensor: Any, splits: Any = None, name: Optional[str] = None, ignore_name_scope: bool = False,
             process_set: ProcessSet = global_process_set, options: Any = None) -> Any:
    """Sends ``splits[r]`` rows (first dimension) of ``tensor`` to rank r,
    in order; without ``splits`` the first dimension is split equally.
    Returns the rows received, concatenated in rank order, and, when
    ``splits`` was given, how many came from each rank."""
    set_id = check_process_set(process_set)
    t = tf.convert_to_tensor(tensor)
    s = tf.constant([], dtype=tf.int32) if splits is None else tf.cast(tf.convert_to_tensor(splits), tf.int32)
    name = _op_name(name, lambda: f"RingmasterAlltoall_{t.name}")
    output, received = _issue(lambda: _ops.ringmaster_all_to_all(
        t, s, process_set_id=set_id, ignore_name_scope=bool(ignore_name_scope), name=name,
        **_option_attrs(options)))
    return (output, received) if splits is not None else output


def sparse_allreduce(tensor: tf.IndexedSlices, op: int, process_set: ProcessSet = global_process_set,
                     ignore_name_scope: bool = False, options: Any = None) -> tf.IndexedSlices:
    """An IndexedSlices reduced as Horovod does: every rank's values and
    indices gathered; Average divides the values by the size."""
    values = allgather(tensor.values, process_set=process_set, ignore_name_scope=ignore_name_scope,
                       options=options)
    indices = allgather(tensor.indices, process_set=process_set, ignore_name_scope=ignore_name_scope,
                        options=options)
    if op == Average:
        values = values / tf.cast(_set_size(process_set), values.dtype)
    return tf.IndexedSlices(values, indices, dense_shape=tensor.dense_shape)


def _grouped_reducescatter(tensors: Sequence[Any], name: Optional[str] = None, op: int = Sum,
                           ignore_name_scope: bool = False, process_set: ProcessSet = global_process_set,
                           prescale_factor: float = 1.0, postscale_factor: float = 1.0,
                           options: Any = None) -> List[tf.Tensor]:
    return _list_op(tensors, process_set, name, "Reducescatter", lambda ts, name, set_id: _ops.ringmaster_reduce_scatter(
        ts, reduce_op=int(op), process_set_id=set_id, prescale_factor=float(prescale_factor), postscale_factor=float(postscale_factor),
        ignore_name_scope=bool(ignore_name_scope), name=name, **_option_attrs(options)))


def _reducescatter(tensor: Any, name: Optional[str] = None, op: int = Sum, ignore_name_scope: bool = False,
                   process_set: ProcessSet = global_process_set, prescale_factor: float = 1.0,
                   postscale_factor: float = 1.0, options: Any = None) -> tf.Tensor:
    return _grouped_reducescatter([tensor], name=name, op=op, ignore_name_scope=ignore_name_scope,
                                  process_set=process_set, prescale_factor=prescale_factor,
                                  postscale_factor=postscale_factor, options=options)[0]


def join(options: Any = None) -> tf.Tensor:
    """Horovod's join: this rank has run out of data. Until every rank has
    joined, it stands in with zeros for each allreduce the others still
    issue (an average still divides by the whole group's size, as
    Horovod's). Returns the rank that joined last, the same on every rank.
    While a rank has joined, the others' other collectives (gathers,
    broadcasts, allreduces of GPU tensors) fail with
    FailedPreconditionError naming it, as Horovod refuses them with Join."""
    return _issue(lambda: _ops.ringmaster_join(**_option_attrs(options)))


def barrier(process_set: ProcessSet = global_process_set, options: Any = None) -> Any:
    """Returns once every rank has entered it."""
    set_id = check_process_set(process_set)
    return _issue(lambda: _ops.ringmaster_barrier(process_set_id=set_id, **_option_attrs(options)))


def size_op(process_set_id: int = 0, name: Optional[str] = None) -> tf.Tensor:
    """The size of the group, or of process set ``process_set_id``."""
    return tf.constant(process_sets._process_set_size(int(process_set_id)), dtype=tf.int32, name=name)


def local_size_op(name: Optional[str] = None) -> tf.Tensor:
    return tf.constant(local_size(), dtype=tf.int32, name=name)


def rank_op(name: Optional[str] = None) -> tf.Tensor:
    return tf.constant(rank(), dtype=tf.int32, name=name)


def local_rank_op(name: Optional[str] = None) -> tf.Tensor:
    return tf.constant(local_rank(), dtype=tf.int32, name=name)


def process_set_included_op(process_set_id: int = 0, name: Optional[str] = None) -> tf.Tensor:
    """1 if this rank is in process set ``process_set_id``, else 0."""
    return tf.constant(int(process_sets._process_set_included(int(process_set_id))), dtype=tf.int32, name=name)


def _set_size(process_set: ProcessSet) -> int:
    return process_sets._process_set_size(check_process_set(process_set))


# ------------------------------------------------------------ gradients


def _zeros_for_none(grads: Sequence[Any], outputs: Sequence[Any]) -> List[Any]:
    return [tf.zeros_like(o) if g is None else tf.convert_to_tensor(g) for g, o in zip(grads, outputs)]


@_tf_ops.RegisterGradient("RingmasterAllReduce")
def _allreduce_grad(op: Any, *grads: Any) -> List[Any]:
    """The gradient of an all-reduce is the same all-reduce of the gradients."""
    return _grouped_allreduce(_zeros_for_none(grads, op.outputs), op=op.get_attr("reduce_op"),
                              prescale_factor=op.get_attr("prescale_factor"),
                              postscale_factor=op.get_attr("postscale_factor"), process_set=_set_of(op))


@_tf_ops.RegisterGradient("RingmasterAllReduceStart")
def _allreduce_start_grad(op: Any, *grads: Any) -> List[Any]:
    """A split all-reduce's: the same all-reduce of the gradients of its
    values (the handle has none)."""
    return _grouped_allreduce(_zeros_for_none(grads[:-1], op.outputs[:-1]), op=op.get_attr("reduce_op"),
                              prescale_factor=op.get_attr("prescale_factor"),
                              postscale_factor=op.get_attr("postscale_factor"), process_set=_set_of(op))


@_tf_ops.RegisterGradient("RingmasterAllReduceWait")
def _allreduce_wait_grad(op: Any, *grads: Any) -> List[Any]:
    """The Wait passes its values on (the Start's gradient reduces them)."""
    return [*grads, None]


def _first_dims(inputs: Sequence[Any], process_set: ProcessSet) -> List[tf.Tensor]:
    """Every rank's first dimension of each input, as a [size] vector each."""
    dims = [tf.reshape(tf.shape(x, out_type=tf.int64)[0], [1]) for x in inputs]
    return grouped_allgather(dims, process_set=process_set)


@_tf_ops.RegisterGradient("RingmasterAllGather")
def _allgather_grad(op: Any, *grads: Any) -> List[Any]:
    """Each rank's slice of the averaged gradient (Horovod's rule)."""
    ps = _set_of(op)
    reduced = [_allreduce(g, op=Average, process_set=ps) for g in _zeros_for_none(grads, op.outputs)]
    me = process_sets._process_set_rank(ps.process_set_id)
    n = process_sets._process_set_size(ps.process_set_id)
    return [tf.split(g, num_or_size_splits=tf.reshape(d, [n]), num=n, axis=0)[me]
            for g, d in zip(reduced, _first_dims(op.inputs, ps))]


@_tf_ops.RegisterGradient("RingmasterBroadcast")
def _broadcast_grad(op: Any, *grads: Any) -> List[Any]:
    """The averaged gradient on the root; zero elsewhere (no other rank's
    input reached the output)."""
    ps = _set_of(op)
    reduced = _grouped_allreduce(_zeros_for_none(grads, op.outputs), op=Average, process_set=ps)
    if process_sets._process_set_rank(ps.process_set_id) != op.get_attr("root_rank"):  # the set's own rank
        return [g * 0 for g in reduced]
    return reduced


@_tf_ops.RegisterGradient("RingmasterAllToAll")
def _alltoall_grad(op: Any, grad: Any, _received_splits_grad: Any) -> List[Any]:
    """The rows go back where they came from."""
    grad = tf.zeros_like(op.outputs[0]) if grad is None else grad
    back, _ = alltoall(grad, splits=op.outputs[1], process_set=_set_of(op))
    return [back, None]


@_tf_ops.RegisterGradient("RingmasterReduceScatter")
def _reducescatter_grad(op: Any, *grads: Any) -> List[Any]:
    """Every rank's share gathered back, scaled as the forward pass was."""
    grads = _zeros_for_none(grads, op.outputs)
    factor = 1.0
    ps = _set_of(op)
    if op.get_attr("reduce_op") == Sum:
        factor *= process_sets._process_set_size(ps.process_set_id)
    factor *= op.get_attr("prescale_factor") * op.get_attr("postscale_factor")
    if factor != 1.0:
        grads = [g * tf.cast(factor, g.dtype) for g in grads]
    return grouped_allgather(grads, process_set=ps)


_tf_ops.NotDifferentiable("RingmasterBarrier")
_tf_ops.NotDifferentiable("RingmasterJoin")
