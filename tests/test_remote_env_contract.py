"""``agent_gym/OpenEnv-v0`` pointed at a real ``serve-env`` process passes the env contract.

The checks are the functions of ``tests/test_env_contract.py`` themselves, run here with the
remote env's id in place of a registered one (and over each of their other parameters), so a
check added there is applied to remote envs too.
"""

from __future__ import annotations

import itertools

import gymnasium as gym
import pytest
import test_env_contract as contract
from serve_env import serve_env

import agent_gym

SERVED = "AgentR1/HotpotQA-v0"
REMOTE_ID = "AgentGymTest/RemoteHotpotQA-v0"
CHECKS = sorted(name for name in vars(contract) if name.startswith("test_"))


@pytest.fixture(scope="module")
def remote_id():
    with serve_env(SERVED, "--max-sessions", "8") as url:
        # The client-side limit equals the served one, as the contract's step-limit check reads
        # it from env.spec; the server's own TimeLimit truncates on the same step.
        gym.register(
            REMOTE_ID,
            entry_point="agent_gym.remote:OpenEnvTextEnv",
            kwargs={"url": url},
            max_episode_steps=gym.spec(SERVED).max_episode_steps,
            disable_env_checker=True,  # as agent_gym registers its ids (registration.py)
        )
        yield REMOTE_ID
        del gym.registry[REMOTE_ID]


def _other_parameters(check) -> list[dict]:
    """Every combination of the check's parametrize values except ``env_id``."""
    axes = []
    for mark in getattr(check, "pytestmark", []):
        if mark.name != "parametrize" or mark.args[0] == "env_id":
            continue
        names = [n.strip() for n in mark.args[0].split(",")]
        axes.append([dict(zip(names, v if len(names) > 1 else (v,))) for v in mark.args[1]])
    return [{k: v for part in combo for k, v in part.items()} for combo in itertools.product(*axes)]


def test_contract_module_has_checks() -> None:
    # Guards against the reuse below silently running nothing.
    assert len(CHECKS) >= 8 and "test_adversarial_strings_are_invalid_not_errors" in CHECKS


@pytest.mark.parametrize("name", CHECKS)
def test_remote_env_passes(name: str, remote_id: str) -> None:
    check = getattr(contract, name)
    for params in _other_parameters(check):
        check(env_id=remote_id, **params)


def test_remote_info_is_the_served_envs_info(remote_id: str) -> None:
    local, remote = gym.make(SERVED), gym.make(remote_id)
    try:
        obs_l, info_l = local.reset(seed=4)
        obs_r, info_r = remote.reset(seed=4)
        assert (obs_r, info_r) == (obs_l, info_l)
        for key in ("task", "anchor_obs", "admissible_actions", "won", "score", "data_source"):
            assert key in info_r
        step_l, step_r = local.step("search[Nauru]"), remote.step("search[Nauru]")
        assert step_r == step_l
    finally:
        local.close()
        remote.close()


def test_openenv_id_is_registered_on_import() -> None:
    assert agent_gym.OPENENV_ID in gym.registry
    assert gym.spec(agent_gym.OPENENV_ID).entry_point == "agent_gym.remote:OpenEnvTextEnv"


@pytest.mark.parametrize("url", ["notaurl", "ftp://h", "http://127.0.0.1:99999", "http://:8000"])
def test_a_url_that_is_no_server_address_is_refused_when_made(url: str) -> None:
    """A port past 65535 or no host went on to a 'connection refused' that blamed the server."""
    with pytest.raises(ValueError, match="url must look like http://HOST:PORT"):
        gym.make(agent_gym.OPENENV_ID, url=url)
