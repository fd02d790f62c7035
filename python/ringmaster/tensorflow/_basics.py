"""The group and its members, with Horovod's names: init, rank, size, the
local and cross views, the capability queries, the reduce ops and process
sets. No TensorFlow op here (see mpi_ops)."""
from __future__ import annotations

import json
import os
from typing import Any, List, Optional, Sequence

import ringmaster

# Horovod's reduce ops, with Horovod's values (its users compare and pass
# them around as plain integers; the op's `reduce_op` attribute takes them).
Average = 0
Sum = 1
Adasum = 2
Min = 3
Max = 4
Product = 5

_OP_NAMES = {"sum": Sum, "mean": Average, "average": Average, "avg": Average, "min": Min, "max": Max,
             "product": Product, "prod": Product}


def reduce_op_value(op: Any) -> int:
    """Horovod's value of ``op``: one of the constants above, a name ("sum",
    "mean", ...) or a tf.distribute.ReduceOp."""
    if isinstance(op, bool):
        raise ValueError(f"op: expected a reduce op, got {op!r}")
    if isinstance(op, int) and op in (Average, Sum, Adasum, Min, Max, Product):
        return op
    name = getattr(op, "value", op)  # tf.distribute.ReduceOp.SUM.value == "SUM"
    if isinstance(name, str) and name.lower() in _OP_NAMES:
        return _OP_NAMES[name.lower()]
    raise ValueError(f"op: must be Average, Sum, Min, Max, Product (or 'sum', 'mean', a tf.distribute.ReduceOp), "
                     f"got {op!r}")


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


def init(comm: Any = None, process_sets: Optional[Sequence["ProcessSet"]] = None) -> "ringmaster.Communicator":
    """Forms the collective group from TF_CONFIG and RINGMASTER_* (once; later
    calls return the same group). ``comm`` (an MPI communicator in Horovod)
    is not supported: the group is the job's. ``process_sets``: only the
    global one so far."""
    if comm is not None:
        raise NotImplementedError("init(comm=...): Ringmaster forms its group from TF_CONFIG, not from an MPI "
                                  "communicator")
    for ps in process_sets or ():
        if not (isinstance(ps, ProcessSet) and ps.is_global()):
            raise NotImplementedError("init(process_sets=...): process sets other than the global one are not "
                                      "implemented by Ringmaster yet")
    c = ringmaster.init()
    global_process_set._bind(list(range(int(c.size))))
    return c


def shutdown() -> None:
    """Leaves the group (the process may call init() again later)."""
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


def nccl_built() -> bool:
    return False


def ddl_built() -> bool:
    return False


def ccl_built() -> bool:
    return False


def cuda_built() -> bool:
    return False


def rocm_built() -> bool:
    return False


def start_timeline(file_path: str, mark_cycles: bool = False) -> None:
    raise NotImplementedError("start_timeline: Ringmaster does not write Horovod's timeline yet; after a failure "
                              "its flight recorder shows every member's last collectives "
                              "(`ringmaster flight-recorder DIR`)")


def stop_timeline() -> None:
    raise NotImplementedError("stop_timeline: Ringmaster does not write Horovod's timeline yet")


# ----------------------------------------------------------- process sets


class ProcessSet:
    """A subset of the ranks that collectives can be limited to. Only the
    global process set (every rank, id 0) is implemented so far."""

    def __init__(self, ranks_or_comm: Any = None) -> None:
        self.ranks: Optional[List[int]] = None if ranks_or_comm is None else sorted(int(r) for r in ranks_or_comm)
        self.process_set_id: Optional[int] = None

    def _bind(self, ranks: List[int]) -> None:
        self.ranks = ranks
        self.process_set_id = 0

    def is_global(self) -> bool:
        return self.process_set_id == 0 or self is global_process_set

    def size(self) -> Optional[int]:
        if self.is_global():
            return size()
        return None if self.ranks is None else len(self.ranks)

    def rank(self) -> Optional[int]:
        if self.is_global():
            return rank()
        r = rank()
        return self.ranks.index(r) if self.ranks and r in self.ranks else None

    def included(self) -> Optional[bool]:
        return True if self.is_global() else (self.ranks is not None and rank() in self.ranks)

    def __str__(self) -> str:
        return f"ProcessSet(process_set_id={self.process_set_id}, ranks={self.ranks})"


global_process_set = ProcessSet()
global_process_set.process_set_id = 0


def _unimplemented_process_sets(what: str) -> NotImplementedError:
    return NotImplementedError(f"{what}: process sets other than the global one are not implemented by "
                               f"Ringmaster yet")


def add_process_set(process_set: Any) -> ProcessSet:
    raise _unimplemented_process_sets("add_process_set")


def remove_process_set(process_set: ProcessSet) -> bool:
    if isinstance(process_set, ProcessSet) and process_set.is_global():
        raise ValueError("remove_process_set: the global process set cannot be removed")
    raise _unimplemented_process_sets("remove_process_set")


def check_process_set(process_set: Any) -> None:
    if not (isinstance(process_set, ProcessSet) and process_set.is_global()):
        raise _unimplemented_process_sets("process_set")
