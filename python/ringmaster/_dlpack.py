"""DLPack producers on CUDA: which values are device arrays, the stream a
call uses, and the capsule's parsing (ctypes, no framework imported).

The consumer's side of the DLPack protocol and the Python array API's
stream protocol: `__dlpack_device__()` says where a value lives; for CUDA
memory (kDLCUDA, kDLCUDAManaged) `__dlpack__(stream=S)` is asked with the
stream S the engine will use (1: the legacy default stream), so the producer
makes S wait for the work that writes the array. The capsule ("dltensor",
or "dltensor_versioned" when the producer takes `max_version`) is renamed
"used_..." once taken, and its deleter called exactly once when the call
is done (DeviceTensor.release): until then the producer's memory stays
alive. Host memory (kDLCPU, and pinned kDLCUDAHost, which NumPy reads) stays
on the NumPy path and never comes here.
"""

from __future__ import annotations

import ctypes
import threading
from typing import Any, Optional, Tuple

import numpy as np

from ._errors import InvalidArgumentError

# DLDeviceType (dlpack.h).
KDL_CPU = 1
KDL_CUDA = 2
KDL_CUDA_HOST = 3
KDL_CUDA_MANAGED = 13
DEVICE_TYPES = (KDL_CUDA, KDL_CUDA_MANAGED)  # what the engine's GPU path takes

# The newest DLPack major version this consumer reads (DLManagedTensorVersioned).
MAX_VERSION = (1, 0)
FLAG_READ_ONLY = 1 << 0

# The stream protocol's values for CUDA: 1 is the legacy default stream (0 is
# not allowed; None means the legacy default too); 2 the per-thread default.
STREAM_LEGACY = 1


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


# The deleters (void (*)(DLManagedTensor[Versioned]*)) as addresses: called
# through _call_deleter.
class DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p)]


class DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [
        ("version", DLPackVersion),
        ("manager_ctx", ctypes.c_void_p),
        ("deleter", ctypes.c_void_p),
        ("flags", ctypes.c_uint64),
        ("dl_tensor", DLTensor),
    ]


# The capsule API through prototypes of our own (ctypes.pythonapi's shared
# function objects keep whatever argtypes another library set). PyDLL: the
# GIL is held, and a Python error set by the call is raised.
_api = ctypes.pythonapi
_is_valid = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.c_char_p)(("PyCapsule_IsValid", _api))
_get_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", _api))
_set_name = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.c_char_p)(("PyCapsule_SetName", _api))
# Deleters run with the GIL held: some producers' deleters touch Python
# objects (they take the GIL themselves too, which is then a no-op).
_call_deleter = ctypes.PYFUNCTYPE(None, ctypes.c_void_p)

# PyCapsule_SetName keeps the pointer, not a copy: these live as long as
# the module (and the module as long as the interpreter).
_NAMES = {
    False: (b"dltensor", ctypes.c_char_p(b"used_dltensor")),
    True: (b"dltensor_versioned", ctypes.c_char_p(b"used_dltensor_versioned")),
}

# (DLDataTypeCode, bits) -> the dtype's name as NumPy and the engine's table
# spell it (the engine refuses the ones it lacks, naming the field).
_CODES = {0: "int", 1: "uint", 2: "float", 4: "bfloat", 5: "complex", 6: "bool"}


def dtype_name(code: int, bits: int, lanes: int) -> str:
    """"float32", "bfloat16", "bool", ...; "dlpack(code=..., bits=...)" for
    one with no name (which the engine's dtype table then refuses)."""
    base = _CODES.get(code)
    if base is None or lanes != 1:
        return f"dlpack(code={code}, bits={bits}, lanes={lanes})"
    if base == "bool":
        return "bool" if bits == 8 else f"dlpack(code={code}, bits={bits}, lanes={lanes})"
    return f"{base}{bits}"


def device_of(value: Any) -> Optional[Tuple[int, int]]:
    """(device_type, device_id) of a DLPack producer; None for anything else."""
    if isinstance(value, np.ndarray):
        return (KDL_CPU, 0)  # the common case, without a call
    if not hasattr(value, "__dlpack__"):
        return None
    get = getattr(value, "__dlpack_device__", None)
    if get is None:
        return None
    dev = get()
    return int(dev[0]), int(dev[1])


def is_device(value: Any) -> bool:
    """True for a DLPack producer in CUDA device (or managed) memory."""
    dev = device_of(value)
    return dev is not None and dev[0] in DEVICE_TYPES


def stream_handle(stream: Any) -> int:
    """The cudaStream_t value of `stream`: None (the legacy default stream,
    as 0 is), an int handle, or an object with `.ptr` (CuPy's Stream) or
    `.cuda_stream` (PyTorch's)."""
    if stream is None:
        return 0
    raw = stream
    if not isinstance(raw, int):
        for attr in ("cuda_stream", "ptr"):
            if hasattr(stream, attr):
                raw = getattr(stream, attr)
                break
    if isinstance(raw, bool) or not isinstance(raw, int) or raw < 0:
        raise InvalidArgumentError(
            "stream: must be a cudaStream_t handle (an int >= 0) or a stream object with .ptr (CuPy) "
            f"or .cuda_stream (PyTorch), got {stream!r}")
    return int(raw)


def protocol_stream(handle: int) -> int:
    """What `__dlpack__(stream=...)` is given for the cudaStream_t `handle`:
    the stream protocol's 1 for the legacy default stream (handle 0)."""
    return STREAM_LEGACY if handle == 0 else handle


def _contiguous(shape: Tuple[int, ...], strides: Optional[Tuple[int, ...]]) -> bool:
    """C order (strides in elements; None: compact row-major). Axes of
    length 1 may have any stride, and an empty array is contiguous."""
    if strides is None or 0 in shape:
        return True
    expected = 1
    for n, s in zip(reversed(shape), reversed(strides)):
        if n != 1 and s != expected:
            return False
        expected *= n
    return True


