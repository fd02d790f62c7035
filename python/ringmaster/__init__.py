"""Ringmaster's collective all-reduce for NumPy and DLPack (CPU) arrays.

    import ringmaster
    comm = ringmaster.init()          # forms the group from TF_CONFIG
    comm.all_reduce(grads, op="mean")  # in place
"""

from __future__ import annotations

import os
import threading
from typing import Optional

# Order matters: libringmaster.so.N must be loaded (RTLD_LOCAL|RTLD_DEEPBIND)
# before the extension that links it; see _loader.py for why.
from . import _loader

_loader.load()

from . import _core  # noqa: E402
from ._communicator import Communicator, Handle  # noqa: E402
from ._errors import (  # noqa: E402
    AbortedError,
    CancelledError,
    DeadlineExceededError,
    FailedPreconditionError,
    InternalError,
    InvalidArgumentError,
    ResourceExhaustedError,
    RingmasterError,
    UnavailableError,
    UnauthenticatedError,
    UnimplementedError,
    UnknownError,
    error_from_code,
)
from ._options import CommunicationOptions  # noqa: E402

__version__ = "0.1.0"

__all__ = [
    "AbortedError", "CancelledError", "CommunicationOptions", "Communicator",
    "DeadlineExceededError", "FailedPreconditionError", "Handle", "InternalError",
    "InvalidArgumentError", "ResourceExhaustedError", "RingmasterError", "UnauthenticatedError", "UnavailableError", "UnimplementedError",
    "UnknownError", "default_communicator", "error_from_code", "include_dir", "init",
    "library_path", "shutdown",
]

_lock = threading.Lock()
_default: Optional[Communicator] = None


def init() -> Communicator:
    """Forms the process's group from the environment once and returns it.

    It becomes the process default (rm_set_default_communicator), which the
    TensorFlow op uses. Later calls return the same communicator.
    """
    global _default
    with _lock:
        if _default is None or not _default._c.alive:
            comm = Communicator.from_environment()
            comm._c.set_default()
            _default = comm
        return _default


def default_communicator() -> Optional[Communicator]:
    """The communicator init() formed, or None."""
    comm = _default
    return comm if comm is not None and comm._c.alive else None


def shutdown() -> None:
    """Clears the process default, then leaves and frees the group."""
    global _default
    with _lock:
        comm, _default = _default, None
        if comm is not None:
            # First the default (the TF op must never see a freed pointer)...
            if comm._c.is_default():
                _core.clear_default()
            # ...then the communicator itself.
            comm.close()


def library_path() -> str:
    """Absolute path of the libringmaster.so.N this package loaded."""
    return _loader.library_path()


def include_dir() -> str:
    """The directory that holds ringmaster/ringmaster.h (for the TF op)."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "include")
