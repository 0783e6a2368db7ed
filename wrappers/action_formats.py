"""Reading env commands out of LLM text: the tag, Hermes tool-call and plain formats.

Pure functions used by :class:`agent_gym.wrappers.ParseAction` (and usable by a learner that
wants to check a response without an env). Each format turns a response into a list of
*calls*; every call is exactly one env command:

* ``"tag"``: ``<think>...</think>`` (optional) then ``<action>command</action>``. Text outside
  the tags is ignored.
* ``"tool_call"``: Hermes tool calls, ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``;
  the tool's :attr:`~agent_gym.core.ToolSpec.command` template turns the arguments into the
  command.
* ``"plain"``: every non-empty line is a command.

Reasoning blocks are removed first in every format, so tags quoted while thinking never
count. ``<thinking>`` is read as ``<think>``, and a response that *starts* inside a reasoning
block (a chat template that opened ``<think>`` in the prompt, as Qwen3 and DeepSeek-R1 do) may
close it without opening it. Line breaks inside one call become spaces, so a call can never
smuggle in a second command for envs that read one command per line.

Scanning is linear in the response length: tags are found with one regex pass and paired
without backtracking, so a 100 kB response of unclosed tags costs microseconds, not minutes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from agent_gym.core import ToolSpec

ActionFormat = Literal["tag", "tool_call", "plain"]
Multiple = Literal["first", "invalid", "join"]

#: The formats :func:`parse_calls` understands.
FORMATS: tuple[str, ...] = ("tag", "tool_call", "plain")
#: What to do with several calls in one response (see :func:`select_calls`).
MULTIPLE_POLICIES: tuple[str, ...] = ("first", "invalid", "join")

_THINK = re.compile(r"<(/?)\s*think(?:ing)?\s*>", re.IGNORECASE)
_ACTION = re.compile(r"<(/?)\s*action\s*>", re.IGNORECASE)
_TOOL_CALL = re.compile(r"<(/?)\s*tool_call\s*>", re.IGNORECASE)


class ActionParseError(ValueError):
    """The response holds no usable command; the message says why, in words for the model."""


def _blocks(text: str, tag: re.Pattern[str], name: str, *, implicit_open: bool = False):
    """Return ``(outer_start, inner_start, inner_end, outer_end)`` of each ``<name>`` block.

    Args:
        text: The response.
        tag: Pattern matching the opening and closing tag (group 1 is ``"/"`` for a close).
        name: Tag name for error messages.
        implicit_open: Treat a close before any open as closing a block opened at offset 0.

    Raises:
        ActionParseError: Unclosed, nested or stray tags.
    """
    blocks = []
    open_at: tuple[int, int] | None = None
    for i, match in enumerate(tag.finditer(text)):
        closing = match.group(1) == "/"
        if closing and open_at is None:
            if implicit_open and i == 0:
                open_at = (0, 0)
            else:
                raise ActionParseError(f"'</{name}>' has no matching '<{name}>'")
        elif not closing and open_at is not None:
            raise ActionParseError(f"'<{name}>' opened again before '</{name}>' closed it")
        if closing:
            blocks.append((open_at[0], open_at[1], match.start(), match.end()))
            open_at = None
        else:
            open_at = (match.start(), match.end())
    if open_at is not None:
        raise ActionParseError(f"'<{name}>' is never closed (was the response cut off?)")
    return blocks


def strip_think(text: str) -> str:
    """Remove ``<think>``/``<thinking>`` blocks (see the module docstring).

    Raises:
        ActionParseError: An unclosed or nested reasoning block.
    """
    blocks = _blocks(text, _THINK, "think", implicit_open=True)
    if not blocks:
        return text
    kept, last = [], 0
    for outer_start, _, _, outer_end in blocks:
        kept.append(text[last:outer_start])
        last = outer_end
    kept.append(text[last:])
    return "".join(kept)


def _one_line(command: str) -> str:
    # splitlines also breaks at \v, \f, \x1c-\x1e, \x85, U+2028/9: whatever an env might split
    # on. (A regex like r"\s*\n\s*" would be quadratic on long runs of spaces.)
    return " ".join(part.strip() for part in command.splitlines() if part.strip())


def _tag_calls(text: str) -> list[str]:
    blocks = _blocks(text, _ACTION, "action")
    if not blocks:
        raise ActionParseError("no <action>...</action> found")
    calls = [_one_line(text[inner_start:inner_end]) for _, inner_start, inner_end, _ in blocks]
    for i, call in enumerate(calls):
        if not call:
            raise ActionParseError(f"<action> {i + 1} is empty")
    return calls


def _load_json(text: str, where: str) -> object:
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise ActionParseError(f"{where}: invalid JSON ({e.msg} at char {e.pos})") from None
    except (ValueError, RecursionError) as e:  # 5000-digit numbers, 100k nested brackets
        raise ActionParseError(f"{where}: unreadable JSON ({type(e).__name__})") from None


def _tool_command(payload: str, index: int, tools: dict[str, ToolSpec]) -> str:
    """Turn the JSON inside one ``<tool_call>`` into an env command."""
    where = f"tool call {index + 1}"
    call = _load_json(payload, where)
    if not isinstance(call, dict) or not isinstance(call.get("name"), str):
        raise ActionParseError(f'{where}: expected a JSON object {{"name": ..., "arguments": ...}}')
    name = call["name"]
    if name not in tools:
        raise ActionParseError(f"{where}: unknown tool {name!r}; tools: {', '.join(tools)}")
    tool = tools[name]
    arguments = call.get("arguments", {})
    if isinstance(arguments, str):  # OpenAI-style: the arguments object encoded as a string
        arguments = (
            _load_json(arguments, f"{where} ({name}) arguments") if arguments.strip() else {}
        )
    if not isinstance(arguments, dict):
        raise ActionParseError(f"{where} ({name}): 'arguments' must be a JSON object")
    values = {}
    for key in tool.arguments:
        value = arguments.get(key)
        if value is None:
            raise ActionParseError(f"{where} ({name}): missing argument {key!r}")
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise ActionParseError(f"{where} ({name}): argument {key!r} must be a string")
        values[key] = _one_line(str(value))
        if not values[key]:
            raise ActionParseError(f"{where} ({name}): argument {key!r} is empty")
    return _one_line(tool.command.format(**values))


def _tool_calls(text: str, tools: Sequence[ToolSpec], multiple: str) -> list[str]:
    blocks = _blocks(text, _TOOL_CALL, "tool_call")
    if not blocks:
        raise ActionParseError("no <tool_call>...</tool_call> found")
    if multiple == "first":  # later calls are ignored, even if their JSON is broken
        blocks = blocks[:1]
    by_name = {tool.name: tool for tool in tools}
    return [
        _tool_command(text[inner_start:inner_end], i, by_name)
        for i, (_, inner_start, inner_end, _) in enumerate(blocks)
    ]


def parse_calls(
    text: str,
    format: ActionFormat = "tag",
    tools: Sequence[ToolSpec] = (),
    multiple: Multiple = "join",
) -> list[str]:
    """Return the commands of every call in ``text`` (at least one).

    Args:
        text: The LLM response.
        format: ``"tag"``, ``"tool_call"`` or ``"plain"``.
        tools: Tools for ``"tool_call"`` (name -> command template).
        multiple: Only ``"first"`` matters here: the tool-call format then reads only the
            first call, so broken JSON in a later call is not an error (unbalanced tags
            still are, in every format).

    Raises:
        ActionParseError: The text holds no well-formed call.
        ValueError: An unknown ``format``.

    Example:
        >>> parse_calls("<think>desk first</think> <action>go to desk 1</action>")
        ['go to desk 1']
    """
    if format not in FORMATS:
        raise ValueError(f"unknown action format {format!r}; use one of {FORMATS}")
    body = strip_think(text)
    if format == "tag":
        return _tag_calls(body)
    if format == "tool_call":
        return _tool_calls(body, tools, multiple)
    calls = [_one_line(line) for line in body.splitlines() if line.strip()]
    if not calls:
        raise ActionParseError("the response is empty")
    return calls


_LIST_MARKER = re.compile(r"^(?:[-*•]|\d{1,3}[.)])\s+")
_QUOTES = "\"'`“”‘’"
_TRAILING = ".,;:!?"


def match_admissible(command: str, admissible: Sequence[str]) -> str | None:
    r"""The admissible command that ``command`` names, read leniently; None if there is none.

    The opt-in ``match="admissible"`` mode of :class:`~agent_gym.wrappers.ParseAction`, for
    small models that name the right command but not in its exact spelling. The first
    non-empty line is taken; then, repeatedly until nothing changes, surrounding whitespace,
    quotes and backticks, one leading list marker (``-``, ``*``, ``1.``, ``1)``) and trailing
    punctuation (``.,;:!?``) are removed; runs of spaces become one. The result must equal
    an admissible command case-insensitively; nothing else (no prefix or fuzzy match).

    Example:
        >>> match_admissible('"Go to desk 1."\nThen take the mug.', ["go to desk 1", "look"])
        'go to desk 1'
        >>> match_admissible("go to the desk", ["go to desk 1"]) is None
        True
    """
    lines = [line for line in command.splitlines() if line.strip()]
    if not lines or not admissible:
        return None
    text, before = lines[0], None
    while text != before:
        before = text
        text = _LIST_MARKER.sub("", text.strip().strip(_QUOTES).strip()).rstrip(_TRAILING)
    key = " ".join(text.split()).casefold()
    for candidate in admissible:
        if " ".join(candidate.split()).casefold() == key:
            return candidate
    return None


_NUMBER = re.compile(r"[(#\[]?\s*(\d{1,3})\s*[.):\]]?")


def match_number(command: str, choices: Sequence[str]) -> str | None:
    """The command that ``command`` picks by its number in ``choices`` (1-based); else None.

    The ``match="number"`` mode of :class:`~agent_gym.wrappers.ParseAction`: the prompt
    numbers the commands and the policy answers with a number. The first non-empty line is
    read with surrounding quotes and whitespace removed; it must be the number alone, optionally
    as ``3.``, ``3)``, ``(3)``, ``[3]`` or ``#3``, between 1 and ``len(choices)``.

    Example:
        >>> match_number("2", ["look", "go to desk 1"])
        'go to desk 1'
        >>> match_number(" (1). ", ["look"]), match_number("3", ["look"]), match_number("1 2", ["a"])
        ('look', None, None)
    """
    lines = [line for line in command.splitlines() if line.strip()]
    if not lines:
        return None
    text = lines[0].strip().strip(_QUOTES).strip().rstrip(_TRAILING)
    match = _NUMBER.fullmatch(text)
    if match is None:
        return None
    k = int(match.group(1))
    return choices[k - 1] if 1 <= k <= len(choices) else None


#: Info keys read as the admissible commands, first present wins: agent-gym's own key, then
#: TextWorld's (``EnvInfos(admissible_commands=True)``), so its gym env works unchanged.
ADMISSIBLE_KEYS: tuple[str, ...] = ("admissible_actions", "admissible_commands")


def admissible_actions(info: Mapping[str, Any] | None) -> list[str]:
    """The admissible commands listed in ``info``; ``[]`` where the env lists none.

    Envs that are not agent-gym's may leave the key out, set it to None or use TextWorld's
    ``admissible_commands``; all of these are read as "absent" or as that list, never an error.
    Non-string entries are dropped.

    Example:
        >>> admissible_actions({"admissible_commands": ["look", "go north"]})
        ['look', 'go north']
        >>> admissible_actions({}), admissible_actions({"admissible_actions": None})
        ([], [])
    """
    for key in ADMISSIBLE_KEYS:
        value = (info or {}).get(key)
        if value is not None and not isinstance(value, (str, bytes)):
            try:
                return [a for a in value if isinstance(a, str)]
            except TypeError:  # not iterable: treated as absent
                return []
    return []


def select_calls(calls: list[str], multiple: Multiple, max_calls: int) -> str:
    """Combine calls into the env command according to the ``multiple`` policy.

    Args:
        calls: Commands from :func:`parse_calls` (non-empty).
        multiple: ``"first"`` keeps the first call; ``"invalid"`` rejects more than one;
            ``"join"`` joins up to ``max_calls`` calls with newlines (one command per line).
        max_calls: Most calls ``"join"`` accepts.

    Raises:
        ActionParseError: Too many calls for the policy.
    """
    if multiple not in MULTIPLE_POLICIES:
        raise ValueError(f"unknown multiple={multiple!r}; use one of {MULTIPLE_POLICIES}")
    if multiple == "first":
        return calls[0]
    limit = 1 if multiple == "invalid" else max_calls
    if len(calls) > limit:
        raise ActionParseError(f"{len(calls)} calls in one response; at most {limit} allowed")
    return "\n".join(calls)


def parse_command(
    text: str,
    format: ActionFormat = "tag",
    tools: Sequence[ToolSpec] = (),
    multiple: Multiple = "first",
    max_calls: int = 1,
) -> str:
    """The env command in ``text``: :func:`parse_calls` then :func:`select_calls`.

    Example:
        >>> from agent_gym.core import ENV_STEP_TOOL
        >>> text = '<tool_call>{"name": "env_step", "arguments": {"command": "look"}}</tool_call>'
        >>> parse_command(text, "tool_call", [ENV_STEP_TOOL])
        'look'
    """
    return select_calls(parse_calls(text, format, tools, multiple), multiple, max_calls)
