"""Where a run's numbers go besides ``metrics.jsonl``: TensorBoard and Weights & Biases.

``run.loggers = ["tensorboard", "wandb"]`` in a recipe picks them; :func:`make_loggers` builds
them and the trainer calls the :class:`Logger` methods. Each logger is optional and imported
only when named, so a run without W&B never imports ``wandb``.

* ``tensorboard``: event files under ``run_dir/tb`` (``tensorboard --logdir runs``); the
  config and tables are written as text (TensorBoard has no table type).
* ``wandb``: a W&B run with ``dir=run_dir`` (files under ``run_dir/wandb``), the resolved
  config as its config, scalars as history and tables as ``wandb.Table``. The project is
  ``$WANDB_PROJECT`` (default ``agent-gym``); ``WANDB_MODE=offline`` keeps everything on disk
  for a later ``wandb sync``. On resume the same W&B run continues (its id is kept in
  ``run_dir/wandb_run_id``).

Non-finite values (NaN, inf) and non-numbers are skipped by every logger: they would break
TensorBoard's charts and W&B's summaries.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

#: The names ``run.loggers`` accepts.
LOGGER_NAMES: tuple[str, ...] = ("tensorboard", "wandb")


@runtime_checkable
class Logger(Protocol):
    """A sink for a run's scalars and tables."""

    def log_scalars(self, step: int, metrics: dict[str, float]) -> None:
        """Record ``metrics`` at ``step`` (non-finite values and non-numbers are skipped)."""
        ...

    def log_table(self, name: str, columns: list[str], rows: list[list]) -> None:
        """Record a table (e.g. the eval episodes) at the latest step."""
        ...

    def close(self) -> None:
        """Flush and release; idempotent."""
        ...


def finite_scalars(metrics: dict[str, Any]) -> dict[str, float]:
    """The entries of ``metrics`` that are finite numbers, as floats (bools and text dropped).

    Example:
        >>> finite_scalars({"a": 1, "b": float("nan"), "c": "x", "d": True, "e": 2.5})
        {'a': 1.0, 'e': 2.5}
    """
    out = {}
    for key, value in metrics.items():
        if isinstance(value, (bool, str, bytes)):
            continue
        try:
            number = float(value)
        except (TypeError, ValueError):
            continue
        if math.isfinite(number):
            out[key] = number
    return out


def _markdown_table(columns: list[str], rows: list[list]) -> str:
    def cell(value: Any) -> str:
        return str(value).replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(map(cell, columns)) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(map(cell, row)) + " |" for row in rows]
    return "\n".join(lines)


class TensorBoardLogger:
    """TensorBoard event files under ``run_dir/tb`` (torch's ``SummaryWriter``).

    Args:
        run_dir: The run directory.
        config: The resolved config, written once as JSON text under ``config``.
    """

    def __init__(self, run_dir: Path, *, config: dict[str, Any] | None = None) -> None:
        try:
            from torch.utils.tensorboard import SummaryWriter
        except ImportError as exc:  # pragma: no cover - tensorboard is in the train extra
            raise ImportError(
                "run.loggers includes 'tensorboard', which needs the tensorboard package: "
                "pip install 'agent-gym[train]'"
            ) from exc
        self.log_dir = Path(run_dir) / "tb"
        self._writer = SummaryWriter(str(self.log_dir))
        self._step = 0
        if config is not None:
            text = json.dumps(config, indent=2, default=str)
            self._writer.add_text("config", f"```\n{text}\n```", 0)

    def log_scalars(self, step: int, metrics: dict[str, float]) -> None:
        """Add each finite scalar at ``step``."""
        self._step = step
        for key, value in finite_scalars(metrics).items():
            self._writer.add_scalar(key, value, step)
        self._writer.flush()

    def log_table(self, name: str, columns: list[str], rows: list[list]) -> None:
        """Add the table as a Markdown text summary at the latest step."""
        self._writer.add_text(name, _markdown_table(columns, rows), self._step)
        self._writer.flush()

    def close(self) -> None:
        """Flush and close the writer."""
        if self._writer is not None:
            self._writer.close()
            self._writer = None


class WandbLogger:
    """A Weights & Biases run in ``run_dir``.

    Args:
        run_dir: The run directory (W&B writes ``run_dir/wandb``).
        config: The resolved config (the W&B run's config).
        run_name: Display name of the W&B run.
        resume: Continue the W&B run recorded in ``run_dir/wandb_run_id`` if there is one.
        project: W&B project; default ``$WANDB_PROJECT``, else ``agent-gym``.
    """

    def __init__(
        self,
        run_dir: Path,
        *,
        config: dict[str, Any],
        run_name: str,
        resume: bool = False,
        project: str | None = None,
    ) -> None:
        try:
            import wandb
        except ImportError as exc:
            raise ImportError(
                "run.loggers includes 'wandb' but the wandb package is not installed: "
                "pip install 'agent-gym[wandb]' (or drop 'wandb' from run.loggers)"
            ) from exc
        self._wandb = wandb
        run_dir = Path(run_dir)
        run_dir.mkdir(parents=True, exist_ok=True)
        id_file = run_dir / "wandb_run_id"
        run_id = id_file.read_text().strip() if resume and id_file.is_file() else None
        self._run = wandb.init(
            project=project or os.environ.get("WANDB_PROJECT") or "agent-gym",
            name=run_name,
            dir=str(run_dir),
            config=config,
            id=run_id,
            resume="allow" if run_id else None,
        )
        id_file.write_text(self._run.id + "\n")
        self._step = 0

    def log_scalars(self, step: int, metrics: dict[str, float]) -> None:
        """Log the finite scalars at ``step`` (W&B's history step)."""
        self._step = step
        self._run.log(finite_scalars(metrics), step=step)

    def log_table(self, name: str, columns: list[str], rows: list[list]) -> None:
        """Log a ``wandb.Table`` at the latest step."""
        table = self._wandb.Table(columns=list(columns), data=[list(r) for r in rows])
        self._run.log({name: table}, step=self._step)

    def close(self) -> None:
        """Finish the W&B run."""
        if self._run is not None:
            self._run.finish()
            self._run = None


def make_loggers(
    names: Sequence[str],
    run_dir: Path,
    *,
    config: dict,
    run_name: str,
    resume: bool = False,
) -> list[Logger]:
    """Build the loggers named in ``run.loggers``, in order.

    Args:
        names: Logger names from :data:`LOGGER_NAMES`.
        run_dir: The run directory.
        config: The resolved config.
        run_name: The run's name (W&B's display name).
        resume: The run resumes from a checkpoint (W&B continues the same run).

    Raises:
        ValueError: An unknown or repeated name (the message lists the valid ones).
        ImportError: A named logger's package is missing (the message names the extra).
    """
    if isinstance(names, str):
        raise ValueError(f"run.loggers must be a list of names, got the string {names!r}")
    seen: set[str] = set()
    for name in names:
        if name not in LOGGER_NAMES:
            raise ValueError(
                f"unknown logger {name!r} in run.loggers; valid: {', '.join(LOGGER_NAMES)}"
            )
        if name in seen:
            raise ValueError(f"logger {name!r} is listed twice in run.loggers")
        seen.add(name)
    loggers: list[Logger] = []
    try:
        for name in names:
            if name == "tensorboard":
                loggers.append(TensorBoardLogger(run_dir, config=config))
            else:
                loggers.append(
                    WandbLogger(run_dir, config=config, run_name=run_name, resume=resume)
                )
    except BaseException:
        for logger in loggers:
            logger.close()
        raise
    return loggers
