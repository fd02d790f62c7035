"""The Keras benchmark's launcher (bench_keras.py without --rank): starts
each group's ranks on free ports (or under horovodrun), runs the rounds,
kills every process on the way out and hands the results to the report
(keras_report.py)."""
from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import rounds as rd
from keras_groups import GROUPS, HOROVOD_GROUP, N, NEVER_KEPT
from keras_report import report

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "common" / "ports"))
from free_ports import free_ports  # noqa: E402  (common/ports/free_ports.py)

# What each rank runs: the benchmark's own command line, with --rank.
SCRIPT = Path(__file__).resolve().with_name("bench_keras.py")
# --hosts netns: the emulated hosts of bench/network/topo.sh (rank i on host
# i + 1, in its namespace, at its address). horovodrun reaches them through
# an "ssh" that drops ssh's options (it puts some after the host too) and
# runs the command through the network bench's own remote shell.
NETNS_RSH = Path(__file__).resolve().parents[1] / "network" / "netns-rsh.sh"
NETNS_SSH = """#!/bin/sh
host=
while [ $# -gt 0 ]; do
  case "$1" in
    -o|-p|-i|-l|-F) shift 2 ;;
    -*) shift ;;
    *) [ -n "$host" ] && break; host=$1; shift ;;
  esac
done
exec %s "$host" "$@"
"""


def host_address(args, i):
    """Rank i's address: 127.0.0.1, or its emulated host's."""
    return f"10.213.0.{i + 1}" if args.hosts == "netns" else "127.0.0.1"


def on_host(args, i, cmd):
    """cmd run on rank i's host: here, or on its emulated host (netns-rsh.sh)."""
    return [str(NETNS_RSH), host_address(args, i), shlex.join(cmd)] if args.hosts == "netns" else cmd


