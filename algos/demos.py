"""Scripted-expert demonstrations, rendered exactly as the RL rollout sees and writes them.

A demonstration step is a row of the same shape as a rollout row: the prompt token ids the
rollout would build for that state (the same wrappers, prompt templates and context rule:
:mod:`algos.envs`, :mod:`algos.context`) and, as the response, the expert's command written in
the run's action format (:func:`render_action`) followed by the end-of-turn token. A policy
cloned on them therefore drops into ``algos train`` unchanged.

Demonstrations are played on the **training** env (``env.kwargs``: the train split) with task
seeds drawn from ``sft.seed``, never on the evaluation split (``env.eval_kwargs``);
:func:`check_split` refuses a config whose two splits coincide. With ``sft.noise = p`` each step
is, with probability p, a random admissible command instead of the expert's; that step is not
cloned, and the expert recovers from where it led (DART-style noise: the policy learns to get
back on track from states the expert alone never visits).

Demos are cached on disk (JSONL under ``$AGENT_GYM_HOME/demos/``), keyed by everything that
shapes them, so the second run of a recipe reads them back in a second; a damaged file is
named in a warning, played again and rewritten (:func:`read_demos`).
"""

from __future__ import annotations

import importlib
import json
import random
import re
import time
from collections.abc import Sequence
from dataclasses import MISSING, asdict, dataclass, fields
from typing import Any, get_origin, get_type_hints

from algos.config import Config
from algos.context import as_messages, fit_prompt
from algos.metrics import progress_bar


@dataclass
class Demo:
    """One cloned step: prompt ids, response ids (ending with the end-of-turn token)."""

    episode: int
    step: int
    prompt_ids: list[int]
    response_ids: list[int]
    text: str
    task_id: str = ""
    won: bool = False


def render_action(command: str, action_format: str, tools: Sequence[Any] = ()) -> str:
    """The expert's env command written as a model would in ``action_format``.

    ``plain`` is the command itself; ``tag`` wraps it in ``<action>...</action>``; ``tool_call``
    finds the tool whose command template produces it and writes the Hermes call. A command of
    several lines (several calls in one step, as Paper Search takes) becomes one block per
    line. The inverse of ``ParseAction``: the round trip through ``parse_calls`` gives the
    command back (tested).

    Raises:
        ValueError: A tool-call command that no tool's template produces.

    >>> from agent_gym.core import ToolSpec
    >>> search = ToolSpec("search", "Search.", {"query": "the query"}, "search[{query}]")
    >>> render_action("search[red shoes]", "tool_call", [search])
    '<tool_call>{"name": "search", "arguments": {"query": "red shoes"}}</tool_call>'
    """
    if action_format == "plain":
        return command
    calls = [line.strip() for line in command.splitlines() if line.strip()]
    if action_format == "tag":
        return "\n".join(f"<action>{call}</action>" for call in calls)
    return "\n".join(_tool_call(call, tools) for call in calls)


def _tool_call(command: str, tools: Sequence[Any]) -> str:
    for tool in tools:
        pattern = re.escape(tool.command)
        for name in tool.arguments:
            pattern = pattern.replace(re.escape("{" + name + "}"), f"(?P<{name}>.+?)")
        match = re.fullmatch(pattern, command)
        if match:
            call = {"name": tool.name, "arguments": match.groupdict()}
            return f"<tool_call>{json.dumps(call)}</tool_call>"
    names = ", ".join(t.name for t in tools)
    raise ValueError(f"no tool ({names}) writes the command {command!r}")


def check_split(cfg: Config) -> None:
    """Refuse demonstrations from the split the held-out evaluation plays.

    Only a ``split`` keyword can tell (an env without splits names none, and then the
    demonstrations' hashed task seeds are the only separation from the evaluation's).

    Raises:
        ValueError: ``env.kwargs`` and ``env.eval_kwargs`` name the same split.
    """
    if "split" not in cfg.env.kwargs and "split" not in cfg.env.eval_kwargs:
        return
    train = cfg.env.kwargs.get("split", "train")
    held_out = {**cfg.env.kwargs, **cfg.env.eval_kwargs}.get("split", "train")
    if cfg.run.eval_episodes and train == held_out:
        raise ValueError(
            f"sft: demonstrations come from env.kwargs' split ({train!r}), which is also the "
            "evaluation split (env.eval_kwargs); give the evaluation another split"
        )


