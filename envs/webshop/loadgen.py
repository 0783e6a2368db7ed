"""A bounded HTTP load generator for the WebShop site (``agent-gym serve webshop``).

Each simulated client is a thread that shops like a scripted agent over real HTTP
(``http.client``, one connection per request, as the server speaks HTTP/1.0): it opens a
session on ``/``, keeps the ``webshop_client`` cookie it is given, searches, reads the
results, goes back to the search page, and starts a new session every few searches. Every
request is timed; a connection error, a timeout or an unexpected status is an error.

Used by the slow load test and by ``benchmarks/bench_webshop_server.py``::

    result = run_load("http://127.0.0.1:3000", clients=100, seconds=20)
    print(result.summary())
"""

from __future__ import annotations

import http.client
import random
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from urllib.parse import quote, urlsplit

#: Queries the clients search for.
QUERIES = ("red shoes", "lamp", "coffee maker", "phone case", "t-shirt", "water bottle",
           "face cream", "usb charger", "desk chair", "headphones")  # fmt: skip
#: Searches per session before a client opens a new one.
SEARCHES_PER_SESSION = 3


@dataclass
class LoadResult:
    """What a load run measured.

    Attributes:
        clients: Concurrent clients.
        seconds: Wall time of the run.
        latencies: Seconds per successful request.
        errors: Error kind -> count (``"status 503"``, ``"ConnectionResetError"``...).
        sessions: Sessions opened.
    """

    clients: int
    seconds: float
    latencies: list[float] = field(default_factory=list)
    errors: Counter[str] = field(default_factory=Counter)
    sessions: int = 0

    @property
    def requests(self) -> int:
        """Requests sent (successes and errors)."""
        return len(self.latencies) + sum(self.errors.values())

    def percentile(self, q: float) -> float:
        """The ``q``-th percentile (0-100) of the successful requests' latencies, in s."""
        if not self.latencies:
            return float("nan")
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, int(q / 100 * len(ordered)))]

    def summary(self) -> dict[str, float | int | dict[str, int]]:
        """Throughput, latency percentiles and errors, rounded for printing."""
        return {
            "clients": self.clients,
            "requests": self.requests,
            "sessions": self.sessions,
            "requests_per_s": round(self.requests / self.seconds, 1) if self.seconds else 0.0,
            "p50_ms": round(1000 * self.percentile(50), 1),
            "p99_ms": round(1000 * self.percentile(99), 1),
            "max_ms": round(1000 * max(self.latencies, default=float("nan")), 1),
            "errors": dict(self.errors),
        }


class _Client:
    def __init__(self, host: str, port: int, timeout: float, result: LoadResult, lock) -> None:
        self.host, self.port, self.timeout = host, port, timeout
        self.result, self.lock = result, lock
        self.cookie: str | None = None

    def get(self, path: str, expect: int) -> str | None:
        """GET ``path``; return the Location (303) or the body (200), None on an error."""
        start = time.perf_counter()
        conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
        try:
            headers = {"Cookie": f"webshop_client={self.cookie}"} if self.cookie else {}
            conn.request("GET", path, headers=headers)
            response = conn.getresponse()
            body = response.read()
            status, location = response.status, response.getheader("Location")
            set_cookie = response.getheader("Set-Cookie")
        except (OSError, http.client.HTTPException) as exc:
            with self.lock:
                self.result.errors[type(exc).__name__] += 1
            return None
        finally:
            conn.close()
        elapsed = time.perf_counter() - start
        with self.lock:
            if status != expect:
                self.result.errors[f"status {status}"] += 1
                return None
            self.result.latencies.append(elapsed)
        if set_cookie and set_cookie.startswith("webshop_client="):
            self.cookie = set_cookie.split(";", 1)[0].split("=", 1)[1]
        return location if expect == 303 else body.decode("utf-8", "replace")

    def run(self, deadline: float, rng: random.Random) -> None:
        while time.monotonic() < deadline:
            page = self.get(f"/?seed={rng.randrange(10_000)}", 303)
            if page is None:
                continue
            with self.lock:
                self.result.sessions += 1
            if self.get(page, 200) is None:
                continue
            for _ in range(SEARCHES_PER_SESSION):
                if time.monotonic() >= deadline:
                    return
                q = quote(rng.choice(QUERIES))
                steps = [(f"{page}search?q={q}", 303), (page, 200),
                         (f"{page}do?action={quote('click[back to search]')}", 303), (page, 200)]  # fmt: skip
                for path, expect in steps:
                    if self.get(path, expect) is None:
                        break


def run_load(
    base_url: str, clients: int = 100, seconds: float = 20.0, timeout: float = 60.0, seed: int = 0
) -> LoadResult:
    """Shop with ``clients`` concurrent clients for ``seconds``; return what was measured.

    Args:
        base_url: The site, e.g. ``"http://127.0.0.1:3000"``.
        clients: Concurrent clients (threads).
        seconds: How long clients keep starting requests (the run ends when the last
            request in flight returns).
        timeout: Per-request socket timeout, in seconds; a request past it is an error.
        seed: Seed of the clients' choices.
    """
    url = urlsplit(base_url)
    if url.scheme != "http" or not url.hostname or not url.port:
        raise ValueError(f"base_url={base_url!r}: expected http://host:port")
    result, lock = LoadResult(clients=clients, seconds=0.0), threading.Lock()
    start = time.monotonic()
    deadline = start + seconds
    threads = [
        threading.Thread(
            target=_Client(url.hostname, url.port, timeout, result, lock).run,
            args=(deadline, random.Random(seed * 100_003 + i)),
            daemon=True,
        )
        for i in range(clients)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    result.seconds = time.monotonic() - start
    return result
