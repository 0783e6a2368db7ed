"""Recipe profiles and the env wrappers the config builds (reward shaping, matching, prompt)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from conftest import KEYPAD

from algos.config import config_from_dict, dumps, load_config
from algos.envs import check_envs
from algos.trainer import make_envs

RECIPE = Path(__file__).resolve().parents[3] / "recipes/alfworld/gigpo.toml"


def test_alfworld_recipe_profiles():
    base = load_config(RECIPE, ["profile="])  # no profile: the paper's settings as written
    assert (base.env.num_tasks, base.env.group_size, base.env.max_steps) == (16, 8, 50)
    assert (base.env.reward_scale, base.env.success_bonus, base.env.invalid_penalty) == (
        0.0,
        10.0,
        0.1,
    )
    assert (base.algo.gamma, base.optim.lr, base.algo.kl_coef) == (0.95, 1e-6, 0.01)
    cpu = load_config(RECIPE)  # default_profile = "cpu"
    assert cpu.profile == "cpu" and cpu.model.name == "smollm2-135m"
    assert cpu.env.action_match == "number" and cpu.env.reward_scale == 0.0
    # The main job: clone the searcher that looks into one place of each kind first, then two
    # iterations of GiGPO w/ std on 8 x 8 episodes at lr 2e-5; one number per kind of place,
    # 20 steps; 64 held-out games.
    assert cpu.model.init == "sft" and cpu.sft.expert == "typed_search_expert_action"
    assert cpu.algo.gigpo_mode == "mean_std_norm"
    assert (cpu.env.max_steps, cpu.run.eval_episodes, cpu.run.threads) == (20, 64, 2)
    assert (cpu.env.num_tasks, cpu.env.group_size, cpu.run.iterations) == (8, 8, 2)
    assert cpu.optim.lr == 2e-5
    assert cpu.env.prompt.endswith(":KIND_CHOICE_PROMPTS") and "random" in cpu.run.eval_baselines
    assert cpu.env.choices.endswith(":kind_choices")
    gpu = load_config(RECIPE, ["profile=gpu", "run.iterations=3"])
    assert gpu.model.name == "Qwen/Qwen2.5-1.5B-Instruct" and gpu.model.dtype == "bfloat16"
    assert gpu.env.num_tasks == 16 and gpu.run.iterations == 3
    with pytest.raises(ValueError, match="unknown profile 'tpu'; this recipe has: gpu, cpu"):
        load_config(RECIPE, ["profile=tpu"])


def test_shaping_pays_exactly_the_configured_rewards():
    """GiGPO's setting: 10 on the winning step (the raw 1 dropped), -0.1 per invalid action."""
    cfg = load_config(
        None,
        [*KEYPAD, "env.reward_scale=0.0", "env.success_bonus=10.0", "env.invalid_penalty=0.1"],
    )
    venv = make_envs(cfg, 1)
    env = venv.envs[0]
    try:
        env.reset(seed=0)
        rewards = [env.step(a)[1] for a in ("k", "\x01", "k", "k")]
    finally:
        venv.close()
    assert rewards == [0.0, -0.1, 0.0, 10.0]
    # The default reward_scale=1 keeps the raw reward: a win pays 1 + bonus.
    cfg = load_config(None, [*KEYPAD, "env.success_bonus=10.0"])
    venv = make_envs(cfg, 1)
    try:
        venv.envs[0].reset(seed=0)
        assert [venv.envs[0].step("k")[1] for _ in range(3)] == [0.0, 0.0, 11.0]
    finally:
        venv.close()


