"""Run directories: where a run lives, the config it was trained with, and its seeding."""

from __future__ import annotations

import json
import random
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

from algos.config import Config, config_from_dict


def seed_everything(seed: int, threads: int = 0) -> None:
    """Seed python, numpy and torch's global generators; fix torch's CPU threads when > 0.

    A CPU run's figures depend on the thread count (it sets the order of float reductions,
    hence the rounding, hence which tokens are sampled), not on the machine's load.
    """
    if threads > 0:
        torch.set_num_threads(threads)
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def new_run_dir(cfg: Config, kind: str | None = None) -> Path:
    """``out_dir/name`` (default ``<env>-<kind or algo>-<YYYYmmdd-HHMMSS>``), created."""
    name = cfg.run.name or "{}-{}-{}".format(
        cfg.env.id.split("/")[-1].split(":")[-1],
        kind or cfg.algo.name,
        time.strftime("%Y%m%d-%H%M%S"),
    )
    path = Path(cfg.run.out_dir) / name
    path.mkdir(parents=True, exist_ok=True)
    return path


def run_config(run_dir: Path) -> Config:
    """The resolved config a run directory was trained with (``config.json``, plain JSON).

    Raises:
        FileNotFoundError: ``run_dir`` has no ``config.json``.
        ValueError: It is not valid JSON, or not a config.
    """
    path = Path(run_dir) / "config.json"
    if not path.is_file():
        raise FileNotFoundError(f"{run_dir} is not a run directory (no config.json)")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise ValueError(f"{path}: not valid JSON ({exc})") from None
    return config_from_dict(data, source=str(path))


def read_json(path: Path) -> dict[str, Any]:
    """A JSON object from ``path``; ``{}`` when the file is missing or torn."""
    try:
        return json.loads(path.read_text()) if path.is_file() else {}
    except ValueError:
        return {}


def write_json(path: Path, data: dict[str, Any]) -> None:
    """Write ``data`` atomically (a reader never sees half a file)."""
    from agent_gym.paths import atomic_write_text

    atomic_write_text(path, json.dumps(data, indent=2))
