"""The WebShop site over HTTP, for a person to shop in a browser (``agent-gym serve webshop``).

Each visitor gets a session, which is a :class:`~agent_gym.envs.webshop.env.WebShopEnv`; the
pages are the env's own HTML, so a person sees exactly what an agent reads. Routes (all GET,
so every page has a plain URL):

* ``/`` (optional ``?seed=N`` or ``?task_id=test-3``): a new session, redirected to its page;
* ``/s/<session>/``: the session's current page;
* ``/s/<session>/do?action=click[...]``: apply an action, then redirect to the page;
* ``/s/<session>/search?q=...``: the search box (``search[q]``).

After an action the server redirects (303) to the page, so reloading never repeats an action.

Under load (many agents on one machine): the listen backlog is :data:`LISTEN_BACKLOG` (the
standard library's 5 overflowed at 200 concurrent clients); a connection that sends nothing
for :data:`IDLE_TIMEOUT_S` is closed, so half-open connections do not hold threads forever.
Sessions belong to a *client*, named by the ``webshop_client`` cookie the server sets on
``/``. A client keeps at most :data:`MAX_SESSIONS_PER_CLIENT` sessions (its least recently
used one makes room), so one client's new sessions never evict another's; clients that never
send the cookie back cannot be told apart, and share :data:`MAX_UNCONFIRMED_PER_IP` per IP
address. Sessions unused for :data:`SESSION_IDLE_S` are dropped; at :data:`MAX_SESSIONS` in
all, a client's new session replaces its own oldest, and one with none is refused (503)
rather than given someone else's. The server listens on loopback by default.
"""

from __future__ import annotations

import html
import http.cookies
import re
import secrets
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from agent_gym.envs.webshop.env import WebShopEnv

#: Sessions kept in all; past this (and none expired) a new session is refused with 503.
MAX_SESSIONS = 4096
#: Sessions one client keeps; its least recently used one is dropped beyond this.
MAX_SESSIONS_PER_CLIENT = 16
#: Sessions kept per IP address for clients that have not sent their cookie back (yet): a
#: script that ignores cookies, or many clients arriving at once.
MAX_UNCONFIRMED_PER_IP = 256
#: A session unused this many seconds is dropped.
SESSION_IDLE_S = 3600.0
#: Pending connections the kernel queues (``listen`` backlog; Linux caps it at
#: ``net.core.somaxconn``). The stdlib default, 5, overflowed at 200 concurrent clients, and
#: 128 still overflowed there on 2 cores.
LISTEN_BACKLOG = 1024
#: A connection that sends nothing for this many seconds is closed.
IDLE_TIMEOUT_S = 30.0
#: Cookie naming the client.
CLIENT_COOKIE = "webshop_client"
_TOKEN = re.compile(r"[0-9a-f]{32}")


class SessionsFull(RuntimeError):
    """Every session slot is taken by a live session."""


@dataclass
class _Entry:
    env: WebShopEnv
    client: str
    lock: threading.Lock = field(default_factory=threading.Lock)
    last_used: float = field(default_factory=time.monotonic)


