"""``make_vec(..., mode="async")``: each sub-env in a subprocess, with no silent failure modes.

:class:`SubprocVectorEnv` is Gymnasium's :class:`~gymnasium.vector.AsyncVectorEnv` with the
stepping API shared by every :func:`~agent_gym.vector.make_vec` backend, and with the ways
Gymnasium's version can fail quietly closed off:

* a wrong number of actions is refused before any is sent (Gymnasium sends the first ones,
  then raises from ``zip``, and the next step returns the stale replies);
* a sub-env whose constructor raises in its worker is an
  :class:`~agent_gym.vector.EnvWorkerError` naming the index and the cause (Gymnasium: a
  bare ``BrokenPipeError``);
* a worker error names its sub-env and carries the worker's traceback, and stops every worker
  (Gymnasium logs the index and keeps the others running with the failed pipe gone);
* a worker that dies without reporting (killed, crashed) is named instead of waited for;
* with ``step_timeout``, a sub-env that does not answer is named and every worker stopped
  (Gymnasium's ``timeout`` raises but leaves the late replies in the pipes).

All Gymnasium internals it touches go through :mod:`agent_gym.gym_compat`.
"""

from __future__ import annotations

import contextlib
import multiprocessing.connection
import pickle
import time
import warnings
from collections.abc import Iterable, Sequence
from typing import Any

from gymnasium.error import AlreadyPendingCallError
from gymnasium.vector import AsyncVectorEnv

from agent_gym import gym_compat
from agent_gym.vector import (
    EnvWorkerError,
    check_actions,
    check_call_name,
    check_index,
    check_timeout,
    combine_errors,
    per_env_values,
    worker_error,
)

# Seconds to wait for a failed worker's error on the queue (it is sent just before the reply,
# by a feeder thread), and for a terminated worker to exit before it is killed.
_ERROR_GRACE_S = 5.0
_TERMINATE_GRACE_S = 5.0

_PIPE_ERRORS = (EOFError, BrokenPipeError, ConnectionResetError)


