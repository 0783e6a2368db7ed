"""Every use of a Gymnasium internal by :mod:`agent_gym.vector`, in one place.

The vector backends build on Gymnasium's own ``SyncVectorEnv`` and ``AsyncVectorEnv`` and need
a few things Gymnasium does not document as public:

* ``SyncVectorEnv._autoreset_envs``: the sync backend asserts, with autoreset ``DISABLED``, that
  no finished env is stepped; :func:`allow_stepping_finished` clears the flags because
  finished sub-envs hold their final state (:class:`agent_gym.vector.HoldFinished`).
* ``AsyncVectorEnv._state`` (an ``AsyncState``): which call is pending.
* ``AsyncVectorEnv.error_queue`` and the worker protocol: commands ``(name, data)`` sent on
  ``parent_pipes[i]``, replies ``(payload, success)``, and a failing worker's
  ``(index, type, value, traceback)`` on the error queue before it replies ``(None, False)``.
* ``gymnasium.vector.async_vector_env._async_worker``, which :func:`reporting_worker`
  delegates to after building the env itself (so that a construction failure is reported
  like any other worker error instead of closing the pipe).

Checked against Gymnasium :data:`CHECKED_VERSIONS`. :func:`check_internals` (run once by
``make_vec``, and by the test suite) fails with a clear message on a version where any of them
changed. Gymnasium 1.0 has none of ``AutoresetMode``/``reset_mask``, hence the floor 1.1.
"""

from __future__ import annotations

import inspect
import queue
import traceback
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any

import gymnasium as gym
from gymnasium.vector import AsyncVectorEnv, SyncVectorEnv

#: Gymnasium releases these internals were read and tested against.
CHECKED_VERSIONS: tuple[str, ...] = ("1.1.0", "1.1.1", "1.2.0", "1.2.3", "1.3.0", "1.4.0")

try:  # re-exported: importing it from here gives the clear message on Gymnasium 1.0
    from gymnasium.vector import AutoresetMode
except ImportError as e:
    raise ImportError(
        f"agent_gym's vector envs need gymnasium>={CHECKED_VERSIONS[0]} (AutoresetMode, "
        f"reset_mask); gymnasium {gym.__version__} is installed: "
        f"pip install 'gymnasium>={CHECKED_VERSIONS[0]},<2'"
    ) from e

try:
    from gymnasium.vector.async_vector_env import AsyncState, _async_worker
except ImportError:  # reported by check_internals() with the installed version
    AsyncState = _async_worker = None

#: Names the worker refuses to ``_call`` (it raises, which ends the worker).
RESERVED_CALL_NAMES: tuple[str, ...] = ("reset", "step", "close", "_setattr", "_check_spaces")

_WORKER_PARAMS = ("index", "env_fn", "pipe", "parent_pipe", "shared_memory", "error_queue")
_WORKER_COMMANDS = ("reset", "reset-noop", "step", "close", "_call", "_setattr")
_STATES = {
    "DEFAULT": "default",
    "WAITING_RESET": "reset",
    "WAITING_STEP": "step",
    "WAITING_CALL": "call",
}


class GymnasiumInternalsError(RuntimeError):
    """The installed Gymnasium differs from the versions :mod:`agent_gym.gym_compat` knows."""


def check_internals() -> None:
    """Fail loudly if any Gymnasium internal used here is missing or different.

    Checks the names each overridden method actually reads (its bytecode's ``co_names``), the
    ``AsyncState`` members, the worker's parameters and commands, and ``AutoresetMode``.

    Raises:
        GymnasiumInternalsError: Naming what changed and the installed version.
    """
    problems = []
    if AsyncState is None or _async_worker is None:
        raise _internals_error(
            ["gymnasium.vector.async_vector_env has no AsyncState/_async_worker"]
        )
    if not hasattr(AutoresetMode, "DISABLED"):
        problems.append("AutoresetMode.DISABLED is missing")
    states = {s.name: s.value for s in AsyncState}
    if any(states.get(name) != value for name, value in _STATES.items()):
        problems.append(f"AsyncState is {states}, expected at least {_STATES}")
    params = tuple(inspect.signature(_async_worker).parameters)[: len(_WORKER_PARAMS)]
    if params != _WORKER_PARAMS:
        problems.append(f"_async_worker starts with parameters {params}, expected {_WORKER_PARAMS}")
    consts = set(_async_worker.__code__.co_consts)
    missing = [c for c in _WORKER_COMMANDS if c not in consts]
    if missing:
        problems.append(f"_async_worker no longer handles the commands {missing}")
    for cls, method, names in (
        (SyncVectorEnv, "step", ("_autoreset_envs",)),
        (AsyncVectorEnv, "step_async", ("_state", "parent_pipes")),
        (AsyncVectorEnv, "_raise_if_errors", ("error_queue",)),
        (AsyncVectorEnv, "__init__", ("error_queue", "processes", "parent_pipes")),
    ):
        used = getattr(cls, method).__code__.co_names
        absent = [n for n in names if n not in used]
        if absent:
            problems.append(f"{cls.__name__}.{method} no longer uses {absent}")
    if "worker" not in inspect.signature(AsyncVectorEnv.__init__).parameters:
        problems.append("AsyncVectorEnv.__init__ has no `worker` parameter")
    if problems:
        raise _internals_error(problems)


