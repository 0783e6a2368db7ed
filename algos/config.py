"""Typed training configuration: dataclasses filled from a TOML recipe and ``--set`` overrides.

A recipe has one table per section (``[env]``, ``[model]``, ``[rollout]``, ``[algo]``,
``[optim]``, ``[run]``); every key is a field below. A recipe may also hold *profiles*:
``[profiles.cpu.model]``, ``[profiles.gpu.optim]``, ... are section tables applied on top of
the base sections when the profile is chosen (``--set profile=gpu``, or the recipe's
top-level ``default_profile``). The order is: base sections, then the profile, then every
other ``--set``, whatever its position on the command line. ``--set section.key=value`` overrides one
field (the value is parsed as a TOML value, else kept as a string), and ``--set model=NAME``,
``--set algo=NAME``, ``--set env=ID`` are short for the section's ``name``/``id`` field. Unknown
keys are errors that list the valid ones.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


@dataclass
class EnvConfig:
    """Which env to train on, how it is wrapped and grouped."""

    id: str = "AgentR1/ALFWorld-v0"
    """Gymnasium id (``algos list`` shows them) or ``module:Class`` of a custom env."""
    kwargs: dict[str, Any] = field(default_factory=dict)
    """Keywords for the env constructor (``data``, ``split``, env-specific options)."""
    num_tasks: int = 4
    """Task groups per iteration (distinct tasks)."""
    group_size: int = 4
    """Rollouts per task (group members share a reset seed)."""
    vector_mode: str = "sync"
    """``sync`` (one process) or ``async`` (one subprocess per env)."""
    action_format: str = "tag"
    """How the model writes actions: ``tag`` (<action>...</action>), ``tool_call`` or ``plain``."""
    history_length: int = 2
    """Observation/action pairs of history shown in the prompt."""
    reward_scale: float = 1.0
    """Factor on the env's raw reward (0 = reward success only, as GiGPO's ALFWorld/WebShop)."""
    success_bonus: float = 0.0
    """Reward added on the step that wins (GiGPO's ALFWorld: 10, with reward_scale 0)."""
    invalid_penalty: float = 0.0
    """Reward subtracted for an invalid action (GiGPO: 0.1, i.e. -0.1 per invalid action)."""
    action_match: str = "strict"
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
    """``smollm2-135m``, ``tiny-random`` or a Hugging Face path/id."""
    dtype: str = "float32"
    """``float32`` (CPU), ``bfloat16`` (GPU) or ``float16``."""
    device: str = "auto"
    """torch device; ``auto`` picks cuda when available, else cpu."""
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

    backend: str = "hf"
    """``hf`` (transformers generate) or ``vllm`` (needs the vllm extra)."""
    max_new_tokens: int = 48
    """Response budget per step, in tokens."""
    temperature: float = 1.0
    """Sampling temperature for training rollouts."""
    top_p: float = 1.0
    """Nucleus sampling mass."""
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
    gigpo_mode: str = "mean_std_norm"
    """GiGPO normalisation: ``mean_norm`` or ``mean_std_norm``."""
    step_advantage_w: float = 1.0
    """GiGPO weight of the step-level advantage."""
    group_stats_unit: str = "step_row"
    """Outcome estimators' group statistics over ``step_row`` (verl-agent) or ``trajectory``."""
    clip_low: float = 0.2
    """PPO clip range below 1 (GSPO-style losses use 3e-4 in the recipes)."""
    clip_high: float = 0.28
    """PPO clip range above 1 (clip-higher)."""
    clip_c: float = 3.0
    """Dual-clip constant for negative advantages."""
    loss_agg: str = "seq-mean-token-mean"
    """Loss aggregation mode (token-mean, seq-mean-token-sum, seq-mean-token-mean, seq-mean-token-sum-norm)."""
    entropy_coeff: float = 0.0
    """Entropy bonus coefficient."""
    kl_coef: float = 0.0
    """KL-to-reference loss coefficient (0 = no reference model)."""
    kl_type: str = "low_var_kl"
    """KL estimator: k1, abs, k2, k3/low_var_kl (and straight-through ``+`` variants)."""
    value_clip: float = 0.5
    """Critic value clipping range."""
    value_coef: float = 1.0
    """Weight of the critic loss (it has its own optimizer; this scales its gradient)."""
    estimator: str = ""
    """Advantage estimator from ``algos.ESTIMATORS`` replacing the algorithm's ("" = keep)."""
    estimator_kwargs: dict[str, Any] = field(default_factory=dict)
    """Extra keyword options for the estimator (the only options a user-registered one gets)."""
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
    """Write a checkpoint every N iterations (and at the end)."""
    eval_episodes: int = 0
    """Evaluation episodes before and after training (0 = none)."""
    log_episodes: int = 4
    """Episodes per iteration written to episodes.jsonl."""
    progress: bool = True
    """Show progress bars."""
    tensorboard: bool = True
    """Write TensorBoard events."""


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

    def to_dict(self) -> dict[str, Any]:
        """Plain nested dict (the resolved config written next to a run)."""
        return dataclasses.asdict(self)


#: ``--set NAME=value`` shortcuts for a section's main field.
SHORTCUTS = {"model": "model.name", "algo": "algo.name", "env": "env.id"}


def field_docs(cls: type) -> dict[str, str]:
    """Field name -> its one-line docstring (read from the source), for ``--help`` and docs."""
    import ast
    import inspect

    tree = ast.parse(inspect.getsource(cls))
    body = tree.body[0].body  # type: ignore[attr-defined]
    docs = {}
    for a, b in zip(body, body[1:]):
        if isinstance(a, ast.AnnAssign) and isinstance(b, ast.Expr):
            docs[a.target.id] = str(b.value.value)  # type: ignore[union-attr]
    return docs


def _section_fields(section: Any) -> dict[str, dataclasses.Field]:
    return {f.name: f for f in dataclasses.fields(section)}


def _coerce(value: Any, f: dataclasses.Field, where: str) -> Any:
    kind = f.type if isinstance(f.type, str) else getattr(f.type, "__name__", str(f.type))
    if kind == "float" and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    checks = {"int": int, "float": float, "str": str, "bool": bool}
    expected = checks.get(kind)
    if expected is not None and (
        not isinstance(value, expected) or (expected is int and isinstance(value, bool))
    ):
        raise ValueError(f"{where} must be {kind}, got {value!r}")
    if kind.startswith("dict") and not isinstance(value, dict):
        raise ValueError(f"{where} must be a table (dict), got {value!r}")
    return value


def apply(cfg: Config, data: dict[str, Any], *, source: str = "config") -> Config:
    """Fill ``cfg`` from a nested dict, raising on unknown sections or keys."""
    sections = _section_fields(cfg)
    for sec, values in data.items():
        if sec == "profile":
            if not isinstance(values, str):
                raise ValueError(f"{source}: profile must be a string, got {values!r}")
            cfg.profile = values
            continue
        if sec not in sections:
            raise ValueError(
                f"{source}: unknown section [{sec}]; valid sections: {', '.join(sections)}"
            )
        if not isinstance(values, dict):
            raise ValueError(f"{source}: [{sec}] must be a table of keys")
        target = getattr(cfg, sec)
        fields = _section_fields(target)
        for key, value in values.items():
            if key not in fields:
                raise ValueError(
                    f"{source}: unknown key {sec}.{key}; valid keys in [{sec}]: {', '.join(fields)}"
                )
            setattr(target, key, _coerce(value, fields[key], f"{source}: {sec}.{key}"))
    return cfg


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
    if "." not in key and key != "profile":
        raise ValueError(
            f"--set {text!r}: expected section.key=value (sections: env, model, rollout, algo, "
            f"optim, run; shortcuts: {', '.join(SHORTCUTS)}, profile)"
        )
    if key == "profile":
        return "profile", "", raw.strip().strip("'\"")
    sec, name = key.split(".", 1)
    try:
        value = tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        value = raw
    return sec, name, value


def load_config(path: str | Path | None = None, overrides: list[str] = ()) -> Config:
    """Load a recipe (TOML), apply its profile, then the ``--set`` overrides.

    Order: the recipe's base sections; then the tables of the chosen profile
    (``[profiles.NAME.SECTION]``), where the profile is the last ``profile=NAME`` override,
    else the recipe's top-level ``default_profile``, else none (``profile=`` with an empty
    name also means none); then every other override, in order.

    Args:
        path: Recipe file, or None for the defaults.
        overrides: ``section.key=value`` or ``profile=NAME`` strings.

    Raises:
        ValueError: Unknown section/key, a value of the wrong type (the message lists the
            valid keys), or a profile the recipe does not define (the message lists them).
        FileNotFoundError: ``path`` does not exist.
    """
    cfg = Config()
    data: dict[str, Any] = {}
    source = "defaults"
    if path is not None:
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"recipe {path} not found (recipes live in recipes/<env>/)")
        source = str(path)
        with path.open("rb") as fh:
            data = tomllib.load(fh)
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
    return cfg


def config_from_dict(data: dict[str, Any]) -> Config:
    """Rebuild a :class:`Config` from :meth:`Config.to_dict` output (resume)."""
    return apply(Config(), data, source="resolved config")


def dumps(cfg: Config) -> str:
    """The resolved config as TOML-like JSON (written to ``config.json`` in the run dir)."""
    return json.dumps(cfg.to_dict(), indent=2, sort_keys=False)
