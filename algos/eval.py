"""Evaluation on one fixed held-out task list, for every kind of policy.

The tasks are distinct tasks of ``env.eval_kwargs``' split, drawn by seeds from
``env.eval_seed`` on, each played once (:func:`algos.envs.eval_seeds`); each row of a result
table is one policy on exactly those tasks:

* ``random``: uniform over ``info["admissible_actions"]`` (:class:`agent_gym.RandomAgent`);
* ``expert``: the env's scripted ``expert_action()`` (an upper reference); ``expert:METHOD``
  another scripted demonstrator of the env (ALFWorld's ``expert:search_expert_action``);
* a model: ``hf:MODEL`` (transformers), ``vllm:MODEL``, ``openai:URL`` (``--model`` names the
  served model), or ``run:RUN_DIR`` / a run directory (the run's model with its latest
  checkpoint; ``run:RUN_DIR/checkpoints/iter_N`` with that one), stepped in batches through
  the same wrappers, prompts and context rule as the training rollout.

Every row reports success with its 95% Wilson interval, mean score, valid-action ratio, mean
length and n (:func:`agent_gym.episode.summarize`).
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from agent_gym.episode import Episode, summarize
from algos.backends.base import SamplingParams
from algos.config import Config
from algos.envs import env_kwargs, eval_seeds, make_envs, resolve_env
from algos.metrics import progress_bar
from algos.rollout import rollout
from algos.runs import run_config

#: Policies that need no model.
REFERENCE_AGENTS = ("random", "expert")

#: Envs an evaluation steps together (at least): their prompts go to the backend in one call.
EVAL_ENVS = 64


class HeldOutEnvs:
    """The envs that play the held-out tasks, kept open from one evaluation to the next.

    :func:`play` makes its envs and closes them after; a caller that evaluates several times
    in one process (the trainer: before and after training, and every ``run.eval_every``;
    ``algos eval`` with several models) passes one of these instead and closes it when done.
    Slot k plays the k-th task of the list in every evaluation, and an env reset to the game
    it holds restarts it without loading it again: an ALFWorld evaluation of the main job
    made its 64 TextWorld engines and loaded their games in 6.4 s, a kept one restarts them in
    1.6 s, for 214 MB held between evaluations (docs/benchmarks.md). The episodes played are
    the same either way (tested). Only envs in this process are kept (``env.vector_mode =
    "sync"``): a subprocess or a Ray actor per env would hold far more through training.
    """

    def __init__(self, cfg: Config) -> None:
        self.cfg = cfg
        #: Whether the envs stay open after an evaluation (else each makes its own, as before).
        self.keep = cfg.env.vector_mode == "sync"
        self._venv: Any = None
        self._width = 0

    def venv(self, width: int) -> Any:
        """The vector env of ``width`` slots (made on first use, or when the width changes)."""
        if self._venv is None or self._width != width:
            self.close()
            self._venv, self._width = make_envs(self.cfg, width, evaluation=True), width
        return self._venv

    def close(self) -> None:
        """Close the envs (idempotent; the next :meth:`venv` makes new ones)."""
        if self._venv is not None:
            venv, self._venv = self._venv, None
            venv.close()

    def __enter__(self) -> HeldOutEnvs:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def evaluate(
    cfg: Config,
    backend: Any,
    episodes: int,
    *,
    progress: bool = False,
    envs: HeldOutEnvs | None = None,
) -> dict[str, Any]:
    """Play the held-out tasks with a model ``backend``; return :func:`summarize`'s dict."""
    return summarize(play(cfg, backend, episodes, progress=progress, envs=envs))


