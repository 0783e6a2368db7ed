"""The env contract of docs/env_contract.md, checked on every registered id.

Every env added to ``agent_gym.ENV_IDS`` must pass this file unchanged.
"""

from __future__ import annotations

import random

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env

import agent_gym
from agent_gym.core import INFO_KEYS, STEP_ONLY_INFO_KEYS

gym.register_envs(agent_gym)

ADVERSARIAL = [
    "",
    " ",
    "x" * 100_000,
    "\x00\x01\x02\x1b[31m\x7f",
    "\n\n\t\r",
    "点击[购买] кликнуть[купить] انقر ✓ 🛒",
    "<action>look</action><action>",
    "<tool_call>{not json</tool_call>",
    "click[" * 50,
    "search[]]]][[[",
    "]" + "[" * 10,
    "<script>alert(1)</script>&amp;&lt;",
    "\ud800",  # lone surrogate: legal in a Python str, not encodable as UTF-8
]


#: Actions an env may echo back, valid or not: none may make an observation longer than the
#: observation space or put an unencodable character into the observation or info.
ECHOED = {
    "100k-chars": "x" * 100_000,
    "100k-of-lines": "x\n" * 50_000,  # 50,000 lines, each one skipped or invalid
    "100k-search": "search[" + "x" * 100_000 + "]",
    "100k-answer": "answer[" + "x " * 50_000 + "]",
    "100k-click": "click[" + "x" * 100_000 + "]",
    "100k-go-to": "go to " + "x" * 100_000,
    "surrogate": "\ud800",
    "surrogate-search": "search[\ud800]",
    "surrogate-answer": "answer[\udfff]",
    "surrogate-click": "click[\ud800]",
    "surrogate-expand": "expand[\udc80]",
    "surrogate-go-to": "go to \ud800 1",
    "surrogate-lines": "search[a\ud800b]\nsearch[\udbff\udbff]\nlook \udfff",
}


def _strings(value: object, where: str = "info"):
    """Every string inside ``value`` (dicts, lists, tuples), with where it was found."""
    if isinstance(value, str):
        yield where, value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _strings(k, f"{where} key")
            yield from _strings(v, f"{where}[{k!r}]")
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            yield from _strings(v, f"{where}[{i}]")


def _check_bounded_and_encodable(env: gym.Env, obs: str, info: dict) -> None:
    assert env.observation_space.contains(obs), (
        f"observation of {len(obs):,} characters is not in {env.observation_space}"
    )
    obs.encode("utf-8")  # raises on a lone surrogate
    for where, text in _strings(info):
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise AssertionError(f"{where} does not encode as UTF-8: {exc}") from None


def _check_info(info: dict, *, after_step: bool) -> None:
    for key, typ in INFO_KEYS.items():
        if not after_step and key in STEP_ONLY_INFO_KEYS:
            continue
        assert key in info, f"info lacks {key!r}"
        assert isinstance(info[key], typ), f"info[{key!r}] is {type(info[key]).__name__}"
    assert all(isinstance(a, str) for a in info["admissible_actions"])
    assert info["data_source"], "data_source must name where the task came from"


def _make(env_id: str) -> gym.Env:
    return gym.make(env_id)


def _pick_action(info: dict, rng: random.Random) -> str:
    """An admissible action when the env lists them, else something plausible."""
    acts = [a for a in info.get("admissible_actions", []) if "<" not in a]
    if acts and rng.random() < 0.8:
        return rng.choice(acts)
    return rng.choice(["look", "search[test]", "click[back to search]", "help"])


@pytest.mark.parametrize("env_id", agent_gym.ENV_IDS)
def test_gymnasium_env_checker(env_id: str) -> None:
    env = _make(env_id)
    try:
        check_env(env.unwrapped, skip_render_check=False)
    finally:
        env.close()


@pytest.mark.parametrize("env_id", agent_gym.ENV_IDS)
def test_registered_with_step_limit_and_colon_prefix(env_id: str) -> None:
    spec = gym.spec(env_id)
    assert isinstance(spec.entry_point, str)
    assert spec.max_episode_steps and spec.max_episode_steps > 0
    env = gym.make(f"agent_gym:{env_id}")
    env.close()


