"""Horovod's Keras elastic names (``horovod.tensorflow.keras.elastic``): the
state of a Keras model and the callbacks that keep it current in ``fit``.

``run`` keeps the process through a member's failure and calls the
function again from the last commit (``ringmaster.tensorflow.elastic``).
With ``model.fit`` the function is called again, so the resumed ``fit``
must start where the commit was: ``initial_epoch``/``epochs`` from
``state.epoch``, and the data from batch ``state.batch`` of that epoch.
``state.batch`` counts the batches finished in the current epoch (Horovod
stores the last one's index, one less, and counts from 0 again after a
reset). Keras 3 runs the number of steps ``fit`` was given: pass
``steps_per_epoch=steps - state.batch`` for a resumed epoch (tf_keras
takes the shortened ``params["steps"]`` that ``UpdateBatchStateCallback``
sets, as in Horovod).
"""
from __future__ import annotations

from typing import Any, Dict, Optional

import tensorflow as tf

from ..elastic import TensorFlowKerasState, run  # noqa: F401  (Horovod's names)

__all__ = ["KerasState", "CommitStateCallback", "UpdateBatchStateCallback", "UpdateEpochStateCallback", "run"]

Logs = Optional[Dict[str, Any]]


class KerasState(TensorFlowKerasState):
    """A Keras model and its optimizer, plus attributes (``epoch``, ``batch``...)."""

    def __init__(self, model: Any, optimizer: Any = None, **kwargs: Any) -> None:
        super().__init__(model, optimizer=optimizer, **kwargs)


class CommitStateCallback(tf.keras.callbacks.Callback):
    """Commits the state every ``batches_per_commit`` batches and at each
    epoch's end.

    A commit falls due at a batch's (or epoch's) end and is made when the
    next batch or epoch begins, or when training ends: by then every
    callback has updated ``state.batch`` and ``state.epoch`` whatever their
    order in the list (Horovod's order commits before they move, so its
    commit's position lags its weights by a batch). Nothing collective runs
    in between, so a failure loses no more."""

    def __init__(self, state: Any, batches_per_commit: int = 1) -> None:
        super().__init__()
        self.state = state
        self.batches_per_commit = batches_per_commit
        self.batches_remaining = batches_per_commit
        self.due = False

    def _commit_if_due(self) -> None:
        if self.due:
            self.due = False
            self.state.commit()

    def on_train_begin(self, logs: Logs = None) -> None:
        self.batches_remaining = self.batches_per_commit
        self.due = False

    def on_batch_end(self, batch: int, logs: Logs = None) -> None:
        self.batches_remaining -= 1
        if self.batches_remaining == 0:
            self.due = True
            self.batches_remaining = self.batches_per_commit

    def on_train_batch_end(self, batch: int, logs: Logs = None) -> None:
        self.on_batch_end(batch, logs)

    def on_train_batch_begin(self, batch: int, logs: Logs = None) -> None:
        self._commit_if_due()

    def on_epoch_begin(self, epoch: int, logs: Logs = None) -> None:
        self._commit_if_due()

    def on_epoch_end(self, epoch: int, logs: Logs = None) -> None:
        self.due = True

    def on_train_end(self, logs: Logs = None) -> None:
        self._commit_if_due()


class UpdateBatchStateCallback(tf.keras.callbacks.Callback):
    """Keeps ``state.batch`` at the number of batches finished in this
    epoch (0 after an epoch), counting those done before a reset, and
    shortens a resumed epoch by them."""

    def __init__(self, state: Any) -> None:
        super().__init__()
        self.state = state
        self.steps_per_epoch: Optional[int] = None
        self.offset = 0  # batches of this epoch done before this fit began

    def on_train_begin(self, logs: Logs = None) -> None:
        self.steps_per_epoch = None
        self.offset = int(self.state.batch)

    def on_epoch_begin(self, epoch: int, logs: Logs = None) -> None:
        params = getattr(self, "params", None) or {}
        if params.get("steps"):
            if self.steps_per_epoch is None:
                self.steps_per_epoch = params.get("steps")
            params["steps"] = self.steps_per_epoch - self.state.batch

    def on_batch_end(self, batch: int, logs: Logs = None) -> None:
        self.state.batch = self.offset + batch + 1

    def on_train_batch_end(self, batch: int, logs: Logs = None) -> None:
        self.on_batch_end(batch, logs)

    def on_epoch_end(self, epoch: int, logs: Logs = None) -> None:
        self.state.batch = 0
        self.offset = 0


class UpdateEpochStateCallback(tf.keras.callbacks.Callback):
    """Keeps ``state.epoch`` at the number of finished epochs."""

    def __init__(self, state: Any) -> None:
        super().__init__()
        self.state = state
        self.initial_epoch = self.state.epoch

    def on_train_begin(self, logs: Logs = None) -> None:
        self.initial_epoch = self.state.epoch

    def on_epoch_end(self, epoch: int, logs: Logs = None) -> None:
        self.state.epoch = self.initial_epoch + epoch + 1
