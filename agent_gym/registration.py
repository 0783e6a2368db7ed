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


#: ``gym.make`` adds no ``PassiveEnvChecker`` to these ids: Gymnasium 1.4's checker marks its
#: first reset as done before running it, so after a first reset that raises (an unknown
#: task id) the env's first step fails inside the checker (``TypeError: cannot unpack
#: non-iterable NoneType object``). ``tests/test_env_contract.py`` runs Gymnasium's full
#: ``check_env`` on every id instead; ``gym.make(id, disable_env_checker=False)`` adds it back.
PASSIVE_CHECKER = False


def register_envs() -> None:
    """Register every id (idempotent: ids already in the registry are left alone)."""
    for env_id, (entry_point, max_steps) in _SPECS.items():
        if env_id not in registry:
            register(
                id=env_id,
                entry_point=entry_point,
                max_episode_steps=max_steps,
                disable_env_checker=not PASSIVE_CHECKER,
            )


def env_class(env_id: str) -> type:
    """Import and return the class behind a registered id."""
    import importlib

    if env_id not in _SPECS:
        raise ValueError(f"unknown env id {env_id!r}; registered ids: {', '.join(ENV_IDS)}")
    module, _, name = _SPECS[env_id][0].partition(":")
    return getattr(importlib.import_module(module), name)


def resolve_env_id(name: str) -> str:
    """A registered Gymnasium id for ``name``: a full id, or a short, case-insensitive name.

    ``webshop``, ``WebShop``, ``webshop-v0`` and ``AgentR1/WebShop-v0`` all name the same env;
    any other id already in Gymnasium's registry (a third-party env), or ``module:Id`` (which
    Gymnasium imports), is returned unchanged.

    Raises:
        ValueError: One line naming ``name`` and listing the agent-gym ids.

    >>> resolve_env_id("alfworld")
    'AgentR1/ALFWorld-v0'
    """
    if name in registry or ":" in name:
        return name
    wanted = name.lower()
    for env_id in ENV_IDS:
        short = env_id.split("/")[-1]
        if wanted in (env_id.lower(), short.lower(), short.rsplit("-v", 1)[0].lower()):
            return env_id
    raise ValueError(
        f"unknown environment {name!r}; agent-gym's are {', '.join(ENV_IDS)} (or their short "
        "names: alfworld, webshop, hotpotqa, papersearch); other registered Gymnasium ids and "
        "'module:Id' work too"
    )
