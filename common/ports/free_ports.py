"""Free ports on 127.0.0.1 for the local groups of the Python tests and
benches: the one Python finder, beside the C++ one (free_ports.h).

    sys.path.insert(0, str(ROOT / "common" / "ports"))
    from free_ports import free_ports

No third-party imports and no newer Python than 3.7: it is loaded by the
tests' venvs, TensorFlow's and Horovod's venvs and a GPU machine's python3.
"""
from __future__ import annotations

import random
import socket

EPHEMERAL_RANGE = "/proc/sys/net/ipv4/ip_local_port_range"


def port_is_free(port: int) -> bool:
    """Whether 127.0.0.1:port could be bound a moment ago."""
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", port))
        return True
    except OSError:
        return False
    finally:
        s.close()


def free_ports(n: int) -> list[int]:
    """n distinct free ports from just below ip_local_port_range, at random.

    A port the kernel hands out for bind(0) comes from that ephemeral range,
    where another process's outgoing connection can take it between this
    check and the member's bind ("cannot serve ... on port"); below the range
    nothing is handed out unasked (as free_ports.h does)."""
    low = 32768
    try:
        with open(EPHEMERAL_RANGE) as f:
            low = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        pass
    pick = random.SystemRandom()
    ports: list[int] = []
    while len(ports) < n:
        port = pick.randrange(max(1024, low - 16384), low)
        if port not in ports and port_is_free(port):
            ports.append(port)
    return ports


def free_ports_from(base: int, n: int) -> list[int]:
    """The first n free ports from `base` up, in order: for a caller told
    where its ports go (bench/mesh/run.py --port-base)."""
    ports, port = [], base
    while len(ports) < n:
        if port_is_free(port):
            ports.append(port)
        port += 1
    return ports
