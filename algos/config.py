"""Loading a training configuration: a TOML recipe and ``--set`` overrides, checked.

A recipe has one table per section (``[env]``, ``[model]``, ``[rollout]``, ``[algo]``,
``[optim]``, ``[run]``, ``[sft]``, ``[dist]``); every key is a field of the dataclasses in
:mod:`algos.sections` (re-exported here). Loading a recipe goes through these layers,
each overriding the one before:

1. the field defaults;
2. the files named by the recipe's top-level ``extends`` (a path or a list of paths, relative
   to the recipe; they may extend others), merged table by table;
3. the recipe's own tables;
4. the chosen profile's tables (``[profiles.NAME.SECTION]``; the profile is the last
   ``--set profile=NAME``, else the recipe's ``default_profile``, else none);
5. every other ``--set section.key=value``, in order.

When a layer names an algorithm (``algo.name``, or ``--set algo=NAME``), that algorithm's own
defaults (GSPO's clip range, say) are applied first in that layer, so they replace what earlier
layers set for those keys, and anything set in the same or a later layer still wins.

Every value is checked when it is applied: unknown sections and keys, wrong types, values
outside a field's choices (``Literal`` fields, registry names) or range, ``nan`` and ``inf``
are a ``ValueError`` naming the key, the value and what is allowed, before any model or env
is built.
``--set`` values are parsed as TOML values, else kept as strings; ``--set model=NAME``,
``--set algo=NAME``, ``--set env=ID`` are short for the section's ``name``/``id`` field.
"""

from __future__ import annotations

import json
import math
import re
import sys
import typing
from pathlib import Path
from typing import Any, Literal

from algos.sections import (
    KL_TYPES,
    AlgoConfig,
    Config,
    DistConfig,
    EnvConfig,
    ModelConfig,
    OptimConfig,
    RolloutConfig,
    RunConfig,
    SftConfig,
)

__all__ = [
    "BOUNDS",
    "KL_TYPES",
    "SECTIONS",
    "AlgoConfig",
    "Config",
    "DistConfig",
    "EnvConfig",
    "ModelConfig",
    "OptimConfig",
    "RolloutConfig",
    "RunConfig",
    "SftConfig",
    "apply",
    "check_config",
    "config_from_dict",
    "dumps",
    "load_config",
    "parse_override",
    "read_recipe",
]

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

SECTIONS = ("env", "model", "rollout", "algo", "optim", "run", "sft", "dist")
#: ``--set NAME=value`` shortcuts for a section's main field.
SHORTCUTS = {"model": "model.name", "algo": "algo.name", "env": "env.id"}
LOGGERS = ("tensorboard", "wandb")

#: Inclusive numeric bounds ``(low, high)`` of fields (None = unbounded); ``>`` marks a strict
#: lower bound.
BOUNDS: dict[str, tuple[Any, Any]] = {
    "env.num_tasks": (1, None),
    "env.group_size": (1, None),
    "env.history_length": (0, None),
    "env.max_steps": (0, None),
    "env.step_timeout": (0, None),
    "env.seed": (0, None),
    "env.eval_seed": (0, None),
    "model.trainable_layers": (0, None),
    "model.lora_rank": (0, None),
    "model.lora_alpha": (1, None),
    "rollout.max_new_tokens": (1, None),
    "rollout.temperature": (">0", None),
    "rollout.top_p": (">0", 1),
    "rollout.max_prompt_tokens": (1, None),
    "rollout.max_batch_size": (1, None),
    "rollout.eval_temperature": (0, None),
    "algo.gamma": (0, 1),
    "algo.lam": (0, 1),
    "algo.step_advantage_w": (0, None),
    "algo.clip_low": (0, 1),
    "algo.clip_high": (0, None),
    "algo.clip_c": (">1", None),
    "algo.entropy_coeff": (0, None),
    "algo.kl_coef": (0, None),
    "algo.value_clip": (">0", None),
    "algo.value_coef": (0, None),
    "optim.lr": (">0", None),
    "optim.critic_lr": (">0", None),
    "optim.weight_decay": (0, None),
    "optim.max_grad_norm": (">0", None),
    "optim.ppo_epochs": (1, None),
    "optim.mini_batch_size": (0, None),
    "optim.micro_batch_size": (1, None),
    "optim.tree_tokens": (0, None),
    "optim.critic_warmup": (0, None),
    "run.iterations": (0, None),
    "run.seed": (0, 2**32 - 1),
    "run.save_every": (0, None),
    "run.keep_checkpoints": (0, None),
    "run.eval_episodes": (0, None),
    "run.eval_every": (0, None),
    "run.threads": (0, None),
    "run.log_episodes": (0, None),
    "sft.demos": (1, None),
    "sft.val_demos": (0, None),
    "sft.noise": (0, 1),
    "sft.epochs": (1, None),
    "sft.lr": (">0", None),
    "sft.mini_batch_size": (1, None),
    "sft.seed": (0, None),
    "dist.timeout_s": (">0", None),
    "dist.vllm_sleep_level": (0, 2),
}

