#!/usr/bin/env python3
"""The multi-host all-reduce comparison on one machine: N emulated hosts
(network namespaces on one bridge, every host's link shaped to --rate in both
directions by bench/network/topo.sh), Ringmaster (AUTO, and RING, recursive
doubling and halving-doubling forced), Gloo, Open MPI over TCP and
TensorFlow, each rank on a host of its own, members addressing each other by
the hosts' IPs as on a cluster. Started by `scripts/bench network`.

Limits measured in the same run: the link rate C (iperf3, one TCP flow from
one host to another across the bridge; both directions at once as well), and
for every N the rate per flow of N flows at once in a ring (host i to host
i+1, every link busy in both directions, as in a ring all-reduce): what this
machine can carry through N shaped links at once.

Writes into --out: results.jsonl, results.csv, tables.md (per N: size x
peer, time / algbw / busbw; the ratio to the best peer; AUTO against the
best forced algorithm; busbw / C; CPU use while each cell ran) and
busbw.png; logs/ holds every rank's stderr.
"""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "allreduce"))
from run import human, machine, parse_lines  # noqa: E402  (the loopback bench's helpers)

HERE = Path(__file__).resolve().parent
TOPO = HERE / "topo.sh"
RSH = HERE / "netns-rsh.sh"
NET = "10.213.0"
SUBNET = f"{NET}.0/24"
TF_PORT, AGENT_PORT = 2222, 2223
GLOO_ALGOS = ["ring_chunked", "halving_doubling"]
RM_ALGOS = ["auto", "ring", "rd", "hd"]
BIG = 64 << 20  # from this size on, --big-batches timed batches (each call takes seconds)

LIVE = []  # Popen objects of the group running now: killed on a signal
WORK = {"dir": None}  # this run's scratch directory (job files, Gloo's store, hostfiles); removed at the end


def log(msg):
    print(f"[bench] {msg}", file=sys.stderr, flush=True)


def ns(i):
    """Namespace of host i (0-based rank i runs on host i + 1)."""
    return f"rmbench-h{i + 1}"


def ip(i):
    return f"{NET}.{i + 1}"


def load():
    return " / ".join(f"{x:.2f}" for x in os.getloadavg())


