"""The four benchmark environments (installed as ``agent_gym.envs``).

Each sub-package holds one env: ``alfworld``, ``webshop``, ``hotpotqa``, ``paper_search``.
They are imported lazily by Gymnasium through the string entry points registered in
:mod:`agent_gym.registration`, so ``import agent_gym`` stays cheap.
"""
