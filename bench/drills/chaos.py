#!/usr/bin/env python3
"""Recovery chaos drill: random SIGKILLs of a running job's members.

Each run starts `ringmaster run` on a job of a chief and workers running
`ringmaster-worker` (synthetic gradients, every element of every step
verified) with `runPolicy.recovery: InPlace` (or also an elastic size), and
kills members with SIGKILL at random times, as the OOM killer or a lost node
would. What a run does is drawn from its seed:

  single   one member (the chief included) killed once
  double   two kills, the second 0-1 s after the first (the same member or
           another: a second failure during the recovery from the first)
  rejoin   a member killed, then its new incarnation killed again while it
           joins (0-0.5 s after it started)

A run ends in one of:

  succeeded  the job succeeded, every member's steps verified
  failed     the job failed with a verdict naming the culprit (the verdict is
             counted by its first words)
  unnamed    the job failed with no verdict
  wrong      a member printed a wrong result (never acceptable)
  hung       the job made no end of its own: it ran into its
             activeDeadlineSeconds (--deadline), or `ringmaster run` was
             still running a minute after it (never acceptable; the log is
             kept)

Usage:
  bench/drills/chaos.py build/bin/ringmaster [--runs N] [--seed S]
      [--mode inplace|elastic|both] [--workers W] [--steps K]
      [--deadline SECONDS] [--rejoin SECONDS] [--logs DIR] [--csv FILE]

Exit status: 0 when no run hung, printed a wrong result or failed without a
verdict; 1 otherwise (each such run's whole log is kept under --logs).
"""
from __future__ import annotations

import argparse
import collections
import csv
import os
import random
import re
import select
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

STARTED = re.compile(r"^\[ringmaster\] (\S+): started pid (\d+)")
VERDICT = re.compile(r"^\[ringmaster\] verdict: (.*)$")
SUMMARY = re.compile(r"^\[ringmaster\] job \S+: (Succeeded|Failed|Interrupted)(?: \((\w+):)?")
VERIFIED = re.compile(r"^\[(\S+)\] ringmaster-worker .*: (\d+) steps verified")


def job_yaml(name: str, workers: int, steps: int, elastic: bool, rejoin_s: float, timeout_s: int,
             deadline_s: int, worker: str | None, quiet: bool = True) -> str:
    """The drill's job: a chief and `workers` workers, recovery in place.

    With `worker` (a path), its program runs as local processes under
    `ringmaster run`; without, the job is for pods on the testbed's real node
    (the worker image's own program, chaos_pods.py)."""
    elastic_block = ""
    if elastic:
        elastic_block = f"""
    elastic:
      minWorkers: {max(1, workers - 1)}
      rejoinTimeoutSeconds: {rejoin_s}"""
    if worker:
        pod_lines, container_lines, policy_lines = "", f"""
              command: ["{worker}"]""", ""
    else:
        pod_lines = """
          nodeSelector: {ringmaster.io/node: real}
          tolerations: [{key: ringmaster.io/real-node, operator: Exists, effect: NoSchedule}]
          terminationGracePeriodSeconds: 1"""
        container_lines = """
              imagePullPolicy: Never"""
        policy_lines = """
    cleanPodPolicy: None"""
    quiet_arg = ', "--quiet"' if quiet else ""

    def spec(kind: str, replicas: int) -> str:
        return f"""    {kind}:
      replicas: {replicas}
      restartPolicy: OnFailure
      template:
        spec:{pod_lines}
          containers:
            - name: trainer
              image: ghcr.io/ringmaster/worker:0.1.0{container_lines}
              args: ["--model", "4x250000", "--steps", "{steps}"{quiet_arg}]
              env:
                - name: RINGMASTER_FORMATION_TIMEOUT_SECONDS
                  value: "{timeout_s}"
"""

    return f"""apiVersion: ringmaster.io/v1alpha1
kind: DistributedJob
metadata:
  name: {name}
spec:
  communication:
    timeoutSeconds: {timeout_s}
  runPolicy:
    backoffLimit: 10{policy_lines}
    activeDeadlineSeconds: {deadline_s}
    recovery: InPlace{elastic_block}
  replicaSpecs:
{spec("Chief", 1)}{spec("Worker", workers)}"""


@dataclass
class Plan:
    scenario: str
    first_at: float  # seconds after the job started
    kills: list[tuple[float, str]] = field(default_factory=list)  # (delay, target) after the first


