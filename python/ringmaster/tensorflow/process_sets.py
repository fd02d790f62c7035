"""Process sets, with Horovod's names (``horovod.common.process_sets``):
ProcessSet, the global set, add_process_set and remove_process_set, and the
registry of the sets added (by id, the same on every rank), held while the
group lacks their ranks and added again after a formation (elastic.run).
No TensorFlow op here (see mpi_ops)."""
from __future__ import annotations

import json
import os
from typing import Any, Dict, List, Optional, Sequence, Set, Tuple

from ._basics import _comm, rank, size


class ProcessSet:
    """A subset of the ranks that collectives can be limited to (Horovod's).

    Pass it to init(process_sets=...) or add_process_set(); every rank adds
    the same sets in the same order (checked by the engine: a disagreement
    fails on every rank). A set's collectives run among its members only,
    over the group's connections, with sequence numbers of their own; ranks
    outside it get InvalidArgumentError if they call them. ``root_rank``
    arguments stay global ranks, as in Horovod.

    Recovery in place (``elastic.run``): after the group forms again the
    library adds every set again on every member, with its ranks and id, so
    the same ProcessSet objects go on working. A set that names a rank the
    group does not have now (it shrank: an elastic size) is held: its
    ``size()`` is None and its collectives raise ValueError until a later
    formation has the rank again.
    """

    def __init__(self, ranks_or_comm: Any = None) -> None:
        if ranks_or_comm is not None and not hasattr(ranks_or_comm, "__iter__"):
            raise ValueError("ProcessSet should be initialized with a list of process ranks (Ringmaster has no "
                             "MPI communicators)")
        ranks = None if ranks_or_comm is None else sorted(ranks_or_comm)
        if ranks is not None and any(not isinstance(r, int) or isinstance(r, bool) for r in ranks):
            raise ValueError("ProcessSet should be initialized with a list of process ranks")
        self.ranks: Optional[List[int]] = ranks
        self.process_set_id: Optional[int] = None
        self.mpi_comm = None

    def _bind(self, ranks: List[int]) -> None:
        self.ranks = ranks
        self.process_set_id = 0

    def _invalidate(self) -> None:
        self.process_set_id = None

    def is_global(self) -> bool:
        return self.process_set_id == 0 or self is global_process_set

    def size(self) -> Optional[int]:
        """The number of ranks in the set; None until it is added (and while
        it is held: the group shrank below its ranks)."""
        if self.is_global():
            return size()
        if self.process_set_id is None or self.process_set_id not in _sets or self.process_set_id in _held:
            return None
        return len(_sets[self.process_set_id][0])

    def rank(self) -> Optional[int]:
        """This process's rank within the set (-1 outside it); None until it
        is added (and while it is held)."""
        if self.is_global():
            return rank()
        if self.process_set_id is None or self.process_set_id not in _sets or self.process_set_id in _held:
            return None
        ranks = _sets[self.process_set_id][0]
        r = rank()
        return ranks.index(r) if r in ranks else -1

    def included(self) -> Optional[bool]:
        """Whether this process is one of the set's ranks (False while the
        set is held: the group shrank below its ranks)."""
        if self.is_global():
            return True
        if self.process_set_id is not None and self.process_set_id in _held:
            return False
        return None if self.ranks is None else rank() in self.ranks

    def __str__(self) -> str:
        return f"ProcessSet(process_set_id={self.process_set_id}, ranks={self.ranks}, mpi_comm=None)"

    __repr__ = __str__


global_process_set = ProcessSet()
global_process_set.process_set_id = 0

# The sets added: id -> (ranks, the set's Communicator on its members, None
# elsewhere). Every rank holds every set, so ids are the same everywhere.
_sets: Dict[int, Tuple[List[int], Any]] = {}
# Ids of sets with a rank that the group formed now lacks (an elastic size
# left members out): they keep their ids, so every member (and a process
# that joins later) numbers the sets alike, and are added again by the
# formation that has their ranks (_add_sets_again).
_held: Set[int] = set()


def _job_size() -> int:
    """The members TF_CONFIG names (chief and workers): the most the group
    has, whatever size() is after a formation that left some out."""
    try:
        cluster = json.loads(os.environ.get("TF_CONFIG") or "{}").get("cluster", {})
        named = sum(len(cluster.get(t) or ()) for t in ("chief", "master", "worker"))
    except (ValueError, AttributeError, TypeError):
        named = 0
    return max(named, size())


def _id_of_ranks(ranks: List[int]) -> Optional[int]:
    # The whole job's ranks, not this formation's: after a formation that
    # left members out, a set of the ranks left is still a set of its own on
    # every member (the survivors added it when the group was whole).
    if ranks == list(range(_job_size())):
        return 0
    for sid, (known, _) in _sets.items():
        if known == ranks:
            return sid
    return None


def _add(ps: "ProcessSet") -> "ProcessSet":
    assert ps.ranks is not None
    sid = 1
    while sid in _sets:  # the lowest free id, as Horovod reuses them
        sid += 1
    if ps.ranks and size() <= ps.ranks[-1] < _job_size():
        # The job has the rank but this formation does not (a process that
        # joins a group that shrank adds what the others hold): held alike
        # on every member, no collective.
        _sets[sid] = (list(ps.ranks), None)
        _held.add(sid)
    else:
        comm = _comm().add_process_set(ps.ranks, sid)  # collective: every rank, same ranks
        _sets[sid] = (list(ps.ranks), comm)
    ps.process_set_id = sid
    return ps