def demo_key(cfg: Config, tokenizer_name: str, episodes: int, seed: int) -> str:
    """The cache key: everything that shapes the rows."""
    from agent_gym.paths import params_key

    e, s, r = cfg.env, cfg.sft, cfg.rollout
    shaping = {
        k: getattr(e, k)
        for k in ("id", "kwargs", "action_format", "history_length", "prompt", "max_steps",
                  "action_match", "choices")
    }  # fmt: skip
    return params_key(
        {
            "env": shaping, "templates": _template_text(e.prompt, e.id),
            "choices_source": _choices_source(e.choices),
            "tokenizer": tokenizer_name, "episodes": episodes, "seed": seed, "noise": s.noise,
            "expert": s.expert, "max_prompt_tokens": r.max_prompt_tokens, "version": 1,
        }
    )  # fmt: skip


def _choices_source(choices: str) -> str | None:
    """The ``env.choices`` function's source, so that editing it invalidates cached demos."""
    import inspect

    from algos.envs import choices_function

    if not choices:
        return None
    try:
        return inspect.getsource(choices_function(choices))
    except (OSError, TypeError):  # built in, or defined where no source is kept
        return None


def _template_text(prompt: str, env_id: str) -> list[str] | None:
    """The prompt's template text, so that editing a template invalidates cached demos.

    ``env.prompt = "env"`` reads the env class's ``prompt_templates`` (a registered id or
    ``module:Class``); None when the class cannot be found without building the env (the key
    then has only the setting's name).
    """
    import gymnasium as gym

    from algos.envs import prompt_templates, resolve_env

    templates = prompt_templates(prompt)
    if templates is None:
        try:
            entry = env_id if ":" in env_id else gym.spec(resolve_env(env_id)).entry_point
            if isinstance(entry, str):
                module, _, name = entry.partition(":")
                entry = getattr(importlib.import_module(module), name)
            templates = getattr(entry, "prompt_templates", None)
        except Exception:  # noqa: BLE001 - a custom env the registry does not know
            templates = None
    if templates is None or not hasattr(templates, "user"):
        return None
    return [templates.system, templates.user]


def load_or_make_demos(
    cfg: Config, tokenizer: Any, episodes: int, seed: int, *, log: Any = print,
    progress: bool = True,
) -> list[Demo]:  # fmt: skip
    """The demonstrations of ``episodes`` expert episodes (from the cache when there)."""
    from agent_gym.paths import atomic_write_text, cache_dir

    name = (
        cfg.model.name
        if cfg.model.name in ("tiny-random", "smollm2-135m")
        else tokenizer.name_or_path
    )
    path = cache_dir("demos") / f"{demo_key(cfg, name, episodes, seed)}.jsonl"
    demos = read_demos(path) if path.is_file() else None
    if demos is not None:
        log(f"sft: {len(demos)} demonstration steps of {episodes} episodes from {path}")
        return demos
    t0 = time.perf_counter()
    demos = make_demos(cfg, tokenizer, episodes, seed, progress=progress)
    try:
        atomic_write_text(path, "".join(json.dumps(asdict(d)) + "\n" for d in demos))
        kept = f"cached in {path}"
    except OSError as err:  # a full disk or read-only cache: the run goes on without it
        kept = f"not cached ({path}: {err})"
    won = len({d.episode for d in demos if d.won})
    log(
        f"sft: played {episodes} expert episodes ({won} won) into {len(demos)} demonstration "
        f"steps in {time.perf_counter() - t0:.1f} s; {kept}"
    )
    return demos


def read_demos(path: Any) -> list[Demo] | None:
    """The demonstrations cached in ``path``, or None (with a warning) when a record is damaged.

    Every record must be a JSON object with exactly :class:`Demo`'s fields, of their types;
    the warning names the file and line, and the caller plays the expert again and rewrites
    the file (it is a cache). Reading never executes anything.
    """
    import warnings

    demos = []
    for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
        if not line.strip():
            continue
        try:
            demos.append(_demo_record(json.loads(line)))
        except ValueError as err:  # json.JSONDecodeError is a ValueError
            warnings.warn(
                f"{path}, line {n}: not a demonstration record ({err}); playing the expert "
                "again and rewriting the file",
                stacklevel=3,
            )
            return None
    return demos