def cpu_sample():
    """Machine-wide CPU jiffies from /proc/stat: (busy, total, system + irq + softirq, steal)."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    user, nice, system, idle, iowait, irq, softirq, steal = (v + [0] * 8)[:8]
    total = user + nice + system + idle + iowait + irq + softirq + steal
    return total - idle - iowait, total, system + irq + softirq, steal


def cpu_between(a, b):
    """Cores busy (0..ncpu) between two samples, and how many of them in the kernel."""
    dt = b[1] - a[1]
    if dt <= 0:
        return None
    ncpu = os.cpu_count() or 1
    return {"cores_busy": round((b[0] - a[0]) / dt * ncpu, 3), "cores_kernel": round((b[2] - a[2]) / dt * ncpu, 3),
            "cores_steal": round((b[3] - a[3]) / dt * ncpu, 3)}


def kill_leftovers(n):
    """Whatever still runs in our namespaces after a group (started by this run)."""
    for i in range(n):
        pids = subprocess.run(["ip", "netns", "pids", ns(i)], capture_output=True, text=True).stdout.split()
        for pid in pids:
            try:
                os.kill(int(pid), signal.SIGKILL)
            except (ProcessLookupError, ValueError):
                pass


def run_group(name, cmds, envs, logdir, timeout, n):
    """One process per command (rank 0 first); rank 0's JSON lines, each with
    the CPU use of the machine since the previous line (that cell's run)."""
    logdir.mkdir(parents=True, exist_ok=True)
    errs = [open(logdir / f"{name.replace('/', '-')}-n{n}-rank{r}.log", "w") for r in range(len(cmds))]
    procs = []
    rows, lock = [], threading.Lock()
    try:
        for r, c in enumerate(cmds):
            p = subprocess.Popen(c, stdout=subprocess.PIPE if r == 0 else subprocess.DEVNULL, stderr=errs[r],
                                 text=True, env=envs[r] if envs else None)
            procs.append(p)
            LIVE.append(p)

        def reader():
            last = cpu_sample()
            for line in procs[0].stdout:
                now = cpu_sample()
                got = parse_lines(line)
                if got:
                    row = got[0]
                    row["cpu"] = cpu_between(last, now)
                    with lock:
                        rows.append(row)
                    last = now
        t = threading.Thread(target=reader, daemon=True)
        t.start()
        deadline = time.time() + timeout
        for p in procs:
            try:
                p.wait(timeout=max(1, deadline - time.time()))
            except subprocess.TimeoutExpired:
                raise RuntimeError(f"timed out after {timeout}s: {' '.join(cmds[0])}")
        t.join(timeout=10)
        bad = [(r, p.returncode) for r, p in enumerate(procs) if p.returncode != 0]
        if bad:
            r, rc = bad[0]
            errs[r].flush()
            tail = (logdir / Path(errs[r].name).name).read_text()[-1500:]
            raise RuntimeError(f"rank {r} exit code {rc}: {tail.strip()}")
        return rows
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
            p.wait()
            if p in LIVE:
                LIVE.remove(p)
        for e in errs:
            e.close()
        kill_leftovers(n)


def size_plan(a):
    """(min, max, batches) ranges: the largest sizes take seconds per call, so
    they get fewer timed batches (--big-batches)."""
    sizes, s = [], a.min
    while s <= a.max:
        sizes.append(s)
        s *= a.factor
    small = [s for s in sizes if s < BIG]
    big = [s for s in sizes if s >= BIG]
    plan = []
    if small:
        plan.append((small[0], small[-1], a.batches))
    if big:
        plan.append((big[0], big[-1], min(a.big_batches, a.batches)))
    return plan


def tf_configs(a, n):
    """TF_CONFIGs from our generator (what the operator injects), the
    service addresses replaced by the hosts' IPs."""
    job = Path(tempfile.mkdtemp(prefix="tf-", dir=WORK["dir"])) / "job.yaml"
    job.write_text(f"""apiVersion: ringmaster.io/v1alpha1
kind: DistributedJob
metadata: {{name: bench}}
spec:
  replicaSpecs:
    Worker:
      replicas: {n}
      template: {{spec: {{containers: [{{name: tf, image: tensorflow}}]}}}}
""")
    out = []
    for i in range(n):
        cfg = json.loads(subprocess.run([str(a.ringmaster), "tfconfig", str(job), "--replica", f"worker:{i}"],
                                        capture_output=True, text=True, check=True).stdout)
        cfg["cluster"]["worker"] = [f"{ip(r)}:{TF_PORT}" for r in range(n)]
        out.append(json.dumps(cfg))
    return out


PIN = {"on": False}  # set per group size: pin host i to CPU i (see --pin)


def pinned(a, n):
    return a.pin == "always" or (a.pin == "auto" and n <= (os.cpu_count() or 1))


def in_ns(i, cmd):
    """cmd on host i: in its namespace and, when pinning, on its own CPU."""
    pin = ["taskset", "-c", str(i % (os.cpu_count() or 1))] if PIN["on"] else []
    return ["ip", "netns", "exec", ns(i)] + pin + cmd


def bench_ringmaster(a, n, lo, hi, batches):
    """N `ringmaster bench --member`, one per host, the group formed from
    TF_CONFIG; one agent port for every member (RINGMASTER_PORT, as the
    operator sets it on Kubernetes). AUTO and the forced algorithms
    interleaved per size in one group."""
    envs = []
    for cfg in tf_configs(a, n):
        env = {k: v for k, v in os.environ.items() if not k.startswith("RINGMASTER_")}
        # debug: each member's log (logs/) records what its formation
        # measured of the links, which AUTO chooses from.
        env.update(TF_CONFIG=cfg, RINGMASTER_PORT=str(AGENT_PORT), RINGMASTER_LOG_LEVEL="debug")
        envs.append(env)
    cmds = [in_ns(i, [str(a.ringmaster), "bench", "--member", "-a", "all", "-b", str(lo), "-e", str(hi),
                      "-f", str(a.factor), "--batches", str(batches)]) for i in range(n)]
    return run_group("ringmaster", cmds, envs, a.out / "logs", a.group_timeout, n)


def peer_size_args(a, lo, hi, batches):
    return ["--min", str(lo), "--max", str(hi), "--factor", str(a.factor), "--batches", str(batches)]


def bench_gloo(a, n, algo, lo, hi, batches):
    """Gloo's TCP transport bound to the host's IP; rendezvous through its
    file store (the namespaces share the file system)."""
    store = tempfile.mkdtemp(prefix="gloo-", dir=WORK["dir"])
    envs = [dict(os.environ, RMBENCH_HOST=ip(i)) for i in range(n)]
    cmds = [in_ns(i, [str(a.bin / "rm-bench-gloo"), "--rank", str(i), "--size", str(n), "--store", store,
                      "--algo", algo] + peer_size_args(a, lo, hi, batches)) for i in range(n)]
    return run_group(f"gloo-{algo}", cmds, envs, a.out / "logs", a.group_timeout, n)


def bench_mpi(a, n, lo, hi, batches):
    """mpirun on this host launches one orted per emulated host through
    netns-rsh.sh (its "ssh": `ip netns exec` into the host named); each rank
    talks TCP only (btl tcp,self) on the bridge's subnet."""
    hostfile = Path(tempfile.mkdtemp(prefix="mpi-", dir=WORK["dir"])) / "hosts"
    hostfile.write_text("".join(f"{ip(i)} slots=1\n" for i in range(n)))
    cmd = ["mpirun", "--allow-run-as-root", "--hostfile", str(hostfile), "-np", str(n), "--map-by", "node",
           "--bind-to", "none",
           "--mca", "plm_rsh_agent", str(RSH), "--mca", "plm_rsh_no_tree_spawn", "1",
           "--mca", "pml", "ob1", "--mca", "btl", "tcp,self",
           "--mca", "btl_tcp_if_include", SUBNET, "--mca", "oob_tcp_if_include", SUBNET]
    if n > (os.cpu_count() or 1):
        # Open MPI yields in its progress loop when it knows a node is
        # oversubscribed; here every "node" has one slot, but all of them
        # share this machine's cores, so tell it (as --oversubscribe on one
        # host does). Ringmaster's wait loop yields as well.
        cmd += ["--mca", "mpi_yield_when_idle", "1"]
    cmd += [str(a.bin / "rm-bench-mpi"), "--algo", "tcp"] + peer_size_args(a, lo, hi, batches)
    env = dict(os.environ, RMBENCH_PIN="1" if PIN["on"] else "")  # netns-rsh.sh pins each orted
    return run_group("mpi-tcp", [cmd], [env], a.out / "logs", a.group_timeout, n)


def bench_tf(a, n, lo, hi, batches):
    envs = []
    for cfg in tf_configs(a, n):
        envs.append(dict(os.environ, TF_CONFIG=cfg, TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES=""))
    script = HERE.parent / "allreduce" / "tf_bench.py"
    cmds = [in_ns(i, [str(a.python), str(script)] + peer_size_args(a, lo, hi, batches)
                  + ["--max-iters", str(a.tf_max_iters)]) for i in range(n)]
    return run_group("tensorflow", cmds, envs, a.out / "logs", 2 * a.group_timeout, n)


# --- limits -------------------------------------------------------------------------------------

def iperf_flows(pairs, seconds, bidir=False):
    """iperf3 flows at once, (client host, server host) each; returns the
    received rate of each flow in bytes/s (and of the reverse flows with bidir)."""
    servers, clients = [], []
    try:
        for k, (_, s) in enumerate(pairs):
            servers.append(subprocess.Popen(["ip", "netns", "exec", ns(s), "iperf3", "-s", "-1", "-B", ip(s), "-p", str(5201 + k)],
                                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
            LIVE.append(servers[-1])
        time.sleep(0.5)
        for k, (c, s) in enumerate(pairs):
            cmd = ["iperf3", "-c", ip(s), "-B", ip(c), "-p", str(5201 + k), "-t", str(seconds), "-J"]
            if bidir:
                cmd.append("--bidir")
            clients.append(subprocess.Popen(["ip", "netns", "exec", ns(c)] + cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                            text=True))
            LIVE.append(clients[-1])
        rates = []
        for p in clients:
            out, err = p.communicate(timeout=seconds + 60)
            end = json.loads(out or "{}").get("end", {})
            if "sum_received" not in end:
                raise RuntimeError(f"iperf3 gave no result: {out[-300:]} {err[-300:]}")
            rates.append(end["sum_received"]["bits_per_second"] / 8)
            if bidir:
                rates.append(end["sum_received_bidir_reverse"]["bits_per_second"] / 8)
        return rates
    finally:
        for p in servers + clients:
            if p.poll() is None:
                p.kill()
            p.wait()
            if p in LIVE:
                LIVE.remove(p)


def measure_limits(a, ns_list):
    limits = {"rate": a.rate, "burst": a.burst}
    log(f"limits: iperf3 from {ns(0)} to {ns(1)}, one flow, {a.iperf_seconds}s")
    limits["link_Bps"] = iperf_flows([(0, 1)], a.iperf_seconds)[0]
    log(f"limits: link C = {limits['link_Bps'] * 8 / 1e9:.3f} Gbit/s; both directions at once")
    limits["link_bidir_Bps"] = iperf_flows([(0, 1)], a.iperf_seconds, bidir=True)
    limits["ring_flow_Bps"] = {}
    for n in ns_list:
        if n < 2:
            continue
        # Every host sends to the next and receives from the previous one: every
        # link busy in both directions, N flows through the machine at once.
        pairs = [(i, (i + 1) % n) for i in range(n)] if n > 2 else [(0, 1)]
        rates = iperf_flows(pairs, a.iperf_seconds, bidir=(n == 2))
        limits["ring_flow_Bps"][str(n)] = rates
        log(f"limits: N={n} ring of iperf3 flows: min {min(rates) * 8 / 1e9:.3f}, mean "
            f"{sum(rates) / len(rates) * 8 / 1e9:.3f} Gbit/s per flow")
    return limits


# --- tables -------------------------------------------------------------------------------------

def bw(row):
    n, t = row["n"], row["median_us"] * 1e-6
    algbw = row["bytes"] / t
    return algbw, algbw * 2 * (n - 1) / n


def name(r):
    return f'{r["peer"]}/{r["algo"]}'


def fmt_time(us):
    if us < 1000:
        return f"{us:.1f} µs"
    if us < 1e6:
        return f"{us / 1e3:.2f} ms"
    return f"{us / 1e6:.2f} s"


def gbit(bps):
    return bps * 8 / 1e9


def is_peer(p):
    return not p.startswith("ringmaster/")


def analyse(rows, n):
    """Per size: the rows by peer, the best peer, AUTO's ratio to it, the best
    forced algorithm and AUTO's ratio to that."""
    sel = [r for r in rows if r["n"] == n]
    out = {}
    for s in sorted({r["bytes"] for r in sel}):
        by = {name(r): r for r in sel if r["bytes"] == s}
        good = {p: r for p, r in by.items() if r["correct"]}
        peers = {p: r for p, r in good.items() if is_peer(p)}
        forced = {p: r for p, r in good.items() if p.startswith("ringmaster/") and p != "ringmaster/auto"}
        auto = good.get("ringmaster/auto")
        best_peer = min(peers, key=lambda p: peers[p]["median_us"]) if peers else None
        best_forced = min(forced, key=lambda p: forced[p]["median_us"]) if forced else None
        out[s] = {
            "by": by, "auto": auto, "best_peer": best_peer, "best_forced": best_forced,
            "vs_peer": peers[best_peer]["median_us"] / auto["median_us"] if auto and best_peer else None,
            "vs_forced": forced[best_forced]["median_us"] / auto["median_us"] if auto and best_forced else None,
        }
    return out


def tables(rows, limits, a):
    c = limits.get("link_Bps")
    out = []
    for n in sorted({r["n"] for r in rows}):
        sel = [r for r in rows if r["n"] == n]
        order = [f"ringmaster/{x}" for x in RM_ALGOS]
        peers = [p for p in order if any(name(r) == p for r in sel)]
        peers += sorted({name(r) for r in sel} - set(peers))
        res = analyse(rows, n)
        ring = limits.get("ring_flow_Bps", {}).get(str(n))
        out.append(f"\n### N = {n} hosts\n")
        line = f"Link C = {gbit(c):.3f} Gbit/s (iperf3, one flow across the bridge; tbf {a.rate})"
        if ring:
            line += (f"; {len(ring)} iperf3 flows at once in a ring (every link busy both ways): "
                     f"{gbit(min(ring)):.3f} .. {gbit(max(ring)):.3f} Gbit/s per flow")
        out.append(line + ". A ring all-reduce's busbw is bounded by the link rate: busbw <= C. "
                   + (f"Every peer's processes on host i pinned to CPU i (a core per host, as on a cluster).\n"
                      if pinned(a, n) else f"{n} hosts share {os.cpu_count()} CPUs, unpinned.\n"))
        out.append("Each cell: median time per call / algbw / busbw (Gbit/s); `!` marks a wrong result. "
                   "vs best peer = best peer's time / AUTO's (>= 1: AUTO as fast or faster); "
                   "vs best forced = the best forced Ringmaster algorithm's time / AUTO's (>= 0.91: "
                   "AUTO within 10 %); busbw / C is AUTO's.\n")
        out.append("| size | " + " | ".join(peers) + " | best peer | vs best peer | best forced | vs best forced "
                   "| busbw / C |")
        out.append("|---" * (len(peers) + 6) + "|")
        for s, x in res.items():
            cells = []
            for p in peers:
                r = x["by"].get(p)
                if not r:
                    cells.append("-")
                    continue
                ab, bb = bw(r)
                cells.append(f'{fmt_time(r["median_us"])} / {gbit(ab):.3f} / {gbit(bb):.3f}'
                             + ("" if r["correct"] else " !"))
            auto = x["auto"]
            frac = f"{bw(auto)[1] / c:.2f}" if auto and c else "-"
            out.append(f"| {human(s)} | " + " | ".join(cells)
                       + f' | {x["best_peer"] or "-"} | ' + (f'{x["vs_peer"]:.2f}' if x["vs_peer"] else "-")
                       + f' | {(x["best_forced"] or "-").replace("ringmaster/", "")} | '
                       + (f'{x["vs_forced"]:.2f}' if x["vs_forced"] else "-") + f" | {frac} |")
        out.append("")
        # What the machine's CPUs did while each cell ran (machine-wide: other
        # users' work counts too).
        big = [s for s in res if s >= 1 << 20]
        if big and any(r.get("cpu") for r in sel):
            out.append(f"CPU while each cell ran (sizes >= 1 MiB; cores busy of {os.cpu_count()}, of them in the "
                       "kernel; machine-wide, from /proc/stat):\n")
            out.append("| size | " + " | ".join(peers) + " |")
            out.append("|---" * (len(peers) + 1) + "|")
            for s in big:
                cells = []
                for p in peers:
                    r = res[s]["by"].get(p)
                    cpu = r.get("cpu") if r else None
                    cells.append(f'{cpu["cores_busy"]:.2f} ({cpu["cores_kernel"]:.2f})' if cpu else "-")
                out.append(f"| {human(s)} | " + " | ".join(cells) + " |")
            out.append("")
        out.append(goals(res, n, c))
    return "\n".join(out) + "\n"


def goals(res, n, c):
    def verdict(ok):
        return "**holds**" if ok else "**not met**"
    lines = [f"Goals, N = {n}:"]
    big = [s for s, x in res.items() if s >= 16 << 20 and x["auto"]]
    if big and c:
        fr = {s: bw(res[s]["auto"])[1] / c for s in big}
        miss = [f"{human(s)} ({fr[s]:.2f})" for s in big if fr[s] < 0.9]
        lines.append(f"- busbw >= 0.9 x C at sizes >= 16 MiB: {verdict(not miss)} ("
                     + ", ".join(f"{human(s)} {fr[s]:.2f}" for s in big) + ")")
    else:
        lines.append("- busbw >= 0.9 x C at sizes >= 16 MiB: not measured")
    sizes = [s for s, x in res.items() if s >= 64 << 10 and x["vs_peer"]]
    miss = [f'{human(s)} ({res[s]["vs_peer"]:.2f}, {res[s]["best_peer"]})' for s in sizes
            if res[s]["vs_peer"] < 1.0]
    lines.append(f"- as fast as the best peer at every size >= 64 KiB: {verdict(sizes and not miss)}"
                 + (f"; slower at {', '.join(miss)}" if miss else "")
                 + (f" (lowest {min(res[s]['vs_peer'] for s in sizes):.2f})" if sizes else ""))
    sizes = [s for s, x in res.items() if s <= 4 << 10 and x["vs_peer"]]
    miss = [f'{human(s)} ({res[s]["vs_peer"]:.2f}, {res[s]["best_peer"]})' for s in sizes
            if res[s]["vs_peer"] < 1.0]
    lines.append(f"- latency <= the best peer's at sizes <= 4 KiB: {verdict(sizes and not miss)}"
                 + (f"; slower at {', '.join(miss)}" if miss else "")
                 + (f" (lowest {min(res[s]['vs_peer'] for s in sizes):.2f})" if sizes else ""))
    sizes = [s for s, x in res.items() if x["vs_forced"]]
    miss = [f'{human(s)} ({res[s]["vs_forced"]:.2f} of {res[s]["best_forced"].replace("ringmaster/", "")})'
            for s in sizes if res[s]["vs_forced"] < 1 / 1.1]
    lines.append(f"- AUTO within 10 % of the best forced algorithm at every size: {verdict(sizes and not miss)}"
                 + (f"; outside at {', '.join(miss)}" if miss else ""))
    return "\n".join(lines) + "\n"


def plot(rows, limits, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        log("matplotlib not available: no plot")
        return False
    ns_ = sorted({r["n"] for r in rows})
    if not ns_:
        return False
    cols = min(3, len(ns_))
    nrows = (len(ns_) + cols - 1) // cols
    fig, axes = plt.subplots(nrows, cols, figsize=(6.5 * cols, 4.8 * nrows), squeeze=False)
    c = limits.get("link_Bps")
    for k, n in enumerate(ns_):
        ax = axes[k // cols][k % cols]
        sel = [r for r in rows if r["n"] == n]
        for p in sorted({name(r) for r in sel}, key=lambda p: (is_peer(p), p)):
            pts = sorted((r["bytes"], gbit(bw(r)[1])) for r in sel if name(r) == p)
            ax.plot([x for x, _ in pts], [y for _, y in pts], marker="o", markersize=3, label=p,
                    linewidth=2.5 if p == "ringmaster/auto" else 1.2,
                    linestyle="-" if p.startswith("ringmaster") else "--")
        if c:
            ax.axhline(gbit(c), color="black", linewidth=0.8, linestyle=":", label="link C (iperf3)")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("message size (bytes)")
        ax.set_ylabel("busbw (Gbit/s)")
        ax.set_title(f"float32 SUM all-reduce, {n} hosts, {limits.get('rate')} links")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    for k in range(len(ns_), nrows * cols):
        axes[k // cols][k % cols].axis("off")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    return True


def wait_for_load(limit, max_wait):
    """Waits until the 1-minute load average is below limit (at most max_wait s)."""
    if limit <= 0:
        return "not waited for"
    t0 = time.time()
    while os.getloadavg()[0] >= limit and time.time() - t0 < max_wait:
        time.sleep(15)
    waited = time.time() - t0
    if os.getloadavg()[0] >= limit:
        return f"still {os.getloadavg()[0]:.2f} after waiting {waited / 60:.0f} min for < {limit}: measured anyway"
    return f"below {limit} after waiting {waited / 60:.1f} min"


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bin", type=Path, required=True, help="directory of rm-bench-* programs")
    p.add_argument("--ringmaster", type=Path, required=True)
    p.add_argument("--python", type=Path, help="python with TensorFlow (omit to skip TensorFlow)")
    p.add_argument("--hosts", default="2,3,4,6,8", help="the group sizes N, one emulated host per member")
    p.add_argument("--rate", default="1gbit", help="every link's rate (tc units), both directions")
    p.add_argument("--burst", default="128kb", help="tbf bucket (tc units; >= a 64 KiB GSO packet)")
    p.add_argument("--min", type=int, default=4)
    p.add_argument("--max", type=int, default=256 << 20)
    p.add_argument("--factor", type=int, default=4)
    p.add_argument("--batches", type=int, default=5, help="timed batches per size below 64 MiB")
    p.add_argument("--big-batches", type=int, default=3, help="timed batches per size from 64 MiB")
    p.add_argument("--tf-max-iters", type=int, default=50,
                   help="TensorFlow's calls per batch at most (200 for the others; its calls take ms)")
    p.add_argument("--peers", default="ringmaster,gloo,mpi,tensorflow")
    p.add_argument("--pin", choices=["auto", "always", "never"], default="auto",
                   help="pin host i's processes (every peer's) to CPU i mod cores; auto: when N <= cores, so "
                        "that each host has a core of its own as on a cluster")
    p.add_argument("--iperf-seconds", type=int, default=5)
    p.add_argument("--group-timeout", type=int, default=1800, help="seconds for one group of ranks")
    p.add_argument("--wait-load", type=float, default=0, help="first wait until the 1-min load is below this")
    p.add_argument("--wait-max", type=int, default=1200)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--command", default=" ".join(sys.argv), help="the command to name in the tables")
    a = p.parse_args()
    a.out = a.out.resolve()
    a.bin, a.ringmaster = a.bin.resolve(), a.ringmaster.resolve()
    a.out.mkdir(parents=True, exist_ok=True)
    peers = set(a.peers.split(","))
    hosts = sorted({int(x) for x in a.hosts.split(",")})
    if not hosts or hosts[0] < 2:
        p.error("--hosts: group sizes of 2 or more")

    def on_signal(signum, _frame):
        raise KeyboardInterrupt(f"signal {signum}")
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGHUP, on_signal)

    rows, failures, limits = [], [], {}
    WORK["dir"] = tempfile.mkdtemp(prefix="rm-net-")
    (a.out / "results.partial.jsonl").unlink(missing_ok=True)
    try:
        subprocess.run([str(TOPO), "up", str(max(hosts)), a.rate, a.burst], check=True)
        waited = wait_for_load(a.wait_load, a.wait_max)
        started, load_start = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), load()
        log(f"load {load_start} ({waited})")
        limits = measure_limits(a, hosts)
        plan = size_plan(a)
        for n in hosts:
            PIN["on"] = pinned(a, n)
            jobs = []
            if "ringmaster" in peers:
                jobs.append(("ringmaster/" + ",".join(RM_ALGOS), lambda *r, n=n: bench_ringmaster(a, n, *r)))
            if "gloo" in peers:
                jobs += [(f"gloo/{g}", lambda *r, n=n, g=g: bench_gloo(a, n, g, *r)) for g in GLOO_ALGOS]
            if "mpi" in peers:
                jobs.append(("mpi/tcp", lambda *r, n=n: bench_mpi(a, n, *r)))
            if "tensorflow" in peers and a.python:
                jobs.append(("tensorflow/ring", lambda *r, n=n: bench_tf(a, n, *r)))
            for label, fn in jobs:
                for lo, hi, batches in plan:
                    log(f"N={n} {label} {human(lo)}..{human(hi)} x{batches} (load {load()})")
                    t0 = time.time()
                    try:
                        got = fn(lo, hi, batches)
                        if not got:
                            raise RuntimeError("no results")
                        rows += got
                        with open(a.out / "results.partial.jsonl", "a") as f:  # survives an interrupted run
                            f.writelines(json.dumps(r) + "\n" for r in got)
                        bad = [r["bytes"] for r in got if not r["correct"]]
                        if bad:
                            failures.append(f"N={n} {label}: wrong results at {bad}")
                        log(f"N={n} {label}: {len(got)} results in {time.time() - t0:.0f}s")
                    except Exception as e:  # a peer that fails is reported, the others still run
                        failures.append(f"N={n} {label} {human(lo)}..{human(hi)}: {e}")
                        log(f"N={n} {label}: FAILED: {e}")
        # The link again at the end: the machine's load moves the figure; C is
        # the larger of the two (the stricter bar).
        log(f"limits: iperf3 from {ns(0)} to {ns(1)} again")
        limits["link_end_Bps"] = iperf_flows([(0, 1)], a.iperf_seconds)[0]
        limits["link_start_Bps"] = limits["link_Bps"]
        limits["link_Bps"] = max(limits["link_start_Bps"], limits["link_end_Bps"])
        log(f"limits: link C = {gbit(limits['link_end_Bps']):.3f} Gbit/s at the end")
    finally:
        for q in list(LIVE):
            if q.poll() is None:
                q.kill()
        subprocess.run([str(TOPO), "down"])
        shutil.rmtree(WORK["dir"], ignore_errors=True)

    with open(a.out / "results.jsonl", "w") as f:
        f.write(json.dumps({"limits": limits}) + "\n")
        for r in rows:
            f.write(json.dumps(r) + "\n")
    c = limits["link_Bps"]
    with open(a.out / "results.csv", "w") as f:
        f.write("peer,algo,n,bytes,median_us,min_us,max_us,iters,batches,algbw_GBps,busbw_GBps,busbw_Gbitps,"
                "busbw_over_link,cores_busy,cores_kernel,correct\n")
        for r in rows:
            ab, bb = bw(r)
            cpu = r.get("cpu") or {}
            f.write(f'{r["peer"]},{r["algo"]},{r["n"]},{r["bytes"]},{r["median_us"]},{r["min_us"]},{r["max_us"]},'
                    f'{r.get("iters", "")},{r.get("batches", "")},{ab / 1e9:.5f},{bb / 1e9:.5f},{gbit(bb):.4f},'
                    f'{bb / c:.4f},{cpu.get("cores_busy", "")},{cpu.get("cores_kernel", "")},'
                    f'{str(r["correct"]).lower()}\n')
    bidir = limits.get("link_bidir_Bps") or []
    text = (f"Command: `{a.command}` ({started}, {len(rows)} measurements)\n\n"
            f"Machine: {machine()}; load average (1 / 5 / 15 min) {load_start} at the start ({waited}), "
            f"{load()} at the end.\n\n"
            f"Topology: {len(hosts) and max(hosts)} network namespaces on one Linux bridge, one veth pair each, "
            f"every link shaped to {a.rate} in both directions (tc tbf, burst {a.burst}); members address each "
            f"other by the hosts' IPs ({SUBNET}). Link C = {gbit(c):.3f} Gbit/s (iperf3, one flow; "
            f"{gbit(limits['link_start_Bps']):.3f} at the start, {gbit(limits['link_end_Bps']):.3f} at the end: C is "
            "the larger)"
            + (f"; both directions at once {gbit(bidir[0]):.3f} + {gbit(bidir[1]):.3f} Gbit/s" if len(bidir) == 2
               else "") + ".\n" + tables(rows, limits, a))
    if failures:
        text += "\nFailures:\n" + "".join(f"- {x}\n" for x in failures)
    (a.out / "tables.md").write_text(text)
    plotted = plot(rows, limits, a.out / "busbw.png")
    print(text)
    log(f"wrote {a.out}/results.jsonl, results.csv, tables.md" + (", busbw.png" if plotted else ""))
    return 1 if failures else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt as e:
        log(f"interrupted ({e}): cleaned up")
        sys.exit(130)
