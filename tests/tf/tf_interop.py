"""Real TensorFlow reads the TF_CONFIG Ringmaster generates.

Driver (no --task): for tests/tf/job.yaml (a chief and two workers) it asks
`ringmaster tfconfig` for each replica's TF_CONFIG, checks its shape, maps the
service addresses to 127.0.0.1 ports and starts three TensorFlow processes
with exactly those configs. Cases:

  allreduce  every task all-reduces the same list of tensors (several packs
             at bytesPerPack 1024) in MultiWorkerMirroredStrategy with
             CommunicationOptions(bytes_per_pack, timeout_seconds,
             implementation=RING) from the job; the results must be equal on
             every task and to the exact sum computed here.
  stall      worker 1 never joins the all-reduce; TensorFlow's own timeout
             must raise DeadlineExceededError on the chief and worker 0.

Exit 0 on success; any failure says what differed.
"""
import argparse
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

SHAPES = [[3], [300], [7, 11], [1000], [1], [64, 4]]
STALL_TIMEOUT = 5.0
ATTEMPTS = 3
TASKS = [("chief", 0), ("worker", 0), ("worker", 1)]
TF_ABORT_CRASH = "Mutex corrupt"


def values(task_type, index, shape):
    """Integers in float32: exact sums, so results compare bit for bit."""
    import numpy as np
    seed = {"chief": 1, "worker": 2 + index}[task_type]
    n = int(np.prod(shape))
    return (seed * (np.arange(n) % 13 + 1)).astype(np.float32).reshape(shape)


def expected(tasks):
    import numpy as np
    return [sum(values(t, i, s) for t, i in tasks).astype(np.float32) for s in SHAPES]


def task_main(args):
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import numpy as np
    import tensorflow as tf

    tf_config = json.loads(os.environ["TF_CONFIG"])
    task_type, index = tf_config["task"]["type"], tf_config["task"]["index"]
    timeout = float(os.environ["RINGMASTER_TIMEOUT_SECONDS"]) or None
    if args.case == "stall":
        timeout = STALL_TIMEOUT
    opts = tf.distribute.experimental.CommunicationOptions(
        bytes_per_pack=int(os.environ["RINGMASTER_BYTES_PER_PACK"]),
        timeout_seconds=timeout,
        implementation=os.environ["RINGMASTER_IMPLEMENTATION"])
    strategy = tf.distribute.MultiWorkerMirroredStrategy(communication_options=opts)
    inputs = [tf.constant(values(task_type, index, s)) for s in SHAPES]

    @tf.function
    def allreduce(xs):
        def fn(*vs):
            ctx = tf.distribute.get_replica_context()
            return ctx.all_reduce(tf.distribute.ReduceOp.SUM, [tf.identity(v) for v in vs], options=opts)
        return strategy.run(fn, args=tuple(xs))

    report = {"task": f"{task_type}:{index}", "cluster": tf_config["cluster"]}
    if args.case == "stall" and task_type == "worker" and index == 1:
        print(json.dumps(dict(report, stalled=True)), flush=True)
        time.sleep(120)  # alive but never joins: the driver ends it
        return 0
    t0 = time.monotonic()
    try:
        out = allreduce(inputs)
        report["result"] = [np.asarray(t).tolist() for t in out]
    except tf.errors.DeadlineExceededError as e:
        report["error"] = "DeadlineExceededError"
        report["message"] = str(e).splitlines()[0][:300]
    report["seconds"] = round(time.monotonic() - t0, 2)
    print(json.dumps(report), flush=True)
    # After an aborted collective TensorFlow's teardown can itself abort
    # (absl "Mutex corrupt"): the verdict is the report above, not that.
    os._exit(0)


def free_ports(n):
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def fail(msg):
    print(f"FAIL: {msg}", flush=True)
    sys.exit(1)


