"""The Gymnasium internals agent_gym.vector relies on are still there (agent_gym.gym_compat)."""

import re
from pathlib import Path

import gymnasium as gym
import pytest
from gymnasium.vector import AsyncVectorEnv, SyncVectorEnv
from testing_env import CountingEnv

from agent_gym import gym_compat
from agent_gym.gym_compat import AutoresetMode  # on Gymnasium 1.0: a clear ImportError


def test_the_installed_gymnasium_has_every_internal_we_use() -> None:
    gym_compat.check_internals()  # raises GymnasiumInternalsError naming what changed


def test_a_changed_internal_fails_with_a_message_naming_it_and_the_version(monkeypatch) -> None:
    monkeypatch.setitem(gym_compat._STATES, "WAITING_TELEPORT", "teleport")
    with pytest.raises(gym_compat.GymnasiumInternalsError) as info:
        gym_compat.check_internals()
    message = str(info.value)
    assert f"gymnasium {gym.__version__} differs: AsyncState is" in message
    assert "WAITING_TELEPORT" in message and "1.1.0" in message


def test_the_instance_attributes_behave_as_the_overrides_assume() -> None:
    venv = SyncVectorEnv([CountingEnv] * 2, autoreset_mode=AutoresetMode.DISABLED)
    try:
        venv.reset(seed=0, options={"task_id": "count-to-1"})
        venv.step(["submit", "add 1"])
        assert list(venv._autoreset_envs) == [True, False]
        with pytest.raises(AssertionError):  # DISABLED refuses to step a finished env ...
            venv.step(["add 1", "add 1"])
        venv.reset(seed=0)
        venv.step(["submit", "add 1"])
        gym_compat.allow_stepping_finished(venv)  # ... unless the flags are cleared
        venv.step(["add 1", "add 1"])
    finally:
        venv.close()


def test_the_worker_protocol_is_the_one_the_overrides_speak() -> None:
    venv = AsyncVectorEnv(
        [CountingEnv] * 2,
        shared_memory=False,
        autoreset_mode=AutoresetMode.DISABLED,
        worker=gym_compat.reporting_worker,
    )
    try:
        assert gym_compat.pending_call(venv) is None
        venv.reset_async(seed=0)
        assert gym_compat.pending_call(venv) == "reset"
        venv.reset_wait()
        gym_compat.send_call(venv.parent_pipes[1], "num_steps", (), {})
        assert gym_compat.recv_reply(venv.parent_pipes[1]) == (0, True)
        gym_compat.send_setattr(venv.parent_pipes[0], "num_steps", 5)
        assert gym_compat.recv_reply(venv.parent_pipes[0]) == (None, True)
        assert venv.get_attr("num_steps") == (5, 0)
        gym_compat.send_call(venv.parent_pipes[0], "no_such_attribute", (), {})
        assert gym_compat.recv_reply(venv.parent_pipes[0]) == (None, False)
        index, kind, value, trace = gym_compat.take_worker_error(venv, timeout=10)
        assert (index, kind) == (0, AttributeError) and "no_such_attribute" in trace
        assert gym_compat.take_worker_error(venv, timeout=0.1) is None
    finally:
        venv.close(terminate=True)


def test_pyproject_declares_the_checked_range() -> None:
    text = (Path(__file__).parents[1] / "pyproject.toml").read_text()
    (spec,) = re.findall(r'^\s*"(gymnasium[^"]*)"', text, flags=re.M)  # no tomllib on 3.10
    floor = re.search(r">=\s*([\d.]+)", spec).group(1)
    assert gym_compat.CHECKED_VERSIONS[0].startswith(floor), (spec, gym_compat.CHECKED_VERSIONS)
    assert "<2" in spec.replace(" ", "")
    installed = tuple(int(p) for p in gym.__version__.split(".")[:2])
    assert (1, 1) <= installed < (2, 0)
