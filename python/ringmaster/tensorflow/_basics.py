"""The group and its members, with Horovod's names: init, rank, size, the
local and cross views, the capability queries, the reduce ops and process
sets. No TensorFlow op here (see mpi_ops)."""
from __future__ import annotations

import json
import os
from typing import Any, Dict, List, Optional, Sequence, Set, Tuple

import ringmaster
from ringmaster import _core

# Horovod's reduce ops, with Horovod's values (its users compare and pass
# them around as plain integers; the op's `reduce_op` attribute takes them).
# The library numbers them (ringmaster/enums.h), as Horovod's C library
# does its own: [(name, the engine's op or -1)] by Horovod's value.
_HOROVOD = _core.horovod_reduce_ops()
_VALUE = {name: value for value, (name, _) in enumerate(_HOROVOD)}
Average = _VALUE["Average"]
Sum = _VALUE["Sum"]
Adasum = _VALUE["Adasum"]
Min = _VALUE["Min"]
Max = _VALUE["Max"]
Product = _VALUE["Product"]

# The engine's reduce ops (rm_reduce_op's values) as Horovod's. Adasum has none.
_FROM_ENGINE = {engine: value for value, (_, engine) in enumerate(_HOROVOD) if engine >= 0}


def reduce_op_value(op: Any) -> int:
    """Horovod's value of ``op``: one of the constants above, a name ("sum",
    "mean", ...) or a tf.distribute.ReduceOp."""
    if isinstance(op, bool):
        raise ValueError(f"op: expected a reduce op, got {op!r}")
    if isinstance(op, int) and 0 <= op < len(_HOROVOD):
        return op
    name = getattr(op, "value", op)  # tf.distribute.ReduceOp.SUM.value == "SUM"
    if isinstance(name, str):
        try:
            # Any spelling the engine's table takes ("prod", "average", ...).
            return _FROM_ENGINE[_core.parse_enum("reduce_op", name, "op")]
        except ringmaster.InvalidArgumentError:
            pass
    raise ValueError(f"op: must be Average, Sum, Min, Max, Product (or 'sum', 'mean', a tf.distribute.ReduceOp), "
                     f"got {op!r}")


def engine_reduce_op_name(op: Any) -> Optional[str]:
    """The engine's name of ``op`` (any spelling reduce_op_value takes):
    "sum", "mean", "min", "max", "product"; None for Adasum."""
    engine = _HOROVOD[reduce_op_value(op)][1]
    return _core.enum_names("reduce_op")[engine] if engine >= 0 else None


def handle_average_backwards_compatibility(op: Any, average: Any) -> int:
    """Horovod's rule for the deprecated ``average=``: it may not come with
    ``op``; True is Average, False is Sum; neither is Average."""
    if op is not None:
        if average is not None:
            raise ValueError("The op parameter supersedes average. Please provide only one of them.")
        return reduce_op_value(op)
    if average is not None:
        import warnings
        warnings.warn("Parameter `average` has been replaced with `op` and will be removed in v1.0",
                      DeprecationWarning)
        return Average if average else Sum
    return Average


def check_num_rank_power_of_2(num_rank: int) -> bool:
    return num_rank != 0 and (num_rank & (num_rank - 1)) == 0


# ------------------------------------------------------------------ group

_NOT_INITIALIZED = "Ringmaster has not been initialized; use ringmaster.tensorflow.init()."


def _form_group() -> "ringmaster.Communicator":
    """ringmaster.init(); without TF_CONFIG (a script run directly, not by a
    job), a group of this process alone, as Horovod's init() gives a size of
    1 without a launcher. TF_CONFIG is set only while the group forms (a
    group of one opens no port), so TensorFlow never sees it."""
    if os.environ.get("TF_CONFIG") or ringmaster.default_communicator() is not None:
        return ringmaster.init()
    os.environ["TF_CONFIG"] = json.dumps({"cluster": {"worker": ["127.0.0.1:1"]},
                                          "task": {"type": "worker", "index": 0}})
    try:
        return ringmaster.init()
    finally:
        os.environ.pop("TF_CONFIG", None)


def init(comm: Any = None, process_sets: Optional[Sequence["ProcessSet"]] = None) -> "ringmaster.Communicator":
    """Forms the collective group from TF_CONFIG and RINGMASTER_* (once; later
    calls return the same group); without TF_CONFIG, a group of this process
    alone (size 1, as Horovod without a launcher). ``comm`` (an MPI
    communicator in Horovod) is not supported: the group is the job's.
    ``process_sets``: process sets to add now (every rank passes the same
    list); as in Horovod, a set with the same ranks as one already added
    gets that one's id."""
    if comm is not None:
        raise NotImplementedError("init(comm=...): Ringmaster forms its group from TF_CONFIG, not from an MPI "
                                  "communicator")
    c = _form_group()
    global_process_set._bind(list(range(int(c.size))))
    for ps in process_sets or ():
        if not isinstance(ps, ProcessSet):
            raise ValueError(f"init(process_sets=...): expected ProcessSet objects, got {ps!r}")
        if ps is global_process_set or ps.ranks is None:
            continue
        same = _id_of_ranks(ps.ranks)
        if same is not None:
            ps.process_set_id = same
        else:
            _add(ps)
    return c


