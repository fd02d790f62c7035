"""TensorFlow's MultiWorkerMirroredStrategy with Ringmaster's collectives.

    strategy = ringmaster.tensorflow.MultiWorkerMirroredStrategy()   # was: tf.distribute.MultiWorkerMirroredStrategy()

It *is* TensorFlow's strategy (a subclass: ``isinstance`` checks in Keras
and tf_keras still pass, and every path they take is the one they take under
TensorFlow's): variable creation and the initial values' broadcast, dataset
distribution, checkpointing and TensorFlow's own server on the TF_CONFIG
port stay TensorFlow's. What changes is the object the strategy asks to move
data between workers, its ``CrossDeviceOps``: TensorFlow's strategy keeps two
(``_cross_device_ops`` for per-replica values, ``_host_cross_device_ops`` for
per-host ones) and routes every all-reduce, reduce, batch reduce and gather
through them; both are replaced by :class:`RingmasterCrossDeviceOps`, which
issues Ringmaster's ops. (Broadcasts in TensorFlow's strategy are local
copies between a worker's devices; they stay so.)

Options: the job's ``communication`` block (RINGMASTER_* in the environment)
is the default; ``communication_options`` merges over it, and each call's
``options=`` over that, by TensorFlow's ``Options.merge`` rule.
"""
from __future__ import annotations

import contextlib
import contextvars
import copy
from typing import Any, Iterator, List, Optional, Sequence

import ringmaster  # first: loads libringmaster.so.N before TensorFlow's gRPC
import tensorflow as tf
from tensorflow.python.distribute import collective_util
from tensorflow.python.distribute import cross_device_ops as _cdo
from tensorflow.python.distribute import device_util, distribute_lib, distribute_utils, reduce_util
from tensorflow.python.distribute import values as _values
from tensorflow.python.distribute import values_util
from tensorflow.python.framework import ops as _tf_ops

from . import _basics, _buckets, mpi_ops

__all__ = ["MultiWorkerMirroredStrategy", "RingmasterCrossDeviceOps"]

# Options given to one strategy.reduce() call (experimental_hints=/options=),
# seen by the cross-device ops that call reaches. A context variable, not an
# attribute: two threads may reduce at once.
_call_options: contextvars.ContextVar[Optional[Any]] = contextvars.ContextVar("ringmaster_call_options",
                                                                             default=None)


@contextlib.contextmanager
def _with_call_options(options: Any) -> Iterator[None]:
    token = _call_options.set(options)
    try:
        yield
    finally:
        _call_options.reset(token)


