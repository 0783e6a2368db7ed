"""The frozen trunk: when only the top layers train, their input is computed once.

With ``model.trainable_layers = k`` everything below the top k decoder layers is frozen (the
embeddings too), so the hidden state entering the first trainable layer is a fixed function of
the tokens. The rollout already computes it, token by token, while it samples; keeping it
(:func:`capture`) lets the update run only the top k layers (:func:`top_forward`), the part
that has a gradient, instead of the whole model: the same logits up to float rounding
(tested), at about k/L of a full forward's cost. ``algos sft`` computes the states once per
demonstration and trains the top layers on them for every epoch.

Only decoder stacks of the usual Hugging Face shape are handled (``model.model.layers`` with
the embeddings applied before the first layer and nothing but the final norm after the last:
Llama, Qwen2, SmolLM2, Mistral); :func:`trunk_depth` is None for anything else, and then the
learner runs the full model.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import torch
from torch import nn

from algos.critic import backbone_of

#: Architectures whose forward is embed -> layers -> norm -> head (checked, see module doc).
_SUPPORTED = ("LlamaModel", "Qwen2Model", "MistralModel", "Qwen3Model")


def trunk_depth(model: Any) -> int | None:
    """Index of the first trainable decoder layer when the trunk below it is frozen.

    None unless the model is a supported stack whose embeddings and lower layers are all
    frozen and whose layers from the first trainable one up all train.
    """
    try:
        body = backbone_of(model)
    except TypeError:
        return None
    layers = getattr(body, "layers", None)
    if type(body).__name__ not in _SUPPORTED or layers is None:
        return None
    trains = [any(p.requires_grad for p in layer.parameters()) for layer in layers]
    if not any(trains):
        return None
    depth = trains.index(True)
    embeds = body.get_input_embeddings()
    if depth == 0 or any(p.requires_grad for p in embeds.parameters()):
        return None
    if not all(trains[depth:]):
        return None
    return depth


@contextlib.contextmanager
def capture(model: Any, depth: int) -> Iterator[list[torch.Tensor]]:
    """Record the hidden states entering layer ``depth`` during the forwards in the block.

    Yields a list that receives one ``(batch, seq, hidden)`` tensor per forward, in order.
    """
    seen: list[torch.Tensor] = []
    layer = backbone_of(model).layers[depth]

    def hook(_module: nn.Module, args: tuple, kwargs: dict) -> None:
        states = args[0] if args else kwargs["hidden_states"]
        seen.append(states.detach())

    handle = layer.register_forward_pre_hook(hook, with_kwargs=True)
    try:
        yield seen
    finally:
        handle.remove()


def top_forward(model: Any, depth: int, states: torch.Tensor, **inputs: Any) -> Any:
    """The model's output from layer ``depth`` up, on the hidden states entering it.

    ``inputs`` are the usual forward keywords (``attention_mask``, ``position_ids``,
    ``logits_to_keep``, ...) for the sequence ``states`` stands for.
    """
    body = backbone_of(model)
    full = body.layers
    body.layers = nn.ModuleList(list(full)[depth:])
    try:
        return model(inputs_embeds=states, use_cache=False, **inputs)
    finally:
        body.layers = full


@torch.no_grad()
def trunk_states(model: Any, depth: int, inputs: dict[str, Any]) -> torch.Tensor:
    """The hidden states entering layer ``depth`` for packed ``inputs`` (the layers below run).

    The stack is cut to its first ``depth`` layers for the call; the states are read where
    they enter the final norm, which then sees exactly what layer ``depth`` would.
    """
    body = backbone_of(model)
    full = body.layers
    seen: list[torch.Tensor] = []

    def hook(_module: nn.Module, args: tuple) -> None:
        seen.append(args[0].detach())

    body.layers = nn.ModuleList(list(full)[:depth])
    handle = body.norm.register_forward_pre_hook(hook)
    try:
        body(
            input_ids=inputs["input_ids"],
            attention_mask=inputs["attention_mask"],
            position_ids=inputs["position_ids"],
            use_cache=False,
        )
    finally:
        handle.remove()
        body.layers = full
    return seen[0]
