"""Gymnasium registration of the AgentR1/* environment ids."""

from __future__ import annotations

from gymnasium.envs.registration import register, registry

#: id -> (entry point, max_episode_steps). Step limits follow the reference recipes:
#: ALFWorld 50 (GiGPO paper), WebShop 15, HotpotQA 5, Paper Search 5 (Agent-R1).
_SPECS: dict[str, tuple[str, int]] = {
    "AgentR1/ALFWorld-v0": ("agent_gym.envs.alfworld.env:ALFWorldEnv", 50),
    "AgentR1/WebShop-v0": ("agent_gym.envs.webshop.env:WebShopEnv", 15),
    "AgentR1/HotpotQA-v0": ("agent_gym.envs.hotpotqa.env:HotpotQAEnv", 5),
    "AgentR1/PaperSearch-v0": ("agent_gym.envs.paper_search.env:PaperSearchEnv", 5),
}

#: The registered environment ids.
ENV_IDS: tuple[str, ...] = tuple(_SPECS)


def register_envs() -> None:
    """Register every id (idempotent: ids already in the registry are left alone)."""
    for env_id, (entry_point, max_steps) in _SPECS.items():
        if env_id not in registry:
            register(
                id=env_id,
                entry_point=entry_point,
                max_episode_steps=max_steps,
                disable_env_checker=False,
            )


def env_class(env_id: str) -> type:
    """Import and return the class behind a registered id."""
    import importlib

    if env_id not in _SPECS:
        raise ValueError(f"unknown env id {env_id!r}; registered ids: {', '.join(ENV_IDS)}")
    module, _, name = _SPECS[env_id][0].partition(":")
    return getattr(importlib.import_module(module), name)
