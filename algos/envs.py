"""The envs a run trains and evaluates on: id resolution, the wrapper chain, task seeds.

Every env a run uses is ``ParseAction`` -> ``ShapeReward`` -> ``ChatPrompt`` around
``gym.make(env.id, **env.kwargs)``, in a vector env from ``agent_gym.make_vec``; the same
chain serves training, evaluation and the demonstrations of ``algos sft``, so a policy sees
the same prompts and action format in all three.
"""

from __future__ import annotations

import functools
import importlib
import inspect
from typing import Any

from algos.config import Config


def resolve_env(name: str) -> str:
    """The Gymnasium id for ``env.id`` (short names such as ``alfworld`` are accepted).

    Raises:
        ValueError: One line naming the id and listing the valid ones.
    """
    import agent_gym  # noqa: F401  (registers the AgentR1/* ids)
    from agent_gym.registration import resolve_env_id

    return resolve_env_id(name)


def prompt_templates(spec: str) -> Any:
    """The ``env.prompt`` setting as ``PromptTemplates`` (None = the env's own templates).

    Raises:
        ValueError: ``spec`` is not ``env``, ``compact`` or an importable ``module:NAME``
            naming prompt templates (``system`` and ``user`` strings).
    """
    if spec in ("", "env"):
        return None
    if spec == "compact":
        from agent_gym.wrappers.chat_prompt import COMPACT_PROMPTS

        return COMPACT_PROMPTS
    from agent_gym.core import PromptTemplates

    module, sep, name = spec.partition(":")
    if not sep:
        raise ValueError(f"env.prompt={spec!r}: use 'env', 'compact' or 'module:NAME'")
    try:
        templates = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as exc:
        raise ValueError(f"env.prompt={spec!r}: cannot import it ({exc})") from None
    if not all(isinstance(getattr(templates, part, None), str) for part in ("system", "user")):
        raise ValueError(
            f"env.prompt={spec!r} is a {type(templates).__name__}, not prompt templates (a "
            f"{PromptTemplates.__name__}, or anything with system and user template strings)"
        )
    return templates


def choices_function(spec: str) -> Any:
    """The ``env.choices`` setting as a function of info (None = all admissible commands).

    Raises:
        ValueError: ``spec`` is not an importable ``module:function`` of one argument.
    """
    if not spec:
        return None
    module, sep, name = spec.partition(":")
    try:
        if not sep:
            raise ImportError("not of the form module:function")
        fn = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as exc:
        raise ValueError(f"env.choices={spec!r}: cannot import it ({exc})") from None
    try:
        inspect.signature(fn).bind({})  # called with the info dict alone
    except TypeError:
        raise ValueError(f"env.choices={spec!r} is not a function of the env's info") from None
    except ValueError:  # a builtin without a signature: called as it is
        pass
    return fn


def env_kwargs(cfg: Config, *, evaluation: bool = False) -> dict[str, Any]:
    """Constructor keywords of the env: ``env.kwargs``, with ``env.eval_kwargs`` for evaluation."""
    e = cfg.env
    return {**e.kwargs, **(e.eval_kwargs if evaluation else {})}


def wrappers(cfg: Config) -> list[Any]:
    """The wrapper chain of :mod:`algos.envs`' docstring, innermost first."""
    from agent_gym.wrappers import ChatPrompt, ParseAction, ShapeReward

    e = cfg.env
    return [
        functools.partial(
            ParseAction,
            format=e.action_format,
            match=e.action_match,
            choices=choices_function(e.choices),
        ),
        functools.partial(
            ShapeReward,
            reward_scale=e.reward_scale,
            success_bonus=e.success_bonus,
            invalid_penalty=e.invalid_penalty,
        ),
        functools.partial(
            ChatPrompt,
            history_length=e.history_length,
            action_format=e.action_format,
            templates=prompt_templates(e.prompt),
        ),
    ]


def make_envs(
    cfg: Config, num_envs: int, *, evaluation: bool = False, mode: str | None = None
) -> Any:
    """The wrapped vector env of ``num_envs`` sub-envs (``env.vector_mode`` unless ``mode``)."""
    from agent_gym.vector import make_vec

    e = cfg.env
    extra = {"step_timeout": e.step_timeout} if e.step_timeout else {}
    return make_vec(
        resolve_env(e.id),
        num_envs,
        mode=mode or e.vector_mode,
        wrappers=wrappers(cfg),
        **extra,
        **env_kwargs(cfg, evaluation=evaluation),
    )


