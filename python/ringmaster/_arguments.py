"""How a Communicator call's arguments become the core's: reduce ops and
dtypes by name, NumPy views of what was passed (read-only inputs copied),
the options' encoding, the check that no output overlaps an input, and the
DLPack export of CUDA arrays (_dlpack.py). Every refusal names the field."""

from __future__ import annotations

import bisect
from typing import Any, List, Optional, Tuple, Union

import numpy as np

from . import _core, _dlpack
from ._errors import InvalidArgumentError, UnimplementedError
from ._options import CommunicationOptions

ArrayLike = Any  # a NumPy array, an object with __dlpack__, or anything np.asarray takes
StreamLike = Any  # None, an int cudaStream_t, or a stream with .ptr (CuPy) / .cuda_stream (PyTorch)
Values = Union[ArrayLike, List[ArrayLike], Tuple[ArrayLike, ...]]
OptionsLike = Any  # None, CommunicationOptions or TF's options (see CommunicationOptions.from_any)


def _op_code(op: Any) -> int:
    """rm_reduce_op's value of "sum"... (any case, or an alias such as "prod"),
    or of an enum whose .value/.name is one (tf ReduceOp)."""
    name = op
    if not isinstance(name, str):
        for attr in ("value", "name"):
            inner = getattr(op, attr, None)
            if isinstance(inner, str):
                name = inner
                break
    if not isinstance(name, str):
        names = ", ".join(_core.enum_names("reduce_op"))
        raise InvalidArgumentError(f"op: must be one of {names}, got {op!r}")
    return _core.parse_enum("reduce_op", name, "op")


def _dtype_code(arr: np.ndarray, field: str) -> int:
    """rm_dtype's value of the array's dtype: NumPy's names are the table's
    ("bfloat16": ml_dtypes' type). bool moves (broadcast, all-gather);
    reducing it fails with InvalidArgumentError."""
    return _core.parse_enum("dtype", arr.dtype.name, f"{field}.dtype")


def _view(value: ArrayLike, field: str) -> Tuple[np.ndarray, bool]:
    """A NumPy view of `value` and whether it is the caller's own memory."""
    if isinstance(value, np.ndarray):
        return value, True
    if hasattr(value, "__dlpack__"):
        if _dlpack.is_device(value):
            raise InvalidArgumentError(f"{field}: is CUDA memory, where host memory is expected")
        try:
            # Zero-copy: the view shares the producer's memory.
            return np.from_dlpack(value), True
        except (BufferError, TypeError, ValueError, RuntimeError) as e:
            raise InvalidArgumentError(
                f"{field}: cannot use this DLPack tensor (CPU memory only): {e}"
            ) from None
    return np.asarray(value), False


def _prepare(value: ArrayLike, field: str) -> Tuple[Any, np.ndarray]:
    """(what to return, the array the engine writes) for an in-place call.

    Writable C-contiguous arrays (NumPy's or DLPack's) are used in place and
    returned as they are; anything else is copied, and the copy returned.
    """
    arr, own = _view(value, field)
    _dtype_code(arr, field)
    if own and arr.flags.c_contiguous and arr.flags.writeable:
        return value, arr
    copy = np.array(arr, order="C", copy=True)
    return copy, copy


def _spec(arr: np.ndarray, field: str) -> Tuple[int, int, int]:
    return (arr.ctypes.data, int(arr.size), _dtype_code(arr, field))


def _options(options: OptionsLike) -> Optional[Tuple[int, float, int]]:
    if options is None:
        return None
    return CommunicationOptions.from_any(options)._to_c()


def _as_list(values: Values) -> Tuple[List[ArrayLike], bool]:
    if isinstance(values, (list, tuple)):
        return list(values), False
    return [values], True


def _repack(values: Values, results: List[Any], single: bool) -> Any:
    if single:
        return results[0]
    return tuple(results) if isinstance(values, tuple) else results


