"""``horovod.tensorflow.keras.callbacks`` over Ringmaster.

The callbacks subclass ``tf.keras.callbacks.Callback`` (Keras 3, or tf_keras
under TF_USE_LEGACY_KERAS=1) and work in either family's ``model.fit``."""
from __future__ import annotations

from typing import Any, Optional

import tensorflow as tf

from . import _callbacks_impl as _cb
from .checkpoint import CheckpointMixin, PathLike

_keras = tf.keras

__all__ = ["BroadcastGlobalVariablesCallback", "MetricAverageCallback", "LearningRateScheduleCallback",
           "LearningRateWarmupCallback", "BestModelCheckpoint", "CheckpointCallback"]


class BroadcastGlobalVariablesCallback(_cb.BroadcastGlobalVariablesMixin, _keras.callbacks.Callback):
    """Broadcasts root_rank's model variables to every rank when training
    begins, and the model's and optimizer's after the first batch, so all
    ranks start alike (random initialisation or a checkpoint restored on
    one rank). ``local_variables``: variables that keep each rank's value."""

    def __init__(self, root_rank: int, device: str = '', local_variables: Any = None) -> None:
        super().__init__()
        self._rm_setup(root_rank, device, local_variables)


class MetricAverageCallback(_cb.MetricAverageMixin, _keras.callbacks.Callback):
    """Averages the epoch's metrics over the ranks at the end of each epoch.
    Add it before ReduceLROnPlateau, TensorBoard and other callbacks that
    read the metrics."""

    def __init__(self, device: str = '') -> None:
        super().__init__()
        self._rm_setup(device)


class LearningRateScheduleCallback(_cb.LearningRateScheduleMixin, _keras.callbacks.Callback):
    """Learning rate ``initial_lr * multiplier(epoch)`` between start_epoch
    and end_epoch (exclusive); ``multiplier`` is a constant (exponential:
    ``multiplier ** (epoch - start_epoch)``) or ``f(epoch)``. staircase: at
    the start of each epoch with an integer epoch; otherwise at every batch
    with ``epoch + batch / steps_per_epoch`` (steps_per_epoch autodetected
    from fit's parameters when not given)."""

    def __init__(self, initial_lr: Any, multiplier: Any, start_epoch: int = 0, end_epoch: Optional[int] = None,
                 staircase: bool = True, momentum_correction: bool = True,
                 steps_per_epoch: Optional[int] = None) -> None:
        super().__init__()
        self._rm_setup(initial_lr, multiplier, start_epoch, end_epoch, staircase, momentum_correction,
                       steps_per_epoch)


class LearningRateWarmupCallback(_cb.LearningRateWarmupMixin, _keras.callbacks.Callback):
    """Gradual warmup: ``initial_lr / size()`` at the start to ``initial_lr``
    after ``warmup_epochs`` epochs, adjusted at every batch (Goyal et al.,
    "Accurate, Large Minibatch SGD", 2017)."""

    def __init__(self, initial_lr: Any, warmup_epochs: int = 5, momentum_correction: bool = True,
                 steps_per_epoch: Optional[int] = None, verbose: int = 0) -> None:
        super().__init__()
        self._rm_setup_warmup(initial_lr, warmup_epochs, momentum_correction, steps_per_epoch, verbose)


class BestModelCheckpoint(_keras.callbacks.ModelCheckpoint):
    """ModelCheckpoint that keeps only the best model (save_best_only=True);
    its ``filepath`` is set by the caller before training."""

    def __init__(self, monitor: str = 'val_loss', verbose: int = 0, save_weights_only: bool = False,
                 mode: str = 'auto', save_freq: Any = 'epoch') -> None:
        _cb.best_checkpoint_init(self, _keras.callbacks.ModelCheckpoint, monitor, verbose, save_weights_only,
                                 mode, save_freq)


class CheckpointCallback(CheckpointMixin, _keras.callbacks.Callback):
    """Writes a checkpoint (weights, optimizer state, epoch and step) from
    rank 0 at the end of each epoch, and every ``every_n_batches`` batches
    if given, so a whole-job restart resumes there instead of at step 0
    (with ``ringmaster.tensorflow.keras.checkpoint.restore`` before fit).
    ``directory``: default ``$RINGMASTER_CHECKPOINT_DIR``; with neither it
    does nothing (and says so once). ``keep``: how many checkpoints stay.
    Each is written atomically: a crash leaves the previous one as the
    latest."""

    def __init__(self, directory: Optional[PathLike] = None, every_n_batches: Optional[int] = None,
                 keep: int = 2) -> None:
        super().__init__()
        self._rm_setup(directory, every_n_batches, keep)