def check_envs(cfg: Config, *, experts: str | None = None, training: bool = True) -> None:
    """Build one training env and one evaluation env in this process and reset them.

    Run before any model is loaded, so that an unknown id, a wrong keyword or a missing data
    file is one line at once, not a worker traceback minutes into a run. ``experts`` (the
    comma-separated ``sft.expert``) must name scripted experts of the training env.
    ``training=False`` checks the evaluation env alone (``algos eval``), even where
    ``run.eval_episodes`` is 0.

    Raises:
        ValueError: The id is unknown, the env rejects its keywords or data (the message
            says which of training or evaluation), or it has no such scripted expert.
    """
    import gymnasium as gym

    env_id = resolve_env(cfg.env.id)
    settings = [("env.kwargs", env_kwargs(cfg))] if training else []
    if cfg.run.eval_episodes or not training:
        settings.append(("env.eval_kwargs", env_kwargs(cfg, evaluation=True)))
    for where, kwargs in settings:
        try:
            env = gym.make(env_id, **kwargs)
        except (ImportError, gym.error.Error) as exc:  # 'module:Id' whose module or Id is not there
            raise ValueError(f"env.id={cfg.env.id!r}: {exc}") from None
        except TypeError as exc:
            raise ValueError(f"{where}={kwargs!r}: {env_id} does not take them ({exc})") from None
        except (ValueError, FileNotFoundError, OSError) as exc:
            raise ValueError(f"{where}={kwargs!r}: {env_id}: {exc}") from None
        try:
            for wrap in wrappers(cfg):
                env = wrap(env)
            env.reset(seed=cfg.env.seed)
        except (ValueError, FileNotFoundError, OSError) as exc:
            raise ValueError(f"{where}={kwargs!r}: {env_id}: {exc}") from None
        else:
            if experts is not None and where == "env.kwargs":
                check_experts(env, experts)
        finally:
            env.close()


def check_experts(env: Any, experts: str) -> None:
    """Refuse an ``sft.expert`` that names no scripted expert of ``env``; list the ones it has.

    Raises:
        ValueError: One of the comma-separated names is not a scripted expert of ``env``.
    """
    from agent_gym.agents import scripted_expert

    for name in experts.split(","):
        try:
            scripted_expert(env, name.strip())
        except ValueError as err:
            raise ValueError(f"sft.expert={experts!r}: {err}") from None


def iteration_seeds(cfg: Config, iteration: int) -> tuple[list[int], list[int]]:
    """Reset seeds and group ids of one iteration (``group_size`` members per task)."""
    from agent_gym.vector import group_seeds

    e = cfg.env
    seeds = group_seeds(e.seed + iteration, e.num_tasks, e.group_size)
    return seeds, [i // e.group_size for i in range(len(seeds))]


def eval_seeds(cfg: Config, episodes: int) -> list[int]:
    """The held-out task list: one seed per distinct task, at most ``episodes`` of them.

    Seeds ``env.eval_seed + j`` are tried in order and a seed is kept when its reset starts a
    task (``info["task_id"]``) no kept seed started: a split's tasks are drawn with
    replacement, and greedy play of a repeated task repeats its episode, which an interval over
    episodes would count twice. A split with fewer tasks than ``episodes`` gives a shorter list
    (all of its tasks; a warning says so). The search stops at the env's ``num_tasks`` where it
    has one, else after ``50 x episodes`` seeds. Every evaluation of a config (the random agent,
    the expert, the untrained and the trained model) plays exactly these tasks, from
    ``env.eval_kwargs``' split; the list is computed once per process.
    """
    import json

    key = json.dumps(
        [cfg.env.id, env_kwargs(cfg, evaluation=True), cfg.env.eval_seed, episodes],
        sort_keys=True,
        default=repr,
    )
    if key not in _EVAL_SEEDS:
        _EVAL_SEEDS[key] = _distinct_task_seeds(cfg, episodes)
    return list(_EVAL_SEEDS[key])


#: eval_seeds' lists by (env id, eval kwargs, first seed, episodes).
_EVAL_SEEDS: dict[str, list[int]] = {}


def _distinct_task_seeds(cfg: Config, episodes: int) -> list[int]:
    import contextlib
    import warnings

    import gymnasium as gym
    from tqdm.auto import tqdm

    seen: set[str] = set()
    seeds: list[int] = []
    env = gym.make(resolve_env(cfg.env.id), **env_kwargs(cfg, evaluation=True))
    with contextlib.closing(env):
        total = getattr(env.unwrapped, "num_tasks", None)
        peek = getattr(env.unwrapped, "task_id_for", None)  # the task without a reset
        wanted = episodes if total is None else min(episodes, total)
        with tqdm(total=wanted, desc="held-out tasks", unit="task", leave=False,
                  disable=not cfg.run.progress) as bar:  # fmt: skip
            for seed in range(cfg.env.eval_seed, cfg.env.eval_seed + 50 * episodes):
                if len(seeds) >= wanted:
                    break
                task = peek(seed) if peek else None
                if task is None:
                    _, info = env.reset(seed=seed)
                    task = str(info.get("task_id", seed))  # no task ids: every seed counts
                if task not in seen:
                    seen.add(task)
                    seeds.append(seed)
                    bar.update(1)
    if len(seeds) < episodes:
        warnings.warn(
            f"{cfg.env.id} {env_kwargs(cfg, evaluation=True)}: {len(seeds)} distinct held-out "
            f"tasks, not the {episodes} asked for; evaluating each once (n={len(seeds)})",
            stacklevel=3,
        )
    return seeds
