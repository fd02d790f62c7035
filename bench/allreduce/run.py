#!/usr/bin/env python3
"""The side-by-side all-reduce comparison: Ringmaster, Gloo, Open MPI and
TensorFlow on the same machine in one run, with the machine's limits
(loopback TCP throughput by iperf3, memory copy bandwidth) measured in the
same run. Started by `scripts/bench allreduce`.

Writes into --out: results.jsonl (every measurement), results.csv, tables.md
(a table per group size with time, algbw, busbw and the ratio Ringmaster /
best TCP peer) and busbw.png when matplotlib is available.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "common" / "ports"))
from free_ports import free_ports  # noqa: E402  (common/ports/free_ports.py)

GLOO_ALGOS = ["ring", "ring_chunked", "halving_doubling", "bcube"]
# Peers that move bytes over TCP: the bar Ringmaster is measured against.
TCP_PEERS = {"gloo/ring", "gloo/ring_chunked", "gloo/halving_doubling", "gloo/bcube", "mpi/tcp",
             "tensorflow/ring"}


def log(msg):
    print(f"[bench] {msg}", file=sys.stderr, flush=True)


def parse_lines(text):
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("{"):
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                pass
    return out


def run_group(cmds, env=None, timeout=1800):
    """Starts one process per rank; returns rank 0's JSON lines."""
    procs = [subprocess.Popen(c, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env=(env[i] if env else None)) for i, c in enumerate(cmds)]
    outs = []
    deadline = time.time() + timeout
    for p in procs:
        try:
            o, e = p.communicate(timeout=max(1, deadline - time.time()))
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            raise RuntimeError(f"timed out after {timeout}s: {' '.join(cmds[0])}")
        outs.append((p.returncode, o, e))
    for rc, o, e in outs:
        if rc != 0:
            raise RuntimeError(f"exit code {rc}: {e.strip()[-2000:]}")
    return parse_lines(outs[0][1])


def machine():
    """What the figures were taken on: CPU, cores, memory, kernel."""
    cpu = "unknown CPU"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
        mem = next(int(l.split()[1]) for l in open("/proc/meminfo") if l.startswith("MemTotal")) / 2**20
    except (OSError, StopIteration):
        mem = 0
    return f"{os.cpu_count()} vCPU ({cpu}), {mem:.0f} GiB, Linux {os.uname().release}"


def load():
    return " / ".join(f"{x:.2f}" for x in os.getloadavg())


