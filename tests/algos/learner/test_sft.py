"""``algos sft``: demonstrations as the rollout renders them; cloning lowers the held-out NLL
and raises the test env's success; SFT -> RL drops into ``algos train``."""

from __future__ import annotations

import json
import sys

import pytest
from conftest import KEYPAD

from agent_gym.core import ToolSpec
from agent_gym.wrappers.action_formats import parse_calls
from algos.config import load_config
from algos.demos import check_split, demo_key, load_or_make_demos, render_action
from algos.eval import evaluate, open_policy
from algos.metrics import read_metrics
from algos.models import load_tokenizer
from algos.sft import sft

SFT = [*KEYPAD, "env.kwargs={distinct_tasks=true}", "sft.demos=24", "sft.val_demos=8",
       "sft.epochs=4", "sft.lr=3e-3", "sft.mini_batch_size=8", "run.eval_episodes=16"]  # fmt: skip


@pytest.mark.parametrize("command", ["go to desk 1", "search[red shoes]", "a\nb"])
def test_rendered_actions_parse_back_to_the_command(command):
    tools = [ToolSpec("search", "s", {"query": "q"}, "search[{query}]"),
             ToolSpec("env_step", "e", {"command": "c"}, "{command}")]  # fmt: skip
    for fmt in ("plain", "tag", "tool_call"):
        text = render_action(command, fmt, tools)
        calls = parse_calls(text, fmt, tools=tools) if fmt != "plain" else text.splitlines()
        assert "\n".join(calls) == command, (fmt, text)


def test_demonstrations_are_the_rollouts_prompts_and_never_the_heldout_split(tmp_path):
    cfg = load_config(None, SFT)
    tok = load_tokenizer("tiny-random")
    demos = load_or_make_demos(cfg, tok, 3, seed=1, log=lambda *_: None, progress=False)
    again = load_or_make_demos(cfg, tok, 3, seed=1, log=lambda *_: None, progress=False)
    assert [d.prompt_ids for d in demos] == [d.prompt_ids for d in again]  # cached, identical
    assert all(d.response_ids[-1] == tok.eos_token_id and d.text == "k" for d in demos)
    assert {d.step for d in demos} == {0, 1, 2} and all(d.won for d in demos)
    bad = load_config(None, [*SFT, "env.kwargs={split='test'}", "env.eval_kwargs={split='test'}"])
    with pytest.raises(ValueError, match="also the evaluation split"):
        check_split(bad)


def _damaged(line: str, how: str) -> str:
    record = json.loads(line)
    changes = {"prompt_ids": "abc", "won": 1, "step": True, "x": 0, "response_ids": [],
               "episode": None}  # fmt: skip
    if how == "token":
        record["prompt_ids"][0] = -1
    elif how in changes:
        record[how] = changes[how]
    elif how == "missing":
        del record["text"]
    else:
        return how  # the line itself
    return json.dumps(record)


@pytest.mark.parametrize("how", ['{"episode": 0, "st', "[1, 2]", "null", "prompt_ids", "won",
                                 "step", "x", "response_ids", "episode", "token", "missing"])  # fmt: skip
def test_a_damaged_demonstration_cache_is_named_and_played_again(how, tmp_path, monkeypatch):
    from algos.demos import read_demos

    monkeypatch.setenv("AGENT_GYM_HOME", str(tmp_path))
    cfg, tok = load_config(None, SFT), load_tokenizer("tiny-random")
    demos = load_or_make_demos(cfg, tok, 3, seed=1, log=lambda *_: None, progress=False)
    (path,) = (tmp_path / "demos").glob("*.jsonl")
    lines = path.read_text().splitlines()
    lines[1] = _damaged(lines[1], how)
    path.write_text("\n".join(lines) + "\n")
    with pytest.warns(UserWarning, match=rf"{path.name}, line 2: not a demonstration record"):
        again = load_or_make_demos(cfg, tok, 3, seed=1, log=lambda *_: None, progress=False)
    assert again == demos
    assert read_demos(path) == demos  # rewritten