class _Sessions:
    """Session id -> env, grouped by client, one lock per env (browsers send in parallel).

    A client is named by its cookie. A cookie just issued is *unconfirmed* until a request
    sends it back; each IP keeps at most :data:`MAX_UNCONFIRMED_PER_IP` sessions of
    unconfirmed clients, so a script that ignores cookies and opens sessions in a loop drops
    its own, never those of clients that keep their cookie.
    """

    def __init__(
        self,
        env_kwargs: dict[str, Any],
        max_sessions: int = MAX_SESSIONS,
        per_client: int = MAX_SESSIONS_PER_CLIENT,
        idle_s: float = SESSION_IDLE_S,
    ) -> None:
        self.env_kwargs = env_kwargs
        self.max_sessions, self.per_client, self.idle_s = max_sessions, per_client, idle_s
        self._all: OrderedDict[str, _Entry] = OrderedDict()  # least recently used first
        self._by_client: dict[str, OrderedDict[str, None]] = {}
        self._unconfirmed: dict[str, OrderedDict[str, None]] = {}  # IP -> clients, oldest first
        self._ip_of: dict[str, str] = {}  # unconfirmed client -> its IP
        self._lock = threading.Lock()

    def __len__(self) -> int:
        with self._lock:
            return len(self._all)

    def _drop(self, sid: str) -> None:
        entry = self._all.pop(sid)
        owned = self._by_client[entry.client]
        del owned[sid]
        if not owned:
            del self._by_client[entry.client]
            self._forget(entry.client)
        entry.env.close()

    def _forget(self, client: str) -> None:
        ip = self._ip_of.pop(client, None)
        if ip is not None:
            del self._unconfirmed[ip][client]
            if not self._unconfirmed[ip]:
                del self._unconfirmed[ip]

    def confirmed(self, client: str) -> None:
        """``client`` sent its cookie back: it is told apart from others at its IP now."""
        with self._lock:
            self._forget(client)

    def _expire(self) -> None:
        cutoff = time.monotonic() - self.idle_s
        while self._all and next(iter(self._all.values())).last_used < cutoff:
            self._drop(next(iter(self._all)))

    def _check_room(self, client: str) -> None:
        """Raise :class:`SessionsFull` if ``client`` could not get a session now."""
        self._expire()
        if len(self._all) >= self.max_sessions and client not in self._by_client:
            raise SessionsFull(f"all {self.max_sessions} sessions are in use; try again later")

    def _make_room(self, client: str, ip: str | None) -> None:
        """Drop expired sessions, then the client's own oldest; refuse when all are live."""
        self._expire()
        while len(self._by_client.get(client, ())) >= self.per_client:
            self._drop(next(iter(self._by_client[client])))
        while ip is not None and len(self._unconfirmed.get(ip, ())) >= MAX_UNCONFIRMED_PER_IP:
            oldest = next(iter(self._unconfirmed[ip]))
            for sid in list(self._by_client[oldest]):
                self._drop(sid)
        while len(self._all) >= self.max_sessions:
            if client not in self._by_client:  # nothing of its own to give up
                raise SessionsFull(f"all {self.max_sessions} sessions are in use; try again later")
            self._drop(next(iter(self._by_client[client])))

    def new(self, client: str, seed: int | None, task_id: str | None, ip: str | None) -> str:
        """Open a session for ``client``; ``ip`` is given when its cookie was just issued."""
        with self._lock:
            self._check_room(client)  # fail fast, before building an env (takes nothing)
        sid = secrets.token_hex(8)
        env = WebShopEnv(**self.env_kwargs)
        env.link_prefix = f"/s/{sid}"
        env.reset(seed=seed, options={"task_id": task_id} if task_id else None)
        with self._lock:
            self._make_room(client, ip)
            self._all[sid] = _Entry(env, client)
            self._by_client.setdefault(client, OrderedDict())[sid] = None
            if ip is not None and client not in self._ip_of:
                self._ip_of[client] = ip
                self._unconfirmed.setdefault(ip, OrderedDict())[client] = None
        return sid

    def get(self, sid: str) -> _Entry | None:
        with self._lock:
            entry = self._all.get(sid)
            if entry is None:
                return None
            entry.last_used = time.monotonic()
            self._all.move_to_end(sid)
            self._by_client[entry.client].move_to_end(sid)
            return entry


def _page(title: str, message: str) -> str:
    return (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
        f"</head><body><h2>{html.escape(title)}</h2><p>{html.escape(message)}</p>"
        "<p><a href='/'>Start a new shopping task</a></p></body></html>"
    )


