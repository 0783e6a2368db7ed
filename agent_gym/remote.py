"""Any OpenEnv server as a Gymnasium text env: ``gym.make("agent_gym/OpenEnv-v0", url=...)``.

The client side of :mod:`agent_gym.openenv_server`. Each env holds one OpenEnv session (a
WebSocket through ``openenv-core``'s own ``EnvClient``), so the server keeps one env per
client and ``make_vec`` over this id gives each sub-env its own session::

    env = gym.make("agent_gym/OpenEnv-v0", url="http://127.0.0.1:8000")   # agent-gym serve-env
    obs, info = env.reset(seed=0)            # info: the served env's info dict
    obs, reward, terminated, truncated, info = env.step("search[Nauru]")

Against ``agent-gym serve-env`` the env also reads ``GET /agent_gym/spec``, so it reports the
served env's ``tools``, ``prompt_templates``, ``max_parallel_calls`` and ``max_episode_steps``,
and :class:`~agent_gym.wrappers.ParseAction`/:class:`~agent_gym.wrappers.ChatPrompt` build
the same prompts as in-process. The step limit is enforced by the server's ``TimeLimit``.

Other OpenEnv servers work too when their action is one text field and their observation has
a text field: name them with ``action_key`` and ``observation_key``; the remaining
observation fields become ``info``.
"""

from __future__ import annotations

import functools
import json
import urllib.error
import urllib.request
from typing import Any, ClassVar
from urllib.parse import SplitResult, urlsplit

import gymnasium as gym

from agent_gym.core import PromptTemplates, ToolSpec, check_reset_options
from agent_gym.spaces import Text


class RemoteEnvError(RuntimeError):
    """The server refused a request or the connection failed; the message says which."""


def make(url: str, **kwargs: Any) -> gym.Env:
    """``gym.make("agent_gym/OpenEnv-v0", url=url, **kwargs)`` (with Gymnasium's checks)."""
    import agent_gym

    return gym.make(agent_gym.OPENENV_ID, url=url, **kwargs)


def server_url_parts(url: str, schemes: tuple[str, ...]) -> SplitResult | None:
    """``url`` split; None unless its scheme is in ``schemes``, it has a host, and its port is valid.

    A port outside 0-65535 or not a number makes ``SplitResult.port`` raise; that is None here.
    """
    parts = urlsplit(url)
    try:
        parts.port  # noqa: B018 - raises on a port outside 0-65535 or not a number
    except ValueError:
        return None
    if parts.scheme not in schemes or not parts.hostname:
        return None
    return parts


def _http_base(url: str) -> str:
    parts = server_url_parts(url, ("http", "https", "ws", "wss"))
    if parts is None:
        raise ValueError(
            f"url must look like http://HOST:PORT (the address serve-env prints), got {url!r}"
        )
    scheme = {"ws": "http", "wss": "https"}.get(parts.scheme, parts.scheme)
    return f"{scheme}://{parts.netloc}{parts.path.rstrip('/')}"


def fetch_spec(url: str, timeout: float = 10.0) -> dict[str, Any] | None:
    """The served env's ``/agent_gym/spec``; None for an OpenEnv server that has none.

    Raises:
        ConnectionError: Nothing answers at ``url``.
    """
    request = urllib.request.Request(f"{_http_base(url)}/agent_gym/spec")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as reply:
            return json.loads(reply.read())
    except urllib.error.HTTPError as e:
        if e.code == 404:
            return None
        raise ConnectionError(f"{url}/agent_gym/spec answered HTTP {e.code}: {e.reason}") from None
    except (urllib.error.URLError, OSError) as e:
        reason = getattr(e, "reason", e)
        raise ConnectionError(
            f"no OpenEnv server answers at {url} ({reason}); start one with "
            f"`agent-gym serve-env ENV_ID --port PORT` and pass the URL it prints"
        ) from None


