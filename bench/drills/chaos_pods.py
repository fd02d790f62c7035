#!/usr/bin/env python3
"""The recovery chaos drill in pods, on the testbed's real node.

The same plans as chaos.py (drawn by its `draw_plan` from the same seed):
one member killed (the chief included), two kills 0-1 s apart, or a member
and then its replacement while it joins. Here the job is a DistributedJob of
a chief and workers running `ringmaster-worker` in the worker image, with
`runPolicy.recovery: InPlace` (half the runs also elastic), reconciled by
the operator binary given, run on the host. A kill is a SIGKILL from the
host to the container's process (found with `ctr task ls`): what the OOM
killer or a lost node does. A replacement is the operator's new pod of the
same name.

A run ends in one of (as in chaos.py):

  succeeded  the job's state is Succeeded
  failed     Failed, with a condition message naming the culprit
  unnamed    Failed with no verdict in its message
  wrong      a member printed a wrong result (never acceptable)
  hung       no end within activeDeadlineSeconds + 60 s, or the job's own
             deadline ended it (never acceptable)

Every container's output is read from the kubelet's pod-logs directory while
it runs (a deleted pod's logs go with it), and kept for runs that did not
pass.

  scripts/testbed up && scripts/testbed exec scripts/images load worker
  scripts/testbed exec python3 bench/drills/chaos_pods.py build/bin/ringmaster-operator \
      [--runs 30] [--seed S] [--mode inplace|elastic|both] [--logs DIR] [--csv FILE]

Exit status: 0 when no run hung, printed a wrong result or failed without a
verdict; 1 otherwise.
"""
from __future__ import annotations

import argparse
import collections
import csv
import json
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from chaos import Plan, draw_plan, job_yaml, verdict_kind  # noqa: E402  (the same plans, jobs, counting)

REPO = Path(__file__).resolve().parents[2]


def kubectl(*args: str, input: str | None = None, check: bool = True) -> str:
    p = subprocess.run(["kubectl", "--request-timeout=30s", *args], input=input, capture_output=True, text=True)
    if check and p.returncode != 0:
        raise RuntimeError(f"kubectl {' '.join(args)}: {p.stderr.strip()}")
    return p.stdout


class Node:
    """The real node's containers, from containerd (ctr) and the kubelet's pod-logs directory."""

    def __init__(self, namespace: str) -> None:
        self.address = os.environ["RINGMASTER_CONTAINERD_ADDRESS"]
        self.pod_logs = Path(os.environ["RINGMASTER_TESTBED_DIR"]) / "node" / "pod-logs"
        self.namespace = namespace
        self.labels: dict[str, dict[str, str]] = {}  # container id -> its labels (asked once)

    def ctr(self, *args: str) -> str:
        return subprocess.run(["ctr", "--address", self.address, "-n", "k8s.io", *args], capture_output=True,
                              text=True, check=True).stdout

    def tasks(self, job: str) -> list[tuple[str, str, int]]:
        """(pod name, container id, pid) of the job's running trainer containers."""
        out = []
        for line in self.ctr("task", "ls").splitlines()[1:]:
            parts = line.split()
            if len(parts) < 3 or parts[2] != "RUNNING":
                continue
            cid, pid = parts[0], int(parts[1])
            if cid not in self.labels:
                try:
                    info = json.loads(self.ctr("containers", "info", cid))
                except (subprocess.CalledProcessError, json.JSONDecodeError):
                    continue
                self.labels[cid] = info.get("Labels") or {}
            lb = self.labels[cid]
            if (lb.get("io.kubernetes.pod.namespace") == self.namespace
                    and lb.get("io.kubernetes.container.name") == "trainer"
                    and lb.get("io.kubernetes.pod.name", "").startswith(job + "-")):
                out.append((lb["io.kubernetes.pod.name"], cid, pid))
        return out


class LogTail:
    """Reads what the job's containers wrote, file by file, as it grows."""

    def __init__(self, root: Path, namespace: str, job: str) -> None:
        self.glob = f"{namespace}_{job}-*/trainer/*.log"
        self.root = root
        self.offsets: dict[Path, int] = {}
        self.lines: list[str] = []

    def poll(self) -> None:
        for f in sorted(self.root.glob(self.glob)):
            try:
                with open(f, "rb") as fh:
                    fh.seek(self.offsets.get(f, 0))
                    data = fh.read()
            except FileNotFoundError:
                continue
            cut = data.rfind(b"\n") + 1
            if not cut:
                continue
            self.offsets[f] = self.offsets.get(f, 0) + cut
            pod = f.parts[-3].split("_")[1]
            for raw in data[:cut].splitlines():
                # CRI log format: TIME STREAM P|F TEXT
                parts = raw.decode(errors="replace").split(" ", 3)
                self.lines.append(f"{parts[0] if parts else ''} [{pod}] {parts[3] if len(parts) > 3 else ''}")


