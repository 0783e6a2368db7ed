"""Vector envs for group rollouts: Gymnasium's own, with autoreset off and clear worker errors.

GRPO/GiGPO-style learners run ``G`` copies of each task side by side and compare them, so
every member of a group must start in the identical state. :func:`group_seeds` builds the
reset seeds (``[s0]*G + [s1]*G + ...``) and :func:`make_vec` builds the vector env::

    venv = make_vec("AgentR1/ALFWorld-v0", num_envs=8, mode="async",
                    wrappers=[ParseAction, ChatPrompt])
    obs, infos = venv.reset(seed=group_seeds(0, num_tasks=2, group_size=4))

Autoreset is ``DISABLED``: a finished env stays finished until the learner resets it with
``venv.reset(seed=..., options={"reset_mask": mask})``, which keeps episodes and groups
aligned (no hidden reset observations, no ``final_obs`` bookkeeping).
"""

from __future__ import annotations

import contextlib
import hashlib
import multiprocessing.connection
from collections.abc import Callable, Sequence
from typing import Any, Literal

import gymnasium as gym
from gymnasium.envs.registration import EnvSpec
from gymnasium.vector import AsyncVectorEnv, AutoresetMode, SyncVectorEnv, VectorEnv
from gymnasium.vector.async_vector_env import AsyncState

#: The backends :func:`make_vec` offers.
MODES: tuple[str, ...] = ("sync", "async", "ray")

Wrapper = Callable[[gym.Env], gym.Env]


class EnvWorkerError(RuntimeError):
    """A sub-env of a vector env raised (or its worker died); :attr:`index` says which.

    The vector env is closed when this is raised: build a new one to continue.
    """

    def __init__(self, index: int, message: str) -> None:
        super().__init__(message)
        self.index = index

    def __reduce__(self):
        return (type(self), (self.index, self.args[0]))


class EnvFactory:
    """A picklable ``() -> env``: ``gym.make(env_id, **env_kwargs)``, then each wrapper in order.

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
    """After ``terminated`` or ``truncated``, further steps are no-ops until ``reset``.

    A vector env steps every sub-env at once, but the members of a group finish at different
    times. Rather than restarting finished envs (autoreset) or refusing the batch (Gymnasium's
    sync backend asserts), a finished sub-env ignores its action and returns its final
    observation, reward 0 and its final flags and info again. The learner masks those rows out
    by the flags it has already seen.
    """

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        self._final: tuple | None = None

    def reset(self, **kwargs: Any):
        """Reset the env; it plays again."""
        self._final = None
        return self.env.reset(**kwargs)

    def step(self, action: Any):
        """Step the env, or repeat its final step once it has finished."""
        if self._final is not None:
            obs, terminated, truncated, info = self._final
            return obs, 0.0, terminated, truncated, info
        obs, reward, terminated, truncated, info = self.env.step(action)
        if terminated or truncated:
            self._final = (obs, terminated, truncated, info)
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
    vector_kwargs: dict[str, Any] | None = None,
    **env_kwargs: Any,
) -> VectorEnv:
    """Build ``num_envs`` copies of an env as a Gymnasium ``VectorEnv`` with autoreset off.

    Observations come back as a tuple of per-env observations (strings, or chat-message lists
    under ``ChatPrompt``); infos are Gymnasium's dict of arrays with ``_key`` masks. A sub-env
    that raises surfaces as :class:`EnvWorkerError` naming its index (the vector env is closed
    then); an async worker that dies is reported the same way instead of hanging.

    Args:
        env_id: A registered id (e.g. ``"AgentR1/WebShop-v0"``) or an ``EnvSpec``.
        num_envs: Number of sub-envs, >= 1.
        mode: ``"sync"`` (one process, :class:`~gymnasium.vector.SyncVectorEnv`), ``"async"``
            (a subprocess per env, :class:`~gymnasium.vector.AsyncVectorEnv` with
            ``shared_memory=False``, since text cannot live in shared arrays) or ``"ray"``
            (a Ray actor per env, :class:`agent_gym.ray_vector.RayVectorEnv`; needs the
            ``[ray]`` extra).
        wrappers: Callables ``env -> env`` applied to each sub-env, innermost first.
        vector_kwargs: Extra keyword arguments for the vector class: e.g. ``context="spawn"``
            for async (the default ``fork`` is unsafe once the parent runs threads, as torch
            and Ray do), or ``actor_options``/``ray_init`` for Ray.
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
    factory = EnvFactory(env_id, wrappers, env_kwargs)
    kwargs = dict(vector_kwargs or {})
    venv: VectorEnv
    if mode == "ray":
        from agent_gym.ray_vector import RayVectorEnv

        venv = RayVectorEnv([factory] * num_envs, **kwargs)
    elif mode == "sync":
        fns = [_IndexedEnvFactory(factory, i) for i in range(num_envs)]
        venv = _SyncVectorEnv(fns, autoreset_mode=AutoresetMode.DISABLED, **kwargs)
    else:
        kwargs.setdefault("shared_memory", False)
        venv = _AsyncVectorEnv(
            [factory] * num_envs, autoreset_mode=AutoresetMode.DISABLED, **kwargs
        )
    # Every sub-env is wrapped in HoldFinished: callers may step the whole batch until all
    # episodes end, with no reset of the finished ones (see algos.env_slots).
    venv.holds_finished = True
    return venv


