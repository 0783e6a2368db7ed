"""The episode record and its summary, shared by every agent runner.

One type for ``run_episode``, ``agent-gym evaluate`` and ``algos``' rollouts, and one way to
report success with a 95% interval.

>>> eps = [Episode(won=True, length=3, valid_actions=3), Episode(length=5, valid_actions=4)]
>>> s = summarize(eps)
>>> s["success_rate"], s["valid_action_ratio"], s["episode_length"]
(0.5, 0.875, 4.0)
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass
class EpisodeStep:
    """One step of an episode.

    Attributes:
        observation: What the agent acted on (text, or the last message's content).
        action: What the agent answered.
        reward: The reward of this step.
        valid: ``info["is_action_valid"]`` after the step (True when the env does not say).
        terminated: The task ended on this step.
        truncated: A step limit ended the episode on this step.
        info: The env's info after this step (None where the caller does not keep it).
        finish_reason: How a model's response ended (``stop``/``length``), "" for other agents.
    """

    observation: Any
    action: str
    reward: float
    valid: bool = True
    terminated: bool = False
    truncated: bool = False
    info: dict[str, Any] | None = None
    finish_reason: str = ""


@dataclass
class Episode:
    """The outcome of one episode.

    Attributes:
        task: ``info["task"]`` at reset.
        task_id: ``info["task_id"]`` at reset.
        task_type: ``info["task_type"]`` where the env has task types (ALFWorld).
        data_source: ``info["data_source"]`` (``generated:...`` or ``official:...``).
        seed: The reset seed.
        return_: Sum of the rewards (``return`` is a Python keyword).
        won: ``info["won"]`` after the last step.
        score: ``info["score"]`` after the last step (the benchmark's own score).
        length: Steps taken.
        valid_actions: Steps whose action the env understood.
        end_reason: Why it ended: ``terminated`` (the env ended the task), ``truncated`` (the
            env's step limit), ``max_steps`` (the agent-side cap) or ``context_limit`` (in a
            rollout, the prompt no longer fitting its budget); "" while running.
        steps: Every step, in order (empty where the caller does not keep them).
        traj: Index of the episode in its batch (the env slot in a rollout).
        group: Task-group index in a rollout (members of a group share the task).
    """

    task: str = ""
    task_id: str = ""
    task_type: str = ""
    data_source: str = ""
    seed: int | None = None
    return_: float = 0.0
    won: bool = False
    score: float = 0.0
    length: int = 0
    valid_actions: int = 0
    end_reason: str = ""
    steps: list[EpisodeStep] = field(default_factory=list)
    traj: int = 0
    group: int = 0

    @classmethod
    def start(cls, info: dict[str, Any], seed: int | None = None, **fields: Any) -> Episode:
        """A new episode from the env's reset info."""

        def text(key: str) -> str:
            value = info.get(key, "")
            return value if isinstance(value, str) else str(value)

        return cls(
            task=text("task"),
            task_id=text("task_id"),
            task_type=text("task_type"),
            data_source=text("data_source"),
            seed=seed,
            won=bool(info.get("won", False)),
            **fields,
        )

    def record(self, reward: float, info: dict[str, Any], step: EpisodeStep | None = None) -> None:
        """Count one step: its reward, validity, and the env's latest ``won``/``score``."""
        self.return_ += float(reward)
        self.length += 1
        self.valid_actions += bool(info.get("is_action_valid", True))
        self.won = bool(info.get("won", self.won))
        score = info.get("score")
        if isinstance(score, (int, float)) and not isinstance(score, bool):
            self.score = float(score)
        if step is not None:
            self.steps.append(step)

    @property
    def success(self) -> bool:
        """Same as :attr:`won`."""
        return self.won

    @property
    def terminated(self) -> bool:
        """The env ended the task."""
        return self.end_reason == "terminated"

    @property
    def truncated(self) -> bool:
        """A step limit (the env's or the agent's) or the context budget ended the episode."""
        return self.end_reason in ("truncated", "max_steps", "context_limit")

    def to_json(self, *, steps: bool = True) -> dict[str, Any]:
        """A JSON-ready dict (step infos dropped: they can be large and unserialisable)."""
        out = asdict(self)
        out["steps"] = (
            [{k: v for k, v in asdict(s).items() if k != "info"} for s in self.steps]
            if steps
            else []
        )
        return out


def wilson_interval(successes: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """95% Wilson score interval of a success rate (sound at 0%, 100% and small n).

    Example:
        >>> [round(x, 3) for x in wilson_interval(8, 10)]
        [0.49, 0.943]
        >>> lo, hi = wilson_interval(5, 5)
        >>> round(lo, 3), hi
        (0.566, 1.0)
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


def _block(episodes: list[Episode]) -> dict[str, Any]:
    n = len(episodes)
    wins = sum(e.won for e in episodes)
    steps = sum(e.length for e in episodes)
    score, s_lo, s_hi = mean_interval([e.score for e in episodes])
    return {
        "episodes": n,
        "success_rate": wins / max(n, 1),
        "success_ci95": list(wilson_interval(wins, n)),
        "score_mean": score,
        "score_ci95": [s_lo, s_hi],
        "return_mean": sum(e.return_ for e in episodes) / max(n, 1),
        "episode_length": steps / max(n, 1),
        "valid_action_ratio": sum(e.valid_actions for e in episodes) / max(steps, 1),
        "end_reasons": dict(sorted(Counter(e.end_reason for e in episodes).items())),
    }


def summarize(episodes: list[Episode]) -> dict[str, Any]:
    """Success rate (Wilson 95% interval), mean score (normal 95% interval), per task type.

    Also the mean return, episode length, share of valid actions, how episodes ended, the data
    sources, and a one-line ``line`` for printing.
    """
    out = _block(episodes)
    # Where the tasks came from: "generated:*" data is agent-gym's, not the official benchmark.
    out["data_sources"] = sorted({e.data_source for e in episodes if e.data_source})
    by_type: dict[str, list[Episode]] = defaultdict(list)
    for e in episodes:
        if e.task_type:
            by_type[e.task_type].append(e)
    if by_type:
        out["per_task_type"] = {k: _block(v) for k, v in sorted(by_type.items())}
    out["line"] = summary_line(out)
    return out


def summary_line(s: dict[str, Any]) -> str:
    """``success 12.5% (95% CI 4.3%-31.0%), score ..., valid actions ..., length ..., n=..``."""
    lo, hi = s["success_ci95"]
    return (
        f"success {s['success_rate']:.1%} (95% CI {lo:.1%}-{hi:.1%}), score {s['score_mean']:.3f}, "
        f"valid actions {s['valid_action_ratio']:.1%}, length {s['episode_length']:.1f}, "
        f"n={s['episodes']}, data {', '.join(s.get('data_sources', [])) or 'unknown'}"
    )