def test_env_prompt_and_matching_reach_the_wrappers():
    cfg = load_config(None, [*KEYPAD, "env.prompt=compact", "env.action_match=admissible"])
    venv = make_envs(cfg, 1)
    try:
        messages, _ = venv.envs[0].reset(seed=0)
        assert messages[1]["content"].endswith("Copy the one command that best advances the task:")
        assert venv.envs[0].get_wrapper_attr("match") == "admissible"
    finally:
        venv.close()
    with pytest.raises(ValueError, match="env.prompt = 'short': use 'env', 'compact'"):
        load_config(None, [*KEYPAD, "env.prompt=short"])


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        (
            "env.prompt='os:path'",
            "env.prompt='os:path' is a module, not prompt templates",
        ),
        ("env.choices='os:getcwd'", "env.choices='os:getcwd' is not a function of the env's info"),
        ("env.choices='builtins:len'", "choices='len' must return the commands on offer, a list"),
    ],
)
def test_a_prompt_or_choices_setting_of_the_wrong_kind_is_one_line(setting, message):
    """They were TypeError tracebacks: a deepcopy of a module, a call with the wrong arguments,
    list() of what the function gave."""
    cfg = load_config(None, [*KEYPAD, "env.action_match=number", setting])
    with pytest.raises(ValueError, match=re.escape(message)):
        check_envs(cfg)


@pytest.mark.parametrize(
    ("override", "message"),
    [
        (
            "algo.gigpo_mode=mean",
            "algo.gigpo_mode = 'mean' is not one of 'mean_norm', 'mean_std_norm'",
        ),
        ("algo.loss_agg=sum", "algo.loss_agg = 'sum' is not one of 'token-mean'"),
        ("algo.kl_type=full", "algo.kl_type = 'full' is not one of"),
        ("env.vector_mode=threads", "env.vector_mode = 'threads' is not one of 'sync'"),
        ("rollout.backend=sglang", "rollout.backend = 'sglang' is not one of 'hf', 'vllm'"),
        ("env.action_format=json", "env.action_format = 'json' is not one of"),
        ("env.action_match=fuzzy", "env.action_match = 'fuzzy' is not one of"),
        ("algo=ppo2", "algo.name = 'ppo2': unknown algorithm; valid: steppo, ppo"),
        ("algo.estimator=remax", "algo.estimator = 'remax': unknown advantage estimator"),
        ("algo.policy_loss=sapo", "algo.policy_loss = 'sapo': unknown policy loss"),
        ("optim.mini_batch_size=-1", "optim.mini_batch_size = -1 must be >= 0"),
        ("rollout.temperature=-1", "rollout.temperature = -1.0 must be > 0"),
        ("run.iterations=-3", "run.iterations = -3 must be >= 0"),
        # Seeds: gym refuses negative reset seeds, numpy 2**32 and more; found when the
        # model had loaded (run.seed) or at the first reset after cloning (env.seed), before.
        ("run.seed=-1", "run.seed = -1 must be >= 0"),
        ("run.seed=4294967296", "run.seed = 4294967296 must be <= 4294967295"),
        ("env.seed=-5", "env.seed = -5 must be >= 0"),
        ("env.eval_seed=-1", "env.eval_seed = -1 must be >= 0"),
        ("sft.seed=-7", "sft.seed = -7 must be >= 0"),
        ("algo.clip_c=1", "algo.clip_c = 1.0 must be > 1"),
        ("model.device=gpu0", "model.device = 'gpu0': use auto, cpu, cuda, cuda:N or mps"),
        ("run.loggers=['mlflow']", "unknown logger 'mlflow'; valid: tensorboard, wandb"),
        ("optim.lr=nan", "optim.lr = nan: give a finite number"),
        ("model.name=''", "model.name = '': name one"),
        ("env.id=' '", "env.id = ' ': name one"),
        ("rollout.top_p=nan", "rollout.top_p = nan: give a finite number"),
        ("optim.max_grad_norm=inf", "optim.max_grad_norm = inf: give a finite number"),
        ("algo.loss_agg='token-mean' algo=gspo", None),
    ],
)
def test_bad_values_are_refused_when_the_config_loads(override, message):
    if message is None:  # GSPO is defined with seq-mean-token-mean only
        with pytest.raises(ValueError, match="the 'gspo' policy loss aggregates with seq-mean"):
            load_config(RECIPE, ["algo=gspo", "algo.loss_agg=token-mean"])
        return
    with pytest.raises(ValueError, match=re.escape(message)):
        load_config(RECIPE, [override])