def test_demonstrations_that_cannot_be_cached_are_still_used(tmp_path, monkeypatch):
    def full_disk(path, text):
        raise OSError(28, "No space left on device")

    monkeypatch.setenv("AGENT_GYM_HOME", str(tmp_path))
    monkeypatch.setattr("agent_gym.paths.atomic_write_text", full_disk)
    said = []
    cfg, tok = load_config(None, SFT), load_tokenizer("tiny-random")
    demos = load_or_make_demos(cfg, tok, 3, seed=1, log=said.append, progress=False)
    assert demos and "not cached" in said[-1] and "No space left" in said[-1]
    assert not list((tmp_path / "demos").iterdir())


def test_an_env_without_the_named_expert_is_one_clear_error():
    cfg = load_config(None, [*SFT, "sft.expert='search_expert_action'"])  # ALFWorld's, not Keypad's
    with pytest.raises(ValueError, match="sft.expert='search_expert_action'"):
        load_or_make_demos(cfg, load_tokenizer("tiny-random"), 3, seed=1, progress=False)


@pytest.mark.parametrize("command", ["sft", "train"])
def test_a_wrong_expert_or_starting_run_is_refused_before_the_model_loads(
    command, tmp_path, monkeypatch
):
    import algos.policy
    from algos.trainer import train

    def no_model(*_):
        raise AssertionError("the model was loaded before the input was checked")

    monkeypatch.setattr(algos.policy, "build_models", no_model)
    start = sft if command == "sft" else train
    pipeline = ["model.init=sft"] if command == "train" else []  # train's SFT stage
    out = [*SFT, f"run.out_dir='{tmp_path}'"]
    with pytest.raises(ValueError, match="has no scripted expert 'nope' .it has: expert_action"):
        start(load_config(None, [*out, *pipeline, "sft.expert='expert_action,nope'"]))
    with pytest.raises(FileNotFoundError, match="/x': no complete checkpoint there"):
        start(load_config(None, [*out, f"model.init='{tmp_path}/x'"]))
    assert not list(tmp_path.iterdir())  # and no run directory was made


def test_editing_a_prompt_template_invalidates_the_cached_demonstrations(monkeypatch):
    from agent_gym.core import PromptTemplates
    from agent_gym.wrappers import chat_prompt

    for prompt, owner, attr in [("compact", chat_prompt, "COMPACT_PROMPTS"),
                                ("env", None, "prompt_templates")]:  # fmt: skip
        cfg = load_config(None, [*SFT, f"env.prompt='{prompt}'"])
        if owner is None:
            from keypad_env import KeypadEnv as owner  # the env's own templates
        before = demo_key(cfg, "tiny-random", 3, 1)
        monkeypatch.setattr(owner, attr, PromptTemplates("edited", "{{ task }}"), raising=False)
        assert demo_key(cfg, "tiny-random", 3, 1) != before, prompt


