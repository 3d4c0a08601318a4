"""Loopback ports for the tests' servers and processes.

A port the OS hands out for `bind(("127.0.0.1", 0))` comes from the ephemeral range, the
range every outgoing connection's local port comes from too. Between the moment a test
learns such a port and the moment the process it starts binds it, one of the thousands of
connections the suite makes (a pool's, a worker's, another test's) may take it, and the
server exits 3 ("address already in use"); the OS may also hand the same port out twice
in a row. Seen in CI: an `agentrun api` of the connection-budget test exited 3 while its
twin served both clients. So the tests take ports below the ephemeral range, which no
outgoing connection uses, each pytest-xdist worker from a slice of its own, never the same
port twice in a process, and only a port nothing holds when it is asked for."""

from __future__ import annotations

import os
import random
import socket
import threading

_FLOOR = 10_000  # above the well-known services (PostgreSQL, Redis, RabbitMQ, ...)
_SLICES = 8  # xdist workers gw0..gw7 get slices of their own (more wrap around)


def _ephemeral_range() -> tuple[int, int]:
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as handle:
            low, high = (int(part) for part in handle.read().split())
    except (OSError, ValueError):
        return 32_768, 60_999  # Linux's default
    return low, high


def _slice() -> range:
    low, high = _ephemeral_range()
    start, end = (_FLOOR, low) if low - _FLOOR >= 2_000 else (high + 1, 65_536)
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw")
    index = int(worker) % _SLICES if worker.isdigit() else 0
    size = (end - start) // _SLICES
    return range(start + index * size, start + (index + 1) * size)


_ports = _slice()
_lock = threading.Lock()
# A random start: a process this one starts (a bench script under test) shares its slice.
_next = random.randrange(len(_ports))


def free_port() -> int:
    """A loopback port outside the ephemeral range that nothing holds now and that this
    process has not handed out before (until its slice of a few thousand wraps)."""
    global _next
    with _lock:
        for _ in range(len(_ports)):
            port = _ports[_next % len(_ports)]
            _next += 1
            with socket.socket() as probe:
                try:
                    probe.bind(("127.0.0.1", port))
                except OSError:
                    continue
            return port
    raise RuntimeError(f"no free loopback port in {_ports}")
