"""TensorFlow and Ringmaster's agent in the same processes.

Three tasks on 127.0.0.1, each a real Python process with TensorFlow:
- TensorFlow (and grpcio, serving) imported before `import ringmaster`: a
  libringmaster whose gRPC bound to TensorFlow's exported copy crashed every
  non-leader here;
- the other order;
- MultiWorkerMirroredStrategy's server on the TF_CONFIG port and our group
  in the same three processes, with no RINGMASTER_PORT (the default beside
  TensorFlow's server), both all-reducing;
- an agent pointed at the port TensorFlow's server holds fails at once with
  "address already in use", naming the port and RINGMASTER_PORT.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from typing import Dict, List, Optional

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
WORKER = os.path.join(HERE, "coexist_worker.py")
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "common", "ports"))
from free_ports import free_ports, port_is_free  # noqa: E402  (common/ports/free_ports.py)

N = 3
LIMIT = 180  # bounds a hang; never a performance gate


def _ports(count: int) -> List[int]:
    """`count` free ports such that the first one's successor is free too
    and not among them (the agent's default port beside the leader's)."""
    for _ in range(50):
        ports = free_ports(count)
        if ports[0] + 1 not in ports and ports[0] < 65535 and port_is_free(ports[0] + 1):
            return ports
    raise RuntimeError("no suitable free ports")


def run_group(scenario: str, agent_ports: Optional[str]) -> List[Dict]:
    tf_ports = _ports(N)
    cluster = {"worker": [f"127.0.0.1:{p}" for p in tf_ports]}
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    env.pop("RINGMASTER_PORT", None)
    env["RINGMASTER_FORMATION_TIMEOUT_SECONDS"] = "120"
    if agent_ports == "tf":
        env["RINGMASTER_PORT"] = ",".join(str(p) for p in tf_ports)
    procs = []
    for i in range(N):
        e = dict(env, TF_CONFIG=json.dumps({"cluster": cluster, "task": {"type": "worker", "index": i}}))
        procs.append(subprocess.Popen([sys.executable, WORKER, scenario], env=e, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True, start_new_session=True))
    outs = []
    try:
        for p in procs:
            out, err = p.communicate(timeout=LIMIT)
            outs.append((p.returncode, out, err))
    except subprocess.TimeoutExpired:
        pass
    finally:
        for p in procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
    if len(outs) < N:
        for p in procs[len(outs):]:
            out, err = p.communicate(timeout=30)
            outs.append((p.returncode, out, err))
        pytest.fail(f"{scenario}: a task did not finish within {LIMIT}s\n" + _report(outs))
    results = []
    for i, (rc, out, err) in enumerate(outs):
        lines = [l for l in out.splitlines() if l.startswith("RESULT ")]
        if rc != 0 or not lines:
            how = f"killed by signal {-rc}" if rc < 0 else f"exit code {rc}"
            pytest.fail(f"{scenario}: task {i} failed ({how})\n" + _report(outs))
        results.append(json.loads(lines[-1][len("RESULT "):]))
    return results


def _report(outs) -> str:
    return "\n".join(f"--- task {i} rc={rc}\n{out}\n{err[-3000:]}" for i, (rc, out, err) in enumerate(outs))


@pytest.mark.parametrize("scenario", ["tf_first", "ringmaster_first"])
def test_import_order(scenario: str) -> None:
    # With TensorFlow's gRPC, grpcio's and ours in each process, and our
    # TensorFlow op library loaded too.
    for r in run_group(scenario, agent_ports=None):
        assert r["ours"] == 6.0  # 1 + 2 + 3
        assert r["op"] == 6.0
        assert r["grpc"] == "ping" and r["grpc_after"] == "ping"
        assert r["tf"] == 4.0


def test_mwms_server_and_our_group_side_by_side() -> None:
    for r in run_group("mwms", agent_ports=None):
        assert r["ours"] == 6.0 and r["ours_again"] == 6.0
        assert r["tf"] == 6.0  # TensorFlow's own all-reduce, same processes


def test_port_taken_by_tensorflow_names_port_and_setting() -> None:
    for r in run_group("port_taken", agent_ports="tf"):
        msg = r["error"]
        assert "address already in use" in msg, msg
        assert "RINGMASTER_PORT" in msg, msg
        assert "on port " in msg, msg