class RingmasterCrossDeviceOps(tf.distribute.CrossDeviceOps):
    """A ``tf.distribute.CrossDeviceOps`` over Ringmaster's group: one op per
    call for the whole worker. A worker's K local values are first combined
    on its first device (nothing to do for the usual one device per worker),
    the result is reduced (or gathered) across the W workers by Ringmaster,
    and copied to each destination device. MEAN divides by K * W, as
    TensorFlow's CollectiveAllReduce does."""

    def __init__(self, devices: Sequence[str], group_size: int, options: Any,
                 canonicalize_devices: bool = True) -> None:
        if group_size % len(devices):
            raise ValueError(f"group_size: {group_size} is not a multiple of the {len(devices)} devices")
        super().__init__()
        canon = device_util.canonicalize if canonicalize_devices else device_util.canonicalize_without_job_and_task
        self._devices = tuple(canon(d) for d in devices)
        self._canon = canon
        self._canonical_names: dict = {}  # device name -> canon(name), for _one_device_match
        self._group_size = group_size
        self._options = options
        self._canonicalize_devices = canonicalize_devices

    @classmethod
    def replacing(cls, theirs: "_cdo.CollectiveAllReduce") -> "RingmasterCrossDeviceOps":
        """The same devices, group and options as TensorFlow's ``theirs``."""
        # pylint: disable=protected-access
        return cls(theirs._devices, theirs._group_size, theirs._options, theirs._canonicalize_devices)

    @property
    def _num_between_graph_workers(self) -> int:
        # Not 1: the base class's shortcuts (one value, one device) would
        # then return a worker's value unreduced.
        return self._group_size // len(self._devices)

    def __deepcopy__(self, memo: dict) -> "RingmasterCrossDeviceOps":
        return RingmasterCrossDeviceOps(self._devices, self._group_size, copy.deepcopy(self._options, memo),
                                        self._canonicalize_devices)

    # ------------------------------------------------------------ helpers

    def _merged(self, options: Any) -> Any:
        merged = self._options.merge(options if options is not None else collective_util.Options())
        call = _call_options.get()
        return merged.merge(call) if call is not None else merged

    def _local(self, per_replica: Any) -> Any:
        """A worker's K values as one (summed; IndexedSlices concatenated)."""
        parts = list(per_replica.values)
        if len(parts) != len(self._devices):
            raise ValueError(f"a value with {len(parts)} components for {len(self._devices)} devices "
                             f"({', '.join(self._devices)})")
        if len(parts) == 1:
            return parts[0]
        with _tf_ops.device(self._devices[0]):
            if any(isinstance(p, tf.IndexedSlices) for p in parts):
                parts = [p if isinstance(p, tf.IndexedSlices) else _dense_to_slices(p) for p in parts]
                return tf.IndexedSlices(tf.concat([p.values for p in parts], 0),
                                        tf.concat([p.indices for p in parts], 0), parts[0].dense_shape)
            return tf.add_n(parts)

    def _reduce_flat(self, reduce_op: Any, flat: List[Any], options: Any) -> List[Any]:
        """All-reduces worker-local values (tensors or IndexedSlices): the
        dense ones in buckets of bytes_per_pack, each its own op, the last
        values' first (TensorFlow reverses its packs too: gradients come in
        that order), so that a bucket is reduced, and its variables updated,
        while the earlier layers' gradients are still computed (_buckets.py)."""
        mean = reduce_op == reduce_util.ReduceOp.MEAN
        one_device = len(self._devices) == 1
        out: List[Any] = [None] * len(flat)
        dense = [i for i, v in enumerate(flat) if not isinstance(v, tf.IndexedSlices)]
        # The engine's MEAN divides by the group (W): right for one device
        # per worker and float types. Otherwise SUM, then TensorFlow's own
        # divide by K * W (an integer's mean is a float there, as in TF).
        engine_mean = [i for i in dense if mean and one_device and tf.as_dtype(flat[i].dtype).is_floating]
        summed = [i for i in dense if i not in engine_mean]
        for ids, op in ((engine_mean, _basics.Average), (summed, _basics.Sum)):
            for bucket in _buckets.plan_for(flat, ids, options) if ids else []:
                with mpi_ops.tensorflow_errors(), mpi_ops.pipelined():
                    reduced = mpi_ops._grouped_allreduce([flat[i] for i in bucket], op=op, options=options)
                for i, r in zip(bucket, reduced):
                    out[i] = r / self._group_size if mean and op == _basics.Sum else r
        for i, v in enumerate(flat):
            if isinstance(v, tf.IndexedSlices):
                with mpi_ops.tensorflow_errors():
                    s = mpi_ops.sparse_allreduce(v, _basics.Sum, options=options)
                out[i] = tf.IndexedSlices(s.values / self._group_size, s.indices, s.dense_shape) if mean else s
        return out

    def _to_destinations(self, result: Any, per_replica: Any, destinations: Any) -> Any:
        """``result`` (one worker-local value) on every destination device,
        as TensorFlow's CollectiveAllReduce returns it (Mirrored, or the
        value itself for one device)."""
        if self._one_device_match(per_replica, destinations):
            return result
        if _cdo._devices_match(per_replica, destinations, self._canonicalize_devices):  # noqa: SLF001
            if len(self._devices) == 1:
                return result  # where the value was: TensorFlow's ops return it as it is too
            devices = self._devices
        else:
            devices = _cdo.get_devices_from(destinations, self._canonicalize_devices)
        if len(devices) == 1 and result.device == devices[0]:
            return result
        copies = []
        for d in devices:
            with _tf_ops.device(d):
                copies.append(tf.identity(result))
        return distribute_utils.regroup(copies, wrap_class=_values.Mirrored)

    def _one_device_match(self, per_replica: Any, destinations: Any) -> bool:
        """True when the worker has one device and ``destinations`` is
        ``per_replica``'s own: a replica context's all-reduce passes the
        value itself, or (one replica) its device's name. TensorFlow's
        check canonicalizes both sides' device names on every call, which
        eagerly costs more per value than the op's call; the names are
        canonicalized once here."""
        if len(self._devices) != 1:
            return False
        if destinations is per_replica:
            return True
        if not isinstance(destinations, str) or len(getattr(per_replica, "values", ())) != 1:
            return False
        value_device = getattr(per_replica.values[0], "device", None)
        return isinstance(value_device, str) and self._canonical(destinations) == self._canonical(value_device)

    def _canonical(self, device: str) -> str:
        if device not in self._canonical_names:
            self._canonical_names[device] = self._canon(device)
        return self._canonical_names[device]

    # ----------------------------------------------- CrossDeviceOps's API

    def reduce_implementation(self, reduce_op: Any, per_replica_value: Any, destinations: Any, options: Any) -> Any:
        return self.batch_reduce_implementation(reduce_op, [(per_replica_value, destinations)], options)[0]

    def batch_reduce_implementation(self, reduce_op: Any, value_destination_pairs: Any, options: Any) -> List[Any]:
        values_util.mark_as_unsaveable()
        options = self._merged(options)
        local = [self._local(v) for v, _ in value_destination_pairs]
        reduced = self._reduce_flat(reduce_op, local, options)
        return [self._to_destinations(r, v, d) for r, (v, d) in zip(reduced, value_destination_pairs)]

    def _all_reduce(self, reduce_op: Any, value: Any, replica_id: int, options: Any) -> Any:
        """The replica-context all-reduce without merge_call (TensorFlow calls
        it directly, once per local replica, inside a graph)."""
        if len(self._devices) != 1:
            raise NotImplementedError(
                "ringmaster.tensorflow.MultiWorkerMirroredStrategy: an all-reduce without merge_call (XLA on "
                f"GPUs, or a sync-on-read variable read in a replica context) with {len(self._devices)} devices "
                "per worker is not implemented: Ringmaster runs one member per worker process")
        flat = tf.nest.flatten(value)
        reduced = self._reduce_flat(reduce_op, flat, self._merged(options))
        return tf.nest.pack_sequence_as(value, reduced)

    def _gather_implementation(self, per_replica_value: Any, destinations: Any, axis: int, options: Any) -> Any:
        values_util.mark_as_unsaveable()
        options = self._merged(options)
        parts = list(per_replica_value.values)
        rank = parts[0].shape.rank
        if rank is None:
            raise ValueError("gather: the value's rank must be known")
        if not -rank <= axis < rank:
            raise ValueError(f"axis: {axis} is out of range for a value of rank {rank}")
        axis %= rank
        with _tf_ops.device(self._devices[0]):
            local = parts[0] if len(parts) == 1 else tf.concat(parts, axis)
            if axis:  # Ringmaster gathers along the first dimension
                perm = [axis] + [d for d in range(rank) if d != axis]
                local = tf.transpose(local, perm)
        with mpi_ops.tensorflow_errors():  # a shape mismatch: InvalidArgumentError, as TensorFlow's
            gathered = mpi_ops.allgather(local, options=options)
        if axis:
            with _tf_ops.device(self._devices[0]):
                gathered = tf.transpose(gathered, [perm.index(d) for d in range(rank)])
        return self._to_destinations(gathered, per_replica_value, destinations)


