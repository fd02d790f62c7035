"""Horovod's elastic training (``horovod.tensorflow.elastic``): state
objects a training loop commits, restores and syncs, and ``run``, which
keeps a process through another member's failure (recovery in place).

``@run``-decorated ``func(state)``: the state is synced first (every member
takes the state of the member that committed last; at a first start, rank
0's). When a member fails (SIGKILL, OOM, its node gone), the collective in
flight fails on the survivors; ``run`` then restores the last commit, forms
the group again with the failed task's new incarnation (the kubelet, the
operator or ``ringmaster run`` restarts that replica alone, at the same
address), calls the reset callbacks, syncs (the new incarnation takes a
survivor's state by broadcast) and calls ``func(state)`` again. A
re-formation is bounded by the formation timeout
(RINGMASTER_FORMATION_TIMEOUT_SECONDS) and fails naming who did not come
back. Commit every batch (``CommitStateCallback(state)``) and a failure
costs at most the step in flight.

Elastic size (``spec.runPolicy.elastic``: RINGMASTER_MIN_SIZE and
RINGMASTER_REJOIN_TIMEOUT_SECONDS): when the failed member has not come back
within the rejoin bound, the re-formation goes on without it (at least the
minimum there), ranks renumbered in TF_CONFIG order: ``rank()`` and
``size()`` change, and the reset callbacks are where the program re-shards
its data and scales its learning rate. When the member comes back, it waits
to join; every ``commit()`` asks the group (``check_host_updates``, one
small broadcast from rank 0; none without an elastic size) and, when someone waits, raises
``HostsUpdatedInterrupt`` on every member: ``run`` then forms the group with
it *without* restoring (a membership change is not a failure), calls the
reset callbacks and syncs, the newcomer taking the state.

Process sets: after each re-formation, before the state syncs, ``run``
adds every process set again on every member (same ids, same ranks), so the
program's ProcessSet objects go on working; a new incarnation adds the same
sets from its program (``init(process_sets=...)``/``add_process_set`` before
``func`` runs), which is what the survivors' calls meet. A set that names a
rank the shrunk group lacks is held (ProcessSet's docstring).

Not done: ``local_rank()`` and its kin after a formation that left members
out (they read TF_CONFIG's hosts by rank).
"""
from __future__ import annotations

import copy
import functools
from typing import Any, Callable, Dict, List, Optional

import numpy as np
import tensorflow as tf

import ringmaster

from . import process_sets
from ._basics import rank
from .functions import broadcast_object, broadcast_variables


class HorovodInternalError(RuntimeError):
    """Horovod's name for a collective that failed because a member did
    (ours: the group's error, e.g. Unavailable naming the task)."""


class HostsUpdatedInterrupt(RuntimeError):
    """Horovod's interrupt for a membership change: raised by ``commit()``
    on every member when a member waits to join the group (elastic size)."""

    def __init__(self, skip_sync: bool = False) -> None:
        super().__init__("hosts updated")
        self.skip_sync = skip_sync


class State:
    """A training state that can be saved, restored and synced across ranks."""

    def __init__(self, bcast_object: Callable[[Any], Any], get_rank: Callable[[], int]) -> None:
        self._bcast_object = bcast_object
        self._rank = get_rank
        self._reset_callbacks: List[Callable[[], None]] = []
        # Commits so far, the same on every member that trained alike: what
        # this member offers when the group agrees where to resume. None
        # until the first sync: a new incarnation holds no state.
        self._commits: Optional[int] = None

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
        if self._commits is not None:
            self._commits += 1
        self.check_host_updates()

    def sync(self) -> None:
        """Every member takes the state of the member that committed last
        (a survivor, not a new incarnation; at a first start, rank 0)."""
        comm = ringmaster.default_communicator()
        root, step = 0, self._commits or 0
        if comm is not None and comm.size > 1:
            step, root = comm.agree_on_resume(-1 if self._commits is None else self._commits)
        self._sync_from(root)
        # Only now: a member whose sync was cut short (another failure) must
        # not offer a state it did not wholly receive.
        self._commits = max(step, 0)

    def check_host_updates(self) -> None:
        """Raises ``HostsUpdatedInterrupt`` on every member when a member
        waits to join the group; collective (a broadcast from rank 0, only
        with an elastic size)."""
        comm = ringmaster.default_communicator()
        if comm is not None and comm.agree_on_joiners() > 0:
            raise HostsUpdatedInterrupt(skip_sync=False)

    def save(self) -> None:
        raise NotImplementedError

    def restore(self) -> None:
        raise NotImplementedError

    def _sync_from(self, root: int) -> None:
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

    def _sync_from(self, root: int) -> None:
        if self._saved_state:
            # Horovod calls bcast_object(obj): keep that call for rank 0.
            self._saved_state = (self._bcast_object(self._saved_state) if root == 0 else
                                 self._bcast_object(self._saved_state, root_rank=root))
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

    def _sync_from(self, root: int) -> None:
        broadcast_variables(self.variables, root_rank=root)
        self._values = [_value(v) for v in self.variables]
        super()._sync_from(root)


