"""Test-wide settings: offline, single-threaded, and a repository-local data cache."""

import os
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# Generated data (games, catalogues, indexes) is cached here between test runs, never in the
# user's own ~/.cache/agent_gym.
os.environ.setdefault(
    "AGENT_GYM_HOME", str(Path(__file__).resolve().parent.parent / ".cache" / "agent_gym")
)
