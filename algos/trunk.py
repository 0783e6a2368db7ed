"""The frozen trunk: when only the top layers train, their input is computed once.

With ``model.trainable_layers = k`` everything below the top k decoder layers is frozen (the
embeddings too), so the hidden state entering the first trainable layer is a fixed function of
the tokens. The rollout already computes it, token by token, while it samples; keeping it
(:func:`capture`) lets the update run only the top k layers (:func:`top_forward`), the part
that has a gradient, instead of the whole model: the same logits up to float rounding
(tested), at about k/L of a full forward's cost. ``algos sft`` computes the states once per
demonstration and trains the top layers on them for every epoch.

With ``model.compute_dtype = "bfloat16"`` on a float32 model every decoder layer runs under
autocast and the frozen ones are stored in bfloat16 (:func:`autocast_layers`), each layer
returning its hidden states in float32: the matrix products, nearly all of a forward's work,
run in bfloat16 (prefill ~2x float32 on an AMX CPU: docs/benchmarks.md), while
the residual stream, the embeddings, the head, the trained weights and the optimiser stay in
float32 (mixed precision).

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


def autocast_layers(model: Any, dtype: torch.dtype) -> int:
    """Run every decoder layer under autocast to ``dtype``; store the frozen ones in it.

    Each layer's class is swapped for a subclass whose forward runs under
    ``torch.autocast(dtype)`` and returns its hidden states in the dtype they came in, so the
    residual stream, the final norm and the head keep the model's dtype. Layers without a
    trainable parameter are converted to ``dtype`` once (autocast would otherwise convert
    their weights at every forward); trainable ones keep float32 weights, which autocast
    converts per forward, and their gradients and optimiser states stay float32. The swap
    keeps parameter names, so checkpoints (trainable parameters only) are unchanged, and
    survives ``copy.deepcopy``. Returns the number of layers stored in ``dtype``.
    """
    stored = 0
    for layer in backbone_of(model).layers:
        if not any(p.requires_grad for p in layer.parameters()):
            layer.to(dtype)
            stored += 1
        layer.__class__ = _autocast_class(type(layer), dtype)
    return stored


_AUTOCAST_CLASSES: dict[tuple[type, torch.dtype], type] = {}


def _autocast_class(cls: type, dtype: torch.dtype) -> type:
    """``cls`` with its forward under autocast to ``dtype`` (one class per pair, reused)."""
    if getattr(cls, "_autocast_dtype", None) is not None:
        return cls
    key = (cls, dtype)
    if key not in _AUTOCAST_CLASSES:

        def forward(self: nn.Module, *args: Any, **kwargs: Any) -> Any:
            states = args[0] if args else kwargs["hidden_states"]
            device = states.device.type
            rotary = kwargs.get("position_embeddings")
            if rotary is not None:  # else q and k leave the rotation in float32
                kwargs["position_embeddings"] = tuple(t.to(dtype) for t in rotary)
            with torch.autocast(device_type=device, dtype=dtype):
                out = cls.forward(self, *args, **kwargs)
            if isinstance(out, torch.Tensor):
                return out.to(states.dtype)
            return (out[0].to(states.dtype), *out[1:])  # older transformers return tuples

        _AUTOCAST_CLASSES[key] = type(
            f"Autocast{cls.__name__}", (cls,), {"forward": forward, "_autocast_dtype": dtype}
        )
    return _AUTOCAST_CLASSES[key]


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
    ``logits_to_keep``, a cache and ``use_cache``, ...) for the sequence ``states`` stands for.
    """
    body = backbone_of(model)
    full = body.layers
    body.layers = nn.ModuleList(list(full)[depth:])
    try:
        return model(inputs_embeds=states, **{"use_cache": False, **inputs})
    finally:
        body.layers = full


_TOP_CACHE: type | None = None


def top_cache(depth: int) -> Any:
    """An empty key/value cache for :func:`top_forward`: layer ``depth + i`` fills its layer i.

    A plain ``DynamicCache`` would keep the top layers' entries under their own indices and
    report the length of its (empty) layer 0, which is what the attention masks are sized by.
    """
    global _TOP_CACHE
    if _TOP_CACHE is None:
        from transformers import DynamicCache

        class TopCache(DynamicCache):
            depth = 0

            def update(self, key_states: Any, value_states: Any, layer_idx: int, *args: Any,
                       **kwargs: Any) -> Any:  # fmt: skip
                return super().update(key_states, value_states, layer_idx - self.depth, *args,
                                      **kwargs)  # fmt: skip

        _TOP_CACHE = TopCache
    cache = _TOP_CACHE()
    cache.depth = depth
    return cache


def cache_keyword(model: Any) -> str:
    """The forward keyword of a model's key/value cache in this transformers version.

    (``past_key_values`` was renamed ``cache`` in transformers 5.2x; both are accepted for a
    while, the old one with a warning.) A DDP wrapper, whose ``forward`` takes ``*args,
    **kwargs``, is looked through (:func:`algos.distributed.plain`).
    """
    import inspect

    from algos.distributed import plain

    params = inspect.signature(plain(model).forward).parameters
    return "cache" if "cache" in params else "past_key_values"


@torch.no_grad()
def trunk_states(model: Any, depth: int, inputs: dict[str, Any]) -> torch.Tensor:
    """The hidden states entering layer ``depth`` for packed ``inputs`` (the layers below run).

    The stack is cut to its first ``depth`` layers for the call; the states are read where
    they enter the final norm, which then sees exactly what layer ``depth`` would. With a
    shared prefix (``inputs["prefix_ids"]``, :func:`algos.packing.pack`) the prefix runs once
    and its states are returned first: ``(1, S, H)`` then the rows' ``(b, T, H)``, as a pair.
    """
    from transformers import DynamicCache

    body = backbone_of(model)
    full = body.layers
    seen: list[torch.Tensor] = []

    def hook(_module: nn.Module, args: tuple) -> None:
        seen.append(args[0].detach())

    body.layers = nn.ModuleList(list(full)[:depth])
    handle = body.norm.register_forward_pre_hook(hook)
    mask = inputs["attention_mask"]
    try:
        kwargs: dict[str, Any] = {"use_cache": False}
        if "prefix_ids" in inputs:
            cache, shared = DynamicCache(), inputs["prefix_ids"].shape[1]
            kwargs = {cache_keyword(body): cache, "use_cache": True}
            position = torch.arange(shared, device=mask.device)[None]
            body(input_ids=inputs["prefix_ids"], position_ids=position, **kwargs)
            cache.batch_repeat_interleave(mask.shape[0])
            mask = torch.cat([mask.new_ones(mask.shape[0], shared), mask], 1)
        body(
            input_ids=inputs["input_ids"],
            attention_mask=mask,
            position_ids=inputs["position_ids"],
            **kwargs,
        )
    finally:
        handle.remove()
        body.layers = full
    return (seen[0], seen[1]) if len(seen) == 2 else seen[0]
