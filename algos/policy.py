"""Building the models a run trains: the policy (with its trainable part), critic and reference.

Model surgery lives here and only here: which layers train (``model.trainable_layers``), LoRA
(``model.lora_rank``), starting weights from another run (``model.init``), the critic's copy
of the body and the frozen reference copy for the KL term.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from algos.algorithms import get_algorithm
from algos.config import Config


def resolve_device(name: str) -> str:
    """``auto`` -> ``cuda`` when available, else ``cpu``; a CUDA device without CUDA is an error.

    Raises:
        ValueError: ``cuda``/``cuda:N`` asked for on a machine without a usable GPU.
    """
    if name == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if name.startswith("cuda"):
        if not torch.cuda.is_available():
            raise ValueError(
                f"model.device={name!r}, but torch sees no CUDA device (torch "
                f"{torch.__version__}); use --set model.device=cpu"
            )
        index = int(name.partition(":")[2] or 0)
        if index >= torch.cuda.device_count():
            raise ValueError(
                f"model.device={name!r}: this machine has {torch.cuda.device_count()} CUDA devices"
            )
    return name


def check_model(cfg: Config) -> None:
    """Refuse a model this machine cannot load, without loading it (before any run folder).

    The device (:func:`resolve_device`), the name (resolved offline, :func:`model_path`) and
    ``model.trainable_layers`` against the layer count in the model's ``config.json``.

    Raises:
        ValueError: No such device, or more trainable layers than the model has.
        FileNotFoundError: The name does not resolve to a model on this machine.
    """
    from algos.models import model_layers

    m = cfg.model
    resolve_device(m.device)
    layers = model_layers(m.name)
    if m.trainable_layers and layers is not None and m.trainable_layers > layers:
        raise ValueError(
            f"model.trainable_layers={m.trainable_layers}, but {m.name} has {layers} decoder layers"
        )


def native_bfloat16(device: str) -> bool:
    """Whether ``device`` multiplies bfloat16 matrices in hardware (AVX512-BF16 or AMX on a CPU).

    Without it, torch emulates bfloat16 on a CPU, and the main job's layers ran ~6x slower
    in bfloat16 than in float32 on an AVX2-only AMD EPYC (docs/benchmarks.md).
    """
    if device.startswith("cuda"):
        return torch.cuda.is_bf16_supported()
    checks = ("_is_avx512_bf16_supported", "_is_amx_tile_supported")  # torch >= 2.1, private
    return any(getattr(torch.cpu, name, lambda: False)() for name in checks)


def resolve_compute_dtype(compute_dtype: str, dtype: str, device: str) -> str:
    """``model.compute_dtype`` as this machine runs it ("" or ``bfloat16``).

    ``auto`` becomes ``bfloat16`` on a float32 model where ``device`` computes bfloat16
    natively, else "" (the model's own dtype); the other settings are kept as written.
    """
    if compute_dtype != "auto":
        return compute_dtype
    return "bfloat16" if dtype == "float32" and native_bfloat16(device) else ""


def compute_dtype_line(cfg: Config, models: Models) -> str | None:
    """The line a run prints about ``model.compute_dtype = "auto"`` (None when not auto)."""
    m = cfg.model
    if m.compute_dtype != "auto":
        return None
    if models.compute_dtype:
        why = "this device computes bfloat16 natively"
    elif m.dtype != "float32":
        why = f"the model itself is {m.dtype}"
    else:
        why = "this device has no native bfloat16 matrix units"
    return f"model: decoder layers compute in {models.compute_dtype or m.dtype} (auto: {why})"


def decoder_layers(model: Any) -> list[Any]:
    """The decoder layers of a Hugging Face causal LM (``model.model.layers``)."""
    from algos.critic import backbone_of

    body = backbone_of(model)
    layers = getattr(body, "layers", None)
    if layers is None:
        raise ValueError(f"model.trainable_layers: {type(body).__name__} has no .layers list")
    return list(layers)


def freeze_lower_layers(model: Any, keep: int) -> None:
    """Freeze everything but the last ``keep`` decoder layers and the final norm.

    The backward pass then stops at the first trainable layer, which is what makes a
    135M-parameter update affordable on two CPU cores.

    Raises:
        ValueError: ``keep`` exceeds the model's number of layers.
    """
    from algos.critic import backbone_of

    layers = decoder_layers(model)
    if keep > len(layers):
        raise ValueError(
            f"model.trainable_layers={keep}, but the model has {len(layers)} decoder layers"
        )
    model.requires_grad_(False)
    for layer in layers[-keep:]:
        layer.requires_grad_(True)
    norm = getattr(backbone_of(model), "norm", None)
    if norm is not None:
        norm.requires_grad_(True)


@dataclass
class Models:
    """The modules of one run."""

    model: Any
    tokenizer: Any
    critic: Any = None
    ref: Any = None
    compute_dtype: str = ""
    """``model.compute_dtype`` as resolved on this machine ("" or ``bfloat16``)."""


def build_models(cfg: Config) -> Models:
    """Load the policy, apply ``model.init`` and the trainable-part settings, add critic/ref.

    Initialisations that draw random numbers (the critic's head, ``tiny-random``'s weights)
    use their own seeded generators, so a run's figures do not depend on what happened to the
    global RNG before (a first-time model conversion, say).
    """
    from algos.checkpoint import load_init
    from algos.critic import ValueModel
    from algos.models import load_model

    m = cfg.model
    lora = {"r": m.lora_rank, "lora_alpha": m.lora_alpha, "target_modules": "all-linear"}
    device = resolve_device(m.device)
    compute_dtype = resolve_compute_dtype(m.compute_dtype, m.dtype, device)
    model, tok = load_model(
        m.name,
        dtype=m.dtype,
        device=device,
        seed=cfg.run.seed,
        gradient_checkpointing=m.gradient_checkpointing,
    )
    if m.init:
        load_init(model, Path(m.init), m.name)
    if m.lora_rank:
        from algos.models import add_lora

        model = add_lora(model, lora)
    if m.trainable_layers:
        freeze_lower_layers(model, m.trainable_layers)
    if compute_dtype:
        from algos.trunk import autocast_layers

        autocast_layers(model, getattr(torch, compute_dtype))
    critic = None
    if get_algorithm(cfg.algo.name).critic:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(cfg.run.seed)
            critic = ValueModel(model)
    ref = copy.deepcopy(model).eval().requires_grad_(False) if cfg.algo.kl_coef else None
    return Models(model, tok, critic, ref, compute_dtype)
