"""Runs groups of worker processes (worker.py) on 127.0.0.1.

Each member gets TF_CONFIG (workers 0..n-1) and RINGMASTER_PORT as a comma
list, one agent port per member, distinct from the TF_CONFIG ports (which
stay free, as TensorFlow's server would take them). Every wait is bounded;
children are killed whatever happens.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
WORKER = os.path.join(HERE, "worker.py")

# The finder only: the package under test is the installed one, never the tree's.
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "common", "ports"))
from free_ports import free_ports  # noqa: E402  (common/ports/free_ports.py)


@dataclass
class Member:
    rank: int
    proc: subprocess.Popen
    stdout: str = ""
    stderr: str = ""
    result: Optional[dict] = None
    events: List[str] = field(default_factory=list)

    def describe(self) -> str:
        return (f"--- rank {self.rank} rc={self.proc.returncode}\n"
                f"stdout:\n{self.stdout}\nstderr:\n{self.stderr[-4000:]}")


class Group:
    def __init__(self, scenario: str, n: int = 3, ranks: Optional[List[int]] = None,
                 env: Optional[Dict[str, str]] = None) -> None:
        ports = free_ports(2 * n)
        tf_ports, agent_ports = ports[:n], ports[n:]
        cluster = {"worker": [f"127.0.0.1:{p}" for p in tf_ports]}
        self.members: List[Member] = []
        base = dict(os.environ)
        base.pop("PYTHONPATH", None)  # the installed package, never the source tree
        base.update({
            "RINGMASTER_PORT": ",".join(str(p) for p in agent_ports),
            "RINGMASTER_FORMATION_TIMEOUT_SECONDS": "30",
            "PYTHONUNBUFFERED": "1",
        })
        base.update(env or {})
        for rank in (range(n) if ranks is None else ranks):
            e = dict(base)
            e["TF_CONFIG"] = json.dumps({"cluster": cluster, "task": {"type": "worker", "index": rank}})
            proc = subprocess.Popen([sys.executable, WORKER, scenario, str(rank), str(n)], env=e,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                    start_new_session=True)
            self.members.append(Member(rank, proc))

    def kill(self) -> None:
        for m in self.members:
            if m.proc.poll() is None:
                try:
                    os.killpg(m.proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass

    def wait_line(self, rank: int, text: str, timeout: float) -> None:
        """Reads rank's stdout until a line equal to `text` (bounded)."""
        m = next(m for m in self.members if m.rank == rank)
        fd = m.proc.stdout.fileno()
        deadline = time.monotonic() + timeout
        buf = b""
        while time.monotonic() < deadline:
            ready, _, _ = select.select([fd], [], [], 0.1)
            if ready:
                chunk = os.read(fd, 65536)  # the raw pipe: no text-layer buffering
                if not chunk:
                    break  # exited
                buf += chunk
                if text in buf.decode(errors="replace").splitlines():
                    m.stdout += buf.decode(errors="replace")
                    return
        m.stdout += buf.decode(errors="replace")
        self.kill()
        self.finish(10)
        pytest.fail(f"rank {rank} never printed {text!r}\n" + self.report())

    def finish(self, timeout: float) -> List[Member]:
        deadline = time.monotonic() + timeout
        timed_out = False
        for m in self.members:
            try:
                out, err = m.proc.communicate(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                timed_out = True
                self.kill()
                out, err = m.proc.communicate(timeout=10)
            m.stdout += out or ""
            m.stderr += err or ""
            for line in m.stdout.splitlines():
                if line.startswith("RESULT "):
                    m.result = json.loads(line[len("RESULT "):])
        if timed_out:
            pytest.fail(f"group timed out after {timeout}s\n" + self.report())
        return self.members

    def expect_ok(self, timeout: float = 120) -> List[Member]:
        """Waits for every member; fails unless each exited 0 with ok results."""
        members = self.finish(timeout)
        bad = [m for m in members
               if m.proc.returncode != 0 or m.result is None or not m.result.get("ok")]
        if bad:
            pytest.fail("members failed:\n" + self.report())
        return members

    def report(self) -> str:
        return "\n".join(m.describe() for m in self.members)


@pytest.fixture
def run_group() -> Callable[..., Group]:
    """run_group(scenario, n=3, ranks=None, env=None) -> Group; killed at teardown."""
    groups: List[Group] = []

    def start(*args, **kwargs) -> Group:
        g = Group(*args, **kwargs)
        groups.append(g)
        return g

    yield start
    for g in groups:
        g.kill()

