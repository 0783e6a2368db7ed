"""Vector envs for group rollouts: Gymnasium's own, with autoreset off and clear worker errors.

GRPO/GiGPO-style learners run ``G`` copies of each task side by side and compare them, so
every member of a group must start in the identical state. :func:`group_seeds` builds the
reset seeds (``[s0]*G + [s1]*G + ...``) and :func:`make_vec` builds the vector env::

    venv = make_vec("AgentR1/ALFWorld-v0", num_envs=8, mode="async",
                    wrappers=[ParseAction, ChatPrompt])
    obs, infos = venv.reset(seed=group_seeds(0, num_tasks=2, group_size=4))
    obs, rewards, terminated, truncated, infos = venv.step(actions)  # None: leave env i alone

Every backend (sync, async, Ray) has the same stepping rules, implemented once in the
per-sub-env wrapper :class:`HoldFinished`: an action of ``None`` does not step that sub-env,
and a finished sub-env holds its final state until it is reset. Autoreset is ``DISABLED``; reset
finished envs with ``venv.reset(seed=..., options={"reset_mask": mask})``.
"""

from __future__ import annotations

import functools
import hashlib
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

import gymnasium as gym
from gymnasium.envs.registration import EnvSpec
from gymnasium.vector import SyncVectorEnv, VectorEnv

from agent_gym import gym_compat
from agent_gym.gym_compat import AutoresetMode

#: The backends :func:`make_vec` offers.
MODES: tuple[str, ...] = ("sync", "async", "ray")

Wrapper = Callable[[gym.Env], gym.Env]


class EnvWorkerError(RuntimeError):
    """A sub-env of a vector env raised, died or did not answer in time.

    :attr:`index` is the (lowest) sub-env concerned and :attr:`indices` all of them. The vector
    env is closed when this is raised: build a new one to continue.
    """

    def __init__(self, index: int, message: str, indices: Sequence[int] | None = None) -> None:
        super().__init__(message)
        self.index = index
        self.indices = tuple(indices) if indices is not None else (index,)

    def __reduce__(self):
        return (type(self), (self.index, self.args[0], self.indices))


class EnvFactory:
    """A picklable ``() -> env``: ``gym.make(env_id, **env_kwargs)``, then each wrapper in order.

    The result is wrapped in :class:`HoldFinished` last.

    Args:
        env_id: A registered id (``"module:"`` prefixes work) or an ``EnvSpec``.
        wrappers: Callables ``env -> env`` applied innermost first, e.g. ``ParseAction`` or
            ``functools.partial(ChatPrompt, history_length=3)``.
        env_kwargs: Keyword arguments for ``gym.make``.
    """

    def __init__(
        self,
        env_id: str | EnvSpec,
        wrappers: Sequence[Wrapper] = (),
        env_kwargs: dict[str, Any] | None = None,
    ) -> None:
        self.env_id = env_id
        self.wrappers = tuple(wrappers)
        self.env_kwargs = dict(env_kwargs or {})

    def __call__(self) -> gym.Env:
        """Build one env."""
        env = gym.make(self.env_id, **self.env_kwargs)
        for wrap in self.wrappers:
            env = wrap(env)
        return HoldFinished(env)


class HoldFinished(gym.Wrapper):
    """The stepping rules every vector backend shares: ``None`` skips, finished envs hold.

    A vector env steps every sub-env at once, but a rollout only wants to step some of them
    (the members of a group finish at different times; some prompts wait for a re-render). So:

    * ``step(None)`` does not step the env (its step counter does not move) and returns its
      current observation, reward 0.0, ``terminated``/``truncated`` False (its final flags if it
      has finished) and its last info;
    * once an episode has ended, every further step is a no-op returning the final observation,
      reward 0.0 and the final flags and info, until ``reset``.

    The wrapped env sees only real steps, so wrappers inside (``ChatPrompt``, ``TimeLimit``)
    never count a skipped one.
    """

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        self._last: tuple[Any, dict[str, Any]] | None = None  # (obs, info) of the last call
        self._final_flags: tuple[bool, bool] | None = None  # (terminated, truncated) once done

    def reset(self, **kwargs: Any):
        """Reset the env; it plays again."""
        obs, info = self.env.reset(**kwargs)
        self._last, self._final_flags = (obs, info), None
        return obs, info

    def step(self, action: Any):
        """Step the env, or repeat its current state (``action is None`` or episode over)."""
        if self._last is None:
            raise gym.error.ResetNeeded("call reset() before step() (even a step with None)")
        if action is None or self._final_flags is not None:
            obs, info = self._last
            terminated, truncated = self._final_flags or (False, False)
            return obs, 0.0, terminated, truncated, info
        obs, reward, terminated, truncated, info = self.env.step(action)
        self._last = (obs, info)
        if terminated or truncated:
            self._final_flags = (bool(terminated), bool(truncated))
        return obs, reward, terminated, truncated, info


