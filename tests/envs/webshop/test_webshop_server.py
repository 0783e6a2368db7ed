"""The HTTP site on loopback: a purchase over plain HTTP and in headless Chromium, sessions
per client, idle connections, and (slow) 100 concurrent clients.

The browser test needs Debian's ``chromium`` package (``apt-get install chromium``); it loads
each page with ``chromium --headless --dump-dom``, follows the link of the element the expert
would click, and checks that the text the browser shows equals the env's observation.
"""

from __future__ import annotations

import http.client
import shutil
import socket
import subprocess
import sys
import threading
import urllib.request
from html.parser import HTMLParser
from urllib.parse import quote, urljoin

import pytest

from agent_gym.envs.webshop import pages
from agent_gym.envs.webshop.env import WebShopEnv
from agent_gym.envs.webshop.loadgen import run_load
from agent_gym.envs.webshop.server import make_server

TASK = "test-3"


@pytest.fixture()
def site():
    server = make_server(port=0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


class _Targets(HTMLParser):
    """Collects where each clickable goes: link text -> href, radio value -> data-url."""

    def __init__(self):
        super().__init__()
        self.urls, self.search_url, self._href = {}, None, None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "a":
            self._href = a.get("href")
        elif tag == "input" and a.get("type") == "radio":
            self.urls[a["value"]] = a["data-url"]
        elif tag == "form" and a.get("id") == "search-form":
            self.search_url = a["action"]

    def handle_data(self, data):
        if self._href and data.strip():
            self.urls[data.strip().lower()] = self._href
            self._href = None


def _next_url(base: str, dom: str, action: str) -> str:
    targets = _Targets()
    targets.feed(dom)
    verb, arg = action[:-1].split("[", 1)
    if verb == "search":
        return urljoin(base, targets.search_url) + "?q=" + quote(arg)
    return urljoin(base, targets.urls[arg])


def _shop(load, base: str) -> list[tuple[str, str]]:
    """Buy with the expert's actions in both the env and the site; return (site, env) texts."""
    env = WebShopEnv(split="test")
    obs, _ = env.reset(options={"task_id": TASK})
    dom = load(f"{base}/?task_id={TASK}")
    seen = [(pages.parse_page(dom).text, obs)]
    while (action := env.expert_action()) is not None:
        obs, reward, *_ = env.step(action)
        dom = load(_next_url(base, dom, action))
        seen.append((pages.parse_page(dom).text, obs))
    assert reward == 1.0
    return seen


def _http_get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=30) as response:  # follows the 303 redirects
        return response.read().decode("utf-8")


def test_a_purchase_over_http_matches_the_env(site):
    seen = _shop(_http_get, site)
    assert all(site_text == env_text for site_text, env_text in seen)
    assert seen[-1][0].startswith("Thank you for shopping with us!")
    assert "Your score (min 0.0, max 1.0): 1.0" in seen[-1][0]


def test_unknown_routes_and_sessions(site):
    for path in ("/s/nope/", "/elsewhere"):
        with pytest.raises(urllib.error.HTTPError) as e:
            _http_get(site + path)
        assert e.value.code == 404
    with pytest.raises(urllib.error.HTTPError) as e:
        _http_get(site + "/?task_id=bogus")
    assert e.value.code == 400


