"""``make_vec(..., mode="ray")``: each sub-env runs in a Ray actor, on this machine or a cluster.

Same interface and semantics as the sync/async backends of :mod:`agent_gym.vector`: a
Gymnasium :class:`~gymnasium.vector.VectorEnv` with autoreset ``DISABLED`` (reset finished envs
with ``options={"reset_mask": ...}``), ``step`` with ``None`` for "leave this sub-env alone",
``call_at``, observations as a tuple, Gymnasium's info dict of arrays, and
:class:`~agent_gym.vector.EnvWorkerError` naming the sub-env that failed, died or timed out.

Ray is an optional extra (``pip install "agent-gym[ray]"``), imported only when this backend is
built. Where the actors run:

1. If Ray is already initialised in this process, that connection is used (``ray_init`` is then
   ignored, with a warning if it differs from the one this module initialised Ray with).
2. Otherwise the backend calls ``ray.init(**ray_init)``, and Ray picks the cluster: an explicit
   ``ray_init["address"]`` (``"host:6379"``, ``"ray://host:10001"``) wins; with no address (or
   ``"auto"``) the ``RAY_ADDRESS`` environment variable does; with neither, a new local
   instance starts (``"auto"`` alone: the latest cluster started on this machine).

``actor_options`` (one dict for all actors, or one per sub-env) are Ray's actor options:
``num_cpus``, ``resources`` (custom node resources pin actors to nodes),
``scheduling_strategy`` (``"SPREAD"``), ... Every node needs agent-gym installed (and any data
files the env reads).
"""

from __future__ import annotations

import copy
import traceback
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import VectorEnv
from gymnasium.vector.utils import batch_space, concatenate, create_empty_array

from agent_gym.gym_compat import AutoresetMode
from agent_gym.vector import (
    EnvWorkerError,
    check_actions,
    check_call_name,
    check_index,
    check_timeout,
    combine_errors,
    per_env_values,
)

# The ray_init this module last passed to ray.init (to warn when a later one is ignored).
_RAY_INIT_USED: dict[str, Any] | None = None

# Seconds close() waits for the actors to close their envs before killing them, and seconds
# of waiting for the actors to be built before warning that Ray may lack resources.
_CLOSE_GRACE_S = 10.0
_BUILD_WARN_S = 120.0


def _import_ray():
    try:
        import ray
    except ImportError as e:
        raise ImportError(
            "make_vec(mode='ray') needs Ray, which is an optional extra: "
            "pip install 'agent-gym[ray]'  (or: pip install 'ray>=2.9')"
        ) from e
    return ray


def _connect(ray: Any, ray_init: dict[str, Any] | None) -> None:
    global _RAY_INIT_USED
    if not ray.is_initialized():
        ray.init(**(ray_init or {}))
        _RAY_INIT_USED = dict(ray_init or {})
    elif ray_init is not None and ray_init != _RAY_INIT_USED:
        warnings.warn(
            f"Ray is already initialised in this process, so ray_init={ray_init!r} is ignored "
            "and the env actors go to the current Ray cluster; call ray.shutdown() first to "
            "connect elsewhere",
            UserWarning,
            stacklevel=4,
        )


class _EnvActor:
    """Holds one sub-env inside a Ray actor (``ray.remote`` is applied when the backend starts).

    A constructor that raises would kill the actor, and the driver would see only "actor died";
    so the error is kept and raised by every call, where Ray returns it as the call's cause.
    """

    def __init__(self, env_fn: Callable[[], gym.Env]) -> None:
        self._error: BaseException | None = None
        try:
            self.env = env_fn()
        except Exception as e:
            self._error = e
            self._trace = traceback.format_exc()

    def _env(self) -> gym.Env:
        if self._error is not None:
            raise self._error
        return self.env

    def spaces(self) -> tuple[gym.Space, gym.Space, dict[str, Any], str | None]:
        env = self._env()
        return env.observation_space, env.action_space, env.metadata, env.render_mode

    def node_id(self) -> str:
        import ray

        return ray.get_runtime_context().get_node_id()

    def reset(self, seed: int | None, options: dict[str, Any] | None) -> tuple[Any, dict]:
        return self._env().reset(seed=seed, options=options)

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict]:
        return self._env().step(action)

    def call(self, name: str, args: tuple, kwargs: dict) -> Any:
        attr = self._env().get_wrapper_attr(name)
        return attr(*args, **kwargs) if callable(attr) else attr

    def set_attr(self, name: str, value: Any) -> None:
        self._env().set_wrapper_attr(name, value)

    def close(self) -> None:
        if self._error is None:
            self.env.close()


