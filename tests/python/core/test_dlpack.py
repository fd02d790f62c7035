"""CUDA DLPack arrays without a GPU: the capsule's parsing (ringmaster._dlpack)
on a hand-made producer (cuda_producer.py), the Communicator's routing of
device arrays (against a stand-in for the C layer), and one member of a
real group whose calls reach the engine's GPU path (worker.py cuda_dlpack).
"""

from __future__ import annotations

import ctypes
import gc
import importlib.util
import os
from typing import Any, List

import numpy as np
import pytest

import ringmaster
from ringmaster import _dlpack

_HERE = os.path.dirname(os.path.abspath(__file__))


def _load_producer() -> Any:
    spec = importlib.util.spec_from_file_location("cuda_producer", os.path.join(_HERE, "cuda_producer.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


producer = _load_producer()
Fake = producer.FakeCudaArray
FLOAT, INT, UINT, BFLOAT, COMPLEX, BOOL = 2, 0, 1, 4, 5, 6


# --- the capsule -----------------------------------------------------------

def test_legacy_capsule_pointer_offset_dtype_shape_and_one_deleter_call():
    a = Fake((2, 3), byte_offset=16)
    t = _dlpack.export(a, 0, "values[0]")
    # A pre-1.0 producer: max_version refused (TypeError), asked again with the stream alone.
    assert a.calls == [{"stream": 1}]
    assert (t.data, t.byte_offset, t.ptr) == (a.data, 16, a.data + 16)
    assert (t.dtype, t.shape, t.strides, t.count, t.nbytes) == ("float32", (2, 3), None, 6, 24)
    assert t.device == (2, 0) and t.contiguous and not t.readonly
    assert a.deleted == 0  # the producer's memory is held until released
    t.release()
    t.release()
    del t
    gc.collect()
    assert a.deleted == 1


def test_versioned_capsule_when_the_producer_takes_max_version():
    a = Fake((5,), bits=64, versioned=True, device=(13, 1))
    t = _dlpack.export(a, 0x7F00, "values[0]")
    assert a.calls == [{"stream": 0x7F00, "max_version": (1, 0)}]
    assert (t.dtype, t.shape, t.ptr, t.device) == ("float64", (5,), a.data, (13, 1))
    del t
    gc.collect()
    assert a.deleted == 1  # through the DeviceTensor's end, as when an async handle drops it


def test_capsule_is_renamed_used_and_its_own_destructor_then_leaves_the_tensor():
    a = Fake((4,))
    capsule = a.__dlpack__(stream=1)
    assert producer.is_valid(capsule, b"dltensor")
    t = _dlpack.parse_capsule(capsule, "values[0]")
    assert producer.is_valid(capsule, b"used_dltensor") and not producer.is_valid(capsule, b"dltensor")
    del capsule
    gc.collect()
    assert a.deleted == 0  # the consumer's now
    t.release()
    assert a.deleted == 1
    # Never taken: the capsule's destructor gives it back (the fake keeps the protocol too).
    b = Fake((4,))
    capsule = b.__dlpack__(stream=1)
    del capsule
    gc.collect()
    assert b.deleted == 1


def test_strides_and_dtypes():
    cases = [
        (dict(shape=(2, 3), strides=(3, 1)), "float32", True),
        (dict(shape=(3, 1), strides=(1, 99)), "float32", True),  # an axis of 1: any stride
        (dict(shape=(0, 4), strides=(7, 9)), "float32", True),  # empty
        (dict(shape=(), code=BOOL, bits=8), "bool", True),  # a scalar
        (dict(shape=(2, 2), code=BFLOAT, bits=16), "bfloat16", True),
        (dict(shape=(2,), code=INT, bits=64), "int64", True),
        (dict(shape=(2,), code=UINT, bits=8), "uint8", True),
        (dict(shape=(2,), code=COMPLEX, bits=64), "complex64", True),
        (dict(shape=(2,), code=FLOAT, bits=32, lanes=2), "dlpack(code=2, bits=32, lanes=2)", True),
    ]
    for kw, dtype, contiguous in cases:
        t = _dlpack.parse_capsule(Fake(**kw).__dlpack__(stream=1), "values[0]")
        assert (t.dtype, t.contiguous) == (dtype, contiguous), kw
        t.release()


def test_strided_device_array_is_refused_naming_it_and_given_back():
    a = Fake((2, 3), strides=(1, 2))
    with pytest.raises(ringmaster.InvalidArgumentError,
                       match=r"^values\[3\]: a strided device array \(shape \[2, 3\], strides \[1, 2\].*"
                             r"x\.contiguous\(\)"):
        _dlpack.export(a, 0, "values[3]")
    assert a.deleted == 1


def test_read_only_device_array_is_refused_where_written_and_taken_where_read():
    a = Fake((4,), versioned=True, flags=1)  # DLPACK_FLAG_BITMASK_READ_ONLY
    with pytest.raises(ringmaster.InvalidArgumentError, match=r"^values\[2\]: .*read-only"):
        _dlpack.export(a, 0, "values[2]")
    assert a.deleted == 1
    t = _dlpack.export(a, 0, "values[2]", writable=False)
    assert t.readonly
    t.release()
    assert a.deleted == 2


def test_a_dlpack_major_version_it_cannot_read_is_given_back_and_refused():
    a = Fake((4,), versioned=True, major=2)
    with pytest.raises(ringmaster.InvalidArgumentError, match=r"^values\[0\]: DLPack 2\.0 tensor"):
        _dlpack.export(a, 0, "values[0]")
    assert a.deleted == 1


def test_what_is_a_device_array_and_which_stream():
    assert _dlpack.is_device(Fake(device=(2, 0))) and _dlpack.is_device(Fake(device=(13, 0)))
    # Pinned host memory (kDLCUDAHost) and CPU memory stay on NumPy's path.
    assert not _dlpack.is_device(Fake(device=(3, 0))) and not _dlpack.is_device(Fake(device=(1, 0)))
    assert not _dlpack.is_device(np.ones(2)) and not _dlpack.is_device([1.0])

    class CupyStream:
        ptr = 0xABC

    class TorchStream:
        cuda_stream = 0xDEF

    assert [_dlpack.stream_handle(s) for s in (None, 0, 2, 12345, CupyStream(), TorchStream())] == \
        [0, 0, 2, 12345, 0xABC, 0xDEF]
    # The stream protocol: 1 is the legacy default stream (0 is not allowed).
    assert [_dlpack.protocol_stream(h) for h in (0, 2, 0xABC)] == [1, 2, 0xABC]
    for bad in ("s", -1, True, 1.5, object()):
        with pytest.raises(ringmaster.InvalidArgumentError, match=r"^stream: "):
            _dlpack.stream_handle(bad)


# --- the Communicator's routing ---------------------------------------------

class FakeHandle:
    def __init__(self, keep: Any) -> None:
        self.keep = keep

    def done(self) -> bool:
        return True

    def wait(self) -> None:
        self.keep = None  # as _core.Handle: the tensors go once the call is over


class FakeCore:
    """Stands in for _core.Comm: what the Communicator hands the C layer,
    and how many of `watched`'s exports were given back at that moment."""

    def __init__(self, watched: List[Any] = (), error: Exception | None = None) -> None:
        self.calls: List[tuple] = []
        self.watched = list(watched)
        self.error = error

    def _record(self, *call: Any) -> None:
        self.calls.append(call + (tuple(w.deleted for w in self.watched),))
        if self.error:
            raise self.error

    def allreduce_on_stream(self, specs, sources, op, options, stream):
        self._record("allreduce_on_stream", specs, sources, op, stream)

    def allreduce_on_stream_async(self, specs, op, options, stream, keep):
        self._record("allreduce_on_stream_async", specs, op, stream)
        return FakeHandle(keep)

    def allreduce(self, specs, op, options):  # host memory
        self._record("allreduce", specs, op)


def test_all_reduce_hands_device_arrays_to_the_stream_call_in_place():
    a, b = Fake((2, 3), byte_offset=16), Fake((5,), bits=64, versioned=True)
    core = FakeCore([a, b])
    comm = ringmaster.Communicator(core)

    class Stream:
        ptr = 0xABC

    got = comm.all_reduce([a, b], op="max", stream=Stream())
    assert isinstance(got, list) and got[0] is a and got[1] is b
    # (address, count, float32 / float64), in place, MAX, the caller's stream; nothing given back yet.
    assert core.calls == [("allreduce_on_stream", [(a.data + 16, 6, 2), (b.data, 5, 3)], [], 3, 0xABC, (0, 0))]
    assert a.calls == [{"stream": 0xABC}] and b.calls == [{"stream": 0xABC, "max_version": (1, 0)}]
    assert (a.deleted, b.deleted) == (1, 1)
    # One value, a tuple; the default stream: 0 to the engine, 1 (legacy) to the producer.
    assert comm.all_reduce(a) is a
    t = comm.all_reduce((b,), op="sum")
    assert isinstance(t, tuple) and t[0] is b
    assert core.calls[-1][4] == 0 and b.calls[-1]["stream"] == 1
    assert (a.deleted, b.deleted) == (2, 2)


def test_engine_failure_still_gives_every_export_back():
    a, b = Fake((4,)), Fake((4,))
    comm = ringmaster.Communicator(FakeCore([a, b], error=ringmaster.UnavailableError("no CUDA")))
    with pytest.raises(ringmaster.UnavailableError):
        comm.all_reduce([a, b])
    assert (a.deleted, b.deleted) == (1, 1)


def test_all_reduce_async_keeps_the_exports_until_the_call_is_over():
    a = Fake((8,))
    core = FakeCore([a])
    comm = ringmaster.Communicator(core)
    h = comm.all_reduce_async(a, op="mean", stream=0x77)
    assert core.calls == [("allreduce_on_stream_async", [(a.data, 8, 2)], 1, 0x77, (0,))]
    gc.collect()
    assert a.deleted == 0  # the engine may still write it
    assert h.wait() is a
    gc.collect()
    assert a.deleted == 1


def test_refusals_before_anything_starts():
    core = FakeCore()
    comm = ringmaster.Communicator(core)
    good, strided = Fake((4,)), Fake((2, 2), strides=(1, 2))
    with pytest.raises(ringmaster.InvalidArgumentError, match=r"^values\[1\]: a strided device array"):
        comm.all_reduce([good, strided])
    assert (good.deleted, strided.deleted) == (1, 1)  # the one taken before is given back too
    odd = Fake((4,), code=UINT, bits=32)
    with pytest.raises(ringmaster.InvalidArgumentError, match=r"^values\[0\]\.dtype: unknown dtype 'uint32'"):
        comm.all_reduce(odd)
    assert odd.deleted == 1
    ro = Fake((4,), versioned=True, flags=1)
    with pytest.raises(ringmaster.InvalidArgumentError, match=r"^values\[0\]: .*read-only"):
        comm.all_reduce_async([ro])
    assert ro.deleted == 1
    with pytest.raises(ringmaster.InvalidArgumentError,
                       match=r"^values\[1\]: is host memory but values\[0\] is CUDA memory"):
        comm.all_reduce([Fake((4,)), np.ones(4)])
    with pytest.raises(ringmaster.InvalidArgumentError, match=r"^out: is host memory but values are CUDA"):
        comm.all_reduce(Fake((4,)), out=np.ones(4))
    with pytest.raises(ringmaster.InvalidArgumentError, match=r"^out: is CUDA memory but values are host"):
        comm.all_reduce(np.ones(4), out=Fake((4,)))
    with pytest.raises(ringmaster.InvalidArgumentError, match=r"^stream: given for host arrays"):
        comm.all_reduce(np.ones(4), stream=5)
    assert core.calls == []


def test_pinned_host_memory_stays_on_numpys_path_in_place():
    pinned = Fake((4,), device=(3, 0), versioned=True)  # kDLCUDAHost: NumPy reads it
    core = FakeCore()
    assert ringmaster.Communicator(core).all_reduce(pinned) is pinned
    assert core.calls == [("allreduce", [(pinned.data, 4, 2)], 0, ())]
    assert "stream" not in pinned.calls[0] or pinned.calls[0]["stream"] is None


def test_other_collectives_refuse_device_arrays_naming_the_call():
    comm = ringmaster.Communicator(FakeCore())
    for call, words in ((lambda: comm.broadcast([np.ones(2), Fake((2,))]), r"^broadcast: values\[1\] is CUDA"),
                        (lambda: comm.all_gather(Fake((2,))), r"^all_gather: value is CUDA"),
                        (lambda: comm.reduce("sum", Fake((2,))), r"^reduce: value is CUDA")):
        with pytest.raises(ringmaster.UnimplementedError, match=words):
            call()


def test_out_of_place_on_device_is_routed_with_its_sources():
    src, dst, same = Fake((4,), versioned=True, flags=1), Fake((4,)), Fake((3,))  # inputs may be read-only
    core = FakeCore([src, dst, same])
    comm = ringmaster.Communicator(core)
    got = comm.all_reduce([src, same], out=[dst, same], stream=9)
    assert got == [dst, same]
    assert core.calls == [("allreduce_on_stream", [(dst.data, 4, 2), (same.data, 3, 2)], [src.data, 0], 0, 9,
                           (0, 0, 0))]
    assert (src.deleted, dst.deleted, same.deleted) == (1, 1, 2)  # same: taken as input and as output
    with pytest.raises(ringmaster.InvalidArgumentError, match=r"^out\[0\]: must be float32 of 4 elements like "
                                                                r"values\[0\], got float64 of 4"):
        comm.all_reduce(Fake((4,)), out=Fake((4,), bits=64))
    with pytest.raises(ringmaster.InvalidArgumentError, match=r"^out\[0\]: .*read-only"):
        comm.all_reduce(Fake((4,)), out=Fake((4,), versioned=True, flags=1))
    with pytest.raises(ringmaster.InvalidArgumentError, match=r"^out: must match values"):
        comm.all_reduce([Fake((4,))], out=[Fake((4,)), Fake((4,))])
    assert len(core.calls) == 1


# --- the real extension and engine ------------------------------------------

def _cudart_loads() -> bool:
    """Whether the engine will find a CUDA runtime (its candidates, gpu_api.cc)."""
    for name in (os.environ.get("RINGMASTER_CUDART_LIBRARY"), "libcudart.so.12", "libcudart.so"):
        if not name:
            continue
        try:
            ctypes.CDLL(name)
            return True
        except OSError:
            pass
    return False


def test_cuda_arrays_reach_the_engines_gpu_path(run_group):
    group = run_group("cuda_dlpack", n=1)
    r = group.expect_ok(120)[0].result
    report = group.report()
    # No GPU here: the engine's GPU path answers, naming the tensor. Without
    # a CUDA runtime it cannot load one; with one (and no device) it cannot
    # place the pointer.
    if _cudart_loads():
        expected = ("InvalidArgumentError", "tensors[0] is marked GPU memory")
    else:
        expected = ("UnavailableError", "tensors[0]: GPU memory needs the CUDA runtime")
    for key in ("sync", "async"):
        assert key in r, report
        assert r[key][0] == expected[0] and expected[1] in r[key][1], (key, r[key], report)
    assert r["sync_calls"] == [[{"stream": 0x5000}], [{"stream": 0x5000}]], report
    assert r["async_calls"] == [{"stream": 1, "max_version": [1, 0]}], report
    assert r["sync_deleted"] == [1, 1] and r["async_deleted"] == 1, report
    # Out of place on the device: the engine's GPU path too (sources passed).
    assert r["out"][0] == expected[0] and expected[1] in r["out"][1], report
    assert r["out_deleted"] == [1, 1], report
    assert r["broadcast"][0] == "UnimplementedError" and "broadcast: values[0] is CUDA" in r["broadcast"][1]
