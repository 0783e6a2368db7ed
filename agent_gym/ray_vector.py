"""``make_vec(..., mode="ray")``: each sub-env runs in a Ray actor, on this machine or a cluster.

Same interface and semantics as the sync/async backends of :mod:`agent_gym.vector`: a
Gymnasium :class:`~gymnasium.vector.VectorEnv` with autoreset ``DISABLED`` (reset finished envs
with ``options={"reset_mask": ...}``), observations as a tuple, Gymnasium's info dict of
arrays, and :class:`~agent_gym.vector.EnvWorkerError` naming the sub-env that failed.

Ray is an optional extra (``pip install "agent-gym[ray]"``), imported only when this backend is
built. If Ray is not initialised yet, the backend calls ``ray.init(**ray_init)`` (by default a
local instance); to use a cluster, call ``ray.init(address="auto")`` (or
``address="ray://head:10001"``) first, or pass ``vector_kwargs={"ray_init": {"address": ...}}``.
Every node needs agent-gym installed (and any data files the env reads).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space, concatenate, create_empty_array

from agent_gym.vector import EnvWorkerError


def _import_ray():
    try:
        import ray
    except ImportError as e:
        raise ImportError(
            "make_vec(mode='ray') needs Ray, which is an optional extra: "
            "pip install 'agent-gym[ray]'  (or: pip install 'ray>=2.9')"
        ) from e
    return ray


class _EnvActor:
    """Holds one sub-env inside a Ray actor (``ray.remote`` is applied when the backend starts)."""

    def __init__(self, env_fn: Callable[[], gym.Env]) -> None:
        self.env = env_fn()

    def spaces(self) -> tuple[gym.Space, gym.Space, dict[str, Any], str | None]:
        return (
            self.env.observation_space,
            self.env.action_space,
            self.env.metadata,
            self.env.render_mode,
        )

    def reset(self, seed: int | None, options: dict[str, Any] | None) -> tuple[Any, dict]:
        return self.env.reset(seed=seed, options=options)

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict]:
        return self.env.step(action)

    def call(self, name: str, args: tuple, kwargs: dict) -> Any:
        attr = self.env.get_wrapper_attr(name)
        return attr(*args, **kwargs) if callable(attr) else attr

    def set_attr(self, name: str, value: Any) -> None:
        self.env.set_wrapper_attr(name, value)

    def close(self) -> None:
        self.env.close()


class RayVectorEnv(VectorEnv):
    """A vector env whose sub-envs are Ray actors; built by ``make_vec(..., mode="ray")``.

    Calls go to all actors at once and the results are gathered in env order, so a step
    takes as long as the slowest sub-env.

    Args:
        env_fns: One ``() -> env`` per sub-env; each runs inside its actor (so it must pickle).
        actor_options: Options for ``ray.remote`` on the actor class, e.g.
            ``{"num_cpus": 1}`` to reserve a CPU per env, or
            ``{"scheduling_strategy": "SPREAD"}`` to spread envs over a cluster's nodes.
            Ray's default reserves nothing, so any number of env actors fit on one node.
        ray_init: Keyword arguments for ``ray.init`` if Ray is not initialised yet.
        timeout: Seconds to wait for any one call before raising
            :class:`~agent_gym.vector.EnvWorkerError` (``None``: wait forever).
        copy: Return deep copies of the observations (as Gymnasium's vector envs do).
    """

    def __init__(
        self,
        env_fns: Sequence[Callable[[], gym.Env]],
        *,
        actor_options: dict[str, Any] | None = None,
        ray_init: dict[str, Any] | None = None,
        timeout: float | None = None,
        copy: bool = True,
    ) -> None:
        ray = _import_ray()
        self._ray = ray
        if not ray.is_initialized():
            ray.init(**(ray_init or {}))
        remote = ray.remote(**actor_options) if actor_options else ray.remote
        actor_cls = remote(_EnvActor)
        self.num_envs = len(env_fns)
        self.copy = copy
        self.timeout = timeout
        self.closed = False
        self._actors = [actor_cls.remote(fn) for fn in env_fns]
        obs_space, act_space, metadata, render_mode = self._gather(
            {0: self._actors[0].spaces.remote()}
        )[0]
        self.single_observation_space = obs_space
        self.single_action_space = act_space
        self.observation_space = batch_space(obs_space, self.num_envs)
        self.action_space = batch_space(act_space, self.num_envs)
        self.metadata = {**metadata, "autoreset_mode": AutoresetMode.DISABLED}
        self.render_mode = render_mode
        self._env_obs: list[Any] = [None] * self.num_envs
        self._observations = create_empty_array(obs_space, n=self.num_envs, fn=np.zeros)

    def reset(
        self,
        *,
        seed: int | Sequence[int | None] | None = None,
        options: dict[str, Any] | None = None,
    ) -> tuple[Any, dict[str, Any]]:
        """Reset all sub-envs, or those in ``options["reset_mask"]`` (a bool array).

        Seeds follow Gymnasium: ``None``, an int ``s`` (env ``i`` gets ``s + i``) or one seed
        per env (e.g. :func:`~agent_gym.vector.group_seeds`); masked-out envs ignore theirs.
        """
        self._assert_open()
        if seed is None:
            seeds: list[int | None] = [None] * self.num_envs
        elif isinstance(seed, (int, np.integer)):
            seeds = [int(seed) + i for i in range(self.num_envs)]
        else:
            seeds = list(seed)
        if len(seeds) != self.num_envs:
            raise ValueError(f"got {len(seeds)} seeds for num_envs={self.num_envs}")
        options = dict(options or {})
        mask = options.pop("reset_mask", None)
        if mask is None:
            mask = np.ones(self.num_envs, dtype=np.bool_)
        elif not (
            isinstance(mask, np.ndarray)
            and mask.dtype == np.bool_
            and mask.shape == (self.num_envs,)
            and mask.any()
        ):
            raise ValueError(
                f"options['reset_mask'] must be a numpy bool array of shape ({self.num_envs},) "
                f"with at least one True, got {mask!r}"
            )
        refs = {
            i: self._actors[i].reset.remote(seeds[i], options or None)
            for i in range(self.num_envs)
            if mask[i]
        }
        infos: dict[str, Any] = {}
        for i, (obs, info) in self._gather(refs).items():
            self._env_obs[i] = obs
            infos = self._add_info(infos, info, i)
        return self._batched_obs(), infos

    def step(self, actions: Any) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict]:
        """Send one action to each sub-env; return the batched results."""
        self._assert_open()
        actions = list(actions)
        if len(actions) != self.num_envs:
            raise ValueError(f"got {len(actions)} actions for num_envs={self.num_envs}")
        refs = {i: actor.step.remote(a) for i, (actor, a) in enumerate(zip(self._actors, actions))}
        rewards = np.zeros(self.num_envs, dtype=np.float64)
        terminations = np.zeros(self.num_envs, dtype=np.bool_)
        truncations = np.zeros(self.num_envs, dtype=np.bool_)
        infos: dict[str, Any] = {}
        for i, (obs, reward, terminated, truncated, info) in self._gather(refs).items():
            self._env_obs[i] = obs
            rewards[i], terminations[i], truncations[i] = reward, terminated, truncated
            infos = self._add_info(infos, info, i)
        return self._batched_obs(), rewards, terminations, truncations, infos

    def call(self, name: str, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
        """Call (or read) ``name`` on every sub-env; return the results in env order."""
        self._assert_open()
        refs = {i: a.call.remote(name, args, kwargs) for i, a in enumerate(self._actors)}
        return tuple(self._gather(refs).values())

    def get_attr(self, name: str) -> tuple[Any, ...]:
        """Read attribute ``name`` of every sub-env."""
        return self.call(name)

    def set_attr(self, name: str, values: Any) -> None:
        """Set ``name`` on every sub-env (one value for all, or a list with one per env)."""
        self._assert_open()
        if not isinstance(values, (list, tuple)):
            values = [values] * self.num_envs
        if len(values) != self.num_envs:
            raise ValueError(f"got {len(values)} values for num_envs={self.num_envs}")
        refs = {i: a.set_attr.remote(name, v) for i, (a, v) in enumerate(zip(self._actors, values))}
        self._gather(refs)

    def close_extras(self, **kwargs: Any) -> None:
        """Close every sub-env (best effort) and stop its actor."""
        ray = self._ray
        if not ray.is_initialized():  # Ray already shut down (e.g. at exit): actors are gone
            self._actors = []
            return
        refs = [actor.close.remote() for actor in self._actors]
        ray.wait(refs, num_returns=len(refs), timeout=10.0)
        for actor in self._actors:
            ray.kill(actor)
        self._actors = []

    def _batched_obs(self) -> Any:
        self._observations = concatenate(
            self.single_observation_space, self._env_obs, self._observations
        )
        return copy.deepcopy(self._observations) if self.copy else self._observations

    def _gather(self, refs: dict[int, Any]) -> dict[int, Any]:
        """``ray.get`` each ref in env order; a failure closes the env and names the index."""
        ray = self._ray
        results = {}
        for i, ref in refs.items():
            try:
                results[i] = ray.get(ref, timeout=self.timeout)
            except ray.exceptions.GetTimeoutError:
                error = EnvWorkerError(i, f"sub-env {i} did not answer within {self.timeout} s")
            except ray.exceptions.RayTaskError as e:
                cause = e.cause if e.cause is not None else e
                error = EnvWorkerError(
                    i, f"sub-env {i} raised {type(cause).__name__}: {cause}\n\n{e}"
                )
            except ray.exceptions.RayActorError as e:
                error = EnvWorkerError(i, f"the Ray actor of sub-env {i} died: {e}")
            else:
                continue
            self.close()
            raise error
        return results

    def _assert_open(self) -> None:
        if self.closed:
            raise gym.error.ClosedEnvironmentError("this RayVectorEnv is closed")