_DEVICE = re.compile(r"^(auto|cpu|cuda(:\d+)?|mps)$")


def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _check_bounds(where: str, key: str, value: Any) -> None:
    low, high = BOUNDS.get(key, (None, None))
    strict = isinstance(low, str)
    lo = float(low[1:]) if strict else low
    if lo is not None and (value <= lo if strict else value < lo):
        raise ValueError(f"{where} = {value!r} must be {'>' if strict else '>='} {lo:g}")
    if high is not None and value > high:
        raise ValueError(f"{where} = {value!r} must be <= {high}")


def _coerce(value: Any, hint: Any, where: str) -> Any:
    """``value`` checked against the field's type hint (ints widen to floats)."""
    origin = typing.get_origin(hint)
    if origin is Literal:
        choices = typing.get_args(hint)
        if value not in choices:
            raise ValueError(f"{where} = {value!r} is not one of {', '.join(map(repr, choices))}")
        return value
    if hint is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if origin in (dict, list):
        if not isinstance(value, origin):
            kind = "a table (dict)" if origin is dict else "a list"
            raise ValueError(f"{where} must be {kind}, got {value!r}")
        return value
    if hint in (int, float, str, bool) and (
        not isinstance(value, hint) or (hint is not bool and isinstance(value, bool))
    ):
        raise ValueError(f"{where} must be {hint.__name__}, got {value!r}")
    return value


def _check_value(sec: str, key: str, value: Any, where: str) -> None:
    """Checks that need more than the type: registry names, devices, prompts, loggers."""
    full = f"{sec}.{key}"
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{where} = {value!r}: give a finite number")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        _check_bounds(where, full, value)
    if full == "algo.name":
        from algos.algorithms import ALGORITHMS

        if value not in ALGORITHMS:
            raise ValueError(
                f"{where} = {value!r}: unknown algorithm; valid: {', '.join(ALGORITHMS)}"
            )
    elif full in ("algo.estimator", "algo.policy_loss") and value:
        from algos.registry import ESTIMATORS, POLICY_LOSSES

        registry = ESTIMATORS if key == "estimator" else POLICY_LOSSES
        if value not in registry:
            raise ValueError(
                f"{where} = {value!r}: unknown {registry.kind}; registered: "
                f"{', '.join(sorted(registry))}"
            )
    elif full in ("model.name", "env.id") and not value.strip():
        raise ValueError(f"{where} = {value!r}: name one (see `algos list`)")
    elif full == "model.device" and not _DEVICE.match(value):
        raise ValueError(f"{where} = {value!r}: use auto, cpu, cuda, cuda:N or mps")
    elif full == "env.prompt" and value not in ("env", "compact") and ":" not in value:
        raise ValueError(f"{where} = {value!r}: use 'env', 'compact' or 'module:NAME'")
    elif full == "run.eval_baselines":
        bad = [v for v in value if v not in ("random", "expert")]
        if bad:
            raise ValueError(f"{where}: unknown agent {bad[0]!r}; valid: random, expert")
    elif full == "run.loggers":
        bad = [v for v in value if v not in LOGGERS]
        if bad:
            raise ValueError(f"{where}: unknown logger {bad[0]!r}; valid: {', '.join(LOGGERS)}")


