"""HotpotQA-style multi-hop QA with a search tool (``AgentR1/HotpotQA-v0``)."""

from agent_gym.envs.hotpotqa.env import HotpotQAEnv

__all__ = ["HotpotQAEnv"]
