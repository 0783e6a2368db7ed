"""Policy backends behind one interface (:class:`~algos.backends.base.PolicyBackend`)."""

from __future__ import annotations

from typing import Any

from algos.backends.base import Generation, PolicyBackend, SamplingParams

BACKENDS = ("hf", "vllm", "openai")


def make_backend(
    name: str,
    model: Any,
    tokenizer: Any,
    *,
    seed: int | None = None,
    max_model_len: int | None = None,
    **kwargs: Any,
) -> PolicyBackend:
    """Build a backend for the learner's model: ``hf`` or ``vllm``.

    Args:
        name: ``hf`` (transformers ``generate`` on the learner's own module) or ``vllm`` (an
            engine on a copy of the weights, synced after each update).
        model: The learner's model.
        tokenizer: Its tokenizer.
        seed: Sampling seed (the hf backend's own random state, the vLLM engine's seed).
        max_model_len: Prompt + response budget of the vLLM engine (default: the model's).
        **kwargs: Backend options (hf: ``max_batch_size``).

    Raises:
        ValueError: Unknown name (``openai`` serves evaluation only: build
            :class:`~algos.backends.openai.OpenAIBackend` with a URL).
    """
    if name == "hf":
        from algos.backends.hf import HFBackend

        return HFBackend(model, tokenizer, seed=seed or 0, **kwargs)
    if name == "vllm":
        from algos.backends.vllm import VLLMBackend

        engine: dict[str, Any] = {}
        if seed is not None:
            engine["seed"] = seed
        if max_model_len is not None:
            engine["max_model_len"] = max_model_len
        return VLLMBackend.from_model(model, tokenizer, **engine)
    raise ValueError(f"unknown training backend {name!r}; valid: hf, vllm")


__all__ = ["BACKENDS", "Generation", "PolicyBackend", "SamplingParams", "make_backend"]