class TensorFlowKerasState(ObjectState):
    """A Keras model (and optimizer) plus attributes."""

    def __init__(self, model: Any, optimizer: Any = None, backend: Any = None, **kwargs: Any) -> None:
        self.model = model
        self.optimizer = optimizer if optimizer is not None else getattr(model, "optimizer", None)
        self._weights = [_value(v) for v in self._variables()]
        super().__init__(bcast_object=broadcast_object, get_rank=rank, **kwargs)

    def _variables(self) -> List[Any]:
        # The optimizer built first: a new incarnation's Keras 3 optimizer
        # has no slots before its first step, the survivors' have.
        from .keras.checkpoint import _optimizer_variables
        return list(self.model.variables) + list(_optimizer_variables(self.optimizer, self.model))

    def save(self) -> None:
        self._weights = [_value(v) for v in self._variables()]
        super().save()

    def restore(self) -> None:
        for var, value in zip(self._variables(), self._weights):
            var.assign(value)
        super().restore()

    def _sync_from(self, root: int) -> None:
        broadcast_variables(self._variables(), root_rank=root)
        self._weights = [_value(v) for v in self._variables()]
        super()._sync_from(root)


def _member_failed(error: BaseException) -> bool:
    """Whether `error` came from the group failing (a member died, a
    collective timed out): the group is no longer usable. Anything else is
    the program's own error and is raised as it is."""
    if isinstance(error, HorovodInternalError):
        return True
    comm = ringmaster.default_communicator()
    if comm is None or not isinstance(error, (tf.errors.OpError, ringmaster.RingmasterError)):
        return False
    try:
        comm.health()
    except ringmaster.RingmasterError:
        return True
    return False


def _reset() -> None:
    """Forms the group again, with the failed member's new incarnation (or
    without a member, or with one that waited: an elastic size)."""
    ringmaster.default_communicator().reform()
    process_sets._drop_sets_of_last_formation()


def run(func: Callable[..., Any]) -> Callable[..., Any]:
    """Decorates ``func(state, ...)``: syncs the state, then runs it; when a
    member fails, restores the last commit, re-forms the group with the
    failed member's new incarnation, calls the reset callbacks, syncs and
    runs ``func`` again (see the module's docstring). A re-formation that
    times out raises its error, naming who did not come back."""
    @functools.wraps(func)
    def wrapper(state: State, *args: Any, **kwargs: Any) -> Any:
        reformed = False
        while True:
            try:
                if reformed:
                    # Collective, like the sync after it: a failure here
                    # starts the recovery over.
                    process_sets._add_sets_again()
                state.sync()
                return func(state, *args, **kwargs)
            except HostsUpdatedInterrupt as e:
                failure: BaseException = e  # a membership change: the state stays as it is
            except Exception as e:  # noqa: BLE001 - only a member's failure is kept
                if not _member_failed(e):
                    raise
                failure = e
                state.restore()
            try:
                _reset()
            except ringmaster.RingmasterError as e:
                raise e from failure
            reformed = True
            state.on_reset()
    return wrapper
