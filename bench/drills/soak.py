#!/usr/bin/env python3
"""The operator's fault soak: jobs of both kinds under control-plane faults.

N jobs, DistributedJobs and Kubeflow TFJobs in turn, run on the testbed's
kwok nodes and, --real of them at a time, on its real node (kubelet and
containerd: real pods, whose kubelet meets the same faults), reconciled by
two `ringmaster-operator` replicas under leader election (with --tfjob),
while faults are injected at random times:

  apiserver   the kube-apiserver restarted (scripts/testbed restart-apiserver):
              watches resumed from an older resourceVersion get 410 Gone
  etcd        etcd SIGKILLed, away 1-3 s, started again on its data
              (scripts/testbed restart-etcd)
  compact     etcd's history compacted to its head (scripts/testbed
              compact-etcd), as the API server's own compaction does
  operator    the operator that holds the Lease SIGKILLed and a new replica
              started, so that the lease moves to the standby

and, all along, the operators reach the API server through a proxy of the
drill's own (api_proxy.py) that answers --conflicts of their job updates
with 409 Conflict and holds --slow of their requests for 0.5-3 s.

A replica that exits because it lost its lease (the API server was away
longer than its renew deadline: it stops, as controller-runtime's managers
do) is started again, as its Deployment's kubelet would; any other exit of
an operator fails the drill. --jobs jobs run at once; while faults remain,
a new job replaces each that ended, so that faults keep meeting jobs in
flight.

Meanwhile each job's pods fail as its plan says, one at a time: a worker
exits 137 (restartPolicy ExitCode: the pod is recreated, the job's
restartCount goes up by one), and at the end every pod exits 0 (the job
must be Succeeded) or, for one job in four, a worker exits 3 (the job must
be Failed, reason ReplicaFailed for a DistributedJob, TFJobFailed for a
TFJob). A kwok pod "exits" by a patch of its status (scripts/testbed
pod-exit); a real pod's container is told through `kubectl exec` the code
to exit with, and exits. A failure is injected only once the one before
it is counted and the job's pods are Running again.

When every job has ended, the drill checks, job by job:

  state       the end state its pods dictate
  restarts    restartCount equal to the failures injected into it
  events      one restart event per failure (event counts summed), one
              end event (JobSucceeded/TFJobSucceeded or the failure's)
  objects     pods and Services as many as the job's replicas (a
              DistributedJob has one Service, a TFJob one per replica), each
              owned by its job; none in the namespace owned by nothing
  nodes       a real job's pods bound to the real node, the others' to kwok
              nodes
  memory      each operator's peak resident memory (VmHWM) under --max-rss

and, once the jobs are deleted, that no pod or Service is left.

  scripts/testbed up
  scripts/images build && scripts/testbed exec scripts/images load   # for --real
  scripts/testbed exec python3 bench/drills/soak.py build/bin/ringmaster-operator \\
      [--jobs 6] [--real 2] [--faults 20] [--seed S] [--workers 2] [--conflicts P] [--slow P] [--logs DIR]

Exit status 0 when every check held; 1 otherwise (the operators' logs are
then kept under --logs).
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from api_proxy import ApiProxy  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
FAULTS = ("apiserver", "etcd", "compact", "operator")
LEASE = "soak-lease"
IMAGE = "ghcr.io/ringmaster/worker:0.1.0"
REAL_NODE = os.environ.get("RINGMASTER_REAL_NODE", "ringmaster-real-0")
# A real pod's container: it runs until told, through `kubectl exec`, the code to exit with (EXIT_FILE).
EXIT_FILE = "/tmp/ringmaster-soak-exit"
REAL_COMMAND = ["sh", "-c", f"trap 'exit 143' TERM; until [ -f {EXIT_FILE} ]; do sleep 0.2; done; "
                f"exit \"$(cat {EXIT_FILE})\""]


def kubectl(*args: str, input: str | None = None, check: bool = True, timeout: float = 30) -> str:
    p = subprocess.run(["kubectl", f"--request-timeout={int(timeout)}s", *args], input=input,
                       capture_output=True, text=True)
    if check and p.returncode != 0:
        raise RuntimeError(f"kubectl {' '.join(args)}: {p.stderr.strip()}")
    return p.stdout


def until_ok(what: str, fn, seconds: float = 120):
    """fn() retried while the control plane is away (a fault in flight)."""
    end = time.monotonic() + seconds
    while True:
        try:
            return fn()
        except (RuntimeError, subprocess.SubprocessError, json.JSONDecodeError) as e:
            if time.monotonic() > end:
                raise RuntimeError(f"{what}: still failing after {seconds:.0f}s: {e}") from e
            time.sleep(0.5)


def get_json(ns: str, *what: str) -> dict:
    return json.loads(kubectl("-n", ns, "get", *what, "-o", "json"))


@dataclass
class Job:
    kind: str  # DistributedJob | TFJob
    name: str
    workers: int
    failures: int  # exits 137 to inject
    ends_failed: bool  # the last exit is 3, not 0 for all
    real: bool = False  # its pods on the real node, not on kwok's
    injected: int = 0
    failed_uids: set[str] = field(default_factory=set)
    ending: bool = False
    next_at: float | None = None  # when its next failure (or end) is due
    created_at: float = 0.0
    ended_at: float | None = None
    problems: list[str] = field(default_factory=list)

    @property
    def resource(self) -> str:
        return "djob" if self.kind == "DistributedJob" else "tfjob"

    def manifest(self) -> str:
        tf = self.kind == "TFJob"
        api, specs, container = ("kubeflow.org/v1", "tfReplicaSpecs", "tensorflow") if tf else \
            ("ringmaster.io/v1alpha1", "replicaSpecs", "trainer")
        if self.real:
            pod = {"nodeSelector": {"ringmaster.io/node": "real"}, "terminationGracePeriodSeconds": 5,
                   "tolerations": [{"key": "ringmaster.io/real-node", "operator": "Exists", "effect": "NoSchedule"}],
                   "containers": [{"name": container, "image": IMAGE, "command": REAL_COMMAND,
                                   "env": [{"name": "POD_UID", "valueFrom": {"fieldRef": {"fieldPath": "metadata.uid"}}}]}]}
        else:
            pod = {"containers": [{"name": container, "image": IMAGE, "command": ["ringmaster-worker"]}]}
        return f"""apiVersion: {api}
