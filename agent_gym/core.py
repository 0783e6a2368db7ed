"""The contract every agent-gym environment follows, and a small base class for it.

An agent-gym env is an ordinary :class:`gymnasium.Env` whose observations and actions are
strings (docs/env_contract.md has the whole contract):

* ``reset(seed=...)`` picks the task deterministically from the split; two envs reset with
  the same seed start in the identical state (GRPO/GiGPO groups rely on it).
* ``step(action)`` accepts any ``str``. Text the env does not understand is an *invalid
  action*: the state is unchanged, ``info["is_action_valid"]`` is False and the observation
  says what is accepted. Only a non-``str`` action raises (:class:`TypeError`).
* ``terminated`` means the task ended (solved, bought, answered); ``truncated`` is only ever
  set by the step limit (Gymnasium's ``TimeLimit``).
* Every ``info`` carries the keys in :data:`INFO_KEYS`.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import gymnasium as gym

from agent_gym.spaces import Text

#: Info keys every env returns from ``step`` (and from ``reset``, except ``is_action_valid``),
#: with their types. ``admissible_actions`` is ``[]`` where the env cannot enumerate them.
INFO_KEYS: dict[str, type | tuple[type, ...]] = {
    "task": str,
    "task_id": str,
    "anchor_obs": str,
    "admissible_actions": list,
    "is_action_valid": bool,
    "won": bool,
    "score": float,
    "data_source": str,
}

#: Keys that ``reset`` does not have to return.
STEP_ONLY_INFO_KEYS = frozenset({"is_action_valid"})

#: Keys the wrappers add after a step (absent without the wrapper), with their types.
WRAPPER_INFO_KEYS: dict[str, type | tuple[type, ...]] = {
    "raw_action": str,  # ParseAction: the text the model wrote
    "parsed_action": str,  # ParseAction: the command sent to the env ("" on a parse failure)
    "parse_error": str,  # ParseAction: why the text is not a command ("" when it parsed)
    "raw_reward": float,  # ShapeReward: the env's own reward before shaping
}


@dataclass(frozen=True)
class ToolSpec:
    """One tool of an env in the Hermes tool-call action format.

    A tool call ``{"name": name, "arguments": {...}}`` becomes the env command
    ``command.format(**arguments)``.

    Attributes:
        name: Tool name the model calls, e.g. ``"env_step"``.
        description: One sentence for the tool schema shown to the model.
        arguments: Argument name -> description (all arguments are required strings).
        command: Format string that turns the arguments into the env's own command text.
    """

    name: str
    description: str
    arguments: dict[str, str] = field(default_factory=dict)
    command: str = "{command}"

    def schema(self) -> dict[str, Any]:
        """The OpenAI/Hermes JSON schema of this tool (for ``apply_chat_template(tools=...)``)."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": {
                    "type": "object",
                    "properties": {
                        k: {"type": "string", "description": v} for k, v in self.arguments.items()
                    },
                    "required": list(self.arguments),
                },
            },
        }


#: The single generic tool Agent-R1 uses for ALFWorld and WebShop.
ENV_STEP_TOOL = ToolSpec(
    name="env_step",
    description="Execute one command in the environment. The command must be one of the "
    "admissible commands, written exactly.",
    arguments={"command": "the exact command to execute"},
    command="{command}",
)


@dataclass(frozen=True)
class PromptTemplates:
    """Default chat prompt of an env (Jinja2 templates rendered by ``ChatPrompt``).

    The user template sees ``task``, ``observation``, ``history`` (a list of
    ``{"observation", "action"}`` dicts, oldest first), ``admissible_actions``, ``step``,
    ``max_steps`` and ``action_format`` (``"tag"``, ``"tool_call"`` or ``"plain"``).

    Attributes:
        system: System prompt template.
        user: User message template.
    """

    system: str
    user: str


GENERIC_SYSTEM = (
    "You are an agent acting in a text environment. Read the task and the current "
    "observation, then choose exactly one action."
    "{% if action_format == 'tag' %} You may think briefly inside <think></think>, then write "
    "the action inside <action></action>.{% elif action_format == 'tool_call' %} Call a tool "
    'with <tool_call>{"name": ..., "arguments": {...}}</tool_call>.{% else %} Reply with '
    "the action only.{% endif %}"
)

GENERIC_USER = """### Task
{{ task }}
{% if history %}
### Recent history
{% for h in history %}[Observation {{ loop.index }}] {{ h.observation }}
[Action {{ loop.index }}] {{ h.action }}
{% endfor %}{% endif %}
### Current observation
{{ observation }}
{% if admissible_actions %}
### Admissible actions
{% for a in admissible_actions %}- {{ a }}
{% endfor %}{% endif %}
Step {{ step + 1 }}{% if max_steps %} of {{ max_steps }}{% endif %}.{% if action_format == 'tag' %} Answer as <think>...</think><action>your action</action>.{% elif action_format == 'tool_call' %} Answer with one <tool_call>.{% endif %}"""


def check_reset_options(options: Any) -> Mapping[str, Any]:
    """``reset``'s ``options`` as a mapping (``{}`` for None).

    Raises:
        TypeError: ``options`` is neither None nor a dict (the message names it).
    """
    if options is None:
        return {}
    if not isinstance(options, Mapping):
        raise TypeError(
            f"reset(options=...) must be a dict such as {{'task_id': ...}} or None, got "
            f"{type(options).__name__}: {options!r:.80}"
        )
    return options


