"""A hand-made DLPack producer that says its array is CUDA memory (ctypes,
no GPU): it builds DLManagedTensor / DLManagedTensorVersioned as dlpack.h
lays them out, records every __dlpack__ call's arguments and counts its
deleter's calls. Its data pointer is a host buffer that the code under test
must never read (the engine fails before it would, where no CUDA exists).

Used by test_dlpack.py and by worker.py's "cuda_dlpack" scenario.
"""

from __future__ import annotations

import ctypes
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

KDL_CUDA = 2


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


DELETER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", DELETER)]


class DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [("version", DLPackVersion), ("manager_ctx", ctypes.c_void_p), ("deleter", DELETER),
                ("flags", ctypes.c_uint64), ("dl_tensor", DLTensor)]


_api = ctypes.pythonapi
_CAPSULE_DESTRUCTOR = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
_capsule_new = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.c_void_p, ctypes.c_char_p, _CAPSULE_DESTRUCTOR)(
    ("PyCapsule_New", _api))
# The destructor gets a dying object: raw pointers only, never py_object.
_is_valid_raw = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p)(("PyCapsule_IsValid", _api))
_get_pointer_raw = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", _api))
is_valid = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.c_char_p)(("PyCapsule_IsValid", _api))

LEGACY = b"dltensor"
VERSIONED = b"dltensor_versioned"
_NAMES = {False: ctypes.c_char_p(LEGACY), True: ctypes.c_char_p(VERSIONED)}  # live as long as the module

# Every live export, by the address of its managed struct: the structs,
# the shape/strides arrays and the producer (the deleter drops them).
_live: Dict[int, Tuple[Any, ...]] = {}


def _deleter(address: int) -> None:
    record = _live.pop(address, None)
    if record is not None:
        record[-1].deleted += 1


_DELETER = DELETER(_deleter)


def _capsule_destructor(capsule: int) -> None:
    # The protocol: a capsule still named as made was never taken, so its
    # tensor is given back here; a "used_..." one is the consumer's.
    for name in _NAMES.values():
        if _is_valid_raw(capsule, name):
            _deleter(_get_pointer_raw(capsule, name))


_DESTRUCTOR = _CAPSULE_DESTRUCTOR(_capsule_destructor)


class FakeCudaArray:
    """A producer of `shape` elements (code/bits: DLDataType) at a host
    buffer's address + byte_offset, "on" (device_type, device_id).
    versioned: takes max_version and answers DLPack 1.x (`major`) with
    `flags`; else its __dlpack__ takes only stream (pre-1.0 producers)."""

    def __init__(self, shape: Tuple[int, ...] = (4,), code: int = 2, bits: int = 32, lanes: int = 1,
                 strides: Optional[Tuple[int, ...]] = None, byte_offset: int = 0,
                 device: Tuple[int, int] = (KDL_CUDA, 0), versioned: bool = False, flags: int = 0,
                 major: int = 1) -> None:
        self.shape, self.strides, self.byte_offset = tuple(shape), strides, byte_offset
        self.code, self.bits, self.lanes = code, bits, lanes
        self.device, self.versioned, self.flags, self.major = device, versioned, flags, major
        count = int(np.prod(shape)) if shape else 1
        self.buffer = np.zeros(max(1, count * max(1, bits // 8) * lanes) + byte_offset, dtype=np.uint8)
        self.data = self.buffer.ctypes.data
        self.calls: List[Dict[str, Any]] = []
        self.deleted = 0

    @property
    def exported(self) -> int:
        """Exports not yet given back to the deleter."""
        return sum(1 for r in _live.values() if r[-1] is self)

    def __dlpack_device__(self) -> Tuple[int, int]:
        return self.device

    def __dlpack__(self, **kwargs: Any) -> Any:
        if not self.versioned and set(kwargs) - {"stream"}:
            raise TypeError(f"__dlpack__() got an unexpected keyword argument {sorted(set(kwargs) - {'stream'})[0]!r}")
        self.calls.append(dict(kwargs))
        mv = kwargs.get("max_version")
        versioned = self.versioned and mv is not None and mv[0] >= 1
        return self._capsule(versioned)

    def _capsule(self, versioned: bool) -> Any:
        nd = len(self.shape)
        shape = (ctypes.c_int64 * max(1, nd))(*self.shape)
        strides = (ctypes.c_int64 * max(1, nd))(*self.strides) if self.strides is not None else None
        t = DLTensor(self.data, DLDevice(*self.device), nd, DLDataType(self.code, self.bits, self.lanes),
                     ctypes.cast(shape, ctypes.POINTER(ctypes.c_int64)),
                     ctypes.cast(strides, ctypes.POINTER(ctypes.c_int64)) if strides is not None else None,
                     self.byte_offset)
        if versioned:
            m: Any = DLManagedTensorVersioned(DLPackVersion(self.major, 0), None, _DELETER, self.flags, t)
        else:
            m = DLManagedTensor(t, None, _DELETER)
        address = ctypes.addressof(m)
        _live[address] = (m, shape, strides, self)
        # The c_char_p itself: the capsule keeps its pointer (a bytes copy would die).
        return _capsule_new(address, _NAMES[versioned], _DESTRUCTOR)
