import functools
import os
import sys
import time

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.envs.registration import EnvSpec
from gymnasium.vector import AsyncVectorEnv, AutoresetMode, SyncVectorEnv
from testing_env import GenericTextEnv, counting_spec
from vector_scenario import check_against_expected, make_scenario_vec, play, probe_spec

from agent_gym.vector import EnvWorkerError, group_seeds, make_vec
from agent_gym.wrappers import ChatPrompt, ParseAction

MODES = ["sync", "async"]


def test_group_seeds_repeat_each_task_seed_group_size_times() -> None:
    seeds = group_seeds(0, num_tasks=3, group_size=2)
    assert len(seeds) == 6
    assert seeds[0] == seeds[1] and seeds[2] == seeds[3] and seeds[4] == seeds[5]
    assert len({seeds[0], seeds[2], seeds[4]}) == 3
    assert all(isinstance(s, int) and 0 <= s < 2**31 for s in seeds)


def test_group_seeds_are_deterministic_distinct_and_vary_with_the_seed() -> None:
    assert group_seeds(5, 4, 3) == group_seeds(5, 4, 3)
    many = group_seeds(1, 5000, 1)
    assert len(set(many)) == 5000
    # A new base seed gives new tasks, not the old list shifted by one.
    assert not set(group_seeds(1, 50, 1)) & set(group_seeds(2, 50, 1))
    assert group_seeds(7, 1, 4) == [group_seeds(7, 1, 1)[0]] * 4


@pytest.mark.parametrize(
    ("args", "error"),
    [
        ((0, 0, 2), ValueError),
        ((0, 2, 0), ValueError),
        ((None, 2, 2), TypeError),
        ((0, 2.0, 2), TypeError),
        ((True, 2, 2), TypeError),
    ],
)
def test_group_seeds_validate(args, error) -> None:
    with pytest.raises(error):
        group_seeds(*args)


@pytest.fixture(params=MODES)
def mode(request) -> str:
    return request.param


def test_make_vec_builds_gymnasium_vector_envs_with_autoreset_disabled(mode: str) -> None:
    venv = make_vec(counting_spec(), 3, mode=mode)
    try:
        assert isinstance(venv, SyncVectorEnv if mode == "sync" else AsyncVectorEnv)
        assert venv.metadata["autoreset_mode"] == AutoresetMode.DISABLED
        assert venv.num_envs == 3
        if mode == "async":
            assert venv.shared_memory is False
        obs, infos = venv.reset(seed=0)
        assert isinstance(obs, tuple) and all(isinstance(o, str) for o in obs)
        assert list(infos["anchor_obs"]) == ["counter=0"] * 3
    finally:
        venv.close()


def test_group_members_start_identical_and_stay_identical(mode: str) -> None:
    venv = make_vec(counting_spec(), 4, mode=mode, wrappers=[ParseAction, ChatPrompt])
    try:
        obs, infos = venv.reset(seed=group_seeds(3, num_tasks=2, group_size=2))
        assert obs[0] == obs[1] and obs[2] == obs[3]
        assert infos["task_id"][0] == infos["task_id"][1] != infos["task_id"][2]
        assert obs[0][0]["role"] == "system"  # ChatPrompt ran inside each worker
        actions = ["<action>add 1</action>"] * 4
        obs, rewards, terminated, truncated, infos = venv.step(actions)
        assert obs[0] == obs[1] and obs[2] == obs[3]
        assert list(infos["anchor_obs"]) == ["counter=1"] * 4
    finally:
        venv.close()


def test_finished_envs_hold_until_a_masked_reset(mode: str) -> None:
    venv = make_vec(counting_spec(), 3, mode=mode)
    try:
        venv.reset(seed=[1, 1, 2])
        obs, rewards, terminated, _, infos = venv.step(["submit", "add 1", "add 2"])
        assert list(terminated) == [True, False, False]
        final_obs, final_info = obs[0], {k: v[0] for k, v in infos.items()}
        # No autoreset: env 0 ignores its action and repeats its final step with reward 0.
        obs, rewards, terminated, _, infos = venv.step(["add 1", "add 1", "add 1"])
        assert obs == (final_obs, "The counter is 2.", "The counter is 3.")
        assert list(rewards) == [0.0, 0.0, 0.0] and list(terminated) == [True, False, False]
        assert {k: v[0] for k, v in infos.items()} == final_info
        mask = np.array([True, False, False])
        obs, infos = venv.reset(seed=[9, 9, 9], options={"reset_mask": mask})
        assert obs == ("The counter is 0.", "The counter is 2.", "The counter is 3.")
        assert list(infos["_task_id"]) == [True, False, False]
        obs, _, terminated, _, _ = venv.step(["add 2", "add 1", "add 1"])  # env 0 plays again
        assert obs[0] == "The counter is 2." and not terminated.any()
    finally:
        venv.close()


