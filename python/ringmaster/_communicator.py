"""The Communicator: collectives on NumPy arrays and DLPack tensors (CPU
memory, and CUDA memory for the all-reduce: _dlpack.py). How the arguments
become the core's is _arguments.py."""

from __future__ import annotations

import threading
from typing import Any, List, Optional, Sequence, Tuple

import numpy as np

from . import _core, _dlpack
from ._arguments import (ArrayLike, OptionsLike, StreamLike, Values, _as_list, _check_no_overlap, _device_spec,
                         _dtype_code, _export_values, _on_device, _op_code, _options, _pair, _prepare, _refuse_device,
                         _release, _repack, _spec, _view)
from ._errors import InvalidArgumentError


class Handle:
    """An all_reduce_async in flight; keeps its arrays alive until done."""

    def __init__(self, core: Any, result: Any) -> None:
        self._core = core
        self._result = result

    def done(self) -> bool:
        """True once the call has finished (wait() then returns at once)."""
        return bool(self._core.done())

    def wait(self) -> Any:
        """Blocks (without the GIL) until done; returns the values or raises."""
        self._core.wait()
        return self._result


class Communicator:
    """A formed collective group (one member per process)."""

    def __init__(self, core: Any) -> None:
        # Use Communicator.from_environment() or ringmaster.init().
        self._c = core
        self._lock = threading.Lock()
        self._sets: List["Communicator"] = []  # process sets: closed before this

    @classmethod
    def from_environment(cls) -> "Communicator":
        """Forms the group from TF_CONFIG and RINGMASTER_* (blocks, no GIL)."""
        return cls(_core.Comm.from_environment())

    @property
    def rank(self) -> int:
        return int(self._c.rank())

    @property
    def size(self) -> int:
        return int(self._c.size())

    def task_name(self, rank: int) -> str:
        """The task of `rank`, like "/job:worker/task:1"."""
        return str(self._c.task_name(int(rank)))

    def all_reduce(self, values: Values, op: Any = "sum", options: OptionsLike = None,
                   out: Optional[Values] = None, stream: StreamLike = None) -> Any:
        """Reduces one array or a list across the group, in place; returns them.

        Writable C-contiguous NumPy arrays and CPU DLPack tensors are reduced
        in place and returned as the same objects; other inputs (read-only,
        strided, Python lists) are copied and new arrays returned.

        CUDA DLPack arrays (CuPy, PyTorch, JAX, ...) are reduced in place on
        their GPU and returned as the same objects; they must be C-contiguous
        and writable (the engine cannot copy device memory). ``stream`` is
        the CUDA stream whose work produces them (an int cudaStream_t, or a
        stream with ``.ptr`` / ``.cuda_stream``; default: the legacy default
        stream): each producer is asked to order its pending work before it
        (DLPack's stream protocol), and the engine starts after that work.
        The call returns once the results are in place. One call takes host
        arrays or device arrays, not both.

        With ``out`` (an array, or a list as long as ``values``): the results
        go there and ``values`` are only read, with no copy of them (the
        engine reads each input as it reduces); returns ``out``. Each
        ``out[i]`` must be a writable C-contiguous array of ``values[i]``'s
        dtype and size (on the device for device values: the engine's GPU
        path answers UnimplementedError for now).
        """
        code = _op_code(op)
        items, single = _as_list(values)
        device = _on_device(items, "values")
        if out is not None:
            outs = _as_list(out)[0]
            if _on_device(outs, "out") != device and items and outs:
                raise InvalidArgumentError(
                    f"out: is {'host' if device else 'CUDA'} memory but values are "
                    f"{'CUDA' if device else 'host'} memory; out must be where values are")
            if device:
                return self._all_reduce_device_into(values, out, code, options, stream)
            self._no_stream(stream, items)
            return self._all_reduce_into(values, out, code, options)
        if device:
            handle = _dlpack.stream_handle(stream)
            tensors = _export_values(items, handle)
            try:
                specs = [_device_spec(t, f"values[{i}]") for i, t in enumerate(tensors)]
                self._c.allreduce_on_stream(specs, [], code, _options(options), handle)
            finally:
                _release(tensors)
            return _repack(values, items, single)
        self._no_stream(stream, items)
        prepared = [_prepare(v, f"values[{i}]") for i, v in enumerate(items)]
        specs = [_spec(a, f"values[{i}]") for i, (_, a) in enumerate(prepared)]
        self._c.allreduce(specs, code, _options(options))
        return _repack(values, [r for r, _ in prepared], single)

    @staticmethod
    def _no_stream(stream: StreamLike, items: List[ArrayLike]) -> None:
        if stream is not None and items:
            raise InvalidArgumentError(
                "stream: given for host arrays; a CUDA stream orders device (CUDA DLPack) arrays only")

    def _all_reduce_into(self, values: Values, out: Values, code: int, options: OptionsLike) -> Any:
        items, outs = _pair(values, out)
        sources, dests, specs = [], [], []
        for i, (v, o) in enumerate(zip(items, outs)):
            arr, _ = _view(v, f"values[{i}]")
            _dtype_code(arr, f"values[{i}]")
            if not arr.flags.c_contiguous:
                arr = np.ascontiguousarray(arr)
            dest, own = _view(o, f"out[{i}]")
            if not (own and dest.flags.c_contiguous and dest.flags.writeable):
                raise InvalidArgumentError(f"out[{i}]: must be a writable C-contiguous array")
            if dest.dtype != arr.dtype or dest.size != arr.size:
                raise InvalidArgumentError(f"out[{i}]: must be {arr.dtype} of {arr.size} elements like values[{i}], "
                                 f"got {dest.dtype} of {dest.size}")
            sources.append(arr)
            dests.append(dest.ctypes.data)
            specs.append(_spec(dest, f"out[{i}]"))
        from_ = _check_no_overlap([a.ctypes.data for a in sources], dests, [a.nbytes for a in sources])
        self._c.allreduce_from(from_, specs, code, _options(options))
        return out

    def _all_reduce_device_into(self, values: Values, out: Values, code: int, options: OptionsLike,
                                stream: StreamLike) -> Any:
        """out= on device arrays: values[i] only read (read-only is fine), out[i]
        written; the same checks as on the host, then the engine's GPU path."""
        items, outs = _pair(values, out)
        handle = _dlpack.stream_handle(stream)
        tensors: List[_dlpack.DeviceTensor] = []
        try:
            srcs, dsts, specs = [], [], []
            for i, (v, o) in enumerate(zip(items, outs)):
                src = _dlpack.export(v, handle, f"values[{i}]", writable=False)
                tensors.append(src)
                dst = _dlpack.export(o, handle, f"out[{i}]")
                tensors.append(dst)
                _device_spec(src, f"values[{i}]")
                if dst.dtype != src.dtype or dst.count != src.count:
                    raise InvalidArgumentError(f"out[{i}]: must be {src.dtype} of {src.count} elements like "
                                               f"values[{i}], got {dst.dtype} of {dst.count}")
                srcs.append(src)
                dsts.append(dst)
                specs.append(_device_spec(dst, f"out[{i}]"))
            from_ = _check_no_overlap([t.ptr for t in srcs], [t.ptr for t in dsts], [t.nbytes for t in srcs])
            self._c.allreduce_on_stream(specs, from_, code, _options(options), handle)
        finally:
            _release(tensors)
        return out

    def all_reduce_async(self, values: Values, op: Any = "sum", options: OptionsLike = None,
                         stream: StreamLike = None) -> Handle:
        """all_reduce that returns at once; Handle.wait() gives the values.

        CUDA DLPack arrays as in all_reduce (``stream`` too): they stay the
        producer's until the call is done, whether or not the Handle is
        waited for."""
        code = _op_code(op)
        items, single = _as_list(values)
        if _on_device(items, "values"):
            handle = _dlpack.stream_handle(stream)
            tensors = _export_values(items, handle)
            try:
                specs = [_device_spec(t, f"values[{i}]") for i, t in enumerate(tensors)]
                # The C++ handle holds the tensors until the engine is done;
                # dropping them then calls each producer's deleter.
                core = self._c.allreduce_on_stream_async(specs, code, _options(options), handle,
                                                         (self, tensors))
            except BaseException:
                _release(tensors)
                raise
            return Handle(core, _repack(values, items, single))
        self._no_stream(stream, items)
        prepared = [_prepare(v, f"values[{i}]") for i, v in enumerate(items)]
        specs = [_spec(a, f"values[{i}]") for i, (_, a) in enumerate(prepared)]
        # The C++ handle holds the arrays (and this communicator) until the
        # engine is done with them, even if the Handle is dropped unwaited.
        keep = (self, prepared)
        core = self._c.allreduce_async(specs, code, _options(options), keep)
        return Handle(core, _repack(values, [r for r, _ in prepared], single))

    def broadcast(self, values: Values, root: int = 0, options: OptionsLike = None) -> Any:
        """Copies root's arrays to every member, in place (as all_reduce).
        Host memory only (CUDA arrays: UnimplementedError)."""
        items, single = _as_list(values)
        _refuse_device("broadcast", [(f"values[{i}]", v) for i, v in enumerate(items)])
        prepared = [_prepare(v, f"values[{i}]") for i, v in enumerate(items)]
        specs = [_spec(a, f"values[{i}]") for i, (_, a) in enumerate(prepared)]
        self._c.broadcast(specs, int(root), _options(options))
        return _repack(values, [r for r, _ in prepared], single)

    def all_gather(self, value: ArrayLike, options: OptionsLike = None) -> np.ndarray:
        """Concatenates every member's `value` along axis 0, in rank order.

        Every member passes the same shape; returns a new array of shape
        (size * shape[0], *shape[1:]). Host memory only (CUDA arrays:
        UnimplementedError).
        """
        _refuse_device("all_gather", [("value", value)])
        arr, _ = _view(value, "value")
        arr = np.ascontiguousarray(arr)
        if arr.ndim == 0:
            raise InvalidArgumentError("value: all_gather needs at least one dimension, got a scalar")
        out = np.empty((self.size * arr.shape[0],) + arr.shape[1:], dtype=arr.dtype)
        self._c.allgather(_spec(arr, "value"), _spec(out, "value"), _options(options))
        return out

    def barrier(self, options: OptionsLike = None) -> None:
        """Returns once every member has entered it."""
        self._c.barrier(_options(options))

    def reduce(self, op: Any, value: ArrayLike, axis: Optional[int] = None,
               options: OptionsLike = None) -> np.ndarray:
        """tf.distribute's strategy.reduce(op, value, axis) across the group.

        With an axis, `value` is first reduced along it (MEAN divides by the
        element count along the axis summed over all members, so uneven
        batches weigh right); returns a new array without that axis. Host
        memory only (CUDA arrays: UnimplementedError).
        """
        _refuse_device("reduce", [("value", value)])
        code = _op_code(op)
        arr, _ = _view(value, "value")
        arr = np.ascontiguousarray(arr)
        _dtype_code(arr, "value")
        shape = list(arr.shape)
        if axis is None:
            out = np.empty(arr.shape, dtype=arr.dtype)
        else:
            a = int(axis)
            a = a + arr.ndim if a < 0 else a
            if not 0 <= a < arr.ndim:
                raise InvalidArgumentError(
                    f"axis: {axis} is out of range for a rank-{arr.ndim} value"
                )
            out = np.empty(tuple(shape[:a] + shape[a + 1:]), dtype=arr.dtype)
            axis = a
        self._c.reduce(code, _spec(arr, "value"), shape, axis, _spec(out, "value"), _options(options))
        return out

    def abort(self, reason: str = "aborted by the user") -> None:
        """Fails every collective in flight on every member with AbortedError."""
        self._c.abort(str(reason))

    def reform(self) -> None:
        """Forms the group again after an abort; every member must call it."""
        self._c.reform()

    def agree_on_resume(self, committed_step: int) -> Tuple[int, int]:
        """Recovery in place: where the group resumes, as the first call after
        a formation (a survivor after ``reform()``, a new incarnation right
        after joining). Every member offers the last step it committed (-1:
        it holds no state) and gets the same ``(step, root)``: the highest
        step committed and the lowest rank holding it, to broadcast the state
        from."""
        step, root = self._c.agree_on_resume(int(committed_step))
        return int(step), int(root)

    def agree_on_joiners(self) -> int:
        """Elastic size (``RINGMASTER_MIN_SIZE``): how many members wait to
        join the group (left out of this formation and come back), as rank 0
        sees them, the same on every member: when not 0, every member calls
        ``reform()`` to let them in. Collective; call it at a step boundary.
        ``rank`` and ``size`` change with a formation that left members out
        or let them in."""
        return int(self._c.agree_on_joiners())

    def health(self) -> None:
        """Returns None while the group is usable, else raises why not."""
        self._c.health()

    def add_process_set(self, ranks: Sequence[int], process_set_id: int) -> Optional["Communicator"]:
        """A subgroup of this group (Horovod's process set), collectively.

        Every member of the whole group calls it with the same ``ranks`` and
        ``process_set_id`` (> 0, not in use); members that disagree fail
        with FailedPreconditionError on every member, naming who differs.
        Returns the set's Communicator (ranks renumbered 0..n-1 in rank
        order) on its members and None elsewhere. It is registered for the
        TensorFlow op under its id, and closed with this one.
        """
        core = self._c.add_process_set(int(process_set_id), [int(r) for r in ranks])
        if core is None:
            return None
        core.register_process_set()
        child = Communicator(core)
        self._sets = [c for c in self._sets if c._c.alive] + [child]  # drop the removed ones
        return child

    def start_timeline(self, path: str) -> None:
        """Writes every collective of this member (its process sets' too)
        from now on to ``path``: a Chrome trace, one event per pack."""
        self._c.start_timeline(str(path))

    def stop_timeline(self) -> None:
        """Ends the timeline's file (a complete JSON array)."""
        self._c.stop_timeline()

    @property
    def process_set_id(self) -> int:
        """0 for a whole group, else this process set's id."""
        return int(self._c.process_set_id())

    def close(self) -> None:
        """Leaves the group and frees it (clears the process default first)."""
        sets, self._sets = self._sets, []
        for child in sets:
            child.close()
        self._c.destroy()

    def __enter__(self) -> "Communicator":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        if not self._c.alive:
            return "<ringmaster.Communicator (closed)>"
        return f"<ringmaster.Communicator rank={self.rank} size={self.size}>"