@pytest.mark.parametrize("env_id", agent_gym.ENV_IDS)
def test_seed_determinism_and_info_contract(env_id: str) -> None:
    def rollout() -> list:
        env = _make(env_id)
        rng = random.Random(1234)
        obs, info = env.reset(seed=7)
        _check_info(info, after_step=False)
        trace = [(obs, sorted(map(repr, info.items())))]
        for _ in range(6):
            action = _pick_action(info, rng)
            obs, reward, term, trunc, info = env.step(action)
            _check_info(info, after_step=True)
            assert isinstance(obs, str) and isinstance(reward, (int, float))
            assert isinstance(term, bool) and isinstance(trunc, bool)
            trace.append((action, obs, float(reward), term, trunc, sorted(map(repr, info.items()))))
            if term or trunc:
                break
        env.close()
        return trace

    assert rollout() == rollout()


@pytest.mark.parametrize("env_id", agent_gym.ENV_IDS)
def test_same_seed_same_task_different_seed_varies(env_id: str) -> None:
    env = _make(env_id)
    ids = set()
    for seed in range(6):
        obs_a, info_a = env.reset(seed=seed)
        obs_b, info_b = env.reset(seed=seed)
        assert (obs_a, info_a["task_id"]) == (obs_b, info_b["task_id"])
        ids.add(info_a["task_id"])
    # num_tasks is the size of the pool the seed draws from (held-out evaluation's stop rule);
    # agent-gym's own envs know it, an env served elsewhere may not (None).
    num_tasks = getattr(env.unwrapped, "num_tasks", None)
    if env_id in agent_gym.ENV_IDS:
        assert isinstance(num_tasks, int)
    assert num_tasks is None or num_tasks >= len(ids)
    env.close()
    assert len(ids) > 1, "different seeds should reach different tasks"


@pytest.mark.parametrize("env_id", agent_gym.ENV_IDS)
@pytest.mark.parametrize("action", ADVERSARIAL, ids=range(len(ADVERSARIAL)))
def test_adversarial_strings_are_invalid_not_errors(env_id: str, action: str) -> None:
    env = _make(env_id)
    obs0, info0 = env.reset(seed=3)
    obs, reward, term, trunc, info = env.step(action)
    assert isinstance(obs, str) and obs, "an invalid action must be explained in the observation"
    assert info["is_action_valid"] is False
    assert info["task_id"] == info0["task_id"]
    _check_bounded_and_encodable(env, obs, info)
    env.close()


@pytest.mark.parametrize("env_id", agent_gym.ENV_IDS)
def test_adversarial_strings_cross_worker_processes(env_id: str) -> None:
    """``make_vec(mode="async")`` carries every adversarial string to its workers and their
    answers back (pipes pickle lone surrogates and 100 kB strings) without an error."""
    from agent_gym import make_vec

    venv = make_vec(env_id, 2, mode="async")
    try:
        venv.reset(seed=[3, 4])
        for k, action in enumerate(ADVERSARIAL):
            obs, _, term, trunc, info = venv.step([action, ADVERSARIAL[-1 - k]])
            assert all(isinstance(o, str) and o for o in obs), f"action {k}"
            assert not info["is_action_valid"].any(), f"action {k}"
            if (term | trunc).any():
                venv.reset(seed=[3, 4])
    finally:
        venv.close()


@pytest.mark.parametrize("env_id", agent_gym.ENV_IDS)
@pytest.mark.parametrize("action", list(ECHOED.values()), ids=list(ECHOED))
def test_observations_stay_bounded_and_encodable(env_id: str, action: str) -> None:
    env = _make(env_id)
    obs, info = env.reset(seed=3)
    _check_bounded_and_encodable(env, obs, info)
    for _ in range(2):  # twice: what the first step stored is shown again in the second
        obs, _, term, trunc, info = env.step(action)
        _check_bounded_and_encodable(env, obs, info)
        if term or trunc:
            break
    env.close()


@pytest.mark.parametrize("env_id", agent_gym.ENV_IDS)
def test_random_strings_never_raise(env_id: str) -> None:
    env = _make(env_id)
    rng = random.Random(0)
    env.reset(seed=0)
    for _ in range(30):
        n = rng.randint(0, 40)
        action = "".join(chr(rng.randint(1, 0x2FFF)) for _ in range(n))
        obs, _, term, trunc, info = env.step(action)
        assert isinstance(info["is_action_valid"], bool)
        _check_bounded_and_encodable(env, obs, info)
        if term or trunc:
            env.reset(seed=rng.randint(0, 100))
    env.close()


