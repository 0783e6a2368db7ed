"""Every recipe: the published settings it claims, its profiles, and one CPU-profile iteration.

The fast tests run one training iteration of every recipe's CPU profile with ``tiny-random``
(a 0.1M-parameter model) and episodes cut to two steps, in-process. The slow ones run two
recipes' CPU profiles with the real ``smollm2-135m`` for one iteration.
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import pytest
import torch

from algos.config import load_config
from algos.trainer import train

ROOT = Path(__file__).resolve().parents[1]
ENVS = {
    "alfworld": "AgentR1/ALFWorld-v0",
    "webshop": "AgentR1/WebShop-v0",
    "hotpotqa": "AgentR1/HotpotQA-v0",
    "paper_search": "AgentR1/PaperSearch-v0",
}
ALGOS = ("steppo", "ppo", "grpo", "rloo", "reinforce_pp", "gigpo", "gspo")
RECIPES = [ROOT / "recipes" / env / f"{algo}.toml" for env in ENVS for algo in ALGOS]
IDS = [f"{p.parent.name}/{p.stem}" for p in RECIPES]

#: What keeps one iteration of a CPU profile to a few seconds: a tiny model, 1 task, 2 steps.
#: tiny-random's tokenizer is byte-level (a token per byte, ~4x SmolLM2's count), hence the
#: larger prompt budget.
QUICK = [
    "model=tiny-random",
    "rollout.max_prompt_tokens=16384",
    "model.trainable_layers=0",
    "env.num_tasks=1",
    "rollout.max_new_tokens=8",
    "env.max_steps=2",
    "run.iterations=1",
    "run.eval_episodes=0",
    "run.log_episodes=1",
    "run.progress=false",
    "run.loggers=[]",
]

#: Shorter HotpotQA observations: tiny-random reads bytes, and 6,000 characters of passages
#: are most of the test's time.
QUICK_ENV_KWARGS = {"hotpotqa": {"passage_chars": 120, "passages_budget": 360}}

torch.set_num_threads(1)


def test_every_env_and_algorithm_has_a_recipe():
    missing = [str(p.relative_to(ROOT)) for p in RECIPES if not p.is_file()]
    assert not missing


@pytest.mark.parametrize("path", RECIPES, ids=IDS)
def test_recipe_names_its_source_and_has_both_profiles(path):
    text = path.read_text()
    assert "Source:" in text
    # The default data is generated, and the recipe's env file (which it extends) says so.
    assert 'extends = "_env.toml"' in text or 'extends = ["_env.toml"' in text
    assert "GENERATED" in (path.parent / "_env.toml").read_text()
    cpu, gpu = load_config(path), load_config(path, ["profile=gpu"])
    assert cpu.profile == "cpu" and gpu.profile == "gpu"
    assert cpu.env.id == gpu.env.id == ENVS[path.parent.name]
    assert cpu.algo.name == gpu.algo.name == path.stem
    assert cpu.model.name == "smollm2-135m"
    assert gpu.model.name == "Qwen/Qwen2.5-1.5B-Instruct" and gpu.model.dtype == "bfloat16"


def test_the_longer_alfworld_run_is_the_main_job_with_more_iterations():
    """recipes/alfworld/long/gigpo.toml is the run of docs/results.md ("a longer RL stage"):
    the main job's CPU profile with 12 iterations at lr 1e-5, and nothing else; its GPU
    profile is the main recipe's."""
    main, long = ROOT / "recipes/alfworld/gigpo.toml", ROOT / "recipes/alfworld/long/gigpo.toml"
    changes = {
        ("optim", "lr"): 1e-5,
        ("run", "iterations"): 12,
        ("run", "save_every"): 4,  # checkpoints only
    }
    a, b = dataclasses.asdict(load_config(main)), dataclasses.asdict(load_config(long))
    differ = {
        (section, key): b[section][key]
        for section in a
        if isinstance(a[section], dict)
        for key in a[section]
        if a[section][key] != b[section][key]
    }
    assert differ == changes
    assert load_config(main, ["profile=gpu"]) == load_config(long, ["profile=gpu"])


