"""Gradient buckets: which dense gradients share one all-reduce op.

TensorFlow runs an op when all its inputs exist, and its outputs appear when
it ends. One op for every gradient would start only after the whole backward
pass, and no weight update could start before the last byte is reduced. So
the gradients go in buckets, each its own op, in the reverse order of the
variables (the order backprop produces them, as TensorFlow's
MultiWorkerMirroredStrategy packs and PyTorch DDP's buckets): the first
bucket is on the wire while the first layers' gradients are still computed,
and its variables' updates can start as soon as it is reduced.

Every rank derives the same buckets from the model alone (static shapes and
dtypes, fixed when the function is traced), so no negotiation is needed.
The rule is TensorFlow's ``group_by_size`` (and the engine's packing): a new
bucket starts once the current one holds more than ``bucket_bytes``, so a
bucket is the smallest run of gradients larger than it.
"""
from __future__ import annotations

from typing import Any, List, Optional, Sequence

# The bucket size when neither the call's options nor the job's
# communication block set bytes_per_pack: large enough that an op's fixed
# cost (a few hundred microseconds) is small beside its transfer on a real
# link, small enough that a model of a few buckets' size overlaps.
DEFAULT_BUCKET_BYTES = 16 * 1024 * 1024


def bucket_bytes(options: Any = None) -> int:
    """The bucket size: ``options``' bytes_per_pack (ours, or TensorFlow's
    CommunicationOptions/CollectiveHints), else the job's
    (RINGMASTER_BYTES_PER_PACK), else DEFAULT_BUCKET_BYTES."""
    import ringmaster
    bpp = ringmaster.CommunicationOptions.from_any(options).bytes_per_pack if options is not None else 0
    if bpp <= 0:
        from ringmaster import _core
        bpp = int(_core.job_options()[0])
    return int(bpp) if bpp > 0 else DEFAULT_BUCKET_BYTES


def nbytes(value: Any) -> Optional[int]:
    """The bytes of ``value`` as traced (its static shape), or None when the
    shape is not fully known."""
    shape = getattr(value, "shape", None)
    dtype = getattr(value, "dtype", None)
    if shape is None or dtype is None:
        return None
    try:
        elements = shape.num_elements() if hasattr(shape, "num_elements") else None
        if elements is None and all(isinstance(d, int) for d in shape):
            elements = 1
            for d in shape:
                elements *= d
        import tensorflow as tf
        size = tf.as_dtype(dtype).size
    except (TypeError, ValueError):
        return None
    return None if elements is None else int(elements) * int(size)


def plan(indices: Sequence[int], sizes: Sequence[Optional[int]], limit: int) -> List[List[int]]:
    """``indices`` (positions in variable order, ``sizes`` their bytes or
    None) grouped into buckets, the last variables' first: a new bucket
    starts once the current one holds more than ``limit`` bytes. A size not
    known when traced counts 0 (the gradient joins the current bucket).
    Every index is in exactly one bucket; each bucket lists its indices in
    the order they are reduced."""
    if limit <= 0:
        raise ValueError(f"bucket size: must be > 0, got {limit}")
    buckets: List[List[int]] = []
    held = 0
    for i, size in zip(reversed(list(indices)), reversed(list(sizes))):
        if not buckets or held > limit:
            buckets.append([])
            held = 0
        buckets[-1].append(i)
        held += size or 0
    return buckets


def plan_for(values: Sequence[Any], indices: Sequence[int], options: Any = None) -> List[List[int]]:
    """The buckets of ``values[i]`` for ``i`` in ``indices`` (plan), sized
    by ``options`` (bucket_bytes)."""
    return plan(indices, [nbytes(values[i]) for i in indices], bucket_bytes(options))