def _check_no_overlap(sources: List[int], dests: List[int], sizes: List[int]) -> List[int]:
    """The engine's source addresses for an out-of-place all-reduce: 0 (in
    place) where out[i] is values[i]'s own memory. Any other overlap of an
    output with an input or with another output would be read after it was
    written (or written twice): refused, naming both. Inputs may overlap
    each other (they are only read). Sorted spans, not every pair. (Device
    pointers share one address space with host ones: CUDA's unified
    addressing.)"""
    from_, inputs, outputs = [], [], []
    for i, (src, dest, size) in enumerate(zip(sources, dests, sizes)):
        from_.append(0 if src == dest else src)  # out[i] is values[i]: reduced in place
        if src != dest and size:
            inputs.append((src, src + size, f"values[{i}]"))
        if size:
            outputs.append((dest, dest + size, f"out[{i}]"))
    words = "out must not share memory with the inputs (other than out[i] being values[i] itself) or another out"
    outputs.sort()
    for (_, end, name), (start, _, other) in zip(outputs, outputs[1:]):
        if start < end:
            raise InvalidArgumentError(f"{other}: overlaps {name} ({words})")
    inputs.sort()
    starts = [s for s, _, _ in inputs]
    reach = []  # reach[k]: the furthest end of inputs[0..k], and whose it is
    for start, end, name in inputs:
        reach.append(max(reach[-1], (end, name)) if reach else (end, name))
    for start, end, name in outputs:
        k = bisect.bisect_left(starts, end) - 1  # the last input starting before this output ends
        if k >= 0 and reach[k][0] > start:
            raise InvalidArgumentError(f"{name}: overlaps {reach[k][1]} ({words})")
    return from_


def _pair(values: Values, out: Values) -> Tuple[List[ArrayLike], List[ArrayLike]]:
    """values and out as lists of one length (both single or both lists)."""
    items, single = _as_list(values)
    outs, out_single = _as_list(out)
    if single != out_single or len(outs) != len(items):
        raise InvalidArgumentError(f"out: must match values ({len(items)} {'array' if single else 'arrays'}), "
                                   f"got {len(outs)} {'array' if out_single else 'arrays'}")
    return items, outs


def _on_device(items: List[ArrayLike], field: str) -> bool:
    """Whether `field`'s arrays are CUDA DLPack arrays. One call takes host
    arrays or device arrays, never both (the engine refuses that too)."""
    where = [_dlpack.is_device(v) for v in items]
    if not any(where):
        return False
    if not all(where):
        raise InvalidArgumentError(
            f"{field}[{where.index(False)}]: is host memory but {field}[{where.index(True)}] is CUDA "
            "memory; one call takes host arrays or device arrays, not both")
    return True


def _refuse_device(call: str, named: List[Tuple[str, ArrayLike]]) -> None:
    """The engine reduces GPU memory in all_reduce only so far."""
    for field, value in named:
        if _dlpack.is_device(value):
            raise UnimplementedError(
                f"{call}: {field} is CUDA memory; only all_reduce takes device arrays so far "
                f"(copy it to host memory for {call})")


def _device_spec(t: _dlpack.DeviceTensor, field: str) -> Tuple[int, int, int]:
    return (t.ptr, t.count, _core.parse_enum("dtype", t.dtype, f"{field}.dtype"))


def _release(tensors: List[_dlpack.DeviceTensor]) -> None:
    for t in tensors:
        t.release()


def _export_values(items: List[ArrayLike], handle: int) -> List[_dlpack.DeviceTensor]:
    """Every values[i] taken for an in-place all-reduce on stream `handle`
    (all of them given back if one is refused)."""
    tensors: List[_dlpack.DeviceTensor] = []
    try:
        for i, v in enumerate(items):
            tensors.append(_dlpack.export(v, handle, f"values[{i}]"))
            _device_spec(tensors[-1], f"values[{i}]")  # its dtype, before anything is started
    except BaseException:
        _release(tensors)
        raise
    return tensors