def draw_plan(rng: random.Random, members: list[str], span_s: float) -> Plan:
    scenario = rng.choice(["single", "double", "rejoin"])
    first = rng.choice(members)
    plan = Plan(scenario, rng.uniform(0.3, span_s))
    plan.kills.append((0.0, first))
    if scenario == "double":
        plan.kills.append((rng.uniform(0.0, 1.0), rng.choice(members)))
    elif scenario == "rejoin":
        plan.kills.append((rng.uniform(0.0, 0.5), first + "@next"))
    return plan


@dataclass
class Outcome:
    kind: str
    verdict: str
    seconds: float
    kills: list[str]


def run_once(ringmaster: str, job: Path, plan: Plan, hang_after: float, log: Path) -> Outcome:
    """Runs the job, carries out the plan, classifies the end."""
    start = time.monotonic()
    proc = subprocess.Popen([ringmaster, "run", str(job)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True)
    assert proc.stdout is not None
    os.set_blocking(proc.stdout.fileno(), False)
    pids: dict[str, int] = {}  # replica -> latest pid
    starts: dict[str, list[float]] = collections.defaultdict(list)
    lines: list[tuple[float, str]] = []  # (seconds since the start, the line)
    partial = b""
    done_kills: list[str] = []
    pending = list(plan.kills)
    first_at: float | None = None  # monotonic time of the first kill
    starts_at_kill: dict[str, int] = {}  # replica -> its starts when it was killed

    def kill(target: str, now: float) -> None:
        replica = target.split("@")[0]
        starts_at_kill[replica] = len(starts[replica])
        pid = pids.get(replica)
        if pid is None:
            done_kills.append(f"{target}:no-pid")
            return
        try:
            os.kill(pid, signal.SIGKILL)
            done_kills.append(f"{replica}(pid {pid})@{now - start:.2f}s")
        except ProcessLookupError:
            done_kills.append(f"{replica}(pid {pid}, gone)@{now - start:.2f}s")

    hung = False
    while True:
        now = time.monotonic()
        if now - start > hang_after:
            hung = True
            break
        # Kills that are due.
        if pending:
            delay, target = pending[0]
            if target.endswith("@next"):
                replica = target.split("@")[0]
                want = starts_at_kill.get(replica, len(starts[replica])) + 1
                if len(starts[replica]) >= want and now >= starts[replica][want - 1] + delay:
                    kill(target, now)
                    pending.pop(0)
                elif first_at is not None and now - first_at > 30:
                    done_kills.append(f"{target}:never-restarted")
                    pending.pop(0)
            elif first_at is None and now - start >= plan.first_at:
                kill(target, now)
                first_at = now
                pending.pop(0)
            elif first_at is not None and now >= first_at + delay:
                kill(target, now)
                pending.pop(0)
        r, _, _ = select.select([proc.stdout], [], [], 0.02)
        if r:
            chunk = proc.stdout.read() or b""
            if not chunk and proc.poll() is not None:
                break
            partial += chunk
            *complete, partial = partial.split(b"\n")
            for raw in complete:
                line = raw.decode(errors="replace")
                lines.append((time.monotonic() - start, line))
                m = STARTED.match(line)
                if m:
                    pids[m.group(1)] = int(m.group(2))
                    starts[m.group(1)].append(time.monotonic())
        elif proc.poll() is not None:
            rest = proc.stdout.read() or b""
            for raw in (partial + rest).split(b"\n"):
                if raw:
                    lines.append((time.monotonic() - start, raw.decode(errors="replace")))
            break
    seconds = time.monotonic() - start
    if hung:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    text = [ln for _, ln in lines]
    log.write_text("".join(f"{t:8.3f} {ln}\n" for t, ln in lines))
    if hung:
        return Outcome("hung", "", seconds, done_kills)
    if any("WRONG RESULT" in ln for ln in text):
        return Outcome("wrong", "", seconds, done_kills)
    m = next((m for ln in text if (m := SUMMARY.match(ln.strip()))), None)
    summary, reason = (m.group(1), m.group(2) or "") if m else ("", "")
    if proc.returncode == 0 and summary == "Succeeded":
        return Outcome("succeeded", "", seconds, done_kills)
    if reason == "DeadlineExceeded":  # the job's own deadline ended a job that did not end itself
        return Outcome("hung", "activeDeadlineSeconds passed", seconds, done_kills)
    verdict = next((m.group(1) for ln in text if (m := VERDICT.match(ln.strip()))), "")
    if not verdict:
        return Outcome("unnamed", f"exit {proc.returncode}, {summary or 'no summary'}", seconds, done_kills)
    return Outcome("failed", verdict, seconds, done_kills)


def verdict_kind(verdict: str) -> str:
    """A verdict's gist for counting: its status code and first words."""
    m = re.search(r"(Unavailable|Aborted|DeadlineExceeded|FailedPrecondition|Internal|\w+Error)[:]?(.*)",
                  verdict)
    if not m:
        return verdict[:60]
    words = re.sub(r"/job:\w+/task:\d+", "TASK", m.group(2)).strip().split()
    return m.group(1) + ": " + " ".join(words[:6])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("ringmaster", help="the ringmaster program (build/bin/ringmaster)")
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--mode", choices=["inplace", "elastic", "both"], default="both")
    ap.add_argument("--workers", type=int, default=3)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--span", type=float, default=3.0, help="the first kill falls in [0.3, SPAN] s")
    ap.add_argument("--deadline", type=int, default=150, help="the job's activeDeadlineSeconds")
    ap.add_argument("--rejoin", type=float, default=0.5,
                    help="elastic runs' rejoinTimeoutSeconds (shorter than a restart: the group runs shrunk)")
    ap.add_argument("--formation-timeout", type=int, default=30)
    ap.add_argument("--logs", type=Path, default=None, help="keep every run's log here")
    ap.add_argument("--csv", type=Path, default=None)
    args = ap.parse_args()

    ringmaster = os.path.abspath(args.ringmaster)
    worker = os.path.join(os.path.dirname(ringmaster), "ringmaster-worker")
    if not os.access(worker, os.X_OK):
        print(f"chaos: {worker} is not there (build ringmaster-worker)", file=sys.stderr)
        return 2
    logs = args.logs or Path(tempfile.mkdtemp(prefix="ringmaster-chaos-"))
    logs.mkdir(parents=True, exist_ok=True)
    members = ["chief-0"] + [f"worker-{i}" for i in range(args.workers)]
    modes = ["inplace", "elastic"] if args.mode == "both" else [args.mode]
    counts: collections.Counter[str] = collections.Counter()
    verdicts: collections.Counter[str] = collections.Counter()
    rows = []
    bad = 0
    with tempfile.TemporaryDirectory(prefix="ringmaster-chaos-jobs-") as tmp:
        for i in range(args.runs):
            mode = modes[i % len(modes)]
            rng = random.Random(args.seed * 100003 + i)
            plan = draw_plan(rng, members, args.span)
            job = Path(tmp) / f"chaos-{i}.yaml"
            job.write_text(job_yaml(f"chaos-{i}", args.workers, args.steps, mode == "elastic", args.rejoin,
                                    args.formation_timeout, args.deadline, worker))
            log = logs / f"run-{args.seed}-{i}.log"
            out = run_once(ringmaster, job, plan, args.deadline + 60, log)
            counts[(mode, out.kind)] += 1
            if out.kind == "failed":
                verdicts[(mode, verdict_kind(out.verdict))] += 1
            if out.kind in ("hung", "wrong", "unnamed"):
                bad += 1
            else:
                log.unlink() if not args.logs else None
            print(f"run {i:3d} {mode:8s} {plan.scenario:7s} {out.kind:10s} {out.seconds:6.1f}s "
                  f"kills: {', '.join(out.kills) or '-'}"
                  + (f"  verdict: {out.verdict}" if out.verdict else "")
                  + (f"  (log: {log})" if out.kind in ("hung", "wrong", "unnamed") else ""),
                  flush=True)
            rows.append([i, mode, plan.scenario, out.kind, f"{out.seconds:.1f}", ";".join(out.kills),
                         out.verdict])
    if args.csv:
        with open(args.csv, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["run", "mode", "scenario", "outcome", "seconds", "kills", "verdict"])
            w.writerows(rows)
    print("\nchaos: outcome counts")
    for mode in modes:
        row = ", ".join(f"{k} {counts[(mode, k)]}" for k in ("succeeded", "failed", "unnamed", "wrong", "hung"))
        print(f"  {mode:8s} {row}")
    for (mode, v), n in sorted(verdicts.items()):
        print(f"  {mode:8s} failed with '{v}': {n}")
    passed = args.runs - bad
    print(f"chaos: {passed} passed, {bad} failed")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
