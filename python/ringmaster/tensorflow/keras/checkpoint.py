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

import warnings
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from . import _impl
from ._checkpoint_files import (ENV_DIR, PathLike, Position, _checkpoints, _mismatch, _read, _write,  # noqa: F401
                                checkpoint_directory, latest)
from ._callbacks_impl import CompatMixin, _variables, tf_variable

__all__ = ["ENV_DIR", "Position", "CheckpointMixin", "save", "restore", "latest", "initial_epoch",
           "start_step", "checkpoint_directory"]


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

def _all_variables(model: Any, optimizer: Any) -> List[Tuple[str, Any]]:
    if optimizer is None:
        optimizer = getattr(model, "optimizer", None)
    model_vars = _model_variables(model)
    return [("model", v) for v in model_vars] + [("optimizer", v) for v in _optimizer_variables(optimizer, model)]


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
