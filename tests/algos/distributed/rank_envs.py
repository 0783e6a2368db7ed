"""Test envs for rank failures: the Keypad env, except on rank 1 (``RANK`` set by torchrun).

``AlgosTest/KeypadRank1Fails-v0`` raises on rank 1's first step; ``AlgosTest/KeypadRank1Hangs-v0``
never returns from it (a rank that is stuck, not dead). Reset works everywhere, so the run gets
past its checks and into the rollout.
"""

from __future__ import annotations

import os
import time

import gymnasium as gym
from keypad_env import KeypadEnv

FAILS = "AlgosTest/KeypadRank1Fails-v0"
HANGS = "AlgosTest/KeypadRank1Hangs-v0"


class KeypadRank1Fails(KeypadEnv):
    """Keypad; on rank 1 ``step`` raises."""

    def step(self, action: str):
        if os.environ.get("RANK") == "1":
            raise RuntimeError("test env: rank 1 fails by design")
        return super().step(action)


class KeypadRank1Hangs(KeypadEnv):
    """Keypad; on rank 1 ``step`` sleeps for an hour."""

    def step(self, action: str):
        if os.environ.get("RANK") == "1":
            time.sleep(3600)
        return super().step(action)


for env_id, cls in ((FAILS, KeypadRank1Fails), (HANGS, KeypadRank1Hangs)):
    if env_id not in gym.registry:
        gym.register(env_id, entry_point=cls, max_episode_steps=4, disable_env_checker=True)
