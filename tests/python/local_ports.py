"""Free local ports for test groups, shared by the Python and TF tests."""

import random
import socket
from typing import List


def free_ports(n: int) -> List[int]:
    """n distinct free ports from just below ip_local_port_range, at random.

    A port the kernel hands out for bind(0) comes from that ephemeral range,
    where another process's outgoing connection can take it between this
    check and the member's bind ("cannot serve ... on port"); below the range
    nothing is handed out unasked (as cli/ports/free_ports.h does)."""
    low = 32768
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            low = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        pass
    pick = random.SystemRandom()
    ports = []
    while len(ports) < n:
        port = pick.randrange(max(1024, low - 16384), low)
        if port in ports:
            continue
        s = socket.socket()
        try:
            s.bind(("127.0.0.1", port))
            ports.append(port)
        except OSError:
            pass
        finally:
            s.close()
    return ports