def test_env_kwargs_and_wrapper_partials_reach_every_sub_env(mode: str) -> None:
    venv = make_vec(
        counting_spec(),
        2,
        mode=mode,
        targets=(4,),
        wrappers=[functools.partial(ParseAction, format="plain")],
    )
    try:
        _, infos = venv.reset(seed=[0, 1])
        assert list(infos["task_id"]) == ["count-to-4"] * 2
        _, _, _, _, infos = venv.step(["add 2\nadd 2", "add 1"])
        assert list(infos["parsed_action"]) == ["add 2\nadd 2", "add 1"]  # join: 3 calls max
    finally:
        venv.close()


@pytest.mark.timeout(60)
def test_a_raising_sub_env_names_its_index_and_closes_the_vector_env(mode: str) -> None:
    spec = counting_spec()
    venv = make_vec(spec, 3, mode=mode, fail_at_step=2)
    venv.reset(seed=0)
    venv.step(["add 1"] * 3)
    start = time.monotonic()
    with pytest.raises(
        EnvWorkerError, match="sub-env 0 raised RuntimeError: CountingEnv: injected failure"
    ) as info:
        venv.step(["add 1"] * 3)
    assert info.value.index == 0
    assert time.monotonic() - start < 30
    assert venv.closed
    with pytest.raises(gym.error.ClosedEnvironmentError):
        venv.step(["add 1"] * 3)
    venv.close()  # idempotent


@pytest.mark.timeout(60)
def test_only_the_failing_index_is_named(mode: str) -> None:
    def step(env, action):
        if action == "boom":
            raise ValueError("bad action for this env")
        return "ok", 0.0, False, False, {}

    spec = EnvSpec(
        "AgentGymTest/Generic-v0", entry_point=GenericTextEnv, kwargs={"step_func": step}
    )
    venv = make_vec(spec, 3, mode=mode)
    venv.reset(seed=0)
    with pytest.raises(EnvWorkerError, match="sub-env 2 raised ValueError: bad action") as info:
        venv.step(["fine", "fine", "boom"])
    assert info.value.index == 2
    venv.close()


@pytest.mark.timeout(60)
def test_a_worker_process_that_dies_is_reported_not_waited_for() -> None:
    def step(env, action):
        if action == "die":
            os._exit(3)
        return "ok", 0.0, False, False, {}

    spec = EnvSpec(
        "AgentGymTest/Generic-v0", entry_point=GenericTextEnv, kwargs={"step_func": step}
    )
    venv = make_vec(spec, 3, mode="async")
    venv.reset(seed=0)
    with pytest.raises(EnvWorkerError, match=r"sub-env 1 died \(exit code 3\)") as info:
        venv.step(["x", "die", "x"])
    assert info.value.index == 1
    assert venv.closed
    assert not any(p.is_alive() for p in venv.processes)


def test_close_stops_live_workers_and_is_idempotent() -> None:
    venv = make_vec(counting_spec(), 3, mode="async")
    venv.reset(seed=0)
    processes = list(venv.processes)
    assert all(p.is_alive() for p in processes)
    venv.close()
    assert not any(p.is_alive() for p in processes)
    venv.close()


def test_close_while_a_step_is_in_flight() -> None:
    venv = make_vec(counting_spec(), 2, mode="async")
    venv.reset(seed=0)
    venv.step_async(["add 1", "add 1"])
    with pytest.warns(UserWarning, match="pending call to `step`"):
        venv.close()  # waits for the pending step, then stops the workers
    assert not any(p.is_alive() for p in venv.processes)


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [(dict(num_envs=0), "num_envs"), (dict(num_envs=2, mode="threads"), "unknown mode 'threads'")],
)
def test_make_vec_validates_arguments(kwargs, error) -> None:
    with pytest.raises(ValueError, match=error):
        make_vec(counting_spec(), **kwargs)


def test_registered_ids_work_too() -> None:
    gym.register(
        "AgentGymTest/CountingRegistered-v0",
        entry_point=counting_spec().entry_point,
        max_episode_steps=4,
    )
    try:
        venv = make_vec("AgentGymTest/CountingRegistered-v0", 2, wrappers=[ParseAction])
        venv.reset(seed=0)
        flags = [venv.step(["junk", "junk"])[3] for _ in range(4)]
        assert [list(f) for f in flags] == [[False, False]] * 3 + [[True, True]]
        venv.close()
    finally:
        del gym.registry["AgentGymTest/CountingRegistered-v0"]


