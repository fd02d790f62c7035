#!/usr/bin/env python3
"""Runs N members of one command as a Ringmaster job, as `horovodrun -np N`
does for Horovod's tests.

    launch.py -n N [--chief] [--timeout-seconds S] [--wall-timeout W]
              [--env K=V ...] [--cwd DIR] [--print-job] -- COMMAND ARGS...

writes a DistributedJob (N Worker replicas, or a Chief and N-1 workers with
--chief; restartPolicy Never, backoffLimit 0, successPolicy AllWorkers,
communication.timeoutSeconds S) whose container runs

    sh -c 'exec "${RINGMASTER_PYTHON:-python3}" launch.py --member -- "$@"' sh COMMAND ARGS...

and runs `ringmaster run` on it (the CLI from $RINGMASTER_CLI, else the
repository's build/bin/ringmaster). The exit status is ringmaster run's (124
when the wall-clock bound --wall-timeout ran out and the run was stopped).

`--member` (inside the job) exports what horovodrun's Gloo launcher exports,
computed from TF_CONFIG (rank order: chief, then workers by index):
HOROVOD_RANK, HOROVOD_SIZE, HOROVOD_LOCAL_RANK, HOROVOD_LOCAL_SIZE,
HOROVOD_CROSS_RANK, HOROVOD_CROSS_SIZE and HOROVOD_HOSTNAME (one host: local
= global, cross rank 0 of 1), then execs COMMAND. A first word `python` or
`python3` becomes $RINGMASTER_PYTHON: `ringmaster run` puts the build's bin
directory first on PATH and a ctest has no venv activated, so a bare
`python` would not be the interpreter the caller meant. The launcher sets
RINGMASTER_PYTHON to its own interpreter unless the caller set it.

As a library: `run(command, n, ...)` returns a Result (returncode, output,
timed_out); `by_replica(output)` splits the prefixed lines per replica.
"""
from __future__ import annotations

import argparse
import json
import os
import shlex
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Mapping, Optional, Sequence, TextIO

HERE = Path(__file__).resolve()
REPO = HERE.parents[3]
EXIT_WALL_TIMEOUT = 124

__all__ = ["Result", "run", "job_yaml", "member_env", "by_replica", "replica_names", "cli_path"]


# ---------------------------------------------------------------- the member

def member_env(tf_config: str) -> Dict[str, str]:
    """The HOROVOD_* variables horovodrun's Gloo launcher sets, for the task
    that TF_CONFIG names (ranks: chief, then workers by index)."""
    cfg = json.loads(tf_config)
    cluster = cfg.get("cluster") or {}
    task = cfg.get("task") or {}
    chiefs = list(cluster.get("chief") or cluster.get("master") or [])
    workers = list(cluster.get("worker") or [])
    ttype, index = str(task.get("type", "")).lower(), int(task.get("index", 0))
    if ttype in ("chief", "master"):
        rank = index
    elif ttype == "worker":
        rank = len(chiefs) + index
    else:
        raise ValueError(f"TF_CONFIG task {ttype}:{index} is not a member of the collective group "
                         "(only chief and workers are)")
    size = len(chiefs) + len(workers)
    if not 0 <= rank < size:
        raise ValueError(f"TF_CONFIG task {ttype}:{index} is not in its cluster ({size} members)")
    return {
        "HOROVOD_HOSTNAME": "127.0.0.1",
        "HOROVOD_RANK": str(rank),
        "HOROVOD_SIZE": str(size),
        "HOROVOD_LOCAL_RANK": str(rank),
        "HOROVOD_LOCAL_SIZE": str(size),
        "HOROVOD_CROSS_RANK": "0",
        "HOROVOD_CROSS_SIZE": "1",
    }


def member_main(command: Sequence[str]) -> int:
    if not command:
        print("launch.py --member: no COMMAND", file=sys.stderr)
        return 2
    tf_config = os.environ.get("TF_CONFIG")
    if not tf_config:
        print("launch.py --member: TF_CONFIG is not set (run it inside a Ringmaster job)", file=sys.stderr)
        return 2
    try:
        os.environ.update(member_env(tf_config))
    except (ValueError, TypeError) as e:
        print(f"launch.py --member: {e}", file=sys.stderr)
        return 2
    argv = list(command)
    if argv[0] in ("python", "python3"):
        argv[0] = os.environ.get("RINGMASTER_PYTHON") or sys.executable
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        os.execvp(argv[0], argv)
    except OSError as e:
        print(f"launch.py --member: cannot run {argv[0]}: {e}", file=sys.stderr)
        return 127
    return 127  # not reached


# ---------------------------------------------------------------- the job

