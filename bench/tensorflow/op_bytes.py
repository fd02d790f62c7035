#!/usr/bin/env python3
"""Where the TensorFlow op's cost above the engine goes on big tensors: the
gradients of scripts/bench keras's model (8 float32 tensors, 100.7 MB)
summed by N = 3 local processes, each case's median per call (ms, rank 0's)
and its minor page faults per call (rank 0's process: a count, not a time,
so it holds on a busy machine), the cases interleaved in every round:

    engine in place        the engine alone on NumPy arrays, in place
    engine, fresh copies   the engine on fresh copies of them (np.copy): an
                           out-of-place all-reduce, the work TensorFlow's
                           semantics ask of the op when its inputs are held
                           elsewhere (a new output buffer, the input copied in)
    copy alone             the fresh copies alone
    op, captured           rm.all_reduce in a tf.function on captured tensors
                           (held elsewhere: a fresh output, the engine reads
                           the inputs)
    op, fresh              rm.all_reduce on tensors made in the graph
                           (Snapshot: no other reference), reduced in place
    snapshot alone         the Snapshot alone
    ..., back to back      the engine in place and the op on captured
                           tensors, called back to back as scripts/bench
                           keras times them (the others start together:
                           a 4-byte all-reduce before each call)

Each group of 3 processes runs one variant: its name and the environment it
adds. The default variants are TensorFlow's CPU allocator as it is, and
with TF_CPU_ALLOCATOR_USE_BFC=true (TensorFlow's pooling allocator: a freed
buffer is reused, not given back to the kernel); `--variant` replaces them
(e.g. another build of the package: PYTHONPATH=its site dir and
RINGMASTER_TF_PREBUILT=0, the op then built from its sources). Groups cycle
through the variants (A, B, A, B, ...). Prints one JSON line per group.

    python bench/tensorflow/op_bytes.py [--groups 4] [--rounds 3] [--iters 8]
        [--cases default|paths] [--variant NAME[:VAR=VALUE,...]]...
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

SHAPES = [(1024, 4096), (4096,), (4096, 4096), (4096,), (4096, 1024), (1024,), (1024, 10), (10,)]


def path_cases(tf, rm, comm, arrays, ts) -> dict:
    """--cases paths: the paths over 1.1x the engine in scripts/bench keras
    (the eager per-tensor allreduce, DistributedGradientTape) beside the
    engine doing the same work: the whole list in one call, in place or
    out of place, one call per tensor (what 8 eager calls must do), and
    the plain tape then the engine on its gradients in one call."""
    import numpy as np
    outs = [np.empty_like(a) for a in arrays]
    vs = [tf.Variable(tf.zeros(a.shape)) for a in arrays]

    def tape(api):
        def grads():
            with tf.GradientTape() as t:
                loss = tf.add_n([tf.reduce_sum(v * c) for v, c in zip(vs, ts)])
            if api is not None:
                t = api.DistributedGradientTape(t, op=api.Sum)
            return t.gradient(loss, vs)
        return grads

    tape_fn, alone_fn = tf.function(tape(rm)), tf.function(tape(None))

    @tf.function
    def tape_then_op():
        # DistributedGradientTape's work written out: the plain tape's
        # gradients, then one grouped op over them.
        return rm.grouped_allreduce(tape(None)(), op=rm.Sum)

    @tf.function
    def tape_2c():
        # A gradient computed fresh (2c), not handed through from an input.
        with tf.GradientTape() as t:
            loss = tf.add_n([tf.reduce_sum(v * (c * 2.0)) for v, c in zip(vs, ts)])
        return rm.grouped_allreduce(t.gradient(loss, vs), op=rm.Sum)

    cvs = [tf.Variable(t) for t in ts]

    @tf.function
    def tape_of_variables(with_op: bool = True):
        # scripts/bench keras's tape: c a variable too, whose gradient
        # TensorFlow may hand through as the variable's own buffer.
        with tf.GradientTape() as t:
            loss = tf.add_n([tf.reduce_sum(v * c) for v, c in zip(vs, cvs)])
        grads = t.gradient(loss, vs)
        return rm.grouped_allreduce(grads, op=rm.Sum) if with_op else grads

    @tf.function
    def tape_2c_alone():
        with tf.GradientTape() as t:
            loss = tf.add_n([tf.reduce_sum(v * (c * 2.0)) for v, c in zip(vs, ts)])
        return t.gradient(loss, vs)
    return {
        "engine in place": lambda: comm.all_reduce(arrays, "sum"),
        "engine out of place": lambda: comm.all_reduce(arrays, "sum", out=outs),
        "engine per tensor, out of place": lambda: [comm.all_reduce(a, "sum", out=o) for a, o in zip(arrays, outs)],
        "op per tensor, eager": lambda: [rm.allreduce(t, op=rm.Sum) for t in ts][-1].numpy(),
        "op grouped, eager": lambda: rm.grouped_allreduce(ts, op=rm.Sum)[-1].numpy(),
        "tape, tf.function": lambda: tape_fn()[-1].numpy(),
        "tape alone, tf.function": lambda: alone_fn()[-1].numpy(),
        "tape then the op, tf.function": lambda: tape_then_op()[-1].numpy(),
        "tape of 2c with the op, tf.function": lambda: tape_2c()[-1].numpy(),
        "tape of 2c alone, tf.function": lambda: tape_2c_alone()[-1].numpy(),
        "tape of variables with the op, tf.function": lambda: tape_of_variables(True)[-1].numpy(),
        "tape of variables alone, tf.function": lambda: tape_of_variables(False)[-1].numpy(),
        "tape, eager": lambda: tape(rm)()[-1].numpy(),
        "tape alone, eager": lambda: tape(None)()[-1].numpy(),
        # The tape's work in one call: its gradients, then the engine on
        # their own buffers (_numpy_internal: writable, no copy), in place
        # as the op in a tf.function, out of place as the op eagerly.
        "tape alone then the engine, tf.function":
            lambda: comm.all_reduce([g._numpy_internal() for g in alone_fn()], "sum"),
        "tape alone then the engine out of place, eager":
            lambda: comm.all_reduce([g._numpy_internal() for g in tape(None)()], "sum", out=outs),
    }


def member(rounds: int, iters: int, case_set: str = "default") -> None:
    import numpy as np
    import ringmaster
    import ringmaster.tensorflow as rm
    import tensorflow as tf

    rm.init()
    comm = ringmaster.default_communicator()
    rng = np.random.default_rng(rm.rank())
    arrays = [rng.standard_normal(s).astype(np.float32) for s in SHAPES]
    ts = [tf.constant(a) for a in arrays]
    captured = tf.function(lambda: rm.all_reduce("sum", ts))
    fresh = tf.function(lambda: rm.all_reduce("sum", [tf.raw_ops.Snapshot(input=t) for t in ts]))
    snapshot = tf.function(lambda: [tf.raw_ops.Snapshot(input=t) for t in ts])
    one = np.ones(1, np.float32)
    cases = {
        "engine in place": lambda: comm.all_reduce(arrays, "sum"),
        "engine, fresh copies": lambda: comm.all_reduce([a.copy() for a in arrays], "sum"),
        "copy alone": lambda: [a.copy() for a in arrays],
        "op, captured": lambda: captured()[-1].numpy(),
        "op, fresh": lambda: fresh()[-1].numpy(),
        "snapshot alone": lambda: snapshot()[-1].numpy(),
    }
    back_to_back = {"engine in place, back to back": cases["engine in place"],
                    "op, captured, back to back": cases["op, captured"]}
    if case_set == "paths":
        cases, back_to_back = path_cases(tf, rm, comm, arrays, ts), {}

    faults: dict = {}

    def median_ms(name: str, fn, sync: bool = True) -> float:
        for _ in range(2):
            fn()
        out = []
        comm.all_reduce(one, "sum")
        f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        for _ in range(iters):
            if sync:
                comm.all_reduce(one, "sum")  # start together
            t0 = time.perf_counter()
            fn()
            out.append(time.perf_counter() - t0)
        faults.setdefault(name, []).append((resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0) // iters)
        return statistics.median(out) * 1e3

    res: dict = {name: [] for name in list(cases) + list(back_to_back)}
    names = list(res)
    for r in range(rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:  # rotated each round
            fn = cases.get(name) or back_to_back[name]
            res[name].append(round(median_ms(name, fn, sync=name in cases), 2))
    if rm.rank() == 0:
        print(json.dumps({"ms": res, "faults": faults}), flush=True)
    os._exit(0)


def run_group(name: str, extra: dict, rounds: int, iters: int, case_set: str = "default") -> dict:
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "common" / "ports"))
    from free_ports import free_ports  # common/ports/free_ports.py
    ports = free_ports(6)
    cluster = {"worker": [f"127.0.0.1:{p}" for p in ports[:3]]}
    procs = []
    for i in range(3):
        env = dict(os.environ, OP_BYTES_MEMBER=f"{rounds},{iters},{case_set}", TF_CPP_MIN_LOG_LEVEL="2",
                   CUDA_VISIBLE_DEVICES="", TF_CONFIG=json.dumps({"cluster": cluster, "task": {"type": "worker",
                                                                                                "index": i}}),
                   RINGMASTER_PORT=",".join(map(str, ports[3:])))
        env.update(extra)
        procs.append(subprocess.Popen([sys.executable, __file__], env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.DEVNULL, text=True))
    result: dict = {}
    failed = False
    for p in procs:
        try:
            out, _ = p.communicate(timeout=600)
        except subprocess.TimeoutExpired:
            p.kill()
            out, failed = "", True
        failed = failed or p.returncode != 0
        if out.strip():
            result = json.loads(out.strip().splitlines()[-1])
    if failed or not result:
        raise SystemExit(f"op_bytes.py: a group of variant {name} failed")
    return result


def main() -> int:
    if os.environ.get("OP_BYTES_MEMBER"):
        rounds, iters, case_set = os.environ["OP_BYTES_MEMBER"].split(",")
        member(int(rounds), int(iters), case_set)
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--groups", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--iters", type=int, default=8)
    ap.add_argument("--cases", choices=["default", "paths"], default="default",
                    help="paths: the eager per-tensor allreduce and DistributedGradientTape beside the engine")
    ap.add_argument("--variant", action="append", default=[], metavar="NAME[:VAR=VALUE,...]")
    args = ap.parse_args()
    variants = []
    for v in args.variant or ["default", "bfc:TF_CPU_ALLOCATOR_USE_BFC=true"]:
        name, _, assignments = v.partition(":")
        extra = dict(a.split("=", 1) for a in assignments.split(",") if a)
        variants.append((name, extra))
    for g in range(args.groups):
        name, extra = variants[g % len(variants)]
        load = os.getloadavg()[0]
        got = run_group(name, extra, args.rounds, args.iters, args.cases)
        med = {k: round(statistics.median(v), 1) for k, v in got["ms"].items()}
        flt = {k: int(statistics.median(v)) for k, v in got["faults"].items()}
        print(json.dumps({"variant": name, "load": round(load, 1), "median_ms": med,
                          "page_faults_per_call": flt, "rounds_ms": got["ms"]}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
