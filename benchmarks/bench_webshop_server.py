"""Throughput and latency of the WebShop HTTP server under concurrent clients (loopback).

Starts the real server (``agent_gym.envs.webshop.server.serve``) in its own process, then
runs ``agent_gym.envs.webshop.loadgen.run_load``: N client threads shopping over real HTTP
for S seconds. Prints requests/s, p50/p99 latency, errors, and (on Linux) how many times the
kernel's listen queue overflowed during the run (``TcpExt: ListenOverflows``).

    python benchmarks/bench_webshop_server.py --clients 100 --seconds 20
    python benchmarks/bench_webshop_server.py --clients 200 --seconds 20 --backlog 5
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

from agent_gym.envs.webshop.loadgen import run_load
from agent_gym.envs.webshop.server import LISTEN_BACKLOG


def listen_overflows() -> int | None:
    """The kernel's ListenOverflows counter (Linux), or None."""
    path = Path("/proc/net/netstat")
    if not path.is_file():
        return None
    lines = [line.split() for line in path.read_text().splitlines() if line.startswith("TcpExt:")]
    if len(lines) < 2:
        return None
    names, values = lines[0], lines[1]
    return int(values[names.index("ListenOverflows")]) if "ListenOverflows" in names else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=100)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--backlog", type=int, default=None, help="default: the server's own")
    parser.add_argument("--timeout", type=float, default=60.0, help="per-request timeout, s")
    args = parser.parse_args()
    extra = "" if args.backlog is None else f", backlog={args.backlog}"
    proc = subprocess.Popen(
        [sys.executable, "-c",
         f"from agent_gym.envs.webshop.server import serve; serve(port=0{extra})"],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        line = proc.stdout.readline()
        if not line.startswith("WebShop is open at "):
            raise SystemExit(f"the server did not start: {line!r}")
        url = line.split()[4].rstrip("/")
        before = listen_overflows()
        result = run_load(url, clients=args.clients, seconds=args.seconds, timeout=args.timeout)
        after = listen_overflows()
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    summary = result.summary()
    # System-wide counter: other processes' listen queues count too (a shared machine).
    summary["listen_overflows"] = None if before is None or after is None else after - before
    summary["backlog"] = args.backlog or LISTEN_BACKLOG
    print(
        f"# {time.strftime('%Y-%m-%d')} {platform.processor() or platform.machine()}, "
        f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}, "
        f"Python {platform.python_version()}"
    )
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
