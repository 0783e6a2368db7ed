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
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from agent_gym.episode import Episode, EpisodeStep, summarize
from algos.backends.base import Generation, PolicyBackend, SamplingParams
from algos.batch import StepBatch, object_array
from algos.context import as_messages, fit_prompt
from algos.env_slots import EnvSlots, StepResult
from algos.metrics import progress_bar


@dataclass
class RolloutResult:
    """One rollout: the step rows as a ``StepBatch``, the episodes, token counts and timing.

    Attributes:
        batch: (B rows) every field of the batch contract except the learner's own
            (``ref_log_prob``, ``values``), the end reason included; ``old_log_prob`` holds
            the sampled log-probs (``None`` when the backend returns none). ``None`` when no
            step was taken.
        episodes: One :class:`~agent_gym.episode.Episode` per env, in env order.
        trimmed_prompts: Rows whose prompt lost older history to fit ``max_prompt_tokens``.
    """

    batch: StepBatch | None
    episodes: list[Episode]
    prompt_tokens: int = 0
    response_tokens: int = 0
    trimmed_prompts: int = 0
    seconds: float = 0.0
    generate_seconds: float = 0.0

    def __len__(self) -> int:
        return 0 if self.batch is None else len(self.batch)

    def summary(self) -> dict[str, float]:
        """Episode-level means: success, return, score, length, valid-action ratio."""
        s = summarize(self.episodes)
        n = max(len(self.episodes), 1)
        return {
            "success_rate": s["success_rate"],
            "return_mean": s["return_mean"],
            "score_mean": s["score_mean"],
            "episode_length": s["episode_length"],
            "valid_action_ratio": s["valid_action_ratio"],
            "context_limit_rate": s["end_reasons"].get("context_limit", 0) / n,
        }


class _Rows:
    """The rows being collected, column by column, and the episodes they belong to."""

    def __init__(self, episodes: list[Episode], record_text: bool) -> None:
        self.episodes = episodes
        self.record_text = record_text
        self.cols: dict[str, list[Any]] = {
            k: []
            for k in (
                "prompt", "response", "logprobs", "reward", "group", "traj", "step", "anchor",
                "valid", "terminated", "truncated", "end_reason", "trunk",
            )
        }  # fmt: skip
        self.last_row: dict[int, int] = {}
        self.prompt_tokens = self.response_tokens = 0

    def add(
        self, i: int, step: int, ids: list[int], gen: Generation, out: StepResult, anchor: str,
        observation: Any,
    ) -> None:  # fmt: skip
        """Append env ``i``'s row for this step and count it in its episode."""
        _, reward, _, _, info = out
        valid = bool(info.get("is_action_valid", True))
        ep = self.episodes[i]
        self.last_row[i] = len(self.cols["response"])
        values = (
            ids, list(gen.token_ids), gen.logprobs, float(reward), ep.group, i, step, anchor,
            valid, False, False, "", gen.extra.get("trunk"),
        )  # fmt: skip
        for col, value in zip(self.cols.values(), values):
            col.append(value)
        self.prompt_tokens += len(ids)
        self.response_tokens += len(gen.token_ids)
        record = None
        if self.record_text:
            text = as_messages(observation)[-1]["content"]
            record = EpisodeStep(
                text, gen.text, float(reward), valid, finish_reason=gen.finish_reason
            )
        ep.record(reward, info, record)

    def end(self, i: int, reason: str, term: bool = False, trunc: bool = False) -> None:
        """Mark env ``i``'s episode ended; its last row carries the flags and the reason."""
        self.episodes[i].end_reason = reason
        j = self.last_row.get(i)
        if j is not None:
            self.cols["terminated"][j] = term
            self.cols["truncated"][j] = trunc
            self.cols["end_reason"][j] = reason

    def to_batch(self, pad_id: int) -> StepBatch | None:
        c = self.cols
        n = len(c["response"])
        if n == 0:
            return None
        width = max([len(r) for r in c["response"]] + [1])
        ids = torch.full((n, width), pad_id, dtype=torch.long)
        mask = torch.zeros((n, width), dtype=torch.float32)
        has_logp = all(lp is not None for lp in c["logprobs"])
        logp = torch.zeros((n, width), dtype=torch.float32) if has_logp else None
        for i, r in enumerate(c["response"]):
            ids[i, : len(r)] = torch.tensor(r, dtype=torch.long)
            mask[i, : len(r)] = 1.0
            if logp is not None:
                logp[i, : len(r)] = torch.tensor(c["logprobs"][i], dtype=torch.float32)
        return StepBatch(
            prompt_ids=[torch.tensor(p, dtype=torch.long) for p in c["prompt"]],
            response_ids=ids,
            response_mask=mask,
            old_log_prob=logp,
            step_reward=c["reward"],
            index=np.asarray(c["group"], dtype=np.int64),
            traj_uid=np.asarray(c["traj"], dtype=np.int64),
            step_index=c["step"],
            anchor_obs=object_array(c["anchor"]),
            is_action_valid=c["valid"],
            terminated=c["terminated"],
            truncated=c["truncated"],
            end_reason=object_array(c["end_reason"]),
            trunk_states=c["trunk"] if all(t is not None for t in c["trunk"]) else None,
        )