#: Each :class:`Demo` field's type (``list`` for token ids), and the fields without a default.
_DEMO_TYPES = {name: get_origin(hint) or hint for name, hint in get_type_hints(Demo).items()}
_DEMO_REQUIRED = [f.name for f in fields(Demo) if f.default is MISSING]


def _demo_record(record: Any) -> Demo:
    """A :class:`Demo` from one parsed JSON record, checked field by field (ValueError)."""
    if not isinstance(record, dict):
        raise ValueError(f"a JSON {type(record).__name__}, not an object")
    if unknown := sorted(set(record) - set(_DEMO_TYPES)):
        raise ValueError(f"unknown field(s) {unknown}")
    if missing := [k for k in _DEMO_REQUIRED if k not in record]:
        raise ValueError(f"missing field(s) {missing}")
    for key, value in record.items():
        kind = _DEMO_TYPES[key]
        exact = type(value) is kind  # bool is an int: an int field must not hold true/false
        if not exact or (kind is list and not all(type(t) is int and t >= 0 for t in value)):
            what = "a list of token ids" if kind is list else kind.__name__
            raise ValueError(f"{key} is {value!r:.60}, not {what}")
    if not record["response_ids"]:
        raise ValueError("response_ids is empty")
    return Demo(**record)


def make_demos(
    cfg: Config, tokenizer: Any, episodes: int, seed: int, *, progress: bool = True
) -> list[Demo]:
    """Play ``episodes`` expert episodes on the training env and render their steps.

    Raises:
        ValueError: The env has no scripted expert (``expert_action()``).
    """
    from agent_gym.agents import scripted_expert
    from algos.envs import make_envs

    check_split(cfg)
    rng = random.Random(seed)
    venv = make_envs(cfg, 1, mode="sync")
    env = venv.envs[0]
    try:
        experts = [scripted_expert(env, name.strip()) for name in cfg.sft.expert.split(",")]
    except ValueError as err:
        venv.close()
        raise ValueError(f"sft.expert={cfg.sft.expert!r}: {err}") from None
    fmt = cfg.env.action_format
    tools = env.get_wrapper_attr("tools") if fmt == "tool_call" else ()
    eos = tokenizer.eos_token_id
    cap = cfg.env.max_steps or None
    demos: list[Demo] = []
    bar = progress_bar(progress, "sft demos", total=episodes, unit="episode")
    try:
        for ep in range(episodes):
            expert = experts[ep % len(experts)]  # several demonstrators take turns
            obs, info = env.reset(seed=rng.randrange(2**31))
            start, step, won = len(demos), 0, False
            while cap is None or step < cap:
                command = expert()
                if command is None:
                    break
                noisy = cfg.sft.noise > 0 and rng.random() < cfg.sft.noise
                if noisy:
                    command = _random_command(info, rng) or command
                text = render_action(_numbered(command, info), fmt, tools)
                if not noisy:
                    ids, _ = fit_prompt(tokenizer, as_messages(obs), cfg.rollout.max_prompt_tokens)
                    if ids is None:
                        break  # the rollout would end here too (context_limit)
                    response = tokenizer.encode(text, add_special_tokens=False) + [eos]
                    demos.append(Demo(ep, step, ids, response, text, str(info.get("task_id", ""))))
                obs, _, term, trunc, info = env.step(text)
                step += 1
                if term or trunc:
                    won = bool(info.get("won", False))
                    break
            for d in demos[start:]:
                d.won = won
            bar.update(1)
    finally:
        venv.close()
        bar.close()
    return demos


def _random_command(info: dict[str, Any], rng: random.Random) -> str | None:
    """A random command the policy could send: one on offer (``info["choices"]``) or admissible."""
    offered = info.get("choices", info.get("admissible_actions")) or []
    actions = [a for a in offered if "<" not in a]
    return rng.choice(actions) if actions else None


def _numbered(command: str, info: dict[str, Any]) -> str:
    """``command`` as its number among ``info["choices"]`` (``action_match = "number"``).

    Without choices, or for a command not on offer (an expert's ``look``), the command itself:
    the parser reads text that is not a number as a command.
    """
    choices = info.get("choices")
    if choices and command in choices:
        return str(choices.index(command) + 1)
    return command