def run_once(args):
    """One cluster of three TensorFlow tasks -> (reports, None) or (None, crash)."""
    here = Path(__file__).resolve().parent
    job = here / "job.yaml"
    tasks = TASKS
    ports = free_ports(len(tasks))
    # Pod name (the first label of each address) -> a loopback port.
    local = {f"interop-{t}-{i}": f"127.0.0.1:{p}" for (t, i), p in zip(tasks, ports)}
    configs = {}
    for t, i in tasks:
        text = subprocess.run([args.ringmaster, "tfconfig", str(job), "--replica", f"{t}:{i}"],
                              capture_output=True, text=True, check=True).stdout.strip()
        cfg = json.loads(text)
        want_cluster = {"chief": ["interop-chief-0.interop.ml.svc:2222"],
                        "worker": ["interop-worker-0.interop.ml.svc:2222", "interop-worker-1.interop.ml.svc:2222"]}
        if cfg["cluster"] != want_cluster or cfg["task"] != {"type": t, "index": i} or cfg["environment"] != "cloud":
            fail(f"unexpected TF_CONFIG for {t}:{i}: {text}")
        # Only the addresses change: DNS names of the cluster -> loopback ports.
        for typ, addrs in cfg["cluster"].items():
            cfg["cluster"][typ] = [local[a.split(".")[0]] for a in addrs]
        configs[(t, i)] = json.dumps(cfg)

    procs = {}
    for t, i in tasks:
        env = dict(os.environ, TF_CONFIG=configs[(t, i)], RINGMASTER_IMPLEMENTATION="RING",
                   RINGMASTER_BYTES_PER_PACK="1024", RINGMASTER_TIMEOUT_SECONDS="30",
                   TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES="")
        procs[(t, i)] = subprocess.Popen([sys.executable, __file__, "--task", "--case", args.case], env=env,
                                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    reports = {}
    try:
        deadline = time.monotonic() + args.timeout
        for key, p in procs.items():
            if args.case == "stall" and key == ("worker", 1):
                continue
            try:
                out, err = p.communicate(timeout=max(1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                fail(f"{key} did not finish within {args.timeout}s (a hang)")
            lines = [l for l in out.splitlines() if l.startswith("{")]
            if not lines:
                if p.returncode == -6 and TF_ABORT_CRASH in err:
                    return None, f"{key} exited -6 inside TensorFlow's abort: {err[-3000:]}"
                fail(f"{key} exited {p.returncode}: {err[-3000:]}")
            reports[key] = json.loads(lines[-1])
    finally:
        for p in procs.values():
            if p.poll() is None:
                p.kill()
                p.wait()
    return reports, None


def driver(args):
    # TensorFlow 2.20 sometimes aborts the process inside its own collective
    # abort path ("Mutex corrupt", absl) after the deadline fired and before
    # Python sees DeadlineExceededError. That is TensorFlow's bug, not a wrong
    # answer: only that exact crash is retried, a bounded number of times.
    for attempt in range(1, ATTEMPTS + 1):
        reports, crash = run_once(args)
        if reports is not None:
            break
        print(f"attempt {attempt}: {crash.splitlines()[0]}", flush=True)
    else:
        fail(f"TensorFlow crashed in its abort path on all {ATTEMPTS} attempts: {crash}")

    if args.case == "allreduce":
        import numpy as np
        want = expected(TASKS)
        for key, r in reports.items():
            if "result" not in r:
                fail(f"{key}: no result: {r}")
            for k, (got, exp) in enumerate(zip(r["result"], want)):
                if not np.array_equal(np.asarray(got, dtype=np.float32), exp):
                    fail(f"{key}: tensor {k} differs from the exact sum")
        if args.result_file:
            Path(args.result_file).write_text(json.dumps(reports[("chief", 0)]["result"]))
        print(f"ok: 3 TensorFlow tasks formed the cluster from ringmaster's TF_CONFIG and all-reduced "
              f"{len(SHAPES)} tensors exactly")
    else:
        for key in [("chief", 0), ("worker", 0)]:
            r = reports[key]
            if r.get("error") != "DeadlineExceededError":
                fail(f"{key}: expected DeadlineExceededError, got {r}")
            if r["seconds"] > STALL_TIMEOUT + 30:
                fail(f"{key}: the timeout took {r['seconds']}s")
            print(f"ok: {key[0]}:{key[1]} raised DeadlineExceededError after {r['seconds']}s "
                  f"(timeout_seconds={STALL_TIMEOUT}): {r['message']}")
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--case", choices=["allreduce", "stall"], default="allreduce")
    p.add_argument("--task", action="store_true", help="run as one TensorFlow task (internal)")
    p.add_argument("--ringmaster", default="ringmaster")
    p.add_argument("--timeout", type=float, default=300)
    p.add_argument("--result-file")
    a = p.parse_args()
    return task_main(a) if a.task else driver(a)


if __name__ == "__main__":
    sys.exit(main())