@pytest.mark.parametrize("env_id", agent_gym.ENV_IDS)
@pytest.mark.parametrize("action", [None, 3, b"look", ["look"], {"command": "look"}])
def test_non_str_action_raises_type_error(env_id: str, action: object) -> None:
    env = _make(env_id)
    env.reset(seed=0)
    with pytest.raises(TypeError):
        env.unwrapped.step(action)
    env.close()


@pytest.mark.parametrize("env_id", agent_gym.ENV_IDS)
def test_close_is_idempotent(env_id: str) -> None:
    env = _make(env_id)
    env.reset(seed=0)
    env.close()
    env.close()


@pytest.mark.parametrize("env_id", agent_gym.ENV_IDS)
def test_task_id_option_selects_task(env_id: str) -> None:
    env = _make(env_id)
    _, info = env.reset(seed=5)
    obs_a, info_a = env.reset(seed=0, options={"task_id": info["task_id"]})
    assert info_a["task_id"] == info["task_id"]
    env.close()


@pytest.mark.parametrize("env_id", agent_gym.ENV_IDS)
def test_step_limit_truncates(env_id: str) -> None:
    env = _make(env_id)
    env.reset(seed=0)
    limit = env.spec.max_episode_steps
    term = trunc = False
    steps = 0
    while not (term or trunc):
        # An empty action is always invalid; some envs end on it (PaperSearch), the rest
        # must run into the TimeLimit.
        _, _, term, trunc, _ = env.step("")
        steps += 1
        assert steps <= limit
    assert term != trunc
    env.close()


@pytest.mark.parametrize("env_id", agent_gym.ENV_IDS)
@pytest.mark.parametrize("options", ["task_id", ["task_id"], 3])
def test_options_that_are_no_dict_raise_type_error(env_id: str, options: object) -> None:
    env = _make(env_id)
    with pytest.raises(TypeError, match=r"reset\(options=\.\.\.\) must be a dict"):
        env.reset(seed=0, options=options)
    env.close()


@pytest.mark.parametrize("env_id", agent_gym.ENV_IDS)
@pytest.mark.parametrize("closed", [False, True])
def test_a_reset_that_raises_leaves_no_episode_to_step(env_id: str, closed: bool) -> None:
    """An unknown task id raises, and the episode before it (closed or not) is not played on.

    A local env raises ``ValueError``; a remote one (``test_remote_env_contract``) the
    server's refusal as ``RemoteEnvError``, a ``RuntimeError``; both name the id.
    """
    env = _make(env_id).unwrapped
    env.reset(seed=0)
    if closed:
        env.close()
    with pytest.raises((ValueError, RuntimeError), match="no-such-task"):
        env.reset(options={"task_id": "no-such-task"})
    with pytest.raises(gym.error.ResetNeeded):
        env.step("look")
    env.reset(seed=0)
    env.step("look")
    env.close()


@pytest.mark.parametrize("env_id", agent_gym.ENV_IDS)
def test_an_env_whose_first_reset_raises_plays_after_the_next(env_id: str) -> None:
    """Through ``gym.make``'s wrappers: Gymnasium 1.4's passive checker broke this (see
    ``agent_gym.registration.PASSIVE_CHECKER``)."""
    env = _make(env_id)
    with pytest.raises((ValueError, RuntimeError), match="no-such-task"):
        env.reset(options={"task_id": "no-such-task"})
    env.reset(seed=0)
    env.step("look")
    env.close()


@pytest.mark.parametrize("env_id", agent_gym.ENV_IDS)
def test_a_step_after_close_asks_for_reset_and_reset_reopens(env_id: str) -> None:
    env = _make(env_id).unwrapped  # the step limit's wrapper has its own reset check
    env.reset(seed=0)
    env.close()
    with pytest.raises(gym.error.ResetNeeded):
        env.step("look")
    env.reset(seed=0)  # a closed env can be reset and played again
    env.step("look")
    env.close()