class OpenEnvTextEnv(gym.Env[str, str]):
    """A Gymnasium env whose reset and step run on an OpenEnv server.

    Args:
        url: The server, e.g. ``http://127.0.0.1:8000`` (``ws://`` works too).
        action_key: Field of the OpenEnv action that carries the text (serve-env: ``command``).
        observation_key: Field of the OpenEnv observation holding the text (serve-env: ``text``).
        connect_timeout_s: Seconds to wait for the connection.
        message_timeout_s: Seconds to wait for one reset or step.
        max_action_length: ``max_length`` of the action space.
        max_observation_length: ``max_length`` of the observation space.
        render_mode: ``None``, ``"ansi"`` or ``"human"``.

    Attributes:
        tools, prompt_templates, max_parallel_calls, max_episode_steps: The served env's, as
            its ``/agent_gym/spec`` reports them (defaults for other servers).
        remote_env_id: The served env's id (None for other servers).
    """

    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["ansi", "human"], "render_fps": 4}

    def __init__(
        self,
        url: str,
        *,
        action_key: str = "command",
        observation_key: str = "text",
        connect_timeout_s: float = 10.0,
        message_timeout_s: float = 300.0,
        max_action_length: int = 1_000_000,
        max_observation_length: int = 1_000_000,
        render_mode: str | None = None,
    ) -> None:
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(
                f"render_mode={render_mode!r}; use one of {self.metadata['render_modes']}"
            )
        try:
            from openenv.core.generic_client import GenericEnvClient
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise ImportError(
                "agent_gym/OpenEnv-v0 needs the openenv extra: pip install 'agent-gym[openenv]'"
            ) from exc
        self.url = url
        self.render_mode = render_mode
        self.action_key = action_key
        self.observation_key = observation_key
        self.observation_space = Text(max_length=max_observation_length)
        self.action_space = Text(max_length=max_action_length)
        spec = fetch_spec(url, timeout=connect_timeout_s) or {}
        self.remote_env_id: str | None = spec.get("env_id")
        self.max_episode_steps: int | None = spec.get("max_episode_steps")
        self.max_parallel_calls: int = int(spec.get("max_parallel_calls") or 1)
        self.tools: tuple[ToolSpec, ...] = tuple(ToolSpec(**t) for t in spec.get("tools") or ())
        templates = spec.get("prompt_templates")
        self.prompt_templates: PromptTemplates | None = (
            PromptTemplates(**templates) if templates else None
        )
        # A new session's client (nothing is sent until the first reset); reset after close
        # opens another.
        self._new_client = functools.partial(
            GenericEnvClient,
            base_url=_http_base(url),
            connect_timeout_s=connect_timeout_s,
            message_timeout_s=message_timeout_s,
        )
        self._client = self._new_client().sync()
        self._last_obs = ""
        self._needs_reset = True
        self._closed = False

    def _call(self, what: str, *args: Any, **kwargs: Any) -> Any:
        from websockets.exceptions import WebSocketException

        try:
            return getattr(self._client, what)(*args, **kwargs)
        except RuntimeError as e:  # OpenEnv's "Server error: ... (code: ...)"
            raise RemoteEnvError(f"{self.url} {what}: {e}") from None
        except (OSError, TimeoutError, WebSocketException) as e:
            raise RemoteEnvError(
                f"{self.url} {what}: connection failed or closed ({type(e).__name__}: {e}); the "
                f"server may be at its session cap (serve-env --max-sessions), the session may "
                f"have expired (--idle-timeout), or the server stopped"
            ) from None

    def _unpack(self, result: Any) -> tuple[str, float, bool, bool, dict[str, Any]]:
        obs = result.observation if isinstance(result.observation, dict) else {}
        if not isinstance(obs.get(self.observation_key), str):
            raise RemoteEnvError(
                f"{self.url}: the observation has no text field {self.observation_key!r} "
                f"(fields: {sorted(obs)}); pass observation_key=..."
            )
        text = obs[self.observation_key]
        if isinstance(obs.get("info"), dict):
            info = dict(obs["info"])
        else:
            info = {k: v for k, v in obs.items() if k != self.observation_key}
        done = bool(result.done)
        terminated = bool(obs.get("terminated", done))
        truncated = bool(obs.get("truncated", False))
        reward = 0.0 if result.reward is None else float(result.reward)
        self._last_obs = text
        return text, reward, terminated, truncated, info

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        """Reset the remote env (``seed`` and ``options`` are sent as given).

        After :meth:`close` it opens a new session on the server.

        Raises:
            TypeError: ``options`` is not a dict (checked here, before any request).
            RemoteEnvError: The server refused the reset or the connection failed.
        """
        check_reset_options(options)
        super().reset(seed=seed)
        self._needs_reset = True  # until the server's reset answers: a refused one starts nothing
        if self._closed:
            self._client, self._closed = self._new_client().sync(), False
        payload: dict[str, Any] = {}
        if seed is not None:
            payload["seed"] = seed
        if options is not None:
            payload["options"] = options
        text, _, _, _, info = self._unpack(self._call("reset", **payload))
        self._needs_reset = False
        return text, info

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """Send ``action`` to the remote env.

        Raises:
            TypeError: ``action`` is not a ``str`` (checked here, before any request).
            gymnasium.error.ResetNeeded: ``step`` before ``reset`` or after ``close``.
            RemoteEnvError: The server refused the step or the connection failed.
        """
        if not isinstance(action, str):
            raise TypeError(
                f"actions must be str (the agent's command text), got {type(action).__name__}: "
                f"{action!r:.80}"
            )
        if self._needs_reset:
            raise gym.error.ResetNeeded("call reset() before step()")
        return self._unpack(self._call("step", {self.action_key: action}))

    def render(self) -> str | None:
        """Return (``"ansi"``) or print (``"human"``) the latest observation."""
        if self.render_mode == "ansi":
            return self._last_obs
        if self.render_mode == "human":
            print(self._last_obs)
        return None

    def close(self) -> None:
        """Close the session (the server closes its env); idempotent."""
        self._needs_reset = True
        if not self._closed:
            self._closed = True
            try:
                self._client.close()
            except Exception:  # noqa: BLE001 - a dead connection is already closed
                pass
