"""The WebShop site over HTTP, for a person to shop in a browser (``agent-gym serve webshop``).

Each visitor gets a session, which is a :class:`~agent_gym.envs.webshop.env.WebShopEnv`; the
pages are the env's own HTML, so a person sees exactly what an agent reads. Routes (all GET,
so every page has a plain URL):

* ``/`` (optional ``?seed=N`` or ``?task_id=test-3``): a new session, redirected to its page;
* ``/s/<session>/``: the session's current page;
* ``/s/<session>/do?action=click[...]``: apply an action, then redirect to the page;
* ``/s/<session>/search?q=...``: the search box (``search[q]``).

After an action the server redirects (303) to the page, so reloading never repeats an action.
The server listens on loopback by default and keeps at most :data:`MAX_SESSIONS` sessions.
"""

from __future__ import annotations

import html
import secrets
import threading
from collections import OrderedDict
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from agent_gym.envs.webshop.env import WebShopEnv

#: Oldest sessions are dropped beyond this many.
MAX_SESSIONS = 256


class _Sessions:
    """Session id -> env, with one lock per env (a browser may send requests in parallel)."""

    def __init__(self, env_kwargs: dict[str, Any]) -> None:
        self.env_kwargs = env_kwargs
        self._envs: OrderedDict[str, tuple[WebShopEnv, threading.Lock]] = OrderedDict()
        self._lock = threading.Lock()

    def new(self, seed: int | None, task_id: str | None) -> str:
        sid = secrets.token_hex(8)
        env = WebShopEnv(**self.env_kwargs)
        env.link_prefix = f"/s/{sid}"
        env.reset(seed=seed, options={"task_id": task_id} if task_id else None)
        with self._lock:
            self._envs[sid] = (env, threading.Lock())
            while len(self._envs) > MAX_SESSIONS:
                _, (old, _) = self._envs.popitem(last=False)
                old.close()
        return sid

    def get(self, sid: str) -> tuple[WebShopEnv, threading.Lock] | None:
        with self._lock:
            return self._envs.get(sid)


def _page(title: str, message: str) -> str:
    return (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
        f"</head><body><h2>{html.escape(title)}</h2><p>{html.escape(message)}</p>"
        "<p><a href='/'>Start a new shopping task</a></p></body></html>"
    )


def _handler(sessions: _Sessions) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        server_version = "agent-gym-webshop"

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib name
            pass  # quiet: a person's terminal is not a request log

        def _send(self, status: int, body: str, location: str | None = None) -> None:
            # Pages may hold lone surrogates from an agent's query; never fail on encoding.
            data = body.encode("utf-8", errors="replace")
            self.send_response(status)
            if location:
                self.send_header("Location", location)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:  # noqa: N802 - stdlib name
            url = urlsplit(self.path)
            query = {k: v[-1] for k, v in parse_qs(url.query).items()}
            parts = [p for p in url.path.split("/") if p]
            try:
                if not parts:
                    seed = int(query["seed"]) if query.get("seed", "").isdigit() else None
                    sid = sessions.new(seed, query.get("task_id"))
                    self._send(HTTPStatus.SEE_OTHER, "", location=f"/s/{sid}/")
                    return
                if len(parts) < 2 or parts[0] != "s" or len(parts) > 3:
                    self._send(HTTPStatus.NOT_FOUND, _page("Not found", self.path))
                    return
                entry = sessions.get(parts[1])
                if entry is None:
                    self._send(HTTPStatus.NOT_FOUND, _page("Unknown session", "It expired."))
                    return
                env, lock = entry
                with lock:
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
            except ValueError as exc:  # e.g. a bad task_id
                self._send(HTTPStatus.BAD_REQUEST, _page("Bad request", str(exc)))

    return Handler


def make_server(
    port: int = 3000, host: str = "127.0.0.1", **env_kwargs: Any
) -> ThreadingHTTPServer:
    """Create (not start) the HTTP server; ``port=0`` picks a free port.

    Args:
        port: TCP port.
        host: Interface to listen on; keep the loopback default unless you mean to share it.
        **env_kwargs: :class:`WebShopEnv` keywords (``data``, ``split``, ``num_products``...).
    """
    WebShopEnv(**env_kwargs).store  # noqa: B018 - build/load the catalogue before serving
    server = ThreadingHTTPServer((host, port), _handler(_Sessions(env_kwargs)))
    server.daemon_threads = True
    return server


def serve(port: int = 3000, host: str = "127.0.0.1", **env_kwargs: Any) -> None:
    """Serve the WebShop site until interrupted (Ctrl-C).

    Example:
        ``agent-gym serve webshop --port 3000``, then open http://127.0.0.1:3000/.
    """
    server = make_server(port, host, **env_kwargs)
    print(f"WebShop is open at http://{host}:{server.server_address[1]}/ (Ctrl-C stops it)")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
