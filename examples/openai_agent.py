"""An agent-gym agent backed by any OpenAI-compatible chat endpoint.

Works with vLLM (``vllm serve Qwen/Qwen2.5-1.5B-Instruct``), llama.cpp's ``llama-server``,
Ollama, SGLang or OpenAI itself: anything that answers ``POST {base_url}/chat/completions``.
It uses only the standard library; with the optional ``openai`` package installed
(``pip install "agent-gym[openai]"``) pass ``--openai-package`` to go through its client.

    python examples/openai_agent.py --env AgentR1/ALFWorld-v0 \\
        --base-url http://localhost:8000/v1 --model Qwen/Qwen2.5-1.5B-Instruct --episodes 5

The env is wrapped as ``ChatPrompt(ParseAction(gym.make(env)))``, so the model sees the env's
default prompt and answers in the tag (``<action>...</action>``) or Hermes tool-call format.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import urllib.error
import urllib.request
from typing import Any

import gymnasium as gym

import agent_gym
from agent_gym.agents import run_episode
from agent_gym.episode import Episode
from agent_gym.registration import resolve_env_id
from agent_gym.wrappers import ChatPrompt, ParseAction


class OpenAIChatAgent:
    """A :class:`agent_gym.agents.TextAgent` that asks a chat-completions endpoint.

    Args:
        model: Model name the server knows.
        base_url: The API root, ending in ``/v1`` for most servers.
        api_key: Bearer token; default ``$OPENAI_API_KEY`` (local servers ignore it).
        temperature: Sampling temperature (0: greedy, for reproducible evaluation).
        max_tokens: Longest response.
        timeout: Seconds to wait for one response.
        use_openai_package: Send requests with the ``openai`` client instead of urllib.
    """

    def __init__(
        self,
        model: str,
        base_url: str = "http://localhost:8000/v1",
        api_key: str | None = None,
        temperature: float = 0.0,
        max_tokens: int = 512,
        timeout: float = 120.0,
        use_openai_package: bool = False,
    ) -> None:
        self.model = model
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key or os.environ.get("OPENAI_API_KEY", "EMPTY")
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.timeout = timeout
        self._client = None
        if use_openai_package:
            try:
                import openai
            except ImportError as e:
                raise ImportError(
                    "use_openai_package needs: pip install 'agent-gym[openai]'"
                ) from e
            self._client = openai.OpenAI(
                base_url=self.base_url, api_key=self.api_key, timeout=timeout
            )

    def act(self, observation: Any, info: dict[str, Any]) -> str:
        """Send the prompt and return the model's text (ParseAction reads the action from it)."""
        if isinstance(observation, list):  # chat messages from ChatPrompt
            messages = observation
        else:  # a bare env: show the task, the observation and the choices
            choices = "\n".join(f"- {a}" for a in info.get("admissible_actions", []))
            messages = [
                {
                    "role": "system",
                    "content": "Reply with exactly one command for the environment.",
                },
                {
                    "role": "user",
                    "content": f"Task: {info.get('task', '')}\n\n{observation}\n\n{choices}".strip(),
                },
            ]
        return self.complete(messages)

    def complete(self, messages: list[dict[str, str]]) -> str:
        """One chat completion; returns the first choice's text."""
        if self._client is not None:
            response = self._client.chat.completions.create(
                model=self.model,
                messages=messages,
                temperature=self.temperature,
                max_tokens=self.max_tokens,
            )
            return response.choices[0].message.content or ""
        body = json.dumps(
            {
                "model": self.model,
                "messages": messages,
                "temperature": self.temperature,
                "max_tokens": self.max_tokens,
            }
        ).encode()
        request = urllib.request.Request(
            f"{self.base_url}/chat/completions",
            data=body,
            headers={"Content-Type": "application/json", "Authorization": f"Bearer {self.api_key}"},
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                payload = json.load(response)
        except urllib.error.HTTPError as e:
            detail = e.read().decode(errors="replace")[:500]
            raise RuntimeError(f"{self.base_url}/chat/completions: HTTP {e.code}: {detail}") from e
        except urllib.error.URLError as e:
            raise RuntimeError(
                f"cannot reach {self.base_url} ({e.reason}); is the server running?"
            ) from e
        return payload["choices"][0]["message"].get("content") or ""


def make_env(env_id: str, action_format: str = "tag", history_length: int = 2) -> gym.Env:
    """The env as an LLM sees it: parsed actions, chat prompts."""
    gym.register_envs(agent_gym)
    env = ParseAction(gym.make(resolve_env_id(env_id)), format=action_format)
    return ChatPrompt(env, history_length=history_length)


def main(argv: list[str] | None = None) -> list[Episode]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--env", default="AgentR1/ALFWorld-v0", help="env id or short name")
    parser.add_argument("--base-url", default="http://localhost:8000/v1")
    parser.add_argument("--model", required=True)
    parser.add_argument("--episodes", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0, help="episode i uses seed + i")
    parser.add_argument("--format", default="tag", choices=["tag", "tool_call", "plain"])
    parser.add_argument("--history", type=int, default=2, help="past steps in the prompt")
    parser.add_argument("--temperature", type=float, default=0.0)
    parser.add_argument("--max-tokens", type=int, default=512)
    parser.add_argument("--openai-package", action="store_true")
    args = parser.parse_args(argv)

    agent = OpenAIChatAgent(
        args.model,
        args.base_url,
        temperature=args.temperature,
        max_tokens=args.max_tokens,
        use_openai_package=args.openai_package,
    )
    env = make_env(args.env, args.format, args.history)
    results = []
    print(f"{'seed':>6}  {'task_id':<28} {'return':>7} {'steps':>5}  success")
    try:
        for i in range(args.episodes):
            result = run_episode(env, agent, seed=args.seed + i)
            results.append(result)
            print(
                f"{result.seed:>6}  {result.task_id[:28]:<28} {result.return_:>7.2f} "
                f"{result.length:>5}  {result.success}"
            )
    finally:
        env.close()
    wins = sum(r.success for r in results)
    print(f"success rate: {wins}/{len(results)}")
    return results


if __name__ == "__main__":
    try:  # bad input or no server: one line, no traceback
        main(sys.argv[1:])
    except (RuntimeError, ValueError, OSError, gym.error.Error) as e:
        sys.exit(f"{os.path.basename(__file__)}: {e}")
