"""Checkpoints: model, critic, optimisers, RNG states and the iteration, written atomically.

Layout: ``RUN_DIR/checkpoints/iter_000007/`` holding ``model.pt``, ``critic.pt`` (critic
algorithms), ``optim.pt`` and ``state.json``; ``RUN_DIR/checkpoints/latest`` names the newest
complete one. A checkpoint is written into a temporary folder that is renamed into place, and
``latest`` is replaced only after that, so killing a run mid-write leaves the previous
checkpoint intact and pointed to.
"""

from __future__ import annotations

import json
import os
import random
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import torch

from agent_gym.paths import atomic_write_text


def rng_state() -> dict[str, Any]:
    """The global RNG states that sampling and shuffling use (python, numpy, torch CPU/CUDA)."""
    state = {
        "python": random.getstate(),
        "numpy": np.random.get_state(),
        "torch": torch.get_rng_state(),
    }
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    """Restore what :func:`rng_state` returned."""
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def save_checkpoint(run_dir: Path, iteration: int, learner: Any, *, keep: int = 2) -> Path:
    """Write checkpoint ``iteration`` and point ``latest`` at it; keep the newest ``keep``."""
    root = Path(run_dir) / "checkpoints"
    root.mkdir(parents=True, exist_ok=True)
    final = root / f"iter_{iteration:06d}"
    tmp = root / f".iter_{iteration:06d}.{os.getpid()}.tmp"
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir()
    torch.save(learner.model.state_dict(), tmp / "model.pt")
    optim = {"actor": learner.optimizer.state_dict()}
    if learner.critic is not None:
        torch.save(learner.critic.state_dict(), tmp / "critic.pt")
        optim["critic"] = learner.critic_optimizer.state_dict()
    torch.save(optim, tmp / "optim.pt")
    torch.save(rng_state(), tmp / "rng.pt")
    (tmp / "state.json").write_text(json.dumps({"iteration": iteration}))
    if final.exists():
        shutil.rmtree(final)
    os.replace(tmp, final)
    atomic_write_text(root / "latest", final.name + "\n")
    done = sorted(p for p in root.glob("iter_*") if p.is_dir())
    for old in done[:-keep]:
        shutil.rmtree(old, ignore_errors=True)
    return final


def latest_checkpoint(run_dir: Path) -> Path | None:
    """The newest complete checkpoint of a run, or None."""
    pointer = Path(run_dir) / "checkpoints" / "latest"
    if not pointer.is_file():
        return None
    path = pointer.parent / pointer.read_text().strip()
    return path if (path / "state.json").is_file() else None


def load_checkpoint(path: Path, learner: Any) -> int:
    """Load a checkpoint into ``learner`` (and the global RNGs); return its iteration."""
    dev = learner.device
    learner.model.load_state_dict(torch.load(path / "model.pt", map_location=dev))
    optim = torch.load(path / "optim.pt", map_location=dev, weights_only=False)
    learner.optimizer.load_state_dict(optim["actor"])
    if learner.critic is not None:
        learner.critic.load_state_dict(torch.load(path / "critic.pt", map_location=dev))
        learner.critic_optimizer.load_state_dict(optim["critic"])
    set_rng_state(torch.load(path / "rng.pt", weights_only=False))
    return int(json.loads((path / "state.json").read_text())["iteration"])
