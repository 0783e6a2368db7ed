import importlib.util
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import gymnasium as gym
import pytest
from testing_env import GenericTextEnv, counting_spec

from agent_gym.agents import RandomAgent, TextAgent, run_episode
from agent_gym.episode import Episode
from agent_gym.wrappers import ChatPrompt, ParseAction

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "openai_agent.py"


class Counter:
    """Adds 1 until the counter reaches the target in the task text, then submits."""

    def __init__(self) -> None:
        self.resets = 0

    def reset(self, info) -> None:
        self.resets += 1

    def act(self, observation, info) -> str:
        target = int(info["task_id"].rsplit("-", 1)[1])
        return "submit" if info["anchor_obs"] == f"counter={target}" else "add 1"


def test_scripted_agent_episode_by_hand() -> None:
    agent = Counter()
    assert isinstance(agent, TextAgent)
    result = run_episode(gym.make(counting_spec()), agent, options={"task_id": "count-to-2"})
    assert isinstance(result, Episode)
    assert (result.return_, result.length, result.success) == (1.0, 3, True)
    assert (result.terminated, result.truncated) == (True, False)
    assert (result.task_id, result.score, result.seed) == ("count-to-2", 1.0, None)
    assert [s.action for s in result.steps] == ["add 1", "add 1", "submit"]
    assert [s.observation for s in result.steps] == [
        "The counter is 0.",
        "The counter is 1.",
        "The counter is 2.",
    ]
    assert agent.resets == 1


def test_env_step_limit_truncates() -> None:
    class Stubborn:
        def act(self, observation, info):
            return "add 1"

    result = run_episode(gym.make(counting_spec(max_episode_steps=3)), Stubborn(), seed=0)
    assert (result.length, result.truncated, result.terminated, result.success) == (
        3,
        True,
        False,
        False,
    )


def test_max_steps_stops_early_and_is_required_without_a_limit() -> None:
    class Talker:
        def act(self, observation, info):
            return "hello"

    result = run_episode(GenericTextEnv(), Talker(), max_steps=4)
    assert (result.length, result.truncated, result.return_) == (4, True, 0.0)
    with pytest.raises(ValueError, match="pass max_steps"):
        run_episode(GenericTextEnv(), Talker())


def test_agent_mistakes_raise_clear_errors() -> None:
    class Silent:
        def act(self, observation, info):
            return None

    with pytest.raises(TypeError, match="Silent.act returned NoneType"):
        run_episode(gym.make(counting_spec()), Silent(), seed=0)
    with pytest.raises(TypeError, match="has no act"):
        run_episode(gym.make(counting_spec()), object(), seed=0)


# --- the OpenAI-compatible example, against a real HTTP server on loopback -------------------


