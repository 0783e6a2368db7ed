"""The HTTP site on loopback: a purchase over plain HTTP, and in headless Chromium.

The browser test needs Debian's ``chromium`` package (``apt-get install chromium``); it loads
each page with ``chromium --headless --dump-dom``, follows the link of the element the expert
would click, and checks that the text the browser shows equals the env's observation.
"""

from __future__ import annotations

import shutil
import subprocess
import threading
import urllib.request
from html.parser import HTMLParser
from urllib.parse import quote, urljoin

import pytest

from agent_gym.envs.webshop import pages
from agent_gym.envs.webshop.env import WebShopEnv
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
