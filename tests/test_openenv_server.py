"""``agent-gym serve-env`` as a real process on loopback: sessions, isolation, limits, errors.

Requests go through the standard library (HTTP) and openenv-core's own client (WebSocket),
as a non-agent-gym client would send them.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from dataclasses import asdict

import gymnasium as gym
import pytest
from serve_env import KEYPAD_ID, KEYPAD_PATH, serve_env

import agent_gym
from agent_gym.registration import env_class

pytest.importorskip("openenv")


def call(url: str, method: str, path: str, body: bytes | dict | None = None) -> tuple[int, dict]:
    """One HTTP request; returns (status, JSON reply or {})."""
    data = json.dumps(body).encode() if isinstance(body, dict) else body
    request = urllib.request.Request(url + path, data=data, method=method)
    request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=60) as reply:
            raw = reply.read()
            return reply.status, json.loads(raw) if raw else {}
    except urllib.error.HTTPError as e:
        raw = e.read()
        return e.code, json.loads(raw) if raw else {}


@pytest.fixture(scope="module")
def keypad():
    with serve_env(
        KEYPAD_ID, "--max-sessions", "3", "--max-action-chars", "100", pythonpath=KEYPAD_PATH
    ) as url:
        yield url


def open_session(url: str) -> str:
    status, reply = call(url, "POST", "/sessions")
    assert status == 201, reply
    return reply["session_id"]


def test_prints_a_loopback_url_and_listens_only_there(keypad: str) -> None:
    assert keypad.startswith("http://127.0.0.1:")
    port = int(keypad.rsplit(":", 1)[1])
    listening = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            rows = open(table).read().splitlines()[1:]
        except FileNotFoundError:
            continue
        for row in rows:
            local, state = row.split()[1], row.split()[3]
            address, hexport = local.rsplit(":", 1)
            if int(hexport, 16) == port and state == "0A":  # 0A: LISTEN
                listening.add(address)
    assert listening == {"0100007F"}, listening  # 127.0.0.1, nothing else


def test_http_session_episode_carries_reward_flags_and_info(keypad: str) -> None:
    sid = open_session(keypad)
    status, first = call(keypad, "POST", f"/sessions/{sid}/reset", {"seed": 0})
    assert status == 200
    assert first["observation"]["text"] == "Keys pressed: 0 of 3. Press a key."
    assert first["observation"]["info"]["task"] == "press 3 keys"
    assert first["done"] is False
    for expected in (1, 2):
        _, reply = call(keypad, "POST", f"/sessions/{sid}/step", {"action": {"command": "k"}})
        assert (
            reply["observation"]["info"]["anchor_obs"]
            == f"Keys pressed: {expected} of 3. Press a key."
        )
        assert reply["reward"] == 0.0 and reply["done"] is False
    _, last = call(keypad, "POST", f"/sessions/{sid}/step", {"action": {"command": "k"}})
    assert last["reward"] == 1.0 and last["done"] is True
    assert last["observation"]["terminated"] is True and last["observation"]["truncated"] is False
    info = last["observation"]["info"]
    assert (info["won"], info["score"], info["is_action_valid"]) == (True, 1.0, True)
    assert info["data_source"] == "generated:test-keypad"
    assert call(keypad, "DELETE", f"/sessions/{sid}")[0] == 204


def test_sessions_are_isolated(keypad: str) -> None:
    a, b = open_session(keypad), open_session(keypad)
    try:
        call(keypad, "POST", f"/sessions/{a}/reset", {"seed": 0})
        call(keypad, "POST", f"/sessions/{b}/reset", {"seed": 0})
        call(keypad, "POST", f"/sessions/{a}/step", {"action": {"command": "x"}})
        _, a2 = call(keypad, "POST", f"/sessions/{a}/step", {"action": {"command": "y"}})
        _, b1 = call(keypad, "POST", f"/sessions/{b}/step", {"action": {"command": ""}})  # invalid
        assert a2["observation"]["text"].startswith("Keys pressed: 2")
        assert b1["observation"]["text"].startswith("Keys pressed: 0")
        assert b1["observation"]["info"]["is_action_valid"] is False
    finally:
        call(keypad, "DELETE", f"/sessions/{a}")
        call(keypad, "DELETE", f"/sessions/{b}")


def test_concurrent_websocket_sessions_match_local_envs() -> None:
    with serve_env("AgentR1/HotpotQA-v0", "--max-sessions", "4") as url:
        actions = ["search[Nauru]", "search[Nigeria population]", "answer[Nigeria]"]
        results: dict[int, list] = {}

        def play(seed: int) -> None:
            env = gym.make(agent_gym.OPENENV_ID, url=url)
            try:
                trace = [env.reset(seed=seed)]
                trace += [env.step(a) for a in actions]
                results[seed] = trace
            finally:
                env.close()

        threads = [threading.Thread(target=play, args=(seed,)) for seed in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
        assert sorted(results) == [0, 1, 2]
        for seed, trace in results.items():
            local = gym.make("AgentR1/HotpotQA-v0")
            expected = [local.reset(seed=seed)] + [local.step(a) for a in actions]
            local.close()
            assert trace == expected, f"seed {seed}"


@pytest.mark.parametrize(
    ("path", "body", "status", "words"),
    [
        ("/sessions/{sid}/step", b"{not json", 400, "not valid JSON"),
        ("/sessions/{sid}/step", b"[1, 2]", 400, "must be a JSON object"),
        ("/sessions/{sid}/step", {"command": "k"}, 400, '{"action": {"command"'),
        ("/sessions/{sid}/step", {"action": {"command": 7}}, 422, "valid string"),
        ("/sessions/{sid}/step", {"action": {"command": "k", "x": 1}}, 422, "Extra inputs"),
        ("/sessions/{sid}/step", {"action": {"command": "k" * 101}}, 413, "at most 100"),
        ("/sessions/{sid}/step", b"x" * 100_000, 413, "bytes"),
        ("/sessions/{sid}/reset", {"seed": -1}, 400, "non-negative integer"),
        ("/sessions/{sid}/reset", {"options": [1]}, 400, "JSON object"),
        ("/sessions/{sid}/reset", {"sed": 1}, 400, "unknown reset parameter"),
        ("/sessions/no-such-id/step", {"action": {"command": "k"}}, 404, "unknown session id"),
        ("/sessions/no-such-id/reset", {}, 404, "POST /sessions"),
        ("/step", {"action": {"command": "k"}}, 409, "step before reset"),
    ],
)
def test_bad_requests_get_clear_4xx_and_the_server_stays_up(keypad, path, body, status, words):
    sid = open_session(keypad)
    try:
        call(keypad, "POST", f"/sessions/{sid}/reset", {"seed": 0})
        got, reply = call(keypad, "POST", path.format(sid=sid), body)
        assert got == status, reply
        assert words in reply["detail"], reply
        # The session and the server still work.
        got, reply = call(keypad, "POST", f"/sessions/{sid}/step", {"action": {"command": "k"}})
        assert got == 200 and reply["observation"]["text"].startswith("Keys pressed: 1")
    finally:
        call(keypad, "DELETE", f"/sessions/{sid}")
    assert call(keypad, "GET", "/health") == (200, {"status": "healthy"})


def test_step_before_reset_is_409(keypad: str) -> None:
    sid = open_session(keypad)
    got, reply = call(keypad, "POST", f"/sessions/{sid}/step", {"action": {"command": "k"}})
    assert got == 409 and "reset" in reply["detail"]
    call(keypad, "DELETE", f"/sessions/{sid}")


def test_session_cap_refuses_more_sessions_over_http_and_websocket(keypad: str) -> None:
    from websockets.sync.client import connect

    sids = [open_session(keypad) for _ in range(3)]
    try:
        got, reply = call(keypad, "POST", "/sessions")
        assert got == 503 and "session cap (3 open)" in reply["detail"]
        # OpenEnv's server answers a WebSocket over the cap with one error message, then closes.
        with connect(keypad.replace("http://", "ws://") + "/ws", open_timeout=30) as ws:
            message = json.loads(ws.recv(timeout=30))
        assert message["type"] == "error" and message["data"]["code"] == "CAPACITY_REACHED"
    finally:
        for sid in sids:
            call(keypad, "DELETE", f"/sessions/{sid}")
    sid = open_session(keypad)  # room again
    call(keypad, "DELETE", f"/sessions/{sid}")


def test_websocket_errors_leave_the_session_usable(keypad: str) -> None:
    from openenv.core.generic_client import GenericEnvClient

    client = GenericEnvClient(base_url=keypad).sync()
    try:
        with pytest.raises(RuntimeError, match="step before reset"):
            client.step({"command": "k"})
        client.reset(seed=0)
        with pytest.raises(RuntimeError, match="at most 100"):
            client.step({"command": "k" * 101})
        with pytest.raises(RuntimeError, match="VALIDATION_ERROR|valid string"):
            client.step({"command": 5})
        result = client.step({"command": "k"})
        assert result.observation["text"] == "Keys pressed: 1 of 3. Press a key."
    finally:
        client.close()


def test_idle_sessions_expire() -> None:
    with serve_env(KEYPAD_ID, "--idle-timeout", "1", pythonpath=KEYPAD_PATH) as url:
        sid = open_session(url)
        call(url, "POST", f"/sessions/{sid}/reset", {"seed": 0})
        assert call(url, "GET", f"/sessions/{sid}")[1]["step_count"] == 0
        # GET /sessions/ID is not activity; the reaper looks every few seconds.
        deadline = time.monotonic() + 60
        while call(url, "GET", f"/sessions/{sid}")[0] == 200 and time.monotonic() < deadline:
            time.sleep(0.5)
        status, reply = call(url, "POST", f"/sessions/{sid}/step", {"action": {"command": "k"}})
        assert status == 404 and "idle" in reply["detail"]


def test_spec_describes_the_served_env() -> None:
    with serve_env("hotpotqa") as url:
        status, spec = call(url, "GET", "/agent_gym/spec")
    assert status == 200
    assert spec["env_id"] == "AgentR1/HotpotQA-v0" and spec["max_episode_steps"] == 5
    assert [t["name"] for t in spec["tools"]] == ["search", "answer"]
    assert spec["prompt_templates"] == asdict(env_class("AgentR1/HotpotQA-v0").prompt_templates)


def test_unknown_env_fails_before_serving() -> None:
    with pytest.raises(RuntimeError, match="NameNotFound"):
        with serve_env("NoSuchEnv-v0", timeout=60):
            pass
