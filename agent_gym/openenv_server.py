"""Serve any Gymnasium text env over the OpenEnv protocol (``agent-gym serve-env``).

`OpenEnv <https://github.com/meta-pytorch/OpenEnv>`_ (PyPI ``openenv-core``) is the
Gymnasium-style protocol TRL's ``GRPOTrainer`` and other trainers use to reach environments
over the network. This module adapts a ``gym.make``-able text env to OpenEnv's
:class:`~openenv.core.env_server.Environment` and serves it with OpenEnv's own
:class:`~openenv.core.env_server.HTTPEnvServer`, which provides:

* ``/ws``: the WebSocket session protocol of OpenEnv's ``EnvClient`` (one env per connection;
  messages ``{"type": "reset", "data": {...}}``, ``{"type": "step", "data": {"command": ...}}``,
  ``{"type": "state"}``, ``{"type": "close"}``),
* ``/reset``, ``/step``, ``/state``: OpenEnv's *stateless* HTTP endpoints (a fresh env per
  request, so ``/step`` there can only report that the env was never reset),
* ``/health``, ``/schema``, ``/metadata``, the session cap and the idle-session reaper.

OpenEnv has no stateful HTTP session API, so for agents that speak plain HTTP (``curl``) this
module adds ``/sessions`` routes that share the server's session pool, cap and idle timeout:
``POST /sessions`` -> ``{"session_id"}``; ``POST /sessions/{id}/reset`` with
``{"seed", "options"}``; ``POST /sessions/{id}/step`` with ``{"action": {"command": ...}}``;
``GET /sessions/{id}`` (step count, times); ``DELETE /sessions/{id}``. ``GET /agent_gym/spec`` describes the served env (id, step limit,
tools, prompt templates) so a remote client can rebuild the same prompts.

Every reset and step answers OpenEnv's observation layout::

    {"observation": {"text": str, "terminated": bool, "truncated": bool, "info": {...}},
     "reward": float, "done": bool}

with the env's whole info dict (``task``, ``anchor_obs``, ``admissible_actions``, ``won``,
``score``, ``data_source``, ...) as JSON.
"""

from __future__ import annotations

import functools
import json
import math
import re
import socket
from collections.abc import Mapping
from dataclasses import asdict
from typing import Any

import gymnasium as gym

try:
    from fastapi import FastAPI, Request
    from fastapi.responses import JSONResponse, Response
    from openenv.core.env_server import (
        Action,
        ConcurrencyConfig,
        Environment,
        HTTPEnvServer,
        Observation,
        SessionCapacityError,
        State,
    )
    from openenv.core.env_server.serialization import deserialize_action, serialize_observation
    from openenv.core.env_server.types import EnvironmentMetadata
    from pydantic import Field, ValidationError
except ImportError as exc:  # pragma: no cover - depends on the install
    raise ImportError(
        "serving envs over OpenEnv needs the openenv extra: pip install 'agent-gym[openenv]'"
    ) from exc

from agent_gym.wrappers.recording import to_jsonable

#: Default longest action, in characters (the action-space limit of agent-gym's envs).
MAX_ACTION_CHARS = 1_000_000
#: JSON spends at most 6 bytes on one character (``\\u00e9``); the rest is the envelope.
_BYTES_PER_CHAR, _ENVELOPE_BYTES = 6, 64 * 1024


class TextAction(Action):
    """An OpenEnv action holding the agent's command text (any string)."""

    command: str = Field(description="the agent's command text; any string is accepted")


class TextObservation(Observation):
    """What a reset or step returns (``reward`` and ``done`` come from OpenEnv's base)."""

    text: str = Field(description="the env's observation text")
    terminated: bool = Field(default=False, description="the task ended")
    truncated: bool = Field(default=False, description="the step limit ended the episode")
    info: dict[str, Any] = Field(default_factory=dict, description="the env's info dict")


class EnvRequestError(ValueError):
    """A request the env cannot serve; ``status_code`` is the HTTP status it maps to."""

    status_code = 400


class ResetFirstError(EnvRequestError):
    """``step`` before ``reset`` (or on OpenEnv's stateless ``/step``, always)."""

    status_code = 409


