import math

import gymnasium as gym
import pytest
from testing_env import GenericTextEnv, counting_spec

from agent_gym.wrappers import ParseAction, ShapeReward


def script(*steps):
    """A GenericTextEnv whose k-th step returns steps[k] = (raw reward, won, is_action_valid)."""

    def step(env, action):
        reward, won, valid = steps[env.num_steps - 1]
        return "obs", reward, won, False, {"won": won, "is_action_valid": valid}

    return GenericTextEnv(step_func=step)


# GiGPO paper setting (success 10, invalid -0.1, raw reward dropped), worked by hand.
@pytest.mark.parametrize(
    ("steps", "kwargs", "expected"),
    [
        (
            [(0.0, False, True), (1.0, True, True)],
            dict(reward_scale=0.0, success_bonus=10.0),
            [0.0, 10.0],
        ),
        ([(0.0, False, False), (0.0, False, True)], dict(invalid_penalty=0.1), [-0.1, 0.0]),
        (
            [(0.5, False, True), (1.0, True, False)],
            dict(success_bonus=2.0, invalid_penalty=0.5),
            [0.5, 2.5],
        ),
        ([(0.25, False, True)], dict(reward_scale=4.0), [1.0]),
        ([(0.0, True, True), (0.0, True, True)], dict(success_bonus=10.0), [10.0, 0.0]),  # once
    ],
)
def test_shaped_rewards(steps, kwargs, expected) -> None:
    env = ShapeReward(script(*steps), **kwargs)
    env.reset(seed=0)
    rewards, raws = [], []
    for _ in steps:
        _, reward, _, _, info = env.step("a")
        rewards.append(reward)
        raws.append(info["raw_reward"])
    assert rewards == pytest.approx(expected)
    assert raws == [s[0] for s in steps]


def test_bonus_is_paid_again_after_reset() -> None:
    env = ShapeReward(script((0.0, True, True)), success_bonus=3.0)
    for _ in range(2):
        env.reset(seed=0)
        assert env.step("a")[1] == 3.0


def test_parse_failures_are_penalised_through_parse_action() -> None:
    base = ParseAction(gym.make(counting_spec()))
    env = ShapeReward(base, reward_scale=0.0, success_bonus=10.0, invalid_penalty=0.1)
    env.reset(options={"task_id": "count-to-1"})
    assert env.step("no tags")[1] == pytest.approx(-0.1)
    assert env.step("<action>add 1</action>")[1] == 0.0
    _, reward, terminated, _, info = env.step("<action>submit</action>")
    assert (reward, terminated, info["raw_reward"]) == (10.0, True, 1.0)


@pytest.mark.parametrize(
    ("kwargs", "why"),
    [
        (dict(invalid_penalty=-0.1), "pass invalid_penalty=0.1"),
        (dict(success_bonus=math.nan), "success_bonus must be a finite number"),
        (dict(reward_scale=math.inf), "reward_scale must be a finite number"),
    ],
)
def test_bad_arguments_raise(kwargs, why) -> None:
    with pytest.raises(ValueError, match=why):
        ShapeReward(GenericTextEnv(), **kwargs)