@dataclass
class Outcome:
    kind: str
    verdict: str
    seconds: float
    kills: list[str] = field(default_factory=list)


def run_once(node: Node, ns: str, name: str, yaml: str, plan: Plan, members: list[str], hang_after: float,
             log: Path) -> Outcome:
    kubectl("-n", ns, "apply", "-f", "-", input=yaml)
    tail = LogTail(node.pod_logs, ns, name)
    start = time.monotonic()
    pods = [f"{name}-{m}" for m in members]
    seen: dict[str, list[tuple[str, int, float]]] = collections.defaultdict(list)  # pod -> (cid, pid, seen at)
    running_at: float | None = None
    first_at: float | None = None
    pending = list(plan.kills)
    kills: list[str] = []
    incarnation_at_kill: dict[str, int] = {}
    state, message = "", ""
    last_status = 0.0

    def kill(target: str, now: float) -> None:
        pod = f"{name}-{target.split('@')[0]}"
        incarnation_at_kill[pod] = len(seen[pod])
        if not seen[pod]:
            kills.append(f"{target}:no-container")
            return
        cid, pid, _ = seen[pod][-1]
        try:
            os.kill(pid, signal.SIGKILL)
            kills.append(f"{target.split('@')[0]}#{len(seen[pod])}(pid {pid})@{now - start:.2f}s")
        except ProcessLookupError:
            kills.append(f"{target.split('@')[0]}#{len(seen[pod])}(pid {pid}, gone)@{now - start:.2f}s")

    while True:
        now = time.monotonic()
        if now - start > hang_after:
            break
        for pod, cid, pid in node.tasks(name):
            if not seen[pod] or seen[pod][-1][0] != cid:
                seen[pod].append((cid, pid, now))
        if running_at is None and all(seen[p] for p in pods):
            running_at = now
        if pending and running_at is not None:
            delay, target = pending[0]
            if target.endswith("@next"):
                pod = f"{name}-{target.split('@')[0]}"
                want = incarnation_at_kill.get(pod, len(seen[pod])) + 1
                if len(seen[pod]) >= want and now >= seen[pod][want - 1][2] + delay:
                    kill(target, now)
                    pending.pop(0)
                elif first_at is not None and now - first_at > 60:
                    kills.append(f"{target}:never-replaced")
                    pending.pop(0)
            elif first_at is None and now - running_at >= plan.first_at:
                kill(target, now)
                first_at = now
                pending.pop(0)
            elif first_at is not None and now >= first_at + delay:
                kill(target, now)
                pending.pop(0)
        if now - last_status > 0.5:
            last_status = now
            tail.poll()
            st = json.loads(kubectl("-n", ns, "get", "djob", name, "-o", "json")).get("status") or {}
            state = st.get("state", "")
            if state in ("Succeeded", "Failed"):
                conds = {c.get("type"): c for c in st.get("conditions", [])}
                c = conds.get(state, {})
                message = f"{c.get('reason', '')}: {c.get('message', '')}"
                break
        time.sleep(0.05)
    seconds = time.monotonic() - start
    time.sleep(1)  # the last lines of the last containers
    tail.poll()
    log.write_text(f"plan: {plan}\nkills: {kills}\nstate: {state} {message}\n" + "\n".join(tail.lines) + "\n")
    kubectl("-n", ns, "delete", "djob", name, "--wait=false", check=False)
    if any("WRONG RESULT" in ln for ln in tail.lines):
        return Outcome("wrong", "", seconds, kills)
    if state == "Succeeded":
        return Outcome("succeeded", "", seconds, kills)
    if state != "Failed" or message.startswith("DeadlineExceeded"):
        return Outcome("hung", message, seconds, kills)
    # A verdict names a member: a condition message with a task or replica in it.
    if not re.search(r"/job:\w+/task:\d+|\b(chief|worker)[- ]\d+", message, re.IGNORECASE):
        return Outcome("unnamed", message, seconds, kills)
    return Outcome("failed", message, seconds, kills)


