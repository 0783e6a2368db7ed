"""The LLM judge against a real HTTP server on 127.0.0.1 that stands in for the model."""

from __future__ import annotations

import json
import math
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from agent_gym.envs.paper_search.env import PaperSearchEnv
from agent_gym.envs.paper_search.records import Paper, Query
from agent_gym.envs.paper_search.selector import (
    LLMSelector,
    RuleSelector,
    SelectorError,
    make_selector,
)

FIX = Path(__file__).parent / "fixtures"
pytestmark = pytest.mark.filterwarnings("ignore:Paper Search. 1 query answers")


class _Judge(BaseHTTPRequestHandler):
    """Answers True with probability 0.8 when the title says "Sparse", else 0.1.

    ``mode`` on the server switches to text-only replies, HTTP 500, or non-JSON bodies.
    """

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.requests.append((self.path, self.headers.get("Authorization"), body))
        if self.server.mode == "error":
            self.send_error(500, "model crashed")
            return
        prompt = body["messages"][0]["content"]
        p_true = 0.8 if "Title: Sparse" in prompt else 0.1
        if self.server.mode == "text":
            reply = {"choices": [{"message": {"content": "True" if p_true > 0.5 else "False"}}]}
        else:
            top = [
                {"token": "True", "logprob": math.log(p_true)},
                {"token": " false", "logprob": math.log(1 - p_true)},
                {"token": "Maybe", "logprob": -9.0},
            ]
            reply = {
                "choices": [
                    {
                        "message": {"content": "True"},
                        "logprobs": {"content": [{"token": "True", "top_logprobs": top}]},
                    }
                ]
            }
        data = b"not json" if self.server.mode == "garbage" else json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args) -> None:  # keep test output clean
        pass


@pytest.fixture
def server():
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Judge)
    srv.requests, srv.mode = [], "logprobs"
    thread = threading.Thread(target=srv.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()


def _url(srv) -> str:
    return f"http://127.0.0.1:{srv.server_address[1]}/v1"


QUERY = Query("q", "efficient transformers", frozenset())
PAPERS = [Paper("a", "Sparse Transformers", "abc"), Paper("b", "Graph Networks", "def")]


def test_scores_from_logprobs_and_cache(server) -> None:
    judge = LLMSelector(_url(server), model="judge-7b", api_key="k", max_workers=2)
    assert judge.score(QUERY, PAPERS) == pytest.approx([0.8, 0.1])
    path, auth, body = server.requests[0]
    assert path == "/v1/chat/completions" and auth == "Bearer k"
    assert body["model"] == "judge-7b" and body["max_tokens"] == 1 and body["logprobs"] is True
    assert "efficient transformers" in body["messages"][0]["content"]
    judge.score(QUERY, PAPERS[::-1])
    assert len(server.requests) == 2  # the second call was served from the cache


def test_text_fallback_without_logprobs(server) -> None:
    server.mode = "text"
    assert LLMSelector(_url(server), "m").score(QUERY, PAPERS) == [1.0, 0.0]


@pytest.mark.parametrize(("mode", "message"), [("error", "HTTP 500"), ("garbage", "not JSON")])
def test_server_failures_raise_selector_error_naming_the_url(server, mode, message) -> None:
    server.mode = mode
    with pytest.raises(SelectorError, match=message) as err:
        LLMSelector(_url(server), "m").score(QUERY, PAPERS[:1])
    assert _url(server) in str(err.value)


def test_unreachable_endpoint() -> None:
    with pytest.raises(SelectorError, match="cannot connect"):
        LLMSelector("http://127.0.0.1:9/v1", "m", timeout=2).score(QUERY, PAPERS[:1])


def test_env_with_llm_selector_end_to_end(server) -> None:
    spec = {"type": "llm", "base_url": _url(server), "model": "judge"}
    env = PaperSearchEnv(data=FIX / "papers.jsonl", queries=FIX / "queries.jsonl", selector=spec)
    env.reset(options={"task_id": "q1"})
    _, reward, _, _, info = env.step("search[sparse transformers]")
    # New papers P4 (Sparse..., 0.8), P1 and P2 (0.1 each): 0.8 + 0.1 + 0.1 (search cost 0).
    assert reward == pytest.approx(1.0)
    assert "(0.80) [NEW] Sparse Transformers" in info["anchor_obs"]
    # Only P4 scores >= 0.5; the gold set is {P2, P4}.
    assert (info["precision"], info["recall"]) == (1.0, 0.5)


def test_make_selector_accepts_rule_dict_or_object() -> None:
    assert isinstance(make_selector("rule"), RuleSelector)
    judge = make_selector({"type": "llm", "base_url": "http://x/v1", "model": "m"})
    assert isinstance(judge, LLMSelector) and judge.url == "http://x/v1/chat/completions"
    custom = RuleSelector()
    assert make_selector(custom) is custom
    for bad in ("llm", {"type": "llm"}, 3):
        with pytest.raises(ValueError, match="selector="):
            make_selector(bad)


def test_custom_selector_object_and_wrong_score_count() -> None:
    class Constant:
        def __init__(self, value, short=False) -> None:
            self.value, self.short = value, short

        def score(self, query, papers):
            return [] if self.short else [self.value] * len(papers)

    def env_with(selector) -> PaperSearchEnv:
        env = PaperSearchEnv(
            data=FIX / "papers.jsonl", queries=FIX / "queries.jsonl", selector=selector
        )
        env.reset(options={"task_id": "q1"})
        return env

    # Scores are clipped to [0, 1]; NaN counts as 0 (dropped, so the search earns 0).
    _, reward, *_ = env_with(Constant(7.0)).step("search[sparse transformers]")
    assert reward == pytest.approx(3 * 1.0)
    _, reward, *_, info = env_with(Constant(float("nan"))).step("search[sparse transformers]")
    assert reward == 0.0 and info["pool_size"] == 0 and info["calls"][0]["new_papers"] == 0
    with pytest.raises(ValueError, match="returned 0 scores for 3 papers"):
        env_with(Constant(1.0, short=True)).step("search[sparse transformers]")