def shutdown() -> None:
    """Leaves the group (the process may call init() again later); its
    process sets go with it."""
    _sets.clear()  # their communicators close with the group's
    _held.clear()
    ringmaster.shutdown()


def is_initialized() -> bool:
    return ringmaster.default_communicator() is not None


def _comm() -> "ringmaster.Communicator":
    c = ringmaster.default_communicator()
    if c is None:
        raise ValueError(_NOT_INITIALIZED)
    return c


def rank() -> int:
    """This process's rank: the chief (if any) is 0, then the workers in index order."""
    return int(_comm().rank)


def size() -> int:
    """The number of ranks (chief and workers; PS and evaluator are not members)."""
    return int(_comm().size)


def _member_hosts() -> List[str]:
    """The host of each rank's TF_CONFIG address, in rank order."""
    comm = _comm()
    cluster = json.loads(os.environ.get("TF_CONFIG") or "{}").get("cluster", {})
    hosts = []
    for r in range(comm.size):
        name = comm.task_name(r)  # "/job:worker/task:1"
        try:
            job = name.split("/job:")[1].split("/")[0]
            task = int(name.split("/task:")[1].split("/")[0])
            address = cluster[job][task]
        except (IndexError, KeyError, ValueError):
            address = name
        host = address.rsplit(":", 1)[0] if ":" in address else address
        hosts.append(host.strip("[]"))
    return hosts


def _local_ranks() -> List[int]:
    hosts = _member_hosts()
    return [sum(1 for q in range(r) if hosts[q] == hosts[r]) for r in range(len(hosts))]


def local_rank() -> int:
    """Rank among the members on this host: members whose TF_CONFIG address
    has the same host name, counted in rank order. On Kubernetes every pod
    has its own DNS name, so this is 0 unless tasks share an address host
    (e.g. ``ringmaster run`` on 127.0.0.1, where it equals rank())."""
    return _local_ranks()[rank()]


def local_size() -> int:
    """The number of members whose TF_CONFIG address has this rank's host."""
    hosts = _member_hosts()
    return hosts.count(hosts[rank()])


def cross_rank() -> int:
    """This rank's index among the members with its local rank (Horovod's
    cross communicator: one member per host)."""
    mine = local_rank()
    return sum(1 for r, lr in enumerate(_local_ranks()[:rank()]) if lr == mine)


def cross_size() -> int:
    """The number of members with this rank's local rank (hosts, when every
    host runs as many members)."""
    mine = local_rank()
    return sum(1 for lr in _local_ranks() if lr == mine)


def is_homogeneous() -> bool:
    """True when every host runs the same number of members."""
    hosts = _member_hosts()
    return len({hosts.count(h) for h in hosts}) <= 1


# Capabilities, answered for Ringmaster: its own engine, neither MPI nor
# Gloo; the TensorFlow op has CPU kernels only, so no GPU collective runs
# from TensorFlow (docs/gpu.md).
def mpi_threads_supported() -> bool:
    return False


def mpi_enabled() -> bool:
    return False


def mpi_built() -> bool:
    return False


def gloo_enabled() -> bool:
    return False


def gloo_built() -> bool:
    return False


def nccl_built() -> int:
    """NCCL's version code (2.32.3 -> 23203; Horovod's tests compare it with
    2700) where GPU tensors can be all-reduced with NCCL: a TensorFlow with
    CUDA (the op's GPU kernel runs) and an NCCL library the agent can load
    (RINGMASTER_NCCL_LIBRARY, else libnccl.so.2); 0 elsewhere."""
    if not cuda_built():
        return 0
    import ctypes
    for name in (os.environ.get("RINGMASTER_NCCL_LIBRARY") or "libnccl.so.2", "libnccl.so"):
        try:
            lib = ctypes.CDLL(name)
        except OSError:
            continue
        version = ctypes.c_int(0)
        if lib.ncclGetVersion(ctypes.byref(version)) == 0:
            return int(version.value)
    return 0


def ddl_built() -> bool:
    return False


def ccl_built() -> bool:
    return False


def cuda_built() -> bool:
    """True where the op's GPU kernel can run: the TensorFlow in use was built
    with CUDA (the kernel itself is compiled into every op library)."""
    import tensorflow as tf
    return bool(tf.test.is_built_with_cuda())


def rocm_built() -> bool:
    return False


def start_timeline(file_path: str, mark_cycles: bool = False) -> None:
    """Writes every collective this rank runs from now on to ``file_path``,
    a Chrome trace (chrome://tracing, Perfetto): one event per pack, with
    its dtype, bytes, algorithm and outcome; process sets on a row of their
    own. Each rank writes its own file. ``mark_cycles`` is accepted and has
    nothing to mark: Ringmaster has no negotiation cycles. ValueError before
    init(), as Horovod."""
    if not is_initialized():
        raise ValueError(_NOT_INITIALIZED)
    _comm().start_timeline(str(file_path))


def stop_timeline() -> None:
    """Ends the timeline's file (a complete JSON array)."""
    if not is_initialized():
        raise ValueError(_NOT_INITIALIZED)
    _comm().stop_timeline()


# ----------------------------------------------------------- process sets


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