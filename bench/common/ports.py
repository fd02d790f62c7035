"""Free TCP ports on 127.0.0.1 for the Python benchmarks' local groups
(bench/allreduce/run.py, bench/tensorflow/*.py).

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "common"))
    from ports import free_ports
"""
from __future__ import annotations

import socket


def free_ports(n: int) -> list[int]:
    """n distinct ports the kernel had free on 127.0.0.1 a moment ago: all n
    sockets are bound at once (so no two are the same), then closed for the
    group's processes to bind."""
    socks = []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()
