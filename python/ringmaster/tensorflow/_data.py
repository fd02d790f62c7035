"""Input sharding by rank, as MultiWorkerMirroredStrategy's
experimental_distribute_dataset does it: TensorFlow's own auto-shard pass."""
from __future__ import annotations

from typing import Any, Optional

import tensorflow as tf

from ._basics import rank, size


def shard_dataset(dataset: tf.data.Dataset, num_shards: Optional[int] = None,
                  index: Optional[int] = None) -> tf.data.Dataset:
    """This rank's share of ``dataset`` (default: ``size()`` shards, shard
    ``rank()``), by TensorFlow's auto-shard rewrite, which MWMS applies too:
    with the dataset's ``options().experimental_distribute.auto_shard_policy``
    AUTO (the default) it shards by file when the pipeline reads files and
    by element otherwise (TensorFlow logs the same warning then); FILE and
    DATA force one way; OFF returns the dataset unchanged. Shard before
    batching, as with MWMS, so every rank sees whole batches of its own
    elements; every rank must then run the same number of steps."""
    n = size() if num_shards is None else int(num_shards)
    i = rank() if index is None else int(index)
    if not 0 <= i < n:
        raise ValueError(f"index: must be in [0, {n}), got {i}")
    policy = dataset.options().experimental_distribute.auto_shard_policy
    if n == 1 or policy == tf.data.experimental.AutoShardPolicy.OFF:
        return dataset
    from tensorflow.python.data.experimental.ops import distribute as _distribute
    sharded: Any = _distribute._AutoShardDataset(dataset, n, i, num_replicas=n)
    return sharded
