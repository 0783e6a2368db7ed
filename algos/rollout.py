"""Rollout: step a grouped set of envs with a policy until every episode ends.

One row per LLM call (one env step), token-in/token-out: the prompt ids are the chat template
applied once to the observation's messages (see :mod:`algos.context` for the length rule), the
response ids and log-probs are exactly what the backend sampled, and the env receives the
response decoded with special tokens skipped. Nothing is re-tokenised from text.

Groups: env ``i`` belongs to task group ``groups[i]`` and is reset with ``seeds[i]``; members
of a group share a seed and so start in the identical state (GRPO/GiGPO groups).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from algos.backends.base import PolicyBackend, SamplingParams
from algos.context import as_messages, fit_prompt
from algos.env_slots import EnvSlots

#: Why an episode ended: the env said so, the env's step limit, the rollout's own step cap,
#: or the prompt no longer fitting the context budget even with all history dropped.
END_REASONS = ("terminated", "truncated", "max_steps", "context_limit")


@dataclass
class StepRecord:
    """One env step as the learner sees it (one row of the future ``StepBatch``)."""

    prompt_ids: list[int]
    response_ids: list[int]
    logprobs: list[float] | None
    reward: float
    group: int
    traj: int
    step: int
    anchor_obs: str
    is_action_valid: bool
    terminated: bool = False
    truncated: bool = False
    end_reason: str = ""
    finish_reason: str = "stop"
    action: str = ""
    history_dropped: int = 0


@dataclass
class Episode:
    """Summary of one trajectory (also what the sampled-episodes JSONL holds)."""

    traj: int
    group: int
    seed: int | None
    task: str = ""
    task_id: str = ""
    task_type: str = ""
    ret: float = 0.0
    won: bool = False
    score: float = 0.0
    length: int = 0
    valid_actions: int = 0
    end_reason: str = ""
    steps: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class RolloutResult:
    """All rows and episodes of one rollout, with token counts and timing."""

    rows: list[StepRecord]
    episodes: list[Episode]
    prompt_tokens: int = 0
    response_tokens: int = 0
    seconds: float = 0.0
    generate_seconds: float = 0.0

    def summary(self) -> dict[str, float]:
        """Episode-level means: success, return, score, length, valid-action ratio."""
        eps = self.episodes
        n = max(len(eps), 1)
        steps = sum(e.length for e in eps)
        return {
            "success_rate": sum(e.won for e in eps) / n,
            "return_mean": sum(e.ret for e in eps) / n,
            "score_mean": sum(e.score for e in eps) / n,
            "episode_length": steps / n,
            "valid_action_ratio": sum(e.valid_actions for e in eps) / max(steps, 1),
            "context_limit_rate": sum(e.end_reason == "context_limit" for e in eps) / n,
        }


def _info_str(info: dict[str, Any], key: str, default: str = "") -> str:
    value = info.get(key, default)
    return value if isinstance(value, str) else str(value)


def rollout(
    envs: Any,
    backend: PolicyBackend,
    *,
    seeds: list[int | None],
    groups: list[int],
    sampling: SamplingParams,
    max_prompt_tokens: int = 2048,
    max_steps: int | None = None,
    shorter: Callable[[int, int], Any] | None = None,
    record_text: bool = True,
    progress: bool = False,
) -> RolloutResult:
    """Run one episode in every env and return its step rows.

    Args:
        envs: A list of envs or a vector env with autoreset disabled (see
            :class:`~algos.env_slots.EnvSlots`); observations are chat message lists (a
            ``ChatPrompt`` wrapper) or plain strings (sent as one user message).
        backend: The policy.
        seeds: (num_envs,) reset seed of each env; group members share one.
        groups: (num_envs,) task-group index of each env.
        sampling: Sampling settings.
        max_prompt_tokens: Prompt budget of the context-length rule (:mod:`algos.context`).
        max_steps: Optional cap on steps per episode (reason ``"max_steps"``), besides the
            env's own ``TimeLimit`` (reason ``"truncated"``).
        shorter: ``shorter(env_index, k)`` -> the current prompt with only ``k`` history
            entries, for observations that render history inside one message.
        record_text: Keep each step's observation and action text in the episodes.
        progress: Show a progress bar over env steps.

    Returns:
        A :class:`RolloutResult`; ``rows`` are in step order, ``traj`` is the env index.
    """
    slots = envs if isinstance(envs, EnvSlots) else EnvSlots(envs)
    n = slots.num_envs
    if len(seeds) != n or len(groups) != n:
        raise ValueError(f"seeds ({len(seeds)}) and groups ({len(groups)}) need {n} entries")
    tok = backend.tokenizer
    t0 = time.perf_counter()
    obs, infos = slots.reset(list(seeds))
    episodes = [
        Episode(
            traj=i,
            group=int(groups[i]),
            seed=seeds[i],
            task=_info_str(infos[i], "task"),
            task_id=_info_str(infos[i], "task_id"),
            task_type=_info_str(infos[i], "task_type"),
        )
        for i in range(n)
    ]
    anchors = [_info_str(info, "anchor_obs") for info in infos]
    active = list(range(n))
    rows: list[StepRecord] = []
    last_row: dict[int, StepRecord] = {}
    result = RolloutResult(rows=rows, episodes=episodes)
    bar = _progress_bar(progress, n)
    step = 0

    def end(i: int, reason: str, term: bool = False, trunc: bool = False) -> None:
        episodes[i].end_reason = reason
        if i in last_row:
            row = last_row[i]
            row.terminated, row.truncated, row.end_reason = term, trunc, reason
        if bar is not None:
            bar.update(1)

    while active:
        prompts, owners, dropped = [], [], []
        for i in active:
            if tok is None:  # chat-mode backend (an OpenAI endpoint): messages, no ids
                prompts.append(as_messages(obs[i]))
                owners.append(i)
                dropped.append(0)
                continue
            cb = (lambda k, i=i: shorter(i, k)) if shorter is not None else None
            ids, n_drop = fit_prompt(tok, as_messages(obs[i]), max_prompt_tokens, cb)
            if ids is None:
                end(i, "context_limit", trunc=True)
                continue
            prompts.append(ids)
            owners.append(i)
            dropped.append(n_drop)
        if not owners:
            break
        g0 = time.perf_counter()
        gens = backend.generate(prompts, sampling)
        result.generate_seconds += time.perf_counter() - g0
        outcomes = slots.step({i: g.text for i, g in zip(owners, gens)})
        still = []
        for i, ids, gen, n_drop in zip(owners, prompts, gens, dropped):
            o, r, term, trunc, info = outcomes[i]
            valid = bool(info.get("is_action_valid", True))
            if tok is None:
                ids = []
            row = StepRecord(
                prompt_ids=ids,
                response_ids=gen.token_ids,
                logprobs=gen.logprobs,
                reward=float(r),
                group=int(groups[i]),
                traj=i,
                step=step,
                anchor_obs=anchors[i],
                is_action_valid=valid,
                finish_reason=gen.finish_reason,
                action=gen.text,
                history_dropped=n_drop,
            )
            rows.append(row)
            last_row[i] = row
            result.prompt_tokens += len(ids)
            result.response_tokens += len(gen.token_ids)
            ep = episodes[i]
            ep.ret += float(r)
            ep.length += 1
            ep.valid_actions += valid
            ep.won = bool(info.get("won", ep.won))
            ep.score = float(info.get("score", ep.score))
            if record_text:
                msgs = as_messages(obs[i])
                ep.steps.append(
                    {
                        "observation": msgs[-1]["content"],
                        "action": gen.text,
                        "reward": float(r),
                        "valid": valid,
                        "finish_reason": gen.finish_reason,
                    }
                )
            obs[i] = o
            anchors[i] = _info_str(info, "anchor_obs")
            if term or trunc:
                end(i, "terminated" if term else "truncated", term=bool(term), trunc=bool(trunc))
            elif max_steps is not None and ep.length >= max_steps:
                end(i, "max_steps", trunc=True)
            else:
                still.append(i)
        active = still
        step += 1
    if bar is not None:
        bar.close()
    result.seconds = time.perf_counter() - t0
    return result


def _progress_bar(enabled: bool, total: int) -> Any:
    if not enabled:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, desc="rollout (episodes done)", leave=False, dynamic_ncols=True)