class SubprocVectorEnv(AsyncVectorEnv):
    """An ``AsyncVectorEnv`` whose failures name the sub-env and never leave it half-alive.

    Args:
        env_fns: One ``() -> env`` per sub-env (pickled to its worker).
        step_timeout: Seconds to wait for the workers to answer any call; ``None``: forever.
        **kwargs: For :class:`~gymnasium.vector.AsyncVectorEnv` (``shared_memory``,
            ``context``, ``autoreset_mode``, ...).
    """

    def __init__(
        self, env_fns: Sequence[Any], *, step_timeout: float | None = None, **kwargs: Any
    ) -> None:
        self.step_timeout = check_timeout(step_timeout)
        kwargs.setdefault("worker", gym_compat.reporting_worker)
        try:
            super().__init__(env_fns, **kwargs)
        except _PIPE_ERRORS as e:  # a worker died while building its env (os._exit, a crash)
            raise self._dead_worker() from e

    # --- the calls ---------------------------------------------------------------------------

    def reset_async(self, seed: Any = None, options: dict[str, Any] | None = None) -> None:
        """Send ``reset`` to the workers (those in ``options['reset_mask']``, if given)."""
        options = dict(options) if options is not None else None  # Gymnasium pops reset_mask
        with self._pipe_errors_named():
            super().reset_async(seed=seed, options=options)

    def reset_wait(self, timeout: float | None = None, **kwargs: Any):
        """Collect the resets; ``timeout`` (default ``step_timeout``) as for :meth:`step_wait`."""
        self._await_pending("reset", timeout)
        with self._pipe_errors_named():
            return super().reset_wait(**kwargs)

    def step_async(self, actions: Any) -> None:
        """Check there is one action per sub-env, then send them (``None``: no step)."""
        actions = check_actions(actions, self.num_envs)  # before anything is sent
        _check_picklable(actions, "action")
        with self._pipe_errors_named():
            super().step_async(actions)

    def step_wait(self, timeout: float | None = None):
        """Collect the steps; past ``timeout`` (default ``step_timeout``) close and raise."""
        self._await_pending("step", timeout)
        with self._pipe_errors_named():
            return super().step_wait()

    def call_async(self, name: str, *args: Any, **kwargs: Any) -> None:
        """Send a call of attribute ``name`` to every worker."""
        check_call_name(name)
        with self._pipe_errors_named():
            super().call_async(name, *args, **kwargs)

    def call_wait(self, timeout: float | None = None) -> tuple[Any, ...]:
        """Collect the calls' results in env order."""
        self._await_pending("call", timeout)
        with self._pipe_errors_named():
            return super().call_wait()

    def call_at(self, index: int, name: str, *args: Any, **kwargs: Any) -> Any:
        """Call (or read) attribute ``name`` of sub-env ``index``; only its worker is asked."""
        self._assert_is_running()
        index, name = check_index(index, self.num_envs), check_call_name(name)
        self._refuse_if_pending("call_at")
        pipe = self.parent_pipes[index]
        with self._pipe_errors_named():
            gym_compat.send_call(pipe, name, args, kwargs)
            self._await_replies("call_at", [index], None)
            result, ok = gym_compat.recv_reply(pipe)
        if not ok:
            self._raise_if_errors([i != index for i in range(self.num_envs)])
        return result

    def set_attr(self, name: str, values: Any) -> None:
        """Set ``name`` on every sub-env (one value for all, or a list with one per env)."""
        self._assert_is_running()
        values = per_env_values(values, self.num_envs)
        self._refuse_if_pending("set_attr")
        _check_picklable(values, "value")
        with self._pipe_errors_named():
            for pipe, value in zip(self.parent_pipes, values):
                gym_compat.send_setattr(pipe, name, value)
            self._await_replies("set_attr", range(self.num_envs), None)
            successes = [gym_compat.recv_reply(pipe)[1] for pipe in self.parent_pipes]
        self._raise_if_errors(successes)

    # --- failures ----------------------------------------------------------------------------

    def _raise_if_errors(self, successes: Iterable[bool]) -> None:
        successes = list(successes)
        if all(successes):
            return
        failed = [i for i, ok in enumerate(successes) if not ok]
        reported = {}
        for _ in failed:
            item = gym_compat.take_worker_error(self, timeout=_ERROR_GRACE_S)
            if item is not None:
                index, _, value, trace = item
                reported[index] = str(worker_error(index, value, trace))
        messages = {
            i: reported.get(
                i, f"sub-env {i} failed and its error could not be sent back; see its stderr"
            )
            for i in failed
        }
        gym_compat.clear_pending_call(self)  # every reply was read
        self.close(terminate=True)
        raise combine_errors(messages)

    def _await_pending(self, call: str, timeout: float | None) -> None:
        # Only when that call is pending: otherwise Gymnasium's own method raises the error.
        if gym_compat.pending_call(self) == call and not self.closed:
            self._await_replies(call, range(self.num_envs), timeout)

    def _await_replies(self, call: str, indices: Iterable[int], timeout: float | None) -> None:
        """Return once every worker in ``indices`` has answered; else close and name the rest."""
        limit = timeout if timeout is not None else self.step_timeout
        if limit is None:
            return
        waiting = _wait_all({self.parent_pipes[i]: i for i in indices}, limit)
        if not waiting:
            return
        hung = sorted(waiting.values())
        gym_compat.clear_pending_call(self)  # the late replies are abandoned with the workers
        self.close(terminate=True)
        names = ", ".join(map(str, hung))
        raise EnvWorkerError(
            hung[0],
            f"sub-env{'s' if len(hung) > 1 else ''} {names} did not answer `{call}` within "
            f"{limit:g} s (step_timeout); the vector env is closed",
            hung,
        )

    def _refuse_if_pending(self, call: str) -> None:
        pending = gym_compat.pending_call(self)
        if pending is not None:
            raise AlreadyPendingCallError(
                f"Calling `{call}` while waiting for a pending call to `{pending}` to complete.",
                pending,
            )

    @contextlib.contextmanager
    def _pipe_errors_named(self):
        try:
            yield
        except _PIPE_ERRORS as e:
            raise self._dead_worker() from e

    def _dead_worker(self) -> EnvWorkerError:
        sentinels = {p.sentinel: i for i, p in enumerate(self.processes)}
        ended = multiprocessing.connection.wait(list(sentinels), timeout=2.0)
        dead = sorted(sentinels[s] for s in ended)
        for i in dead:  # its pipes close a moment before it can be reaped
            self.processes[i].join(timeout=1.0)
        codes = {i: self.processes[i].exitcode for i in dead}
        gym_compat.clear_pending_call(self)
        self.close(terminate=True)
        if not dead:
            return EnvWorkerError(-1, "lost the connection to a worker process of the vector env")
        return combine_errors(
            {
                i: f"the worker process of sub-env {i} died (exit code {codes[i]}) without "
                "reporting an error; see its stderr for the cause"
                for i in dead
            }
        )

    # --- closing -----------------------------------------------------------------------------

    def close_extras(self, timeout: float | None = None, terminate: bool = False) -> None:
        """Stop the workers: ask them to close their envs, or terminate them.

        A pending call is waited for first (up to ``timeout``, else ``step_timeout``) and its
        replies discarded; a worker that does not answer, or has failed, is terminated (then
        killed if it ignores that).
        """
        limit = timeout if timeout is not None else self.step_timeout
        pending = gym_compat.pending_call(self)
        if pending is not None and not terminate:
            warnings.warn(
                f"Calling `close` while waiting for a pending call to `{pending}`: waiting for "
                "its replies, which are discarded",
                UserWarning,
                stacklevel=3,
            )
            terminate = not self._drain_replies(limit)
        gym_compat.clear_pending_call(self)
        pipes = [p for p in self.parent_pipes if p is not None and not p.closed]
        if not terminate:
            try:
                for pipe in pipes:
                    gym_compat.send_close(pipe)
                for pipe in pipes:
                    gym_compat.recv_reply(pipe)
            except (*_PIPE_ERRORS, OSError):
                terminate = True
        if not terminate:
            for process in self.processes:  # each closes its env, then exits
                process.join(limit)
        self._stop_workers()
        for pipe in pipes:
            pipe.close()

    def _drain_replies(self, limit: float | None) -> bool:
        """Read and drop the replies to the pending call; False if any is missing or failed."""
        pipes = [p for p in self.parent_pipes if p is not None and not p.closed]
        if _wait_all(dict.fromkeys(pipes), limit):
            return False
        try:
            return all(gym_compat.recv_reply(pipe)[1] for pipe in pipes)
        except (*_PIPE_ERRORS, OSError):
            return False

    def _stop_workers(self) -> None:
        alive = [p for p in self.processes if p.is_alive()]
        for process in alive:
            process.terminate()
        for process in alive:
            process.join(_TERMINATE_GRACE_S)
            if process.is_alive():  # ignores SIGTERM (or is stuck in the kernel)
                process.kill()
                process.join()


def _wait_all(waiting: dict[Any, Any], limit: float | None) -> dict[Any, Any]:
    """Wait until every connection in ``waiting`` is readable; return those that are not."""
    waiting = dict(waiting)
    deadline = None if limit is None else time.monotonic() + limit
    while waiting:
        left = None if deadline is None else deadline - time.monotonic()
        if left is not None and left <= 0:
            break
        for conn in multiprocessing.connection.wait(list(waiting), timeout=left):
            del waiting[conn]
    return waiting


def _check_picklable(items: Sequence[Any], what: str) -> None:
    """Refuse a batch whose item ``i`` cannot be sent, before item 0 is (text always can)."""
    for i, item in enumerate(items):
        if item is None or isinstance(item, (str, int, float)):
            continue
        try:
            pickle.dumps(item)
        except Exception as e:
            raise TypeError(
                f"the {what} for sub-env {i} cannot be sent to its worker process "
                f"({type(e).__name__}: {e}); nothing was sent"
            ) from e
