"""Python objects and variables across ranks, with Horovod's names:
broadcast_object, broadcast_object_fn, allgather_object, broadcast_variables."""
from __future__ import annotations

import io
import pickle
from typing import Any, Callable, Iterable, List, Optional

import numpy as np
import tensorflow as tf

from ._basics import rank
from .process_sets import ProcessSet, global_process_set
from .mpi_ops import _grouped_broadcast, allgather, assign, broadcast, broadcast_

try:  # cloudpickle serialises lambdas and local classes, as Horovod's does
    import cloudpickle as _pickle  # type: ignore[import-not-found]
except ImportError:  # plain pickle: module-level objects only
    _pickle = pickle  # type: ignore[assignment]


def _dumps(obj: Any) -> np.ndarray:
    buf = io.BytesIO()
    _pickle.dump(obj, buf)
    return np.frombuffer(buf.getvalue(), dtype=np.uint8)


def _loads(data: Any) -> Any:
    return pickle.loads(bytes(np.asarray(data, dtype=np.uint8)))


def _evaluator(session: Any) -> Callable[[Any], np.ndarray]:
    """Tensor -> NumPy: eagerly, or with ``session`` (else the default
    session) in a TensorFlow 1 graph."""
    if tf.executing_eagerly():
        return lambda t: t.numpy()
    sess = session or tf.compat.v1.get_default_session()
    if sess is None:
        raise ValueError("in graph mode, pass session= or run inside a default session")
    return sess.run


def broadcast_object(obj: Any, root_rank: int = 0, session: Any = None, name: Optional[str] = None,
                     process_set: ProcessSet = global_process_set) -> Any:
    """Root_rank's ``obj`` (anything picklable) on every rank: its size,
    then its bytes. In a TensorFlow 1 graph the broadcasts run in
    ``session`` (else the default session)."""
    name = name or type(obj).__name__
    run = _evaluator(session)
    root = rank() == root_rank
    payload = _dumps(obj) if root else np.zeros([0], dtype=np.uint8)
    n = int(run(broadcast(tf.constant([payload.size], dtype=tf.int64), root_rank, name=name + "_size",
                          process_set=process_set))[0])
    if not root:
        payload = np.zeros([n], dtype=np.uint8)
    data = run(broadcast(tf.constant(payload), root_rank, name=name + "_data", process_set=process_set))
    return obj if root else _loads(data)


def broadcast_object_fn(root_rank: int = 0, session: Any = None, name: Optional[str] = None,
                        process_set: ProcessSet = global_process_set) -> Callable[[Any], Any]:
    """A function that broadcasts its argument from root_rank."""
    def fn(obj: Any) -> Any:
        return broadcast_object(obj, root_rank=root_rank, session=session, name=name or "broadcast_object_fn",
                                process_set=process_set)
    return fn


def allgather_object(obj: Any, session: Any = None, name: Optional[str] = None,
                     process_set: ProcessSet = global_process_set) -> List[Any]:
    """Every rank's ``obj`` (anything picklable), as a list in rank order."""
    name = name or type(obj).__name__
    run = _evaluator(session)
    payload = _dumps(obj)
    sizes = run(allgather(tf.constant([payload.size], dtype=tf.int64), name=name + "_sizes",
                          process_set=process_set))
    data = run(allgather(tf.constant(payload), name=name + "_data", process_set=process_set))
    out, offset = [], 0
    for n in sizes:
        out.append(_loads(data[offset:offset + int(n)]))
        offset += int(n)
    return out


def broadcast_variables(variables: Iterable[Any], root_rank: int, process_set: ProcessSet = global_process_set,
                        inplace: bool = False, options: Any = None) -> Any:
    """Assigns root_rank's values to ``variables`` on every rank (one op for
    all of them). Returns None eagerly, the group of assignments in a graph."""
    variables = list(variables)
    if not variables:
        return None if tf.executing_eagerly() else tf.no_op()
    if inplace:
        values = broadcast_(variables, root_rank, process_set=process_set, options=options)
        return None if tf.executing_eagerly() else tf.group(*values)
    values = _grouped_broadcast([v.read_value() if hasattr(v, "read_value") else tf.convert_to_tensor(v)
                                 for v in variables], root_rank, process_set=process_set, options=options)
    assigns = [assign(v, x) for v, x in zip(variables, values)]
    return None if tf.executing_eagerly() else tf.group(*assigns)
