"""Third-party agents: the ``TextAgent`` protocol and ``run_episode``.

Any object with ``act(observation, info) -> str`` can play an agent-gym env: a scripted
policy, a person, or an LLM behind an API (see ``examples/openai_agent.py``)::

    class FirstAdmissible:
        def act(self, observation, info):
            return info["admissible_actions"][0]

    result = run_episode(gym.make("AgentR1/ALFWorld-v0"), FirstAdmissible(), seed=0)
    print(result.return_, result.length, result.success)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import gymnasium as gym


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


@dataclass
class EpisodeStep:
    """One step of an episode, as :func:`run_episode` saw it.

    Attributes:
        observation: What the agent acted on.
        action: What the agent answered.
        reward: The reward of this step.
        terminated: The task ended on this step.
        truncated: The step limit ended the episode on this step.
        info: The env's info after this step.
    """

    observation: Any
    action: str
    reward: float
    terminated: bool
    truncated: bool
    info: dict[str, Any]


@dataclass
class EpisodeResult:
    """The outcome of one episode.

    Attributes:
        return_: Sum of the rewards (``return`` is a Python keyword).
        length: Number of steps taken.
        success: ``info["won"]`` after the last step (False if the env has no ``won``).
        terminated: The task ended (solved, bought, answered).
        truncated: A step limit ended it (the env's, or ``run_episode``'s ``max_steps``).
        task: ``info["task"]`` at reset.
        task_id: ``info["task_id"]`` at reset.
        seed: The seed passed to ``reset``.
        score: ``info["score"]`` after the last step (the benchmark's own score), if any.
        steps: Every step, in order.
    """

    return_: float
    length: int
    success: bool
    terminated: bool = False
    truncated: bool = False
    task: str = ""
    task_id: str = ""
    seed: int | None = None
    score: float | None = None
    steps: list[EpisodeStep] = field(default_factory=list)


def run_episode(
    env: gym.Env,
    agent: TextAgent,
    seed: int | None = None,
    max_steps: int | None = None,
    options: dict[str, Any] | None = None,
) -> EpisodeResult:
    """Play one episode of ``env`` with ``agent``.

    Args:
        env: Any agent-gym env, wrapped or not (``gym.make`` gives it a step limit).
        agent: A :class:`TextAgent`.
        seed: Reset seed (selects the task).
        max_steps: Stop after this many steps even if the env has not ended the episode
            (``truncated`` is then True). Needed when the env has no step limit of its own.
        options: Reset options, e.g. ``{"task_id": ...}``.

    Returns:
        The episode's :class:`EpisodeResult`.

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
    result = EpisodeResult(
        return_=0.0,
        length=0,
        success=bool(info.get("won", False)),
        task=str(info.get("task", "")),
        task_id=str(info.get("task_id", "")),
        seed=seed,
        score=info.get("score"),
    )
    while max_steps is None or result.length < max_steps:
        action = agent.act(obs, info)
        if not isinstance(action, str):
            raise TypeError(
                f"{type(agent).__name__}.act returned {type(action).__name__}; it must return "
                "the action text (str)"
            )
        next_obs, reward, terminated, truncated, info = env.step(action)
        result.steps.append(EpisodeStep(obs, action, float(reward), terminated, truncated, info))
        result.return_ += float(reward)
        result.length += 1
        obs = next_obs
        if terminated or truncated:
            result.terminated, result.truncated = bool(terminated), bool(truncated)
            break
    else:
        result.truncated = True  # stopped by max_steps
    result.success = bool(info.get("won", False))
    result.score = info.get("score")
    return result