class Groups:
    """The groups' processes, kept from start to end; every one killed on
    the way out."""

    def __init__(self, args, out: Path, log):
        self.args, self.out, self.log = args, out, log
        self.procs: dict[str, list] = {}
        self.logs: list = []
        self.failed: dict[str, str] = {}

    def ranks(self, group):
        return GROUPS[group][0]

    def rank_cmd(self, group, first_round):
        cmd = [sys.executable, str(SCRIPT), "--rank", group, "--out", str(self.out), "--iters", str(self.args.iters),
               "--warmup", str(self.args.warmup), "--model", self.args.model,
               "--total-timeout", str(self.args.total_timeout), "--launcher-pid", str(os.getpid()),
               "--first-round", str(first_round)]
        if self.args.cases:
            cmd += ["--cases", self.args.cases]
        if self.args.bytes_per_pack:
            cmd += ["--bytes-per-pack", str(self.args.bytes_per_pack)]
        return cmd

    def start(self, group, first_round=0):
        """Starts the group's ranks (their first round: first_round) and waits
        until each says it is ready (formed); False, with the reason in
        self.failed, if not. A port picked as free can be taken by another
        process before a rank binds it: then the group starts once more, on
        other ports."""
        if self.start_once(group, first_round) or group == HOROVOD_GROUP or not self.port_taken(group):
            return group not in self.failed
        print(f"bench_keras: group {group}: a port it picked was taken meanwhile; starting it again on others",
              file=self.log, flush=True)
        del self.failed[group]
        return self.start_once(group, first_round)

    def port_taken(self, group):
        logs = [self.out / f"log-{group}-{i}.txt" for i in range(self.ranks(group))]
        return any("address already in use" in f.read_text(errors="replace").lower() for f in logs if f.exists())

    def start_once(self, group, first_round):
        ranks, extra_env, _ = GROUPS[group]
        for f in [self.out / f"stop-{group}", *self.out.glob(f"ready-{group}-*")]:
            f.unlink(missing_ok=True)
        cmd = self.rank_cmd(group, first_round)
        if group == HOROVOD_GROUP:
            self.procs[group] = [self.start_horovod(group, cmd)]
        else:
            ports = free_ports(2 * ranks)
            tf_ports, agent_ports = ports[:ranks], ports[ranks:]
            cluster = {"worker": [f"{host_address(self.args, i)}:{p}" for i, p in enumerate(tf_ports)]}
            self.procs[group] = []
            for i in range(ranks):
                env = dict(os.environ)
                for k in ("TF_CONFIG", "TF_USE_LEGACY_KERAS", "RINGMASTER_PORT"):
                    env.pop(k, None)
                env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
                env["CUDA_VISIBLE_DEVICES"] = ""
                env["PYTHONUNBUFFERED"] = "1"
                env.update(extra_env)
                if ranks > 1:
                    env["TF_CONFIG"] = json.dumps({"cluster": cluster, "task": {"type": "worker", "index": i},
                                                   "environment": "cloud"})
                    # one agent port per rank, none of them TensorFlow's (TF_CONFIG's)
                    env["RINGMASTER_PORT"] = ",".join(map(str, agent_ports))
                    env.setdefault("RINGMASTER_FORMATION_TIMEOUT_SECONDS", "120")
                    # A collective's deadline: the ranks of a group wait for
                    # each other between rounds only in files, never in one.
                    env.setdefault("RINGMASTER_TIMEOUT_SECONDS", str(self.args.group_timeout))
                lf = open(self.out / f"log-{group}-{i}.txt", "w")
                self.logs.append(lf)
                self.procs[group].append(subprocess.Popen(on_host(self.args, i, cmd), env=env, stdout=lf,
                                                          stderr=subprocess.STDOUT, start_new_session=True))
        return self.wait(group, [self.out / f"ready-{group}-{i}" for i in range(ranks)], "start")

    def start_horovod(self, group, cmd):
        """horovodrun -np 3 --gloo -H localhost:3 with Horovod's venv python:
        one process (its own session) that starts the 3 ranks, each through a
        middleman that ends its rank when horovodrun dies. Every rank's output
        in DIR/log-horovod/rank.N/, horovodrun's own in DIR/log-horovod-run.txt."""
        py = Path(self.args.horovod_python)
        env = dict(os.environ)
        for k in list(env):
            if k.startswith(("TF_CONFIG", "TF_USE_LEGACY_KERAS", "RINGMASTER_", "HOROVOD_", "VIRTUAL_ENV",
                             "PYTHONPATH")):
                env.pop(k)
        env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
        env["CUDA_VISIBLE_DEVICES"] = ""
        env["PYTHONUNBUFFERED"] = "1"
        env["PATH"] = f"{py.parent}:{env.get('PATH', '')}"
        hosts = f"localhost:{N}"
        if self.args.hosts == "netns":
            ssh_dir = self.out / "netns-ssh"
            ssh_dir.mkdir(exist_ok=True)
            (ssh_dir / "ssh").write_text(NETNS_SSH % NETNS_RSH)
            (ssh_dir / "ssh").chmod(0o755)
            env["PATH"] = f"{ssh_dir}:{env['PATH']}"
            hosts = ",".join(f"{host_address(self.args, i)}:1" for i in range(N))
        hcmd = [str(py.parent / "horovodrun"), "-np", str(N), "--gloo", "-H", hosts,
                "--start-timeout", "120", "--output-filename", str(self.out / f"log-{group}"), str(py)] + cmd[1:]
        if self.args.hosts == "netns":
            # horovodrun's driver serves the ranks' rendezvous at its own address
            # on the interface it gives them for Gloo: run it on host 1, whose
            # eth0 is every host's interface name.
            hcmd = on_host(self.args, 0, hcmd[:1] + ["--network-interfaces", "eth0"] + hcmd[1:])
        lf = open(self.out / f"log-{group}-run.txt", "w")
        self.logs.append(lf)
        print("$ " + " ".join(hcmd), file=lf, flush=True)
        return subprocess.Popen(hcmd, env=env, stdout=lf, stderr=subprocess.STDOUT, start_new_session=True,
                                cwd=str(self.out))

    def wait(self, group, files, what):
        """Until every file exists; fails the group (killed) if one of its
        processes exits first or the deadline passes."""
        deadline = time.time() + self.args.group_timeout
        while not all(f.exists() for f in files):
            codes = [p.poll() for p in self.procs[group]]
            if any(c is not None for c in codes):
                return self.fail(group, f"{what}: a process exited ({codes}) before writing "
                                 f"{', '.join(f.name for f in files if not f.exists())}")
            if time.time() > deadline:
                return self.fail(group, f"{what}: timed out after {self.args.group_timeout} s")
            time.sleep(0.05)
        return True

    def run_round(self, group, k):
        """Tells the group to run round k; its ranks' results, or [] if it
        failed."""
        files = [self.out / f"rank-{group}-{i}-r{k}.json" for i in range(self.ranks(group))]
        (self.out / f"go-{group}-{k}").touch()
        if not self.wait(group, files, f"round {k}"):
            return []
        results = []
        for f in files:
            for res in json.loads(f.read_text()):
                res["group"] = group
                results.append(res)
        return results

    def fail(self, group, reason):
        self.failed[group] = reason
        self.kill(group)
        print(f"bench_keras: group {group}: FAILED: {reason}", file=self.log, flush=True)
        if group == HOROVOD_GROUP:
            tails = [("horovodrun", self.out / f"log-{group}-run.txt")]
        else:
            tails = [(f"rank {i}", self.out / f"log-{group}-{i}.txt") for i in range(self.ranks(group))]
        for name, f in tails:
            tail = f.read_text(errors="replace")[-3000:] if f.exists() else "(no log)"
            print(f"--- {group} {name} (tail) ---\n{tail}", file=self.log, flush=True)
        return False

    def kill(self, group):
        for p in self.procs.get(group, []):
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except OSError:
                    pass
            try:
                p.wait(timeout=5)
            except Exception:
                pass

    def end(self, group):
        """Tells one group's ranks to leave, then kills what is left of it."""
        (self.out / f"stop-{group}").touch()
        self.settle(self.procs.get(group, []))
        self.kill(group)

    def stop(self):
        """Tells every rank to leave, gives them a moment, then kills what is
        left."""
        (self.out / "stop").touch()
        self.settle([p for ps in self.procs.values() for p in ps])
        for g in list(self.procs):
            self.kill(g)
        for lf in self.logs:
            lf.close()

    @staticmethod
    def settle(procs, seconds=10):
        end = time.time() + seconds
        while time.time() < end and any(p.poll() is None for p in procs):
            time.sleep(0.1)


