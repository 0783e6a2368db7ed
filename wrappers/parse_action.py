"""``ParseAction``: the wrapper that turns LLM text into the env command.

A response that does not parse never reaches the env. Instead the wrapper answers the step
itself: the state is unchanged, the observation repeats the current one after a one-line
explanation, the reward is 0 (penalties are :class:`~agent_gym.wrappers.ShapeReward`'s job),
and the step still counts toward the episode's step limit.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import gymnasium as gym

from agent_gym.core import ENV_STEP_TOOL, ToolSpec
from agent_gym.spaces import Messages
from agent_gym.wrappers.action_formats import (
    FORMATS,
    MULTIPLE_POLICIES,
    ActionFormat,
    ActionParseError,
    Multiple,
    admissible_actions,
    match_admissible,
    match_number,
    parse_calls,
    select_calls,
)

#: How a parsed command is matched: as written, leniently against the admissible commands, or
#: as the number of one of the commands the prompt lists (``info["choices"]``).
MATCH_MODES: tuple[str, ...] = ("strict", "admissible", "number")

_HINTS = {
    "tag": "Write your action as <action>command</action>.",
    "tool_call": 'Call a tool as <tool_call>{"name": ..., "arguments": {...}}</tool_call>.',
    "plain": "Reply with the command only.",
}


class ParseAction(gym.Wrapper[str, str, str, str], gym.utils.RecordConstructorArgs):
    """Parse the tag, Hermes tool-call or plain format into the env's command.

    Wrap the env returned by ``gym.make`` (that is, outside its ``TimeLimit``) and inside
    :class:`~agent_gym.wrappers.ChatPrompt`::

        env = ChatPrompt(ParseAction(gym.make("AgentR1/WebShop-v0"), format="tool_call"))

    **Step limit.** Gymnasium's ``TimeLimit`` only sees steps that reach the env, so this
    wrapper counts every step itself, parsed or not, and sets ``truncated`` once that count
    reaches ``max_episode_steps`` (default: the env spec's, i.e. the registered limit).
    Together both limits mean "at most ``max_episode_steps`` LLM responses per episode", and,
    as in ``TimeLimit``, ``truncated`` is set on the last step even if it also terminates.

    **Info.** Every step adds ``raw_action`` (the response text), ``parsed_action`` (the
    command sent, ``""`` when none was) and ``parse_error`` (``""`` when the parse succeeded).
    A failed parse returns a copy of the last info (so every env info key stays present, and
    ``anchor_obs`` still names the unchanged state) with ``is_action_valid=False``.

    Args:
        env: Any Gymnasium env with string actions (agent-gym's or not); the observation must
            still be text, not chat messages.
        format: ``"tag"``, ``"tool_call"`` or ``"plain"`` (see
            :mod:`agent_gym.wrappers.action_formats`).
        tools: Tools for ``"tool_call"``; default ``env.unwrapped.tools``, or for an env that
            defines none the single generic tool ``env_step(command: str)``
            (:data:`~agent_gym.core.ENV_STEP_TOOL`). A custom
            :class:`~agent_gym.core.ToolSpec` sets the tool name, argument key and command.
        multiple: Several calls in one response: ``"first"`` uses the first, ``"invalid"``
            rejects the response, ``"join"`` sends them as one command per line. Default
            ``"join"`` if the env takes several commands per step
            (``env.unwrapped.max_parallel_calls > 1``), else ``"first"``.
        max_calls: Most calls ``"join"`` accepts; default ``env.unwrapped.max_parallel_calls``.
        max_episode_steps: Step limit counted here; default :func:`step_limit` (the env
            spec's, a ``TimeLimit`` layer's, or the env's own ``max_episode_steps``
            attribute, as a remote env reports its server's limit); ``None``: no limit.
        match: ``"strict"`` (default): the parsed command goes to the env as written.
            ``"admissible"``: each parsed call is read leniently
            (:func:`~agent_gym.wrappers.action_formats.match_admissible`: first non-empty
            line, quotes, backticks, a list marker and trailing punctuation stripped,
            case-insensitive exact match) against the latest ``info["admissible_actions"]``
            (or TextWorld's ``info["admissible_commands"]``),
            and the admissible spelling is sent; a call that matches none is sent as written.
            An opt-in for small models; envs without admissible actions are unaffected.
            ``"number"``: the commands on offer, ``choices(info)``, are added to every info
            as ``info["choices"]`` for the prompt to number, and a call that is a number
            (:func:`~agent_gym.wrappers.action_formats.match_number`) sends the command it
            numbers; any other call is read as in ``"admissible"``. Not upstream's interface:
            an agent-gym option for small models, which then never write an inadmissible
            command by misspelling one.
        choices: With ``match="number"``, the commands offered at a step, from the env's
            info; default :func:`~agent_gym.wrappers.action_formats.admissible_actions` (all
            of them, in the env's order); it must return a list of str (anything else is a
            ``ValueError`` naming it, at the first reset). Must be picklable for subprocess
            vector envs (a module-level function).

    Example:
        >>> import gymnasium as gym, agent_gym
        >>> from agent_gym.wrappers import ParseAction
        >>> env = ParseAction(gym.make("AgentR1/ALFWorld-v0"), format="tag")  # doctest: +SKIP
        >>> obs, info = env.reset(seed=0)  # doctest: +SKIP
        >>> obs, r, term, trunc, info = env.step("<action>look</action>")  # doctest: +SKIP
    """

    def __init__(
        self,
        env: gym.Env,
        format: ActionFormat = "tag",
        tools: Sequence[ToolSpec] | None = None,
        multiple: Multiple | None = None,
        max_calls: int | None = None,
        max_episode_steps: int | None = None,
        match: str = "strict",
        choices: Callable[[dict[str, Any]], list[str]] | None = None,
    ) -> None:
        gym.utils.RecordConstructorArgs.__init__(
            self,
            format=format,
            tools=tools,
            multiple=multiple,
            max_calls=max_calls,
            max_episode_steps=max_episode_steps,
            match=match,
            choices=choices,
        )
        gym.Wrapper.__init__(self, env)
        if format not in FORMATS:
            raise ValueError(f"unknown action format {format!r}; use one of {FORMATS}")
        if match not in MATCH_MODES:
            raise ValueError(f"unknown match={match!r}; use one of {MATCH_MODES}")
        self.match = match
        if choices is not None and match != "number":
            raise ValueError(f"choices are read by match='number' only, not match={match!r}")
        self.choices = choices or admissible_actions
        if isinstance(env.observation_space, Messages):
            raise ValueError(
                "ParseAction needs text observations but this env already returns chat "
                "messages; put ParseAction inside ChatPrompt: ChatPrompt(ParseAction(env))"
            )
        parallel = int(getattr(env.unwrapped, "max_parallel_calls", None) or 1)
        if multiple is None:
            multiple = "join" if parallel > 1 else "first"
        if multiple not in MULTIPLE_POLICIES:
            raise ValueError(f"unknown multiple={multiple!r}; use one of {MULTIPLE_POLICIES}")
        self.action_format: ActionFormat = format
        if tools is None:
            tools = getattr(env.unwrapped, "tools", None) or (ENV_STEP_TOOL,)
        self.tools: tuple[ToolSpec, ...] = tuple(tools)
        if format == "tool_call" and not self.tools:
            raise ValueError("format='tool_call' needs tools: pass tools=[ToolSpec(...)]")
        self.multiple: Multiple = multiple
        self.max_calls = parallel if max_calls is None else max_calls
        if self.max_calls < 1:
            raise ValueError(f"max_calls must be >= 1, got {self.max_calls}")
        if max_episode_steps is None:
            max_episode_steps = step_limit(env)
        self.max_episode_steps: int | None = max_episode_steps
        self._elapsed_steps = 0
        self._last_obs: str | None = None
        self._last_info: dict[str, Any] | None = None

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        """Reset the env and the step count."""
        obs, info = self._offer(*self.env.reset(seed=seed, options=options))
        self._elapsed_steps = 0
        self._last_obs, self._last_info = obs, info
        return obs, info

    def _offer(self, obs: str, info: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        """``info`` with ``choices`` added (``match="number"``), else as it is."""
        if self.match == "number":
            offered = self.choices(info)
            if isinstance(offered, (str, bytes)) or not isinstance(offered, Iterable):
                wrong = [offered]
            else:
                offered = list(offered)
                wrong = [c for c in offered if not isinstance(c, str)]
            if wrong:
                name = getattr(self.choices, "__name__", self.choices)
                raise ValueError(
                    f"choices={name!r} must return the commands on offer, a list of str; "
                    f"it gave {type(wrong[0]).__name__} {wrong[0]!r:.80}"
                )
            info = {**info, "choices": offered}
        return obs, info

    def parse(self, text: str) -> str:
        """Return the env command in ``text``; raise :class:`ActionParseError` if none."""
        calls = parse_calls(text, self.action_format, self.tools, self.multiple)
        if self.match == "number":
            choices = (self._last_info or {}).get("choices", [])
            calls = [match_number(c, choices) or c for c in calls]
        if self.match in ("admissible", "number"):
            admissible = admissible_actions(self._last_info)
            calls = [match_admissible(c, admissible) or c for c in calls]
        return select_calls(calls, self.multiple, self.max_calls)

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """Parse ``action``; step the env with the command, or answer the failure here.

        Raises:
            TypeError: ``action`` is not a ``str``.
            gymnasium.error.ResetNeeded: ``step`` before ``reset``.
        """
        if not isinstance(action, str):
            raise TypeError(
                f"actions must be str (the LLM's response text), got {type(action).__name__}"
            )
        if self._last_info is None:
            raise gym.error.ResetNeeded("call reset() before step()")
        self._elapsed_steps += 1
        try:
            command = self.parse(action)
        except ActionParseError as e:
            obs = (
                f"Invalid response: {e}. {_HINTS[self.action_format]} "
                f"Nothing happened.\n\n{self._last_obs}"
            )
            info = {
                **self._last_info,
                "is_action_valid": False,
                "raw_action": action,
                "parsed_action": "",
                "parse_error": str(e),
            }
            return obs, 0.0, False, self._limit_reached(), info
        obs, reward, terminated, truncated, info = self.env.step(command)
        obs, info = self._offer(obs, info)
        self._last_obs, self._last_info = obs, info
        info = {**info, "raw_action": action, "parsed_action": command, "parse_error": ""}
        return obs, reward, terminated, truncated or self._limit_reached(), info

    def _limit_reached(self) -> bool:
        return self.max_episode_steps is not None and self._elapsed_steps >= self.max_episode_steps


def step_limit(env: gym.Env) -> int | None:
    """The env's step limit, or None if it has none.

    ``env.spec.max_episode_steps``, else the limit of the outermost ``TimeLimit`` wrapper (one
    applied by hand has no spec to record it in), else the base env's ``max_episode_steps``
    attribute (:class:`agent_gym.remote.OpenEnvTextEnv` reports its server's limit there).
    """
    if env.spec is not None and env.spec.max_episode_steps:
        return env.spec.max_episode_steps
    layer = env
    while isinstance(layer, gym.Wrapper):
        if isinstance(layer, gym.wrappers.TimeLimit):
            return getattr(layer, "_max_episode_steps", None)
        layer = layer.env
    return getattr(env.unwrapped, "max_episode_steps", None)
