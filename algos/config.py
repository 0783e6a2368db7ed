"""Typed training configuration: dataclasses filled from a TOML recipe and ``--set`` overrides.

A recipe has one table per section (``[env]``, ``[model]``, ``[rollout]``, ``[algo]``,
``[optim]``, ``[run]``); every key is a field below. Loading a recipe goes through these layers,
each overriding the one before:

1. the field defaults below;
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
outside a field's choices (``Literal`` fields, registry names) or range are a ``ValueError``
naming the key, the value and what is allowed, before any model or env is built.
``--set`` values are parsed as TOML values, else kept as strings; ``--set model=NAME``,
``--set algo=NAME``, ``--set env=ID`` are short for the section's ``name``/``id`` field.
"""

from __future__ import annotations

import dataclasses
import json
import re
import sys
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from algos.losses import AGG_MODES, KL_KINDS

#: The KL estimators a config may name (``full`` needs full-vocabulary log-probs).
KL_TYPES = tuple(k for k in KL_KINDS if k != "full")

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


@dataclass
class EnvConfig:
    """Which env to train on, how it is wrapped and grouped."""

    id: str = "AgentR1/ALFWorld-v0"
    """Gymnasium id, a short name (``alfworld``), or ``module:Class`` of a custom env."""
    kwargs: dict[str, Any] = field(default_factory=dict)
    """Keywords for the env constructor (``data``, ``split``, env-specific options)."""
    num_tasks: int = 4
    """Task groups per iteration (distinct tasks)."""
    group_size: int = 4
    """Rollouts per task (group members share a reset seed)."""
    vector_mode: Literal["sync", "async", "ray"] = "sync"
    """``sync`` (one process), ``async`` (one subprocess per env) or ``ray`` (Ray actors)."""
    step_timeout: float = 0.0
    """Seconds a sub-env may take for one step before it is an error (0 = wait forever)."""
    action_format: Literal["tag", "tool_call", "plain"] = "tag"
    """How the model writes actions: ``tag`` (<action>...</action>), ``tool_call`` or ``plain``."""
    history_length: int = 2
    """Observation/action pairs of history shown in the prompt."""
    reward_scale: float = 1.0
    """Factor on the env's raw reward (0 = reward success only, as GiGPO's ALFWorld/WebShop)."""
    success_bonus: float = 0.0
    """Reward added on the step that wins (GiGPO's ALFWorld: 10, with reward_scale 0)."""
    invalid_penalty: float = 0.0
    """Reward subtracted for an invalid action (GiGPO: 0.1, i.e. -0.1 per invalid action)."""
    action_match: Literal["strict", "admissible"] = "strict"
    """``strict`` (the parsed command as written) or ``admissible`` (lenient: see ParseAction)."""
    prompt: str = "env"
    """Prompt templates: ``env`` (the env's own), ``compact`` (ChatPrompt's short one) or ``module:NAME``."""
    max_steps: int = 0
    """Agent-side cap on steps per episode (0 = only the env's own step limit)."""
    seed: int = 0
    """First task seed; iteration k trains on seeds after those of iteration k-1."""
    eval_kwargs: dict[str, Any] = field(default_factory=dict)
    """Constructor keywords overriding ``kwargs`` for evaluation (e.g. another split)."""
    eval_seed: int = 1_000_000
    """First task seed of the evaluation episodes (disjoint from training seeds)."""


@dataclass
class ModelConfig:
    """The policy model."""

    name: str = "smollm2-135m"
    """``smollm2-135m``, ``tiny-random``, a local Hugging Face folder or a cached Hub id."""
    init: str = ""
    """Starting weights: a run directory, ``sft`` (clone the expert first, into RUN_DIR/sft) or ""."""
    dtype: Literal["float32", "bfloat16", "float16"] = "float32"
    """``float32`` (CPU), ``bfloat16`` (GPU) or ``float16``."""
    device: str = "auto"
    """torch device: ``auto`` (cuda when available, else cpu), ``cpu``, ``cuda`` or ``cuda:N``."""
    gradient_checkpointing: bool = False
    """Recompute activations in the backward pass (saves memory on large models)."""
    trainable_layers: int = 0
    """Train only the last N transformer layers (+ final norm); 0 trains every layer."""
    lora_rank: int = 0
    """LoRA rank; 0 trains all weights."""
    lora_alpha: int = 32
    """LoRA scaling numerator."""


@dataclass
class RolloutConfig:
    """How responses are sampled."""

    backend: Literal["hf", "vllm"] = "hf"
    """``hf`` (transformers generate) or ``vllm`` (needs the vllm extra)."""
    max_new_tokens: int = 48
    """Response budget per step, in tokens."""
    temperature: float = 1.0
    """Sampling temperature for training rollouts (> 0)."""
    top_p: float = 1.0
    """Nucleus sampling mass, in (0, 1]."""
    max_prompt_tokens: int = 1024
    """Prompt budget; older history is dropped first, then the episode ends (context_limit)."""
    max_batch_size: int = 64
    """Most prompts per generate call."""
    eval_temperature: float = 0.0
    """Temperature of the evaluation episodes (0 = greedy)."""


