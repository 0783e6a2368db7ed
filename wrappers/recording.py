"""``RecordEpisodes``: finished episodes to a JSONL file, one line each.

Each line is written with a single ``write`` on a file opened in append mode, so a run that
is interrupted leaves only complete lines, and the workers of a vector env on the same
machine may share one file (``O_APPEND`` writes do not interleave on a local file system).
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np


def to_jsonable(value: Any) -> Any:
    r"""Convert ``value`` into plain JSON types.

    numpy scalars and arrays become numbers and lists, tuples and sets become lists, keys
    become strings, bytes are decoded (undecodable bytes as ``\xNN``), non-finite floats
    become the strings ``"nan"``, ``"inf"``, ``"-inf"`` (JSON has no such numbers) and
    anything else becomes its ``repr``.
    """
    if isinstance(value, (str, bool, int)) or value is None:
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, np.generic):
        return to_jsonable(value.item())
    if isinstance(value, np.ndarray):
        return to_jsonable(value.tolist())
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted((to_jsonable(v) for v in value), key=repr)
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="backslashreplace")
    return repr(value)


_LINE_BREAKS = {0x85: "\\u0085", 0x2028: "\\u2028", 0x2029: "\\u2029"}


def json_line(record: Any) -> bytes:
    r"""One UTF-8 JSONL line (with ``\n``) for ``record``, whatever strings it holds.

    Python strings may hold lone surrogates (``"\ud800"``), which UTF-8 cannot encode.
    Writing them as the JSON escape ``\ud800`` keeps the line valid UTF-8 while
    ``json.loads`` still returns the original string. Unicode line separators (U+0085,
    U+2028, U+2029) are escaped too, so the line splits only at its final ``\n``.
    """
    text = json.dumps(to_jsonable(record), ensure_ascii=False, allow_nan=False)
    # JSON allows these raw inside strings, but str.splitlines() and many JSONL readers
    # treat them as line breaks; they can only occur inside strings, so escaping is safe.
    text = text.translate(_LINE_BREAKS)
    # A lone surrogate can only sit inside a JSON string, where "backslashreplace" writes it as
    # the \uXXXX escape JSON itself uses; every other character encodes normally.
    return text.encode("utf-8", errors="backslashreplace") + b"\n"


class RecordEpisodes(gym.Wrapper, gym.utils.RecordConstructorArgs):
    """Append each finished episode to ``path`` as one JSON line.

    A line holds ``env_id``, ``task``, ``task_id``, ``data_source``, ``seed`` (as passed to
    ``reset``, or null), ``options``, ``return``, ``length``, ``won``, ``score``,
    ``terminated``, ``truncated``, ``reset_info``, ``final_observation`` and ``steps``: for
    every step its ``prompt`` (the observation the agent acted on: text, or chat messages
    under :class:`~agent_gym.wrappers.ChatPrompt`), ``action``, ``reward``, ``terminated``,
    ``truncated`` and ``info``.

    An episode is written when a step returns ``terminated`` or ``truncated``. An episode cut
    short by ``reset`` or ``close`` is dropped, so every line is a whole episode.

    Args:
        env: The env to record.
        path: The JSONL file (created with its parent folders; appended to if it exists).

    Example:
        >>> import gymnasium as gym, agent_gym
        >>> from agent_gym.wrappers import RecordEpisodes
        >>> env = RecordEpisodes(gym.make("AgentR1/HotpotQA-v0"), "runs/episodes.jsonl")  # doctest: +SKIP
    """

    def __init__(self, env: gym.Env, path: str | os.PathLike[str]) -> None:
        gym.utils.RecordConstructorArgs.__init__(self, path=str(path))
        gym.Wrapper.__init__(self, env)
        self.path = Path(path)
        self._fd: int | None = None
        self._episode: dict[str, Any] | None = None
        self._prompt: Any = None

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        """Reset the env and start a new episode record."""
        obs, info = self.env.reset(seed=seed, options=options)
        spec = self.env.spec
        self._episode = {
            "env_id": spec.id if spec is not None else None,
            "task": info.get("task"),
            "task_id": info.get("task_id"),
            "data_source": info.get("data_source"),
            "seed": seed,
            "options": options,
            "reset_info": info,
            "steps": [],
        }
        self._prompt = obs
        return obs, info

    def step(self, action: Any):
        """Step the env; write the episode when it ends."""
        obs, reward, terminated, truncated, info = self.env.step(action)
        if self._episode is not None:
            self._episode["steps"].append(
                {
                    "prompt": self._prompt,
                    "action": action,
                    "reward": reward,
                    "terminated": terminated,
                    "truncated": truncated,
                    "info": info,
                }
            )
            self._prompt = obs
            if terminated or truncated:
                self._write(obs, info, terminated, truncated)
        return obs, reward, terminated, truncated, info

    def _write(self, obs: Any, info: dict[str, Any], terminated: bool, truncated: bool) -> None:
        episode, self._episode = self._episode, None
        steps = episode.pop("steps")
        record = {
            **episode,
            "return": float(sum(float(s["reward"]) for s in steps)),
            "length": len(steps),
            "won": bool(info.get("won", False)),
            "score": info.get("score"),
            "terminated": bool(terminated),
            "truncated": bool(truncated),
            "final_observation": obs,
            "steps": steps,
        }
        data = json_line(record)
        if self._fd is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        # One write call per line (looping only if the kernel accepts part of a huge line).
        view = memoryview(data)
        while view:
            view = view[os.write(self._fd, view) :]

    def close(self) -> None:
        """Close the file and the env (an unfinished episode is dropped)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        self._episode = None
        super().close()
