"""Run logging: ``metrics.jsonl`` (one line per iteration), TensorBoard events, episodes JSONL."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any


def wilson_interval(successes: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """95% Wilson score interval of a success rate (sound at 0%, 100% and small n).

    Example:
        >>> [round(x, 3) for x in wilson_interval(8, 10)]
        [0.49, 0.943]
    """
    if n == 0:
        return (0.0, 1.0)
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))


def mean_interval(values: list[float], z: float = 1.96) -> tuple[float, float, float]:
    """Mean and normal-approximation 95% interval ``mean +- z * s / sqrt(n)``."""
    n = len(values)
    if n == 0:
        return (0.0, 0.0, 0.0)
    mean = sum(values) / n
    if n == 1:
        return (mean, mean, mean)
    var = sum((v - mean) ** 2 for v in values) / (n - 1)
    half = z * math.sqrt(var / n)
    return (mean, mean - half, mean + half)


class MetricsLogger:
    """Append iteration metrics to ``metrics.jsonl`` and, optionally, TensorBoard.

    Args:
        run_dir: The run directory.
        tensorboard: Also write TensorBoard events under ``run_dir/tb``.
        resume_from: On resume, drop lines of iterations after this one (they belonged to
            an iteration whose checkpoint was never written).
    """

    def __init__(
        self, run_dir: Path, *, tensorboard: bool = True, resume_from: int | None = None
    ) -> None:
        self.path = Path(run_dir) / "metrics.jsonl"
        self.episodes_path = Path(run_dir) / "episodes.jsonl"
        if resume_from is not None:
            for path in (self.path, self.episodes_path):
                _truncate_after(path, resume_from)
        self._tb = None
        if tensorboard:
            try:
                from torch.utils.tensorboard import SummaryWriter

                self._tb = SummaryWriter(str(Path(run_dir) / "tb"))
            except ImportError:  # pragma: no cover - tensorboard is in the train extra
                self._tb = None

    def log(self, iteration: int, metrics: dict[str, Any]) -> None:
        """Write one iteration's metrics (numbers only go to TensorBoard)."""
        row = {"iteration": iteration, **metrics}
        with self.path.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(row) + "\n")
        if self._tb is not None:
            for k, v in metrics.items():
                if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v):
                    self._tb.add_scalar(k, v, iteration)
            self._tb.flush()

    def log_episodes(self, iteration: int, episodes: list[dict[str, Any]]) -> None:
        """Append sampled episodes (one JSON object per line)."""
        with self.episodes_path.open("a", encoding="utf-8") as fh:
            for ep in episodes:
                fh.write(json.dumps({"iteration": iteration, **ep}) + "\n")

    def close(self) -> None:
        """Flush and close TensorBoard."""
        if self._tb is not None:
            self._tb.close()


def read_metrics(run_dir: str | Path) -> list[dict[str, Any]]:
    """All lines of a run's ``metrics.jsonl``."""
    path = Path(run_dir) / "metrics.jsonl"
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found: is {run_dir} a run directory?")
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _truncate_after(path: Path, iteration: int) -> None:
    if not path.is_file():
        return
    keep = [
        line
        for line in path.read_text().splitlines()
        if line.strip() and json.loads(line).get("iteration", -1) <= iteration
    ]
    from agent_gym.paths import atomic_write_text

    atomic_write_text(path, "".join(line + "\n" for line in keep))
