"""Horovod's elastic state objects (``horovod.tensorflow.elastic``):
what a training loop commits, restores and syncs.

What works: ``ObjectState``, ``TensorFlowState`` and ``TensorFlowKerasState``
keep a committed copy of their variables and attributes in memory;
``restore()`` returns to it, ``sync()`` makes every rank take rank 0's
values, ``commit()`` saves. ``run(func)`` syncs the state and calls
``func(state)``.

Not done yet: recovery in place. When a member fails, Ringmaster's group
aborts and names the culprit; re-forming the group with the failed member's
new incarnation and resuming from the last commit is planned (the engine's
re-formation work), so ``run`` re-raises the failure today instead of
resetting. No host-update notifications exist either: ``check_host_updates``
never interrupts.
"""
from __future__ import annotations

import copy
import functools
from typing import Any, Callable, Dict, List, Optional

import numpy as np
import tensorflow as tf

from ._basics import rank
from .functions import broadcast_object, broadcast_variables


class State:
    """A training state that can be saved, restored and synced across ranks."""

    def __init__(self, bcast_object: Callable[[Any], Any], get_rank: Callable[[], int]) -> None:
        self._bcast_object = bcast_object
        self._rank = get_rank
        self._reset_callbacks: List[Callable[[], None]] = []

    def register_reset_callbacks(self, callbacks: List[Callable[[], None]]) -> None:
        """Called after the group changes (e.g. to rescale the learning rate)."""
        self._reset_callbacks.extend(callbacks)

    def on_reset(self) -> None:
        self.reset()
        for callback in self._reset_callbacks:
            callback()

    def on_hosts_updated(self, timestamp: float, update_res: Any) -> None:
        pass  # Ringmaster sends no host updates (see the module's docstring)

    def commit(self) -> None:
        """Saves the state (in memory) and checks for host updates."""
        self.save()
        self.check_host_updates()

    def check_host_updates(self) -> None:
        pass

    def save(self) -> None:
        raise NotImplementedError

    def restore(self) -> None:
        raise NotImplementedError

    def sync(self) -> None:
        raise NotImplementedError

    def reset(self) -> None:
        pass


class ObjectState(State):
    """Plain Python attributes (``ObjectState(bcast_object, get_rank, epoch=0, batch=0)``)."""

    def __init__(self, bcast_object: Callable[[Any], Any], get_rank: Callable[[], int], **kwargs: Any) -> None:
        self._saved_state: Dict[str, Any] = kwargs
        self._set_attrs()
        super().__init__(bcast_object=bcast_object, get_rank=get_rank)

    def save(self) -> None:
        self._saved_state = {k: copy.deepcopy(getattr(self, k)) for k in self._saved_state}

    def restore(self) -> None:
        self._set_attrs()

    def sync(self) -> None:
        if self._saved_state:
            self._saved_state = self._bcast_object(self._saved_state)
            self._set_attrs()

    def _set_attrs(self) -> None:
        for k, v in self._saved_state.items():
            setattr(self, k, copy.deepcopy(v))


def _value(var: Any) -> np.ndarray:
    return np.array(var.numpy() if hasattr(var, "numpy") else tf.keras.backend.get_value(var))


class TensorFlowState(ObjectState):
    """Variables (default: the global ones) plus attributes."""

    def __init__(self, variables: Optional[List[Any]] = None, session: Any = None, **kwargs: Any) -> None:
        if session is not None or not tf.executing_eagerly():
            raise NotImplementedError("TensorFlowState: TensorFlow 1 sessions are not supported; run eagerly")
        self.variables = list(variables) if variables is not None else tf.compat.v1.global_variables()
        self._values = [_value(v) for v in self.variables]
        super().__init__(bcast_object=broadcast_object, get_rank=rank, **kwargs)

    def save(self) -> None:
        self._values = [_value(v) for v in self.variables]
        super().save()

    def restore(self) -> None:
        for var, value in zip(self.variables, self._values):
            var.assign(value)
        super().restore()

    def sync(self) -> None:
        broadcast_variables(self.variables, root_rank=0)
        self._values = [_value(v) for v in self.variables]
        super().sync()


class TensorFlowKerasState(ObjectState):
    """A Keras model (and optimizer) plus attributes."""

    def __init__(self, model: Any, optimizer: Any = None, backend: Any = None, **kwargs: Any) -> None:
        self.model = model
        self.optimizer = optimizer if optimizer is not None else getattr(model, "optimizer", None)
        self._weights = [_value(v) for v in self._variables()]
        super().__init__(bcast_object=broadcast_object, get_rank=rank, **kwargs)

    def _variables(self) -> List[Any]:
        out = list(self.model.variables)
        if self.optimizer is not None:
            opt_vars = self.optimizer.variables
            out += list(opt_vars() if callable(opt_vars) else opt_vars)
        return out

    def save(self) -> None:
        self._weights = [_value(v) for v in self._variables()]
        super().save()

    def restore(self) -> None:
        for var, value in zip(self._variables(), self._weights):
            var.assign(value)
        super().restore()

    def sync(self) -> None:
        broadcast_variables(self._variables(), root_rank=0)
        self._weights = [_value(v) for v in self._variables()]
        super().sync()


def run(func: Callable[..., Any]) -> Callable[..., Any]:
    """Decorates ``func(state, ...)``: syncs the state from rank 0, then
    runs it. A member's failure is re-raised (recovery in place is not done
    yet; see the module's docstring)."""
    @functools.wraps(func)
    def wrapper(state: State, *args: Any, **kwargs: Any) -> Any:
        state.sync()
        return func(state, *args, **kwargs)
    return wrapper
