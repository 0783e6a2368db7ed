"""The Ray backend against a local Ray instance (2 CPUs, no dashboard)."""

import time

import gymnasium as gym
import numpy as np
import pytest
import testing_env
from testing_env import counting_spec

from agent_gym.vector import EnvWorkerError, group_seeds, make_vec
from agent_gym.wrappers import ChatPrompt, ParseAction

ray = pytest.importorskip("ray")
pytestmark = [pytest.mark.ray, pytest.mark.timeout(300)]


@pytest.fixture(scope="module", autouse=True)
def local_ray():
    started = not ray.is_initialized()
    if started:
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    # The actors' workers cannot import tests/testing_env.py, so ship it by value.
    ray.cloudpickle.register_pickle_by_value(testing_env)
    yield
    ray.cloudpickle.unregister_pickle_by_value(testing_env)
    if started:
        ray.shutdown()


def test_groups_masks_and_holding_match_the_other_backends() -> None:
    from agent_gym.ray_vector import RayVectorEnv

    venv = make_vec(counting_spec(), 4, mode="ray", wrappers=[ParseAction, ChatPrompt])
    try:
        assert isinstance(venv, RayVectorEnv)
        assert venv.metadata["autoreset_mode"] == gym.vector.AutoresetMode.DISABLED
        obs, infos = venv.reset(seed=group_seeds(3, num_tasks=2, group_size=2))
        assert obs[0] == obs[1] and obs[2] == obs[3] and obs[0] != obs[2]
        assert obs[0][1]["role"] == "user"
        assert infos["task_id"][0] == infos["task_id"][1]
        obs, rewards, terminated, truncated, infos = venv.step(
            ["<action>submit</action>", "junk", "<action>add 1</action>", "<action>add 1</action>"]
        )
        assert list(terminated) == [True, False, False, False]
        assert list(infos["is_action_valid"]) == [True, False, True, True]
        assert rewards.dtype == np.float64 and terminated.dtype == np.bool_
        held = venv.step(["<action>add 1</action>"] * 4)
        assert held[0][0] == obs[0] and held[1][0] == 0.0 and held[2][0]
        mask = np.array([True, False, False, False])
        obs, infos = venv.reset(seed=[5] * 4, options={"reset_mask": mask})
        assert list(infos["_task_id"]) == [True, False, False, False]
        assert venv.get_attr("max_episode_steps") == (6, 6, 6, 6)
        venv.set_attr("max_episode_steps", [1, 2, 3, 4])
        assert venv.call("max_episode_steps") == (1, 2, 3, 4)
    finally:
        venv.close()
    venv.close()  # idempotent
    with pytest.raises(gym.error.ClosedEnvironmentError):
        venv.step(["x"] * 4)


def test_a_raising_actor_names_its_index_and_the_actors_are_stopped() -> None:
    venv = make_vec(counting_spec(), 2, mode="ray", fail_at_step=1)
    actors = list(venv._actors)
    venv.reset(seed=0)
    with pytest.raises(
        EnvWorkerError, match="sub-env 0 raised RuntimeError: CountingEnv: injected"
    ) as info:
        venv.step(["add 1", "add 1"])
    assert info.value.index == 0
    assert venv.closed
    # ray.kill is asynchronous: a call sent just after it may still be served. The healthy
    # actor must be gone within a few seconds, and then every call fails.
    deadline = time.monotonic() + 60
    while True:
        try:
            ray.get(actors[1].spaces.remote(), timeout=30)
        except ray.exceptions.RayActorError:
            break
        assert time.monotonic() < deadline, "actor 1 still answers 60 s after close()"
        time.sleep(0.5)