def measure_iperf3(seconds):
    port = free_ports(1)[0]
    server = subprocess.Popen(["iperf3", "-s", "-B", "127.0.0.1", "-p", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        # Retry the client until the server listens (bounded); a probe
        # connection would count as a test of its own.
        for _ in range(50):
            out = subprocess.run(["iperf3", "-c", "127.0.0.1", "-p", str(port), "-t", str(seconds), "-J"],
                                 capture_output=True, text=True, timeout=seconds + 30)
            data = json.loads(out.stdout or "{}")
            if "sum_received" in data.get("end", {}):
                return data["end"]["sum_received"]["bits_per_second"] / 8
            time.sleep(0.1)
        raise RuntimeError(f"iperf3 gave no result: {out.stdout[-500:]} {out.stderr[-500:]}")
    finally:
        server.kill()
        server.wait()


def size_args(a):
    return ["--min", str(a.min), "--max", str(a.max), "--factor", str(a.factor), "--batches", str(a.batches)]


def bench_gloo(a, n, algo):
    store = tempfile.mkdtemp(prefix="rm-gloo-")
    cmds = [[str(a.bin / "rm-bench-gloo"), "--rank", str(r), "--size", str(n), "--store", store, "--algo", algo]
            + size_args(a) for r in range(n)]
    return run_group(cmds)


def bench_mpi(a, n, transport):
    btl = "tcp,self" if transport == "tcp" else "vader,self"
    cmd = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", str(n), "--bind-to", "none",
           "--mca", "pml", "ob1", "--mca", "btl", btl, "--mca", "btl_tcp_if_include", "lo",
           str(a.bin / "rm-bench-mpi"), "--algo", transport] + size_args(a)
    return run_group([cmd])


def tf_configs(a, n):
    """TF_CONFIGs from our generator, service names mapped to 127.0.0.1."""
    job = Path(tempfile.mkdtemp(prefix="rm-tf-")) / "job.yaml"
    job.write_text(f"""apiVersion: ringmaster.io/v1alpha1
kind: DistributedJob
metadata: {{name: bench}}
spec:
  replicaSpecs:
    Worker:
      replicas: {n}
      template: {{spec: {{containers: [{{name: tf, image: tensorflow}}]}}}}
""")
    ports = free_ports(n)
    configs = []
    for i in range(n):
        text = subprocess.run([str(a.ringmaster), "tfconfig", str(job), "--replica", f"worker:{i}"],
                              capture_output=True, text=True, check=True).stdout
        cfg = json.loads(text)
        cfg["cluster"]["worker"] = [f"127.0.0.1:{p}" for p in ports]
        configs.append(json.dumps(cfg))
    return configs


def bench_tf(a, n):
    envs = []
    for cfg in tf_configs(a, n):
        env = dict(os.environ, TF_CONFIG=cfg, TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES="")
        envs.append(env)
    script = Path(__file__).with_name("tf_bench.py")
    cmds = [[str(a.python), str(script)] + size_args(a) for _ in range(n)]
    return run_group(cmds, env=envs, timeout=3600)


def bench_ringmaster(a, n):
    """N `ringmaster bench --member` processes, the group formed from the
    TF_CONFIGs our generator made (as TensorFlow's is): AUTO, RING and
    recursive doubling forced, interleaved per size, in one group."""
    envs = []
    for cfg in tf_configs(a, n):
        env = dict(os.environ, TF_CONFIG=cfg)
        for k in [k for k in env if k.startswith("RINGMASTER_")]:
            del env[k]  # the agent's defaults, as a job without options gets
        envs.append(env)
    cmds = [[str(a.ringmaster), "bench", "--member", "-a", "all", "-b", str(a.min), "-e", str(a.max),
             "-f", str(a.factor), "--batches", str(a.batches)] for _ in range(n)]
    return run_group(cmds, env=envs)


def busbw(row):
    n, t = row["n"], row["median_us"] * 1e-6
    algbw = row["bytes"] / t
    return algbw, algbw * 2 * (n - 1) / n


def human(nbytes):
    for unit in ["B", "KiB", "MiB", "GiB"]:
        if nbytes < 1024:
            return f"{nbytes:g} {unit}"
        nbytes /= 1024
    return f"{nbytes:g} TiB"


def row_of(sel, peer, size):
    return next((x for x in sel if f'{x["peer"]}/{x["algo"]}' == peer and x["bytes"] == size), None)


def tables(rows, limits):
    out = []
    c = limits.get("loopback_Bps")
    for n in sorted({r["n"] for r in rows}):
        sel = [r for r in rows if r["n"] == n]
        peers = sorted({f'{r["peer"]}/{r["algo"]}' for r in sel}, key=lambda p: (not p.startswith("ringmaster"), p))
        sizes = sorted({r["bytes"] for r in sel})
        out.append(f"\n### N = {n}\n")
        if c:
            out.append(f"Loopback TCP C = {c / 1e9:.2f} GB/s (iperf3); ring bound on busbw = C/N = "
                       f"{c / n / 1e9:.2f} GB/s; 0.7 x C/N = {0.7 * c / n / 1e9:.2f} GB/s.\n")
        out.append("Each cell: median time per call (µs) / busbw (GB/s); `!` marks a wrong result. "
                   "ratio = busbw of ringmaster/auto / busbw of the best TCP peer at that size "
                   "(the same as best time / our time; >= 1 means Ringmaster is as fast or faster).\n")
        out.append("| size | " + " | ".join(peers) + " | best TCP peer | ratio |")
        out.append("|---" * (len(peers) + 3) + "|")
        ratios = {}
        for s in sizes:
            cells, best_tcp, best_name, ours = [], None, "-", None
            for p in peers:
                r = row_of(sel, p, s)
                if not r:
                    cells.append("-")
                    continue
                _, bb = busbw(r)
                cells.append(f'{r["median_us"]:.1f} / {bb / 1e9:.3f}' + ("" if r["correct"] else " !"))
                if p in TCP_PEERS and r["correct"] and bb > (best_tcp or 0):
                    best_tcp, best_name = bb, p
                if p == "ringmaster/auto" and r["correct"]:
                    ours = bb
            ratio = ours / best_tcp if ours and best_tcp else None
            ratios[s] = ratio
            out.append(f"| {human(s)} | " + " | ".join(cells) + f" | {best_name} | "
                       + (f"{ratio:.2f}" if ratio else "-") + " |")
        out.append("")
        out.append(targets(sel, n, sizes, ratios, c))
    return "\n".join(out) + "\n"


def targets(sel, n, sizes, ratios, c):
    """The performance targets for one group size, as a list."""
    def verdict(ok):
        return "**holds**" if ok else "**not met**"
    lines = [f"Targets, N = {n}:"]
    big = [s for s in sizes if s >= 64 << 10 and ratios.get(s) is not None]
    miss = [f"{human(s)} ({ratios[s]:.2f})" for s in big if ratios[s] < 1.0]
    lines.append(f"- busbw >= 1.0x best TCP peer at every size >= 64 KiB: {verdict(big and not miss)}"
                 + (f"; below at {', '.join(miss)}" if miss else "")
                 + (f" (lowest {min(ratios[s] for s in big):.2f})" if big else ""))
    small = [s for s in sizes if s <= 4 << 10 and ratios.get(s) is not None]
    miss = [f"{human(s)} ({ratios[s]:.2f})" for s in small if ratios[s] < 1.0]
    lines.append(f"- latency <= 1.0x best TCP peer at sizes <= 4 KiB: {verdict(small and not miss)}"
                 + (f"; slower at {', '.join(miss)}" if miss else "")
                 + (f" (lowest ratio {min(ratios[s] for s in small):.2f})" if small else ""))
    s64 = 64 << 20
    ours, tf = row_of(sel, "ringmaster/auto", s64), row_of(sel, "tensorflow/ring", s64)
    if ours and tf:
        r = busbw(ours)[1] / busbw(tf)[1]
        lines.append(f"- busbw >= 1.5x TensorFlow's at 64 MiB: {verdict(r >= 1.5)} ({r:.2f}x)")
    else:
        lines.append("- busbw >= 1.5x TensorFlow's at 64 MiB: not measured")
    if ours and c:
        r = busbw(ours)[1] / (c / n)
        lines.append(f"- busbw at 64 MiB >= 0.7 x C/N: {verdict(r >= 0.7)} ({busbw(ours)[1] / 1e9:.3f} GB/s "
                     f"= {r:.2f} x C/N)")
    else:
        lines.append("- busbw at 64 MiB >= 0.7 x C/N: not measured")
    return "\n".join(lines) + "\n"


def plot(rows, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        log("matplotlib not available: no plot")
        return False
    ns = sorted({r["n"] for r in rows})
    if not ns:
        return False
    fig, axes = plt.subplots(1, len(ns), figsize=(7 * len(ns), 5), squeeze=False)
    for ax, n in zip(axes[0], ns):
        sel = [r for r in rows if r["n"] == n]
        for p in sorted({f'{r["peer"]}/{r["algo"]}' for r in sel}):
            pts = sorted((r["bytes"], busbw(r)[1] / 1e9) for r in sel if f'{r["peer"]}/{r["algo"]}' == p)
            ax.plot([x for x, _ in pts], [y for _, y in pts], marker="o", markersize=3, label=p,
                    linewidth=2.5 if p.startswith("ringmaster") else 1.2)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("message size (bytes)")
        ax.set_ylabel("busbw (GB/s)")
        ax.set_title(f"float32 SUM all-reduce, N = {n}")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return True


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bin", type=Path, required=True, help="directory of rm-bench-* programs")
    p.add_argument("--ringmaster", type=Path, required=True)
    p.add_argument("--python", type=Path, help="python with TensorFlow (omit to skip TensorFlow)")
    p.add_argument("--n", default="2,4")
    p.add_argument("--min", type=int, default=4)
    p.add_argument("--max", type=int, default=256 << 20)
    p.add_argument("--factor", type=int, default=4)
    p.add_argument("--batches", type=int, default=5)
    p.add_argument("--peers", default="ringmaster,gloo,mpi,tensorflow")
    p.add_argument("--iperf-seconds", type=int, default=5)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--command", default=" ".join(sys.argv), help="the command to name in the tables")
    a = p.parse_args()
    started, load_start = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), load()
    a.out.mkdir(parents=True, exist_ok=True)
    peers = set(a.peers.split(","))

    limits = {}
    log("limits: memcpy")
    limits["memcpy_GBps"] = parse_lines(subprocess.run([str(a.bin / "rm-bench-memcpy")], capture_output=True,
                                                       text=True, check=True).stdout)[0]["GBps"]
    log("limits: iperf3 on loopback")
    limits["loopback_Bps"] = measure_iperf3(a.iperf_seconds)
    log(f"limits: memcpy {limits['memcpy_GBps']:.2f} GB/s, loopback {limits['loopback_Bps'] / 1e9:.2f} GB/s")

    rows, failures = [], []
    for n in [int(x) for x in a.n.split(",")]:
        jobs = []
        if "ringmaster" in peers:
            jobs.append(("ringmaster/auto,ring,rd", lambda n=n: bench_ringmaster(a, n)))
        if "gloo" in peers:
            jobs += [(f"gloo/{algo}", lambda n=n, algo=algo: bench_gloo(a, n, algo)) for algo in GLOO_ALGOS]
        if "mpi" in peers:
            jobs += [(f"mpi/{t}", lambda n=n, t=t: bench_mpi(a, n, t)) for t in ["tcp", "shm"]]
        if "tensorflow" in peers and a.python:
            jobs.append(("tensorflow/ring", lambda n=n: bench_tf(a, n)))
        for name, fn in jobs:
            log(f"N={n} {name}")
            t0 = time.time()
            try:
                got = fn()
                if not got:
                    raise RuntimeError("no results")
                rows += got
                bad = [r["bytes"] for r in got if not r["correct"]]
                if bad:
                    failures.append(f"N={n} {name}: wrong results at {bad}")
                log(f"N={n} {name}: {len(got)} sizes in {time.time() - t0:.0f}s")
            except Exception as e:  # a peer that fails is reported, the others still run
                failures.append(f"N={n} {name}: {e}")
                log(f"N={n} {name}: FAILED: {e}")

    with open(a.out / "results.jsonl", "w") as f:
        f.write(json.dumps({"limits": limits}) + "\n")
        for r in rows:
            f.write(json.dumps(r) + "\n")
    with open(a.out / "results.csv", "w") as f:
        f.write("peer,algo,n,bytes,median_us,min_us,max_us,algbw_GBps,busbw_GBps,correct\n")
        for r in rows:
            ab, bb = busbw(r)
            f.write(f'{r["peer"]},{r["algo"]},{r["n"]},{r["bytes"]},{r["median_us"]},{r["min_us"]},{r["max_us"]},'
                    f'{ab / 1e9:.4f},{bb / 1e9:.4f},{str(r["correct"]).lower()}\n')
    text = (f"Command: `{a.command}` ({started}, {len(rows)} measurements)\n\n"
            f"Machine: {machine()}; load average (1 / 5 / 15 min) {load_start} at the start, "
            f"{load()} at the end.\n\n"
            f"Limits in this run: memcpy {limits['memcpy_GBps']:.2f} GB/s (one thread), "
            f"loopback TCP {limits['loopback_Bps'] / 1e9:.2f} GB/s (iperf3, one stream).\n" + tables(rows, limits))
    if failures:
        text += "\nFailures:\n" + "".join(f"- {x}\n" for x in failures)
    (a.out / "tables.md").write_text(text)
    plotted = plot(rows, a.out / "busbw.png")
    print(text)
    log(f"wrote {a.out}/results.jsonl, results.csv, tables.md" + (", busbw.png" if plotted else ""))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
