"""What ``ringmaster.tensorflow.keras`` and ``ringmaster.keras`` share: the
group's module, the reduce ops, and the value collectives (the distributed
optimizer and ``load_model`` are _optimizer.py).

``ringmaster.tensorflow`` is imported when a function runs, never at module
load, so this package can be imported while ``ringmaster.tensorflow`` itself
is still initialising (it exposes ``keras`` lazily).
"""
from __future__ import annotations

import importlib
from typing import Any, Dict, List, Optional

import tensorflow as tf


def rm() -> Any:
    return importlib.import_module("ringmaster.tensorflow")


def rm_attr(name: str) -> Any:
    """``ringmaster.tensorflow.<name>``, or an AttributeError naming what is missing."""
    mod = rm()
    try:
        return getattr(mod, name)
    except AttributeError:
        raise AttributeError(f"ringmaster.tensorflow has no {name!r} (not available in this version of "
                             f"ringmaster.tensorflow)") from None


def _same_op(a: Any, b: Any) -> bool:
    try:
        return bool(a == b) or a is b
    except Exception:
        return a is b


def op_average() -> Any:
    return rm_attr("Average")


def op_sum() -> Any:
    return rm_attr("Sum")


def _fallback_op_name(op: Any) -> str:
    # Before the Horovod-style collectives exist: ringmaster.tensorflow.all_reduce's names.
    if op is None or _same_op(op, op_average()):
        return "mean"
    if _same_op(op, op_sum()):
        return "sum"
    return rm()._reduce_op_name(op)


def grouped_allreduce(tensors: List[Any], op: Any = None, compression: Any = None, prescale_factor: float = 1.0,
                      postscale_factor: float = 1.0, process_set: Any = None) -> List[Any]:
    """One collective for the whole list (``None`` entries pass through)."""
    idx = [i for i, t in enumerate(tensors) if t is not None]
    out = list(tensors)
    if not idx:
        return out
    items = [tensors[i] for i in idx]
    mod = rm()
    if hasattr(mod, "grouped_allreduce"):
        kwargs: Dict[str, Any] = {"op": op_average() if op is None else op,
                                  "prescale_factor": prescale_factor, "postscale_factor": postscale_factor}
        if compression is not None:
            kwargs["compression"] = compression
        if process_set is not None:
            kwargs["process_set"] = process_set
        reduced = mod.grouped_allreduce(items, **kwargs)
    else:
        if prescale_factor != 1.0:
            items = [t * tf.cast(prescale_factor, t.dtype) for t in map(_dense, items)]
        reduced = mod.all_reduce(_fallback_op_name(op), items)
        if postscale_factor != 1.0:
            reduced = [t * tf.cast(postscale_factor, t.dtype) for t in reduced]
    for i, r in zip(idx, reduced):
        out[i] = r
    return out


def _dense(t: Any) -> Any:
    return tf.convert_to_tensor(t) if isinstance(t, tf.IndexedSlices) else t


def default_process_set() -> Any:
    return getattr(rm(), "global_process_set", None)


def process_set_size(process_set: Any) -> int:
    if process_set is not None and hasattr(process_set, "size"):
        try:
            return int(process_set.size())
        except Exception:
            pass
    return int(rm().size())


def _tensor(value: Any, name: Optional[str]) -> tf.Tensor:
    if isinstance(value, (tf.Tensor, tf.Variable)):
        return tf.convert_to_tensor(value)
    return tf.constant(value, name=name)


def _eval(result: Any) -> Any:
    if tf.executing_eagerly():
        return result
    return tf.compat.v1.keras.backend.get_session().run(result)


def allreduce(value: Any, name: Optional[str], average: Any, prescale_factor: float, postscale_factor: float,
              op: Any, compression: Any) -> Any:
    mod = rm()
    t = _tensor(value, name)
    if hasattr(mod, "grouped_allreduce"):
        kwargs: Dict[str, Any] = dict(op=op, prescale_factor=prescale_factor, postscale_factor=postscale_factor)
        if average is not None:
            kwargs["average"] = average
        if compression is not None:
            kwargs["compression"] = compression
        return _eval(mod.allreduce(t, **kwargs))
    if op is None:
        op = op_average() if average is None or average else op_sum()
    return _eval(grouped_allreduce([t], op=op, prescale_factor=prescale_factor,
                                   postscale_factor=postscale_factor)[0])


def allgather(value: Any, name: Optional[str]) -> Any:
    return _eval(rm_attr("allgather")(_tensor(value, name)))


def broadcast(value: Any, root_rank: int, name: Optional[str]) -> Any:
    return _eval(rm().broadcast(_tensor(value, name), root_rank))


def reducescatter(value: Any, name: Optional[str], op: Any) -> Any:
    return _eval(rm_attr("reducescatter")(_tensor(value, name), op=op))


def broadcast_global_variables(root_rank: int) -> Any:
    """Horovod's: the TF1 global variables; not supported eagerly (TF2: use
    the BroadcastGlobalVariablesCallback or broadcast_variables)."""
    mod = rm()
    if hasattr(mod, "broadcast_global_variables"):
        return _eval(mod.broadcast_global_variables(root_rank))
    if tf.executing_eagerly():
        raise RuntimeError("broadcast_global_variables() does not support eager execution. Please use "
                           "`broadcast_variables(<model/optimizer variables>)` instead.")
    return _eval(mod.broadcast_variables(tf.compat.v1.global_variables(), root_rank))


# -------------------------------------------------------------- load_model
