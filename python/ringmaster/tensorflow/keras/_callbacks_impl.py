"""The behaviour of the Horovod-named Keras callbacks, as mixins over a Keras
``Callback`` class (Keras 3's or tf_keras's). Each works in Keras 3's and in
tf_keras's ``model.fit`` whichever base it has: it keeps the model it is
given and answers the hooks tf_keras's CallbackList asks for."""
from __future__ import annotations

import warnings
from typing import Any, Callable, Dict, List, Optional

import numpy as np
import tensorflow as tf

from ..gradient_aggregation import variable_key
from . import _impl


class CompatMixin:
    """Works under either family's fit loop."""

    _supports_tf_logs = False  # tf_keras: give numpy logs

    def _rm_init(self) -> None:
        self._rm_model = None

    def set_model(self, model: Any) -> None:
        self._rm_model = model
        try:
            super().set_model(model)  # type: ignore[misc]
        except Exception:  # one family's Callback given the other's model
            try:
                self.__dict__["model"] = model
            except Exception:
                pass

    @property
    def _fit_model(self) -> Any:
        return self._rm_model if self._rm_model is not None else getattr(self, "model", None)

    def _implements_train_batch_hooks(self) -> bool:
        return True

    def _implements_test_batch_hooks(self) -> bool:
        return False

    def _implements_predict_batch_hooks(self) -> bool:
        return False


def is_variable(v: Any) -> bool:
    if isinstance(v, tf.Variable):
        return True
    try:
        import keras
        return isinstance(v, keras.Variable)
    except Exception:
        return False


def tf_variable(v: Any) -> Any:
    """The tf.Variable behind a Keras 3 variable (itself otherwise)."""
    inner = getattr(v, "_value", None)
    return inner if isinstance(inner, tf.Variable) else v


def _variables(obj: Any) -> List[Any]:
    if obj is None:
        return []
    v = getattr(obj, "variables", [])
    return list(v() if callable(v) else v)


def without_xla(model: Any) -> None:
    """Keras 3 compiles the train step with XLA by itself when a GPU is
    visible (jit_compile="auto"); the collectives have no XLA kernel. fit()
    gives the callbacks the model before it builds its train function, so the
    step is built without XLA here (with a warning) instead of failing."""
    if getattr(model, "train_function", "absent") is not None:
        return  # not Keras 3, or the train function already exists
    if not getattr(type(getattr(model, "optimizer", None)), "_ringmaster_distributed", False):
        return
    try:
        jit = bool(model.jit_compile)
    except Exception:
        return
    if jit:
        warnings.warn("ringmaster: the Ringmaster collectives have no XLA kernel: training this model with "
                      "jit_compile=False (compile it so to silence this warning)", stacklevel=3)
        model.jit_compile = False


class BroadcastGlobalVariablesMixin(CompatMixin):
    """Every rank starts from root_rank's state: the model's variables are
    broadcast when training begins, and the model's and the optimizer's
    after the first batch (when the optimizer has made its slots).
    Variables given in ``local_variables`` (or register_local_var) keep
    each rank's own value."""

    def _rm_setup(self, root_rank: int, device: str, local_variables: Any) -> None:
        self._rm_init()
        self.root_rank = root_rank
        self.device = device
        self.broadcast_done = False
        self._local_vars: set = set()
        if local_variables is None:
            local_variables = []
        elif is_variable(local_variables):
            local_variables = [local_variables]
        elif not all(is_variable(v) for v in local_variables):
            raise ValueError("All local variables must be of tf.Variable type.")
        for v in local_variables:
            self.register_local_var(v)

    def register_local_var(self, var: Any) -> None:
        """This variable is not broadcast."""
        self._local_vars.add(variable_key(var))

    def _shared(self, variables: List[Any]) -> List[Any]:
        return [v for v in variables if variable_key(v) not in self._local_vars]

    def set_model(self, model: Any) -> None:
        super().set_model(model)
        without_xla(model)

    def _broadcast(self, variables: List[Any]) -> None:
        rm = _impl.rm()
        with tf.device(self.device):
            rm.broadcast_variables([tf_variable(v) for v in self._shared(variables)], root_rank=self.root_rank)

    def on_train_begin(self, logs: Optional[Dict[str, Any]] = None) -> None:
        # A model without an input shape has no weights until its first
        # batch (tf_keras raises on .variables): the broadcast after that
        # batch covers it. Every rank builds the same model, so every rank
        # skips the same broadcast.
        if getattr(self._fit_model, "built", True):
            self._broadcast(_variables(self._fit_model))

    def on_train_batch_end(self, batch: int, logs: Optional[Dict[str, Any]] = None) -> None:
        if self.broadcast_done:
            return
        model = self._fit_model
        self._broadcast(_variables(model) + _variables(getattr(model, "optimizer", None)))
        self.broadcast_done = True

    def on_batch_end(self, batch: int, logs: Optional[Dict[str, Any]] = None) -> None:
        self.on_train_batch_end(batch, logs)


