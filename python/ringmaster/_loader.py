"""Loads libringmaster.so.N before the extension, in a scope of its own.

Why: a TensorFlow process exports its own (static) copies of gRPC, protobuf
and abseil globally. A libringmaster.so loaded the ordinary way, after
`import tensorflow`, gets its gRPC/protobuf calls bound to TensorFlow's
copies and crashes. Linking Debian's gRPC archives statically into the .so
is impossible (they hold local-exec TLS relocations, R_X86_64_TPOFF32), so
instead we dlopen the library ourselves, first, with

  RTLD_LOCAL    its symbols (and its gRPC/protobuf/absl dependencies') stay
                invisible to everything loaded later, TensorFlow included;
  RTLD_DEEPBIND it and its dependencies resolve symbols in their own scope
                before the global one, so TensorFlow's exported copies
                (loaded earlier or later) are never picked.

The extension `_core` then asks for `libringmaster.so.N` (DT_NEEDED, RPATH
$ORIGIN); the dynamic loader matches that SONAME to the object already
loaded here instead of loading it again the ordinary way. N is the C ABI's
version (RINGMASTER_ABI_VERSION in CMakeLists.txt): the package holds the
one file its extension was linked against.
"""

from __future__ import annotations

import ctypes
import glob
import os

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
_found = sorted(glob.glob(os.path.join(_PACKAGE_DIR, "libringmaster.so.[0-9]*")))
_path = _found[0] if len(_found) == 1 else os.path.join(_PACKAGE_DIR, "libringmaster.so.N")
_handle: ctypes.CDLL | None = None


def load() -> ctypes.CDLL:
    """dlopens libringmaster.so.N from the package (once) and returns it."""
    global _handle
    if _handle is None:
        if len(_found) > 1:
            raise ImportError(f"ringmaster: {_PACKAGE_DIR} holds {len(_found)} libringmaster.so files "
                              f"({', '.join(os.path.basename(f) for f in _found)}); reinstall the package")
        if not _found:
            raise ImportError(
                f"ringmaster: no libringmaster.so.N in {_PACKAGE_DIR}; install the package "
                "(pip install . or the wheel from scripts/python-wheel) instead "
                "of importing it from the source tree"
            )
        _handle = ctypes.CDLL(_path, mode=os.RTLD_LOCAL | os.RTLD_DEEPBIND)
    return _handle


def library_path() -> str:
    """The absolute path of the libringmaster.so.N this package loaded."""
    return _path