def _handler(sessions: _Sessions, idle_timeout: float | None) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        server_version = "agent-gym-webshop"
        # socketserver applies this to the connection: a read that waits longer raises, and
        # the stdlib then closes the connection and frees the thread.
        timeout = idle_timeout

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib name
            pass  # quiet: a person's terminal is not a request log

        def _send(
            self, status: int, body: str, location: str | None = None, cookie: str | None = None
        ) -> None:
            data = body.encode("utf-8", errors="replace")  # pages are encodable; be safe
            self.send_response(status)
            if location:
                self.send_header("Location", location)
            if cookie:
                self.send_header(
                    "Set-Cookie", f"{CLIENT_COOKIE}={cookie}; Path=/; HttpOnly; SameSite=Lax"
                )
            if status == HTTPStatus.SERVICE_UNAVAILABLE:
                self.send_header("Retry-After", "60")
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(data)

        def _cookie(self) -> str | None:
            """The client's cookie, when the request sends a well-formed one."""
            jar = http.cookies.SimpleCookie()
            try:
                jar.load(self.headers.get("Cookie", ""))
            except http.cookies.CookieError:
                return None
            morsel = jar.get(CLIENT_COOKIE)
            return morsel.value if morsel and _TOKEN.fullmatch(morsel.value) else None

        def do_GET(self) -> None:  # noqa: N802 - stdlib name
            url = urlsplit(self.path)
            query = {k: v[-1] for k, v in parse_qs(url.query).items()}
            parts = [p for p in url.path.split("/") if p]
            cookie = self._cookie()
            if cookie is not None:
                sessions.confirmed(cookie)
            try:
                if not parts:
                    new_cookie = None if cookie else secrets.token_hex(16)
                    seed = int(query["seed"]) if query.get("seed", "").isdecimal() else None
                    sid = sessions.new(
                        cookie or new_cookie,
                        seed,
                        query.get("task_id"),
                        ip=self.client_address[0] if new_cookie else None,
                    )
                    self._send(HTTPStatus.SEE_OTHER, "", location=f"/s/{sid}/", cookie=new_cookie)
                    return
                if len(parts) < 2 or parts[0] != "s" or len(parts) > 3:
                    self._send(HTTPStatus.NOT_FOUND, _page("Not found", self.path))
                    return
                entry = sessions.get(parts[1])
                if entry is None:
                    self._send(HTTPStatus.NOT_FOUND, _page("Unknown session", "It expired."))
                    return
                with entry.lock:
                    env = entry.env
                    if len(parts) == 3:
                        if parts[2] == "do":
                            env.step(query.get("action", ""))
                        elif parts[2] == "search":
                            env.step(f"search[{query.get('q', '')}]")
                        else:
                            self._send(HTTPStatus.NOT_FOUND, _page("Not found", self.path))
                            return
                        self._send(HTTPStatus.SEE_OTHER, "", location=f"/s/{parts[1]}/")
                        return
                    self._send(HTTPStatus.OK, env.page_html)
            except SessionsFull as exc:
                self._send(HTTPStatus.SERVICE_UNAVAILABLE, _page("Server busy", str(exc)))
            except ValueError as exc:  # e.g. a bad task_id
                self._send(HTTPStatus.BAD_REQUEST, _page("Bad request", str(exc)))

    return Handler


def make_server(
    port: int = 3000,
    host: str = "127.0.0.1",
    *,
    backlog: int = LISTEN_BACKLOG,
    idle_timeout: float | None = IDLE_TIMEOUT_S,
    max_sessions: int = MAX_SESSIONS,
    max_sessions_per_client: int = MAX_SESSIONS_PER_CLIENT,
    **env_kwargs: Any,
) -> ThreadingHTTPServer:
    """Create (not start) the HTTP server; ``port=0`` picks a free port.

    Args:
        port: TCP port.
        host: Interface to listen on; keep the loopback default unless you mean to share it.
        backlog: ``listen`` backlog (connections the kernel queues before accepting).
        idle_timeout: Seconds a connection may stay silent before it is closed (None: never).
        max_sessions: Sessions kept in all.
        max_sessions_per_client: Sessions one client keeps.
        **env_kwargs: :class:`WebShopEnv` keywords (``data``, ``split``, ``num_products``...).
    """
    for name, value in (("backlog", backlog), ("max_sessions", max_sessions),
                        ("max_sessions_per_client", max_sessions_per_client)):  # fmt: skip
        if not isinstance(value, int) or value < 1:
            raise ValueError(f"{name}={value!r} must be a positive int")
    if idle_timeout is not None and not idle_timeout > 0:
        raise ValueError(f"idle_timeout={idle_timeout!r} must be positive seconds, or None")
    WebShopEnv(**env_kwargs).store  # noqa: B018 - build/load the catalogue before serving

    class Server(ThreadingHTTPServer):
        request_queue_size = backlog
        daemon_threads = True

    sessions = _Sessions(env_kwargs, max_sessions, max_sessions_per_client)
    try:
        return Server((host, port), _handler(sessions, idle_timeout))
    except OSError as exc:  # a name that does not resolve, an address not here, a taken port
        raise OSError(f"cannot listen on {host}:{port} ({exc.strerror or exc})") from None


def serve(port: int = 3000, host: str = "127.0.0.1", **kwargs: Any) -> None:
    """Serve the WebShop site until interrupted (Ctrl-C); ``kwargs`` go to :func:`make_server`.

    Example:
        ``agent-gym serve webshop --port 3000``, then open http://127.0.0.1:3000/.
    """
    server = make_server(port, host, **kwargs)
    url = f"http://{host}:{server.server_address[1]}/"
    print(f"WebShop is open at {url} (Ctrl-C stops it)", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
