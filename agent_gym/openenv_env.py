"""A Gymnasium text env behind OpenEnv's ``Environment`` interface (the server side).

:class:`GymTextEnvironment` is what :mod:`agent_gym.openenv_server` serves: one instance per
session, each its own ``gym.make(env_id, **env_kwargs)``. It speaks OpenEnv's typed messages,
:class:`TextAction` (``{"command": str}``) and :class:`TextObservation` (``text``,
``terminated``, ``truncated``, ``info``, plus OpenEnv's ``reward`` and ``done``), and raises
:class:`EnvRequestError` subclasses, each carrying the HTTP status it maps to, for requests it
cannot serve.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict
from typing import Any

import gymnasium as gym

try:
    from openenv.core.env_server import Action, Environment, Observation, State
    from openenv.core.env_server.types import EnvironmentMetadata
    from pydantic import Field
except ImportError as exc:  # pragma: no cover - depends on the install
    raise ImportError(
        "serving envs over OpenEnv needs the openenv extra: pip install 'agent-gym[openenv]'"
    ) from exc

from agent_gym.spaces import replace_surrogates
from agent_gym.wrappers.recording import to_jsonable

#: Default longest action, in characters (the action-space limit of agent-gym's envs).
MAX_ACTION_CHARS = 1_000_000


class TextAction(Action):
    """An OpenEnv action holding the agent's command text (any string)."""

    command: str = Field(description="the agent's command text; any string is accepted")


class TextObservation(Observation):
    """What a reset or step returns (``reward`` and ``done`` come from OpenEnv's base)."""

    text: str = Field(description="the env's observation text")
    terminated: bool = Field(default=False, description="the task ended")
    truncated: bool = Field(default=False, description="the step limit ended the episode")
    info: dict[str, Any] = Field(default_factory=dict, description="the env's info dict")


class EnvRequestError(ValueError):
    """A request the env cannot serve; ``status_code`` is the HTTP status it maps to."""

    status_code = 400


class ResetFirstError(EnvRequestError):
    """``step`` before ``reset`` (or on OpenEnv's stateless ``/step``, always)."""

    status_code = 409


class ActionTooLongError(EnvRequestError):
    """The action is longer than the server's ``max_action_chars``."""

    status_code = 413


class SessionClosedError(EnvRequestError):
    """The session's env was closed (by ``close`` or the idle timeout)."""

    status_code = 410


def wire_safe(value: Any) -> Any:
    """``value`` as JSON types, with lone surrogates replaced by U+FFFD.

    A Python ``str`` may hold lone surrogates (``chr(0xD800)``); OpenEnv serialises replies with
    pydantic, which cannot encode them, so each becomes U+FFFD (the Unicode replacement
    character) rather than failing the reply.

    Example:
        >>> wire_safe({"obs": "a" + chr(0xD800), "n": 1})
        {'obs': 'a\ufffd', 'n': 1}
    """
    value = to_jsonable(value)
    if isinstance(value, str):
        return replace_surrogates(value)
    if isinstance(value, dict):
        return {replace_surrogates(k): wire_safe(v) for k, v in value.items()}
    if isinstance(value, list):
        return [wire_safe(v) for v in value]
    return value


def _check_seed(seed: Any) -> int | None:
    if seed is None or (isinstance(seed, int) and not isinstance(seed, bool) and seed >= 0):
        return seed
    raise EnvRequestError(f"seed must be a non-negative integer or null, got {seed!r:.80}")


