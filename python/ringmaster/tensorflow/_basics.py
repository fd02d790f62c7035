"""The group and its members, with Horovod's names: init, rank, size, the
local and cross views, the capability queries and the reduce ops. Process
sets are in process_sets.py; no TensorFlow op here (see mpi_ops)."""
from __future__ import annotations

import json
import os
from typing import Any, List, Optional, Sequence

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


def init(comm: Any = None, process_sets: Optional[Sequence[Any]] = None) -> "ringmaster.Communicator":
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
    from . import process_sets as sets  # it imports this module
    c = _form_group()
    sets.formed(int(c.size), process_sets or ())
    return c


def shutdown() -> None:
    """Leaves the group (the process may call init() again later); its
    process sets go with it."""
    from . import process_sets as sets
    sets.forget()  # their communicators close with the group's
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


def _get_process_set_ids_and_ranks() -> dict:
    """{id: ranks} of every process set, the global one (0) included: where
    Horovod's tests read it (``hvd.mpi_ops._basics``)."""
    from . import process_sets
    return process_sets._get_process_set_ids_and_ranks()
