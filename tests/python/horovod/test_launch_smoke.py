"""The launcher's plumbing: every member of `launch.py -n N` runs this file
identically (as horovodrun runs Horovod's tests). HOROVOD_* must agree with
TF_CONFIG, and ringmaster.tensorflow with both."""
import json
import os

import tensorflow as tf

import ringmaster.tensorflow as hvd


def _tf_config_rank_size():
    cfg = json.loads(os.environ["TF_CONFIG"])
    chiefs = cfg["cluster"].get("chief", [])
    workers = cfg["cluster"].get("worker", [])
    task = cfg["task"]
    rank = task["index"] if task["type"] == "chief" else len(chiefs) + task["index"]
    return rank, len(chiefs) + len(workers)


def test_horovod_env_matches_tf_config():
    rank, size = _tf_config_rank_size()
    assert int(os.environ["HOROVOD_RANK"]) == rank
    assert int(os.environ["HOROVOD_SIZE"]) == size
    assert int(os.environ["HOROVOD_LOCAL_RANK"]) == rank
    assert int(os.environ["HOROVOD_LOCAL_SIZE"]) == size
    assert os.environ["HOROVOD_CROSS_RANK"] == "0"
    assert os.environ["HOROVOD_CROSS_SIZE"] == "1"


def test_init_rank_size_and_all_reduce():
    hvd.init()
    rank, size = _tf_config_rank_size()
    assert hvd.rank() == rank == int(os.environ["HOROVOD_RANK"])
    assert hvd.size() == size == int(os.environ["HOROVOD_SIZE"])
    got = hvd.all_reduce("sum", tf.constant([rank]))
    assert got.numpy().tolist() == [sum(range(size))]