@dataclass
class AlgoConfig:
    """Advantage estimator, policy loss and their coefficients."""

    name: str = "gigpo"
    """Algorithm: steppo, ppo, grpo, drgrpo, rloo, reinforce_pp, gigpo, gspo (``algos list``)."""
    gamma: float = 0.95
    """Discount (GiGPO step returns, GAE, REINFORCE++)."""
    lam: float = 1.0
    """GAE lambda (steppo, ppo)."""
    gigpo_mode: Literal["mean_norm", "mean_std_norm"] = "mean_std_norm"
    """GiGPO normalisation: ``mean_norm`` or ``mean_std_norm``."""
    step_advantage_w: float = 1.0
    """GiGPO weight of the step-level advantage."""
    group_stats_unit: Literal["step_row", "trajectory"] = "step_row"
    """Outcome estimators' group statistics over ``step_row`` (verl-agent) or ``trajectory``."""
    clip_low: float = 0.2
    """PPO clip range below 1 (GSPO's default: 3e-4)."""
    clip_high: float = 0.28
    """PPO clip range above 1 (clip-higher; GSPO's default: 4e-4)."""
    clip_c: float = 3.0
    """Dual-clip constant for negative advantages (> 1)."""
    loss_agg: Literal[AGG_MODES] = "seq-mean-token-mean"  # type: ignore[valid-type]
    """Loss aggregation: token-mean, seq-mean-token-sum, seq-mean-token-mean, seq-mean-token-sum-norm."""
    entropy_coeff: float = 0.0
    """Entropy bonus coefficient."""
    kl_coef: float = 0.0
    """KL-to-reference loss coefficient (0 = no reference model)."""
    kl_type: Literal[KL_TYPES] = "low_var_kl"  # type: ignore[valid-type]
    """KL estimator: k1, abs, k2, k3/low_var_kl (and straight-through ``+`` variants)."""
    value_clip: float = 0.5
    """Critic value clipping range."""
    value_coef: float = 1.0
    """Weight of the critic loss (it has its own optimizer; this scales its gradient)."""
    estimator: str = ""
    """Advantage estimator from ``algos.ESTIMATORS`` replacing the algorithm's ("" = keep)."""
    estimator_kwargs: dict[str, Any] = field(default_factory=dict)
    """Extra keyword options for the estimator, applied over the ones read from this section."""
    policy_loss: str = ""
    """Policy loss from ``algos.POLICY_LOSSES`` replacing the algorithm's ("" = keep)."""


@dataclass
class OptimConfig:
    """Optimiser and update schedule."""

    lr: float = 1e-5
    """Actor learning rate (AdamW)."""
    critic_lr: float = 1e-4
    """Critic learning rate."""
    weight_decay: float = 0.0
    """AdamW weight decay."""
    max_grad_norm: float = 1.0
    """Gradient-norm clipping."""
    ppo_epochs: int = 1
    """Passes over the batch per iteration."""
    mini_batch_size: int = 32
    """Step rows per optimiser step (0 = the whole batch)."""
    micro_batch_size: int = 8
    """Step rows per forward/backward pass (gradient accumulation inside a mini-batch)."""
    critic_warmup: int = 0
    """Iterations that train only the critic."""
    recompute_old_logp: bool = True
    """Recompute old log-probs with the actor before the update (False: use the rollout's)."""


@dataclass
class RunConfig:
    """Run length, output and logging."""

    iterations: int = 10
    """Rollout + update iterations."""
    seed: int = 0
    """Seed of torch/numpy/python RNGs (model init of tiny-random, sampling, shuffling)."""
    out_dir: str = "runs"
    """Parent folder of run directories."""
    name: str = ""
    """Run directory name (default: <env>-<algo>-<time>)."""
    save_every: int = 1
    """Write a checkpoint every N iterations (0 = only the final one)."""
    eval_episodes: int = 0
    """Held-out evaluation episodes before and after training (0 = none)."""
    eval_every: int = 0
    """Also evaluate on the held-out tasks after every N iterations (0 = before and after only)."""
    eval_baselines: list[str] = field(default_factory=lambda: ["random"])
    """Reference agents evaluated on the same held-out tasks before training: random, expert."""
    log_episodes: int = 4
    """Episodes per iteration written to episodes.jsonl."""
    progress: bool = True
    """Show progress bars."""
    loggers: list[str] = field(default_factory=lambda: ["tensorboard"])
    """Where metrics go besides metrics.jsonl: ``tensorboard``, ``wandb`` (any of them, or none)."""