def apply(cfg: Config, data: dict[str, Any], *, source: str = "config") -> Config:
    """Fill ``cfg`` from a nested dict, checking every section, key and value.

    A section table that sets ``algo.name`` first applies that algorithm's defaults.

    Raises:
        ValueError: Unknown section or key (the message lists the valid ones), or a value of
            the wrong type, outside its choices or outside its range.
    """
    for sec, values in data.items():
        if sec == "profile":
            if not isinstance(values, str):
                raise ValueError(f"{source}: profile must be a string, got {values!r}")
            cfg.profile = values
            continue
        if sec not in SECTIONS:
            raise ValueError(
                f"{source}: unknown section [{sec}]; valid sections: {', '.join(SECTIONS)}"
            )
        if not isinstance(values, dict):
            raise ValueError(f"{source}: [{sec}] must be a table of keys, got {values!r}")
        target = getattr(cfg, sec)
        hints = _hints(type(target))
        if sec == "algo" and "name" in values:
            _set(target, hints, sec, "name", values["name"], source)
            from algos.algorithms import ALGORITHMS

            for key, value in ALGORITHMS[target.name].defaults.items():
                setattr(target, key, value)
        for key, value in values.items():
            _set(target, hints, sec, key, value, source)
    return cfg


def _set(target: Any, hints: dict[str, Any], sec: str, key: str, value: Any, source: str) -> None:
    if key not in hints:
        raise ValueError(
            f"{source}: unknown key {sec}.{key}; valid keys in [{sec}]: {', '.join(hints)}"
        )
    where = f"{source}: {sec}.{key}"
    value = _coerce(value, hints[key], where)
    _check_value(sec, key, value, where)
    setattr(target, key, value)


def parse_override(text: str) -> tuple[str, str, Any]:
    """Parse ``section.key=value`` (TOML value syntax, bare words as strings).

    Example:
        >>> parse_override("optim.lr=1e-4")
        ('optim', 'lr', 0.0001)
        >>> parse_override("model=tiny-random")
        ('model', 'name', 'tiny-random')
        >>> parse_override("profile=gpu")
        ('profile', '', 'gpu')
    """
    if "=" not in text:
        raise ValueError(f"--set {text!r}: expected section.key=value")
    key, raw = text.split("=", 1)
    key = SHORTCUTS.get(key.strip(), key.strip())
    if key == "profile":
        return "profile", "", raw.strip().strip("'\"")
    if "." not in key:
        raise ValueError(
            f"--set {text!r}: expected section.key=value (sections: {', '.join(SECTIONS)}; "
            f"shortcuts: {', '.join(SHORTCUTS)}, profile)"
        )
    sec, name = key.split(".", 1)
    try:
        value = tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        value = raw
    return sec, name, value


def read_recipe(path: str | Path, _seen: tuple[Path, ...] = ()) -> dict[str, Any]:
    """A recipe's tables with the files it ``extends`` merged underneath.

    Raises:
        FileNotFoundError: The recipe or a file it extends does not exist.
        ValueError: The file is not valid TOML, or ``extends`` loops.
    """
    path = Path(path).resolve()
    if path in _seen:
        raise ValueError(f"recipe {path}: 'extends' loops back to itself")
    if (path / "config.json").is_file():
        raise FileNotFoundError(
            f"recipe {path} is a run directory, not a recipe: continue it with "
            f"`algos train --resume {path}`, or start another run from it with "
            f"`--set model.init={path}`"
        )
    if path.is_dir():
        found = sorted(p.name for p in path.glob("*.toml") if not p.name.startswith("_"))
        if (path / "profiles.toml").is_file():  # the recipes/ root: its files are shared parts
            found = []
        raise FileNotFoundError(
            f"recipe {path} is a folder; give a recipe file in it"
            + (f" ({', '.join(found)})" if found else " (recipes live in recipes/<env>/)")
        )
    if not path.is_file():
        raise FileNotFoundError(f"recipe {path} not found (recipes live in recipes/<env>/)")
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"recipe {path}: not valid TOML: {exc}") from None
    parents = data.pop("extends", [])
    if isinstance(parents, str):
        parents = [parents]
    if not isinstance(parents, list) or not all(isinstance(p, str) for p in parents):
        raise ValueError(f"recipe {path}: 'extends' must be a path or a list of paths")
    merged: dict[str, Any] = {}
    for parent in parents:
        merged = _merge(merged, read_recipe(path.parent / parent, (*_seen, path)))
    return _merge(merged, data)