def _anchor(info: dict[str, Any]) -> str:
    value = info.get("anchor_obs", "")
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
    rerender_history: bool = False,
    record_text: bool = True,
    progress: bool = False,
) -> RolloutResult:
    """Run one episode in every env and return its step rows.

    Args:
        envs: A vector env from ``agent_gym.make_vec`` (or an
            :class:`~algos.env_slots.EnvSlots` of one); observations are chat message lists
            (a ``ChatPrompt`` wrapper) or plain strings (sent as one user message).
        backend: The policy.
        seeds: (num_envs,) reset seed of each env; group members share one.
        groups: (num_envs,) task-group index of each env.
        sampling: Sampling settings.
        max_prompt_tokens: Prompt budget of the context-length rule (:mod:`algos.context`).
        max_steps: Optional cap on steps per episode (reason ``"max_steps"``), besides the
            env's own ``TimeLimit`` (reason ``"truncated"``).
        rerender_history: The sub-envs are wrapped in ``ChatPrompt``, which renders history
            inside one message: an over-budget prompt is re-rendered with less history.
        record_text: Keep each step's observation and action text in the episodes.
        progress: Show a progress bar of steps taken and episodes done.

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
    t0 = time.perf_counter()
    obs, infos = slots.reset(list(seeds))
    episodes = [
        Episode.start(infos[i], seed=seeds[i], traj=i, group=int(groups[i])) for i in range(n)
    ]
    rows = _Rows(episodes, record_text)
    anchors = [_anchor(info) for info in infos]
    active, step, trimmed, gen_seconds = list(range(n)), 0, 0, 0.0
    bar = progress_bar(progress, "rollout", unit="step")
    bar.set_postfix_str(f"episodes done 0/{n}", refresh=False)
    while active:
        prompts, owners = [], []
        for i in active:
            ids, dropped = _prompt(slots, i, obs[i], backend.tokenizer, max_prompt_tokens,
                                   rerender_history)  # fmt: skip
            if ids is None:
                rows.end(i, "context_limit", trunc=True)
                continue
            trimmed += dropped > 0
            prompts.append(ids)
            owners.append(i)
        if not owners:
            break
        g0 = time.perf_counter()
        gens = backend.generate(prompts, sampling)
        gen_seconds += time.perf_counter() - g0
        outcomes = slots.step({i: g.text for i, g in zip(owners, gens)})
        active = []
        for i, ids, gen in zip(owners, prompts, gens):
            out = outcomes[i]
            rows.add(i, step, ids if backend.tokenizer is not None else [], gen, out, anchors[i],
                     obs[i])  # fmt: skip
            obs[i], anchors[i] = out[0], _anchor(out[4])
            term, trunc = out[2], out[3]
            if term or trunc:
                rows.end(i, "terminated" if term else "truncated", term=term, trunc=trunc)
            elif max_steps is not None and episodes[i].length >= max_steps:
                rows.end(i, "max_steps", trunc=True)
            else:
                active.append(i)
        step += 1
        bar.update(len(owners))
        bar.set_postfix_str(f"episodes done {n - len(active)}/{n}", refresh=False)
    bar.close()
    pad_id = getattr(backend.tokenizer, "pad_token_id", None) or 0
    return RolloutResult(
        batch=rows.to_batch(pad_id),
        episodes=episodes,
        prompt_tokens=rows.prompt_tokens,
        response_tokens=rows.response_tokens,
        trimmed_prompts=trimmed,
        seconds=time.perf_counter() - t0,
        generate_seconds=gen_seconds,
    )


def _prompt(
    slots: EnvSlots, i: int, obs: Any, tok: Any, budget: int, rerender: bool
) -> tuple[Any, int]:
    """Env ``i``'s prompt under the context-length rule: ``(ids or messages, dropped)``.

    A chat-mode backend (no tokenizer: an OpenAI endpoint) gets the messages themselves.
    """
    messages = as_messages(obs)
    if tok is None:
        return messages, 0
    if not rerender:
        return fit_prompt(tok, messages, budget)
    return fit_prompt(
        tok, messages, budget, lambda k: slots.messages(i, k), lambda: slots.history_size(i)
    )
