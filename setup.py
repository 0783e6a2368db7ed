"""Package layout: ``envs/`` and ``wrappers/`` install as ``agent_gym.envs``/``agent_gym.wrappers``.

Top-level import names ``envs`` and ``wrappers`` would collide with existing PyPI packages, so
the repository folders are mapped under ``agent_gym`` (docs/env_contract.md, packaging). Everything else
lives in pyproject.toml.
"""

from setuptools import find_packages, setup

_ROOTS = {
    "agent_gym": "agent_gym",
    "agent_gym.envs": "envs",
    "agent_gym.wrappers": "wrappers",
    "algos": "algos",
}

packages = []
for name, folder in _ROOTS.items():
    packages.append(name)
    packages += [f"{name}.{sub}" for sub in find_packages(folder)]

setup(packages=packages, package_dir=_ROOTS)
