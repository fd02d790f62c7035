"""``horovod.keras.callbacks`` over Ringmaster: the callbacks of
``ringmaster.tensorflow.keras.callbacks`` on ``keras.callbacks.Callback``
(they work in Keras 3's and tf_keras's ``model.fit``)."""
from __future__ import annotations

from typing import Any, Optional

import keras

from ringmaster.tensorflow.keras import _callbacks_impl as _cb
from ringmaster.tensorflow.keras.checkpoint import CheckpointMixin, PathLike

__all__ = ["BroadcastGlobalVariablesCallback", "MetricAverageCallback", "LearningRateScheduleCallback",
           "LearningRateWarmupCallback", "BestModelCheckpoint", "CheckpointCallback"]


class BroadcastGlobalVariablesCallback(_cb.BroadcastGlobalVariablesMixin, keras.callbacks.Callback):
    """Broadcasts root_rank's model variables when training begins, and the
    model's and optimizer's after the first batch. ``local_variables``:
    variables that keep each rank's value."""

    def __init__(self, root_rank: int, device: str = '', local_variables: Any = None) -> None:
        super().__init__()
        self._rm_setup(root_rank, device, local_variables)


class MetricAverageCallback(_cb.MetricAverageMixin, keras.callbacks.Callback):
    """Averages the epoch's metrics over the ranks at the end of each epoch."""

    def __init__(self, device: str = '') -> None:
        super().__init__()
        self._rm_setup(device)


class LearningRateScheduleCallback(_cb.LearningRateScheduleMixin, keras.callbacks.Callback):
    """Learning rate ``initial_lr * multiplier(epoch)`` between start_epoch
    and end_epoch (see ringmaster.tensorflow.keras.callbacks)."""

    def __init__(self, initial_lr: Any, multiplier: Any, start_epoch: int = 0, end_epoch: Optional[int] = None,
                 staircase: bool = True, momentum_correction: bool = True,
                 steps_per_epoch: Optional[int] = None) -> None:
        super().__init__()
        self._rm_setup(initial_lr, multiplier, start_epoch, end_epoch, staircase, momentum_correction,
                       steps_per_epoch)


class LearningRateWarmupCallback(_cb.LearningRateWarmupMixin, keras.callbacks.Callback):
    """Gradual warmup from ``initial_lr / size()`` to ``initial_lr`` over
    warmup_epochs."""

    def __init__(self, initial_lr: Any, warmup_epochs: int = 5, momentum_correction: bool = True,
                 steps_per_epoch: Optional[int] = None, verbose: int = 0) -> None:
        super().__init__()
        self._rm_setup_warmup(initial_lr, warmup_epochs, momentum_correction, steps_per_epoch, verbose)


class BestModelCheckpoint(keras.callbacks.ModelCheckpoint):
    """ModelCheckpoint that keeps only the best model; ``filepath`` is set by
    the caller before training."""

    def __init__(self, monitor: str = 'val_loss', verbose: int = 0, mode: str = 'auto',
                 save_freq: Any = 'epoch') -> None:
        _cb.best_checkpoint_init(self, keras.callbacks.ModelCheckpoint, monitor, verbose, False, mode, save_freq)


class CheckpointCallback(CheckpointMixin, keras.callbacks.Callback):
    """Writes a checkpoint from rank 0 at each epoch's end (and every
    ``every_n_batches`` batches) so a whole-job restart resumes there; see
    ringmaster.tensorflow.keras.callbacks.CheckpointCallback."""

    def __init__(self, directory: Optional[PathLike] = None, every_n_batches: Optional[int] = None,
                 keep: int = 2) -> None:
        super().__init__()
        self._rm_setup(directory, every_n_batches, keep)
