"""TensorFlow's collective all-reduce, one process per worker.

Started by run.py with a TF_CONFIG that `ringmaster tfconfig` generated (its
service addresses mapped to 127.0.0.1 ports). Measures the all-reduce of a
float32 tensor inside MultiWorkerMirroredStrategy with
CommunicationOptions(implementation=RING), the same way as the C++ peers
(common/bench/include/rmbench/bench_common.h): warm-up, timed batches of
back-to-back calls, a bit-exact check, one JSON line per size from worker 0.
"""
import argparse
import json
import os
import statistics
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402


def iters_per_batch(nbytes, max_iters=200):
    return int(min(max((16 << 20) // nbytes, 1), max_iters))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--min", type=int, default=4)
    p.add_argument("--max", type=int, default=256 << 20)
    p.add_argument("--factor", type=int, default=4)
    p.add_argument("--batches", type=int, default=5)
    p.add_argument("--bytes-per-pack", type=int, default=0)
    # bench/network/run.py lowers it: on an emulated network each of
    # TensorFlow's small calls takes milliseconds.
    p.add_argument("--max-iters", type=int, default=200, help="calls per timed batch at most")
    args = p.parse_args()

    tf_config = json.loads(os.environ["TF_CONFIG"])
    rank = tf_config["task"]["index"]
    n = len(tf_config["cluster"]["worker"])
    impl = tf.distribute.experimental.CommunicationImplementation.RING
    opts = tf.distribute.experimental.CommunicationOptions(
        bytes_per_pack=args.bytes_per_pack, implementation=impl)
    strategy = tf.distribute.MultiWorkerMirroredStrategy(communication_options=opts)

    @tf.function
    def allreduce(x):
        def fn(v):
            # tf.identity places the input on the replica's device: an eager
            # tensor from outside has none, and all_reduce needs one.
            return tf.distribute.get_replica_context().all_reduce(
                tf.distribute.ReduceOp.SUM, tf.identity(v), options=opts)
        return strategy.run(fn, args=(x,))

    size = args.min
    while size <= args.max:
        count = size // 4
        idx = np.arange(count, dtype=np.int64)
        pattern = tf.constant(((rank + 1) * (idx % 13 + 1)).astype(np.float32))
        expected = (n * (n + 1) // 2 * (idx % 13 + 1)).astype(np.float32)
        zeros = tf.zeros([count], tf.float32)
        iters = iters_per_batch(size, args.max_iters)
        allreduce(zeros)  # trace and warm up
        allreduce(zeros)
        per_iter = []
        for _ in range(args.batches):
            allreduce(tf.zeros([1], tf.float32))  # a barrier, of sorts
            t0 = time.perf_counter()
            for _ in range(iters):
                allreduce(zeros)
            per_iter.append((time.perf_counter() - t0) / iters * 1e6)
        got = allreduce(pattern)
        correct = bool(np.array_equal(got.numpy(), expected))
        per_iter.sort()
        if rank == 0:
            print(json.dumps({
                "peer": "tensorflow", "algo": "ring", "n": n, "bytes": size,
                "median_us": round(statistics.median(per_iter), 3),
                "min_us": round(per_iter[0], 3), "max_us": round(per_iter[-1], 3),
                "iters": iters, "batches": args.batches, "correct": correct}), flush=True)
        if not correct:
            print(f"tensorflow rank {rank}: WRONG RESULT at {size} bytes", file=sys.stderr)
        size *= args.factor


if __name__ == "__main__":
    main()
