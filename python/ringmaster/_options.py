"""Per-call communication options (tf.distribute.experimental.CommunicationOptions)."""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Optional, Tuple

from . import _core
from ._errors import InvalidArgumentError


def _enum_name(kind: str, value: Any, field: str) -> str:
    """The canonical name of ``value`` in the C API's table of ``kind``: from
    a string (any case, or an alias) or an enum whose ``.value``/``.name`` is
    one (TF's CommunicationImplementation.NCCL.value == 'NCCL')."""
    raw = value
    for attr in ("value", "name"):
        inner = getattr(raw, attr, None)
        if isinstance(inner, str):
            raw = inner
            break
    if not isinstance(raw, str):
        names = ", ".join(_core.enum_names(kind))
        raise InvalidArgumentError(f"{field}: must be one of {names}, got {value!r}")
    return _core.enum_names(kind)[_core.parse_enum(kind, raw, field)]


@dataclasses.dataclass
class CommunicationOptions:
    """Options of one collective; 0 / None / "AUTO" keep the job's default.

    bytes_per_pack: pack size in bytes (0: the engine chooses).
    timeout_seconds: fail with DeadlineExceededError after this long
        (None or 0: the job's default, RINGMASTER_TIMEOUT_SECONDS).
    implementation: "AUTO", "RING" or "NCCL" (a hint), or an enum with that
        `.value`/`.name`.
    algorithm: not one of TensorFlow's options: the CPU engine's all-reduce
        algorithm, "auto" (the engine picks by size and the links), "ring",
        "recursive_doubling" ("rd") or "halving_doubling" ("hd").
    """

    bytes_per_pack: int = 0
    timeout_seconds: Optional[float] = None
    implementation: Any = "AUTO"
    algorithm: Any = "auto"

    def __post_init__(self) -> None:
        bpp = self.bytes_per_pack
        if isinstance(bpp, bool) or not isinstance(bpp, int):
            try:
                if isinstance(bpp, bool) or int(bpp) != bpp:
                    raise ValueError
                bpp = int(bpp)
            except (TypeError, ValueError):
                raise InvalidArgumentError(
                    f"bytes_per_pack: must be an integer >= 0, got {self.bytes_per_pack!r}"
                ) from None
        if bpp < 0:
            raise InvalidArgumentError(f"bytes_per_pack: must be >= 0, got {bpp}")
        self.bytes_per_pack = bpp
        t = self.timeout_seconds
        if t is not None:
            try:
                if isinstance(t, bool):
                    raise TypeError
                t = float(t)
            except (TypeError, ValueError):
                raise InvalidArgumentError(
                    f"timeout_seconds: must be a number >= 0 or None, got {self.timeout_seconds!r}"
                ) from None
            if math.isnan(t) or t < 0:
                raise InvalidArgumentError(
                    f"timeout_seconds: must be >= 0 or None, got {self.timeout_seconds!r}"
                )
            self.timeout_seconds = t
        self.implementation = _enum_name("implementation", self.implementation, "implementation")
        self.algorithm = _enum_name("algorithm", self.algorithm, "algorithm")

    @classmethod
    def from_any(cls, obj: Any) -> "CommunicationOptions":
        """None, ours, TF's CommunicationOptions or CollectiveHints (duck-typed)."""
        if obj is None:
            return cls()
        if isinstance(obj, cls):
            return obj
        if not (hasattr(obj, "bytes_per_pack") or hasattr(obj, "timeout_seconds")):
            raise InvalidArgumentError(
                "options: expected ringmaster.CommunicationOptions, "
                "tf.distribute.experimental.CommunicationOptions or CollectiveHints, "
                f"got {type(obj).__name__}"
            )
        # TF's CommunicationOptions stores bytes_per_pack/timeout_seconds/
        # implementation; CollectiveHints has no implementation.
        bpp = getattr(obj, "bytes_per_pack", 0)
        return cls(
            bytes_per_pack=0 if bpp is None else bpp,
            timeout_seconds=getattr(obj, "timeout_seconds", None),
            implementation=getattr(obj, "implementation", None) or "AUTO",
            algorithm=getattr(obj, "algorithm", None) or "auto",
        )

    def _to_c(self) -> Tuple[int, float, int, int]:
        """rm_options' fields (bytes_per_pack, timeout_seconds, implementation,
        algorithm): the one encoding, for the core's calls and the TensorFlow
        op's attributes alike."""
        # None and 0 keep the job's default (TF's "no per-call timeout"):
        # RM_TIMEOUT_KEEP, from the C header.
        timeout = _core.TIMEOUT_KEEP if not self.timeout_seconds else float(self.timeout_seconds)
        return (int(self.bytes_per_pack), timeout,
                _core.parse_enum("implementation", self.implementation, "implementation"),
                _core.parse_enum("algorithm", self.algorithm, "algorithm"))
