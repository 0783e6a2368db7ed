"""How often GiGPO's step groups form on the long ALFWorld recipe (generated games).

GiGPO adds to GRPO's episode advantage a step advantage over the rows of one task group that
stand in the same anchor state (the observation without history). A row alone in its state
gets none, so GiGPO differs from GRPO only as far as the rollouts revisit states. This samples
the rollouts of RL iterations 1 and 2 (the recipe's task draws, 8 tasks x 8, its sampling)
from three policies on this machine and counts, over their step rows:

* rows that share their anchor state with another row of their task group (a step group of 2
  or more), rows that share it with another episode (not only with their own episode's other
  visits, as after an action that changed nothing), and the mean size of a row's step group;
* rows with zero advantage under GiGPO and under GRPO (the recipe's estimator settings).

    python docs/results/step_groups_alfworld_long.py

Policies: the clone both algorithms start from, GiGPO's and GRPO's RL seed 0 after 12
iterations (``POLICIES``; the runs of docs/results.md, "GiGPO vs GRPO"). Sampling is seeded
(``SAMPLE_SEED``), so a rerun on the same CPU type and thread count gives the same table.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

RECIPE = "recipes/alfworld/long/gigpo.toml"
POLICIES = {
    "the clone (start)": "runs/long-avx2/sft",
    "GiGPO seed 0, iteration 12": "runs/long-avx2/checkpoints/iter_000012",
    "GRPO seed 0, iteration 12": "runs/cmp-long-grpo/grpo-seed0/checkpoints/iter_000012",
}
ITERATIONS = (1, 2)
SAMPLE_SEED = 0


def group_stats(batch, gigpo_cfg, grpo_cfg) -> dict[str, float]:
    """Step-group and zero-advantage counts of one rollout's rows."""
    from algos.algorithms import advantages
    from algos.gigpo import build_step_groups

    step = build_step_groups(batch.anchor_obs, batch.index).tolist()
    size = Counter(step)
    episodes: dict[int, set] = {}
    for g, traj in zip(step, batch.traj_uid.tolist()):
        episodes.setdefault(g, set()).add(traj)
    sizes = np.array([size[g] for g in step])
    out = {
        "rows": float(len(step)),
        "shared": float((sizes >= 2).sum()),
        "across": float(sum(len(episodes[g]) >= 2 for g in step)),
        "size_sum": float(sizes.sum()),
    }
    for name, algo in (("zero_gigpo", gigpo_cfg), ("zero_grpo", grpo_cfg)):
        adv, _ = advantages(batch, algo)
        row = (adv * batch.response_mask).abs().sum(dim=1)
        out[name] = float((row == 0).sum())
    return out


def main() -> None:
    """Print one table row per policy."""
    from algos.backends import make_backend
    from algos.config import load_config
    from algos.envs import make_envs
    from algos.policy import build_models
    from algos.trainer import iteration_rollout

    grpo_cfg = load_config(RECIPE, ["algo=grpo"]).algo
    print("| policy | step rows | rows sharing their state | ... with another episode | "
          "mean step-group size of a row | zero advantage: GiGPO | zero advantage: GRPO | "
          "episodes won |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|")
    for label, init in POLICIES.items():
        cfg = load_config(
            RECIPE, [f"model.init='{init}'", "algo.kl_coef=0.0", "run.progress=false"]
        )
        models = build_models(cfg)
        backend = make_backend("hf", models.model, models.tokenizer, seed=SAMPLE_SEED,
                               max_batch_size=cfg.rollout.max_batch_size)  # fmt: skip
        venv = make_envs(cfg, cfg.env.num_tasks * cfg.env.group_size)
        total: Counter = Counter()
        won = episodes = 0
        try:
            for it in ITERATIONS:
                ro = iteration_rollout(cfg, venv, backend, it)
                total.update(group_stats(ro.batch, cfg.algo, grpo_cfg))
                won += sum(bool(e.won) for e in ro.episodes)
                episodes += len(ro.episodes)
        finally:
            venv.close()
        n = total["rows"]
        print(f"| {label} | {n:.0f} | {total['shared'] / n:.1%} | {total['across'] / n:.1%} | "
              f"{total['size_sum'] / n:.2f} | "
              f"{total['zero_gigpo'] / n:.1%} | {total['zero_grpo'] / n:.1%} | "
              f"{won}/{episodes} |", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
