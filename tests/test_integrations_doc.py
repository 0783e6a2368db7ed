"""The HTTP example of docs/integrations.md, run against a real ``serve-env`` process.

The block after the ``curl-example`` marker is run twice: as written by bash with curl (the
port replaced by the test server's), and as the same requests sent with urllib, parsed out of
the block, so the doc cannot drift from what the server does.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import urllib.request
from pathlib import Path

import pytest
from serve_env import serve_env

pytest.importorskip("openenv")
DOC = Path(__file__).resolve().parent.parent / "docs" / "integrations.md"
DOC_URL = "http://127.0.0.1:8000"


def doc_block() -> str:
    text = DOC.read_text()
    marker = text.index("<!-- curl-example")
    match = re.search(r"```bash\n(.*?)```", text[marker:], re.DOTALL)
    assert match, "no bash block after the curl-example marker"
    return match.group(1)


def requests_in(block: str) -> list[tuple[str, str, str | None]]:
    """``(method, path, body)`` of every curl call in the block, in order."""
    calls = []
    for line in block.splitlines():
        method = re.search(r"-X (\w+)", line).group(1)
        path = re.search(re.escape(DOC_URL) + r"(\S*)", line).group(1)
        body = re.search(r"-d '([^']*)'", line)
        calls.append((method, path, body.group(1) if body else None))
    return calls


def check_replies(replies: list[dict]) -> None:
    reset, search, answer = replies
    assert reset["observation"]["info"]["task"] == (
        "Which country has the larger population, Nauru or Nigeria?"
    )
    assert reset["observation"]["info"]["task"] in reset["observation"]["text"]
    assert search["done"] is False and search["observation"]["info"]["is_action_valid"] is True
    assert "Nigeria" in search["observation"]["text"]
    assert answer["reward"] == 1.0 and answer["done"] is True
    assert answer["observation"]["terminated"] is True
    assert answer["observation"]["info"]["won"] is True


def test_doc_block_has_the_session_lifecycle() -> None:
    methods = [(m, re.sub(r"\$SID", "ID", p)) for m, p, _ in requests_in(doc_block())]
    assert methods == [
        ("POST", "/sessions"),
        ("POST", "/sessions/ID/reset"),
        ("POST", "/sessions/ID/step"),
        ("POST", "/sessions/ID/step"),
        ("DELETE", "/sessions/ID"),
    ]


@pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")
def test_doc_block_runs_with_curl() -> None:
    with serve_env("hotpotqa") as url:
        script = doc_block().replace(DOC_URL, url)
        out = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", script], capture_output=True, text=True, timeout=120
        )
        assert out.returncode == 0, out.stderr
        lines = out.stdout.splitlines()
        assert lines[-1] == ""  # DELETE answers 204, no body
        check_replies([json.loads(line) for line in lines[:-1]])
        health = subprocess.run(["curl", "-s", f"{url}/health"], capture_output=True, text=True)
        assert json.loads(health.stdout) == {"status": "healthy"}


def test_doc_requests_with_urllib() -> None:
    with serve_env("hotpotqa") as url:
        sid, replies = None, []
        for method, path, body in requests_in(doc_block()):
            data = body.encode() if body is not None else None
            request = urllib.request.Request(
                url + path.replace("$SID", str(sid)), data, method=method
            )
            with urllib.request.urlopen(request, timeout=60) as reply:
                raw = reply.read()
                status = reply.status
            if path == "/sessions":
                assert status == 201
                sid = json.loads(raw)["session_id"]
            elif method == "DELETE":
                assert (status, raw) == (204, b"")
            else:
                replies.append(json.loads(raw))
        check_replies(replies)
