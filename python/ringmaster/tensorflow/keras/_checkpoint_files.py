"""A checkpoint on disk: its directory (an argument, else
$RINGMASTER_CHECKPOINT_DIR), the training position it records, and its
format: ``ckpt-<step>/state.npz`` and ``position.json``, written atomically
(a temporary directory fsynced, then renamed), read back, and checked
against the variables it is restored into. No TensorFlow and no collective
here (checkpoint.py does those)."""
from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple, Union

import numpy as np

ENV_DIR = "RINGMASTER_CHECKPOINT_DIR"
_FORMAT = 1
_PREFIX = "ckpt-"
_STATE = "state.npz"
_META = "position.json"

PathLike = Union[str, "os.PathLike[str]"]


@dataclass(frozen=True)
class Position:
    """Where training stood when a checkpoint was written.

    ``epoch``: epochs completed (what ``model.fit(initial_epoch=...)``
    takes); ``batch``: batches done in epoch ``epoch`` (0 at an epoch's
    end); ``step``: optimizer steps done in all (the step a custom loop
    resumes at)."""

    epoch: int = 0
    batch: int = 0
    step: int = 0


def checkpoint_directory(directory: Optional[PathLike] = None) -> Optional[Path]:
    """``directory``, else ``$RINGMASTER_CHECKPOINT_DIR``, else None (no
    checkpointing). An empty variable counts as unset."""
    if directory is not None and str(directory) != "":
        return Path(directory)
    env = os.environ.get(ENV_DIR, "")
    return Path(env) if env else None


def _name(v: Any) -> str:
    return str(getattr(v, "path", None) or getattr(v, "name", "?"))


def _describe(variables: List[Tuple[str, Any]]) -> List[Dict[str, Any]]:
    return [{"role": role, "name": _name(v), "shape": [int(d) for d in v.shape],
             "dtype": np.dtype(_np_dtype(v)).name} for role, v in variables]


def _np_dtype(v: Any) -> Any:
    dt = getattr(v, "dtype", None)
    dt = getattr(dt, "as_numpy_dtype", dt)  # tf.DType
    return np.dtype(dt)


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_file(path: Path, data: bytes) -> None:
    with open(path, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


def _step_of(p: Path) -> Optional[int]:
    if not p.name.startswith(_PREFIX):
        return None
    try:
        return int(p.name[len(_PREFIX):])
    except ValueError:
        return None


def _checkpoints(directory: Path) -> List[Path]:
    """The complete checkpoints in ``directory``, newest (highest step) first."""
    try:
        entries = list(directory.iterdir())
    except FileNotFoundError:
        return []
    found = [(s, p) for p in entries if (s := _step_of(p)) is not None and p.is_dir()]
    return [p for _, p in sorted(found, reverse=True)]


def latest(directory: Optional[PathLike] = None) -> Optional[Path]:
    """The newest checkpoint in ``directory`` (default
    ``$RINGMASTER_CHECKPOINT_DIR``), or None. Reads this process's file
    system only (no collective)."""
    d = checkpoint_directory(directory)
    if d is None:
        return None
    found = _checkpoints(d)
    return found[0] if found else None


def _write(directory: Path, position: Position, variables: List[Tuple[str, Any]], keep: int) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    for stale in directory.glob(".tmp-" + _PREFIX + "*"):  # left by a writer that died mid-write
        shutil.rmtree(stale, ignore_errors=True)
    arrays = {f"v{i:05d}": np.asarray(v.numpy() if hasattr(v, "numpy") else v) for i, (_, v) in
              enumerate(variables)}
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    state = buf.getvalue()
    meta = {"format": _FORMAT, **asdict(position), "sha256": hashlib.sha256(state).hexdigest(),
            "variables": _describe(variables)}
    target = directory / f"{_PREFIX}{position.step:012d}"
    tmp = Path(tempfile.mkdtemp(prefix=".tmp-" + target.name + "-", dir=directory))
    try:
        _write_file(tmp / _STATE, state)
        _write_file(tmp / _META, json.dumps(meta, indent=1).encode())
        _fsync_dir(tmp)
        old = None
        if target.exists():  # the same step saved again: swap, the older one is removed after
            old = directory / f".tmp-{target.name}-old-{os.getpid()}"
            os.rename(target, old)
        os.rename(tmp, target)
        _fsync_dir(directory)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    for extra in [p for p in _checkpoints(directory) if p != target][max(0, keep - 1):]:
        shutil.rmtree(extra, ignore_errors=True)
    return target


def _read(path: Path) -> Tuple[Dict[str, Any], List[np.ndarray]]:
    """A checkpoint's metadata and arrays; ValueError or OSError when it is
    damaged (missing file, bad JSON, sha256 mismatch)."""
    meta = json.loads((path / _META).read_text())
    if meta.get("format") != _FORMAT:
        raise ValueError(f"{path / _META}: format {meta.get('format')!r}, expected {_FORMAT}")
    state = (path / _STATE).read_bytes()
    if hashlib.sha256(state).hexdigest() != meta.get("sha256"):
        raise ValueError(f"{path / _STATE}: sha256 does not match {_META} (a damaged file)")
    with np.load(io.BytesIO(state), allow_pickle=False) as z:
        arrays = [z[f"v{i:05d}"] for i in range(len(meta["variables"]))]
    return meta, arrays


def _mismatch(path: Path, meta: Dict[str, Any], variables: List[Tuple[str, Any]]) -> Optional[str]:
    """Why the checkpoint does not fit these variables, naming the first
    variable that differs; None when it fits."""
    saved = meta["variables"]
    here = _describe(variables)
    for role in ("model", "optimizer"):
        s = [x for x in saved if x["role"] == role]
        h = [x for x in here if x["role"] == role]
        for i, (a, b) in enumerate(zip(s, h)):
            if a["shape"] != b["shape"] or a["dtype"] != b["dtype"]:
                return (f"checkpoint {path}: {role} variable {i} {b['name']!r} is {b['dtype']}{b['shape']} here "
                        f"but {a['dtype']}{a['shape']} in the checkpoint (saved as {a['name']!r}): "
                        "a checkpoint of a different model")
        if len(s) != len(h):
            names = [x["name"] for x in (s[len(h):] if len(s) > len(h) else h[len(s):])]
            return (f"checkpoint {path}: {len(s)} {role} variables in the checkpoint, {len(h)} here "
                    f"({'extra in the checkpoint' if len(s) > len(h) else 'not in the checkpoint'}: "
                    f"{', '.join(names[:5])}): a checkpoint of a different model or optimizer")
    return None