def _numeric_scalar(v: Any) -> bool:
    if np.ndim(v) != 0:
        return False
    try:
        float(v)
        return True
    except (TypeError, ValueError):
        return False


class MetricAverageMixin(CompatMixin):
    """At the end of each epoch, replaces each numeric value in the logs by
    its average over the ranks (one collective for all of them). Put it
    before the callbacks that read the logs (ReduceLROnPlateau, TensorBoard,
    ...); Keras's History comes after it."""

    def _rm_setup(self, device: str) -> None:
        self._rm_init()
        self.device = device

    def _implements_train_batch_hooks(self) -> bool:
        return False

    def _average_metrics_in_place(self, logs: Optional[Dict[str, Any]]) -> None:
        if not logs:
            return
        keys = sorted(k for k, v in logs.items() if _numeric_scalar(v))
        if not keys:
            return
        values = [tf.constant(float(logs[k]), dtype=tf.float64) for k in keys]
        with tf.device(self.device):
            averaged = _impl.grouped_allreduce(values, op=_impl.op_average())
        for k, v in zip(keys, averaged):
            logs[k] = float(np.asarray(v))

    def on_epoch_end(self, epoch: int, logs: Optional[Dict[str, Any]] = None) -> None:
        self._average_metrics_in_place(logs)


def _value(x: Any) -> float:
    if hasattr(x, "numpy"):
        return float(np.asarray(x.numpy()))
    return float(np.asarray(x))


def get_lr(optimizer: Any) -> float:
    lr = getattr(optimizer, "learning_rate", None)
    if lr is None:
        lr = optimizer.lr
    return _value(lr)


def set_lr(optimizer: Any, value: float) -> None:
    optimizer.learning_rate = float(value)


def _momentum_variable(optimizer: Any) -> Optional[Callable[..., Any]]:
    """(get, set) for a momentum the step reads at run time: a tf_keras legacy
    hyperparameter or a variable. A plain float (Keras 3, tf_keras's new
    optimizers) is baked into the traced step: it is left alone."""
    hyper = getattr(optimizer, "_hyper", None)
    if isinstance(hyper, dict) and "momentum" in hyper:
        return (lambda: _value(optimizer._get_hyper("momentum")),
                lambda v: optimizer._set_hyper("momentum", float(v)))
    m = getattr(optimizer, "momentum", None)
    if m is not None and hasattr(m, "assign"):
        return (lambda: _value(m), lambda v: m.assign(float(v)))
    return None