def test_editing_the_choices_function_invalidates_the_cached_demonstrations(tmp_path, monkeypatch):
    module = tmp_path / "my_choices.py"
    module.write_text("def offered(info):\n    return ['1']\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    cfg = load_config(None, [*SFT, "env.action_match='number'", "env.choices='my_choices:offered'"])
    before = demo_key(cfg, "tiny-random", 3, 1)
    module.write_text("def offered(info):\n    return ['2']\n")
    sys.modules.pop("my_choices", None)
    assert demo_key(cfg, "tiny-random", 3, 1) != before


def test_cloning_lowers_heldout_nll_and_raises_success(tmp_path):
    cfg = load_config(None, [*SFT, f"run.out_dir='{tmp_path}'", "run.name='sft'"])
    before = evaluate(cfg, open_policy("hf:tiny-random", cfg), 16)
    run = sft(cfg, log=lambda *_: None)
    summary = json.loads((run / "sft.json").read_text())
    assert summary["val_steps"] > 0 and summary["finished"]
    assert summary["val_nll_after"] < 0.5 * summary["val_nll_before"], summary
    metrics = read_metrics(run)
    assert [r["iteration"] for r in metrics] == [1, 2, 3, 4]
    assert summary["val_nll_after"] == metrics[-1]["sft/val_nll"]  # the last epoch's, not rerun
    after = evaluate(cfg, open_policy(f"run:{run}", cfg), 16)
    assert before["success_rate"] < 0.3 and after["success_rate"] > 0.8, (before, after)


def test_rl_starts_from_the_cloned_policy(tmp_path):
    from algos.trainer import train

    cfg = load_config(None, [*SFT, "model.init=sft", "run.iterations=1", "algo=grpo",
                             f"run.out_dir='{tmp_path}'", "run.name='pipe'"])  # fmt: skip
    run = train(cfg, log=lambda *_: None)
    evals = json.loads((run / "eval.json").read_text())
    assert (run / "sft" / "sft.json").is_file()
    assert evals["before"]["success_rate"] > 0.8  # RL's starting point is the cloned policy
    assert set(evals) >= {"random", "before", "after"}
    # `algos eval --policy run:DIR` of the pipeline's run: clone, then the RL weights on top
    again = evaluate(cfg, open_policy(f"run:{run}", cfg), 16)
    assert again["success_rate"] == evals["after"]["success_rate"]


def test_numbered_choices_are_demonstrated_as_the_number_of_the_experts_command():
    """With env.action_match = "number" the demonstrations answer with numbers, and those
    numbers play the expert's games to a win through the rollout's own wrappers."""
    from algos.demos import make_demos

    prompts = "agent_gym.envs.alfworld.prompts"
    cfg = load_config("recipes/alfworld/gigpo.toml", [
        "model=tiny-random", "sft.noise=0.0", f"env.prompt='{prompts}:CHOICE_PROMPTS'",
        "env.action_match='number'", f"env.choices='{prompts}:focused_choices'",
        "rollout.max_prompt_tokens=4096"])  # fmt: skip
    demos = make_demos(cfg, load_tokenizer("tiny-random"), 3, seed=3, progress=False)
    assert demos and all(d.text.isdigit() for d in demos)
    assert all(d.won for d in demos) and len({d.episode for d in demos}) == 3


def test_several_demonstrators_take_turns_by_episode():
    """``sft.expert = "a,b"``: a plays episodes 0, 2, ..., b episodes 1, 3, ...; each episode
    is the one that demonstrator alone would have played from the same task draw."""
    from algos.demos import make_demos

    tok = load_tokenizer("tiny-random")

    def texts(expert: str) -> list[list[str]]:
        cfg = load_config("recipes/alfworld/gigpo.toml", [
            "model=tiny-random", "sft.noise=0.0", f"sft.expert='{expert}'"])  # fmt: skip
        demos = make_demos(cfg, tok, 4, seed=3, progress=False)
        return [[d.text for d in demos if d.episode == ep] for ep in range(4)]

    listed, shuffled = texts("search_expert_action"), texts("shuffled_search_expert_action")
    both = texts("search_expert_action, shuffled_search_expert_action")
    assert both == [listed[0], shuffled[1], listed[2], shuffled[3]]
    assert listed[1] != shuffled[1] or listed[3] != shuffled[3]  # the turns are visible
    with pytest.raises(ValueError, match="no scripted expert 'nope'"):
        texts("search_expert_action,nope")


def test_a_cloning_run_and_a_training_run_are_not_resumed_as_each_other(tmp_path):
    """`algos train --resume SFT_RUN` trained RL inside the clone's folder (its epoch checkpoints
    read as iterations, then replaced); `algos sft --resume RL_RUN` would clone into an RL run."""
    from algos.sft import resume_sft
    from algos.trainer import resume, train

    out = f"run.out_dir='{tmp_path}'"
    clone = sft(load_config(None, [*SFT, out, "run.name='clone'", "sft.demos=4", "sft.epochs=1",
                                   "sft.val_demos=0"]), log=lambda *_: None)  # fmt: skip
    assert json.loads((clone / "sft.json").read_text())["finished"]
    assert (clone / "plots" / "curves.png").is_file()  # the NLL per epoch
    rl = train(load_config(None, [*KEYPAD, out, "run.name='rl'", "run.iterations=1",
                                  "run.eval_episodes=0"]), log=lambda *_: None)  # fmt: skip
    kept = sorted(p.name for p in clone.rglob("*"))
    with pytest.raises(ValueError, match=f"{clone} is a behaviour-cloning run .* `algos sft "):
        resume(clone, log=lambda *_: None)
    (clone / "sft.json").unlink()  # a clone from before the mark: its metrics tell
    with pytest.raises(ValueError, match="is a behaviour-cloning run"):
        resume(clone, log=lambda *_: None)
    assert sorted(p.name for p in clone.rglob("*")) == [k for k in kept if k != "sft.json"]
    with pytest.raises(ValueError, match=f"{rl} is a training run .* `algos train --resume"):
        resume_sft(rl, log=lambda *_: None)
