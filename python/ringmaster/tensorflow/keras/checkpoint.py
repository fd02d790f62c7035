"""Resuming a whole-job restart from a checkpoint.

Without recovery in place (or once it gives up), a failed member makes the
whole group fail and the job's restartPolicy starts every replica again. A
restart that began at step 0 would throw away all the work done so far; with
this module it continues from the last checkpoint instead:

    import ringmaster.tensorflow.keras as rmk
    rmk.init()
    model.compile(optimizer=rmk.DistributedOptimizer(...), ...)
    position = rmk.checkpoint.restore(model)          # every rank; None: nothing to resume
    model.fit(..., initial_epoch=rmk.checkpoint.initial_epoch(position),
              callbacks=[rmk.callbacks.CheckpointCallback(), ...])

and in a custom loop:

    position = rmk.checkpoint.restore(model, optimizer=opt)
    for step in range(rmk.checkpoint.start_step(position), STEPS):
        ...
        if (step + 1) % 100 == 0:
            rmk.checkpoint.save(model, optimizer=opt, step=step + 1)

The directory is an argument, else ``$RINGMASTER_CHECKPOINT_DIR`` (the job
names it: a volume in a pod, a directory locally); with neither, nothing is
written or read. Only rank 0 writes, and only rank 0 reads: the path need
only exist on rank 0's volume, and every other rank gets the values by
broadcast, so all ranks start bit-identical.

What a checkpoint is: a directory ``ckpt-<step>`` holding ``state.npz`` (the
model's weights, trainable and not, then the optimizer's variables:
iteration count, learning rate, slots) and ``position.json`` (epoch, batch,
step, each variable's name, shape and dtype, and the sha256 of
``state.npz``). It is written into a temporary directory beside the target,
every file and the directory fsynced, then renamed into place and the parent
fsynced: a crash at any moment leaves the previous checkpoint as the latest,
never a half-written one. The ``keep`` newest are kept (default 2).
"""
from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import tempfile
import warnings
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple, Union

import numpy as np

from . import _impl
from ._callbacks_impl import CompatMixin, _variables, tf_variable

__all__ = ["ENV_DIR", "Position", "CheckpointMixin", "save", "restore", "latest", "initial_epoch",
           "start_step", "checkpoint_directory"]

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


def initial_epoch(position: Optional[Position]) -> int:
    """The ``initial_epoch`` for ``model.fit`` (0 when nothing was restored).
    fit cannot start in the middle of an epoch: after a mid-epoch
    checkpoint, fit runs that epoch again from its start."""
    return position.epoch if position is not None else 0


def start_step(position: Optional[Position]) -> int:
    """The step a custom loop resumes at (0 when nothing was restored)."""
    return position.step if position is not None else 0


# ---------------------------------------------------------------- variables

def _model_variables(model: Any) -> List[Any]:
    if not getattr(model, "built", True):
        raise ValueError("ringmaster checkpoint: the model is not built (it has no weights yet): give it an "
                         "Input or call build() before restore()")
    return list(getattr(model, "weights", None) or _variables(model))


def _optimizer_variables(optimizer: Any, model: Any) -> List[Any]:
    """The optimizer's variables, building it first: a Keras 3 optimizer
    makes its slots only in build(), and a restored slot needs a variable to
    go into."""
    if optimizer is None:
        return []
    trainable = list(model.trainable_variables)
    if hasattr(optimizer, "_create_all_weights"):  # tf_keras legacy (OptimizerV2): idempotent
        optimizer._create_all_weights(trainable)
    elif hasattr(optimizer, "build") and not (getattr(optimizer, "built", False)
                                              or getattr(optimizer, "_built", False)):
        optimizer.build(trainable)  # Keras 3 (.built) and tf_keras's new optimizers (._built)
    return _variables(optimizer)


def _name(v: Any) -> str:
    return str(getattr(v, "path", None) or getattr(v, "name", "?"))


def _describe(variables: List[Tuple[str, Any]]) -> List[Dict[str, Any]]:
    return [{"role": role, "name": _name(v), "shape": [int(d) for d in v.shape],
             "dtype": np.dtype(_np_dtype(v)).name} for role, v in variables]


def _np_dtype(v: Any) -> Any:
    dt = getattr(v, "dtype", None)
    dt = getattr(dt, "as_numpy_dtype", dt)  # tf.DType
    return np.dtype(dt)


def _all_variables(model: Any, optimizer: Any) -> List[Tuple[str, Any]]:
    if optimizer is None:
        optimizer = getattr(model, "optimizer", None)
    model_vars = _model_variables(model)
    return [("model", v) for v in model_vars] + [("optimizer", v) for v in _optimizer_variables(optimizer, model)]


# ---------------------------------------------------------------- files

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


# ---------------------------------------------------------------- public API

def _rank() -> int:
    return int(_impl.rm().rank())


def save(model: Any, directory: Optional[PathLike] = None, optimizer: Any = None, epoch: int = 0,
         batch: int = 0, step: Optional[int] = None, keep: int = 2) -> Optional[Path]:
    """Writes a checkpoint of ``model`` and ``optimizer`` (default
    ``model.optimizer``) at this position, from rank 0 only: every rank
    holds the same values, so one copy is enough, and the others return at
    once (no collective: calling it on rank 0 alone is fine). ``step``
    defaults to the optimizer's iteration count. Returns the checkpoint's
    path on rank 0, else None (also when no directory is set)."""
    d = checkpoint_directory(directory)
    if d is None or _rank() != 0:
        return None
    if keep < 1:
        raise ValueError(f"keep: must be >= 1, got {keep}")
    variables = _all_variables(model, optimizer)
    if step is None:
        opt = optimizer if optimizer is not None else getattr(model, "optimizer", None)
        it = getattr(opt, "iterations", None)
        step = int(np.asarray(it.numpy() if hasattr(it, "numpy") else it)) if it is not None else 0
    return _write(d, Position(int(epoch), int(batch), int(step)), variables, keep)