@dataclass
class SftConfig:
    """Behaviour cloning on scripted-expert demonstrations (``algos sft``, ``model.init = "sft"``)."""

    demos: int = 64
    """Expert episodes played on the training split and cloned."""
    val_demos: int = 8
    """Further expert episodes (other train-split tasks) whose NLL is reported, not trained on."""
    noise: float = 0.0
    """Chance that a demo step is a random admissible command, not cloned (the expert recovers)."""
    epochs: int = 2
    """Passes over the demonstration steps."""
    lr: float = 1e-4
    """AdamW learning rate."""
    mini_batch_size: int = 16
    """Demonstration steps per optimiser step (micro-batched by optim.micro_batch_size)."""
    seed: int = 7
    """Seed of the demonstrations' task draws (and of the noise)."""


@dataclass
class DistConfig:
    """Data-parallel training across ranks started by ``torchrun`` (docs/scaling.md).

    ``strategy``, ``backend`` and ``timeout_s`` are read only when the launcher sets
    ``WORLD_SIZE > 1``; ``vllm_sleep_level`` applies to every vLLM run on a GPU.
    """

    strategy: Literal["ddp", "fsdp"] = "ddp"
    """``ddp`` (a full copy per rank, gradients all-reduced) or ``fsdp`` (FSDP2: sharded)."""
    backend: Literal["auto", "gloo", "nccl"] = "auto"
    """Process-group backend: ``auto`` is nccl when the model is on CUDA, else gloo."""
    timeout_s: float = 1800.0
    """Seconds a collective waits for the other ranks before the job fails (rank-0 evaluation and checkpoint writes must fit)."""
    vllm_sleep_level: int = 1
    """vLLM sleep mode during the update (GPU): 0 off, 1 weights to CPU RAM, 2 weights dropped."""


@dataclass
class Config:
    """A full training configuration (one recipe)."""

    profile: str = ""
    """Name of the recipe profile applied on top of the base sections ("" = none)."""
    env: EnvConfig = field(default_factory=EnvConfig)
    model: ModelConfig = field(default_factory=ModelConfig)
    rollout: RolloutConfig = field(default_factory=RolloutConfig)
    algo: AlgoConfig = field(default_factory=AlgoConfig)
    optim: OptimConfig = field(default_factory=OptimConfig)
    run: RunConfig = field(default_factory=RunConfig)
    sft: SftConfig = field(default_factory=SftConfig)
    dist: DistConfig = field(default_factory=DistConfig)

    def to_dict(self) -> dict[str, Any]:
        """Plain nested dict (the resolved config written next to a run)."""
        return dataclasses.asdict(self)


SECTIONS = ("env", "model", "rollout", "algo", "optim", "run", "sft", "dist")
#: ``--set NAME=value`` shortcuts for a section's main field.
SHORTCUTS = {"model": "model.name", "algo": "algo.name", "env": "env.id"}
LOGGERS = ("tensorboard", "wandb")

#: Inclusive numeric bounds ``(low, high)`` of fields (None = unbounded); ``>`` marks a strict
#: lower bound.
_BOUNDS: dict[str, tuple[Any, Any]] = {
    "env.num_tasks": (1, None),
    "env.group_size": (1, None),
    "env.history_length": (0, None),
    "env.max_steps": (0, None),
    "env.step_timeout": (0, None),
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
    "optim.critic_warmup": (0, None),
    "run.iterations": (0, None),
    "run.save_every": (0, None),
    "run.eval_episodes": (0, None),
    "run.eval_every": (0, None),
    "run.log_episodes": (0, None),
    "sft.demos": (1, None),
    "sft.val_demos": (0, None),
    "sft.noise": (0, 1),
    "sft.epochs": (1, None),
    "sft.lr": (">0", None),
    "sft.mini_batch_size": (1, None),
    "dist.timeout_s": (">0", None),
    "dist.vllm_sleep_level": (0, 2),
}

_DEVICE = re.compile(r"^(auto|cpu|cuda(:\d+)?|mps)$")


def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _check_bounds(where: str, key: str, value: Any) -> None:
    low, high = _BOUNDS.get(key, (None, None))
    strict = isinstance(low, str)
    lo = float(low[1:]) if strict else low
    if lo is not None and (value <= lo if strict else value < lo):
        raise ValueError(f"{where} = {value!r} must be {'>' if strict else '>='} {lo:g}")
    if high is not None and value > high:
        raise ValueError(f"{where} = {value!r} must be <= {high:g}")


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
        ValueError: The policy loss does not take the aggregation mode.
    """
    from algos.algorithms import resolve_loss

    loss = resolve_loss(cfg.algo)
    if loss.agg_modes is not None and cfg.algo.loss_agg not in loss.agg_modes:
        raise ValueError(
            f"algo.loss_agg = {cfg.algo.loss_agg!r}: the {loss.name!r} policy loss aggregates "
            f"with {', '.join(loss.agg_modes)} only"
        )


def config_from_dict(data: dict[str, Any]) -> Config:
    """Rebuild a :class:`Config` from :meth:`Config.to_dict` output (resume)."""
    cfg = apply(Config(), data, source="resolved config")
    check_config(cfg)
    return cfg


def dumps(cfg: Config) -> str:
    """The resolved config as JSON (written to ``config.json`` in the run dir)."""
    return json.dumps(cfg.to_dict(), indent=2, sort_keys=False)
