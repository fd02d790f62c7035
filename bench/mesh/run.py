#!/usr/bin/env python3
"""Sockets per member, formation and the first all-reduce against N, with
N local member processes (rm-bench-mesh-member, one per rank) on 127.0.0.1.

    bench/mesh/run.py --bin build/bin -n 16 64 128 [--algorithm ring] [--json out.jsonl]

Each member forms the group from its TF_CONFIG (workers 0..N-1, Kubeflow's
shape) and RINGMASTER_PORT, runs one 4-byte float32 all-reduce (ring unless
told), counts its own sockets (/proc/self/fd) while the whole group is still
up, and prints one JSON line. Per N this prints one row: the wall time from
the first process started to the last member's all-reduce done, the slowest
member's formation, and the sockets per member (min..max).

Ports: the TF_CONFIG and agent ports are taken from --port-base up (below the
kernel's ephemeral range, where the data listeners' ports come from, so no
member's listener can take a port another member is about to bind), each
checked free first.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "common" / "ports"))
from free_ports import free_ports_from  # noqa: E402  (common/ports/free_ports.py)


def tf_config(ports: list[int], rank: int) -> str:
    return json.dumps({"cluster": {"worker": [f"127.0.0.1:{p}" for p in ports]},
                       "task": {"type": "worker", "index": rank}, "environment": "cloud"})


def run_group(exe: Path, n: int, algorithm: str, port_base: int, timeout: float) -> dict:
    ports = free_ports_from(port_base, 2 * n)
    tf_ports, agent_ports = ports[:n], ports[n:]
    base_env = {k: v for k, v in os.environ.items() if not k.startswith("RINGMASTER_") and k != "TF_CONFIG"}
    procs = []
    start = time.time()
    for r in range(n):
        env = dict(base_env, TF_CONFIG=tf_config(tf_ports, r), RINGMASTER_PORT=",".join(map(str, agent_ports)))
        procs.append(subprocess.Popen([str(exe), algorithm], env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True))
    rows, errors = [], []
    deadline = start + timeout
    for r, p in enumerate(procs):
        try:
            out, err = p.communicate(timeout=max(1.0, deadline - time.time()))
        except subprocess.TimeoutExpired:
            p.kill()
            out, err = p.communicate()
            errors.append(f"rank {r}: timed out")
        for line in out.splitlines():
            if line.startswith("{"):
                rows.append(json.loads(line))
        if p.returncode:
            errors.append(f"rank {r}: exit {p.returncode}: {err.strip().splitlines()[-1:] if err else ''}")
    result = {"n": n, "algorithm": algorithm, "members_reported": len(rows), "ok": not errors and len(rows) == n}
    if rows:
        socks = [x["sockets"] for x in rows]
        result.update({
            "wall_s": round((max(x["done_unix_ms"] for x in rows) / 1000 - start), 2),
            "slowest_formation_s": round(max(x["formed_ms"] for x in rows) / 1000, 2),
            "sockets_min": min(socks), "sockets_max": max(socks),
            "sockets_median": sorted(socks)[len(socks) // 2],
            "correct": all(x["correct"] for x in rows),
        })
    if errors:
        result["errors"] = errors[:5]
    return result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", type=Path, default=Path("build/bin"), help="where rm-bench-mesh-member is")
    ap.add_argument("-n", type=int, nargs="+", default=[16, 64, 128], help="group sizes")
    ap.add_argument("--algorithm", default="ring", help="the first all-reduce's algorithm (ring, rd, hd, auto)")
    ap.add_argument("--port-base", type=int, default=20000)
    ap.add_argument("--timeout", type=float, default=300, help="seconds per group")
    ap.add_argument("--json", type=Path, help="also append one JSON line per N here")
    a = ap.parse_args()
    exe = a.bin / "rm-bench-mesh-member"
    print("| N | formation + first all-reduce (wall) | slowest formation | sockets per member | result |")
    print("| ---: | ---: | ---: | ---: | --- |")
    ok = True
    for n in a.n:
        r = run_group(exe, n, a.algorithm, a.port_base, a.timeout)
        ok &= r["ok"]
        socks = (f'{r["sockets_median"]} ({r["sockets_min"]}..{r["sockets_max"]})' if "sockets_min" in r else "-")
        status = "ok" if r["ok"] else "; ".join(r.get("errors", ["incomplete"]))
        print(f'| {n} | {r.get("wall_s", "-")} s | {r.get("slowest_formation_s", "-")} s | {socks} | {status} |',
              flush=True)
        if a.json:
            with a.json.open("a") as f:
                f.write(json.dumps(r) + "\n")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