def _load_on_root(d: Optional[Path], variables: List[Tuple[str, Any]]) -> Dict[str, Any]:
    """Rank 0: the newest readable checkpoint's header, its values assigned
    to ``variables``; or {"error": ...}; or {} when there is none."""
    if d is None:
        return {}
    damaged = []
    for path in _checkpoints(d):
        try:
            meta, arrays = _read(path)
        except (OSError, ValueError, KeyError) as e:
            damaged.append(f"{path}: {e}")
            warnings.warn(f"ringmaster checkpoint: skipping {path}: {e}", stacklevel=3)
            continue
        why = _mismatch(path, meta, variables)
        if why:
            return {"error": why}
        for (_, v), value in zip(variables, arrays):
            v.assign(value)
        return {"path": str(path), "position": [meta["epoch"], meta["batch"], meta["step"]]}
    if damaged:
        return {"error": "no readable checkpoint in " + str(d) + ": " + "; ".join(damaged)}
    return {}


def restore(model: Any, directory: Optional[PathLike] = None, optimizer: Any = None,
            root_rank: int = 0) -> Optional[Position]:
    """Makes every rank start from the newest checkpoint: call it on every
    rank after ``init()`` and ``compile()``, before the first step.

    Rank 0 (``root_rank``) reads the checkpoint in ``directory`` (default
    ``$RINGMASTER_CHECKPOINT_DIR``) into ``model`` and ``optimizer`` (default
    ``model.optimizer``, built first if needed), then every variable is
    broadcast from it, so the ranks hold bit-identical state whether or not
    a checkpoint was found (the path need only exist on rank 0). Returns the
    checkpoint's Position, or None when there is none (start at 0).

    A checkpoint that does not fit the model (another shape, dtype or number
    of variables) raises ``ringmaster.InvalidArgumentError`` naming the
    variable, on every rank; a damaged newest checkpoint is skipped with a
    warning for the one before it."""
    rm = _impl.rm()
    variables = _all_variables(model, optimizer)
    root = int(rm.rank()) == root_rank
    header: Dict[str, Any] = {}
    if root:
        try:
            header = _load_on_root(checkpoint_directory(directory), variables)
        except Exception as e:  # the other ranks wait in the broadcast: tell them
            header = {"error": f"checkpoint: {type(e).__name__}: {e}"}
    header = rm.broadcast_object(header, root_rank=root_rank, name="ringmaster_checkpoint_header")
    if "error" in header:
        from ringmaster import InvalidArgumentError
        raise InvalidArgumentError(header["error"])
    rm.broadcast_variables([tf_variable(v) for _, v in variables], root_rank=root_rank)
    if "position" not in header:
        return None
    return Position(*header["position"])


# ---------------------------------------------------------------- the callback

_said_no_directory = False


class CheckpointMixin(CompatMixin):
    """The behaviour of CheckpointCallback: rank 0 writes a checkpoint at
    each epoch's end (and every ``every_n_batches`` batches within one);
    every other rank does nothing, so it costs them no collective."""

    def _rm_setup(self, directory: Optional[PathLike], every_n_batches: Optional[int], keep: int) -> None:
        self._rm_init()
        if every_n_batches is not None and every_n_batches < 1:
            raise ValueError(f"every_n_batches: must be >= 1 or None, got {every_n_batches}")
        if keep < 1:
            raise ValueError(f"keep: must be >= 1, got {keep}")
        self.directory = directory
        self.every_n_batches = every_n_batches
        self.keep = keep
        self._epoch = 0
        self._dir: Optional[Path] = None
        self.last_saved: Optional[Path] = None

    def _implements_train_batch_hooks(self) -> bool:
        return self.every_n_batches is not None

    def on_train_begin(self, logs: Optional[Dict[str, Any]] = None) -> None:
        global _said_no_directory
        self._dir = checkpoint_directory(self.directory)
        if self._dir is None and not _said_no_directory and _rank() == 0:
            _said_no_directory = True
            warnings.warn(f"ringmaster CheckpointCallback: no directory (neither directory= nor ${ENV_DIR}): "
                          "no checkpoints are written", stacklevel=2)

    def on_epoch_begin(self, epoch: int, logs: Optional[Dict[str, Any]] = None) -> None:
        self._epoch = epoch

    def _save(self, epoch: int, batch: int) -> None:
        if self._dir is None or _rank() != 0:
            return
        self.last_saved = save(self._fit_model, self._dir, epoch=epoch, batch=batch, keep=self.keep)

    def on_train_batch_end(self, batch: int, logs: Optional[Dict[str, Any]] = None) -> None:
        n = self.every_n_batches
        if n is None or (batch + 1) % n:
            return
        steps = (getattr(self, "params", None) or {}).get("steps")
        if steps is not None and batch + 1 >= steps:
            return  # the epoch's end writes this one
        self._save(self._epoch, batch + 1)

    def on_batch_end(self, batch: int, logs: Optional[Dict[str, Any]] = None) -> None:
        self.on_train_batch_end(batch, logs)

    def on_epoch_end(self, epoch: int, logs: Optional[Dict[str, Any]] = None) -> None:
        self._save(epoch + 1, 0)