class ActionTooLongError(EnvRequestError):
    """The action is longer than the server's ``max_action_chars``."""

    status_code = 413


class SessionClosedError(EnvRequestError):
    """The session's env was closed (by ``close`` or the idle timeout)."""

    status_code = 410


def wire_safe(value: Any) -> Any:
    """``value`` as JSON types, with lone surrogates replaced by U+FFFD.

    A Python ``str`` may hold lone surrogates (``chr(0xD800)``); OpenEnv serialises replies with
    pydantic, which cannot encode them, so each becomes U+FFFD (the Unicode replacement
    character) rather than failing the reply.

    Example:
        >>> wire_safe({"obs": "a" + chr(0xD800), "n": 1})
        {'obs': 'a\ufffd', 'n': 1}
    """
    value = to_jsonable(value)
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value)
    if isinstance(value, dict):
        return {_SURROGATE.sub("\ufffd", k): wire_safe(v) for k, v in value.items()}
    if isinstance(value, list):
        return [wire_safe(v) for v in value]
    return value


_SURROGATE = re.compile("[\ud800-\udfff]")


def _check_seed(seed: Any) -> int | None:
    if seed is None or (isinstance(seed, int) and not isinstance(seed, bool) and seed >= 0):
        return seed
    raise EnvRequestError(f"seed must be a non-negative integer or null, got {seed!r:.80}")


