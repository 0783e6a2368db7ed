"""Third-party agents: the ``TextAgent`` protocol and ``run_episode``.

Any object with ``act(observation, info) -> str`` can play an agent-gym env: a scripted
policy, a person, or an LLM behind an API (see ``examples/openai_agent.py``)::

    class FirstAdmissible:
        def act(self, observation, info):
            return info["admissible_actions"][0]

    episode = run_episode(gym.make("AgentR1/ALFWorld-v0"), FirstAdmissible(), seed=0)
    print(episode.return_, episode.length, episode.won)

:class:`RandomAgent` is the yardstick every trained policy is measured against: it picks
uniformly among the env's admissible commands.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

import gymnasium as gym

from agent_gym.episode import Episode, EpisodeStep


@runtime_checkable
class TextAgent(Protocol):
    """An agent that answers an observation with the text of its next action.

    ``observation`` is whatever the env returns: the env's text, or chat messages under
    :class:`~agent_gym.wrappers.ChatPrompt`. ``info`` is the env's latest info (``task``,
    ``admissible_actions``, ...). An agent that keeps state between steps may also define
    ``reset(info)``; :func:`run_episode` calls it before the first step of each episode.
    """

    def act(self, observation: Any, info: dict[str, Any]) -> str:
        """Return the next action (an env command, or an LLM response for ``ParseAction``)."""
        ...


def run_episode(
    env: gym.Env,
    agent: TextAgent,
    seed: int | None = None,
    max_steps: int | None = None,
    options: dict[str, Any] | None = None,
) -> Episode:
    """Play one episode of ``env`` with ``agent``.

    Args:
        env: Any agent-gym env, wrapped or not (``gym.make`` gives it a step limit).
        agent: A :class:`TextAgent`.
        seed: Reset seed (selects the task).
        max_steps: Stop after this many steps even if the env has not ended the episode
            (``end_reason`` is then ``"max_steps"``). Needed when the env has no step limit.
        options: Reset options, e.g. ``{"task_id": ...}``.

    Returns:
        The :class:`~agent_gym.episode.Episode`, with every step (and its info) kept.

    Raises:
        ValueError: Neither the env's spec nor ``max_steps`` bounds the episode.
        TypeError: The agent returned something other than a ``str``.
    """
    limit = env.spec.max_episode_steps if env.spec is not None else None
    if max_steps is None and limit is None:
        raise ValueError(
            "this env has no step limit (env.spec.max_episode_steps is None), so the episode "
            "might never end: pass max_steps=N"
        )
    if not callable(getattr(agent, "act", None)):
        raise TypeError(f"{type(agent).__name__} has no act(observation, info) method")
    obs, info = env.reset(seed=seed, options=options)
    reset_hook = getattr(agent, "reset", None)
    if callable(reset_hook):
        reset_hook(info)
    episode = Episode.start(info, seed=seed)
    while max_steps is None or episode.length < max_steps:
        action = agent.act(obs, info)
        if not isinstance(action, str):
            raise TypeError(
                f"{type(agent).__name__}.act returned {type(action).__name__}; it must return "
                "the action text (str)"
            )
        next_obs, reward, terminated, truncated, info = env.step(action)
        valid = bool(info.get("is_action_valid", True))
        step = EpisodeStep(obs, action, float(reward), valid, terminated, truncated, info)
        episode.record(reward, info, step)
        obs = next_obs
        if terminated or truncated:
            episode.end_reason = "terminated" if terminated else "truncated"
            break
    else:
        episode.end_reason = "max_steps"
    return episode


def scripted_expert(env: gym.Env, method: str = "expert_action") -> Callable[[], str | None]:
    """The env's scripted demonstrator ``method``: its next command, ``None`` once done.

    Only a method whose name ends in ``expert_action`` is one (ALFWorld's
    ``search_expert_action``), so a name from a config or a command line never calls another
    method of the env (``close``, ``reset``).

    Raises:
        ValueError: The env has no scripted expert of that name.
    """
    named = method.isidentifier() and method.endswith("expert_action")
    expert = getattr(env.unwrapped, method, None) if named else None
    if not callable(expert):
        base = env.unwrapped
        have = sorted(n for n in dir(base) if n.endswith("expert_action"))
        env_id = base.spec.id if base.spec is not None else type(base).__name__
        raise ValueError(
            f"{env_id} has no scripted expert {method!r} (it has: {', '.join(have) or 'none'})"
        )
    return expert


class ExpertAgent:
    """The env's scripted expert (``env.unwrapped.expert_action()``) as a :class:`TextAgent`.

    An upper reference on the same tasks as every other agent. Once the expert has nothing
    left to do (the task is won) it answers ``"help"``, which changes nothing. ``method`` names
    another scripted demonstrator of the env, a method whose name ends in ``expert_action``
    (ALFWorld's ``search_expert_action``): no other method of the env is ever called.

    Raises:
        ValueError: The env has no scripted expert of that name.
    """

    def __init__(self, env: gym.Env, method: str = "expert_action") -> None:
        self.env = env
        self._expert = scripted_expert(env, method)

    def act(self, observation: Any, info: dict[str, Any]) -> str:
        """The expert's next command."""
        return self._expert() or "help"


_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9'-]{2,}")


class RandomAgent:
    """Uniform over ``info["admissible_actions"]``: the baseline a trained policy must beat.

    Templated commands (``search[<query>]``, ``answer[<answer>]``) are filled in so that the
    agent can act in every env: a query is 1-4 words drawn from the task, an answer a word of
    the latest observation (or ``yes``/``no``). Commands that only look (``look``,
    ``inventory``, ``examine ...``, ``help``) are left out where others exist, so every step
    can change the state. An env that lists no command gets ``"help"`` (an invalid action).

    Args:
        seed: Seed of the agent's own generator (episodes are reproducible).
    """

    #: Commands that read the state without changing it (ALFWorld's).
    LOOK_ONLY = ("look", "inventory", "help", "examine ")

    def __init__(self, seed: int = 0) -> None:
        self.rng = random.Random(seed)
        self.task = ""

    def reset(self, info: dict[str, Any]) -> None:
        """Remember the task (queries are drawn from its words)."""
        self.task = str(info.get("task", ""))

    def act(self, observation: Any, info: dict[str, Any]) -> str:
        """A uniformly chosen admissible command, templates filled in."""
        actions = [a for a in info.get("admissible_actions") or [] if isinstance(a, str)]
        moving = [a for a in actions if not a.startswith(self.LOOK_ONLY)]
        if not (moving or actions):
            return "help"
        choice = self.rng.choice(moving or actions)
        if "<" not in choice:
            return choice
        head = choice.split("[", 1)[0] if "[" in choice else choice.split("<", 1)[0].strip()
        if head == "search":
            words = _WORD.findall(self.task or str(observation)) or ["item"]
            k = self.rng.randint(1, min(4, len(words)))
            return f"search[{' '.join(self.rng.sample(words, k))}]"
        text = observation[-1]["content"] if isinstance(observation, list) else str(observation)
        words = _WORD.findall(text[-2000:]) + ["yes", "no"]
        return f"{head}[{self.rng.choice(words)}]"
