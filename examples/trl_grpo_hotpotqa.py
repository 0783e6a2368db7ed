"""Train an LLM agent with TRL's ``GRPOTrainer`` on an agent-gym env (HotpotQA by default).

TRL's GRPO samples ``num_generations`` completions per prompt and normalises their rewards
within the group. Here one completion is one whole *episode*: a ``rollout_func`` plays the env
turn by turn with the trainer's own model, as one growing conversation::

    [system, user: task + first observation]  assistant: response 1
    user: observation 1                         assistant: response 2   ...

The model's tokens are trained (``env_mask`` 1), the env's tokens are not (``env_mask`` 0),
and the episode's return is the reward. The env runs in this process or, with ``--url``,
behind ``agent-gym serve-env`` (any machine; one OpenEnv session per episode)::

    python examples/trl_grpo_hotpotqa.py --model smollm2-135m --max-steps 20
    agent-gym serve-env hotpotqa --port 8000 &
    python examples/trl_grpo_hotpotqa.py --url http://127.0.0.1:8000 --max-steps 20

The members of a GRPO group share a task: the dataset holds one prompt per seed, and the
rollout resets the env with the seed that rendered that prompt. Install with
``pip install "agent-gym[train,trl]"`` (``bash scripts/install.sh`` does).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from typing import Any

import gymnasium as gym

import agent_gym
from agent_gym.registration import resolve_env_id
from agent_gym.wrappers import ChatPrompt, ParseAction, RecordEpisodes, ShapeReward
from agent_gym.wrappers.action_formats import admissible_actions


def build_env(args: argparse.Namespace) -> gym.Env:
    """``ShapeReward(ParseAction(env))``, the env in process or behind ``--url``."""
    if args.url:
        env = gym.make(agent_gym.OPENENV_ID, url=args.url)
    else:
        env = gym.make(resolve_env_id(args.env))
    env = ParseAction(env, format=args.format, match=args.match, max_episode_steps=args.max_turns)
    env = ShapeReward(env, success_bonus=args.success_bonus, invalid_penalty=args.invalid_penalty)
    return RecordEpisodes(env, args.episodes_jsonl) if args.episodes_jsonl else env


def first_prompt(env: gym.Env, seed: int) -> list[dict[str, str]]:
    """The chat messages of the episode with ``seed``: the env's own prompt (ChatPrompt)."""
    messages, _ = ChatPrompt(env, history_length=0).reset(seed=seed)
    return messages


def follow_up(observation: str, info: dict[str, Any]) -> str:
    """The user turn after a step: the new observation and, if listed, the admissible commands."""
    commands = admissible_actions(info)
    if commands:
        return f"{observation}\n\nAdmissible actions: " + " | ".join(commands)
    return observation


def _ids(tokenizer: Any, messages: list[dict[str, str]], **kwargs: Any) -> list[int]:
    return list(tokenizer.apply_chat_template(messages, tokenize=True, return_dict=False, **kwargs))


def user_turn_ids(tokenizer: Any, text: str) -> list[int]:
    """Tokens that close an assistant turn's end-of-turn token and open the next one.

    Rendered from a two-message dummy conversation with and without the user turn; the
    suffix starts after the assistant's end-of-turn (eos) token, where generation stops. This
    needs a prefix-preserving chat template (ChatML, Llama 3 and most others are).
    """
    base = [{"role": "user", "content": "x"}, {"role": "assistant", "content": "y"}]
    head = _ids(tokenizer, base)
    full = _ids(tokenizer, [*base, {"role": "user", "content": text}], add_generation_prompt=True)
    if full[: len(head)] != head:
        raise ValueError("the tokenizer's chat template is not prefix-preserving")
    eos = [i for i, t in enumerate(head) if t == tokenizer.eos_token_id]
    return full[eos[-1] + 1 :] if eos else full[len(head) :]


def make_rollout_func(
    args: argparse.Namespace, seed_of: dict[str, int]
) -> Callable[[list, Any], dict[str, list]]:
    """TRL's ``rollout_func``: one episode per prompt, with the trainer's model."""
    import torch

    def sample(model: Any, tokenizer: Any, ids: list[int], budget: int, trainer: Any):
        out = model.generate(
            torch.tensor([ids], device=model.device),
            attention_mask=torch.ones(1, len(ids), dtype=torch.long, device=model.device),
            max_new_tokens=budget,
            do_sample=True,
            temperature=trainer.temperature,
            top_p=trainer.top_p,
            top_k=trainer.top_k or 0,
            pad_token_id=tokenizer.pad_token_id,
            eos_token_id=tokenizer.eos_token_id,
            output_scores=True,
            return_dict_in_generate=True,
        )
        new = out.sequences[0, len(ids) :].tolist()
        logps = [
            torch.log_softmax(score[0].float(), -1)[token].item()
            for score, token in zip(out.scores, new)
        ]
        if tokenizer.eos_token_id in new:  # keep the response up to and with its eos
            end = new.index(tokenizer.eos_token_id) + 1
            new, logps = new[:end], logps[:end]
        return new, logps

    def play(env: gym.Env, prompt: list, model: Any, tokenizer: Any, trainer: Any) -> dict:
        """One episode as one sequence: the model's tokens trained, the env's masked out."""
        _, info = env.reset(seed=seed_of[json.dumps(prompt, sort_keys=True)])
        ep = {"prompt_ids": _ids(tokenizer, prompt, add_generation_prompt=True),
              "completion_ids": [], "logprobs": [], "env_mask": [], "env_return": 0.0}  # fmt: skip

        def add(ids: list[int], logps: list[float] | None = None) -> None:
            ep["completion_ids"] += ids
            ep["logprobs"] += logps if logps is not None else [0.0] * len(ids)
            ep["env_mask"] += [1 if logps is not None else 0] * len(ids)

        done = False
        while not done:
            budget = min(
                args.max_new_tokens, args.max_completion_length - len(ep["completion_ids"])
            )
            if budget <= 0:
                break  # out of tokens: the episode ends here, with the return so far
            new, logps = sample(
                model, tokenizer, ep["prompt_ids"] + ep["completion_ids"], budget, trainer
            )
            add(new, logps)
            if not new or new[-1] != tokenizer.eos_token_id:
                add([tokenizer.eos_token_id])  # cut off by the budget: close the turn (not trained)
            obs, reward, terminated, truncated, info = env.step(
                tokenizer.decode(new, skip_special_tokens=True)
            )
            ep["env_return"] += float(reward)
            done = terminated or truncated
            if not done:
                add(user_turn_ids(tokenizer, follow_up(obs, info)))
        return ep

    def rollout_func(prompts: list, trainer: Any) -> dict[str, list]:
        model = trainer.accelerator.unwrap_model(trainer.model)
        result: dict[str, list] = {}
        for prompt in prompts:
            env = build_env(args)
            try:
                with torch.no_grad():
                    episode = play(env, prompt, model, trainer.processing_class, trainer)
            finally:
                env.close()
            for key, value in episode.items():
                result.setdefault(key, []).append(value)
        return result

    return rollout_func


