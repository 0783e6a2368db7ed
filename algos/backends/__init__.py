"""Policy backends behind one interface (:class:`~algos.backends.base.PolicyBackend`)."""

from __future__ import annotations

from typing import Any

from algos.backends.base import Generation, PolicyBackend, SamplingParams

BACKENDS = ("hf", "vllm", "openai")


def check_backend(name: str, where: str) -> None:
    """Refuse a backend this machine cannot run, before any model loads.

    Raises:
        ValueError: ``vllm`` where vLLM is not installed; the message starts with ``where``.
    """
    if name == "vllm":
        from algos.backends.vllm import NEEDS_VLLM, vllm_installed

        if not vllm_installed():
            raise ValueError(f"{where}: {NEEDS_VLLM}")


def make_backend(
    name: str,
    model: Any = None,
    tokenizer: Any = None,
    *,
    model_name: str | None = None,
    url: str | None = None,
    seed: int | None = None,
    max_model_len: int | None = None,
    **kwargs: Any,
) -> PolicyBackend:
    """Build a policy backend: the one place that knows every kind.

    Args:
        name: ``hf`` (transformers on the learner's own module), ``vllm`` (an engine on a copy
            of ``model``'s weights, synced after each update, or on ``model_name``) or
            ``openai`` (any OpenAI-compatible server at ``url`` serving ``model_name``).
        model: The learner's model (``hf``; ``vllm`` when training).
        tokenizer: Its tokenizer (``openai``: token mode when given, else chat mode).
        model_name: A model path for ``vllm`` without ``model``; the served name for ``openai``.
        url: The server of ``openai``.
        seed: Sampling seed (the hf backend's own generator, the vLLM engine's seed).
        max_model_len: Prompt + response budget of the vLLM engine (default: the model's).
        **kwargs: Backend options (hf: ``max_batch_size``, ``prefix_sharing``).

    Raises:
        ValueError: Unknown name, or what the kind needs is missing.
    """
    if name == "hf":
        if model is None or tokenizer is None:
            raise ValueError("the hf backend needs the model and its tokenizer")
        from algos.backends.hf import HFBackend

        return HFBackend(model, tokenizer, seed=seed or 0, **kwargs)
    if name == "vllm":
        from algos.backends.vllm import VLLMBackend

        engine: dict[str, Any] = {}
        if seed is not None:
            engine["seed"] = seed
        if max_model_len is not None:
            engine["max_model_len"] = max_model_len
        if model is not None:
            return VLLMBackend.from_model(model, tokenizer, **engine)
        if not model_name:
            raise ValueError("the vllm backend needs a model or a model path")
        return VLLMBackend(model_name, tokenizer=tokenizer, **engine)
    if name == "openai":
        if not url or not model_name:
            raise ValueError("the openai backend needs url= and model_name= (the served model)")
        from algos.backends.openai import OpenAIBackend

        return OpenAIBackend(url, model=model_name, tokenizer=tokenizer)
    raise ValueError(f"unknown backend {name!r}; valid: {', '.join(BACKENDS)}")


__all__ = ["BACKENDS", "Generation", "PolicyBackend", "SamplingParams", "make_backend"]