def _internals_error(problems: list[str]) -> GymnasiumInternalsError:
    return GymnasiumInternalsError(
        f"agent_gym.vector relies on Gymnasium internals checked against {CHECKED_VERSIONS}, "
        f"and gymnasium {gym.__version__} differs: {'; '.join(problems)}. Install a checked "
        f"version (e.g. pip install 'gymnasium=={CHECKED_VERSIONS[-1]}') or update "
        "agent_gym/gym_compat.py."
    )


# --- SyncVectorEnv ---------------------------------------------------------------------------


def allow_stepping_finished(venv: SyncVectorEnv) -> None:
    """Clear the flags behind ``DISABLED`` mode's "stepped a finished env" assertion."""
    venv._autoreset_envs[:] = False


# --- AsyncVectorEnv --------------------------------------------------------------------------


def pending_call(venv: AsyncVectorEnv) -> str | None:
    """The call (``"reset"``, ``"step"``, ``"call"``) the workers are answering, or None."""
    state = venv._state.value
    return None if state == _STATES["DEFAULT"] else state


def clear_pending_call(venv: AsyncVectorEnv) -> None:
    """Mark the vector env as waiting for nothing (after its replies were read or abandoned)."""
    venv._state = AsyncState.DEFAULT


def take_worker_error(venv: AsyncVectorEnv, timeout: float) -> tuple[int, type, Any, str] | None:
    """One failed worker's ``(index, exception type, exception, traceback)``, or None.

    None when nothing arrives within ``timeout`` seconds (an exception that could not be
    pickled never does).
    """
    try:
        return venv.error_queue.get(timeout=timeout)
    except queue.Empty:
        return None


def send_call(pipe: Connection, name: str, args: tuple, kwargs: dict) -> None:
    """Ask one worker to call (or read) attribute ``name`` of its env."""
    pipe.send(("_call", (name, args, kwargs)))


def send_setattr(pipe: Connection, name: str, value: Any) -> None:
    """Ask one worker to set attribute ``name`` of its env."""
    pipe.send(("_setattr", (name, value)))


def send_close(pipe: Connection) -> None:
    """Ask one worker to close its env and exit."""
    pipe.send(("close", None))


def recv_reply(pipe: Connection) -> tuple[Any, bool]:
    """A worker's reply: ``(payload, success)``."""
    payload, success = pipe.recv()
    return payload, bool(success)


def reporting_worker(
    index: int,
    env_fn: Callable[[], gym.Env],
    pipe: Connection,
    parent_pipe: Connection,
    shared_memory: Any,
    error_queue: Any,
    *rest: Any,
) -> None:
    """Gymnasium's worker, except that a failure to build the env is reported, not fatal.

    Gymnasium's worker builds the env before its error handling starts, so a constructor that
    raises kills the process and the parent only sees a broken pipe. Here the error goes to
    the error queue and the first command is answered ``(None, False)``, as for any other
    worker error; then the worker exits. ``rest`` is whatever else this Gymnasium version
    passes (``autoreset_mode``, and from 1.4 a semaphore).
    """
    try:
        env = env_fn()
    except Exception as e:
        parent_pipe.close()
        error_queue.put((index, type(e), e, traceback.format_exc()))
        try:
            pipe.recv()  # wait for the first command so that the reply answers it
            pipe.send((None, False))
        except (EOFError, OSError):
            pass  # the parent has gone
        return
    _async_worker(index, lambda: env, pipe, parent_pipe, shared_memory, error_queue, *rest)