def test_algorithm_defaults_apply_unless_overridden():
    """--set algo=gspo trains with GSPO's clip range, not the recipe's PPO 0.2."""
    cfg = load_config(RECIPE, ["algo=gspo"])
    assert (cfg.algo.clip_low, cfg.algo.clip_high) == (3e-4, 4e-4)
    assert cfg.algo.loss_agg == "seq-mean-token-mean"
    cfg = load_config(RECIPE, ["algo=gspo", "algo.clip_high=1e-3"])  # a later --set still wins
    assert (cfg.algo.clip_low, cfg.algo.clip_high) == (3e-4, 1e-3)
    cfg = load_config(RECIPE, ["algo.clip_high=1e-3", "algo=gspo"])  # an earlier one does not
    assert cfg.algo.clip_high == 4e-4
    assert load_config(RECIPE, ["algo=grpo"]).algo.clip_low == 0.2  # the recipe's own value


def test_a_recipe_folder_is_named_with_the_recipes_in_it():
    """`algos train recipes/alfworld` said the recipe was "not found"."""
    with pytest.raises(FileNotFoundError, match=r"alfworld is a folder; give a recipe file in "
                       r"it \(gigpo.toml, grpo.toml, "):  # fmt: skip
        load_config(RECIPE.parent)
    with pytest.raises(FileNotFoundError, match=r"recipes live in recipes/<env>/"):
        load_config(RECIPE.parents[1])


def test_recipes_extend_shared_files(tmp_path):
    (tmp_path / "shared.toml").write_text("[optim]\nlr = 0.5\n[profiles.cpu.run]\niterations = 3\n")
    (tmp_path / "r.toml").write_text('extends = "shared.toml"\n[optim]\nmicro_batch_size = 2\n')
    cfg = load_config(tmp_path / "r.toml", ["profile=cpu"])
    assert (cfg.optim.lr, cfg.optim.micro_batch_size, cfg.run.iterations) == (0.5, 2, 3)
    (tmp_path / "a.toml").write_text('extends = "b.toml"\n')
    (tmp_path / "b.toml").write_text('extends = "a.toml"\n')
    with pytest.raises(ValueError, match="'extends' loops"):
        load_config(tmp_path / "a.toml")
    (tmp_path / "bad.toml").write_text("[optim\n")
    with pytest.raises(ValueError, match=r"bad.toml: not valid TOML"):
        load_config(tmp_path / "bad.toml")


def test_a_recipe_chooses_its_profile_with_default_profile_only(tmp_path):
    """`profile = "cpu"` in a recipe was taken as a record and chose nothing: the run trained
    without the profile's tables and its config.json said it had applied them."""
    (tmp_path / "r.toml").write_text('profile = "cpu"\n[profiles.cpu.run]\niterations = 3\n')
    with pytest.raises(ValueError, match="profile = 'cpu' chooses nothing in a recipe; write "
                       "default_profile = 'cpu'"):  # fmt: skip
        load_config(tmp_path / "r.toml")
    (tmp_path / "r.toml").write_text(
        'default_profile = "cpu"\n[profiles.cpu.run]\niterations = 3\n'
    )
    cfg = load_config(tmp_path / "r.toml")
    assert (cfg.profile, cfg.run.iterations) == ("cpu", 3)
    assert config_from_dict(json.loads(dumps(cfg))).profile == "cpu"  # a run's record loads


def test_run_threads_fixes_torch_cpu_threads():
    """A CPU run's figures depend on the thread count; run.threads pins it (0 leaves it)."""
    import torch

    from algos.runs import seed_everything

    before = torch.get_num_threads()
    try:
        seed_everything(0, threads=1)
        assert torch.get_num_threads() == 1
        seed_everything(0)
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)
    with pytest.raises(ValueError, match="run.threads"):
        load_config(None, ["run.threads=-1"])


def test_the_largest_run_seed_seeds_every_rank():
    """Rank r samples with run.seed + r * RANK_SEED_STRIDE, which may pass numpy's 32 bits."""
    import numpy as np

    from algos.distributed import World
    from algos.runs import seed_everything

    cfg = load_config(None, [f"run.seed={2**32 - 1}"])
    for rank in (0, 3):
        seed_everything(World(rank=rank, size=4).seed(cfg.run.seed))
        first = np.random.random()
        seed_everything(World(rank=rank, size=4).seed(cfg.run.seed))
        assert np.random.random() == first
