"""Stepping only the still-running envs of a vector env whose autoreset is disabled.

A rollout steps every env until its episode ends, and envs end at different times. Gymnasium's
vector envs step all sub-envs at once and, with ``AutoresetMode.DISABLED``, refuse to step one
that has ended. :class:`EnvSlots` hides the difference:

* a plain list of envs, or a ``SyncVectorEnv`` (its ``envs`` are in this process): only the
  running envs are stepped;
* a vector env from ``agent_gym.make_vec`` (``holds_finished``: its sub-envs ignore steps
  after their episode ends): finished envs get a placeholder action whose result is dropped;
* any other vector env: finished envs are first reset with ``options={"reset_mask": ...}``
  so the vector call stays valid, an extra reset per finished env.
"""

from __future__ import annotations

from typing import Any

import numpy as np

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
    """A fixed set of envs addressed by index, stepped selectively.

    Args:
        envs: A list of Gymnasium envs, or a Gymnasium vector env with autoreset disabled.
        placeholder_action: Action sent to finished envs of a vector env that cannot be
            stepped selectively (its result is discarded).
    """

    def __init__(self, envs: Any, *, placeholder_action: str = "") -> None:
        self.placeholder_action = placeholder_action
        if isinstance(envs, (list, tuple)):
            self._envs, self._vec = list(envs), None
        elif hasattr(envs, "envs") and isinstance(getattr(envs, "envs", None), (list, tuple)):
            self._envs, self._vec = list(envs.envs), None
        else:
            self._envs, self._vec = None, envs
        self.num_envs = len(self._envs) if self._envs is not None else int(envs.num_envs)
        self._holds_finished = bool(getattr(envs, "holds_finished", False))
        self._seeds: list[int | None] = [None] * self.num_envs
        self._done = np.zeros(self.num_envs, dtype=bool)

    def reset(self, seeds: list[int | None]) -> tuple[list[Any], list[dict[str, Any]]]:
        """Reset every env with its seed; return per-env observations and infos."""
        if len(seeds) != self.num_envs:
            raise ValueError(f"got {len(seeds)} seeds for {self.num_envs} envs")
        self._seeds = list(seeds)
        self._done[:] = False
        if self._envs is not None:
            pairs = [env.reset(seed=s) for env, s in zip(self._envs, seeds)]
            return [p[0] for p in pairs], [p[1] for p in pairs]
        obs, infos = self._vec.reset(seed=list(seeds))
        return list(obs), [unbatch_info(infos, i) for i in range(self.num_envs)]

    def step(self, actions: dict[int, str]) -> dict[int, StepResult]:
        """Step the envs named in ``actions`` (index -> action); return index -> result."""
        if self._envs is not None:
            out = {i: self._envs[i].step(a) for i, a in actions.items()}
        else:
            out = self._step_vector(actions)
        for i, (_, _, term, trunc, _) in out.items():
            if term or trunc:
                self._done[i] = True
        return out

    def _step_vector(self, actions: dict[int, str]) -> dict[int, StepResult]:
        idle = np.array([i not in actions for i in range(self.num_envs)])
        needs_reset = idle & self._done
        if needs_reset.any() and not self._holds_finished:
            seeds = [s if needs_reset[i] else None for i, s in enumerate(self._seeds)]
            self._vec.reset(seed=seeds, options={"reset_mask": needs_reset})
            self._done[needs_reset] = False
        batch = [actions.get(i, self.placeholder_action) for i in range(self.num_envs)]
        obs, rew, term, trunc, infos = self._vec.step(batch)
        # Placeholder steps may end an idle env's episode again; it is reset next time.
        self._done |= idle & (np.asarray(term) | np.asarray(trunc))
        return {
            i: (obs[i], float(rew[i]), bool(term[i]), bool(trunc[i]), unbatch_info(infos, i))
            for i in actions
        }

    def close(self) -> None:
        """Close the envs."""
        if self._envs is not None:
            for env in self._envs:
                env.close()
        else:
            self._vec.close()
