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
    np.random.seed(seed % 2**32)  # numpy takes 32 bits; other ranks' seeds may pass them
    torch.manual_seed(seed)


def new_run_dir(cfg: Config, kind: str | None = None) -> Path:
    """``out_dir/name`` (default ``<env>-<kind or algo>-<YYYYmmdd-HHMMSS>``), created.

    A default name already taken (two runs started in the same second) gets ``-2``, ``-3``,
    ...; a ``run.name`` whose directory holds a run is refused (:func:`check_new_run`).
    """
    check_new_run(cfg, kind)
    if cfg.run.name:
        path = Path(cfg.run.out_dir) / cfg.run.name
        path.mkdir(parents=True, exist_ok=True)
        return path
    name = "{}-{}-{}".format(
        cfg.env.id.split("/")[-1].split(":")[-1],
        kind or cfg.algo.name,
        time.strftime("%Y%m%d-%H%M%S"),
    )
    Path(cfg.run.out_dir).mkdir(parents=True, exist_ok=True)
    for k in range(1, 1000):
        path = Path(cfg.run.out_dir) / (name if k == 1 else f"{name}-{k}")
        try:
            path.mkdir()  # claims the name: another process's mkdir of it fails
            return path
        except FileExistsError:
            continue
    raise FileExistsError(f"{cfg.run.out_dir}: {name} and 998 more names like it are taken")


def check_folder(path: Path, what: str) -> None:
    """Refuse ``path`` as a folder to make or use when it, or its nearest existing parent, is a file.

    Checked before the model loads, not when the run writes its first file.

    Raises:
        NotADirectoryError: The message names ``what`` (the setting) and the file.
    """
    for folder in (path, *path.parents):
        if folder.exists():
            if not folder.is_dir():
                raise NotADirectoryError(f"{what}: {folder} is a file, not a folder")
            return


def check_new_run(cfg: Config, kind: str | None = None) -> None:
    """Refuse a run directory inside a file, or a ``run.name`` that holds a run (``config.json``).

    A second run there would overwrite the first one's checkpoints and metrics, or, as a
    pipeline (``model.init = "sft"``), carry on from its clone and checkpoints under the new
    config. Called before anything is built.

    Raises:
        FileExistsError: The message names the directory and the command that continues it.
        NotADirectoryError: ``run.out_dir`` (or ``out_dir/name``) is, or is inside, a file.
    """
    path = Path(cfg.run.out_dir) / cfg.run.name
    where = f"run.out_dir={cfg.run.out_dir!r}"
    if cfg.run.name:
        where += f", run.name={cfg.run.name!r}"
    check_folder(path, where)
    if cfg.run.name and (path / "config.json").is_file():
        command = "algos sft" if kind == "sft" else "algos train"
        raise FileExistsError(
            f"{path} already holds a run (run.name={cfg.run.name!r}); continue it with "
            f"`{command} --resume {path}`, or give another run.name (or delete the folder)"
        )


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


def run_kind(run_dir: Path) -> str | None:
    """``"sft"`` for a behaviour-cloning run (``algos sft``), ``"rl"`` for a training run.

    Read from the files alone: ``sft.json`` (written when a cloning run starts and when it
    ends), ``eval.json`` or a pipeline's config (``model.init = "sft"``), then the metrics'
    keys; None for a run killed before it wrote any of them.
    """
    run_dir = Path(run_dir)
    if (run_dir / "sft.json").is_file():
        return "sft"
    if (run_dir / "eval.json").is_file() or read_json(run_dir / "config.json").get("model", {}).get(
        "init"
    ) == "sft":
        return "rl"
    try:
        lines = (run_dir / "metrics.jsonl").read_text(encoding="utf-8").splitlines()
    except OSError:
        return None
    for line in lines:
        if '"sft/loss"' in line:
            return "sft"
        if '"rollout/' in line:
            return "rl"
    return None


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