class FakeChatServer(ThreadingHTTPServer):
    """Answers /v1/chat/completions like vLLM would, with a scripted policy."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.requests: list[dict] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"


class _Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.requests.append(
            {"path": self.path, "auth": self.headers["Authorization"], **body}
        )
        if self.path != "/v1/chat/completions":
            self.send_error(404, "no such route")
            return
        prompt = body["messages"][-1]["content"]
        # The scripted model: reach the target named in the task, then submit.
        target = prompt.split("equal ")[1][0]
        text = (
            "<think>count</think><action>submit</action>"
            if f"is {target}." in prompt.split("### Current observation")[1]
            else "<action>add 1</action>"
        )
        payload = json.dumps({"choices": [{"message": {"role": "assistant", "content": text}}]})
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(payload.encode())

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def server():
    srv = FakeChatServer()
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()


@pytest.fixture(scope="module")
def example():
    spec = importlib.util.spec_from_file_location("openai_agent_example", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_openai_example_agent_plays_through_http(server, example) -> None:
    agent = example.OpenAIChatAgent("test-model", server.url, api_key="k", max_tokens=64)
    env = ChatPrompt(ParseAction(gym.make(counting_spec())))
    result = run_episode(env, agent, options={"task_id": "count-to-2"})
    assert (result.success, result.length, result.return_) == (True, 3, 1.0)
    first = server.requests[0]
    assert first["path"] == "/v1/chat/completions" and first["auth"] == "Bearer k"
    assert (first["model"], first["max_tokens"], first["temperature"]) == ("test-model", 64, 0.0)
    assert [m["role"] for m in first["messages"]] == ["system", "user"]


def test_openai_example_main_prints_a_table(server, example, capsys) -> None:
    gym.register(
        "AgentGymTest/CountingExample-v0",
        entry_point=counting_spec().entry_point,
        max_episode_steps=8,
    )
    try:
        results = example.main(
            [
                "--env",
                "AgentGymTest/CountingExample-v0",
                "--base-url",
                server.url,
                "--model",
                "m",
                "--episodes",
                "2",
                "--seed",
                "4",
            ]
        )
    finally:
        del gym.registry["AgentGymTest/CountingExample-v0"]
    assert [r.seed for r in results] == [4, 5] and all(r.success for r in results)
    assert "success rate: 2/2" in capsys.readouterr().out


def test_openai_example_reports_an_unreachable_server(example, server) -> None:
    agent = example.OpenAIChatAgent("m", server.url.replace("/v1", "/nope"), timeout=10)
    with pytest.raises(RuntimeError, match="HTTP 404"):
        agent.act("obs", {"task": "t"})
    dead = example.OpenAIChatAgent("m", "http://127.0.0.1:9/v1", timeout=10)
    with pytest.raises(RuntimeError, match="is the server running"):
        dead.act("obs", {"task": "t"})


def test_openai_example_run_as_a_script_says_what_is_wrong_in_one_line() -> None:
    """A bad --env or a server that does not answer was a traceback."""
    import subprocess
    import sys

    for args, message in (
        (["--env", "WebShp-v0"], "openai_agent.py: unknown environment 'WebShp-v0'; agent-gym"),
        (["--env", "hotpotqa", "--base-url", "http://127.0.0.1:9/v1"],  # a short name works
         "openai_agent.py: cannot reach http://127.0.0.1:9/v1"),
    ):  # fmt: skip
        out = subprocess.run([sys.executable, str(EXAMPLE), "--model", "m", "--episodes", "1",
                              *args], capture_output=True, text=True, timeout=120)  # fmt: skip
        assert out.returncode == 1 and message in out.stderr, out.stderr[-2000:]
        assert "Traceback" not in out.stderr, out.stderr[-2000:]


def test_random_agent_picks_admissible_commands_and_fills_templates() -> None:
    agent = RandomAgent(seed=0)
    agent.reset({"task": "Which country is larger, Nauru or Niger?"})
    info = {"admissible_actions": ["look", "go to desk 1", "examine desk 1", "open drawer 2"]}
    picks = {agent.act("obs", info) for _ in range(50)}
    assert picks == {"go to desk 1", "open drawer 2"}  # look-only commands are left out
    assert agent.act("obs", {"admissible_actions": ["look"]}) == "look"  # unless nothing else
    query = agent.act("obs", {"admissible_actions": ["search[<query>]"]})
    words = query.removeprefix("search[").removesuffix("]").split()
    assert query.startswith("search[") and 1 <= len(words) <= 4
    assert set(words) <= {"Which", "country", "larger", "Nauru", "Niger"}
    answer = agent.act("Nauru has 12,000 people.", {"admissible_actions": ["answer[<answer>]"]})
    assert answer[len("answer[") : -1] in {"Nauru", "has", "000", "people", "yes", "no"}
    assert agent.act("obs", {}) == "help"
    # Reproducible: the same seed plays the same actions.
    a, b = RandomAgent(seed=3), RandomAgent(seed=3)
    assert [a.act("o", info) for _ in range(10)] == [b.act("o", info) for _ in range(10)]