class LearningRateScheduleMixin(CompatMixin):
    """Sets the learning rate to ``initial_lr * multiplier(epoch)`` for the
    epochs in [start_epoch, end_epoch): at the first batch of each epoch with
    ``staircase``, otherwise at every batch with the fractional epoch
    ``epoch + batch / steps_per_epoch``. A constant multiplier m means
    ``m ** (epoch - start_epoch)``. ``momentum_correction`` scales a
    run-time momentum by new_lr / old_lr for the batch where the rate
    changes (Goyal et al., 2017)."""

    def _rm_setup(self, initial_lr: Any, multiplier: Any, start_epoch: int = 0, end_epoch: Optional[int] = None,
                  staircase: bool = True, momentum_correction: bool = True,
                  steps_per_epoch: Optional[int] = None) -> None:
        self._rm_init()
        self.start_epoch = start_epoch
        self.end_epoch = end_epoch
        self.staircase = staircase
        self.momentum_correction = momentum_correction
        self.initial_lr = initial_lr
        self.restore_momentum = None
        self.steps_per_epoch = steps_per_epoch
        self.current_epoch = None
        if callable(multiplier):
            self.multiplier = multiplier
        else:
            self.multiplier = lambda epoch: multiplier ** (epoch - start_epoch)
        if self.initial_lr is None:
            raise ValueError("Parameter `initial_lr` is required")

    def _autodetect_steps_per_epoch(self) -> int:
        params = getattr(self, "params", None) or {}
        if params.get("steps"):
            return params["steps"]
        if params.get("samples") and params.get("batch_size"):
            return params["samples"] // params["batch_size"]
        raise ValueError("Could not autodetect the number of steps per epoch. Please specify the "
                         f"steps_per_epoch parameter to the {type(self).__name__}().")

    def _adjust_learning_rate(self, epoch: float) -> None:
        optimizer = self._fit_model.optimizer
        old_lr = get_lr(optimizer)
        new_lr = self.initial_lr * self.multiplier(epoch)
        set_lr(optimizer, new_lr)
        momentum = _momentum_variable(optimizer) if self.momentum_correction else None
        if momentum is not None and old_lr:
            get, put = momentum
            self.restore_momentum = get()
            put(self.restore_momentum * new_lr / old_lr)

    def _restore_momentum_if_needed(self) -> None:
        if self.restore_momentum:
            momentum = _momentum_variable(self._fit_model.optimizer)
            if momentum is not None:
                momentum[1](self.restore_momentum)
            self.restore_momentum = None

    def on_train_begin(self, logs: Optional[Dict[str, Any]] = None) -> None:
        if self.initial_lr is None:
            self.initial_lr = get_lr(self._fit_model.optimizer)
        if not self.staircase and not self.steps_per_epoch:
            self.steps_per_epoch = self._autodetect_steps_per_epoch()

    def on_epoch_begin(self, epoch: int, logs: Optional[Dict[str, Any]] = None) -> None:
        self.current_epoch = epoch

    def on_train_batch_begin(self, batch: int, logs: Optional[Dict[str, Any]] = None) -> None:
        if (self.current_epoch < self.start_epoch
                or (self.end_epoch is not None and self.current_epoch >= self.end_epoch)):
            return
        if self.staircase and batch == 0:
            self._adjust_learning_rate(self.current_epoch)
        elif not self.staircase:
            self._adjust_learning_rate(self.current_epoch + float(batch) / self.steps_per_epoch)

    def on_train_batch_end(self, batch: int, logs: Optional[Dict[str, Any]] = None) -> None:
        self._restore_momentum_if_needed()

    def on_batch_begin(self, batch: int, logs: Optional[Dict[str, Any]] = None) -> None:
        self.on_train_batch_begin(batch, logs)

    def on_batch_end(self, batch: int, logs: Optional[Dict[str, Any]] = None) -> None:
        self.on_train_batch_end(batch, logs)

    def on_epoch_end(self, epoch: int, logs: Optional[Dict[str, Any]] = None) -> None:
        if logs is not None:
            logs["lr"] = get_lr(self._fit_model.optimizer)


class LearningRateWarmupMixin(LearningRateScheduleMixin):
    """Gradual warmup from ``initial_lr / size`` to ``initial_lr`` over
    ``warmup_epochs``, adjusted at every batch (Goyal et al., 2017)::

        lr(epoch) = initial_lr / size * (epoch * (size - 1) / warmup_epochs + 1)

    where epoch counts fractional epochs, shifted by one batch so that the
    end of each epoch is a round number."""

    def _rm_setup_warmup(self, initial_lr: Any, warmup_epochs: int = 5, momentum_correction: bool = True,
                         steps_per_epoch: Optional[int] = None, verbose: int = 0) -> None:
        def multiplier(epoch: float) -> float:
            n = _impl.rm().size()
            epoch += 1.0 / self.steps_per_epoch
            return 1.0 / n * (epoch * (n - 1) / warmup_epochs + 1)

        LearningRateScheduleMixin._rm_setup(self, initial_lr, multiplier, start_epoch=0, end_epoch=warmup_epochs,
                                            staircase=False, momentum_correction=momentum_correction,
                                            steps_per_epoch=steps_per_epoch)
        self.verbose = verbose

    def on_epoch_end(self, epoch: int, logs: Optional[Dict[str, Any]] = None) -> None:
        super().on_epoch_end(epoch, logs)
        if epoch == self.end_epoch - 1 and self.verbose > 0 and _impl.rm().rank() == 0:
            print("\nEpoch %d: finished gradual learning rate warmup to %g." %
                  (epoch + 1, get_lr(self._fit_model.optimizer)))


def best_checkpoint_init(self: Any, base: type, monitor: str, verbose: int, save_weights_only: bool, mode: str,
                         save_freq: Any) -> None:
    """ModelCheckpoint(save_best_only=True) without a file path yet (the
    caller sets ``.filepath`` before training). Keras 3 checks the path's
    suffix at construction, so a placeholder is given and then cleared."""
    placeholder = "best.weights.h5" if save_weights_only else "best.keras"
    try:
        base.__init__(self, filepath=None, monitor=monitor, verbose=verbose, save_best_only=True,
                      save_weights_only=save_weights_only, mode=mode, save_freq=save_freq)
    except (AttributeError, TypeError, ValueError):
        base.__init__(self, filepath=placeholder, monitor=monitor, verbose=verbose, save_best_only=True,
                      save_weights_only=save_weights_only, mode=mode, save_freq=save_freq)
        self.filepath = None