@pytest.mark.parametrize(
    "path", [p for p in RECIPES if p.parent.name in ("alfworld", "webshop")], ids=str
)
def test_gigpo_paper_settings(path):
    """GiGPO paper Sec. 5.1 / App. E, as listed in issue 9 (gpu profile = base + model)."""
    cfg = load_config(path, ["profile=gpu"])
    e, a, o = cfg.env, cfg.algo, cfg.optim
    critic = path.stem in ("ppo", "steppo")
    assert (e.num_tasks, e.group_size) == ((128, 1) if critic else (16, 8))
    assert e.history_length == 2
    assert (e.reward_scale, e.success_bonus, e.invalid_penalty) == (0.0, 10.0, 0.1)
    assert e.max_steps == (50 if path.parent.name == "alfworld" else 15)
    assert o.lr == 1e-6 and (not critic or o.critic_lr == 1e-5)
    assert (a.kl_coef, a.kl_type) == (0.01, "low_var_kl")
    if path.stem == "gigpo":
        assert a.gamma == 0.95 and a.step_advantage_w == 1.0


@pytest.mark.parametrize(
    "path", [p for p in RECIPES if p.parent.name in ("hotpotqa", "paper_search")], ids=str
)
def test_agent_r1_settings(path):
    """Agent-R1's HotpotQA / Paper Search recipes (docs/recipes.md, Agent-R1)."""
    cfg = load_config(path, ["profile=gpu"])
    e, r, a = cfg.env, cfg.rollout, cfg.algo
    hotpot = path.parent.name == "hotpotqa"
    assert e.action_format == "tool_call" and e.max_steps == 5
    assert (e.reward_scale, e.success_bonus, e.invalid_penalty) == (1.0, 0.0, 0.0)
    assert r.max_prompt_tokens == 10240
    assert r.max_new_tokens == (1024 if hotpot else 4096)
    assert a.kl_coef == (0.0 if hotpot else 0.001)
    if path.stem not in ("ppo", "steppo"):
        assert (e.num_tasks, e.group_size) == ((32, 8) if hotpot else (16, 8))
    if hotpot:
        assert a.gamma == 0.99
    else:
        assert e.kwargs == {"search_cost": 0.0, "expand_cost": 0.0}


@pytest.mark.parametrize("path", RECIPES, ids=IDS)
def test_cpu_profile_trains_one_iteration(path, tmp_path):
    cfg = load_config(path, [*QUICK, f"run.out_dir='{tmp_path}'", "run.name='run'"])
    cfg.env.kwargs.update(QUICK_ENV_KWARGS.get(path.parent.name, {}))
    run_dir = train(cfg, log=lambda line: None)
    lines = (run_dir / "metrics.jsonl").read_text().splitlines()
    assert len(lines) == 1
    metrics = json.loads(lines[0])
    assert metrics["rollout/step_rows"] > 0
    assert all(math.isfinite(v) for v in metrics.values() if isinstance(v, float))
    assert json.loads((run_dir / "config.json").read_text())["algo"]["name"] == path.stem


@pytest.mark.slow
@pytest.mark.parametrize("recipe", ["alfworld/grpo", "hotpotqa/gigpo"])
def test_cpu_profile_with_smollm2(recipe, tmp_path):
    """The CPU profile as shipped (SmolLM2-135M), one iteration without evaluation.

    ALFWorld's profile is the clone-then-RL pipeline: a 4-demo cloning stage here (the shipped
    64 demos and 4 x 8 envs take about 12 minutes quiet).
    """
    sets = ["run.iterations=1", "run.eval_episodes=0", "run.progress=false", "sft.demos=4",
            "sft.val_demos=2", "sft.epochs=1", "env.num_tasks=1", "env.max_steps=4"]  # fmt: skip
    cfg = load_config(
        ROOT / "recipes" / f"{recipe}.toml", [*sets, f"run.out_dir='{tmp_path}'", "run.name='r'"]
    )
    assert cfg.model.name == "smollm2-135m"
    run_dir = train(cfg, log=lambda line: None)
    metrics = json.loads((run_dir / "metrics.jsonl").read_text().splitlines()[0])
    assert metrics["rollout/step_rows"] > 0
    assert math.isfinite(metrics["actor/pg_loss"])
    if cfg.model.init == "sft":
        assert json.loads((run_dir / "sft" / "sft.json").read_text())["finished"]
