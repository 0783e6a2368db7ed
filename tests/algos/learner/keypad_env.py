"""A tiny multi-step task whose reward depends on the actions, for the learning tests.

"Keypad": the agent has 4 turns (the registered step limit) to make ``presses`` = 3 valid key
presses. An action
whose first character is printable ASCII (space to ``~``) is a valid press; anything else
(empty, control or non-ASCII text) is an invalid action that changes nothing. Reward 1 and
``won`` when the last needed press is made (``terminated``); the step limit truncates.

A randomly initialised byte-level model starts its response with printable ASCII about a third
of the time, so 3 presses in 4 turns succeed about 11% of the time before training
(4 * p^3 * (1 - p) + p^4 with p = 1/3); a policy that learned to type ASCII succeeds nearly
always. The anchor is the progress only (no step
counter), so GiGPO's step groups have several members.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym

from agent_gym.core import TextEnv

ENV_ID = "AlgosTest/Keypad-v0"


class KeypadEnv(TextEnv):
    """See the module docstring."""

    def __init__(self, presses: int = 3, distinct_tasks: bool = False, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.presses = presses
        self.distinct_tasks = distinct_tasks  # task ids differ by seed (SFT's held-out demos)
        self._count = 0
        self._task = f"keypad-{presses}"

    def _obs(self) -> str:
        return f"Keys pressed: {self._count} of {self.presses}. Press a key."

    def _info(self) -> dict[str, Any]:
        return {
            "task": f"press {self.presses} keys",
            "task_id": self._task,
            "task_type": "keypad",
            "anchor_obs": self._obs(),
            "admissible_actions": [],
            "won": self._count >= self.presses,
            "score": float(self._count >= self.presses),
            "data_source": "generated:test-keypad",
        }

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self._count = 0
        if self.distinct_tasks:
            self._task = f"keypad-{self.presses}-{seed}"
        self._last_obs = self._obs()
        return self._last_obs, self._info()

    def step(self, action: str):
        action = self._check_action(action)
        valid = bool(action) and " " <= action[0] <= "~"
        self._count += valid
        won = self._count >= self.presses
        self._last_obs = self._obs()
        info = {**self._info(), "is_action_valid": valid}
        return self._last_obs, float(won), won, False, info

    def expert_action(self) -> str:
        return "k"


def register() -> str:
    """Register the id (idempotent) and return it."""
    if ENV_ID not in gym.registry:
        gym.register(ENV_ID, entry_point=KeypadEnv, max_episode_steps=4, disable_env_checker=True)
    return ENV_ID


register()  # on import, so ``gym.make("keypad_env:AlgosTest/Keypad-v0")`` works
