"""The wheel's prebuilt TensorFlow op, in a venv whose TensorFlow it carries
one for, with no compiler to fall back on (CXX names none). Run by ctest
(python_tf_prebuilt_*) with the venv's python:

    python prebuilt_check.py EXPECTED_MINOR [--refuse]

Checks that `import ringmaster.tensorflow` loads the package's
_prebuilt/tf-EXPECTED_MINOR op (no file appears in the op build cache),
and that a group of two member processes all-reduces through it with
Horovod's names. With
--refuse: with the prebuilt ops turned off (RINGMASTER_TF_PREBUILT=0) and
no compiler, the import fails with an error naming the prebuilt releases.
Prints one JSON line; exit status 0 when every check held.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile

NO_COMPILER = "/nonexistent/ringmaster-test/g++"


def child(expected: str) -> dict:
    import tensorflow as tf

    import ringmaster.tensorflow as hvd

    out = {"tf": tf.__version__, "op": hvd.op_library_path()}
    hvd.init()
    out["rank"], out["size"] = hvd.rank(), hvd.size()
    s = hvd.allreduce(tf.constant([1.0, 2.0, 3.0]) * (hvd.rank() + 1), op=hvd.Sum)
    g = hvd.grouped_allreduce([tf.constant([hvd.rank()], tf.int64), tf.ones([4, 4])], op=hvd.Average)
    out["sum"] = s.numpy().tolist()
    out["grouped"] = [g[0].numpy().tolist(), float(g[1].numpy().sum())]
    hvd.shutdown()
    return out


def run_group(expected: str, cache: str) -> list:
    """Two members of a group on 127.0.0.1, through TF_CONFIG."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "common", "ports"))
    from free_ports import free_ports  # common/ports/free_ports.py

    ports = free_ports(2)
    cluster = {"worker": [f"127.0.0.1:{p}" for p in ports]}
    procs = []
    for i in range(2):
        env = dict(os.environ, CXX=NO_COMPILER, RINGMASTER_TF_OPS_CACHE=cache, TF_CPP_MIN_LOG_LEVEL="2",
                   CUDA_VISIBLE_DEVICES="", RINGMASTER_TIMEOUT_SECONDS="60",
                   TF_CONFIG=json.dumps({"cluster": cluster, "task": {"type": "worker", "index": i}}))
        env.pop("RINGMASTER_TF_PREBUILT", None)
        procs.append(subprocess.Popen([sys.executable, __file__, expected, "--child"], env=env,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    results = []
    for p in procs:
        try:
            stdout, stderr = p.communicate(timeout=240)
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            raise SystemExit("prebuilt_check: a member did not finish in 240 s")
        if p.returncode != 0:
            raise SystemExit(f"prebuilt_check: a member failed (exit {p.returncode}):\n{stderr[-3000:]}")
        results.append(json.loads(stdout.strip().splitlines()[-1]))
    return results


def main() -> int:
    expected = sys.argv[1]
    if "--child" in sys.argv:
        print(json.dumps(child(expected)), flush=True)
        return 0
    failures = []
    if "--refuse" in sys.argv:
        env = dict(os.environ, CXX=NO_COMPILER, RINGMASTER_TF_PREBUILT="0", TF_CPP_MIN_LOG_LEVEL="2",
                   RINGMASTER_TF_OPS_CACHE=tempfile.mkdtemp(prefix="rm-tf-ops-"))
        p = subprocess.run([sys.executable, "-c", "import ringmaster.tensorflow"], env=env, capture_output=True,
                           text=True, timeout=240)
        err = p.stderr
        if p.returncode == 0:
            failures.append("the import succeeded with the prebuilt ops off and no compiler")
        for want in ("OpBuildError", "is turned off (RINGMASTER_TF_PREBUILT=0)", "prebuilt: 2.16, 2.21",
                     "no C++ compiler", NO_COMPILER):
            if want not in err:
                failures.append(f"the error does not say {want!r}: {err[-1500:]}")
        print(json.dumps({"refused": p.returncode != 0, "failures": failures}))
        return 1 if failures else 0
    cache = tempfile.mkdtemp(prefix="rm-tf-ops-")
    results = run_group(expected, cache)
    for r in results:
        if f"/_prebuilt/tf-{expected}/ringmaster_ops.so" not in r["op"]:
            failures.append(f"rank {r['rank']} loaded {r['op']}, not the prebuilt op for {expected}")
        if not r["tf"].startswith(expected + "."):
            failures.append(f"rank {r['rank']} runs TensorFlow {r['tf']}, not {expected}")
        if r["sum"] != [3.0, 6.0, 9.0]:
            failures.append(f"rank {r['rank']}: allreduce gave {r['sum']}, want [3.0, 6.0, 9.0]")
        if r["grouped"] != [[0], 16.0]:
            failures.append(f"rank {r['rank']}: grouped_allreduce gave {r['grouped']}, want [[0], 16.0]")
    if sorted((r["rank"], r["size"]) for r in results) != [(0, 2), (1, 2)]:
        failures.append(f"ranks and sizes: {[(r['rank'], r['size']) for r in results]}")
    if os.listdir(cache):
        failures.append(f"something was built into the op cache: {os.listdir(cache)}")
    print(json.dumps({"members": results, "failures": failures}))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
