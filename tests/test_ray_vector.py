"""The Ray backend against a local Ray instance (2 CPUs, no dashboard)."""

import time

import gymnasium as gym
import numpy as np
import pytest
import testing_env
import vector_scenario
from testing_env import counting_spec
from vector_scenario import check_against_expected, make_scenario_vec, play, probe_spec

from agent_gym.vector import EnvWorkerError, group_seeds, make_vec
from agent_gym.wrappers import ChatPrompt, ParseAction

ray = pytest.importorskip("ray")
pytestmark = [pytest.mark.ray, pytest.mark.timeout(300)]


@pytest.fixture(scope="module", autouse=True)
def local_ray():
    started = not ray.is_initialized()
    if started:
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    # The actors' workers cannot import the helper modules in tests/, so ship them by value.
    for module in (testing_env, vector_scenario):
        ray.cloudpickle.register_pickle_by_value(module)
    yield
    for module in (testing_env, vector_scenario):
        ray.cloudpickle.unregister_pickle_by_value(module)
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


def test_the_scenario_matches_sync_mode_exactly() -> None:
    venv = make_scenario_vec("ray")
    try:
        transcript = play(venv)
    finally:
        venv.close()
    check_against_expected(transcript)
    sync = make_scenario_vec("sync")
    try:
        assert transcript == play(sync)  # observations, rewards, flags and every info field
    finally:
        sync.close()


def test_call_at_asks_only_that_actor_and_checks_its_arguments() -> None:
    venv = make_vec(probe_spec(), 3, mode="ray", wrappers=[ParseAction, ChatPrompt])
    try:
        venv.reset(seed=0)
        assert venv.call_at(1, "poke", amount=5) == 5
        assert venv.get_attr("pokes") == (0, 5, 0)
        obs, *_ = venv.step(["<action>add 1</action>", None, None])
        assert venv.call_at(0, "messages") == obs[0]
        assert venv.call_at(0, "messages", history_length=0) != obs[0]
        with pytest.raises(IndexError, match=r"index must be in \[0, 3\)"):
            venv.call_at(3, "pokes")
        with pytest.raises(ValueError, match="call_at cannot call 'reset'"):
            venv.call_at(0, "reset")
        assert venv.call("num_steps") == (1, 0, 0)
    finally:
        venv.close()


def test_a_wrong_number_of_actions_is_refused_and_the_env_stays_usable() -> None:
    venv = make_vec(counting_spec(), 4, mode="ray")
    try:
        venv.reset(seed=0)
        with pytest.raises(ValueError, match="expected 4 actions .*, got 3; nothing was sent"):
            venv.step(["add 1"] * 3)
        obs, *_ = venv.step(["add 2"] * 4)
        assert obs == ("The counter is 2.",) * 4
    finally:
        venv.close()


def test_an_env_that_cannot_be_built_is_named_with_the_cause() -> None:
    with pytest.raises(
        EnvWorkerError, match=r"sub-env 0 could not be built: TypeError: .*no_such_kwarg"
    ) as info:
        make_vec(counting_spec(), 2, mode="ray", no_such_kwarg=1)
    assert info.value.indices == (0, 1)  # every actor got the bad kwarg
    assert "(sub-envs 1 failed too)" in str(info.value)


def test_a_dead_actor_is_named() -> None:
    venv = make_vec(probe_spec(), 3, mode="ray")
    venv.reset(seed=0)
    with pytest.raises(EnvWorkerError, match="the Ray actor of sub-env 1 died") as info:
        venv.step(["add 1", "die", None])
    assert info.value.index == 1 and info.value.indices == (1,)
    assert venv.closed


def test_step_timeout_names_the_hung_actors() -> None:
    venv = make_vec(probe_spec(), 3, mode="ray", step_timeout=2)
    actors = list(venv._actors)
    venv.reset(seed=0)
    with pytest.raises(
        EnvWorkerError, match=r"sub-env 2 did not answer `step` within 2 s \(step_timeout\)"
    ) as info:
        venv.step(["add 1", None, "hang"])
    assert info.value.indices == (2,) and venv.closed
    deadline = time.monotonic() + 60  # the hung actor is killed, not left sleeping
    while True:
        try:
            ray.get(actors[2].node_id.remote(), timeout=30)
        except ray.exceptions.RayActorError:
            break
        assert time.monotonic() < deadline, "the hung actor still answers 60 s after close()"
        time.sleep(0.5)


def test_actor_options_per_env_and_ignored_ray_init_warn() -> None:
    with pytest.raises(ValueError, match="actor_options must be a dict or a list of 2 dicts"):
        make_vec(counting_spec(), 2, mode="ray", vector_kwargs={"actor_options": [{}]})
    with pytest.warns(UserWarning, match="Ray is already initialised .* is ignored"):
        venv = make_vec(
            counting_spec(),
            2,
            mode="ray",
            vector_kwargs={
                "ray_init": {"address": "127.0.0.1:1"},
                "actor_options": [{"num_cpus": 0}, {"num_cpus": 0.5}],
            },
        )
    try:
        node = ray.get_runtime_context().get_node_id()
        assert venv.node_ids() == (node, node)  # the local instance, not the given address
    finally:
        venv.close()


def test_actors_slow_to_build_get_a_warning_and_are_still_waited_for(monkeypatch) -> None:
    import agent_gym.ray_vector

    monkeypatch.setattr(agent_gym.ray_vector, "_BUILD_WARN_S", 0.5)
    with pytest.warns(UserWarning, match=r"sub-envs \[0, 1\] are not built after 0.5 s"):
        venv = make_vec(probe_spec(build_delay=3), 2, mode="ray")
    try:
        assert venv.reset(seed=0)[0] == ("The counter is 0.",) * 2
    finally:
        venv.close()