def test_reload_does_not_repeat_an_action_and_odd_queries_are_safe(site):
    dom = _http_get(site + "/?seed=1")
    url = _next_url(site, dom, "search[<b>x</b> 🛒]")
    dom = _http_get(url)
    assert "Current Query: <b>x</b>" in pages.parse_page(dom).text
    page_url = url.split("/search")[0] + "/"
    assert _http_get(page_url) == _http_get(page_url)


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.browser
@pytest.mark.skipif(_chromium() is None, reason="needs Debian's chromium package")
def test_a_purchase_in_headless_chromium_matches_the_env(site):
    def load(url: str) -> str:
        out = subprocess.run(
            [_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom", url],
            capture_output=True, text=True, timeout=120, check=True,
        )  # fmt: skip
        return out.stdout

    seen = _shop(load, site)
    for browser_text, env_text in seen:
        assert browser_text == env_text
    assert "Your score (min 0.0, max 1.0): 1.0" in seen[-1][0]


# --- under load: sessions per client, idle connections, the backlog ----------------------
@pytest.fixture()
def serve_with():
    servers = []

    def start(**kwargs):
        server = make_server(port=0, **kwargs)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return server.server_address[1]

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def _get(port, path, cookie=None, source="127.0.0.1"):
    """One real HTTP GET from ``source`` (any 127.x address is loopback on Linux)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60, source_address=(source, 0))
    try:
        conn.request("GET", path, headers={"Cookie": f"webshop_client={cookie}"} if cookie else {})
        response = conn.getresponse()
        response.read()
        set_cookie = response.getheader("Set-Cookie") or ""
        new = set_cookie.split(";")[0].split("=", 1)[1] if set_cookie else None
        return response.status, response.getheader("Location"), new
    finally:
        conn.close()


def test_one_clients_sessions_never_evict_another_clients(serve_with):
    port = serve_with(max_sessions_per_client=8)
    status, a_page, a_cookie = _get(port, "/?seed=1")
    assert status == 303 and a_cookie
    assert _get(port, a_page, a_cookie)[0] == 200  # A sent its cookie back: confirmed
    lone = _get(port, "/?seed=2", source="127.0.0.3")[1]  # a cookie-less client elsewhere
    # B ignores cookies and opens 300 sessions (the reported case was 256): it keeps the last
    # MAX_UNCONFIRMED_PER_IP = 256 of them and drops its own older ones, never A's.
    flood = [_get(port, "/")[1] for _ in range(300)]
    _, c_page, c_cookie = _get(port, "/")  # C: one more newcomer, then keeps its cookie
    c_pages = [c_page] + [_get(port, "/", c_cookie)[1] for _ in range(10)]
    assert _get(port, a_page, a_cookie)[0] == 200
    assert _get(port, lone, source="127.0.0.3")[0] == 200
    assert [_get(port, p)[0] for p in flood[:45]] == [404] * 45
    assert {_get(port, p)[0] for p in flood[45:]} == {200}
    # C itself is held to max_sessions_per_client = 8: its own 3 oldest made room.
    assert [_get(port, p, c_cookie)[0] for p in c_pages] == [404] * 3 + [200] * 8


def test_at_the_session_limit_a_client_gives_up_its_own_or_is_refused(serve_with):
    port = serve_with(max_sessions=2)
    _, x_first, x_cookie = _get(port, "/", source="127.0.0.2")
    _, y_page, _ = _get(port, "/", source="127.0.0.3")
    _, x_second, _ = _get(port, "/", x_cookie, source="127.0.0.2")  # full: X's own oldest goes
    assert [_get(port, p)[0] for p in (x_first, x_second, y_page)] == [404, 200, 200]
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    conn.request("GET", "/")  # a newcomer has nothing to give up: refused, nobody evicted
    response = conn.getresponse()
    assert response.status == 503 and response.getheader("Retry-After") == "60"
    assert b"sessions are in use" in response.read()
    conn.close()
    assert [_get(port, p)[0] for p in (x_second, y_page)] == [200, 200]


@pytest.mark.parametrize("sent", [b"", b"GET / HTTP/1.0\r\n"])  # silent, and a half request
def test_idle_connections_are_closed(serve_with, sent):
    port = serve_with(idle_timeout=0.5)
    socks = [socket.create_connection(("127.0.0.1", port), timeout=60) for _ in range(20)]
    for s in socks:
        s.sendall(sent)
    for s in socks:
        assert s.recv(1) == b""  # the server hung up (a 60 s wait here would raise instead)
        s.close()
    assert _get(port, "/")[0] == 303  # and it still serves


def test_listen_backlog_and_argument_checks():
    server = make_server(port=0)
    try:
        assert server.request_queue_size == 1024  # the stdlib default, 5, overflowed under load
    finally:
        server.server_close()
    for kwargs in ({"backlog": 0}, {"idle_timeout": -1}, {"max_sessions_per_client": "8"}):
        with pytest.raises(ValueError, match=next(iter(kwargs))):
            make_server(port=0, **kwargs)


@pytest.mark.slow
def test_100_clients_for_20_seconds_without_an_error():
    # The real server in its own process, 100 real HTTP clients (threads) on loopback.
    proc = subprocess.Popen(
        [sys.executable, "-c", "from agent_gym.envs.webshop.server import serve; serve(port=0)"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        line = proc.stdout.readline()
        assert line.startswith("WebShop is open at "), line
        url = line.split()[4].rstrip("/")
        result = run_load(url, clients=100, seconds=20, timeout=60)
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    summary = result.summary()
    assert summary["errors"] == {}, summary
    assert result.sessions >= 100 and result.requests >= 1000, summary
