"""WebShop (``AgentR1/WebShop-v0``): an offline e-commerce site for shopping agents."""

from agent_gym.envs.webshop.env import WebShopEnv

__all__ = ["WebShopEnv"]