def _q(value: str) -> str:
    # A JSON string is a YAML double-quoted scalar. "$" is doubled: the
    # kubelet (and ringmaster run) expand $(VAR) in command, args and env
    # values, and turn "$$" into "$".
    return json.dumps(value.replace("$", "$$"))


def job_yaml(command: Sequence[str], n: int, chief: bool = False, timeout_seconds: int = 120,
             env: Optional[Mapping[str, str]] = None, name: str = "horovod-launch",
             launcher: Optional[str] = None) -> str:
    """The DistributedJob running `command` on n members."""
    if n < 1:
        raise ValueError(f"-n must be >= 1, got {n}")
    if not command:
        raise ValueError("no COMMAND")
    launcher = launcher or str(HERE)
    argv = ["sh", "-c", 'exec "${RINGMASTER_PYTHON:-python3}" "$0" --member -- "$@"', launcher, *command]
    lines = [
        "apiVersion: ringmaster.io/v1alpha1",
        "kind: DistributedJob",
        "metadata:",
        f"  name: {name}",
        "spec:",
        "  successPolicy: AllWorkers",
        "  communication:",
        f"    timeoutSeconds: {int(timeout_seconds)}",
        "  runPolicy:",
        "    backoffLimit: 0",
        "  replicaSpecs:",
    ]
    specs = [("Chief", 1), ("Worker", n - 1)] if chief else [("Worker", n)]
    for rtype, count in specs:
        if count <= 0:
            continue
        lines += [
            f"    {rtype}:",
            f"      replicas: {count}",
            "      restartPolicy: Never",
            "      template:",
            "        spec:",
            "          containers:",
            "            - name: member",
            "              image: local",
            "              command:",
        ]
        lines += [f"                - {_q(a)}" for a in argv]
        if env:
            lines.append("              env:")
            for k, v in env.items():
                lines += [f"                - name: {json.dumps(k)}", f"                  value: {_q(v)}"]
    return "\n".join(lines) + "\n"


def cli_path() -> str:
    return os.environ.get("RINGMASTER_CLI") or str(REPO / "build" / "bin" / "ringmaster")


@dataclass
class Result:
    returncode: int
    output: str                # ringmaster run's stdout and stderr, as written
    timed_out: bool = False    # the wall-clock bound ran out: the run was stopped
    seconds: float = 0.0
    job: str = ""              # the job file's text

    def by_replica(self) -> Dict[str, List[str]]:
        return by_replica(self.output)


def replica_names(n: int, chief: bool = False) -> List[str]:
    """Replica names in rank order (the output prefixes without brackets)."""
    return (["chief-0"] + [f"worker-{i}" for i in range(n - 1)]) if chief else [f"worker-{i}" for i in range(n)]


def by_replica(output: str) -> Dict[str, List[str]]:
    """Output lines per prefix ("worker-1", "chief-0", "ringmaster"), prefix removed."""
    out: Dict[str, List[str]] = {}
    for line in output.splitlines():
        if line.startswith("[") and "] " in line:
            name, rest = line[1:].split("] ", 1)
            out.setdefault(name, []).append(rest)
        elif line.startswith("[") and line.endswith("]"):
            out.setdefault(line[1:-1], []).append("")
    return out


def _stop(proc: subprocess.Popen, grace: float) -> None:
    """SIGTERM to ringmaster run (it stops its replicas: SIGTERM, SIGKILL
    after its grace period), then SIGKILL to its whole process group."""
    if proc.poll() is not None:
        return
    try:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait()


