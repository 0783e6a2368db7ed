"""Checkpoints: the trained weights, optimiser and RNG states, written atomically, read safely.

Layout of ``RUN_DIR/checkpoints/iter_000007/``:

* ``model.safetensors``: the policy's **trainable** parameters only (the last N layers, the
  LoRA adapters, or everything when everything trains). Frozen weights are not copied: resume
  rebuilds the model exactly as the run started (``model.name``, then ``model.init``) and
  loads these on top;
* ``critic.safetensors``: the critic (critic algorithms);
* ``state.pt``: optimiser states and RNG states, tensors and plain types only, read with
  ``torch.load(weights_only=True)``;
* ``state.json``: the iteration and the file list, written last: a folder without it is
  incomplete.

``RUN_DIR/checkpoints/latest`` names the newest complete one. A checkpoint is written into a
temporary folder that is renamed into place, and ``latest`` is replaced only after that, so
killing a run mid-write leaves the previous checkpoint intact. Nothing in a run directory is
ever unpickled into code: a crafted ``state.pt`` fails to load, it does not run.

Resume (:func:`restore_latest`) takes the newest checkpoint that is complete and loads; a
damaged one is named and skipped for the next older one, and stale temporary folders are
removed.

Data-parallel runs (:mod:`algos.distributed`) write the same files: every rank takes part in
gathering the full weights and optimiser states (FSDP shards are all-gathered), rank 0 alone
writes, and the others wait for it. The files are the one-process layout, so a run saved by N
ranks resumes on any number of ranks. ``state.pt`` also holds every rank's RNG states
(``rank_rng``): rank r resumes its own sampling stream; a rank the saving run did not have
keeps the stream it was seeded with.
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
from algos.distributed import (
    World,
    full_optimizer_state,
    full_tensor,
    plain,
    shard_like,
    shard_optimizer_state,
)

FORMAT = 2
_PREFIX = "iter_"


class CheckpointError(RuntimeError):
    """A checkpoint cannot be read or written; the message names it."""


class CheckpointWriteError(CheckpointError):
    """A checkpoint could not be written (a full disk); its half-written folder is removed.

    ``errno`` is the failed write's (None where the writer gave none).
    """

    def __init__(self, message: str, errno: int | None = None) -> None:
        super().__init__(message)
        self.errno = errno


# ---- RNG states as tensors and plain types ------------------------------------------------


def rng_state(extra: dict[str, torch.Tensor] | None = None) -> dict[str, Any]:
    """The RNG states that sampling and shuffling use, as tensors and plain types.

    Args:
        extra: Private generator states to keep too (the rollout backend's, say).
    """
    kind, keys, pos, has_gauss, gauss = np.random.get_state()
    state: dict[str, Any] = {
        "python": random.getstate(),
        "numpy": [kind, torch.from_numpy(np.asarray(keys, dtype=np.int64)), pos, has_gauss, gauss],
        "torch": torch.get_rng_state(),
        "extra": dict(extra or {}),
    }
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    """Restore what :func:`rng_state` returned (``extra`` is the caller's to restore)."""
    version, internal, gauss = state["python"]
    random.setstate((version, tuple(internal), gauss))
    kind, keys, pos, has_gauss, cached = state["numpy"]
    np.random.set_state((kind, keys.numpy().astype(np.uint32), pos, has_gauss, cached))
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


# ---- weights ------------------------------------------------------------------------------


def trainable_state(module: Any) -> dict[str, torch.Tensor]:
    """Name -> tensor of the parameters that train (``requires_grad``), detached on the CPU.

    A DDP wrapper is looked through and FSDP shards are gathered (every rank must call).
    """
    return {
        name: full_tensor(p).detach().cpu().contiguous()
        for name, p in plain(module).named_parameters()
        if p.requires_grad
    }


def load_trainable(module: Any, path: Path) -> None:
    """Copy the parameters saved in ``path`` into ``module`` by name.

    Raises:
        CheckpointError: The file is damaged, or names a parameter the module does not have
            (or with another shape): the run's model is not the one the checkpoint came from.
    """
    from safetensors.torch import load_file

    try:
        saved = load_file(str(path))
    except Exception as exc:  # noqa: BLE001 - safetensors raises several types on bad files
        raise CheckpointError(f"{path}: cannot read ({type(exc).__name__}: {exc})") from None
    params = dict(plain(module).named_parameters())
    with torch.no_grad():
        for name, tensor in saved.items():
            if name not in params or params[name].shape != tensor.shape:
                raise CheckpointError(
                    f"{path}: parameter {name} {tuple(tensor.shape)} does not fit this model"
                )
            value = tensor.to(params[name].device, params[name].dtype)
            params[name].copy_(shard_like(params[name], value))  # this rank's shard under FSDP


# ---- writing ------------------------------------------------------------------------------


def save_checkpoint(
    run_dir: Path,
    iteration: int,
    learner: Any,
    *,
    keep: int = 2,
    extra_rng: dict[str, torch.Tensor] | None = None,
) -> Path:
    """Write checkpoint ``iteration`` and point ``latest`` at it; keep the newest ``keep`` (0: all).

    Every rank of a data-parallel run calls this; rank 0 writes (module docstring).

    Raises:
        CheckpointWriteError: The write failed (any error: safetensors has its own type for
            I/O); the half-written folder is removed, the earlier checkpoints are kept.
    """
    from safetensors.torch import save_file

    world = getattr(learner, "world", None) or World()
    model_state = trainable_state(learner.model)
    optim = {"actor": full_optimizer_state(learner.optimizer.state_dict())}
    critic_state = None
    if learner.critic is not None:
        critic_state = trainable_state(learner.critic)
        optim["critic"] = full_optimizer_state(learner.critic_optimizer.state_dict())
    state = {"optim": optim, "rng": rng_state(extra_rng)}
    if world.size > 1:
        state["rank_rng"] = world.all_gather_object(state["rng"])
    root = Path(run_dir) / "checkpoints"
    final = root / f"{_PREFIX}{iteration:06d}"
    if not world.is_main:
        world.barrier()  # until rank 0 has written it
        return final
    root.mkdir(parents=True, exist_ok=True)
    tmp = root / f".{final.name}.{os.getpid()}.tmp"
    if tmp.exists():
        shutil.rmtree(tmp)
    try:
        tmp.mkdir()
        files = ["model.safetensors", "state.pt"]
        save_file(model_state, str(tmp / "model.safetensors"))
        if critic_state is not None:
            save_file(critic_state, str(tmp / "critic.safetensors"))
            files.append("critic.safetensors")
        torch.save(state, tmp / "state.pt")
        meta = {"format": FORMAT, "iteration": iteration, "files": files}
        (tmp / "state.json").write_text(json.dumps(meta))
    except Exception as exc:  # noqa: BLE001 - safetensors has its own error type for I/O
        shutil.rmtree(tmp, ignore_errors=True)
        raise CheckpointWriteError(
            f"{final}: cannot write it ({type(exc).__name__}: {exc})", getattr(exc, "errno", None)
        ) from None
    if final.exists():
        shutil.rmtree(final)
    os.replace(tmp, final)
    atomic_write_text(root / "latest", final.name + "\n")
    for old in complete_checkpoints(run_dir)[keep:] if keep else []:
        shutil.rmtree(old, ignore_errors=True)
    world.barrier()
    return final


# ---- reading ------------------------------------------------------------------------------


def _meta(path: Path) -> dict[str, Any] | None:
    try:
        meta = json.loads((path / "state.json").read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        return None
    if not all((path / f).is_file() for f in meta.get("files", [])):
        return None
    return meta


def complete_checkpoints(run_dir: Path) -> list[Path]:
    """The run's complete checkpoints, newest first (``state.json`` and every file present)."""
    root = Path(run_dir) / "checkpoints"
    if not root.is_dir():
        return []
    found = [p for p in root.glob(f"{_PREFIX}*") if p.is_dir() and _meta(p) is not None]
    return sorted(found, key=lambda p: p.name, reverse=True)


def latest_checkpoint(run_dir: Path) -> Path | None:
    """The newest complete checkpoint: the one ``latest`` names, else the newest on disk."""
    pointer = Path(run_dir) / "checkpoints" / "latest"
    if pointer.is_file():
        named = pointer.parent / pointer.read_text().strip()
        if named.is_dir() and _meta(named) is not None:
            return named
    done = complete_checkpoints(run_dir)
    return done[0] if done else None


def done_iterations(run_dir: Path) -> int:
    """The iteration of the run's newest complete checkpoint (0 when none is written).

    Reads only JSON: cheap enough to check a resume's arguments before any model loads.
    """
    path = latest_checkpoint(run_dir)
    return int(_meta(path)["iteration"]) if path is not None else 0


def load_checkpoint(path: Path, learner: Any) -> tuple[int, dict[str, torch.Tensor]]:
    """Load a checkpoint into ``learner`` and the global RNGs.

    Returns:
        ``(iteration, extra_rng)``: the checkpoint's iteration and the private generator
        states saved with it.

    Raises:
        CheckpointError: A file is missing, damaged, or not plain data (a pickle that would
            run code is refused); the message names the file.
    """
    meta = _meta(path)
    if meta is None:
        raise CheckpointError(f"{path}: incomplete checkpoint (state.json missing or bad)")
    load_trainable(learner.model, path / "model.safetensors")
    if learner.critic is not None:
        load_trainable(learner.critic, path / "critic.safetensors")
    try:
        state = torch.load(path / "state.pt", map_location=learner.device, weights_only=True)
    except Exception as exc:  # noqa: BLE001 - UnpicklingError, EOFError, RuntimeError, ...
        raise CheckpointError(
            f"{path / 'state.pt'}: cannot read as plain data ({type(exc).__name__}: {exc})"
        ) from None
    world = getattr(learner, "world", None) or World()
    try:
        optim = state["optim"]
        learner.optimizer.load_state_dict(shard_optimizer_state(optim["actor"], learner.optimizer))
        if learner.critic is not None:
            opt = learner.critic_optimizer
            opt.load_state_dict(shard_optimizer_state(optim["critic"], opt))
        rng = state["rng"]
        ranks = state.get("rank_rng") or [rng]
        set_rng_state(rng)
        mine = ranks[world.rank] if world.rank < len(ranks) else None
        if mine is not None:
            set_rng_state(mine)
    except (KeyError, ValueError, TypeError, RuntimeError) as exc:
        raise CheckpointError(f"{path / 'state.pt'}: does not fit this run ({exc})") from None
    return int(meta["iteration"]), dict(mine.get("extra", {})) if mine is not None else {}


def remove_stale_temporaries(run_dir: Path) -> list[Path]:
    """Delete ``.iter_*.tmp`` folders left by a run killed mid-write; return them."""
    root = Path(run_dir) / "checkpoints"
    stale = list(root.glob(f".{_PREFIX}*.tmp")) if root.is_dir() else []
    for path in stale:
        shutil.rmtree(path, ignore_errors=True)
    return stale


def restore_latest(
    run_dir: Path, learner: Any, log: Any = print
) -> tuple[int, dict[str, torch.Tensor]]:
    """Load the newest loadable checkpoint of ``run_dir``, falling back to older ones.

    Returns:
        ``(iteration, extra_rng)`` of the checkpoint loaded.

    Raises:
        FileNotFoundError: The run has no complete, loadable checkpoint (the message names
            every damaged one).
    """
    for path in remove_stale_temporaries(run_dir):
        log(f"removed {path.name}, left by a checkpoint write that did not finish")
    problems = []
    candidates = complete_checkpoints(run_dir)
    newest = latest_checkpoint(run_dir)
    if newest is not None and newest in candidates:
        candidates.remove(newest)
        candidates.insert(0, newest)
    for path in candidates:
        try:
            result = load_checkpoint(path, learner)
        except CheckpointError as exc:
            problems.append(str(exc))
            log(f"skipping damaged checkpoint: {exc}")
            continue
        if problems:
            log(f"resuming from the older checkpoint {path.name}")
        return result
    detail = "; ".join(problems) if problems else "none written yet"
    raise FileNotFoundError(f"{run_dir}: no complete checkpoint to resume from ({detail})")


def split_checkpoint_path(path: Path) -> tuple[Path, Path | None]:
    """``RUN_DIR`` -> ``(RUN_DIR, None)``; ``RUN_DIR/checkpoints/iter_N`` -> ``(RUN_DIR, that)``.

    >>> split_checkpoint_path(Path("runs/a/checkpoints/iter_000012"))
    (PosixPath('runs/a'), PosixPath('runs/a/checkpoints/iter_000012'))
    >>> split_checkpoint_path(Path("runs/a"))
    (PosixPath('runs/a'), None)
    """
    path = Path(path)
    if path.parent.name == "checkpoints" and path.name.startswith(_PREFIX):
        return path.parent.parent, path
    return path, None


def pin_init(init: str) -> str:
    """``model.init`` as a run records it: a run directory becomes its newest complete checkpoint.

    A run that starts from ``RUN_DIR`` must resume from the same weights even if ``RUN_DIR``
    trains on meanwhile, so the run's ``config.json`` names the checkpoint it started from.
    ``""``, ``"sft"``, one checkpoint, and a folder without checkpoints (``load_init`` then
    says what is wrong) come back as they are.

    >>> pin_init("")
    ''
    """
    if init in ("", "sft"):
        return init
    run_dir, chosen = split_checkpoint_path(Path(init))
    newest = None if chosen is not None else latest_checkpoint(run_dir)
    return init if newest is None else str(newest)


def init_chain(run_dir: Path, model_name: str | None = None, _depth: int = 0) -> list[Path]:
    """The checkpoints ``model.init = run_dir`` applies, the oldest starting point first.

    ``run_dir`` is a run directory (its newest complete checkpoint) or one of its checkpoints,
    ``RUN_DIR/checkpoints/iter_N``. A checkpoint holds only what that run trained, so the
    other run's own starting point (its ``model.init``, recursively) comes first; its
    ``model.name`` must be this run's. Reads only JSON files: cheap enough to call before any
    model is loaded, so a wrong ``model.init`` is one line at once.

    Raises:
        FileNotFoundError: ``run_dir`` has no complete checkpoint, or the named one is not
            complete.
        ValueError: The other run trained another base model, or the inits loop.
    """
    run_dir, chosen = split_checkpoint_path(Path(run_dir))
    if chosen is not None and _meta(chosen) is None:
        raise FileNotFoundError(
            f"model.init={str(chosen)!r}: not a complete checkpoint (no such folder, or its "
            "state.json or a file it lists is missing; a run keeps only its last "
            "run.keep_checkpoints checkpoints)"
        )
    if _depth > 16:
        raise ValueError(f"model.init={str(run_dir)!r}: runs start from each other in a loop")
    chain: list[Path] = []
    config = run_dir / "config.json"
    if config.is_file():
        try:
            other = json.loads(config.read_text())["model"]
        except (ValueError, TypeError, KeyError) as exc:
            raise ValueError(
                f"model.init={str(run_dir)!r}: {config} is not a run's config (JSON with a "
                f"[model] section): {type(exc).__name__}: {exc}"
            ) from None
        if model_name is not None and other.get("name", model_name) != model_name:
            raise ValueError(
                f"model.init={str(run_dir)!r} trained {other['name']!r}, this run loads "
                f"{model_name!r}: set model.name to the same model"
            )
        if other.get("init"):
            # "sft": that run cloned the expert first, into its own sft/ stage directory
            start = run_dir / "sft" if other["init"] == "sft" else Path(other["init"])
            chain = init_chain(start, model_name, _depth + 1)
    path = chosen or latest_checkpoint(run_dir)
    if path is None:
        raise FileNotFoundError(
            f"model.init={str(run_dir)!r}: no complete checkpoint there (a run directory of "
            "`algos train` or `algos sft` holds checkpoints/latest)"
        )
    return [*chain, path]


def load_init(model: Any, run_dir: Path, model_name: str | None = None) -> int:
    """Start ``model`` from another run's weights (``model.init``); return their iteration.

    Applies :func:`init_chain`'s checkpoints in order.

    Raises:
        FileNotFoundError: ``run_dir`` has no complete checkpoint, or the named one is not
            complete.
        ValueError: The other run trained another base model, or the inits loop.
        CheckpointError: Its weights do not fit ``model`` (another architecture).
    """
    chain = init_chain(run_dir, model_name)
    for path in chain:
        load_trainable(model, path / "model.safetensors")
    return int(json.loads((chain[-1] / "state.json").read_text())["iteration"])