def group_seeds(seed: int, num_tasks: int, group_size: int) -> list[int]:
    """Reset seeds for ``num_tasks`` groups of ``group_size`` identical envs.

    Returns ``[s0]*G + [s1]*G + ...``: env ``i`` belongs to group ``i // group_size``. The
    task seeds ``s0, s1, ...`` are distinct and derived from ``seed`` by hashing, so they do not
    depend on numpy's generator streams, and consecutive ``seed`` values (one per training
    iteration, say) draw unrelated tasks rather than shifted copies of the same list.

    Args:
        seed: Base seed (any int).
        num_tasks: Number of groups (distinct tasks), >= 1.
        group_size: Envs per group, >= 1.

    Returns:
        ``num_tasks * group_size`` seeds in ``[0, 2**31)``.

    Example:
        >>> seeds = group_seeds(0, num_tasks=2, group_size=3)
        >>> seeds[0] == seeds[1] == seeds[2] != seeds[3] == seeds[4] == seeds[5]
        True
    """
    for name, value in (("seed", seed), ("num_tasks", num_tasks), ("group_size", group_size)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"{name} must be an int, got {type(value).__name__}: {value!r}")
    if num_tasks < 1 or group_size < 1:
        raise ValueError(
            f"num_tasks and group_size must be >= 1, got num_tasks={num_tasks}, "
            f"group_size={group_size}"
        )
    task_seeds: list[int] = []
    seen: set[int] = set()
    counter = 0
    while len(task_seeds) < num_tasks:
        digest = hashlib.blake2b(f"{seed}/{counter}".encode(), digest_size=8).digest()
        counter += 1
        value = int.from_bytes(digest, "little") % 2**31
        if value not in seen:  # a repeat (about 1 in 2**31 per pair) is skipped, not kept
            seen.add(value)
            task_seeds.append(value)
    return [s for s in task_seeds for _ in range(group_size)]


