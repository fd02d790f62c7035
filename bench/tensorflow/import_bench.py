"""`import ringmaster.tensorflow` to its first all-reduce: the wheel's
prebuilt op against the op compiled at first import, in the same venv and
the same run, interleaved (prebuilt, compiled, prebuilt, ...).

    python bench/tensorflow/import_bench.py [--rounds 3]

Each sample is a fresh process, a group of one: `import tensorflow` (timed
apart, as it is the same for both), then `import ringmaster.tensorflow`,
`init()` and one all-reduce. "compiled" sets RINGMASTER_TF_PREBUILT=0 and an
empty op cache, so it pays the compile a pod without a baked cache pays.
Prints a Markdown table: medians, min-max, and their ratio.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "common" / "ports"))
from free_ports import free_ports  # noqa: E402  (common/ports/free_ports.py)

CHILD = r"""
import json, time
t0 = time.perf_counter()
import tensorflow as tf
t1 = time.perf_counter()
import ringmaster.tensorflow as hvd
hvd.init()
out = hvd.allreduce(tf.ones([4]), op=hvd.Sum)
assert out.numpy().tolist() == [1.0] * 4
t2 = time.perf_counter()
print(json.dumps({"tf": t1 - t0, "ours": t2 - t1, "op": hvd.op_library_path(), "version": tf.__version__}))
"""


def sample(mode: str) -> dict:
    port = free_ports(1)[0]
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES="",
               TF_CONFIG=json.dumps({"cluster": {"worker": [f"127.0.0.1:{port}"]},
                                     "task": {"type": "worker", "index": 0}}))
    if mode == "compiled":
        env["RINGMASTER_TF_PREBUILT"] = "0"
        env["RINGMASTER_TF_OPS_CACHE"] = tempfile.mkdtemp(prefix="rm-import-bench-")
    else:
        env.pop("RINGMASTER_TF_PREBUILT", None)
    p = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, timeout=900)
    if p.returncode != 0:
        raise SystemExit(f"import_bench: the {mode} sample failed:\n{p.stderr[-3000:]}")
    r = json.loads(p.stdout.strip().splitlines()[-1])
    want = "/_prebuilt/" if mode == "prebuilt" else "rm-import-bench-"
    if want not in r["op"]:
        raise SystemExit(f"import_bench: the {mode} sample loaded {r['op']}")
    return r


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    got: dict = {"prebuilt": [], "compiled": []}
    for _ in range(args.rounds):
        for mode in ("prebuilt", "compiled"):
            got[mode].append(sample(mode))
    version = got["prebuilt"][0]["version"]
    print(f"TensorFlow {version}, {args.rounds} rounds, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}\n")
    print("| path | import tensorflow (s) | import ringmaster.tensorflow to the first all-reduce (s) |")
    print("| --- | ---: | ---: |")
    med = {}
    for mode, rs in got.items():
        tf_s = [r["tf"] for r in rs]
        ours = [r["ours"] for r in rs]
        med[mode] = statistics.median(ours)
        print(f"| {mode} | {statistics.median(tf_s):.2f} ({min(tf_s):.2f}-{max(tf_s):.2f}) "
              f"| {med[mode]:.2f} ({min(ours):.2f}-{max(ours):.2f}) |")
    print(f"\nprebuilt is {med['compiled'] / med['prebuilt']:.0f}x faster to its first all-reduce")
    return 0


if __name__ == "__main__":
    sys.exit(main())
