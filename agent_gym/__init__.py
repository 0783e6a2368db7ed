"""agent-gym: Gymnasium environments for multi-step LLM agents.

>>> import gymnasium as gym
>>> import agent_gym
>>> "AgentR1/WebShop-v0" in agent_gym.ENV_IDS
True
"""

from agent_gym.core import INFO_KEYS, PromptTemplates, TextEnv, ToolSpec
from agent_gym.registration import ENV_IDS, register_envs
from agent_gym.spaces import Text

register_envs()

__version__ = "0.1.0"

__all__ = [
    "ENV_IDS",
    "INFO_KEYS",
    "PromptTemplates",
    "Text",
    "TextEnv",
    "ToolSpec",
    "__version__",
]