def _drop_sets_of_last_formation() -> None:
    """After the group formed again, before anything else: the last
    formation's sets are void in the engine (their ranks and wire keys were
    its own); closes them, binds the global set to the new size and holds
    the sets with a rank this formation lacks. Local (no collective): the
    reset callbacks see the sets as they will be."""
    n = size()
    global_process_set._bind(list(range(n)))
    for sid, (ranks, old) in list(_sets.items()):
        if old is not None:
            old.close()
        _sets[sid] = (ranks, None)
    _held.clear()
    _held.update(sid for sid, (ranks, _) in _sets.items() if ranks[-1] >= n)


def _add_sets_again() -> None:
    """Then, on every member at the same point (elastic.run, before the
    sync): every set not held is added again, in id order, with its id and
    ranks. A new incarnation has just added the same sets from its program
    (init(process_sets=...), add_process_set): that is what these calls
    meet. After a failure part way the group forms again, and
    _drop_sets_of_last_formation and this run again from the start."""
    c = _comm()
    for sid in sorted(_sets):
        if sid not in _held:
            ranks = _sets[sid][0]
            _sets[sid] = (ranks, c.add_process_set(ranks, sid))


def _get_process_set_ids_and_ranks() -> Dict[int, List[int]]:
    """{id: ranks} of every process set, the global one (0) included."""
    out = {0: list(range(size()))}
    out.update({sid: list(ranks) for sid, (ranks, _) in sorted(_sets.items())})
    return out


def _process_set_size(process_set_id: int) -> int:
    return size() if process_set_id == 0 else len(_sets[process_set_id][0])


def _process_set_rank(process_set_id: int) -> int:
    if process_set_id == 0:
        return rank()
    ranks = _sets[process_set_id][0]
    return ranks.index(rank()) if rank() in ranks else -1


def _process_set_included(process_set_id: int) -> bool:
    return process_set_id == 0 or rank() in _sets[process_set_id][0]


def add_process_set(process_set: Any) -> ProcessSet:
    """Adds a process set (a ProcessSet or a list of ranks) and returns it.

    Collective: every rank of the group calls it, with the same ranks, in the
    same order. A set with the same ranks as one already added (or as the
    whole group) raises ValueError, as Horovod."""
    if not isinstance(process_set, ProcessSet):
        process_set = ProcessSet(process_set)
    if process_set.ranks is None:
        raise ValueError("add_process_set: the process set has no ranks")
    if _id_of_ranks(process_set.ranks) is not None:
        raise ValueError(f"Attempted to add a duplicate process set: {process_set}")
    return _add(process_set)


def remove_process_set(process_set: ProcessSet) -> bool:
    """Removes a process set added before and invalidates it; False for the
    global set or a set that was never added. Every rank calls it."""
    sid = getattr(process_set, "process_set_id", None)
    if sid is None or sid == 0 or sid not in _sets:
        return False
    _, comm = _sets.pop(sid)
    _held.discard(sid)
    if comm is not None:
        comm.close()
    process_set._invalidate()
    return True


def check_process_set(process_set: Any) -> int:
    """The id to pass to the op: ValueError for anything but a ProcessSet
    this process added (Horovod's error for an unknown set)."""
    if not isinstance(process_set, ProcessSet):
        raise ValueError(f"process_set: expected a ProcessSet, got {process_set!r}")
    if process_set.is_global():
        return 0
    sid = process_set.process_set_id
    if sid is None or sid not in _sets:
        raise ValueError(f"process_set: {process_set} was not added (init(process_sets=...) or "
                         f"add_process_set()), or it was removed")
    if sid in _held:
        raise ValueError(f"process_set: {process_set} names ranks the group does not have now (it runs with "
                         f"{size()} of {_job_size()} members); it is added again when the group has them")
    return int(sid)


def root_in_set(root_rank: int, process_set_id: int) -> int:
    """A global root rank as the set's own rank (Horovod's root_rank is
    global even in a process set). A rank outside the set passes -1: the op
    then refuses it, naming the argument."""
    if process_set_id == 0:
        return int(root_rank)
    ranks = _sets[process_set_id][0]
    return ranks.index(int(root_rank)) if int(root_rank) in ranks else -1


def formed(n: int, process_sets: Sequence[Any]) -> None:
    """init(): the group formed with ``n`` members; adds ``process_sets``
    (every rank passes the same list; a set with the same ranks as one
    already added gets that one's id, as in Horovod)."""
    global_process_set._bind(list(range(n)))
    for ps in process_sets:
        if not isinstance(ps, ProcessSet):
            raise ValueError(f"init(process_sets=...): expected ProcessSet objects, got {ps!r}")
        if ps is global_process_set or ps.ranks is None:
            continue
        same = _id_of_ranks(ps.ranks)
        if same is not None:
            ps.process_set_id = same
        else:
            _add(ps)


def forget() -> None:
    """shutdown(): the sets go with the group."""
    _sets.clear()
    _held.clear()
