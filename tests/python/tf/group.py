"""Starts a group of 3 ranks (chief, worker 0, worker 1) of tests/python/tf/worker.py
on 127.0.0.1 with TF_CONFIG and RINGMASTER_PORT, with a bound on everything."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, List, Optional, Tuple

HERE = Path(__file__).resolve().parent
WORKER = HERE / "worker.py"
TASKS = [("chief", 0), ("worker", 0), ("worker", 1)]

sys.path.insert(0, str(HERE.parents[2] / "common" / "ports"))
from free_ports import free_ports  # noqa: E402  (common/ports/free_ports.py)


def base_env(extra: Optional[Dict[str, str]] = None) -> Dict[str, str]:
    env = dict(os.environ)
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    env.setdefault("CUDA_VISIBLE_DEVICES", "")
    env["PYTHONUNBUFFERED"] = "1"
    env.pop("TF_CONFIG", None)
    env.pop("TF_USE_LEGACY_KERAS", None)
    env.update(extra or {})
    return env


def group_envs(extra: Optional[Dict[str, str]] = None) -> List[Dict[str, str]]:
    ports = free_ports(6)
    tf_ports, agent_ports = ports[:3], ports[3:]
    cluster = {"chief": [f"127.0.0.1:{tf_ports[0]}"],
               "worker": [f"127.0.0.1:{tf_ports[1]}", f"127.0.0.1:{tf_ports[2]}"]}
    envs = []
    for t, i in TASKS:
        env = base_env(extra)
        env["TF_CONFIG"] = json.dumps({"cluster": cluster, "task": {"type": t, "index": i},
                                       "environment": "cloud"})
        # One agent port per rank, distinct from TF_CONFIG's (TensorFlow's own server's).
        env["RINGMASTER_PORT"] = ",".join(str(p) for p in agent_ports)
        env.setdefault("RINGMASTER_FORMATION_TIMEOUT_SECONDS", "60")
        envs.append(env)
    return envs


class Result:
    def __init__(self, rank: int, returncode: Optional[int], stdout: str, stderr: str, report: Optional[dict]):
        self.rank, self.returncode, self.stdout, self.stderr, self.report = rank, returncode, stdout, stderr, report

    def __repr__(self) -> str:
        return (f"rank {self.rank}: exit {self.returncode}, report {self.report}\n"
                f"--- stderr (tail) ---\n{self.stderr[-2500:]}")


def run_group(scenario: str, outdir: Path, timeout: float = 240, extra_env: Optional[Dict[str, str]] = None,
              args: Optional[List[str]] = None, wait_ranks: Optional[List[int]] = None,
              worker: Path = WORKER) -> List[Result]:
    """Runs 3 ranks of `scenario` of `worker` (default worker.py); returns each rank's result (its last JSON
    line on stdout). Ranks not in wait_ranks (default: all) are killed once
    the waited-for ranks have finished. Any rank still running at the
    deadline is killed and the test fails with what they printed."""
    outdir.mkdir(parents=True, exist_ok=True)
    wait_ranks = list(range(3)) if wait_ranks is None else wait_ranks
    procs = []
    files = []
    try:
        for r, env in enumerate(group_envs(extra_env)):
            out = open(outdir / f"{scenario}-rank{r}.out", "w+")
            err = open(outdir / f"{scenario}-rank{r}.err", "w+")
            files += [out, err]
            procs.append((subprocess.Popen([sys.executable, str(worker), scenario, str(outdir)] + (args or []),
                                           env=env, stdout=out, stderr=err, start_new_session=True), out, err))
        deadline = time.monotonic() + timeout
        hung = []
        for r in wait_ranks:
            p = procs[r][0]
            try:
                p.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                hung.append(r)
    finally:
        for p, _, _ in procs:
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                p.wait()
    results = []
    for r, (p, out, err) in enumerate(procs):
        out.seek(0)
        err.seek(0)
        so, se = out.read(), err.read()
        lines = [l for l in so.splitlines() if l.startswith("{")]
        results.append(Result(r, p.returncode, so, se, json.loads(lines[-1]) if lines else None))
    for f in files:
        f.close()
    if hung:
        raise AssertionError(f"{scenario}: ranks {hung} did not finish within {timeout}s (a hang):\n"
                             + "\n".join(map(repr, results)))
    return results


def run_single(scenario: str, outdir: Path, timeout: float = 240, extra_env: Optional[Dict[str, str]] = None,
               args: Optional[List[str]] = None) -> subprocess.CompletedProcess:
    outdir.mkdir(parents=True, exist_ok=True)
    return subprocess.run([sys.executable, str(WORKER), scenario, str(outdir)] + (args or []),
                          env=base_env(extra_env), capture_output=True, text=True, timeout=timeout)


def ringmaster_run(job_file: str, timeout: float, cwd: Optional[Path] = None,
                   drop_env: Tuple[str, ...] = ()) -> str:
    """`ringmaster run JOB_FILE` from `cwd` (default: the repository root;
    the CLI: $RINGMASTER_CLI, else build/bin/ringmaster) with PATH led by
    this Python's bin directory, as a user with the venv activated has it,
    and without the variables in `drop_env`; its output, after asserting it
    exited 0 within `timeout` (then killed)."""
    repo = HERE.parents[2]
    cli = os.environ.get("RINGMASTER_CLI") or str(repo / "build" / "bin" / "ringmaster")
    assert os.access(cli, os.X_OK), f"the ringmaster CLI is not at {cli} (set RINGMASTER_CLI)"
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES="")
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    for name in ("RINGMASTER_PYTHON", "TF_CONFIG") + drop_env:  # RINGMASTER_PYTHON: python3 from PATH
        env.pop(name, None)
    p = subprocess.Popen([cli, "run", job_file], cwd=cwd or repo, env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        out, _ = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, _ = p.communicate()
        raise AssertionError(f"ringmaster run {job_file} did not finish in {timeout} s:\n{out[-6000:]}")
    assert p.returncode == 0, f"ringmaster run {job_file} exited {p.returncode}:\n{out[-6000:]}"
    return out


def python_job_yaml(name: str, argv: list, env: dict, backoff_limit: int = 6, run_policy: tuple = ()) -> str:
    """A chief and two workers running `argv` (this Python's program) with
    `env`, restartPolicy OnFailure: the job file of a `ringmaster run` test.
    `run_policy`: more lines of spec.runPolicy, as written under it."""
    def q(s: str) -> str:  # a JSON string is a YAML scalar; "$" doubled (kubelet expansion)
        return json.dumps(str(s).replace("$", "$$"))
    container = ["          containers:", "            - name: trainer", "              image: local",
                 "              command: [" + ", ".join(q(a) for a in argv) + "]", "              env:"]
    for k, v in env.items():
        container += [f"                - name: {k}", f"                  value: {q(v)}"]
    lines = ["apiVersion: ringmaster.io/v1alpha1", "kind: DistributedJob", "metadata:", f"  name: {name}",
             "spec:", "  communication:", "    timeoutSeconds: 60", "  runPolicy:",
             f"    backoffLimit: {backoff_limit}"] + [f"    {line}" for line in run_policy] + ["  replicaSpecs:"]
    for rtype, n in (("Chief", 1), ("Worker", 2)):
        lines += [f"    {rtype}:", f"      replicas: {n}", "      restartPolicy: OnFailure", "      template:",
                  "        spec:"] + container
    return "\n".join(lines) + "\n"

