"""agent-gym: Gymnasium environments for multi-step LLM agents.

``import agent_gym`` registers the ``AgentR1/*`` ids; it imports neither torch nor ``algos``.

>>> import gymnasium as gym
>>> import agent_gym
>>> "AgentR1/WebShop-v0" in agent_gym.ENV_IDS
True
"""

from __future__ import annotations

import importlib
from typing import Any

from agent_gym.core import INFO_KEYS, PromptTemplates, TextEnv, ToolSpec
from agent_gym.registration import ENV_IDS, register_envs
from agent_gym.spaces import Text

register_envs()

__version__ = "0.1.0"

# Exported lazily so that `import agent_gym` does not import the vector machinery.
_LAZY = {
    "make_vec": "agent_gym.vector",
    "group_seeds": "agent_gym.vector",
    "EnvWorkerError": "agent_gym.vector",
    "TextAgent": "agent_gym.agents",
    "run_episode": "agent_gym.agents",
    "EpisodeResult": "agent_gym.agents",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'agent_gym' has no attribute {name!r}")


__all__ = [
    "ENV_IDS",
    "EnvWorkerError",
    "INFO_KEYS",
    "EpisodeResult",
    "PromptTemplates",
    "Text",
    "TextAgent",
    "TextEnv",
    "ToolSpec",
    "__version__",
    "group_seeds",
    "make_vec",
    "run_episode",
]