def run(command: Sequence[str], n: int, chief: bool = False, timeout_seconds: int = 120,
        env: Optional[Mapping[str, str]] = None, wall_timeout: Optional[float] = None,
        cwd: Optional[str] = None, cli: Optional[str] = None, echo: Optional[TextIO] = None,
        grace_period: int = 5, name: str = "horovod-launch") -> Result:
    """Runs `command` on n members under `ringmaster run`; returns its exit
    code and output (each line prefixed with its replica, [worker-1]).
    wall_timeout bounds the whole run (default: 10 min + the collective
    timeout): past it ringmaster run is stopped and the result has
    timed_out and returncode 124. echo: a stream the lines are copied to as
    they come."""
    container_env = dict(env or {})
    for k, v in (("PYTHONUNBUFFERED", "1"), ("TF_CPP_MIN_LOG_LEVEL", "2")):
        if k not in os.environ:
            container_env.setdefault(k, v)
    if not os.environ.get("RINGMASTER_PYTHON"):
        container_env.setdefault("RINGMASTER_PYTHON", sys.executable)
    text = job_yaml(command, n, chief=chief, timeout_seconds=timeout_seconds, env=container_env, name=name)
    cli = cli or cli_path()
    if not os.access(cli, os.X_OK):
        raise FileNotFoundError(f"no ringmaster CLI at {cli} (build it, or set RINGMASTER_CLI)")
    wall = float(wall_timeout) if wall_timeout else 600.0 + timeout_seconds
    with tempfile.TemporaryDirectory(prefix="rm-launch-") as tmp:
        job_file = Path(tmp) / "job.yaml"
        job_file.write_text(text)
        started = time.monotonic()
        proc = subprocess.Popen([cli, "run", str(job_file), "--grace-period", str(grace_period)],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                cwd=cwd, start_new_session=True)
        chunks: List[str] = []

        def pump() -> None:
            assert proc.stdout is not None
            for raw in iter(proc.stdout.readline, b""):
                line = raw.decode("utf-8", "replace")
                chunks.append(line)
                if echo is not None:
                    echo.write(line)
                    echo.flush()

        reader = threading.Thread(target=pump, daemon=True)
        reader.start()
        timed_out = False
        try:
            proc.wait(timeout=wall)
        except subprocess.TimeoutExpired:
            timed_out = True
            msg = f"[launch] wall-clock bound of {wall:g}s ran out: stopping ringmaster run\n"
            chunks.append(msg)
            if echo is not None:
                echo.write(msg)
            _stop(proc, grace=2 * grace_period + 10)
        except BaseException:
            _stop(proc, grace=2 * grace_period + 10)
            raise
        reader.join(timeout=10)
        rc = EXIT_WALL_TIMEOUT if timed_out else proc.returncode
        return Result(rc, "".join(chunks), timed_out, time.monotonic() - started, text)


# ---------------------------------------------------------------- the CLI

SKIPPED = 77  # ctest's SKIP_RETURN_CODE for the device tests


def skip_without_gpu() -> Optional[int]:
    """With RINGMASTER_TEST_SKIP_WITHOUT_GPU set: SKIPPED when this Python's
    TensorFlow sees no GPU (so ctest reports the device cases as not run,
    not as passed), an error's exit code when the probe itself fails, else
    None (go on)."""
    probe = subprocess.run(
        [sys.executable, "-c",
         "import sys, tensorflow as tf; sys.exit(0 if tf.config.list_physical_devices('GPU') else 77)"],
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True, check=False)
    if probe.returncode == 0:
        return None
    if probe.returncode == 77:
        print("launch.py: TensorFlow sees no GPU here: the device cases are skipped (docs/gpu.md)")
        return SKIPPED
    print(f"launch.py: probing TensorFlow for a GPU failed (exit {probe.returncode}):\n{probe.stdout[-2000:]}",
          file=sys.stderr)
    return probe.returncode


def main(argv: Optional[Sequence[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--" in argv:
        cut = argv.index("--")
        opts, command = argv[:cut], argv[cut + 1:]
    else:
        opts, command = argv, []
    if opts[:1] == ["--member"]:
        return member_main(command)
    p = argparse.ArgumentParser(prog="launch.py", description=__doc__.split("\n\n")[0],
                                usage="launch.py -n N [options] -- COMMAND ARGS...")
    p.add_argument("-n", "--np", dest="n", type=int, required=True, help="members (ranks)")
    p.add_argument("--chief", action="store_true", help="a Chief and N-1 workers (default: N workers)")
    p.add_argument("--timeout-seconds", type=int, default=120,
                   help="communication.timeoutSeconds: a collective stuck this long fails (default 120)")
    p.add_argument("--wall-timeout", type=float, default=None,
                   help="bound on the whole run in seconds (default 600 + the collective timeout); "
                        "past it the run is stopped and the exit status is 124")
    p.add_argument("--env", action="append", default=[], metavar="K=V", help="set in every member")
    p.add_argument("--cwd", default=None, help="the members' working directory (default: this one)")
    p.add_argument("--print-job", action="store_true", help="print the job file and exit")
    a = p.parse_args(opts)
    if not command:
        p.error("no COMMAND: launch.py -n N -- COMMAND ARGS...")
    env = {}
    for kv in a.env:
        if "=" not in kv:
            p.error(f"--env {kv}: not K=V")
        k, v = kv.split("=", 1)
        env[k] = v
    if a.print_job:
        sys.stdout.write(job_yaml(command, a.n, chief=a.chief, timeout_seconds=a.timeout_seconds, env=env))
        return 0
    if os.environ.get("RINGMASTER_TEST_SKIP_WITHOUT_GPU"):
        skip = skip_without_gpu()
        if skip is not None:
            return skip
    try:
        res = run(command, a.n, chief=a.chief, timeout_seconds=a.timeout_seconds, env=env,
                  wall_timeout=a.wall_timeout, cwd=a.cwd, echo=sys.stdout)
    except FileNotFoundError as e:
        print(f"launch.py: {e}", file=sys.stderr)
        return 127
    return res.returncode


if __name__ == "__main__":
    sys.exit(main())