def _merge(base: dict[str, Any], top: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in top.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


def load_config(path: str | Path | None = None, overrides: list[str] | tuple = ()) -> Config:
    """Load a recipe (TOML), apply its profile, then the ``--set`` overrides (module docstring).

    Args:
        path: Recipe file, or None for the defaults.
        overrides: ``section.key=value`` or ``profile=NAME`` strings.

    Raises:
        ValueError: Unknown section/key, a bad value (the message names the key and what is
            allowed), or a profile the recipe does not define (the message lists them).
        FileNotFoundError: ``path`` (or a file it extends) does not exist.
    """
    cfg = Config()
    data: dict[str, Any] = {}
    source = "defaults"
    if path is not None:
        source = str(path)
        data = read_recipe(path)
    if "profile" in data:  # a run's config.json records the profile it applied; a recipe chooses
        raise ValueError(
            f"{source}: profile = {data['profile']!r} chooses nothing in a recipe; write "
            f"default_profile = {data['profile']!r}, or pass --set profile=NAME"
        )
    profiles = data.pop("profiles", {})
    profile = data.pop("default_profile", "")
    parsed = [(text, parse_override(text)) for text in overrides]
    for _, (sec, _, value) in parsed:
        if sec == "profile":
            profile = value
    apply(cfg, data, source=source)
    if profile:
        if profile not in profiles:
            raise ValueError(
                f"{source}: unknown profile {profile!r}; this recipe has: "
                f"{', '.join(profiles) or '(no profiles)'}"
            )
        apply(cfg, profiles[profile], source=f"{source} [profiles.{profile}]")
        cfg.profile = profile
    for text, (sec, name, value) in parsed:
        if sec != "profile":
            apply(cfg, {sec: {name: value}}, source=f"--set {text}")
    check_config(cfg)
    return cfg


def check_config(cfg: Config) -> None:
    """Checks across fields, run once the config is complete.

    Raises:
        ValueError: The policy loss does not take the aggregation mode, or
            ``model.compute_dtype`` is set on a model that is not float32.
    """
    from algos.algorithms import resolve_loss

    m = cfg.model
    if m.compute_dtype == "bfloat16" and m.dtype != "float32":
        raise ValueError(
            f"model.compute_dtype = {m.compute_dtype!r} runs a float32 model's layers in "
            f"{m.compute_dtype}; model.dtype = {m.dtype!r} already computes in it"
        )

    loss = resolve_loss(cfg.algo)
    if loss.agg_modes is not None and cfg.algo.loss_agg not in loss.agg_modes:
        raise ValueError(
            f"algo.loss_agg = {cfg.algo.loss_agg!r}: the {loss.name!r} policy loss aggregates "
            f"with {', '.join(loss.agg_modes)} only"
        )


def config_from_dict(data: dict[str, Any], *, source: str = "resolved config") -> Config:
    """Rebuild a :class:`Config` from :meth:`Config.to_dict` output (resume).

    Raises:
        ValueError: ``data`` is not a table of sections, or :func:`apply` refuses it; the
            message starts with ``source``.
    """
    if not isinstance(data, dict):
        raise ValueError(f"{source}: not a config (a JSON object of sections), got {data!r:.60}")
    cfg = apply(Config(), data, source=source)
    check_config(cfg)
    return cfg


def dumps(cfg: Config) -> str:
    """The resolved config as JSON (written to ``config.json`` in the run dir)."""
    return json.dumps(cfg.to_dict(), indent=2, sort_keys=False)
