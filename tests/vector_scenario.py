"""A fixed play-through of the vector-env stepping API, shared by every backend's tests.

Import it as ``from vector_scenario import ...`` (``tests/`` is on ``sys.path``). The sync,
async and Ray tests each run :func:`play` and compare with :data:`EXPECTED` (worked out by hand
from :class:`testing_env.CountingEnv`'s rules) and with each other's transcripts.

:class:`ProbeEnv` adds what the error tests need: an action that hangs, one that kills the
process, a method that counts its calls, and a constructor that fails in one worker.
"""

from __future__ import annotations

import multiprocessing
import os
import time
from typing import Any

import numpy as np
from gymnasium.envs.registration import EnvSpec
from testing_env import CountingEnv, counting_spec

from agent_gym.vector import group_seeds


def probe_spec(**kwargs: Any) -> EnvSpec:
    """An unregistered spec for :class:`ProbeEnv` (``kwargs`` go to the constructor)."""
    return EnvSpec(
        "AgentGymTest/Probe-v0", entry_point=ProbeEnv, max_episode_steps=6, kwargs=kwargs
    )


class ProbeEnv(CountingEnv):
    """:class:`CountingEnv` plus ``hang`` (sleeps an hour) and ``die`` (``os._exit(3)``) actions.

    Args:
        fail_in_worker: Raise in the constructor when built in the async worker process of
            this index (Gymnasium names them ``Worker<...>-{index}``); never in the parent.
        build_delay: Seconds the constructor sleeps (a slow env to build).
        **kwargs: For :class:`CountingEnv`.
    """

    def __init__(
        self, *, fail_in_worker: int | None = None, build_delay: float = 0.0, **kwargs: Any
    ) -> None:
        time.sleep(build_delay)
        if fail_in_worker is not None:
            name = multiprocessing.current_process().name
            if name.startswith("Worker<") and name.endswith(f">-{fail_in_worker}"):
                raise FileNotFoundError(f"no data file in worker {fail_in_worker}")
        super().__init__(**kwargs)
        self.pokes = 0

    def poke(self, amount: int = 1) -> int:
        """Count a call; return the new count."""
        self.pokes += amount
        return self.pokes

    def nap(self, seconds: float) -> None:
        """Sleep (to hang a call)."""
        time.sleep(seconds)

    def step(self, action: str):
        if action == "hang":
            time.sleep(3600)
        if action == "die":
            os._exit(3)
        return super().step(action)


def unbatch(infos: dict[str, Any], num_envs: int) -> list[dict[str, Any]]:
    """Per-env info dicts (plain Python values) from a vector env's batched infos."""
    out: list[dict[str, Any]] = [{} for _ in range(num_envs)]
    for key, values in infos.items():
        if key.startswith("_"):
            continue
        for i in range(num_envs):
            if infos[f"_{key}"][i]:
                value = values[i]
                out[i][key] = value.item() if isinstance(value, np.generic) else value
    return out


def _record(kind: str, result: tuple, num_envs: int) -> dict[str, Any]:
    if kind == "reset":
        obs, infos = result
        return {"kind": kind, "obs": list(obs), "infos": unbatch(infos, num_envs)}
    obs, rewards, terminated, truncated, infos = result
    return {
        "kind": kind,
        "obs": list(obs),
        "rewards": [float(r) for r in rewards],
        "terminated": [bool(t) for t in terminated],
        "truncated": [bool(t) for t in truncated],
        "infos": unbatch(infos, num_envs),
    }


def make_scenario_vec(mode: str, **kwargs: Any):
    """The 4-env vector env :func:`play` expects."""
    from agent_gym.vector import make_vec

    return make_vec(counting_spec(), 4, mode=mode, **kwargs)


def play(venv) -> list[dict[str, Any]]:
    """Run the fixed script on a 4-env CountingEnv vector env; return what it saw."""
    n = venv.num_envs
    target2 = {"task_id": "count-to-2"}
    out = [_record("reset", venv.reset(seed=group_seeds(0, 2, 2), options=target2), n)]
    out.append(_record("step", venv.step(["add 1", None, "add 2", "submit"]), n))
    out.append(_record("step", venv.step([None, "add 2", "submit", "add 1"]), n))
    out.append(_record("step", venv.step([None] * 4), n))
    out.append({"kind": "num_steps", "values": [venv.call_at(i, "num_steps") for i in range(n)]})
    mask = np.array([False, False, True, True])
    reset = venv.reset(seed=[7] * 4, options={**target2, "reset_mask": mask})
    out.append(_record("reset", reset, n))
    out.append(_record("step", venv.step(["submit", "submit", "add 1", None]), n))
    out.append({"kind": "num_steps", "values": [venv.call_at(i, "num_steps") for i in range(n)]})
    return out


_C = "The counter is {}."
#: What :func:`play` must see, worked out by hand (obs, rewards, flags; a few info fields).
EXPECTED = [
    {"obs": [_C.format(0)] * 4, "anchor": ["counter=0"] * 4},
    # env 1 is not stepped (None); env 3 submits 0 != 2 and ends.
    {
        "obs": [_C.format(1), _C.format(0), _C.format(2), _C.format(0)],
        "rewards": [0.0, 0.0, 0.0, 0.0],
        "terminated": [False, False, False, True],
        "valid": [True, None, True, True],  # env 1 repeats its reset info: no is_action_valid
    },
    # env 0 skipped; env 2 submits 2 == 2 and wins; env 3 holds (its action is ignored).
    {
        "obs": [_C.format(1), _C.format(2), _C.format(2), _C.format(0)],
        "rewards": [0.0, 0.0, 1.0, 0.0],
        "terminated": [False, False, True, True],
        "valid": [True, True, True, True],
    },
    # Nobody steps: finished envs keep their final flags, the reward is 0 now.
    {
        "obs": [_C.format(1), _C.format(2), _C.format(2), _C.format(0)],
        "rewards": [0.0, 0.0, 0.0, 0.0],
        "terminated": [False, False, True, True],
        "valid": [True, True, True, True],
    },
    {"num_steps": [1, 1, 2, 1]},
    # Only envs 2 and 3 are reset; only they report infos.
    {
        "obs": [_C.format(1), _C.format(2), _C.format(0), _C.format(0)],
        "anchor": [None, None, "counter=0", "counter=0"],
    },
    {
        "obs": [_C.format(1), _C.format(2), _C.format(1), _C.format(0)],
        "rewards": [0.0, 1.0, 0.0, 0.0],
        "terminated": [True, True, False, False],
        "valid": [True, True, True, None],
    },
    {"num_steps": [2, 2, 1, 0]},
]


def check_against_expected(transcript: list[dict[str, Any]]) -> None:
    """Assert that a :func:`play` transcript matches :data:`EXPECTED`."""
    assert len(transcript) == len(EXPECTED)
    for n, (got, want) in enumerate(zip(transcript, EXPECTED)):
        where = f"record {n} ({got['kind']})"
        if "num_steps" in want:
            assert got["values"] == want["num_steps"], where
            continue
        assert got["obs"] == want["obs"], where
        for key in ("rewards", "terminated"):
            if key in want:
                assert got[key] == want[key], where
        if "truncated" in got:
            assert got["truncated"] == [False] * 4, where
        if "anchor" in want:
            assert [i.get("anchor_obs") for i in got["infos"]] == want["anchor"], where
        if "valid" in want:
            assert [i.get("is_action_valid") for i in got["infos"]] == want["valid"], where