def _starts_episode(reset: Any) -> Any:
    """``reset`` marking its env as having an episode once it returns, and as not if it raises.

    A subclass's reset calling its parent's (both wrapped) ends unmarked if its own part fails
    after the parent's returned.
    """

    @functools.wraps(reset)
    def wrapper(self: TextEnv, *args: Any, **kwargs: Any) -> Any:
        self._started = False
        try:
            result = reset(self, *args, **kwargs)
        except BaseException:
            self._started = False
            raise
        self._started = True
        return result

    return wrapper


class TextEnv(gym.Env[str, str]):
    """Base class for agent-gym's string-in, string-out environments.

    Subclasses implement ``reset`` and ``step`` (calling :meth:`_check_action` first) and set
    the class attributes below. The base provides the spaces, ``render`` and an idempotent
    ``close``, and holds every subclass to one rule: after ``close`` or a ``reset`` that
    raised (an unknown task id, a broken data file), there is no episode to step, and
    :meth:`_check_action` raises ``ResetNeeded`` until a ``reset`` returns.

    Attributes:
        default_data_source: ``info["data_source"]`` of the embedded default data.
        tools: Tools for the Hermes tool-call action format.
        prompt_templates: Default chat prompt (see :class:`PromptTemplates`).
        max_parallel_calls: How many commands one action may hold (one per line).
        num_tasks: How many tasks ``reset(seed=...)`` draws from (the split's pool), or None
            where unknown; held-out evaluation uses it to stop looking for more distinct tasks.
    """

    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["ansi", "human"], "render_fps": 4}
    default_data_source: ClassVar[str] = "generated"
    tools: ClassVar[tuple[ToolSpec, ...]] = (ENV_STEP_TOOL,)
    prompt_templates: ClassVar[PromptTemplates] = PromptTemplates(GENERIC_SYSTEM, GENERIC_USER)
    max_parallel_calls: ClassVar[int] = 1

    @property
    def num_tasks(self) -> int | None:
        """How many tasks ``reset(seed=...)`` draws from; None (unknown) unless overridden."""
        return None

    def task_id_for(self, seed: int) -> str | None:
        """The ``info["task_id"]`` that ``reset(seed=seed)`` would start, without starting it.

        None (unknown: reset to find out) unless overridden; an env whose reset is costly
        overrides it so that held-out evaluation can find distinct tasks cheaply.
        """
        return None

    def __init__(
        self,
        *,
        render_mode: str | None = None,
        max_observation_length: int = 1_000_000,
        max_action_length: int = 1_000_000,
    ) -> None:
        """Set up the string spaces.

        Args:
            render_mode: ``None``, ``"ansi"`` (``render()`` returns the observation) or
                ``"human"`` (``render()`` prints it).
            max_observation_length: ``max_length`` of the observation space.
            max_action_length: ``max_length`` of the action space.
        """
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(
                f"render_mode={render_mode!r} is not supported; use one of "
                f"{self.metadata['render_modes']} or None"
            )
        self.render_mode = render_mode
        self.observation_space = Text(max_length=max_observation_length)
        self.action_space = Text(max_length=max_action_length)
        self._last_obs: str = ""
        self._closed = False
        self._started = False  # a reset returned since the env was made, closed or failed

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Wrap the subclass's own ``reset`` so that only a reset that returns starts an episode."""
        super().__init_subclass__(**kwargs)
        if "reset" in cls.__dict__:
            cls.reset = _starts_episode(cls.__dict__["reset"])  # type: ignore[method-assign]

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> Any:
        """Seed ``np_random`` (Gymnasium's ``reset``) and reopen the env after :meth:`close`.

        Subclasses call it first, then start the episode and return ``(obs, info)``.
        """
        self._closed = False
        return super().reset(seed=seed, options=options)

    def _check_action(self, action: Any) -> str:
        """Return ``action`` if it is a ``str``; raise :class:`TypeError` otherwise.

        Raises:
            gymnasium.error.ResetNeeded: The env was closed since its last ``reset``.
        """
        if self._closed:
            raise gym.error.ResetNeeded("the env was closed: call reset() before step()")
        if not self._started:
            raise gym.error.ResetNeeded(
                "no episode to step: call reset() first (the last reset raised, or none ran)"
            )
        if not isinstance(action, str):
            raise TypeError(
                f"actions must be str (the agent's command text), got {type(action).__name__}: "
                f"{action!r:.80}"
            )
        return action

    def render(self) -> str | None:
        """Return (``"ansi"``) or print (``"human"``) the current observation."""
        if self.render_mode == "ansi":
            return self._last_obs
        if self.render_mode == "human":
            print(self._last_obs)
        return None

    def close(self) -> None:
        """Release resources; safe to call more than once."""
        self._closed = True
        self._started = False

    @classmethod
    def prepare(cls, *, progress: bool = True, **kwargs: Any) -> str:
        """Build and cache the env's default data (idempotent); return a one-line summary.

        The default builds the env once and resets it; envs with expensive data override it
        to show a progress bar.
        """
        env = cls(**kwargs)
        try:
            env.reset(seed=0)
        finally:
            env.close()
        return f"{cls.__name__}: ready"