class GymTextEnvironment(Environment[TextAction, TextObservation, State]):
    """One session's env: ``gym.make(env_id, **env_kwargs)`` behind OpenEnv's interface.

    Each session gets its own instance (OpenEnv calls the factory once per session), so
    concurrent sessions never share state.

    Args:
        env_id: A registered id (``AgentR1/HotpotQA-v0``) or ``module:Id``.
        env_kwargs: Keyword arguments of ``gym.make``.
        max_action_chars: Longest action accepted, in characters.
    """

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(
        self,
        env_id: str,
        env_kwargs: Mapping[str, Any] | None = None,
        max_action_chars: int = MAX_ACTION_CHARS,
    ) -> None:
        super().__init__()
        self.env_id = env_id
        self.max_action_chars = max_action_chars
        self._env = gym.make(env_id, **dict(env_kwargs or {}))
        self._state = State(episode_id=None, step_count=0)
        self._reset_done = False
        self._closed = False

    def _observation(
        self, obs: Any, reward: float, terminated: bool, truncated: bool, info: dict[str, Any]
    ) -> TextObservation:
        if not isinstance(obs, str):
            raise TypeError(
                f"{self.env_id} returned a {type(obs).__name__} observation; serve-env serves "
                f"text envs (str observations)"
            )
        reward = float(reward)
        return TextObservation(
            text=wire_safe(obs),
            reward=reward if math.isfinite(reward) else None,
            done=bool(terminated or truncated),
            terminated=bool(terminated),
            truncated=bool(truncated),
            info=wire_safe(info),
        )

    def reset(
        self,
        seed: int | None = None,
        episode_id: str | None = None,
        options: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> TextObservation:
        """``env.reset(seed=seed, options=options)``; ``episode_id`` is only recorded."""
        if self._closed:
            raise SessionClosedError("this session's env is closed; open a new session")
        if kwargs:
            raise EnvRequestError(
                f"unknown reset parameter(s) {sorted(kwargs)}; reset takes seed, options and "
                f"episode_id"
            )
        if options is not None and not isinstance(options, dict):
            raise EnvRequestError(f"options must be a JSON object, got {options!r:.80}")
        obs, info = self._env.reset(seed=_check_seed(seed), options=options)
        self._reset_done = True
        self._state = State(episode_id=episode_id, step_count=0)
        return self._observation(obs, 0.0, False, False, info)

    def step(
        self, action: TextAction, timeout_s: float | None = None, **kwargs: Any
    ) -> TextObservation:
        """``env.step(action.command)``."""
        if self._closed:
            raise SessionClosedError(
                "this session's env is closed (closed by the client or idle past the server's "
                "--idle-timeout); open a new session"
            )
        if not self._reset_done:
            raise ResetFirstError(
                "step before reset: reset this session first (OpenEnv's stateless /step builds "
                "a fresh env per request; use the /ws or /sessions endpoints for episodes)"
            )
        command = action.command
        if len(command) > self.max_action_chars:
            raise ActionTooLongError(
                f"the action is {len(command)} characters; this server accepts at most "
                f"{self.max_action_chars} (serve-env --max-action-chars)"
            )
        obs, reward, terminated, truncated, info = self._env.step(command)
        self._state.step_count += 1
        return self._observation(obs, reward, terminated, truncated, info)

    @property
    def state(self) -> State:
        """Episode id and steps taken in this episode."""
        return self._state

    def get_metadata(self) -> EnvironmentMetadata:
        """The served env id, for OpenEnv's ``/metadata``."""
        from agent_gym import __version__

        return EnvironmentMetadata(
            name=self.env_id,
            description=f"{self.env_id} served by agent-gym (text actions and observations)",
            version=__version__,
        )

    def close(self) -> None:
        """Close the env; idempotent."""
        if not self._closed:
            self._closed = True
            self._env.close()


def env_description(env_id: str, env_kwargs: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Build the env once and describe it (``GET /agent_gym/spec``); fails early if it cannot.

    Returns:
        ``env_id``, ``max_episode_steps``, ``max_parallel_calls``, ``tools`` (``ToolSpec``
        fields) and ``prompt_templates`` (``system``/``user``, or None for a non-agent-gym env).
    """
    env = gym.make(env_id, **dict(env_kwargs or {}))
    try:
        inner = env.unwrapped
        templates = getattr(inner, "prompt_templates", None)
        return {
            "env_id": env_id,
            "max_episode_steps": env.spec.max_episode_steps if env.spec is not None else None,
            "max_parallel_calls": int(getattr(inner, "max_parallel_calls", None) or 1),
            "tools": [asdict(t) for t in getattr(inner, "tools", None) or ()],
            "prompt_templates": asdict(templates) if templates is not None else None,
        }
    finally:
        env.close()


class TextEnvServer(HTTPEnvServer):
    """OpenEnv's server for :class:`GymTextEnvironment`, plus the ``/sessions`` HTTP routes.

    Args:
        env_id: The env to serve.
        env_kwargs: ``gym.make`` keyword arguments.
        max_sessions: Most sessions (WebSocket and HTTP together) open at once.
        idle_timeout: Seconds without a request after which a session is closed (None: never).
        max_action_chars: Longest action accepted.
    """

    def __init__(
        self,
        env_id: str,
        env_kwargs: Mapping[str, Any] | None = None,
        *,
        max_sessions: int = 16,
        idle_timeout: float | None = 600.0,
        max_action_chars: int = MAX_ACTION_CHARS,
    ) -> None:
        if max_sessions < 1:
            raise ValueError(f"max_sessions must be >= 1, got {max_sessions}")
        if idle_timeout is not None and not idle_timeout > 0:
            raise ValueError(f"idle_timeout must be > 0 seconds (or None), got {idle_timeout}")
        if max_action_chars < 1:
            raise ValueError(f"max_action_chars must be >= 1, got {max_action_chars}")
        self.env_id = env_id
        self.max_action_chars = max_action_chars
        self.max_body_bytes = _BYTES_PER_CHAR * max_action_chars + _ENVELOPE_BYTES
        factory = functools.partial(
            GymTextEnvironment, env_id, dict(env_kwargs or {}), max_action_chars
        )
        super().__init__(
            factory,
            TextAction,
            TextObservation,
            concurrency_config=ConcurrencyConfig(
                max_concurrent_envs=max_sessions, session_timeout=idle_timeout
            ),
        )

    def register_session_routes(self, app: FastAPI) -> None:
        """Add ``/sessions`` (stateful HTTP) on top of OpenEnv's routes."""

        @app.post("/sessions", status_code=201, tags=["HTTP sessions"])
        async def open_session() -> dict[str, str]:
            """Open a session (its own env); answer its id."""
            try:
                session_id, _ = await self._create_session()
            except SessionCapacityError as e:
                raise _Reply(
                    503,
                    f"the server is at its session cap ({e.max_sessions} open); close one "
                    f"(DELETE /sessions/ID), wait for idle ones to expire, or restart with a "
                    f"larger --max-sessions",
                ) from None
            return {"session_id": session_id}

        @app.post("/sessions/{session_id}/reset", tags=["HTTP sessions"])
        async def reset_session(session_id: str, request: Request) -> dict[str, Any]:
            """Reset the session's env: body ``{"seed": int, "options": {...}}`` (optional)."""
            env = self._session_env(session_id)
            data = await self._json_body(request, default={})
            observation = await self._run_in_session_executor(session_id, env.reset, **data)
            self._update_session_activity(session_id)
            return serialize_observation(observation)

        @app.post("/sessions/{session_id}/step", tags=["HTTP sessions"])
        async def step_session(session_id: str, request: Request) -> dict[str, Any]:
            """Step the session's env: body ``{"action": {"command": "..."}}``."""
            env = self._session_env(session_id)
            data = await self._json_body(request)
            if set(data) - {"action"} or not isinstance(data.get("action"), dict):
                raise _Reply(
                    400,
                    'the step body must be {"action": {"command": "<text>"}}, got keys '
                    f"{sorted(data)}",
                )
            try:
                action = deserialize_action(data["action"], TextAction)
            except ValidationError as e:
                raise _Reply(422, f"invalid action: {_pydantic_message(e)}") from None
            observation = await self._run_in_session_executor(session_id, env.step, action)
            self._update_session_activity(session_id, increment_step=True)
            return serialize_observation(observation)

        @app.get("/sessions/{session_id}", tags=["HTTP sessions"])
        async def describe_session(session_id: str) -> dict[str, Any]:
            """The session's step count and times (does not count as activity)."""
            self._session_env(session_id)
            info = self.get_session_info(session_id)
            return info.model_dump() if info is not None else {"session_id": session_id}

        @app.delete("/sessions/{session_id}", status_code=204, tags=["HTTP sessions"])
        async def close_session(session_id: str) -> Response:
            """Close the session and its env."""
            self._session_env(session_id)
            await self._destroy_session(session_id)
            return Response(status_code=204)

    def _session_env(self, session_id: str) -> GymTextEnvironment:
        env = self._sessions.get(session_id, _MISSING)
        if env is _MISSING:
            raise _Reply(
                404,
                f"unknown session id {session_id!r:.80}: never opened, closed, or idle past "
                f"the server's timeout; POST /sessions to open one",
            )
        if env is None:
            raise _Reply(409, f"session {session_id!r} is still starting; retry")
        return env

    async def _json_body(self, request: Request, default: dict | None = None) -> dict[str, Any]:
        body = await request.body()
        if len(body) > self.max_body_bytes:
            raise _Reply(413, _too_large(len(body), self.max_body_bytes))
        if not body.strip() and default is not None:
            return default
        try:
            data = json.loads(body)
        except json.JSONDecodeError as e:
            raise _Reply(
                400, f"the request body is not valid JSON: {e.msg} at char {e.pos}"
            ) from None
        except (UnicodeDecodeError, RecursionError, ValueError) as e:
            raise _Reply(
                400, f"the request body is not readable JSON ({type(e).__name__})"
            ) from None
        if not isinstance(data, dict):
            raise _Reply(400, f"the request body must be a JSON object, got {type(data).__name__}")
        return data


_MISSING = object()


class _Reply(Exception):
    """An HTTP error answered as ``{"detail": message}`` with ``status_code``."""

    def __init__(self, status_code: int, message: str) -> None:
        super().__init__(message)
        self.status_code = status_code


def _too_large(size: int, limit: int) -> str:
    return (
        f"the request body is {size} bytes; this server accepts at most {limit} "
        f"(raise serve-env --max-action-chars)"
    )


def _pydantic_message(error: ValidationError) -> str:
    parts = []
    for item in error.errors():
        where = ".".join(str(p) for p in item.get("loc", ())) or "action"
        parts.append(f"{where}: {item.get('msg')}")
    return "; ".join(parts)


def create_app(
    env_id: str,
    env_kwargs: Mapping[str, Any] | None = None,
    *,
    max_sessions: int = 16,
    idle_timeout: float | None = 600.0,
    max_action_chars: int = MAX_ACTION_CHARS,
) -> FastAPI:
    """The FastAPI app serving ``env_id`` over OpenEnv (see the module docstring).

    The env is built once first, so an unknown id, bad keyword or non-text env fails here with
    its own error rather than at the first session.

    Example:
        >>> from fastapi.testclient import TestClient  # doctest: +SKIP
        >>> client = TestClient(create_app("AgentR1/HotpotQA-v0"))  # doctest: +SKIP
        >>> sid = client.post("/sessions").json()["session_id"]  # doctest: +SKIP
        >>> client.post(f"/sessions/{sid}/reset", json={"seed": 0}).json()["observation"]["info"]["task"]  # doctest: +SKIP
    """
    description = env_description(env_id, env_kwargs)
    server = TextEnvServer(
        env_id,
        env_kwargs,
        max_sessions=max_sessions,
        idle_timeout=idle_timeout,
        max_action_chars=max_action_chars,
    )
    app = FastAPI(
        title=f"agent-gym: {env_id} over OpenEnv",
        description="OpenEnv protocol (/ws, /reset, /step, /state, /schema, /health) plus "
        "stateful HTTP sessions (/sessions).",
    )
    server.register_routes(app)
    server.register_session_routes(app)
    app.state.openenv_server = server

    @app.get("/agent_gym/spec", tags=["Environment Info"])
    async def spec() -> dict[str, Any]:
        """Id, step limit, tools and prompt templates of the served env."""
        return {**description, "max_action_chars": max_action_chars}

    @app.middleware("http")
    async def limit_body(request: Request, call_next: Any) -> Any:
        # OpenEnv's own /step reads any body; refuse oversized ones before they are read.
        length = request.headers.get("content-length")
        if length is not None and length.isdigit() and int(length) > server.max_body_bytes:
            return JSONResponse(
                {"detail": _too_large(int(length), server.max_body_bytes)}, status_code=413
            )
        return await call_next(request)

    @app.exception_handler(_Reply)
    async def reply(request: Request, exc: _Reply) -> JSONResponse:
        return JSONResponse({"detail": str(exc)}, status_code=exc.status_code)

    @app.exception_handler(EnvRequestError)
    async def env_request_error(request: Request, exc: EnvRequestError) -> JSONResponse:
        return JSONResponse({"detail": str(exc)}, status_code=exc.status_code)

    @app.exception_handler(gym.error.ResetNeeded)
    async def reset_needed(request: Request, exc: Exception) -> JSONResponse:
        return JSONResponse({"detail": f"reset the env first: {exc}"}, status_code=409)

    return app


def serve(
    env_id: str,
    env_kwargs: Mapping[str, Any] | None = None,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    max_sessions: int = 16,
    idle_timeout: float | None = 600.0,
    max_action_chars: int = MAX_ACTION_CHARS,
) -> None:
    """Serve ``env_id`` until interrupted; prints the URL first (port 0 picks a free port).

    Binds to loopback by default: pass ``host="0.0.0.0"`` only on a network you trust (the
    server has no authentication).
    """
    import uvicorn

    app = create_app(
        env_id,
        env_kwargs,
        max_sessions=max_sessions,
        idle_timeout=idle_timeout,
        max_action_chars=max_action_chars,
    )
    family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(address)
    sock.listen(2048)  # before the URL is printed, so a client reading it can connect at once
    bound_port = sock.getsockname()[1]
    shown_host = f"[{host}]" if ":" in host else host
    limit = "none" if idle_timeout is None else f"{idle_timeout:g} s"
    print(
        f"agent-gym: serving {env_id} over OpenEnv at http://{shown_host}:{bound_port} "
        f"(WebSocket /ws, HTTP /sessions; at most {max_sessions} sessions, idle timeout {limit})",
        flush=True,
    )
    config = uvicorn.Config(
        app,
        log_level="warning",
        ws_max_size=max(16 * 1024 * 1024, app.state.openenv_server.max_body_bytes),
    )
    uvicorn.Server(config).run(sockets=[sock])
