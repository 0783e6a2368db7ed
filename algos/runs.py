"""Run directories: where a run lives, the config it was trained with, and its seeding."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import random
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import torch

from algos.config import Config, config_from_dict, dumps

#: What a write the disk refuses raises: full, over quota, a file past its size limit,
#: read-only, an I/O error.
DISK_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS, errno.EIO})


def disk_trouble(exc: OSError, where: Any = None) -> tuple[str, str]:
    """``(what went wrong with the file, what to do)`` for an OSError of :data:`DISK_ERRNOS`.

    >>> disk_trouble(OSError(errno.ENOSPC, "No space left on device", "RUN/metrics.jsonl"))
    ('RUN/metrics.jsonl: cannot write it (No space left on device)', 'make room')
    >>> disk_trouble(OSError(errno.EIO, "Input/output error", "RUN/eval.json"))[1]
    'check the disk'
    """
    name = exc.filename or where or "a file"
    # EIO comes from a read as well as a write: the device itself failed
    what = "the disk failed to read or write it" if exc.errno == errno.EIO else "cannot write it"
    return f"{name}: {what} ({exc.strerror})", remedy(exc.errno)


def remedy(code: int | None) -> str:
    """What to do about a write that failed with ``code`` (an errno; None: a full disk)."""
    if code == errno.EIO:
        return "check the disk"
    return "make the folder writable" if code == errno.EROFS else "make room"


class RunWriteError(RuntimeError):
    """A file of a run could not be written (a full disk).

    The message names the file and the command that continues the run; what the run had done
    up to its last checkpoint is kept.
    """


@contextlib.contextmanager
def stop_on_disk_error(run_dir: Path, command: str) -> Iterator[None]:
    """Turn a write the disk refuses (:data:`DISK_ERRNOS`) into :class:`RunWriteError`.

    Args:
        run_dir: The run the writes belong to.
        command: What continues it once there is room, as the message shows it, e.g.
            ``"`algos train --resume RUN`"``.
    """
    from algos.checkpoint import CheckpointWriteError, complete_checkpoints

    try:
        yield
    except CheckpointWriteError as exc:
        what, fix = str(exc), remedy(exc.errno)
    except OSError as exc:
        if exc.errno not in DISK_ERRNOS:
            raise
        what, fix = disk_trouble(exc, run_dir)
    else:
        return
    kept = complete_checkpoints(run_dir)
    raise RunWriteError(
        f"{what}; the run stopped "
        + (f"with {kept[0]} kept" if kept else "before its first checkpoint")
        + f": {fix} and continue with {command}"
    )


#: The run directories this process holds: resolved path -> its lock's file descriptor.
_HELD: dict[Path, int] = {}


@contextlib.contextmanager
def hold_run(run_dir: Path) -> Iterator[None]:
    """Hold ``run_dir`` for this process while it writes there (re-entrant).

    A second process that would write in the same run (a second ``--resume``, a cloning
    resume inside a running pipeline) is refused until this one ends: two writers would
    interleave ``metrics.jsonl`` and replace each other's checkpoints. The lock is the OS's
    (``flock`` on ``RUN_DIR/.lock``), so a process that dies, even by SIGKILL, drops it.

    Raises:
        FileExistsError: Another process holds the run; the message gives its pid.
    """
    key = Path(run_dir).resolve()
    if key in _HELD:  # held further up this call stack
        yield
        return
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not a POSIX system: no lock
        yield
        return
    fd = os.open(key / ".lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        pid = os.read(fd, 32).decode(errors="replace").strip()
        os.close(fd)
        raise FileExistsError(
            f"{run_dir} is in use by another process (pid {pid or '?'}) that is training or "
            "cloning in it: wait for it to end, or stop it, then run this again"
        ) from None
    with contextlib.suppress(OSError):  # the pid is only for the message above
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode())
    _HELD[key] = fd
    try:
        yield
    finally:
        del _HELD[key]
        os.close(fd)


def write_config(run_dir: Path, cfg: Config) -> None:
    """Write a new run's ``config.json`` (atomically: a run directory never has half of one).

    Raises:
        RunWriteError: The disk refused it; the folder, made for this run, is removed if empty.
    """
    from agent_gym.paths import atomic_write_text

    try:
        atomic_write_text(run_dir / "config.json", dumps(cfg))
    except OSError as exc:
        if exc.errno not in DISK_ERRNOS:
            raise
        with contextlib.suppress(OSError):
            run_dir.rmdir()
        what, fix = disk_trouble(exc, run_dir / "config.json")
        raise RunWriteError(f"{what}; nothing ran: {fix} and run the command again") from None


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
    """A JSON object from ``path``; ``{}`` when the file is missing.

    Raises:
        ValueError: The file is there but not a JSON object (runs write theirs whole, so it
            was damaged or edited); the message names it.
    """
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:  # UnicodeDecodeError too
        problem = f"not valid JSON ({exc})"
    else:
        if isinstance(data, dict):
            return data
        problem = f"a JSON {type(data).__name__}, not an object"
    raise ValueError(f"{path}: {problem}; restore it, or delete it for the run to write it again")


def write_json(path: Path, data: dict[str, Any]) -> None:
    """Write ``data`` atomically (a reader never sees half a file)."""
    from agent_gym.paths import atomic_write_text

    atomic_write_text(path, json.dumps(data, indent=2))