kind: {self.kind}
metadata: {{name: {self.name}}}
spec:
  runPolicy: {{backoffLimit: 100, cleanPodPolicy: None}}
  {specs}:
    Worker:
      replicas: {self.workers}
      restartPolicy: ExitCode
      template: {{spec: {json.dumps(pod)}}}
"""

    def label(self) -> str:
        key = "ringmaster.io/job-name" if self.kind == "DistributedJob" else "training.kubeflow.org/job-name"
        return f"{key}={self.name}"


def job_view(ns: str, job: Job) -> tuple[str, int, str]:
    """(end state or "", restartCount, reason of the end condition) as the operator wrote them."""
    obj = get_json(ns, job.resource, job.name)
    st = obj.get("status") or {}
    conds = {c.get("type"): c for c in st.get("conditions") or []}
    if job.kind == "DistributedJob":
        state, restarts = st.get("state", ""), int(st.get("restartCount") or 0)
    else:
        state = next((t for t in ("Succeeded", "Failed") if conds.get(t, {}).get("status") == "True"), "")
        ann = (obj["metadata"].get("annotations") or {}).get("status.ringmaster.io/state") or "{}"
        restarts = int(json.loads(ann).get("restartCount") or 0)
    reason = conds.get(state, {}).get("reason", "") if state else ""
    return (state if state in ("Succeeded", "Failed") else "", restarts, reason)


class Operators:
    """Two replicas under leader election; the leader can be SIGKILLed and replaced."""

    def __init__(self, binary: str, kubeconfig: str, ns: str, logs: Path, lease_s: int) -> None:
        self.binary, self.kubeconfig, self.ns, self.logs, self.lease_s = binary, kubeconfig, ns, logs, lease_s
        self.procs: dict[str, subprocess.Popen] = {}
        self.peak_kib: dict[str, int] = {}
        self.started = 0
        self.lease_lost = 0  # exits after a lost lease, restarted
        self.lock = threading.Lock()

    def start(self, name: str | None = None) -> str:
        with self.lock:
            self.started += 1
            name = name or f"op-{self.started}"
            out = open(self.logs / f"{name}.log", "ab")
            self.procs[name] = subprocess.Popen(
                [self.binary, "--kubeconfig", self.kubeconfig, "--namespace", self.ns,
                 "--leader-election-namespace", self.ns, "--identity", name, "--leader-election-id", LEASE,
                 "--lease-duration", str(self.lease_s), "--renew-deadline", str(self.lease_s * 3 // 4),
                 "--retry-period", "2", "--tfjob",
                 "--metrics-address", "127.0.0.1:0", "--health-probe-address", "127.0.0.1:0",
                 "--resync-seconds", "30"], stdout=out, stderr=subprocess.STDOUT)
            return name

    def sample(self) -> None:
        with self.lock:
            for name, p in self.procs.items():
                try:
                    for line in Path(f"/proc/{p.pid}/status").read_text().splitlines():
                        if line.startswith("VmHWM:"):
                            self.peak_kib[name] = max(self.peak_kib.get(name, 0), int(line.split()[1]))
                except (FileNotFoundError, ProcessLookupError):
                    pass

    def kill_leader(self) -> str | None:
        """None when the Lease names no live replica (its killed holder's lease has not run out yet)."""
        holder = until_ok("read the Lease", lambda: kubectl(
            "-n", self.ns, "get", "lease", LEASE, "-o", "jsonpath={.spec.holderIdentity}").strip())
        self.sample()
        with self.lock:
            p = self.procs.pop(holder, None)
        if p is None:
            return None
        p.send_signal(signal.SIGKILL)
        p.wait()
        return f"{holder} SIGKILLed, {self.start()} started"

    def reap(self) -> list[str]:
        """Restarts, as the kubelet would, a replica that exited because it lost its lease (the leader
        exits then, as controller-runtime's do); any other exit is a problem, returned."""
        problems = []
        with self.lock:
            gone = [(n, p) for n, p in self.procs.items() if p.poll() is not None]
        for name, p in gone:
            tail = (self.logs / f"{name}.log").read_text(errors="replace").splitlines()[-5:]
            if p.returncode == 1 and any('"lost the leader lease"' in line for line in tail):
                self.lease_lost += 1
                with self.lock:
                    del self.procs[name]
                self.start(name)
            else:
                problems.append(f"{name} exited with {p.returncode}: {tail[-1] if tail else ''}")
                with self.lock:
                    del self.procs[name]
        return problems

    def stop(self) -> None:
        self.sample()
        with self.lock:
            for p in self.procs.values():
                p.send_signal(signal.SIGTERM)
            for p in self.procs.values():
                try:
                    p.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()


class Injector(threading.Thread):
    """Control-plane faults at random intervals until `count` are done or told to stop."""

    def __init__(self, rng: random.Random, count: int, gap: tuple[float, float], ops: Operators) -> None:
        super().__init__(daemon=True)
        self.rng, self.count, self.gap, self.ops = rng, count, gap, ops
        self.done: list[tuple[float, str, str]] = []
        self.error: str | None = None
        self.halt = threading.Event()
        self.t0 = time.monotonic()

    def run(self) -> None:
        testbed = os.environ["RINGMASTER_TESTBED"]
        try:
            while len(self.done) < self.count and not self.halt.wait(self.rng.uniform(*self.gap)):
                kind = self.rng.choice(FAULTS)
                if kind == "operator":
                    what = self.ops.kill_leader()
                    if what is None:
                        continue  # no leader to kill yet: another draw
                else:
                    args = {"apiserver": ["restart-apiserver"], "compact": ["compact-etcd"],
                            "etcd": ["restart-etcd", f"{self.rng.uniform(1, 3):.1f}"]}[kind]
                    p = subprocess.run([testbed, *args], capture_output=True, text=True, timeout=180)
                    if p.returncode != 0:
                        raise RuntimeError(f"scripts/testbed {' '.join(args)}: {p.stderr.strip()}")
                    what = p.stderr.strip().splitlines()[-1] if p.stderr.strip() else ""
                self.done.append((time.monotonic() - self.t0, kind, what))
                self.ops.sample()
        except Exception as e:  # noqa: BLE001  (reported by the main thread)
            self.error = f"{type(e).__name__}: {e}"


def wrong_node(job: Job, pod: dict) -> str | None:
    """Why the pod is not where its job runs (a real job on the real node, any other on kwok's), or None."""
    node = (pod.get("spec") or {}).get("nodeName") or ""
    if not node or (node == REAL_NODE) == job.real:
        return None
    return f"pod {pod['metadata']['name']} on node '{node}', want {REAL_NODE if job.real else 'a kwok node'}"


def pod_exit(ns: str, job: Job, pod: dict, code: int) -> None:
    """Ends a pod with an exit code: a kwok pod's status patched, a real pod's container told to exit. A real
    pod is told only while it is the pod drawn (its uid): a retry after a reply lost to a fault must not end
    the pod the operator made in its place."""
    name, uid = pod["metadata"]["name"], pod["metadata"]["uid"]
    if job.real:
        script = f'if [ "$POD_UID" = {uid} ]; then echo {code} > {EXIT_FILE}; fi'
        cmd = ["kubectl", "--request-timeout=30s", "-n", ns, "exec", name, "--", "sh", "-c", script]
    else:
        cmd = [os.environ["RINGMASTER_TESTBED"], "pod-exit", ns, name, str(code)]

    def once() -> None:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        if p.returncode != 0:
            raise RuntimeError(p.stderr.strip())
    until_ok(f"end {name} with {code}", once)


def step(ns: str, job: Job, rng: random.Random, now: float, pause: float) -> None:
    """One look at a job: its next failure, 0-pause s after the last is counted and its pods run again."""
    state, restarts, _ = job_view(ns, job)
    if state or job.ending:
        if state and job.ended_at is None:
            job.ended_at = now
        return
    if restarts > job.injected:
        job.problems.append(f"restartCount {restarts} after {job.injected} failure(s)")
    pods = get_json(ns, "pods", "-l", job.label())["items"]
    misplaced = [w for p in pods if (w := wrong_node(job, p))]
    if misplaced:
        job.problems += misplaced
        return
    live = [p for p in pods if p["metadata"]["uid"] not in job.failed_uids
            and not p["metadata"].get("deletionTimestamp") and (p.get("status") or {}).get("phase") == "Running"]
    if len(live) != job.workers or restarts < job.injected:
        return
    if job.next_at is None:
        job.next_at = now + rng.uniform(0, pause)
    if now < job.next_at:
        return
    job.next_at = None
    if job.injected < job.failures:
        pod = rng.choice(live)
        job.failed_uids.add(pod["metadata"]["uid"])
        pod_exit(ns, job, pod, 137)
        job.injected += 1
    else:
        job.ending = True
        if job.ends_failed:
            pod_exit(ns, job, rng.choice(live), 3)
        else:
            for p in live:
                pod_exit(ns, job, p, 0)


def event_counts(ns: str) -> dict[tuple[str, str], int]:
    """(involved object's name, reason) -> occurrences (an event's count or series count)."""
    out: dict[tuple[str, str], int] = collections.Counter()
    for e in get_json(ns, "events")["items"]:
        n = (e.get("series") or {}).get("count") or e.get("count") or 1
        out[(e["involvedObject"].get("name", ""), e.get("reason", ""))] += int(n)
    return out


def check(ns: str, jobs: list[Job], ops: Operators, max_rss_mib: int) -> list[str]:
    problems: list[str] = []
    events = event_counts(ns)
    uids: dict[str, str] = {}
    by_name = {job.name: job for job in jobs}
    for job in jobs:
        obj = get_json(ns, job.resource, job.name)
        uids[obj["metadata"]["uid"]] = job.name
        state, restarts, reason = job_view(ns, job)
        want = "Failed" if job.ends_failed else "Succeeded"
        tf = job.kind == "TFJob"
        if state != want:
            job.problems.append(f"state '{state}', want {want}")
        if want == "Failed" and reason != ("TFJobFailed" if tf else "ReplicaFailed"):
            job.problems.append(f"Failed with reason '{reason}'")
        if restarts != job.injected:
            job.problems.append(f"restartCount {restarts}, want {job.injected} (the failures injected)")
        restarting = events[(job.name, "TFJobRestarting" if tf else "JobRestarting")]
        if restarting != job.injected:
            job.problems.append(f"{restarting} restart event(s) for {job.injected} failure(s)")
        end_reason = ("TFJobSucceeded" if tf else "JobSucceeded") if want == "Succeeded" else \
            ("TFJobFailed" if tf else "ReplicaFailed")
        if events[(job.name, end_reason)] != 1:
            job.problems.append(f"{events[(job.name, end_reason)]} {end_reason} event(s), want 1")
    for kind, per_job in (("pods", lambda j: j.workers), ("services", lambda j: j.workers if j.kind == "TFJob" else 1)):
        owned: dict[str, int] = collections.Counter()
        for o in get_json(ns, kind)["items"]:
            refs = [r for r in o["metadata"].get("ownerReferences") or [] if r.get("controller")]
            job = uids.get(refs[0]["uid"]) if refs else None
            if job is None:
                problems.append(f"{kind[:-1]} {o['metadata']['name']} is owned by no job of the drill")
                continue
            owned[job] += 1
            if kind == "pods" and (why := wrong_node(by_name[job], o)):
                by_name[job].problems.append(why)
        for job in jobs:
            if owned[job.name] != per_job(job):
                job.problems.append(f"{owned[job.name]} {kind}, want {per_job(job)}")
    ops.sample()
    for name, kib in sorted(ops.peak_kib.items()):
        if kib > max_rss_mib * 1024:
            problems.append(f"operator {name}: peak resident memory {kib // 1024} MiB over --max-rss {max_rss_mib}")
    for job in jobs:
        problems += [f"{job.kind} {job.name}: {p}" for p in job.problems]
    return problems


def api_endpoint(kubeconfig: str) -> tuple[str, int]:
    """The API server's host and port, from the testbed's kubeconfig."""
    for line in Path(kubeconfig).read_text().splitlines():
        line = line.strip()
        if line.startswith("server: https://"):
            host, _, port = line.removeprefix("server: https://").rstrip("/").rpartition(":")
            return host, int(port)
    raise RuntimeError(f"{kubeconfig}: no 'server: https://HOST:PORT' line")


def proxied_kubeconfig(kubeconfig: str, port: int, where: Path) -> str:
    """A copy of the kubeconfig whose server is the proxy (whose certificate is the API server's)."""
    out = where / "proxied.kubeconfig"
    out.write_text("\n".join(f"    server: https://127.0.0.1:{port}" if line.strip().startswith("server: ")
                             else line for line in Path(kubeconfig).read_text().splitlines()) + "\n")
    return str(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("operator", help="the ringmaster-operator binary")
    ap.add_argument("--jobs", type=int, default=4,
                    help="jobs at once, both kinds in turn; while faults remain, a new job replaces each that "
                         "ended (default 4)")
    ap.add_argument("--faults", type=int, default=20, help="control-plane faults to inject (default 20)")
    ap.add_argument("--real", type=int, default=0,
                    help="of those, how many run on the testbed's real node at a time, both kinds in turn (its "
                         "worker image imported: scripts/images load; default 0)")
    ap.add_argument("--failures", type=int, default=3, help="most member failures per job (default 3)")
    ap.add_argument("--workers", type=int, default=2, help="workers per job (default 2)")
    ap.add_argument("--pause", type=float, default=4.0,
                    help="most seconds between a job's failures, drawn uniformly (default 4)")
    ap.add_argument("--gap", type=float, nargs=2, default=(2.0, 6.0), metavar=("MIN", "MAX"),
                    help="seconds between faults, drawn uniformly (default 2 6)")
    ap.add_argument("--lease", type=int, default=20,
                    help="the Lease's duration in seconds; the renew deadline is 3/4 of it (default 20: an API "
                         "server restart of about 14 s here is mostly survived, so the watches resume and meet "
                         "410 Gone)")
    ap.add_argument("--conflicts", type=float, default=0.05,
                    help="share of the operators' job updates the proxy answers 409 Conflict (default 0.05)")
    ap.add_argument("--slow", type=float, default=0.05,
                    help="share of the operators' requests the proxy holds for 0.5-3 s (default 0.05)")
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--deadline", type=float, default=900, help="seconds for the whole soak (default 900)")
    ap.add_argument("--max-rss", type=int, default=256, help="MiB an operator may peak at (default 256)")
    ap.add_argument("--logs", default=None,
                    help="where to keep the operators' logs (default: a new directory, only when a check fails)")
    a = ap.parse_args()
    for flag, value, least in (("--jobs", a.jobs, 1), ("--faults", a.faults, 0), ("--failures", a.failures, 0),
                               ("--workers", a.workers, 1), ("--lease", a.lease, 4), ("--real", a.real, 0)):
        if value < least:
            ap.error(f"{flag} must be at least {least}, not {value}")
    for flag, value in (("--conflicts", a.conflicts), ("--slow", a.slow)):
        if not 0 <= value <= 1:
            ap.error(f"{flag} must be between 0 and 1, not {value}")
    if a.real > a.jobs:
        ap.error(f"--real must be at most --jobs ({a.jobs}), not {a.real}")
    if a.conflicts + a.slow > 1:
        ap.error(f"--conflicts and --slow must add up to at most 1, not {a.conflicts + a.slow}")
    if not 0 <= a.gap[0] <= a.gap[1]:
        ap.error(f"--gap MIN MAX must have 0 <= MIN <= MAX, not {a.gap[0]} {a.gap[1]}")
    for var in ("KUBECONFIG", "RINGMASTER_TESTBED", "RINGMASTER_TESTBED_DIR"):
        if var not in os.environ:
            print(f"soak: {var} is not set: run under `scripts/testbed exec`", file=sys.stderr)
            return 2
    seed = a.seed if a.seed is not None else random.SystemRandom().randrange(1 << 30)
    rng = random.Random(seed)
    ns = f"soak-{seed % 100000}-{os.getpid() % 10000}"
    logs = Path(tempfile.mkdtemp(prefix="ringmaster-soak."))
    print(f"soak: seed {seed}, namespace {ns}, {a.jobs} jobs x {a.workers} workers ({a.real} on the real node), "
          f"{a.faults} faults", flush=True)
    end = time.monotonic() + 60  # the kubelet reports an image just imported with its next node status
    while a.real and f'"{IMAGE}"' not in kubectl(
            "get", "node", REAL_NODE, "-o", "jsonpath={range .status.images[*]}{.names}{\"\\n\"}{end}"):
        if time.monotonic() > end:
            print(f"soak: --real {a.real}: {IMAGE} is not on node {REAL_NODE}: run `scripts/images build` and "
                  "`scripts/testbed exec scripts/images load` first", file=sys.stderr)
            return 2
        time.sleep(1)

    kubectl("create", "namespace", ns)
    kubectl("apply", "-f", str(REPO / "manifests"))
    if subprocess.run(["kubectl", "get", "crd", "tfjobs.kubeflow.org"], capture_output=True).returncode != 0:
        kubectl("create", "-f", str(REPO / "charts/ringmaster/crds/tfjobs.kubeflow.org.yaml"))
    for crd in ("distributedjobs.ringmaster.io", "tfjobs.kubeflow.org"):
        kubectl("wait", "--for=condition=Established", "--timeout=60s", f"crd/{crd}", timeout=70)

    proxy = ApiProxy(api_endpoint(os.environ["KUBECONFIG"]), os.path.join(os.environ["RINGMASTER_TESTBED_DIR"], "pki"),
                     random.Random(rng.random()), a.conflicts, a.slow, (0.5, 3.0)).start()
    ops = Operators(a.operator, proxied_kubeconfig(os.environ["KUBECONFIG"], proxy.port, logs), ns, logs, a.lease)
    ops.start()
    ops.start()
    jobs: list[Job] = []

    def new_job() -> None:
        i = len(jobs)
        real = sum(j.real and j.ended_at is None for j in jobs) < a.real
        job = Job("DistributedJob" if i % 2 == 0 else "TFJob", f"soak-{i}", a.workers, rng.randint(0, a.failures),
                  ends_failed=(i % 4 == 3), real=real)
        until_ok(f"create {job.name}", lambda: kubectl("-n", ns, "apply", "-f", "-", input=job.manifest()))
        job.created_at = time.monotonic() - start
        jobs.append(job)

    injector = Injector(rng, a.faults, tuple(a.gap), ops)
    start = time.monotonic()
    problems: list[str] = []
    try:
        for _ in range(a.jobs):
            new_job()
        injector.start()
        while time.monotonic() - start < a.deadline:
            now = time.monotonic() - start
            for job in jobs:
                try:
                    step(ns, job, rng, now, a.pause)
                except (RuntimeError, subprocess.SubprocessError, json.JSONDecodeError):
                    pass  # the control plane is away: look again next round
            while injector.is_alive() and sum(j.ended_at is None for j in jobs) < a.jobs:
                new_job()  # faults remain: a new job for each that ended
            problems += [f"operator {e}" for e in ops.reap()]
            if injector.error or problems or any(j.problems for j in jobs):
                break
            if all(j.ended_at is not None for j in jobs) and not injector.is_alive():
                break
            time.sleep(0.3)
        else:
            problems.append(f"not done within --deadline {a.deadline:.0f}s: " + ", ".join(
                f"{j.name} ({j.injected}/{j.failures} failures{', ending' if j.ending else ''})"
                for j in jobs if j.ended_at is None))
        injector.halt.set()
        injector.join(timeout=200)
        if injector.error:
            problems.append(f"fault injection failed: {injector.error}")
        if problems or any(j.problems for j in jobs):
            problems += [f"{job.kind} {job.name}: {p}" for job in jobs for p in job.problems]
        else:
            time.sleep(3)  # the last events and status writes of the leader
            problems += until_ok("read the jobs back", lambda: check(ns, jobs, ops, a.max_rss))
            until_ok("delete the jobs", lambda: kubectl("-n", ns, "delete", "djob,tfjob", "--all", "--wait=false"))
            end = time.monotonic() + 90
            while True:
                left = until_ok("list what is left", lambda: kubectl(
                    "-n", ns, "get", "pods,services", "-o", "name").split())
                if not left:
                    break
                if time.monotonic() > end:
                    problems.append(f"left 90 s after the jobs were deleted: {' '.join(left)}")
                    break
                time.sleep(1)
    finally:
        ops.stop()
        proxy.stop()
        kubectl("delete", "namespace", ns, "--wait=false", check=False)

    kinds = collections.Counter(k for _, k, _ in injector.done)
    relists = sum(f.read_text(errors="replace").count("resourceVersion expired (410)") for f in logs.glob("*.log"))
    print(f"soak: {len(injector.done)} faults in {time.monotonic() - start:.0f}s (" +
          ", ".join(f"{k} {kinds[k]}" for k in FAULTS) + f"); {sum(j.injected for j in jobs)} member failures "
          f"in {len(jobs)} jobs ({sum(j.kind == 'TFJob' for j in jobs)} TFJobs, {sum(j.real for j in jobs)} on the "
          f"real node, {sum(j.real and j.kind == 'TFJob' for j in jobs)} of them TFJobs); {ops.started} operator starts "
          f"({ops.lease_lost} after a lost lease); {relists} relists after 410 Gone; "
          f"peak operator memory {max(ops.peak_kib.values(), default=0) // 1024} MiB; the proxy answered "
          f"{proxy.counts.conflicts} of {proxy.counts.requests} requests 409 and held {proxy.counts.delayed} "
          f"({proxy.counts.delayed_s:.0f} s in all) and closed {proxy.counts.upstream_refused} connections "
          f"while the API server was away")
    for t, kind, what in injector.done:
        print(f"  {t:7.1f}s {kind:9s} {what}")
    for job in jobs:
        print(f"  {job.kind:14s} {job.name}{' (real)' if job.real else ''}: {job.injected} failure(s), "
              f"{'Failed' if job.ends_failed else 'Succeeded'} wanted, created at {job.created_at:.1f}s, ended at "
              f"{job.ended_at:.1f}s" if job.ended_at is not None else f"  {job.name}: did not end")
    if problems or a.logs:
        keep = Path(a.logs) if a.logs else Path(tempfile.mkdtemp(prefix="ringmaster-soak-logs."))
        keep.mkdir(parents=True, exist_ok=True)
        for f in logs.glob("*.log"):
            shutil.copy(f, keep / f.name)
        print(f"soak: the operators' logs are kept in {keep}")
    shutil.rmtree(logs, ignore_errors=True)
    if problems:
        for p in problems:
            print(f"FAILED: {p}")
        return 1
    print("soak: every job reached the end its pods dictate, counted once, nothing left behind")
    return 0


if __name__ == "__main__":
    sys.exit(main())
