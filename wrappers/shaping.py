"""``ShapeReward``: the recipe-level success bonus and invalid-action penalty.

Envs return the benchmark's raw rewards (docs/env_contract.md); recipes reshape them here. The
GiGPO paper's ALFWorld/WebShop setting, 10 on success and -0.1 per invalid action, is
``ShapeReward(env, reward_scale=0.0, success_bonus=10.0, invalid_penalty=0.1)``.
"""

from __future__ import annotations

import math
from typing import Any

import gymnasium as gym


class ShapeReward(gym.Wrapper, gym.utils.RecordConstructorArgs):
    """``reward = reward_scale * raw + success_bonus * [just won] - invalid_penalty * [invalid]``.

    * "just won": ``info["won"]`` is True on this step and was False before it, so the bonus
      is paid once per episode even if an env keeps reporting ``won``.
    * "invalid": ``info["is_action_valid"]`` is False (an unparseable response from
      :class:`~agent_gym.wrappers.ParseAction`, or a command the env rejected).

    The env's own reward is kept in ``info["raw_reward"]``.

    Args:
        env: An env whose infos carry ``won`` and ``is_action_valid`` (every agent-gym env).
        reward_scale: Factor on the raw reward (0 drops it, e.g. to reward success only).
        success_bonus: Added on the step the task is won.
        invalid_penalty: Subtracted for an invalid action; a magnitude, so pass ``0.1``
            for the paper's -0.1.

    Example:
        >>> import gymnasium as gym, agent_gym
        >>> from agent_gym.wrappers import ShapeReward
        >>> env = ShapeReward(gym.make("AgentR1/ALFWorld-v0"), reward_scale=0.0,
        ...                   success_bonus=10.0, invalid_penalty=0.1)  # doctest: +SKIP
    """

    def __init__(
        self,
        env: gym.Env,
        reward_scale: float = 1.0,
        success_bonus: float = 0.0,
        invalid_penalty: float = 0.0,
    ) -> None:
        gym.utils.RecordConstructorArgs.__init__(
            self,
            reward_scale=reward_scale,
            success_bonus=success_bonus,
            invalid_penalty=invalid_penalty,
        )
        gym.Wrapper.__init__(self, env)
        for name, value in (
            ("reward_scale", reward_scale),
            ("success_bonus", success_bonus),
            ("invalid_penalty", invalid_penalty),
        ):
            if not math.isfinite(value):
                raise ValueError(f"{name} must be a finite number, got {value!r}")
        if invalid_penalty < 0:
            raise ValueError(
                f"invalid_penalty is subtracted, so it must be >= 0 (got {invalid_penalty}); "
                f"for a reward of -0.1 per invalid action pass invalid_penalty=0.1"
            )
        self.reward_scale = float(reward_scale)
        self.success_bonus = float(success_bonus)
        self.invalid_penalty = float(invalid_penalty)
        self._won = False

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        """Reset the env and the once-per-episode success bonus."""
        obs, info = self.env.reset(seed=seed, options=options)
        self._won = bool(info.get("won", False))
        return obs, info

    def step(self, action: Any):
        """Step the env and reshape its reward."""
        obs, raw, terminated, truncated, info = self.env.step(action)
        reward = self.reward_scale * float(raw)
        won = bool(info.get("won", False))
        if won and not self._won:
            reward += self.success_bonus
        self._won = self._won or won
        if not info.get("is_action_valid", True):
            reward -= self.invalid_penalty
        return obs, reward, terminated, truncated, {**info, "raw_reward": raw}