class _NameErrors(gym.Wrapper):
    """Re-raise a sub-env's exception as :class:`EnvWorkerError` naming its index (sync mode)."""

    def __init__(self, env: gym.Env, index: int) -> None:
        super().__init__(env)
        self.index = index

    def reset(self, **kwargs: Any):
        try:
            return self.env.reset(**kwargs)
        except Exception as e:
            raise _worker_error(self.index, e) from e

    def step(self, action: Any):
        try:
            return self.env.step(action)
        except Exception as e:
            raise _worker_error(self.index, e) from e


def _worker_error(index: int, error: BaseException, trace: str = "") -> EnvWorkerError:
    message = f"sub-env {index} raised {type(error).__name__}: {error}"
    if trace:
        message += f"\n\nTraceback in the worker:\n{trace}"
    return EnvWorkerError(index, message)


class _IndexedEnvFactory:
    def __init__(self, factory: EnvFactory, index: int) -> None:
        self.factory, self.index = factory, index

    def __call__(self) -> gym.Env:
        return _NameErrors(self.factory(), self.index)


class _SyncVectorEnv(SyncVectorEnv):
    """``SyncVectorEnv`` that refuses calls once closed and closes itself when a sub-env raises."""

    def reset(self, *args: Any, **kwargs: Any):
        self._assert_open()
        try:
            return super().reset(*args, **kwargs)
        except EnvWorkerError:
            self.close()
            raise

    def step(self, actions: Any):
        self._assert_open()
        # Finished sub-envs hold their final state (HoldFinished), so stepping the whole batch
        # is allowed; Gymnasium's DISABLED mode would assert here instead.
        self._autoreset_envs[:] = False
        try:
            return super().step(actions)
        except EnvWorkerError:
            self.close()
            raise

    def _assert_open(self) -> None:
        if self.closed:
            raise gym.error.ClosedEnvironmentError("this vector env is closed")


class _AsyncVectorEnv(AsyncVectorEnv):
    """``AsyncVectorEnv`` whose worker errors name the env and never leave it half-alive.

    Gymnasium re-raises a worker's exception without saying which env it came from (that
    goes to the log) and keeps the other workers running with the failed one's pipe gone, so
    the next call fails obscurely. Here the error names the index and carries the worker's
    traceback, and all workers are stopped. A worker that dies without reporting (killed,
    crashed) closes its pipe; the ``EOFError`` that follows is reported the same way.
    """

    def _raise_if_errors(self, successes: Sequence[bool]) -> None:
        if all(successes):
            return
        failures = [self.error_queue.get() for _ in range(len(successes) - sum(successes))]
        failures.sort(key=lambda failure: failure[0])  # report the lowest index, every run
        self._state = AsyncState.DEFAULT  # nothing left to wait for; lets close() skip waiting
        self.close(terminate=True)
        index, _, value, trace = failures[0]
        error = _worker_error(index, value, trace)
        if len(failures) > 1:
            others = ", ".join(str(f[0]) for f in failures[1:])
            error = EnvWorkerError(index, f"{error} (sub-envs {others} failed too)")
        raise error

    # Each public call is async + wait; a dead worker shows up in either half as a pipe error.
    def reset_async(self, *args: Any, **kwargs: Any) -> None:
        with self._pipe_errors_named():
            super().reset_async(*args, **kwargs)

    def reset_wait(self, *args: Any, **kwargs: Any):
        with self._pipe_errors_named():
            return super().reset_wait(*args, **kwargs)

    def step_async(self, *args: Any, **kwargs: Any) -> None:
        with self._pipe_errors_named():
            super().step_async(*args, **kwargs)

    def step_wait(self, *args: Any, **kwargs: Any):
        with self._pipe_errors_named():
            return super().step_wait(*args, **kwargs)

    @contextlib.contextmanager
    def _pipe_errors_named(self):
        try:
            yield
        except (EOFError, BrokenPipeError, ConnectionResetError) as e:
            raise self._dead_worker() from e

    def _dead_worker(self) -> EnvWorkerError:
        sentinels = {p.sentinel: i for i, p in enumerate(self.processes)}
        ended = multiprocessing.connection.wait(list(sentinels), timeout=2.0)
        dead = sorted(sentinels[s] for s in ended)
        for i in dead:  # its pipes close a moment before it can be reaped
            self.processes[i].join(timeout=1.0)
        codes = {i: self.processes[i].exitcode for i in dead}
        self._state = AsyncState.DEFAULT
        self.close(terminate=True)
        if not dead:
            return EnvWorkerError(-1, "lost the connection to a worker process of the vector env")
        return EnvWorkerError(
            dead[0],
            f"the worker process of sub-env {dead[0]} died (exit code {codes[dead[0]]}) "
            "without reporting an error; see its stderr for the cause",
        )