def make_vec(
    env_id: str | EnvSpec,
    num_envs: int,
    mode: Literal["sync", "async", "ray"] = "sync",
    wrappers: Sequence[Wrapper] = (),
    *,
    step_timeout: float | None = None,
    vector_kwargs: dict[str, Any] | None = None,
    **env_kwargs: Any,
) -> VectorEnv:
    """Build ``num_envs`` copies of an env as a Gymnasium ``VectorEnv`` with autoreset off.

    All three backends offer the same calls: ``reset(seed=..., options=...)``,
    ``step(actions)`` (one action per sub-env; ``None`` leaves that sub-env alone, see
    :class:`HoldFinished`), ``call_at(index, name, *args, **kwargs)`` (call or read an attribute
    of one sub-env, through its wrappers), and Gymnasium's ``call``/``get_attr``/``set_attr``.
    Observations come back as a tuple of per-env observations (strings, or chat-message lists
    under ``ChatPrompt``); infos are Gymnasium's dict of arrays with ``_key`` masks. A sub-env
    that raises, dies or times out surfaces as :class:`EnvWorkerError` naming its index (the
    vector env is closed then). A wrong number of actions is a ``ValueError`` raised before
    anything is sent, and the vector env stays usable.

    Args:
        env_id: A registered id (e.g. ``"AgentR1/WebShop-v0"``) or an ``EnvSpec``.
        num_envs: Number of sub-envs, >= 1.
        mode: ``"sync"`` (one process, :class:`~gymnasium.vector.SyncVectorEnv`), ``"async"``
            (a subprocess per env, :class:`agent_gym.async_vector.SubprocVectorEnv`, a
            :class:`~gymnasium.vector.AsyncVectorEnv` with ``shared_memory=False``, since text
            cannot live in shared arrays) or ``"ray"`` (a Ray actor per env, on this machine or
            a cluster: :class:`agent_gym.ray_vector.RayVectorEnv`; needs the ``[ray]`` extra).
        wrappers: Callables ``env -> env`` applied to each sub-env, innermost first.
        step_timeout: Seconds to wait for the sub-envs to answer any call (``reset``, ``step``,
            ``call_at``, ``call``, ``set_attr``) before raising :class:`EnvWorkerError` naming
            the ones that did not; ``None`` waits forever. Async and Ray only: a sync sub-env
            runs in this process and cannot be pre-empted.
        vector_kwargs: Extra keyword arguments for the vector class: e.g. ``context="spawn"``
            for async (the default ``fork`` is unsafe once the parent runs threads, as torch
            and Ray do), or ``ray_init``/``actor_options`` for Ray.
        **env_kwargs: Passed to ``gym.make`` for every sub-env.

    Returns:
        The vector env; call ``close()`` when done.

    Example:
        >>> import agent_gym
        >>> from agent_gym.vector import group_seeds, make_vec
        >>> venv = make_vec("AgentR1/HotpotQA-v0", 4, mode="sync")  # doctest: +SKIP
        >>> obs, infos = venv.reset(seed=group_seeds(0, 2, 2))  # doctest: +SKIP
        >>> obs[0] == obs[1], infos["task_id"][0] == infos["task_id"][1]  # doctest: +SKIP
        (True, True)
    """
    if isinstance(num_envs, bool) or not isinstance(num_envs, int) or num_envs < 1:
        raise ValueError(f"num_envs must be an int >= 1, got {num_envs!r}")
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}; use one of {MODES}")
    step_timeout = check_timeout(step_timeout)
    if step_timeout is not None and mode == "sync":
        raise ValueError(
            f"step_timeout={step_timeout} needs mode='async' or 'ray': a sync sub-env runs in "
            "this process and a hung call cannot be pre-empted"
        )
    _check_gymnasium()
    factory = EnvFactory(env_id, wrappers, env_kwargs)
    fns = [_IndexedEnvFactory(factory, i) for i in range(num_envs)]
    kwargs = dict(vector_kwargs or {})
    if mode == "ray":
        from agent_gym.ray_vector import RayVectorEnv

        return RayVectorEnv(fns, step_timeout=step_timeout, **kwargs)
    if mode == "async":
        from agent_gym.async_vector import SubprocVectorEnv

        kwargs.setdefault("shared_memory", False)
        return SubprocVectorEnv(
            fns, step_timeout=step_timeout, autoreset_mode=AutoresetMode.DISABLED, **kwargs
        )
    return _SyncVectorEnv(fns, autoreset_mode=AutoresetMode.DISABLED, **kwargs)


@functools.cache
def _check_gymnasium() -> None:
    gym_compat.check_internals()


# --- argument checks shared by the three backends ---------------------------------------------


def check_actions(actions: Any, num_envs: int) -> list[Any]:
    """Return ``actions`` as a list after checking there is one per sub-env.

    Raises:
        TypeError: ``actions`` is a string, a mapping or has no length.
        ValueError: ``len(actions) != num_envs``.
    """
    if isinstance(actions, (str, bytes, Mapping)) or not hasattr(actions, "__len__"):
        raise TypeError(
            f"actions must be a sequence of {num_envs} actions, one per sub-env (None: do not "
            f"step it), got {type(actions).__name__}: {actions!r:.80}"
        )
    if len(actions) != num_envs:
        raise ValueError(
            f"expected {num_envs} actions (one per sub-env, None to skip one), got "
            f"{len(actions)}; nothing was sent"
        )
    return list(actions)


def per_env_values(values: Any, num_envs: int) -> list[Any]:
    """``set_attr``'s values as a list of one per sub-env (one value is given to every one).

    Raises:
        ValueError: A list or tuple whose length is not ``num_envs``.
    """
    if not isinstance(values, (list, tuple)):
        return [values] * num_envs
    if len(values) != num_envs:
        raise ValueError(f"expected {num_envs} values (one per sub-env), got {len(values)}")
    return list(values)


def check_index(index: Any, num_envs: int) -> int:
    """Return ``index`` as an int after checking it names a sub-env."""
    if isinstance(index, bool) or not isinstance(index, int):
        try:
            index = int(index.__index__())  # numpy integers
        except (AttributeError, TypeError):
            raise TypeError(
                f"index must be an int, got {type(index).__name__}: {index!r:.80}"
            ) from None
    if not 0 <= index < num_envs:
        raise IndexError(f"index must be in [0, {num_envs}), got {index}")
    return index


