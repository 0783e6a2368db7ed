"""The policy-backend interface: token ids in, sampled token ids and their log-probs out."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable


@dataclass(frozen=True)
class SamplingParams:
    """How to sample one response per prompt.

    Attributes:
        max_new_tokens: Response budget in tokens; a response that reaches it without an end
            token finishes with reason ``"length"``.
        temperature: Softmax temperature; 0 means greedy decoding.
        top_p: Nucleus sampling mass (1.0 = off).
    """

    max_new_tokens: int = 64
    temperature: float = 1.0
    top_p: float = 1.0


@dataclass
class Generation:
    """One sampled response, exactly as the policy produced it (token-in/token-out).

    Attributes:
        token_ids: Response token ids, including the end token when generation stopped on one.
        logprobs: Log-probability of each token in ``token_ids`` under the sampling
            distribution's softmax(logits / temperature) (no top-p renormalisation), or
            ``None`` where the backend cannot report them.
        text: ``token_ids`` decoded with special tokens skipped (what the env receives).
        finish_reason: ``"stop"`` (end token) or ``"length"`` (hit ``max_new_tokens``).
    """

    token_ids: list[int]
    logprobs: list[float] | None
    text: str
    finish_reason: str = "stop"
    extra: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class PolicyBackend(Protocol):
    """What the rollout needs from a policy.

    ``tokenizer`` applies the chat template (prompts are token ids built once, never
    re-tokenised); ``generate`` samples one response per prompt; ``sync_weights`` copies the
    learner's weights in after an update (a no-op when the backend shares the module).
    """

    tokenizer: Any
    #: True when ``generate`` returns log-probs (needed for training).
    returns_logprobs: bool

    def generate(self, prompts: list[list[int]], params: SamplingParams) -> list[Generation]:
        """Sample one response for each prompt (a list of token id lists)."""
        ...

    def sync_weights(self, model: Any) -> None:
        """Load the learner's current weights."""
        ...
