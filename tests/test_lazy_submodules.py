"""``agent_gym.wrappers`` / ``agent_gym.envs`` / ``agent_gym.remote`` after a bare ``import agent_gym``."""

import subprocess
import sys


def _run(code: str) -> str:
    return subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True, cwd="/"
    ).stdout.strip()


def test_submodules_load_on_first_access_only() -> None:
    out = _run(
        "import sys, agent_gym\n"
        "before = [m in sys.modules for m in ('agent_gym.wrappers', 'agent_gym.envs', "
        "'agent_gym.remote', 'openenv')]\n"
        "names = (agent_gym.wrappers.ParseAction.__name__, agent_gym.wrappers.ChatPrompt.__name__,"
        " agent_gym.envs.__name__, agent_gym.remote.OpenEnvTextEnv.__name__)\n"
        "print(before, names, 'torch' in sys.modules)"
    )
    assert out == (
        "[False, False, False, False] ('ParseAction', 'ChatPrompt', 'agent_gym.envs', "
        "'OpenEnvTextEnv') False"
    )


def test_unknown_attribute_still_raises() -> None:
    out = _run(
        "import agent_gym\ntry:\n    agent_gym.nope\nexcept AttributeError as e:\n    print(e)"
    )
    assert out == "module 'agent_gym' has no attribute 'nope'"
