"""One exception class per engine status code (gRPC's codes, as TF's)."""

from __future__ import annotations

from typing import Dict, Type


class RingmasterError(RuntimeError):
    """A failed Ringmaster call; `.code` is the engine's status code."""

    code: int = 2  # UNKNOWN

    def __init__(self, message: str, code: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code


class CancelledError(RingmasterError):
    code = 1


class UnknownError(RingmasterError):
    code = 2


class InvalidArgumentError(RingmasterError):
    code = 3


class DeadlineExceededError(RingmasterError):
    code = 4


class FailedPreconditionError(RingmasterError):
    code = 9


class ResourceExhaustedError(RingmasterError):
    """Memory the call needs cannot be had (the GPU's fusion buffer)."""

    code = 8


class AbortedError(RingmasterError):
    code = 10


class UnimplementedError(RingmasterError):
    code = 12


class InternalError(RingmasterError):
    code = 13


class UnavailableError(RingmasterError):
    code = 14


class UnauthenticatedError(RingmasterError):
    """A member or peer that does not prove the job's key (RINGMASTER_JOB_KEY_FILE)."""

    code = 16


_BY_CODE: Dict[int, Type[RingmasterError]] = {
    cls.code: cls
    for cls in (
        CancelledError,
        UnknownError,
        InvalidArgumentError,
        DeadlineExceededError,
        FailedPreconditionError,
        ResourceExhaustedError,
        AbortedError,
        UnimplementedError,
        InternalError,
        UnavailableError,
        UnauthenticatedError,
    )
}


def error_from_code(code: int, message: str) -> RingmasterError:
    """The exception for an engine status code (RingmasterError if unknown)."""
    cls = _BY_CODE.get(int(code))
    if cls is None:
        return RingmasterError(message or f"status code {code}", int(code))
    return cls(message)