class RayVectorEnv(VectorEnv):
    """A vector env whose sub-envs are Ray actors; built by ``make_vec(..., mode="ray")``.

    Calls go to all actors at once (``call_at`` to one) and the results are gathered in env
    order, so a step takes as long as the slowest sub-env.

    Args:
        env_fns: One ``() -> env`` per sub-env; each runs inside its actor (so it must pickle).
        actor_options: Ray actor options, one dict for every actor or a list with one per
            sub-env: e.g. ``{"num_cpus": 1}`` to reserve a CPU per env,
            ``{"scheduling_strategy": "SPREAD"}`` to spread envs over a cluster's nodes, or
            ``{"resources": {"env_node": 0.01}}`` to run them only where that custom resource
            is. With no resources named, Ray reserves nothing for an actor, so any number fit on
            a node; with any ``resources`` but no ``num_cpus``, Ray holds 1 CPU per actor for
            its lifetime (give ``num_cpus`` explicitly, e.g. 0).
        ray_init: Keyword arguments for ``ray.init`` if Ray is not initialised yet (see the
            module docstring for which cluster is used).
        step_timeout: Seconds to wait for the actors to answer any call after they are built
            (``None``: wait forever); the ones that did not answer are named in the
            :class:`~agent_gym.vector.EnvWorkerError`.
        copy: Return deep copies of the observations (as Gymnasium's vector envs do).
    """

    def __init__(
        self,
        env_fns: Sequence[Callable[[], gym.Env]],
        *,
        actor_options: dict[str, Any] | Sequence[dict[str, Any]] | None = None,
        ray_init: dict[str, Any] | None = None,
        step_timeout: float | None = None,
        copy: bool = True,
    ) -> None:
        self.closed = False
        self._actors: list[Any] = []
        self._unresponsive: set[int] = set()  # dead or hung: close() does not wait for them
        self._ray = None
        ray = _import_ray()
        self._ray = ray
        self.num_envs = len(env_fns)
        self.step_timeout = check_timeout(step_timeout)
        self.copy = copy
        options = _per_env_options(actor_options, self.num_envs)
        _connect(ray, ray_init)
        actor_cls = ray.remote(_EnvActor)
        self._actors = [actor_cls.options(**opts).remote(fn) for fn, opts in zip(env_fns, options)]
        # Every actor answers once before the env is usable: a sub-env that cannot be built is
        # reported here, by index. Not timed: scheduling and building may legitimately be slow.
        spaces = self._gather({i: a.spaces.remote() for i, a in enumerate(self._actors)}, None)
        obs_space, act_space, metadata, render_mode = spaces[0]
        for i, (obs_i, act_i, _, _) in spaces.items():
            if obs_i != obs_space or act_i != act_space:
                self.close()
                raise ValueError(
                    f"sub-env {i} has spaces ({obs_i}, {act_i}), sub-env 0 has "
                    f"({obs_space}, {act_space}); a vector env needs them equal"
                )
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
        for i, (obs, info) in self._gather(refs, "reset").items():
            self._env_obs[i] = obs
            infos = self._add_info(infos, info, i)
        return self._batched_obs(), infos

    def step(self, actions: Any) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict]:
        """Send one action to each sub-env (``None``: no step); return the batched results."""
        self._assert_open()
        actions = check_actions(actions, self.num_envs)
        refs = {i: actor.step.remote(a) for i, (actor, a) in enumerate(zip(self._actors, actions))}
        rewards = np.zeros(self.num_envs, dtype=np.float64)
        terminations = np.zeros(self.num_envs, dtype=np.bool_)
        truncations = np.zeros(self.num_envs, dtype=np.bool_)
        infos: dict[str, Any] = {}
        for i, (obs, reward, terminated, truncated, info) in self._gather(refs, "step").items():
            self._env_obs[i] = obs
            rewards[i], terminations[i], truncations[i] = reward, terminated, truncated
            infos = self._add_info(infos, info, i)
        return self._batched_obs(), rewards, terminations, truncations, infos

    def call_at(self, index: int, name: str, *args: Any, **kwargs: Any) -> Any:
        """Call (or read) attribute ``name`` of sub-env ``index``; only its actor is asked."""
        self._assert_open()
        index, name = check_index(index, self.num_envs), check_call_name(name)
        ref = self._actors[index].call.remote(name, args, kwargs)
        return self._gather({index: ref}, "call_at")[index]

    def call(self, name: str, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
        """Call (or read) ``name`` on every sub-env; return the results in env order."""
        self._assert_open()
        check_call_name(name)
        refs = {i: a.call.remote(name, args, kwargs) for i, a in enumerate(self._actors)}
        return tuple(self._gather(refs, "call").values())

    def get_attr(self, name: str) -> tuple[Any, ...]:
        """Read attribute ``name`` of every sub-env."""
        return self.call(name)

    def set_attr(self, name: str, values: Any) -> None:
        """Set ``name`` on every sub-env (one value for all, or a list with one per env)."""
        self._assert_open()
        values = per_env_values(values, self.num_envs)
        refs = {i: a.set_attr.remote(name, v) for i, (a, v) in enumerate(zip(self._actors, values))}
        self._gather(refs, "set_attr")

    def node_ids(self) -> tuple[str, ...]:
        """The Ray node id each sub-env's actor runs on (to check where they were placed)."""
        self._assert_open()
        refs = {i: a.node_id.remote() for i, a in enumerate(self._actors)}
        return tuple(self._gather(refs, "node_id").values())

    def close_extras(self, **kwargs: Any) -> None:
        """Close every sub-env (best effort) and stop its actor."""
        ray = self._ray
        if ray is None or not ray.is_initialized():  # no Ray, or shut down: no actors left
            self._actors = []
            return
        refs = [a.close.remote() for i, a in enumerate(self._actors) if i not in self._unresponsive]
        if refs:
            ray.wait(refs, num_returns=len(refs), timeout=_CLOSE_GRACE_S)
        for actor in self._actors:
            ray.kill(actor)
        self._actors = []

    def _batched_obs(self) -> Any:
        self._observations = concatenate(
            self.single_observation_space, self._env_obs, self._observations
        )
        return copy.deepcopy(self._observations) if self.copy else self._observations

    def _gather(self, refs: dict[int, Any], call: str | None) -> dict[int, Any]:
        """Results in env order; a failure or timeout closes the env and names the sub-envs.

        ``call=None``: not timed (construction).
        """
        ray = self._ray
        timeout = self.step_timeout if call is not None else None
        pending = list(refs.values())
        if call is None:  # building: Ray may be waiting for resources; say so, keep waiting
            _, late = ray.wait(pending, num_returns=len(pending), timeout=_BUILD_WARN_S)
            if late:
                waiting = sorted(i for i, ref in refs.items() if ref in set(late))
                warnings.warn(
                    f"sub-envs {waiting} are not built after {_BUILD_WARN_S:g} s; still "
                    "waiting. Is the cluster short of what actor_options asks for? (With any "
                    "`resources` but no `num_cpus`, Ray holds 1 CPU per actor.)",
                    UserWarning,
                    stacklevel=3,
                )
        _, late = ray.wait(pending, num_returns=len(pending), timeout=timeout)
        late = set(late)
        results, errors = {}, {}
        for i, ref in refs.items():
            if ref in late:
                self._unresponsive.add(i)
                errors[i] = (
                    f"sub-env {i} did not answer `{call}` within {timeout:g} s (step_timeout); "
                    "the vector env is closed"
                )
                continue
            try:
                results[i] = ray.get(ref)
            except ray.exceptions.RayTaskError as e:
                cause = e.cause if e.cause is not None else e
                if isinstance(cause, EnvWorkerError):
                    errors[i] = f"{cause}\n\n{e}"  # raised by the sub-env's own error wrapper
                else:
                    errors[i] = f"sub-env {i} raised {type(cause).__name__}: {cause}\n\n{e}"
            except ray.exceptions.RayActorError as e:
                self._unresponsive.add(i)
                errors[i] = f"the Ray actor of sub-env {i} died: {e}"
            except ray.exceptions.RayError as e:
                self._unresponsive.add(i)
                errors[i] = f"the Ray call to sub-env {i} failed: {type(e).__name__}: {e}"
        if errors:
            self.close()
            raise combine_errors(errors)
        return results

    def _assert_open(self) -> None:
        if self.closed:
            raise gym.error.ClosedEnvironmentError("this RayVectorEnv is closed")


def _per_env_options(
    actor_options: dict[str, Any] | Sequence[dict[str, Any]] | None, num_envs: int
) -> list[dict[str, Any]]:
    if actor_options is None:
        return [{}] * num_envs
    if isinstance(actor_options, dict):
        return [dict(actor_options)] * num_envs
    options = list(actor_options)
    if len(options) != num_envs or not all(isinstance(o, dict) for o in options):
        raise ValueError(
            f"actor_options must be a dict or a list of {num_envs} dicts (one per sub-env), "
            f"got {actor_options!r:.200}"
        )
    return [dict(o) for o in options]