def _replica_all_reduce(self: Any, reduce_op: Any, value: Any, options: Any = None) -> Any:
    """TensorFlow's ``ReplicaContext.all_reduce``, in buckets under our
    strategy inside a ``tf.function``. TensorFlow wraps one call's values in
    one custom gradient, whose IdentityN makes every output wait for every
    one of them: a bucket's variables could not be updated (TensorFlow's
    documented ``experimental_aggregate_gradients=False`` example) before the
    last bucket is reduced. One call per bucket (_buckets.py), the last
    values first, keeps each output waiting for its own bucket only. Other
    strategies, and eager calls (where every value exists already), take
    TensorFlow's path unchanged."""
    extended = getattr(getattr(self, "_strategy", None), "extended", None)
    ours = getattr(extended, "_cross_device_ops", None)
    if not isinstance(ours, RingmasterCrossDeviceOps) or tf.executing_eagerly():
        return _tf_replica_all_reduce(self, reduce_op, value, options)
    flat = tf.nest.flatten(value)
    if len(flat) < 2 or any(isinstance(v, tf.IndexedSlices) for v in flat):
        return _tf_replica_all_reduce(self, reduce_op, value, options)
    plan = _buckets.plan_for(flat, list(range(len(flat))), ours._merged(options))
    if len(plan) < 2:
        return _tf_replica_all_reduce(self, reduce_op, value, options)
    out: List[Any] = [None] * len(flat)
    for bucket in plan:
        reduced = _tf_replica_all_reduce(self, reduce_op, [flat[i] for i in bucket], options)
        for i, r in zip(bucket, reduced):
            out[i] = r
    return tf.nest.pack_sequence_as(value, out)


