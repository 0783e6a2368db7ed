"""Learner throughput on a lent GPU: a randomly initialised model of Qwen2.5-1.5B's shape.

Needs only torch and transformers (no download: the model is built from a config and random
weights, so the numbers are about speed, not quality). Measures what one training iteration
costs: batched sampling with ``generate`` (rollout tokens/s) and a PPO-style update
(forward + backward + AdamW over prompt+response tokens, bf16, gradient checkpointing).

    python benchmarks/gpu_learner.py                      # defaults below, ~2-4 min on an H200
    python benchmarks/gpu_learner.py --batch 64 --prompt-len 1024 --new-tokens 256
"""

from __future__ import annotations

import argparse
import json
import time

import torch
from transformers import Qwen2Config, Qwen2ForCausalLM

QWEN25_15B = dict(
    vocab_size=151936,
    hidden_size=1536,
    intermediate_size=8960,
    num_hidden_layers=28,
    num_attention_heads=12,
    num_key_value_heads=2,
    max_position_embeddings=32768,
    rope_theta=1e6,
    tie_word_embeddings=True,
    rms_norm_eps=1e-6,
)


def sync() -> None:
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--batch", type=int, default=64, help="sequences sampled at once")
    p.add_argument("--prompt-len", type=int, default=1024)
    p.add_argument("--new-tokens", type=int, default=128)
    p.add_argument("--micro-batch", type=int, default=8)
    p.add_argument("--reps", type=int, default=2)
    p.add_argument("--tiny", action="store_true", help="a 2-layer model: a CPU check of the script")
    a = p.parse_args()
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    torch.manual_seed(0)
    shape = dict(QWEN25_15B)
    if a.tiny:
        shape.update(
            vocab_size=1024,
            hidden_size=64,
            intermediate_size=128,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
        )
    cfg = Qwen2Config(**shape)
    t0 = time.perf_counter()
    model = Qwen2ForCausalLM(cfg).to(device=dev, dtype=torch.bfloat16)
    build_s = time.perf_counter() - t0
    n_params = sum(p.numel() for p in model.parameters())
    prompts = torch.randint(0, cfg.vocab_size, (a.batch, a.prompt_len), device=dev)
    attn = torch.ones_like(prompts)
    # Rollout: sampled generation, every response forced to full length.
    model.eval()
    gen_kw = dict(
        max_new_tokens=a.new_tokens,
        min_new_tokens=a.new_tokens,
        do_sample=True,
        temperature=1.0,
        top_k=0,
        pad_token_id=0,
        output_logits=True,
        return_dict_in_generate=True,
    )
    with torch.no_grad():
        model.generate(
            input_ids=prompts[:2],
            attention_mask=attn[:2],
            max_new_tokens=4,
            do_sample=True,
            pad_token_id=0,
        )
        sync()
        t = time.perf_counter()
        for _ in range(a.reps):
            out = model.generate(input_ids=prompts, attention_mask=attn, **gen_kw)
            logp = torch.stack(out.logits, 1).float().log_softmax(-1)  # as the hf backend does
            del out, logp
        sync()
        gen_s = (time.perf_counter() - t) / a.reps
    # Update: forward + backward + AdamW over the same sequences, micro-batched.
    model.train()
    model.gradient_checkpointing_enable()
    model.config.use_cache = False
    opt = torch.optim.AdamW(model.parameters(), lr=1e-6)
    seqs = torch.randint(0, cfg.vocab_size, (a.batch, a.prompt_len + a.new_tokens), device=dev)
    if dev == "cuda":
        torch.cuda.reset_peak_memory_stats()

    def step() -> None:
        opt.zero_grad(set_to_none=True)
        for s in range(0, a.batch, a.micro_batch):
            mb = seqs[s : s + a.micro_batch]
            logits = model(input_ids=mb, logits_to_keep=a.new_tokens + 1, use_cache=False).logits
            logp = (
                logits[:, :-1]
                .float()
                .log_softmax(-1)
                .gather(-1, mb[:, -a.new_tokens :].unsqueeze(-1))
                .squeeze(-1)
            )
            (-(logp.mean()) * a.micro_batch / a.batch).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()

    step()
    sync()
    t = time.perf_counter()
    for _ in range(a.reps):
        step()
    sync()
    upd_s = (time.perf_counter() - t) / a.reps
    res = {
        "device": torch.cuda.get_device_name() if dev == "cuda" else "cpu",
        "torch": torch.__version__,
        "params_B": round(n_params / 1e9, 3),
        "build_s": round(build_s, 1),
        "shape": f"{a.batch}x({a.prompt_len}+{a.new_tokens})",
        "rollout_new_tokens_per_s": round(a.batch * a.new_tokens / gen_s, 1),
        "rollout_s_per_batch": round(gen_s, 2),
        "update_tokens_per_s": round(a.batch * (a.prompt_len + a.new_tokens) / upd_s, 1),
        "update_s_per_batch": round(upd_s, 2),
        "peak_mem_GB": round(torch.cuda.max_memory_allocated() / 1e9, 1) if dev == "cuda" else None,
    }
    print(json.dumps(res, indent=2))


if __name__ == "__main__":
    main()
