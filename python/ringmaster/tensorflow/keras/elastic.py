"""Horovod's Keras elastic names (``horovod.tensorflow.keras.elastic``): the
state of a Keras model and the callbacks that keep it current in ``fit``.

As in ``ringmaster.tensorflow.elastic``: commit, restore and sync work;
recovery in place after a member's failure is not done yet (``run``
re-raises the failure).
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
    """Commits the state every ``batches_per_commit`` batches and at each epoch's end."""

    def __init__(self, state: Any, batches_per_commit: int = 1) -> None:
        super().__init__()
        self.state = state
        self.batches_per_commit = batches_per_commit
        self.batches_remaining = batches_per_commit

    def on_train_begin(self, logs: Logs = None) -> None:
        self.batches_remaining = self.batches_per_commit

    def on_batch_end(self, batch: int, logs: Logs = None) -> None:
        self.batches_remaining -= 1
        if self.batches_remaining == 0:
            self.state.commit()
            self.batches_remaining = self.batches_per_commit

    def on_train_batch_end(self, batch: int, logs: Logs = None) -> None:
        self.on_batch_end(batch, logs)

    def on_epoch_end(self, epoch: int, logs: Logs = None) -> None:
        self.state.commit()


class UpdateBatchStateCallback(tf.keras.callbacks.Callback):
    """Keeps ``state.batch`` at the last finished batch (0 after an epoch),
    and shortens a resumed epoch by the batches already done."""

    def __init__(self, state: Any) -> None:
        super().__init__()
        self.state = state
        self.steps_per_epoch: Optional[int] = None

    def on_train_begin(self, logs: Logs = None) -> None:
        self.steps_per_epoch = None

    def on_epoch_begin(self, epoch: int, logs: Logs = None) -> None:
        params = getattr(self, "params", None) or {}
        if params.get("steps"):
            if self.steps_per_epoch is None:
                self.steps_per_epoch = params.get("steps")
            params["steps"] = self.steps_per_epoch - self.state.batch

    def on_batch_end(self, batch: int, logs: Logs = None) -> None:
        self.state.batch = batch

    def on_train_batch_end(self, batch: int, logs: Logs = None) -> None:
        self.on_batch_end(batch, logs)

    def on_epoch_end(self, epoch: int, logs: Logs = None) -> None:
        self.state.batch = 0


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