def wait_gone(ns: str, job: str, seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if not kubectl("-n", ns, "get", "pods", "-l", f"ringmaster.io/job-name={job}", "-o", "name",
                       check=False).strip():
            return
        time.sleep(0.5)
    raise RuntimeError(f"job {job}'s pods still there after {seconds:.0f} s")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("operator", help="the ringmaster-operator program (build/bin/ringmaster-operator)")
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--mode", choices=["inplace", "elastic", "both"], default="both")
    ap.add_argument("--workers", type=int, default=3)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--span", type=float, default=3.0, help="the first kill falls in [0.3, SPAN] s after all run")
    ap.add_argument("--deadline", type=int, default=150, help="the job's activeDeadlineSeconds")
    ap.add_argument("--rejoin", type=float, default=3.0, help="elastic runs' rejoinTimeoutSeconds")
    ap.add_argument("--formation-timeout", type=int, default=30)
    ap.add_argument("--namespace", default="rm-chaos-pods")
    ap.add_argument("--verbose", action="store_true", help="the workers print every step (kept in the logs)")
    ap.add_argument("--logs", type=Path, default=None, help="keep every run's log here")
    ap.add_argument("--csv", type=Path, default=None)
    args = ap.parse_args()
    # A SIGTERM ends the drill through its `finally`: the operator stopped, the namespace deleted.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    for var in ("KUBECONFIG", "RINGMASTER_CONTAINERD_ADDRESS", "RINGMASTER_TESTBED_DIR"):
        if not os.environ.get(var):
            print(f"chaos_pods: {var} is not set: run under `scripts/testbed exec`", file=sys.stderr)
            return 2
    ns = args.namespace
    kubectl("apply", "-f", str(REPO / "manifests"))
    # manifests/' Deployment would run a second operator beside ours.
    kubectl("-n", "ringmaster-system", "delete", "deployment", "ringmaster-operator", "--ignore-not-found")
    kubectl("wait", "--for=condition=Established", "--timeout=60s", "crd/distributedjobs.ringmaster.io")
    kubectl("create", "namespace", ns, check=False)
    logs = args.logs or Path(tempfile.mkdtemp(prefix="ringmaster-chaos-pods-"))
    logs.mkdir(parents=True, exist_ok=True)
    oplog = open(logs / "operator.log", "ab")
    op = subprocess.Popen([os.path.abspath(args.operator), "--kubeconfig", os.environ["KUBECONFIG"], "--namespace", ns,
                           "--leader-elect=false", "--identity", "chaos", "--metrics-address", "127.0.0.1:0",
                           "--health-probe-address", "127.0.0.1:0", "--resync-seconds", "30"],
                          stdout=oplog, stderr=subprocess.STDOUT)
    node = Node(ns)
    members = ["chief-0"] + [f"worker-{i}" for i in range(args.workers)]
    modes = ["inplace", "elastic"] if args.mode == "both" else [args.mode]
    counts: collections.Counter[tuple[str, str]] = collections.Counter()
    verdicts: collections.Counter[tuple[str, str]] = collections.Counter()
    rows, bad = [], 0
    try:
        for i in range(args.runs):
            mode = modes[i % len(modes)]
            plan = draw_plan(random.Random(args.seed * 100003 + i), members, args.span)
            name = f"chaos-{args.seed}-{i}"
            yaml = job_yaml(name, args.workers, args.steps, mode == "elastic", args.rejoin,
                            args.formation_timeout, args.deadline, None, quiet=not args.verbose)
            log = logs / f"run-{args.seed}-{i}.log"
            out = run_once(node, ns, name, yaml, plan, members, args.deadline + 60, log)
            counts[(mode, out.kind)] += 1
            if out.kind == "failed":
                verdicts[(mode, verdict_kind(out.verdict))] += 1
            if out.kind in ("hung", "wrong", "unnamed"):
                bad += 1
            elif not args.logs:
                log.unlink()
            print(f"run {i:3d} {mode:8s} {plan.scenario:7s} {out.kind:10s} {out.seconds:6.1f}s "
                  f"kills: {', '.join(out.kills) or '-'}"
                  + (f"  verdict: {out.verdict}" if out.verdict else "")
                  + (f"  (log: {log})" if out.kind in ("hung", "wrong", "unnamed") else ""), flush=True)
            rows.append([i, mode, plan.scenario, out.kind, f"{out.seconds:.1f}", ";".join(out.kills), out.verdict])
            wait_gone(ns, name, 120)
    finally:
        op.terminate()
        try:
            op.wait(timeout=10)
        except subprocess.TimeoutExpired:
            op.kill()
        kubectl("delete", "namespace", ns, "--wait=false", check=False)
    if args.csv:
        with open(args.csv, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["run", "mode", "scenario", "outcome", "seconds", "kills", "verdict"])
            w.writerows(rows)
    print("\nchaos_pods: outcome counts")
    for mode in modes:
        print(f"  {mode:8s} " + ", ".join(f"{k} {counts[(mode, k)]}"
                                          for k in ("succeeded", "failed", "unnamed", "wrong", "hung")))
    for (mode, v), n in sorted(verdicts.items()):
        print(f"  {mode:8s} failed with '{v}': {n}")
    print(f"chaos_pods: {args.runs - bad} passed, {bad} failed")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
