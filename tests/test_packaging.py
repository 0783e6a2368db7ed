"""Packaging promises (docs/env_contract.md, packaging)."""

import subprocess
import sys


def _run(code: str) -> str:
    return subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True, cwd="/"
    ).stdout.strip()


def test_import_agent_gym_pulls_in_neither_torch_nor_algos() -> None:
    out = _run(
        "import sys, agent_gym; print('torch' in sys.modules, 'algos' in sys.modules, "
        "'transformers' in sys.modules)"
    )
    assert out == "False False False"


def test_envs_and_wrappers_import_under_agent_gym() -> None:
    out = _run(
        "import agent_gym.envs, agent_gym.wrappers, algos; "
        "print(agent_gym.envs.__name__, agent_gym.wrappers.__name__, algos.__name__)"
    )
    assert out == "agent_gym.envs agent_gym.wrappers algos"


def test_register_envs_convention_and_colon_prefix() -> None:
    out = _run(
        "import gymnasium as gym, agent_gym; gym.register_envs(agent_gym); "
        "print(sorted(i for i in gym.registry if i.startswith('AgentR1/')) == "
        "sorted(agent_gym.ENV_IDS))"
    )
    assert out == "True"


def test_test_module_basenames_are_unique() -> None:
    # tests/ has no __init__.py files, so pytest imports test modules by basename: two files
    # with the same name in different folders fail collection with "import file mismatch".
    from collections import Counter
    from pathlib import Path

    names = Counter(p.name for p in Path(__file__).parent.rglob("test_*.py"))
    assert [n for n, c in names.items() if c > 1] == []