def check_call_name(name: Any) -> str:
    """Return ``name`` after checking it is an attribute name that ``call_at`` may use."""
    if not isinstance(name, str):
        raise TypeError(f"name must be a str, got {type(name).__name__}: {name!r:.80}")
    if name in gym_compat.RESERVED_CALL_NAMES:
        raise ValueError(f"call_at cannot call {name!r}; use the vector env's own {name}()")
    return name


def check_timeout(value: Any) -> float | None:
    """Return ``step_timeout`` as a float (or None) after checking it is positive and finite."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"step_timeout must be a number of seconds or None, got {value!r}")
    if not (value > 0 and math.isfinite(value)):
        raise ValueError(f"step_timeout must be > 0 seconds (or None), got {value!r}")
    return float(value)


def worker_error(index: int, error: BaseException, trace: str = "") -> EnvWorkerError:
    """An :class:`EnvWorkerError` for ``error`` raised by sub-env ``index``."""
    if isinstance(error, EnvWorkerError):
        message = str(error)  # already names the index (raised by _NameErrors in the worker)
    else:
        message = f"sub-env {index} raised {type(error).__name__}: {error}"
    if trace:
        message += f"\n\nTraceback in the worker:\n{trace}"
    return EnvWorkerError(index, message)


def combine_errors(errors: dict[int, str]) -> EnvWorkerError:
    """One :class:`EnvWorkerError` for several failed sub-envs (index -> message)."""
    indices = sorted(errors)
    message = errors[indices[0]]
    if len(indices) > 1:
        message += f"\n\n(sub-envs {', '.join(map(str, indices[1:]))} failed too)"
    return EnvWorkerError(indices[0], message, indices)


# --- sync backend ----------------------------------------------------------------------------


class _NameErrors(gym.Wrapper):
    """Re-raise a sub-env's exception as :class:`EnvWorkerError` naming its index."""

    def __init__(self, env: gym.Env, index: int) -> None:
        super().__init__(env)
        self._vector_index = index  # not "index": call_at looks names up through this wrapper

    def reset(self, **kwargs: Any):
        try:
            return self.env.reset(**kwargs)
        except Exception as e:
            raise worker_error(self._vector_index, e) from e

    def step(self, action: Any):
        try:
            return self.env.step(action)
        except Exception as e:
            raise worker_error(self._vector_index, e) from e


class _IndexedEnvFactory:
    """Builds sub-env ``index``; a failure to build it is an :class:`EnvWorkerError`."""

    def __init__(self, factory: EnvFactory, index: int) -> None:
        self.factory, self.index = factory, index

    def __call__(self) -> gym.Env:
        try:
            env = self.factory()
        except Exception as e:
            raise EnvWorkerError(
                self.index, f"sub-env {self.index} could not be built: {type(e).__name__}: {e}"
            ) from e
        return _NameErrors(env, self.index)


class _SyncVectorEnv(SyncVectorEnv):
    """``SyncVectorEnv`` with the shared stepping API; closes itself when a sub-env raises."""

    def reset(self, *, seed: Any = None, options: dict[str, Any] | None = None):
        self._assert_open()
        options = dict(options) if options is not None else None  # Gymnasium pops reset_mask
        try:
            return super().reset(seed=seed, options=options)
        except EnvWorkerError:
            self.close()
            raise

    def step(self, actions: Any):
        self._assert_open()
        actions = check_actions(actions, self.num_envs)
        gym_compat.allow_stepping_finished(self)  # finished sub-envs hold (HoldFinished)
        try:
            return super().step(actions)
        except EnvWorkerError:
            self.close()
            raise

    def call_at(self, index: int, name: str, *args: Any, **kwargs: Any) -> Any:
        """Call (or read) attribute ``name`` of sub-env ``index`` only, through its wrappers."""
        self._assert_open()
        index, name = check_index(index, self.num_envs), check_call_name(name)
        try:
            attr = self.envs[index].get_wrapper_attr(name)
            return attr(*args, **kwargs) if callable(attr) else attr
        except Exception as e:
            self.close()
            raise worker_error(index, e) from e

    def _assert_open(self) -> None:
        if self.closed:
            raise gym.error.ClosedEnvironmentError("this vector env is closed")
