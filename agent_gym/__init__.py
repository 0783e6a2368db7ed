"""agent-gym: Gymnasium environments for multi-step LLM agents.

``import agent_gym`` registers the ``AgentR1/*`` ids and ``agent_gym/OpenEnv-v0`` (any OpenEnv
server as a Gymnasium env, see :mod:`agent_gym.remote`); it imports neither torch nor ``algos``.
The sub-packages load on first use, Gymnasium style: ``agent_gym.wrappers.ParseAction``,
``agent_gym.envs``, ``agent_gym.remote``.

>>> import gymnasium as gym
>>> import agent_gym
>>> "AgentR1/WebShop-v0" in agent_gym.ENV_IDS
True
>>> agent_gym.wrappers.ParseAction.__name__
'ParseAction'
"""

from __future__ import annotations

import importlib
from typing import Any

import gymnasium as gym

from agent_gym.core import INFO_KEYS, PromptTemplates, TextEnv, ToolSpec
from agent_gym.registration import ENV_IDS, PASSIVE_CHECKER, register_envs
from agent_gym.spaces import Text

register_envs()

#: Gymnasium id of :class:`agent_gym.remote.OpenEnvTextEnv`: ``gym.make(OPENENV_ID, url=...)``.
OPENENV_ID = "agent_gym/OpenEnv-v0"
if OPENENV_ID not in gym.registry:
    # No step limit here: the served env's own TimeLimit truncates, on the server.
    gym.register(
        OPENENV_ID,
        entry_point="agent_gym.remote:OpenEnvTextEnv",
        disable_env_checker=not PASSIVE_CHECKER,
    )

__version__ = "0.1.0"

# Exported lazily so that `import agent_gym` does not import the vector machinery.
_LAZY = {
    "make_vec": "agent_gym.vector",
    "group_seeds": "agent_gym.vector",
    "EnvWorkerError": "agent_gym.vector",
    "TextAgent": "agent_gym.agents",
    "run_episode": "agent_gym.agents",
    "RandomAgent": "agent_gym.agents",
    "ExpertAgent": "agent_gym.agents",
    "Episode": "agent_gym.episode",
    "summarize": "agent_gym.episode",
}


#: Sub-packages reachable as attributes after ``import agent_gym``, imported on first access so
#: that the import stays light (no TextWorld, HTTP client or server until they are used).
_SUBMODULES = frozenset({"envs", "wrappers", "remote", "vector", "agents", "spaces", "core"})


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    if name in _SUBMODULES:
        return importlib.import_module(f"agent_gym.{name}")
    raise AttributeError(f"module 'agent_gym' has no attribute {name!r}")


__all__ = [
    "ENV_IDS",
    "EnvWorkerError",
    "ExpertAgent",
    "INFO_KEYS",
    "OPENENV_ID",
    "Episode",
    "PromptTemplates",
    "RandomAgent",
    "Text",
    "TextAgent",
    "TextEnv",
    "ToolSpec",
    "__version__",
    "group_seeds",
    "make_vec",
    "run_episode",
    "summarize",
]
