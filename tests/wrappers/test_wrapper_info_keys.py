"""Every info key a wrapper adds is declared with the contract (agent_gym.core.WRAPPER_INFO_KEYS)."""

from __future__ import annotations

import gymnasium as gym

import agent_gym  # noqa: F401
from agent_gym.core import WRAPPER_INFO_KEYS
from agent_gym.wrappers import ParseAction, ShapeReward


def test_wrapper_info_keys_are_declared_with_their_types():
    raw = gym.make("AgentR1/HotpotQA-v0")
    env = ShapeReward(ParseAction(gym.make("AgentR1/HotpotQA-v0"), format="tag"), success_bonus=1.0)
    raw.reset(seed=0)
    env.reset(seed=0)
    for action in (
        "<action>search[Nauru]</action>",
        "no tags at all",
        "<action>answer[x]</action>",
    ):
        inner = raw.step(action.removeprefix("<action>").removesuffix("</action>"))[-1]
        info = env.step(action)[-1]
        added = set(info) - set(inner)
        assert added <= set(WRAPPER_INFO_KEYS), added - set(WRAPPER_INFO_KEYS)
        assert {"raw_action", "parsed_action", "parse_error", "raw_reward"} <= set(info)
        for key, kind in WRAPPER_INFO_KEYS.items():
            assert isinstance(info[key], kind), (key, type(info[key]))
