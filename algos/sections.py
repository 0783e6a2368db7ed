"""The sections of a training config: typed dataclasses, one docstring per field.

A recipe's ``[env]``, ``[model]``, ``[rollout]``, ``[algo]``, ``[optim]``, ``[run]``, ``[sft]``
and ``[dist]`` tables fill these (:mod:`algos.config` loads and checks them). ``Literal``
fields name their choices; numeric ranges are in :data:`algos.config.BOUNDS`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Literal

from algos.losses import AGG_MODES, KL_KINDS

#: The KL estimators a config may name (``full`` needs full-vocabulary log-probs).
KL_TYPES = tuple(k for k in KL_KINDS if k != "full")


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
    action_match: Literal["strict", "admissible", "number"] = "strict"
    """``strict`` (as written), ``admissible`` (lenient) or ``number`` (of a listed command): ParseAction."""
    choices: str = ""
    """With ``action_match = "number"``: ``module:function`` of info giving the commands on offer ("" = all)."""
    prompt: str = "env"
    """Prompt templates: ``env`` (the env's own), ``compact`` (ChatPrompt's short one) or ``module:NAME``."""
    max_steps: int = 0
    """Agent-side cap on steps per episode (0 = only the env's own step limit)."""
    seed: int = 0
    """First task seed: iteration k draws its tasks with ``seed + k - 1``.

    Runs whose seeds differ by less than ``run.iterations`` share most draws (shifted by an
    iteration); space them ``run.iterations`` or more apart for other draws.
    """
    eval_kwargs: dict[str, Any] = field(default_factory=dict)
    """Constructor keywords overriding ``kwargs`` for evaluation (e.g. another split)."""
    eval_seed: int = 1_000_000
    """First seed tried for the held-out tasks (disjoint from training seeds; each task once)."""


@dataclass
class ModelConfig:
    """The policy model."""

    name: str = "smollm2-135m"
    """``smollm2-135m``, ``tiny-random``, a local Hugging Face folder or a cached Hub id."""
    init: str = ""
    """Starting weights: a run directory (its latest checkpoint), one of its checkpoints
    (``RUN_DIR/checkpoints/iter_N``), ``sft`` (clone the expert first, into RUN_DIR/sft) or "".
    A run records a run directory as the checkpoint it started from, so it resumes from those
    weights even if that run trains on."""
    dtype: Literal["float32", "bfloat16", "float16"] = "float32"
    """``float32`` (CPU), ``bfloat16`` (GPU) or ``float16``."""
    device: str = "auto"
    """torch device: ``auto`` (cuda when available, else cpu), ``cpu``, ``cuda`` or ``cuda:N``."""
    gradient_checkpointing: bool = False
    """Recompute activations in the backward pass (saves memory on large models)."""
    trainable_layers: int = 0
    """Train only the last N transformer layers (+ final norm); 0 trains every layer."""
    compute_dtype: Literal["", "bfloat16", "auto"] = ""
    """Decoder layers' matmul dtype on a float32 model: "" (``dtype``), ``bfloat16`` (autocast),
    or ``auto``: bfloat16 where the device computes it natively (a CPU with AVX512-BF16 or AMX,
    a GPU with bfloat16), else ``dtype`` (emulated bfloat16 is several times slower)."""
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
    tree_tokens: int = 1024
    """Tokens per forward/backward pass of a token tree, where each distinct prefix of a
    mini-batch's rows runs once (0: passes of ``micro_batch_size`` rows, as before
    2026-12-07)."""
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
    keep_checkpoints: int = 2
    """Checkpoints kept: the newest N (0 = every one written); older ones are deleted."""
    eval_episodes: int = 0
    """Distinct held-out tasks played before and after training, each once (0 = none)."""
    threads: int = 0
    """torch CPU threads (0 = torch's default: OMP_NUM_THREADS or the cores); figures depend on it."""
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
    expert: str = "expert_action"
    """The env method that gives the demonstrator's next command (ALFWorld also has
    ``search_expert_action``: an expert that must search for the object, as the policy must).
    Several, comma-separated, take turns by episode (``"a,b"``: a plays episodes 0, 2, ...)."""


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