def play(
    cfg: Config,
    backend: Any,
    episodes: int,
    *,
    progress: bool = False,
    record_text: bool = False,
    envs: HeldOutEnvs | None = None,
) -> list[Episode]:
    """The held-out episodes of a model ``backend``, in task order (what :func:`evaluate` sums).

    Episodes run in batches of up to :data:`EVAL_ENVS` envs, or ``rollout.max_batch_size``
    if larger (a batch costs as many generate calls as its longest episode; each call is
    chunked by ``rollout.max_batch_size``), with ``rollout.eval_temperature``. With
    ``record_text`` each episode keeps its steps (the observation the model read and the text
    it answered), otherwise only its counts. ``envs``: play in these (left open), not in envs
    made for this call.
    """
    r = cfg.rollout
    seeds = eval_seeds(cfg, episodes)
    episodes = len(seeds)  # fewer where the split has fewer distinct tasks
    width = max(min(episodes, max(r.max_batch_size, EVAL_ENVS)), 1)
    done: list[Episode] = []
    venv = envs.venv(width) if envs is not None else make_envs(cfg, width, evaluation=True)
    bar = progress_bar(progress, "eval episodes", total=episodes, unit="episode")
    try:
        for start in range(0, episodes, width):
            batch = seeds[start : start + width]
            batch += batch[-1:] * (width - len(batch))  # every slot needs a seed; extras dropped
            ro = rollout(
                venv,
                backend,
                seeds=batch,
                groups=list(range(width)),
                sampling=SamplingParams(r.max_new_tokens, r.eval_temperature, 1.0),
                max_prompt_tokens=r.max_prompt_tokens,
                max_steps=cfg.env.max_steps or None,
                rerender_history=True,
                record_text=record_text,
                progress=progress,
            )
            done.extend(ro.episodes[: min(width, episodes - start)])
            bar.update(min(width, episodes - start))
    except BaseException:
        if envs is not None:  # a sub-env may be mid-episode or broken: the next call makes new ones
            envs.close()
        raise
    finally:
        if envs is None:
            venv.close()
        elif not envs.keep:
            envs.close()
        bar.close()
    return done


def evaluate_agent(
    cfg: Config, agent: str, episodes: int, *, progress: bool = False
) -> dict[str, Any]:
    """Play the held-out tasks with a reference agent (``random``, ``expert``, ``expert:METHOD``).

    Returns :func:`summarize`'s dict of :func:`play_agent`'s episodes.
    """
    return summarize(play_agent(cfg, agent, episodes, progress=progress))


def play_agent(cfg: Config, agent: str, episodes: int, *, progress: bool = False) -> list[Episode]:
    """The held-out episodes of a reference agent, in task order, with their steps.

    The agent acts on the env's own commands (no parsing, no prompt), under the same step
    cap as a model (``env.max_steps``); success, score and validity are the env's.

    Raises:
        ValueError: Unknown agent, or an expert the env does not have.
    """
    import gymnasium as gym

    from agent_gym.agents import ExpertAgent, RandomAgent, run_episode

    if not is_reference_agent(agent):
        raise ValueError(
            f"unknown reference agent {agent!r}; use {' or '.join(REFERENCE_AGENTS)} "
            "(or expert:METHOD)"
        )
    env = gym.make(resolve_env(cfg.env.id), **env_kwargs(cfg, evaluation=True))
    try:
        method = agent.partition(":")[2] or "expert_action"
        player = RandomAgent(cfg.run.seed) if agent == "random" else ExpertAgent(env, method)
    except ValueError:
        env.close()
        raise
    seeds = eval_seeds(cfg, episodes)
    bar = progress_bar(progress, f"eval ({agent})", total=len(seeds), unit="episode")
    done = []
    try:
        for seed in seeds:
            done.append(run_episode(env, player, seed=seed, max_steps=cfg.env.max_steps or None))
            bar.update(1)
    finally:
        env.close()
        bar.close()
    return done


def is_reference_agent(spec: str) -> bool:
    """Whether ``spec`` names a policy without a model: ``random``, ``expert``, ``expert:METHOD``."""
    return spec in REFERENCE_AGENTS or spec.startswith("expert:")


def _model_policy(spec: str) -> tuple[str, str]:
    """``(kind, target)`` of a model policy spec: ``hf``, ``run``, ``vllm`` or ``openai``.

    A bare folder is ``run:FOLDER``.

    Raises:
        ValueError: An unknown spec.
    """
    kind, sep, target = spec.partition(":")
    if not sep and Path(spec).is_dir():
        kind, target = "run", spec
    if kind not in ("hf", "run", "vllm", "openai") or not (sep or kind == "run"):
        raise ValueError(
            f"unknown policy {spec!r}; use random, expert, expert:METHOD, hf:MODEL, "
            "run:RUN_DIR, vllm:MODEL or openai:URL"
        )
    if kind == "run" and not target:  # Path("") is the working folder: say which run
        raise ValueError(f"policy {spec!r} names no run directory; use run:RUN_DIR")
    return kind, target