def test_ray_mode_without_ray_says_which_extra_to_install(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # makes "import ray" fail
    with pytest.raises(ImportError, match=r"pip install 'agent-gym\[ray\]'"):
        make_vec(counting_spec(), 2, mode="ray")


# --- the stepping API every backend shares --------------------------------------------------


def test_the_scenario_matches_the_hand_worked_transcript_in_both_local_modes() -> None:
    transcripts = {}
    for mode in MODES:
        venv = make_scenario_vec(mode)
        try:
            transcripts[mode] = play(venv)
        finally:
            venv.close()
        check_against_expected(transcripts[mode])
    assert transcripts["async"] == transcripts["sync"]  # every info field too


@pytest.mark.timeout(120)
def test_spawned_workers_follow_the_same_rules_and_report_build_failures() -> None:
    # "spawn" pickles the worker function and env factories instead of forking.
    venv = make_scenario_vec("async", vector_kwargs={"context": "spawn"})
    try:
        check_against_expected(play(venv))
    finally:
        venv.close()
    with pytest.raises(EnvWorkerError, match="sub-env 1 could not be built: FileNotFoundError"):
        make_vec(probe_spec(fail_in_worker=1), 2, mode="async", vector_kwargs={"context": "spawn"})


def test_none_leaves_the_sub_env_and_its_wrappers_untouched(mode: str) -> None:
    venv = make_vec(counting_spec(), 2, mode=mode, wrappers=[ParseAction, ChatPrompt])
    try:
        obs0, _ = venv.reset(seed=[0, 0])
        obs, rewards, terminated, truncated, infos = venv.step(["<action>add 1</action>", None])
        assert obs[1] == obs0[1] and obs[0] != obs0[0]  # ChatPrompt did not record a turn
        assert rewards[1] == 0.0 and not terminated[1] and not truncated[1]
        assert venv.call_at(1, "num_steps") == 0 and venv.call_at(0, "num_steps") == 1
        assert venv.call_at(1, "_elapsed_steps") == 0  # TimeLimit did not count it either
    finally:
        venv.close()


def test_call_at_renders_one_chat_prompt_with_a_shorter_history(mode: str) -> None:
    venv = make_vec(counting_spec(), 3, mode=mode, wrappers=[ParseAction, ChatPrompt])
    try:
        venv.reset(seed=[0, 0, 0])
        for _ in range(2):
            obs, *_ = venv.step(["<action>add 1</action>"] * 3)
        assert venv.call_at(2, "messages") == obs[2]  # the default is the observation itself
        short = venv.call_at(2, "messages", history_length=0)
        assert short[0] == obs[2][0] and len(short[1]["content"]) < len(obs[2][1]["content"])
        assert venv.call_at(2, "history_length") == venv.get_attr("history_length")[2]
    finally:
        venv.close()


def test_call_at_asks_only_that_sub_env(mode: str) -> None:
    venv = make_vec(probe_spec(), 3, mode=mode)
    try:
        venv.reset(seed=0)
        assert venv.call_at(1, "poke", amount=5) == 5
        assert venv.get_attr("pokes") == (0, 5, 0)
        obs, *_ = venv.step(["add 1", None, "add 2"])  # the workers are still in step
        assert obs == ("The counter is 1.", "The counter is 0.", "The counter is 2.")
    finally:
        venv.close()


def test_call_at_checks_its_arguments_before_sending_anything(mode: str) -> None:
    venv = make_vec(counting_spec(), 2, mode=mode)
    try:
        venv.reset(seed=0)
        with pytest.raises(IndexError, match=r"index must be in \[0, 2\), got 2"):
            venv.call_at(2, "num_steps")
        with pytest.raises(TypeError, match="index must be an int"):
            venv.call_at("0", "num_steps")
        with pytest.raises(ValueError, match="call_at cannot call 'step'"):
            venv.call_at(0, "step", "add 1")
        assert venv.call_at(np.int64(1), "num_steps") == 0
        assert venv.step(["add 1", "add 2"])[0] == ("The counter is 1.", "The counter is 2.")
    finally:
        venv.close()


@pytest.mark.timeout(60)
def test_call_at_of_a_missing_attribute_names_the_sub_env(mode: str) -> None:
    venv = make_vec(counting_spec(), 2, mode=mode)
    venv.reset(seed=0)
    with pytest.raises(EnvWorkerError, match="sub-env 1 raised AttributeError") as info:
        venv.call_at(1, "no_such_attribute")
    assert info.value.index == 1 and venv.closed
    venv.close()


def test_a_wrong_number_of_actions_is_refused_before_anything_is_sent(mode: str) -> None:
    venv = make_vec(counting_spec(), 4, mode=mode)
    try:
        venv.reset(seed=0)
        with pytest.raises(ValueError, match="expected 4 actions .*, got 3; nothing was sent"):
            venv.step(["add 1"] * 3)
        with pytest.raises(TypeError, match="actions must be a sequence of 4 actions"):
            venv.step("add1")  # a str of length 4 is not four actions
        obs, *_ = venv.step(["add 2"] * 4)
        assert obs == ("The counter is 2.",) * 4  # nobody had stepped "add 1"
        assert venv.call_at(0, "num_steps") == 1
    finally:
        venv.close()


def test_reset_leaves_the_callers_options_dict_alone(mode: str) -> None:
    venv = make_vec(counting_spec(), 2, mode=mode)
    try:
        venv.reset(seed=0)
        options = {"reset_mask": np.array([True, False])}
        venv.reset(seed=[1, 1], options=options)
        assert list(options) == ["reset_mask"]  # Gymnasium itself pops it
    finally:
        venv.close()


@pytest.mark.timeout(60)
def test_stepping_with_none_before_reset_names_the_sub_env(mode: str) -> None:
    venv = make_vec(counting_spec(), 2, mode=mode)
    with pytest.raises(EnvWorkerError, match="sub-env 0 raised ResetNeeded"):
        venv.step([None, None])
    venv.close()


# --- construction failures and timeouts -------------------------------------------------------


@pytest.mark.timeout(60)
def test_a_bad_env_kwarg_is_an_env_worker_error_naming_sub_env_0(mode: str) -> None:
    with pytest.raises(
        EnvWorkerError, match=r"sub-env 0 could not be built: TypeError: .*no_such_kwarg"
    ) as info:
        make_vec(counting_spec(), 2, mode=mode, no_such_kwarg=1)
    assert info.value.index == 0


@pytest.mark.timeout(60)
def test_a_worker_that_cannot_build_its_env_is_named_with_the_cause() -> None:
    # ProbeEnv raises only inside async worker 2 (the parent builds its own copy first).
    with pytest.raises(
        EnvWorkerError,
        match=r"sub-env 2 could not be built: FileNotFoundError: no data file in worker 2",
    ) as info:
        make_vec(probe_spec(fail_in_worker=2), 4, mode="async")
    assert info.value.index == 2 and info.value.indices == (2,)
    assert "Traceback in the worker" in str(info.value)


@pytest.mark.timeout(60)
def test_step_timeout_names_the_hung_sub_envs_and_stops_every_worker() -> None:
    venv = make_vec(probe_spec(), 4, mode="async", step_timeout=2)
    venv.reset(seed=0)
    venv.step(["add 1"] * 4)
    with pytest.raises(
        EnvWorkerError, match=r"sub-envs 1, 3 did not answer `step` within 2 s \(step_timeout\)"
    ) as info:
        venv.step(["add 1", "hang", None, "hang"])
    assert info.value.index == 1 and info.value.indices == (1, 3)
    assert venv.closed
    assert not any(p.is_alive() for p in venv.processes)
    with pytest.raises(gym.error.ClosedEnvironmentError):
        venv.step([None] * 4)


@pytest.mark.timeout(60)
def test_step_timeout_also_bounds_call_at() -> None:
    venv = make_vec(probe_spec(), 2, mode="async", step_timeout=1)
    venv.reset(seed=0)
    venv.set_attr("pokes", [3, 4])  # set_attr is timed too, and answers at once
    assert venv.call_at(0, "pokes") == 3
    with pytest.raises(EnvWorkerError, match="sub-env 1 did not answer `call_at` within 1 s"):
        venv.call_at(1, "nap", 3600)
    assert not any(p.is_alive() for p in venv.processes)


def test_an_action_that_cannot_be_sent_is_refused_before_any_is() -> None:
    venv = make_vec(counting_spec(), 3, mode="async")
    try:
        venv.reset(seed=0)
        with pytest.raises(TypeError, match="action for sub-env 2 cannot be sent"):
            venv.step(["add 1", "add 1", lambda: None])
        assert venv.step(["add 2"] * 3)[0] == ("The counter is 2.",) * 3
    finally:
        venv.close()


def test_step_timeout_is_refused_in_sync_mode_and_checked() -> None:
    with pytest.raises(ValueError, match="step_timeout=5.0 needs mode='async' or 'ray'"):
        make_vec(counting_spec(), 2, mode="sync", step_timeout=5)
    with pytest.raises(ValueError, match="step_timeout must be > 0"):
        make_vec(counting_spec(), 2, mode="async", step_timeout=0)
    with pytest.raises(TypeError, match="step_timeout must be a number"):
        make_vec(counting_spec(), 2, mode="async", step_timeout="5")


def test_make_vec_has_no_holds_finished_attribute() -> None:
    venv = make_vec(counting_spec(), 2)
    assert not hasattr(venv, "holds_finished")  # HoldFinished is per sub-env, in every mode
    venv.close()