def load():
    return os.getloadavg()[0]


def clean(out: Path):
    for pattern in ("go-*", "ready-*", "rank-*.json", "stop", "stop-*", ".*.tmp"):
        for f in out.glob(pattern):
            f.unlink()


def launcher_main(args):
    import tensorflow as tf  # noqa: F401  (version only; cheap next to the groups)
    out = Path(args.out).resolve()  # absolute: horovodrun's ranks run in another directory
    out.mkdir(parents=True, exist_ok=True)
    clean(out)
    groups_arg = args.groups.split(",")
    unknown = [g for g in groups_arg if g not in GROUPS]
    if unknown:
        sys.exit(f"bench_keras: unknown group(s) {unknown}; groups: {', '.join(GROUPS)}")
    horovod_skipped = None
    if HOROVOD_GROUP in groups_arg and not args.horovod_python:
        groups_arg.remove(HOROVOD_GROUP)
        horovod_skipped = args.horovod_unavailable or "no --horovod-python given"
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    t0 = time.time()
    gs = Groups(args, out, sys.stderr)
    signal.signal(signal.SIGTERM, lambda *_: (gs.stop(), sys.exit(143)))
    results, round_log = [], []
    try:
        keep = {g for g in args.keep.split(",") if g} - NEVER_KEPT
        for g in groups_arg:
            if g not in keep:
                continue
            ts = time.time()
            ok = gs.start(g)
            print(f"bench_keras: group {g} ({GROUPS[g][0]} ranks) {'ready' if ok else 'failed'} in "
                  f"{time.time() - ts:.0f} s, load {load():.1f}", file=sys.stderr, flush=True)
        start_s = time.time() - t0
        for k in range(args.rounds):
            order = [g for g in rd.round_order(groups_arg, k) if g not in gs.failed]
            l0, ts, per_group = load(), time.time(), []
            for g in order:
                tg = time.time()
                if g not in keep:
                    if not gs.start(g, first_round=k):
                        per_group.append(f"{g} failed to start")
                        continue
                    started_s = time.time() - tg
                got = gs.run_round(g, k)
                if g not in keep:
                    gs.end(g)
                results += got
                per_group.append(f"{g} {time.time() - tg:.0f} s" +
                                 (f" ({started_s:.0f} s of it to start)" if g not in keep else ""))
            round_log.append((k, order, l0, load(), time.time() - ts, per_group))
            print(f"bench_keras: round {k}: {time.time() - ts:.0f} s ({', '.join(per_group)}), load {l0:.1f} -> "
                  f"{load():.1f}", file=sys.stderr, flush=True)
    finally:
        gs.stop()
    return report(args, out, results, round_log, gs.failed, horovod_skipped, started, start_s, time.time() - t0,
                  tf.__version__)
