"""Policy backends behind one interface (:class:`~algos.backends.base.PolicyBackend`)."""

from __future__ import annotations

from typing import Any

from algos.backends.base import Generation, PolicyBackend, SamplingParams

BACKENDS = ("hf", "vllm", "openai")


def make_backend(name: str, model: Any, tokenizer: Any, **kwargs: Any) -> PolicyBackend:
    """Build a backend for the learner's model: ``hf`` or ``vllm``.

    Raises:
        ValueError: Unknown name (``openai`` serves evaluation only: build
            :class:`~algos.backends.openai.OpenAIBackend` with a URL).
    """
    if name == "hf":
        from algos.backends.hf import HFBackend

        return HFBackend(model, tokenizer, **kwargs)
    if name == "vllm":
        from algos.backends.vllm import VLLMBackend

        return VLLMBackend.from_model(model, tokenizer)
    raise ValueError(f"unknown training backend {name!r}; valid: hf, vllm")


__all__ = ["BACKENDS", "Generation", "PolicyBackend", "SamplingParams", "make_backend"]
