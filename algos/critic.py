"""The critic: a scalar value head on a copy of the policy's transformer body (as verl does)."""

from __future__ import annotations

import copy
from typing import Any

import torch
from torch import nn


def backbone_of(causal_lm: Any) -> nn.Module:
    """The transformer body (no LM head) of a Hugging Face causal LM, e.g. ``model.model``."""
    base = getattr(causal_lm, "get_base_model", None)
    lm = base() if callable(base) else causal_lm  # unwrap peft
    prefix = getattr(lm, "base_model_prefix", "model")
    body = getattr(lm, prefix, None)
    if not isinstance(body, nn.Module):
        raise TypeError(f"cannot find the transformer body of {type(lm).__name__} ({prefix!r})")
    return body


class ValueModel(nn.Module):
    """V(s) from the last hidden state: ``head(body(tokens)[:, positions])``.

    The body is a deep copy of the policy's (so actor and critic start from the same
    pretrained features but train separately); the head starts at zero so initial values are 0.

    Args:
        causal_lm: The policy model to copy the body from.
    """

    def __init__(self, causal_lm: Any) -> None:
        super().__init__()
        self.body = copy.deepcopy(backbone_of(causal_lm))
        hidden = self.body.config.hidden_size
        param = next(self.body.parameters())
        self.head = nn.Linear(hidden, 1, dtype=param.dtype, device=param.device)
        nn.init.zeros_(self.head.weight)
        nn.init.zeros_(self.head.bias)

    def forward(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor, position_ids: torch.Tensor
    ) -> torch.Tensor:
        """Values at every position: (b, T) float32."""
        hidden = self.body(
            input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids
        ).last_hidden_state
        return self.head(hidden).squeeze(-1).float()
