"""Rollout: step a grouped set of envs with a policy until every episode ends.

The result is a :class:`~algos.batch.StepBatch` with one row per LLM call (one env step),
token-in/token-out: the prompt ids are the chat template applied once to the observation's
messages (see :mod:`algos.context` for the length rule), the response ids and log-probs
(``old_log_prob``) are exactly what the backend sampled, and the env receives the response
decoded with special tokens skipped. Nothing is re-tokenised from text.

Groups: env ``i`` belongs to task group ``groups[i]`` (the row's ``index``) and is reset with
``seeds[i]``; members of a group share a seed and so start in the identical state
(GRPO/GiGPO groups). ``traj_uid`` is the env index, ``step_index`` the step number.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from algos.backends.base import PolicyBackend, SamplingParams
from algos.batch import StepBatch
from algos.context import as_messages, fit_prompt
from algos.env_slots import EnvSlots

#: Why an episode ended: the env said so, the env's step limit, the rollout's own step cap,
#: or the prompt no longer fitting the context budget even with all history dropped.
END_REASONS = ("terminated", "truncated", "max_steps", "context_limit")


@dataclass
class Episode:
    """Summary of one trajectory (also what the sampled-episodes JSONL holds)."""

    traj: int
    group: int
    seed: int | None
    task: str = ""
    task_id: str = ""
    task_type: str = ""
    data_source: str = ""
    ret: float = 0.0
    won: bool = False
    score: float = 0.0
    length: int = 0
    valid_actions: int = 0
    end_reason: str = ""
    steps: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class RolloutResult:
    """One rollout: the step rows as a ``StepBatch``, the episodes, token counts and timing.

    Attributes:
        batch: (B rows) every field of the batch contract except the learner's own
            (``ref_log_prob``, ``values``), the end reason included; ``old_log_prob`` holds the sampled log-probs
            (``None`` when the backend returns none). ``None`` when no step was taken.
        actions: (B,) object array of the decoded responses (what each env received).
        episodes: One :class:`Episode` per env, in env order.
    """

    batch: StepBatch | None
    actions: np.ndarray
    episodes: list[Episode]
    prompt_tokens: int = 0
    response_tokens: int = 0
    trimmed_prompts: int = 0
    """Rows whose prompt lost older history to fit ``max_prompt_tokens``."""
    seconds: float = 0.0
    generate_seconds: float = 0.0

    def __len__(self) -> int:
        return 0 if self.batch is None else len(self.batch)

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


class _Rows:
    """Column lists of the rows being collected (turned into a StepBatch at the end)."""

    def __init__(self) -> None:
        self.prompt: list[list[int]] = []
        self.response: list[list[int]] = []
        self.logprobs: list[list[float] | None] = []
        self.reward: list[float] = []
        self.group: list[int] = []
        self.traj: list[int] = []
        self.step: list[int] = []
        self.anchor: list[str] = []
        self.valid: list[bool] = []
        self.terminated: list[bool] = []
        self.truncated: list[bool] = []
        self.end_reason: list[str] = []
        self.action: list[str] = []

    def to_batch(self, pad_id: int) -> StepBatch | None:
        n = len(self.response)
        if n == 0:
            return None
        width = max([len(r) for r in self.response] + [1])
        ids = torch.full((n, width), pad_id, dtype=torch.long)
        mask = torch.zeros((n, width), dtype=torch.float32)
        has_logp = all(lp is not None for lp in self.logprobs)
        logp = torch.zeros((n, width), dtype=torch.float32) if has_logp else None
        for i, r in enumerate(self.response):
            ids[i, : len(r)] = torch.tensor(r, dtype=torch.long)
            mask[i, : len(r)] = 1.0
            if logp is not None:
                logp[i, : len(r)] = torch.tensor(self.logprobs[i], dtype=torch.float32)
        return StepBatch(
            prompt_ids=[torch.tensor(p, dtype=torch.long) for p in self.prompt],
            response_ids=ids,
            response_mask=mask,
            old_log_prob=logp,
            step_reward=self.reward,
            index=np.asarray(self.group, dtype=np.int64),
            traj_uid=np.asarray(self.traj, dtype=np.int64),
            step_index=self.step,
            anchor_obs=_objects(self.anchor),
            is_action_valid=self.valid,
            terminated=self.terminated,
            truncated=self.truncated,
            end_reason=_objects(self.end_reason),
        )


def _objects(values: list[Any]) -> np.ndarray:
    arr = np.full(len(values), None, dtype=object)
    for i, v in enumerate(values):
        arr[i] = v
    return arr


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
        progress: Show a progress bar over finished episodes.

    Returns:
        A :class:`RolloutResult`; its batch rows are in step order (all envs' step 0, then
        step 1, ...). The last row of an episode carries ``terminated``/``truncated``; an
        episode cut by ``max_steps`` or ``context_limit`` has ``truncated=True`` there.
        A chat-mode backend (``tokenizer is None``) gives empty prompt ids.
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
            data_source=_info_str(infos[i], "data_source"),
        )
        for i in range(n)
    ]
    anchors = [_info_str(info, "anchor_obs") for info in infos]
    active = list(range(n))
    cols = _Rows()
    last_row: dict[int, int] = {}
    prompt_tokens = response_tokens = trimmed = 0
    generate_seconds = 0.0
    bar = _progress_bar(progress, n)
    step = 0

    def end(i: int, reason: str, term: bool = False, trunc: bool = False) -> None:
        episodes[i].end_reason = reason
        if i in last_row:
            j = last_row[i]
            cols.terminated[j], cols.truncated[j], cols.end_reason[j] = term, trunc, reason
        if bar is not None:
            bar.update(1)

    while active:
        prompts, owners = [], []
        for i in active:
            if tok is None:  # chat-mode backend (an OpenAI endpoint): messages, no ids
                prompts.append(as_messages(obs[i]))
                owners.append(i)
                continue
            cb = (lambda k, i=i: shorter(i, k)) if shorter is not None else None
            ids, dropped = fit_prompt(tok, as_messages(obs[i]), max_prompt_tokens, cb)
            if ids is None:
                end(i, "context_limit", trunc=True)
                continue
            trimmed += dropped > 0
            prompts.append(ids)
            owners.append(i)
        if not owners:
            break
        g0 = time.perf_counter()
        gens = backend.generate(prompts, sampling)
        generate_seconds += time.perf_counter() - g0
        outcomes = slots.step({i: g.text for i, g in zip(owners, gens)})
        still = []
        for i, ids, gen in zip(owners, prompts, gens):
            o, r, term, trunc, info = outcomes[i]
            valid = bool(info.get("is_action_valid", True))
            ids = ids if tok is not None else []
            last_row[i] = len(cols.response)
            cols.prompt.append(ids)
            cols.response.append(list(gen.token_ids))
            cols.logprobs.append(gen.logprobs)
            cols.reward.append(float(r))
            cols.group.append(int(groups[i]))
            cols.traj.append(i)
            cols.step.append(step)
            cols.anchor.append(anchors[i])
            cols.valid.append(valid)
            cols.terminated.append(False)
            cols.truncated.append(False)
            cols.end_reason.append("")
            cols.action.append(gen.text)
            prompt_tokens += len(ids)
            response_tokens += len(gen.token_ids)
            ep = episodes[i]
            ep.ret += float(r)
            ep.length += 1
            ep.valid_actions += valid
            ep.won = bool(info.get("won", ep.won))
            ep.score = float(info.get("score", ep.score))
            if record_text:
                ep.steps.append(
                    {
                        "observation": as_messages(obs[i])[-1]["content"],
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
    pad_id = getattr(tok, "pad_token_id", None) or 0
    return RolloutResult(
        batch=cols.to_batch(pad_id),
        actions=_objects(cols.action),
        episodes=episodes,
        prompt_tokens=prompt_tokens,
        response_tokens=response_tokens,
        trimmed_prompts=trimmed,
        seconds=time.perf_counter() - t0,
        generate_seconds=generate_seconds,
    )


def _progress_bar(enabled: bool, total: int) -> Any:
    if not enabled:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, desc="rollout (episodes done)", leave=False, dynamic_ncols=True)