class DeviceTensor:
    """A taken DLPack capsule: where the array is and what it holds. The
    producer's memory stays alive until release() (or this object's end),
    which calls the producer's deleter exactly once."""

    def __init__(self, address: int, deleter: int, tensor: DLTensor, readonly: bool) -> None:
        self._address = address
        self._deleter = deleter
        self._lock = threading.Lock()
        self.device: Tuple[int, int] = (int(tensor.device.device_type), int(tensor.device.device_id))
        self.ndim = int(tensor.ndim)
        self.shape: Tuple[int, ...] = tuple(int(tensor.shape[d]) for d in range(self.ndim))
        self.strides: Optional[Tuple[int, ...]] = (
            tuple(int(tensor.strides[d]) for d in range(self.ndim)) if tensor.strides else None)
        dt = tensor.dtype
        self.dtype: str = dtype_name(int(dt.code), int(dt.bits), int(dt.lanes))
        self.itemsize = (int(dt.bits) * int(dt.lanes) + 7) // 8
        self.byte_offset = int(tensor.byte_offset)
        self.data = int(tensor.data or 0)
        self.ptr = self.data + self.byte_offset  # the first element
        self.readonly = readonly
        count = 1
        for n in self.shape:
            count *= n
        self.count = count
        self.nbytes = count * self.itemsize

    @property
    def contiguous(self) -> bool:
        return _contiguous(self.shape, self.strides)

    @property
    def released(self) -> bool:
        return self._address == 0

    def release(self) -> None:
        """Calls the producer's deleter (once; later calls do nothing)."""
        with self._lock:
            address, self._address = self._address, 0
        if address and self._deleter:
            _call_deleter(self._deleter)(address)

    def __del__(self) -> None:
        try:
            self.release()
        except Exception:  # interpreter shutdown: ctypes may be gone
            pass

    def __repr__(self) -> str:
        return (f"<DeviceTensor {self.dtype}{list(self.shape)} on {self.device} at 0x{self.ptr:x}"
                f"{' (released)' if self.released else ''}>")


def parse_capsule(capsule: Any, field: str) -> DeviceTensor:
    """Takes a "dltensor" or "dltensor_versioned" capsule: renames it
    "used_..." (its own destructor then leaves the tensor to us) and returns
    the DeviceTensor that owns it. A capsule of a DLPack major version we
    cannot read is given back to its deleter and refused."""
    for versioned in (True, False):
        name, used = _NAMES[versioned]
        if _is_valid(capsule, name):
            break
    else:
        raise InvalidArgumentError(
            f"{field}: __dlpack__ returned {type(capsule).__name__}, not an unused DLPack capsule "
            "('dltensor' or 'dltensor_versioned')")
    address = _get_pointer(capsule, name)
    if not address:
        raise InvalidArgumentError(f"{field}: the DLPack capsule holds no tensor")
    if _set_name(capsule, used) != 0:
        raise InvalidArgumentError(f"{field}: could not take the DLPack capsule")
    if versioned:
        managed = DLManagedTensorVersioned.from_address(address)
        deleter = int(managed.deleter or 0)
        major, minor = int(managed.version.major), int(managed.version.minor)
        if major != MAX_VERSION[0]:
            if deleter:
                _call_deleter(deleter)(address)
            raise InvalidArgumentError(
                f"{field}: DLPack {major}.{minor} tensor; this consumer reads version {MAX_VERSION[0]}.x")
        return DeviceTensor(address, deleter, managed.dl_tensor, bool(int(managed.flags) & FLAG_READ_ONLY))
    managed = DLManagedTensor.from_address(address)
    return DeviceTensor(address, int(managed.deleter or 0), managed.dl_tensor, False)


def export(value: Any, handle: int, field: str, writable: bool = True) -> DeviceTensor:
    """The DLPack tensor of `value` (a CUDA producer), exported for work on
    the cudaStream_t `handle` (0: the legacy default stream). Refuses,
    naming `field`, what the engine cannot use as it is: a strided array, or
    a read-only one where it writes (`writable`)."""
    stream = protocol_stream(handle)
    try:
        try:
            capsule = value.__dlpack__(stream=stream, max_version=MAX_VERSION)
        except TypeError:  # a producer older than DLPack 1.0's max_version
            capsule = value.__dlpack__(stream=stream)
    except (BufferError, TypeError, ValueError, RuntimeError) as e:
        raise InvalidArgumentError(f"{field}: __dlpack__(stream={stream}) failed: {e}") from None
    t = parse_capsule(capsule, field)
    problem = None
    if t.device[0] not in DEVICE_TYPES:
        problem = (f"exported device type {t.device[0]} although __dlpack_device__ said CUDA; "
                   "the engine's GPU path takes CUDA device or managed memory")
    elif not t.contiguous:
        problem = (f"a strided device array (shape {list(t.shape)}, strides {list(t.strides or ())} "
                   "elements) cannot be reduced in place, and the engine cannot copy device memory "
                   "without a framework: pass a C-contiguous array (PyTorch: x.contiguous(); CuPy: "
                   "cupy.ascontiguousarray(x)) and copy the result back if you need to")
    elif writable and t.readonly:
        problem = ("the producer exports this device array read-only (DLPack's READ_ONLY flag), and "
                   "the all-reduce writes it in place: pass a writable copy (and use the returned "
                   "array)")
    elif t.count and not t.data:
        problem = "the DLPack tensor's data pointer is NULL"
    if problem:
        t.release()
        raise InvalidArgumentError(f"{field}: {problem}")
    return t