_tf_replica_all_reduce = distribute_lib.ReplicaContextBase.all_reduce
distribute_lib.ReplicaContext.all_reduce = _replica_all_reduce


def _dense_to_slices(t: Any) -> tf.IndexedSlices:
    t = tf.convert_to_tensor(t)
    return tf.IndexedSlices(t, tf.range(tf.shape(t, out_type=tf.int64)[0]), tf.shape(t, out_type=tf.int64))


class MultiWorkerMirroredStrategy(tf.distribute.MultiWorkerMirroredStrategy):
    """``tf.distribute.MultiWorkerMirroredStrategy`` (same constructor,
    same behaviour) whose collectives run on Ringmaster's engine.

    cluster_resolver: as TensorFlow's (None: TF_CONFIG). Ringmaster's group
        is formed from TF_CONFIG and must have the same members in the same
        order (chief, then workers): a resolver that disagrees is refused
        with a ValueError naming both.
    communication_options: ``tf.distribute.experimental.CommunicationOptions``
        merged over the job's defaults; per-call options merge over these.
    """

    def __init__(self, cluster_resolver: Any = None, communication_options: Any = None) -> None:
        super().__init__(cluster_resolver=cluster_resolver, communication_options=communication_options)
        ext = self.extended
        # pylint: disable=protected-access
        from . import communication_options as job_options
        ext._communication_options = job_options().merge(ext._communication_options)
        if ext._num_workers > 1:
            comm = _basics.init()
            if (int(comm.rank), int(comm.size)) != (ext._id_in_cluster, ext._num_workers):
                raise ValueError(
                    f"cluster_resolver: the strategy's cluster puts this task ({ext._task_type}:{ext._task_id}) at "
                    f"{ext._id_in_cluster} of {ext._num_workers} workers, but Ringmaster's group (from TF_CONFIG) "
                    f"has it at rank {comm.rank} of {comm.size}: pass no cluster_resolver, or one that agrees with "
                    "TF_CONFIG")
            ext._cross_device_ops = RingmasterCrossDeviceOps.replacing(ext._cross_device_ops)
            ext._host_cross_device_ops = RingmasterCrossDeviceOps.replacing(ext._host_cross_device_ops)
        # One worker: nothing crosses a process; TensorFlow's local ops stay.
        for ops_ in (ext._cross_device_ops, ext._host_cross_device_ops):
            ops_._options = ext._communication_options

    def reduce(self, reduce_op: Any, value: Any, axis: Optional[int] = None, experimental_hints: Any = None,
               options: Any = None) -> Any:
        """TensorFlow's ``Strategy.reduce``, and three things more:

        - ``value`` may be a nested structure (a tuple of PerReplica, say),
          reduced leaf by leaf, as MirroredStrategy allows; Keras 3's
          ``fit`` passes one (keras-team/keras#20585);
        - ``axis`` on a scalar is the scalar itself (Keras 3 reduces scalar
          metrics with ``axis=0``);
        - ``experimental_hints=`` (CollectiveHints, in TensorFlow's own
          docs) or ``options=``: per-call options, merged over the
          strategy's.
        """
        if experimental_hints is not None and options is not None:
            raise ValueError("reduce: pass experimental_hints or options, not both")
        call = options if options is not None else experimental_hints
        if call is not None and not hasattr(call, "merge"):
            call = collective_util.Options(bytes_per_pack=getattr(call, "bytes_per_pack", 0),
                                           timeout_seconds=getattr(call, "timeout_seconds", None))
        base = super().reduce

        def one(v: Any) -> Any:
            a = axis
            if a is not None:
                local = self.experimental_local_results(v)[0] if isinstance(v, _values.DistributedValues) else v
                if getattr(local, "shape", None) is not None and local.shape.rank == 0:
                    a = None
            return base(reduce_op, v, axis=a)

        with _with_call_options(call) if call is not None else contextlib.nullcontext():
            if isinstance(value, (list, tuple, dict)):
                return tf.nest.map_structure(one, value)
            return one(value)
