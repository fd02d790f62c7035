#!/usr/bin/env python3
"""The TensorFlow op's fixed cost per call: a 4-byte all-reduce through
`rm.all_reduce` (in a tf.function and eagerly) against the engine alone
(`ringmaster.default_communicator().all_reduce` on a 1-element NumPy array),
N local processes (--members, default 3), 3 rounds of 300 timed calls each
(20 warm-up), the median per call in microseconds, rank 0's. Beside them,
what the fixed cost is made of: TensorFlow's own cost of a call
(tf.identity, in a tf.function and eagerly), the op on an empty tensor (the
call and the agreement, no all-reduce: the members still gather their
proposals), and an all-gather of 8 words through the engine.

The goal (issue 52): the op's call within TensorFlow's own for the same
mode plus 2x the engine's 4-byte all-reduce. N = 2 gives each member a core
of this 2-core machine; at N = 3 they share, and TensorFlow's threads in a
tf.function wait for cores (the JSON's "goal" fields judge each mode).

    python bench/tensorflow/op_latency.py [--members N]   (with the TensorFlow venv's python)
"""
from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path


def member() -> None:
    import numpy as np
    import ringmaster
    import ringmaster.tensorflow as rm
    import tensorflow as tf

    rm.init()
    comm = ringmaster.default_communicator()
    x, arr = tf.ones([1]), np.ones(1, np.float32)
    f = tf.function(lambda t: rm.all_reduce("sum", [t]))
    ident = tf.function(lambda t: tf.identity(t))
    empty = tf.zeros([0])
    words = np.zeros(8, np.int64)

    def median_us(fn, n=300):
        for _ in range(20):
            fn()
        ts = []
        for _ in range(n):
            t0 = time.perf_counter()
            fn()
            ts.append(time.perf_counter() - t0)
        return statistics.median(ts) * 1e6

    res: dict = {}
    for _ in range(3):
        res.setdefault("op, tf.function", []).append(median_us(lambda: f(x)[0].numpy()))
        res.setdefault("op, eager", []).append(median_us(lambda: rm.all_reduce("sum", [x])[0].numpy()))
        res.setdefault("engine alone", []).append(median_us(lambda: comm.all_reduce(arr, "sum")))
        res.setdefault("tf.identity, tf.function", []).append(median_us(lambda: ident(x).numpy()))
        res.setdefault("tf.identity, eager", []).append(median_us(lambda: tf.identity(x).numpy()))
        res.setdefault("op on an empty tensor, tf.function", []).append(median_us(lambda: f(empty)[0].numpy()))
        res.setdefault("op on an empty tensor, eager", []).append(
            median_us(lambda: rm.all_reduce("sum", [empty])[0].numpy()))
        res.setdefault("engine all-gather of 8 words", []).append(median_us(lambda: comm.all_gather(words)))
    if rm.rank() == 0:
        med = {k: statistics.median(vs) for k, vs in res.items()}
        out = {k: [round(v, 1) for v in vs] for k, vs in res.items()}
        for mode in ("tf.function", "eager"):
            bound = med[f"tf.identity, {mode}"] + 2 * med["engine alone"]
            out[f"goal, {mode}"] = (f"op {med[f'op, {mode}']:.1f} us vs tf.identity + 2 x engine "
                                    f"{bound:.1f} us: {'met' if med[f'op, {mode}'] <= bound else 'not met'}")
        print(json.dumps(out), flush=True)
    os._exit(0)


def main() -> int:
    if os.environ.get("OP_LATENCY_MEMBER"):
        member()
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "common" / "ports"))
    from free_ports import free_ports  # common/ports/free_ports.py
    n = int(sys.argv[sys.argv.index("--members") + 1]) if "--members" in sys.argv else 3
    ports = free_ports(2 * n)
    cluster = {"worker": [f"127.0.0.1:{p}" for p in ports[:n]]}
    procs = []
    for i in range(n):
        env = dict(os.environ, OP_LATENCY_MEMBER="1", TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES="",
                   TF_CONFIG=json.dumps({"cluster": cluster, "task": {"type": "worker", "index": i}}),
                   RINGMASTER_PORT=",".join(map(str, ports[n:])))
        procs.append(subprocess.Popen([sys.executable, __file__], env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.DEVNULL, text=True))
    rc = 0
    for p in procs:
        try:
            out, _ = p.communicate(timeout=300)
        except subprocess.TimeoutExpired:
            p.kill()
            out, rc = "", 1
        rc = rc or p.returncode
        if out.strip():
            print(f"N = {n}, load {os.getloadavg()[0]:.1f}; median us per call, 3 rounds: {out.strip()}")
    return rc


if __name__ == "__main__":
    sys.exit(main())
