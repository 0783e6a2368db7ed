"""``ChatPrompt``: the observation becomes the chat messages the policy sees.

The prompt is rebuilt from structured state at every step (Agent-R1's step-level MDP): a
system message and one user message holding the task, the last ``history_length``
observation/action pairs, the current observation and the admissible actions. The
conversation is never grown by appending, so prompt length stays bounded however long the
episode runs. The learner applies its tokenizer's chat template to these messages.

It works on any Gymnasium env with text observations, not only agent-gym's: an env without
``prompt_templates`` gets the generic prompt (:data:`DEFAULT_PROMPTS`), the task is
``info["task"]`` when the env reports one and the episode's first observation otherwise, and
info keys the env does not report are simply absent from the prompt.
"""

from __future__ import annotations

import json
from collections import deque
from typing import Any

import gymnasium as gym
import jinja2

from agent_gym.core import ENV_STEP_TOOL, GENERIC_SYSTEM, GENERIC_USER, PromptTemplates
from agent_gym.spaces import Messages, replace_surrogates
from agent_gym.wrappers.action_formats import admissible_actions
from agent_gym.wrappers.parse_action import step_limit

#: The prompt of an env that defines no ``prompt_templates`` (the generic one agent-gym's own
#: envs start from): task, recent history, current observation, admissible actions.
DEFAULT_PROMPTS = PromptTemplates(system=GENERIC_SYSTEM, user=GENERIC_USER)

#: Appended to the system prompt in the tool-call format, in the layout Hermes-style chat
#: templates (Qwen2.5, Hermes) use: one JSON schema per line inside <tools></tools>.
TOOLS_BLOCK = """# Tools

You can call the functions whose signatures are listed inside <tools></tools>, one JSON object per line:
<tools>
{schemas}
</tools>

To call a function, write a JSON object with its name and arguments inside <tool_call></tool_call> tags:
<tool_call>
{{"name": <function-name>, "arguments": <args-json-object>}}
</tool_call>"""

_FORMATS = ("tag", "tool_call", "plain")

#: A short prompt for any env that lists admissible actions: the task, the newest observation,
#: the history and the commands, the commands last so that a small model copies one of them.
#: About half the tokens of ALFWorld's default prompt; ``env.prompt = "compact"`` in a recipe.
COMPACT_PROMPTS = PromptTemplates(
    system=(
        "You act in a text environment. Reply with one command copied from the list"
        "{% if action_format == 'tag' %}, inside <action></action>"
        "{% elif action_format == 'tool_call' %}, as an env_step tool call{% endif %}."
    ),
    user=(
        "Task: {{ task }}\n\n"
        "{% for h in history %}{{ h.observation }}\n> {{ h.action }}\n\n{% endfor %}"
        "{{ observation }}\n\n"
        "{% if admissible_actions %}Commands:\n"
        "{% for a in admissible_actions if a != 'help' %}{{ a }}\n{% endfor %}\n{% endif %}"
        "Copy the one command that best advances the task:"
    ),
)


def _cut(text: str, limit: int | None) -> str:
    if limit is None or len(text) <= limit:
        return text
    return text[:limit] + " [...]"


def tools_block(schemas: list[dict[str, Any]]) -> str:
    """The system-prompt section that lists tool schemas (see :data:`TOOLS_BLOCK`)."""
    lines = "\n".join(json.dumps(s, ensure_ascii=False) for s in schemas)
    return TOOLS_BLOCK.format(schemas=lines)


