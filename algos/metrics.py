"""Run logging: ``metrics.jsonl`` (one line per iteration), episodes JSONL, and the loggers.

The loggers (TensorBoard, Weights & Biases) are those of :mod:`algos.loggers`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any


def progress_bar(enabled: bool, desc: str, *, total: int | None = None, unit: str = "it") -> Any:
    """A tqdm bar that leaves no line behind; a silent one (same methods) when not ``enabled``."""
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, unit=unit, leave=False, dynamic_ncols=True,
                disable=not enabled)  # fmt: skip


class MetricsLogger:
    """Append iteration metrics to ``metrics.jsonl`` and to the configured loggers.

    Args:
        run_dir: The run directory.
        loggers: Logger names for :func:`algos.loggers.make_loggers` (``tensorboard``,
            ``wandb``); ``metrics.jsonl`` is always written.
        config: The resolved config (W&B records it).
        resume_from: On resume, drop lines of iterations after this one (they belonged to
            an iteration whose checkpoint was never written).
        enabled: False: write nothing (the ranks > 0 of a data-parallel run; rank 0 logs).
    """

    def __init__(
        self,
        run_dir: Path,
        *,
        loggers: Sequence[str] = ("tensorboard",),
        config: dict[str, Any] | None = None,
        resume_from: int | None = None,
        enabled: bool = True,
    ) -> None:
        self.path = Path(run_dir) / "metrics.jsonl"
        self.episodes_path = Path(run_dir) / "episodes.jsonl"
        self.enabled = enabled
        self._loggers: list[Any] = []
        if not enabled:
            return
        if resume_from is not None:
            for path in (self.path, self.episodes_path):
                _truncate_after(path, resume_from)
        if loggers:
            from algos.loggers import make_loggers

            self._loggers = make_loggers(
                list(loggers),
                Path(run_dir),
                config=config or {},
                run_name=Path(run_dir).name,
                resume=resume_from is not None and resume_from > 0,
            )

    def log(self, iteration: int, metrics: dict[str, Any]) -> None:
        """Write one iteration's metrics (numbers only go to the loggers)."""
        if not self.enabled:
            return
        append_jsonl(self.path, [{"iteration": iteration, **metrics}])
        scalars = {
            k: float(v)
            for k, v in metrics.items()
            if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
        }
        for logger in self._loggers:
            logger.log_scalars(iteration, scalars)

    def log_episodes(self, iteration: int, episodes: list[dict[str, Any]]) -> None:
        """Append sampled episodes (one JSON object per line)."""
        if not self.enabled:
            return
        append_jsonl(self.episodes_path, [{"iteration": iteration, **ep} for ep in episodes])

    def log_eval(self, summary: dict[str, Any]) -> None:
        """Send the evaluation table (one row per policy) to the loggers."""
        columns = ["policy", "success", "ci95_low", "ci95_high", "score", "valid", "length", "n"]
        rows = [
            [name, s["success_rate"], *s["success_ci95"], s["score_mean"],
             s["valid_action_ratio"], s["episode_length"], s["episodes"]]
            for name, s in summary.items()
            if isinstance(s, dict) and "success_rate" in s
        ]  # fmt: skip
        for logger in self._loggers:
            logger.log_table("eval", columns, rows)

    def close(self) -> None:
        """Flush and close the loggers."""
        for logger in self._loggers:
            logger.close()


def append_jsonl(path: str | Path, records: list[dict[str, Any]]) -> None:
    """Append ``records`` as JSON lines (what JSON lacks as text); an OSError names ``path``.

    A write cut short leaves a torn last line, which a resume drops (:func:`_records`).
    """
    try:
        with Path(path).open("a", encoding="utf-8") as fh:
            fh.write("".join(json.dumps(record, default=str) + "\n" for record in records))
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror, str(path)) from None


def _records(path: Path) -> list[tuple[str, dict[str, Any]]]:
    """``(line, record)`` of a JSONL file, tolerating a torn last line (a run killed mid-write).

    Raises:
        ValueError: The file is not UTF-8 text, or a line before the last is not a JSON
            object; the message names the file (and the line).
    """
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: not a JSON-lines text file ({exc})") from None
    lines = [line for line in text.splitlines() if line.strip()]
    out = []
    for k, line in enumerate(lines):
        try:
            record = json.loads(line)
            problem = "" if isinstance(record, dict) else "is not a JSON object"
        except ValueError:
            problem = "is not valid JSON"
        if problem:
            if k == len(lines) - 1:
                break  # the write that was interrupted: drop it
            raise ValueError(f"{path}: line {k + 1} {problem}")
        out.append((line, record))
    return out


def read_metrics(run_dir: str | Path) -> list[dict[str, Any]]:
    """All records of a run's ``metrics.jsonl`` (a torn last line is ignored)."""
    path = Path(run_dir) / "metrics.jsonl"
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found: is {run_dir} a run directory?")
    return [rec for _, rec in _records(path)]


def _truncate_after(path: Path, iteration: int) -> None:
    if not path.is_file():
        return
    keep = [line for line, rec in _records(path) if rec.get("iteration", -1) <= iteration]
    from agent_gym.paths import atomic_write_text

    atomic_write_text(path, "".join(line + "\n" for line in keep))
