"""Evaluation: success rate and score with 95% intervals, overall and per task type.

Policies: ``hf:MODEL`` (transformers), ``vllm:MODEL``, ``openai:URL`` (any OpenAI-compatible
server; ``--model`` names the served model) and ``expert`` (the env's scripted
``expert_action()``, an upper reference).
"""

from __future__ import annotations

import copy
from collections import Counter, defaultdict
from typing import Any

from algos.backends.base import SamplingParams
from algos.config import Config
from algos.metrics import mean_interval, wilson_interval
from algos.rollout import Episode, rollout


def summarize(episodes: list[Episode]) -> dict[str, Any]:
    """Success rate (Wilson 95% interval) and mean score (normal 95% interval), per task type.

    Also the mean return, episode length, share of valid actions and how episodes ended
    (``terminated``, ``truncated``, ``max_steps``, ``context_limit``), which tell an
    untrained policy's failure modes apart.
    """

    def block(eps: list[Episode]) -> dict[str, Any]:
        wins = sum(e.won for e in eps)
        lo, hi = wilson_interval(wins, len(eps))
        score, s_lo, s_hi = mean_interval([e.score for e in eps])
        return {
            "episodes": len(eps),
            "success_rate": wins / max(len(eps), 1),
            "success_ci95": [lo, hi],
            "score_mean": score,
            "score_ci95": [s_lo, s_hi],
            "return_mean": sum(e.ret for e in eps) / max(len(eps), 1),
            "episode_length": sum(e.length for e in eps) / max(len(eps), 1),
            "valid_action_ratio": sum(e.valid_actions for e in eps)
            / max(sum(e.length for e in eps), 1),
            "end_reasons": dict(sorted(Counter(e.end_reason for e in eps).items())),
        }

    out = block(episodes)
    # Where the tasks came from: "generated:*" data is agent-gym's, not the official benchmark.
    out["data_sources"] = sorted({e.data_source for e in episodes if e.data_source})
    by_type: dict[str, list[Episode]] = defaultdict(list)
    for e in episodes:
        if e.task_type:
            by_type[e.task_type].append(e)
    if by_type:
        out["per_task_type"] = {k: block(v) for k, v in sorted(by_type.items())}
    out["line"] = (
        f"success {out['success_rate']:.1%} (95% CI {out['success_ci95'][0]:.1%}-"
        f"{out['success_ci95'][1]:.1%}), score {out['score_mean']:.3f} "
        f"(95% CI {out['score_ci95'][0]:.3f}-{out['score_ci95'][1]:.3f}), "
        f"return {out['return_mean']:.2f}, length {out['episode_length']:.1f}, n={out['episodes']}"
        f", data {', '.join(out['data_sources']) or 'unknown'}"
    )
    return out


def evaluate(
    cfg: Config, backend: Any, episodes: int, *, batch: int | None = None
) -> dict[str, Any]:
    """Run ``episodes`` evaluation episodes (one per task seed) with ``backend``.

    Seeds are ``cfg.env.eval_seed + i`` (disjoint from training's hashed seeds); the env is
    built with ``cfg.env.eval_kwargs`` over ``cfg.env.kwargs``; sampling uses
    ``cfg.rollout.eval_temperature``.

    Args:
        cfg: The config (env, wrappers, prompt budget, step cap, sampling).
        backend: The policy.
        episodes: Number of episodes (task seeds).
        batch: Envs stepped together. The default runs every episode in one batch, up to
            ``cfg.rollout.max_batch_size``: a batch costs as many generate calls as its
            longest episode, so splitting 20 episodes into 16 + 4 would nearly double the
            time of a benchmark whose failures run to the step limit.
    """
    from algos.trainer import make_envs, shorter_for

    r = cfg.rollout
    width = batch or max(min(episodes, r.max_batch_size), 1)
    done: list[Episode] = []
    venv = make_envs(cfg, width, evaluation=True)
    try:
        start = 0
        while start < episodes:
            n = min(width, episodes - start)
            seeds = [cfg.env.eval_seed + start + i for i in range(n)]
            envs = list(venv.envs[:n]) if hasattr(venv, "envs") else venv
            if not hasattr(venv, "envs") and n != width:
                seeds += seeds[-1:] * (width - n)  # a vector env needs a seed for every slot
            ro = rollout(
                envs,
                backend,
                seeds=seeds,
                groups=list(range(len(seeds))),
                sampling=SamplingParams(r.max_new_tokens, r.eval_temperature, 1.0),
                max_prompt_tokens=r.max_prompt_tokens,
                max_steps=cfg.env.max_steps or None,
                shorter=shorter_for(venv),
                record_text=False,
            )
            done.extend(ro.episodes[:n])
            start += n
    finally:
        venv.close()
    return summarize(done)


def expert_evaluate(cfg: Config, episodes: int) -> dict[str, Any]:
    """Evaluate the env's scripted expert (``env.unwrapped.expert_action()``), plain actions."""
    import gymnasium as gym

    import agent_gym  # noqa: F401

    eps: list[Episode] = []
    kwargs = {**cfg.env.kwargs, **cfg.env.eval_kwargs}
    env = gym.make(cfg.env.id, **kwargs)
    try:
        for i in range(episodes):
            seed = cfg.env.eval_seed + i
            _, info = env.reset(seed=seed)
            ep = Episode(
                traj=i,
                group=i,
                seed=seed,
                task=str(info.get("task", "")),
                task_type=str(info.get("task_type", "")),
                data_source=str(info.get("data_source", "")),
            )
            while True:
                _, rew, term, trunc, info = env.step(env.unwrapped.expert_action())
                ep.ret += float(rew)
                ep.length += 1
                ep.valid_actions += bool(info.get("is_action_valid", True))
                ep.won = bool(info.get("won", False))
                ep.score = float(info.get("score", 0.0))
                if term or trunc:
                    ep.end_reason = "terminated" if term else "truncated"
                    break
            eps.append(ep)
    finally:
        env.close()
    return summarize(eps)


def policy_backend(spec: str, cfg: Config, *, model_name: str | None = None) -> Any:
    """Build the backend named by ``hf:MODEL``, ``vllm:MODEL`` or ``openai:URL``.

    Raises:
        ValueError: Any other spec (``expert`` is handled by :func:`expert_evaluate`).
    """
    kind, _, target = spec.partition(":")
    if kind == "hf":
        from algos.backends.hf import HFBackend
        from algos.models import load_model
        from algos.trainer import resolve_device

        model, tok = load_model(
            target or cfg.model.name, dtype=cfg.model.dtype, device=resolve_device(cfg.model.device)
        )
        return HFBackend(model, tok, max_batch_size=cfg.rollout.max_batch_size)
    if kind == "vllm":
        from algos.backends.vllm import VLLMBackend

        return VLLMBackend(target or cfg.model.name)
    if kind == "openai":
        from algos.backends.openai import OpenAIBackend

        return OpenAIBackend(target, model=model_name or cfg.model.name)
    raise ValueError(f"unknown policy {spec!r}; use hf:MODEL, vllm:MODEL, openai:URL or expert")


def with_env(cfg: Config, env_id: str | None, split: str | None) -> Config:
    """A copy of ``cfg`` for another env id and/or split."""
    cfg = copy.deepcopy(cfg)
    if env_id:
        cfg.env.id = env_id
    if split:
        cfg.env.eval_kwargs = {**cfg.env.eval_kwargs, "split": split}
    return cfg