class ChatPrompt(gym.Wrapper[list, str, str, str], gym.utils.RecordConstructorArgs):
    """Render the env's prompt templates into ``[system, user]`` chat messages.

    The observation becomes ``[{"role": "system", "content": ...}, {"role": "user",
    "content": ...}]`` (space :class:`~agent_gym.spaces.Messages`); actions, rewards and
    ``info`` pass through unchanged (``info["anchor_obs"]`` included). The rendered messages
    are not copied into ``info``: they are the observation.

    The Jinja2 templates (``templates``, else ``env.unwrapped.prompt_templates``, else
    :data:`DEFAULT_PROMPTS`) see ``task`` (``info["task"]``, or the episode's first observation
    for an env that reports no task), ``observation``, ``history``
    (``[{"observation", "action"}]``, oldest first), ``admissible_actions``
    (``info["admissible_actions"]`` or TextWorld's ``info["admissible_commands"]``; ``[]`` when
    absent), ``step`` (0-based), ``max_steps``, ``action_format``, ``tools`` (the tool schemas:
    the inner ``ParseAction``'s or the env's tools, else the generic ``env_step``) and ``info``
    (the env's latest info, for env-specific fields). Undefined names raise, so a template typo
    fails at the first reset rather than silently printing nothing.

    History shows the command the env received (``info["parsed_action"]`` from an inner
    :class:`~agent_gym.wrappers.ParseAction`), ``"(invalid: <reason>)"`` for a response that
    did not parse, or the action text itself when there is no ``ParseAction``.

    In the ``"tool_call"`` format the system prompt ends with the tool schemas
    (:meth:`ToolSpec.schema <agent_gym.core.ToolSpec.schema>`) as Hermes lists them; pass
    ``tools_in_system=False`` to leave them out and give :attr:`tool_schemas` to
    ``tokenizer.apply_chat_template(messages, tools=...)`` instead.

    Args:
        env: Any Gymnasium env with ``str`` observations, usually ``ParseAction(gym.make(...))``.
        history_length: How many past observation/action pairs to show (0: none).
        action_format: ``"tag"``, ``"tool_call"`` or ``"plain"``; default: the inner
            ``ParseAction``'s format, else ``"tag"``.
        templates: Prompt templates; default ``env.unwrapped.prompt_templates``, else
            :data:`DEFAULT_PROMPTS`.
        max_observation_chars: Cut the current and past observations to this many characters
            (``None``: no cut), as Agent-R1's WebShop prompt cuts to 1800.
        max_action_chars: Cut each action the history shows to this many characters
            (``None``: no cut). A response is bounded by the policy's token budget, but an
            agent behind an API can send megabytes, which the history would repeat.
        tools_in_system: Whether the tool-call format lists the tool schemas in the system
            prompt.

    Example:
        >>> import gymnasium as gym, agent_gym
        >>> from agent_gym.wrappers import ChatPrompt, ParseAction
        >>> env = ChatPrompt(ParseAction(gym.make("AgentR1/WebShop-v0")))  # doctest: +SKIP
        >>> messages, info = env.reset(seed=0)  # doctest: +SKIP
        >>> [m["role"] for m in messages]  # doctest: +SKIP
        ['system', 'user']
    """

    def __init__(
        self,
        env: gym.Env,
        history_length: int = 2,
        action_format: str | None = None,
        templates: PromptTemplates | None = None,
        max_observation_chars: int | None = None,
        tools_in_system: bool = True,
        max_action_chars: int | None = None,
    ) -> None:
        gym.utils.RecordConstructorArgs.__init__(
            self,
            history_length=history_length,
            action_format=action_format,
            templates=templates,
            max_observation_chars=max_observation_chars,
            tools_in_system=tools_in_system,
            max_action_chars=max_action_chars,
        )
        gym.Wrapper.__init__(self, env)
        if history_length < 0:
            raise ValueError(f"history_length must be >= 0, got {history_length}")
        parser_format = _wrapper_attr(env, "action_format")
        if action_format is None:
            action_format = parser_format or "tag"
        if action_format not in _FORMATS:
            raise ValueError(f"unknown action_format {action_format!r}; use one of {_FORMATS}")
        if parser_format is not None and parser_format != action_format:
            raise ValueError(
                f"ChatPrompt(action_format={action_format!r}) would ask for a format the inner "
                f"ParseAction(format={parser_format!r}) does not read; use the same format"
            )
        self.history_length = history_length
        self.action_format = action_format
        self.max_observation_chars = max_observation_chars
        self.max_action_chars = max_action_chars
        self.tools_in_system = tools_in_system
        templates = templates or getattr(env.unwrapped, "prompt_templates", None) or DEFAULT_PROMPTS
        jinja = jinja2.Environment(undefined=jinja2.StrictUndefined, autoescape=False)
        self._system = jinja.from_string(templates.system)
        self._user = jinja.from_string(templates.user)
        #: OpenAI/Hermes schemas of the tools (for ``apply_chat_template(tools=...)``).
        self.tool_schemas: list[dict[str, Any]] = [
            tool.schema() for tool in (_wrapper_attr(env, "tools") or (ENV_STEP_TOOL,))
        ]
        self.max_steps: int | None = _wrapper_attr(env, "max_episode_steps") or step_limit(env)
        self.observation_space = Messages()
        self._history: deque[dict[str, str]] = deque(maxlen=history_length or None)
        self._obs = ""
        self._first_obs = ""
        self._info: dict[str, Any] = {}
        self._step = 0

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[list[dict[str, str]], dict[str, Any]]:
        """Reset the env and the history; return the first prompt."""
        obs, info = self.env.reset(seed=seed, options=options)
        _check_text(obs, "reset")
        self._history.clear()
        self._obs, self._first_obs, self._info, self._step = obs, obs, info, 0
        return self.messages(), info

    def step(self, action: str) -> tuple[list[dict[str, str]], float, bool, bool, dict[str, Any]]:
        """Step the env, record the pair in the history and return the next prompt."""
        obs, reward, terminated, truncated, info = self.env.step(action)
        _check_text(obs, "step")
        if info.get("parse_error"):
            shown = f"(invalid: {info['parse_error']})"
        else:
            shown = info.get("parsed_action") or action
        if self.history_length:
            shown = _cut(shown, self.max_action_chars)
            self._history.append({"observation": self._obs, "action": shown})
        self._obs, self._info = obs, info
        self._step += 1
        return self.messages(), reward, terminated, truncated, info

    @property
    def history(self) -> list[dict[str, str]]:
        """The kept ``{"observation", "action"}`` pairs, oldest first (a copy)."""
        return list(self._history)

    def messages(self, history_length: int | None = None) -> list[dict[str, str]]:
        """The ``[system, user]`` messages for the current state.

        Args:
            history_length: Show only this many of the newest history pairs (e.g. to fit a
                token budget); default: all that are kept (``self.history_length``).
        """
        limit = self.max_observation_chars
        history = list(self._history)
        if history_length is not None:
            history = history[len(history) - history_length :] if history_length > 0 else []
        context = {
            "task": self._info.get("task") or self._first_obs,
            "observation": _cut(self._obs, limit),
            "history": [
                {"observation": _cut(h["observation"], limit), "action": h["action"]}
                for h in history
            ],
            "admissible_actions": admissible_actions(self._info),
            "step": self._step,
            "max_steps": self.max_steps,
            "action_format": self.action_format,
            "tools": self.tool_schemas,
            "info": self._info,
        }
        system = self._system.render(context)
        if self.action_format == "tool_call" and self.tools_in_system and self.tool_schemas:
            system = f"{system}\n\n{tools_block(self.tool_schemas)}"
        # The history shows the model's own commands, which may hold lone surrogates: they
        # become U+FFFD, so the messages always encode as UTF-8.
        return [
            {"role": "system", "content": replace_surrogates(system)},
            {"role": "user", "content": replace_surrogates(self._user.render(context))},
        ]


def _check_text(obs: Any, where: str) -> None:
    if not isinstance(obs, str):
        raise TypeError(
            f"ChatPrompt renders text observations, but the env's {where}() returned "
            f"{type(obs).__name__}: {obs!r:.80}; wrap an env whose observations are str"
        )


def _wrapper_attr(env: gym.Env, name: str) -> Any:
    """``env.get_wrapper_attr(name)``, or None where no layer has it."""
    try:
        return env.get_wrapper_attr(name)
    except AttributeError:
        return None
