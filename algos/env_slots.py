"""Stepping only the still-running envs of a vector env built by ``agent_gym.make_vec``.

A rollout steps every env until its episode ends, and envs end at different times (the env
ends the task, or the rollout ends it at its step cap or context budget). ``make_vec``'s vector
envs take ``None`` as "do not step this sub-env", in every backend (sync, async, Ray), so
:class:`EnvSlots` sends each running env its action and every other env ``None``: an env the
rollout has ended is never stepped again, and no env is reset behind the rollout's back.
"""

from __future__ import annotations

from typing import Any

StepResult = tuple[Any, float, bool, bool, dict[str, Any]]


def unbatch_info(infos: dict[str, Any], i: int) -> dict[str, Any]:
    """Env ``i``'s info from a vector env's batched info dict (keys with ``_key`` masks)."""
    out: dict[str, Any] = {}
    for key, value in infos.items():
        if key.startswith("_"):
            continue
        mask = infos.get(f"_{key}")
        if mask is not None and not mask[i]:
            continue
        out[key] = unbatch_info(value, i) if isinstance(value, dict) else value[i]
    return out


class EnvSlots:
    """The sub-envs of a ``make_vec`` vector env, addressed by index and stepped selectively.

    Args:
        venv: A vector env from :func:`agent_gym.vector.make_vec`.
    """

    def __init__(self, venv: Any) -> None:
        if not callable(getattr(venv, "call_at", None)):
            raise TypeError(
                f"the rollout steps vector envs from agent_gym.make_vec, got {type(venv).__name__}"
            )
        self.venv = venv
        self.num_envs = int(venv.num_envs)

    def reset(self, seeds: list[int | None]) -> tuple[list[Any], list[dict[str, Any]]]:
        """Reset every env with its seed; return per-env observations and infos."""
        if len(seeds) != self.num_envs:
            raise ValueError(f"got {len(seeds)} seeds for {self.num_envs} envs")
        obs, infos = self.venv.reset(seed=list(seeds))
        return list(obs), [unbatch_info(infos, i) for i in range(self.num_envs)]

    def step(self, actions: dict[int, str]) -> dict[int, StepResult]:
        """Step the envs named in ``actions`` (index -> action); return index -> result."""
        batch = [actions.get(i) for i in range(self.num_envs)]  # None: not stepped
        obs, rew, term, trunc, infos = self.venv.step(batch)
        return {
            i: (obs[i], float(rew[i]), bool(term[i]), bool(trunc[i]), unbatch_info(infos, i))
            for i in actions
        }

    def history_size(self, i: int) -> int:
        """How many history entries env ``i``'s ``ChatPrompt`` holds."""
        return len(self.venv.call_at(i, "history"))

    def messages(self, i: int, history_length: int) -> list[dict[str, str]]:
        """Env ``i``'s current prompt re-rendered with only the newest ``history_length`` entries."""
        return self.venv.call_at(i, "messages", history_length=history_length)

    def close(self) -> None:
        """Close the envs."""
        self.venv.close()