def env_reward(completions: list, env_return: list[float], **kwargs: Any) -> list[float]:
    """The episode return computed by the env (passed on by ``rollout_func``)."""
    return list(env_return)


def build_trainer(args: argparse.Namespace) -> Any:
    """The ``GRPOTrainer`` for ``args`` (the model via ``algos.models.load_model``)."""
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    from algos.models import load_model

    model, tokenizer = load_model(args.model, seed=args.seed)
    env = build_env(argparse.Namespace(**{**vars(args), "episodes_jsonl": None}))
    prompts, seed_of = [], {}
    try:
        for seed in range(args.seed, args.seed + args.tasks):
            prompt = first_prompt(env, seed)
            seed_of.setdefault(json.dumps(prompt, sort_keys=True), seed)
            prompts.append(prompt)
    finally:
        env.close()
    config = GRPOConfig(
        output_dir=args.output_dir,
        max_steps=args.max_steps,
        per_device_train_batch_size=args.batch_size,
        num_generations=args.num_generations,
        max_completion_length=args.max_completion_length,
        learning_rate=args.learning_rate,
        beta=0.0,  # no reference model (as DAPO and Dr.GRPO); set --beta for TRL's KL term
        logging_steps=1,
        save_strategy="no",
        report_to=args.report_to,
        use_cpu=args.cpu,
        seed=args.seed,
        disable_tqdm=True,
    )
    if args.beta:
        config.beta = args.beta
    return GRPOTrainer(
        model=model,
        reward_funcs=[env_reward],
        args=config,
        train_dataset=Dataset.from_dict({"prompt": prompts}),
        processing_class=tokenizer,
        rollout_func=make_rollout_func(args, seed_of),
    )


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Command-line options (see ``--help``)."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--env", default="AgentR1/HotpotQA-v0", help="env id or short name (in-process)")
    p.add_argument("--url", default=None, help="an OpenEnv server (agent-gym serve-env) instead")
    p.add_argument("--model", default="smollm2-135m", help="smollm2-135m, tiny-random or a HF path")
    p.add_argument("--format", default="tag", choices=("tag", "tool_call", "plain"))
    p.add_argument("--match", default="strict", choices=("strict", "admissible"))
    p.add_argument("--success-bonus", type=float, default=0.0)
    p.add_argument("--invalid-penalty", type=float, default=0.0)
    p.add_argument("--tasks", type=int, default=16, help="distinct tasks (seeds) in the dataset")
    p.add_argument("--num-generations", type=int, default=4, help="GRPO group size")
    p.add_argument("--batch-size", type=int, default=4, help="rollouts per device and step")
    p.add_argument("--max-steps", type=int, default=10, help="optimizer steps")
    p.add_argument("--max-turns", type=int, default=None, help="turns per episode (default: env's)")
    p.add_argument("--max-new-tokens", type=int, default=96, help="tokens per turn")
    p.add_argument("--max-completion-length", type=int, default=1024, help="tokens per episode")
    p.add_argument("--learning-rate", type=float, default=1e-6)
    p.add_argument("--beta", type=float, default=0.0, help="KL coefficient (0: no reference)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--output-dir", default="runs/trl-grpo")
    p.add_argument("--episodes-jsonl", default=None, help="record every episode here")
    p.add_argument("--report-to", default="none", help="none, tensorboard, wandb (TRL's)")
    p.add_argument("--cpu", action="store_true", help="train on the CPU even if a GPU is there")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> Any:
    """Train; return the trainer (its ``state.log_history`` holds TRL's metrics)."""
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")  # rollout_func is experimental
    trainer = build_trainer(parse_args(argv))
    trainer.train()
    return trainer


if __name__ == "__main__":
    try:  # bad input or no server: one line, no traceback
        main(sys.argv[1:])
    except (ValueError, OSError, gym.error.Error) as e:
        sys.exit(f"{os.path.basename(__file__)}: {e}")