class GymTextEnvironment(Environment[TextAction, TextObservation, State]):
    """One session's env: ``gym.make(env_id, **env_kwargs)`` behind OpenEnv's interface.

    Each session gets its own instance (OpenEnv calls the factory once per session), so
    concurrent sessions never share state.

    Args:
        env_id: A registered id (``AgentR1/HotpotQA-v0``) or ``module:Id``.
        env_kwargs: Keyword arguments of ``gym.make``.
        max_action_chars: Longest action accepted, in characters.
    """

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(
        self,
        env_id: str,
        env_kwargs: Mapping[str, Any] | None = None,
        max_action_chars: int = MAX_ACTION_CHARS,
    ) -> None:
        super().__init__()
        self.env_id = env_id
        self.max_action_chars = max_action_chars
        self._env = gym.make(env_id, **dict(env_kwargs or {}))
        self._state = State(episode_id=None, step_count=0)
        self._reset_done = False
        self._closed = False

    def _observation(
        self, obs: Any, reward: float, terminated: bool, truncated: bool, info: dict[str, Any]
    ) -> TextObservation:
        if not isinstance(obs, str):
            raise TypeError(
                f"{self.env_id} returned a {type(obs).__name__} observation; serve-env serves "
                f"text envs (str observations)"
            )
        reward = float(reward)
        return TextObservation(
            text=wire_safe(obs),
            reward=reward if math.isfinite(reward) else None,
            done=bool(terminated or truncated),
            terminated=bool(terminated),
            truncated=bool(truncated),
            info=wire_safe(info),
        )

    def reset(
        self,
        seed: int | None = None,
        episode_id: str | None = None,
        options: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> TextObservation:
        """``env.reset(seed=seed, options=options)``; ``episode_id`` is only recorded."""
        if self._closed:
            raise SessionClosedError("this session's env is closed; open a new session")
        if kwargs:
            raise EnvRequestError(
                f"unknown reset parameter(s) {sorted(kwargs)}; reset takes seed, options and "
                f"episode_id"
            )
        if options is not None and not isinstance(options, dict):
            raise EnvRequestError(f"options must be a JSON object, got {options!r:.80}")
        obs, info = self._env.reset(seed=_check_seed(seed), options=options)
        self._reset_done = True
        self._state = State(episode_id=episode_id, step_count=0)
        return self._observation(obs, 0.0, False, False, info)

    def step(
        self, action: TextAction, timeout_s: float | None = None, **kwargs: Any
    ) -> TextObservation:
        """``env.step(action.command)``."""
        if self._closed:
            raise SessionClosedError(
                "this session's env is closed (closed by the client or idle past the server's "
                "--idle-timeout); open a new session"
            )
        if not self._reset_done:
            raise ResetFirstError(
                "step before reset: reset this session first (OpenEnv's stateless /step builds "
                "a fresh env per request; use the /ws or /sessions endpoints for episodes)"
            )
        command = action.command
        if len(command) > self.max_action_chars:
            raise ActionTooLongError(
                f"the action is {len(command)} characters; this server accepts at most "
                f"{self.max_action_chars} (serve-env --max-action-chars)"
            )
        obs, reward, terminated, truncated, info = self._env.step(command)
        self._state.step_count += 1
        return self._observation(obs, reward, terminated, truncated, info)

    @property
    def state(self) -> State:
        """Episode id and steps taken in this episode."""
        return self._state

    def get_metadata(self) -> EnvironmentMetadata:
        """The served env id, for OpenEnv's ``/metadata``."""
        from agent_gym import __version__

        return EnvironmentMetadata(
            name=self.env_id,
            description=f"{self.env_id} served by agent-gym (text actions and observations)",
            version=__version__,
        )

    def close(self) -> None:
        """Close the env; idempotent."""
        if not self._closed:
            self._closed = True
            self._env.close()


def env_description(env_id: str, env_kwargs: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Build the env once and describe it (``GET /agent_gym/spec``); fails early if it cannot.

    Returns:
        ``env_id``, ``max_episode_steps``, ``max_parallel_calls``, ``tools`` (``ToolSpec``
        fields) and ``prompt_templates`` (``system``/``user``, or None for a non-agent-gym env).
    """
    env = gym.make(env_id, **dict(env_kwargs or {}))
    try:
        inner = env.unwrapped
        templates = getattr(inner, "prompt_templates", None)
        return {
            "env_id": env_id,
            "max_episode_steps": env.spec.max_episode_steps if env.spec is not None else None,
            "max_parallel_calls": int(getattr(inner, "max_parallel_calls", None) or 1),
            "tools": [asdict(t) for t in getattr(inner, "tools", None) or ()],
            "prompt_templates": asdict(templates) if templates is not None else None,
        }
    finally:
        env.close()