def check_policy(spec: str, cfg: Config) -> None:
    """Refuse a policy spec that :func:`open_policy` or :func:`play_agent` would refuse.

    Reads only names and JSON files, so a table of policies fails on its last one before the
    first one plays.

    Raises:
        ValueError: An unknown spec, a run that trained another model than it names, ``vllm:``
            where vLLM is not installed, ``openai:`` with something other than a URL, or a
            model setting this machine cannot load (:func:`algos.policy.check_model`).
        FileNotFoundError: ``run:`` names a folder without a run's config or checkpoint, or
            the model is not on this machine.
    """
    from algos.backends import check_backend
    from algos.backends.openai import check_base_url
    from algos.checkpoint import init_chain
    from algos.policy import check_model

    if is_reference_agent(spec):
        return
    kind, target = _model_policy(spec)
    if kind == "vllm":
        check_backend("vllm", f"--policy {spec}")
    try:  # every refusal names its --policy: a table has several
        if kind == "openai":
            check_base_url(target)
        elif kind in ("hf", "run"):
            model_cfg = _model_config(kind, target, cfg)
            if kind == "run":
                init_chain(Path(target), model_cfg.model.name)
            check_model(model_cfg)
    except FileNotFoundError as exc:
        raise FileNotFoundError(f"--policy {spec}: {exc}") from None
    except ValueError as exc:  # a subclass (JSONDecodeError) takes other arguments
        raise ValueError(f"--policy {spec}: {exc}") from None


def _model_config(kind: str, target: str, cfg: Config) -> Config:
    """The config whose model an ``hf:`` or ``run:`` policy loads (``run:``: the run's own)."""
    from algos.checkpoint import split_checkpoint_path

    if kind == "hf":
        cfg = copy.deepcopy(cfg)
        cfg.model.name = target or cfg.model.name
        cfg.model.init = ""
    else:
        cfg = run_config(split_checkpoint_path(Path(target))[0])
        cfg.model.init = target  # the run's own weights on top of its starting point
    cfg.algo.kl_coef = 0.0  # evaluation needs no reference copy ...
    cfg.algo.name = "grpo"  # ... and no critic
    return cfg


def open_policy(spec: str, cfg: Config, *, served_model: str | None = None) -> Any:
    """The backend a policy spec names (see the module docstring).

    Raises:
        ValueError: An unknown spec.
        FileNotFoundError: A run directory without a checkpoint, or a model that is not here.
    """
    from algos.backends import make_backend

    kind, target = _model_policy(spec)
    if kind in ("hf", "run"):
        from algos.policy import build_models

        cfg = _model_config(kind, target, cfg)
        models = build_models(cfg)
        return make_backend(
            "hf", models.model, models.tokenizer, seed=cfg.run.seed,
            max_batch_size=cfg.rollout.max_batch_size,
        )  # fmt: skip
    if kind == "vllm":
        return make_backend("vllm", model_name=target or cfg.model.name, seed=cfg.run.seed)
    return make_backend("openai", url=target, model_name=served_model or cfg.model.name)


def with_env(cfg: Config, env_id: str | None, split: str | None) -> Config:
    """A copy of ``cfg`` for another env id and/or evaluation split."""
    cfg = copy.deepcopy(cfg)
    if env_id:
        cfg.env.id = resolve_env(env_id)
    if split:
        cfg.env.eval_kwargs = {**cfg.env.eval_kwargs, "split": split}
    return cfg


def table(rows: list[tuple[str, dict[str, Any]]]) -> str:
    """A fixed-width table of evaluation results, one row per policy.

    >>> s = {"success_rate": 0.25, "success_ci95": [0.1, 0.5], "score_mean": 0.3,
    ...      "valid_action_ratio": 0.9, "episode_length": 4.0, "episodes": 8}
    >>> print(table([("random", s)]))  # doctest: +NORMALIZE_WHITESPACE
    policy   success [95% CI]        score   valid  length    n
    random   25.0% [10.0%-50.0%]     0.300   90.0%     4.0    8
    """
    width = max([len(name) for name, _ in rows] + [6]) + 2
    lines = [
        f"{'policy':{width}} {'success [95% CI]':22} {'score':>7} {'valid':>7} {'length':>7} {'n':>4}"
    ]
    for name, s in rows:
        lo, hi = s["success_ci95"]
        ci = f"{s['success_rate']:.1%} [{lo:.1%}-{hi:.1%}]"
        lines.append(
            f"{name:{width}} {ci:22} {s['score_mean']:7.3f} {s['valid_action_ratio']:7.1%} "
            f"{s['episode_length']:7.1f} {s['episodes']:4d}"
        )
    return "\n".join(lines)
