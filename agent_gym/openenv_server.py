"""Serve any Gymnasium text env over the OpenEnv protocol (``agent-gym serve-env``).

`OpenEnv <https://github.com/meta-pytorch/OpenEnv>`_ (PyPI ``openenv-core``) is the
Gymnasium-style protocol TRL's ``GRPOTrainer`` and other trainers use to reach environments
over the network. This module serves a ``gym.make``-able text env, adapted to OpenEnv's
``Environment`` by :class:`agent_gym.openenv_env.GymTextEnvironment`, with OpenEnv's own
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
import socket
from collections.abc import Mapping
from typing import Any

import gymnasium as gym

try:
    from fastapi import FastAPI, Request
    from fastapi.responses import JSONResponse, Response
    from openenv.core.env_server import ConcurrencyConfig, HTTPEnvServer, SessionCapacityError
    from openenv.core.env_server.serialization import deserialize_action, serialize_observation
    from pydantic import ValidationError
except ImportError as exc:  # pragma: no cover - depends on the install
    raise ImportError(
        "serving envs over OpenEnv needs the openenv extra: pip install 'agent-gym[openenv]'"
    ) from exc

from agent_gym.openenv_env import (
    MAX_ACTION_CHARS,
    EnvRequestError,
    GymTextEnvironment,
    TextAction,
    TextObservation,
    env_description,
)

#: JSON spends at most 6 bytes on one character (``\\u00e9``); the rest is the envelope.
_BYTES_PER_CHAR, _ENVELOPE_BYTES = 6, 64 * 1024


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
        if length is not None and length.isdecimal() and int(length) > server.max_body_bytes:
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
    sock = None
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
        sock = socket.socket(family, kind, proto)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(2048)  # before the URL is printed, so a client reading it can connect at once
    except OSError as exc:  # a name that does not resolve, an address not here, a taken port
        if sock is not None:
            sock.close()
        raise OSError(f"cannot listen on {host}:{port} ({exc.strerror or exc})") from None
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
