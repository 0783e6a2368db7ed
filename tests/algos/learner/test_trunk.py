"""The frozen trunk: recorded states give the full model's log-probs and gradients."""

from __future__ import annotations

import pytest
import torch
from conftest import rows_of

from algos.algorithms import get_algorithm
from algos.backends.base import SamplingParams
from algos.backends.hf import HFBackend
from algos.batch import StepBatch
from algos.config import AlgoConfig, OptimConfig
from algos.learner import Learner
from algos.models import load_model
from algos.packing import pack
from algos.policy import freeze_lower_layers
from algos.sft import mean_nll, token_nll, with_trunk_states
from algos.trunk import trunk_depth


def _frozen():
    model, tok = load_model("tiny-random", seed=0)
    assert trunk_depth(model) is None  # everything trains: no trunk
    freeze_lower_layers(model, 1)
    assert trunk_depth(model) == 1  # TINY_CONFIG has 2 layers: layer 0 and the embeddings frozen
    return model, tok


def _rollout_rows(model, tok, record: bool):
    g = torch.Generator().manual_seed(0)
    base = torch.randint(5, 250, (30,), generator=g).tolist()
    prompts = [base + torch.randint(5, 250, (k,), generator=g).tolist() for k in (3, 7, 7, 1, 12)]
    prompts += [prompts[1], base[:10]]
    backend = HFBackend(model, tok, seed=1)
    backend.capture_depth = trunk_depth(model) if record else None
    gens = backend.generate(prompts, SamplingParams(6, 1.0))
    states = [x.extra["trunk"] for x in gens] if record else None
    if record:  # prompt tokens and every response token but the last (it predicts nothing)
        for p, x in zip(prompts, gens):
            assert x.extra["trunk"].shape[0] == len(p) + len(x.token_ids) - 1
    width = max(len(x.token_ids) for x in gens)
    return rows_of(prompts, gens, old_log_prob=torch.zeros(len(gens), width), trunk_states=states)


def test_recorded_states_give_the_full_models_logprobs_and_gradients():
    model, tok = _frozen()
    with_states = _rollout_rows(model, tok, record=True)
    plain = StepBatch(**{**with_states.__dict__, "trunk_states": None})
    learner = Learner(
        model, tok, get_algorithm("grpo"), AlgoConfig(), OptimConfig(micro_batch_size=3)
    )
    assert learner.trunk_depth == 1
    torch.testing.assert_close(learner.score(with_states, "logp"), learner.score(plain, "logp"),
                               atol=1e-5, rtol=0)  # fmt: skip
    adv = torch.randn(len(plain), 1, generator=torch.Generator().manual_seed(2))
    adv = adv * plain.response_mask
    grads = []
    for batch in (with_states, plain):
        model.zero_grad(set_to_none=True)
        learner._actor_loss(batch, adv, _pack(learner, batch), _norm(batch))["loss"].backward()
        grads.append({k: p.grad.clone() for k, p in model.named_parameters() if p.grad is not None})
    assert grads[0].keys() == grads[1].keys() and grads[0]
    for k in grads[0]:
        torch.testing.assert_close(grads[0][k], grads[1][k], rtol=1e-4, atol=1e-7, msg=k)


def _pack(learner, batch):
    from algos.packing import pack

    return pack(batch, learner.tokenizer.pad_token_id, learner.device, learner.trunk_depth)


def _norm(batch):
    from algos.packing import mini_batch_counts

    return {**mini_batch_counts(batch.response_mask), "loss_scale_factor": 8.0}


@pytest.mark.parametrize("one_episode", [False, True])
def test_sft_trains_the_top_layers_on_states_computed_once(one_episode):
    """Recorded states give the full model's NLL; steps of one episode (which share their
    prompt's start) are recorded with the shared prefix run once."""
    model, tok = _frozen()
    batch = _rollout_rows(model, tok, record=False)
    if one_episode:
        batch = batch.select([0, 1, 2, 4, 5])
        batch.traj_uid = [0] * len(batch)
    nll_plain, n = token_nll(model, batch, tok.pad_token_id, "cpu")
    recorded = with_trunk_states(
        model, batch.select(list(range(len(batch)))), tok.pad_token_id, "cpu", 3, progress=True
    )  # the bar (sft's default) changes nothing
    for p, states, width in zip(recorded.prompt_ids, recorded.trunk_states,
                                (recorded.response_mask != 0).sum(-1).tolist()):  # fmt: skip
        assert states.shape[0] == len(p) + width - 1
    nll_top, n_top = token_nll(model, recorded, tok.pad_token_id, "cpu", trunk_depth(model))
    assert n == n_top
    assert nll_top.item() == pytest.approx(nll_plain.item(), rel=1e-5)
    # sft's held-out NLL runs the top layers on recorded states, the full model on others
    for rows in (batch, recorded):
        mean = mean_nll(model, rows, tok.pad_token_id, "cpu", 3)
        assert mean == pytest.approx(nll_plain.item() / n, rel=1e-5)


def test_the_training_update_runs_on_the_recorded_states(monkeypatch, keypad_overrides):
    """The trainer has the rollout record the trunk, and the update uses it."""
    import algos.learner
    from algos.config import load_config
    from algos.trainer import build_session, run_iteration

    seen = []
    for name in ("pack", "pack_tree"):  # rows, and token trees (the default)
        real = getattr(algos.learner, name)

        def spy(*args, real=real, name=name, **kwargs):
            out = real(*args, **kwargs)
            seen.append((name, "trunk" in out))
            return out

        monkeypatch.setattr(algos.learner, name, spy)
    cfg = load_config(None, [*keypad_overrides, "model.trainable_layers=1", "run.iterations=1"])
    s = build_session(cfg, None)
    try:
        run_iteration(s, 1)
    finally:
        s.close()
    assert seen and all(trunk for _, trunk in seen)
    assert {name for name, _ in seen} == {"pack_tree"}


@pytest.mark.parametrize("record", [True, False])
def test_a_shared_prompt_prefix_runs_once_with_the_same_logits_and_gradients(record):
    """pack(share_prefix=True) takes the rows' common prompt prefix out and runs it once; the
    rows attend to its cache (with gradients), as if each ran in full."""
    from algos.learner import response_logits

    model, tok = _frozen()
    batch = _rollout_rows(model, tok, record=record)
    batch = batch.select([0, 1, 2, 4, 5])  # every prompt starts with the same 30 tokens
    depth = trunk_depth(model) if record else None
    results = []
    for share in (False, True):
        inputs = pack(batch, tok.pad_token_id, "cpu", depth, share_prefix=share)
        assert ("prefix_ids" in inputs) == share
        assert not share or inputs["prefix_ids"].shape[1] == 30
        model.zero_grad(set_to_none=True)
        logits = response_logits(model, inputs)
        mask = batch.response_mask[:, : inputs["width_r"]]
        (logits.logsumexp(-1) * mask).sum().backward()
        grads = {k: p.grad.clone() for k, p in model.named_parameters() if p.grad is not None}
        results.append((logits.detach() * mask[..., None], grads))
    (plain, g0), (shared, g1) = results
    torch.testing.assert_close(shared, plain, atol=1e-5, rtol=0)
    assert g0.keys() == g1.keys() and g0
    for k in g0:
        torch.testing.assert_close(g1[k], g0[k], rtol=1e-4, atol=1e-6, msg=k)


def test_bfloat16_layers_keep_float32_weights_where_they_train():
    """model.compute_dtype: frozen layers stored in bfloat16, trained ones in float32, every
    layer computing under autocast and handing float32 states on; copies keep it."""
    import copy

    from algos.trunk import autocast_layers

    model, tok = _frozen()
    reference = copy.deepcopy(model)
    assert autocast_layers(model, torch.bfloat16) == 1  # layer 0 is frozen, layer 1 trains
    layers = model.model.layers
    assert {p.dtype for p in layers[0].parameters()} == {torch.bfloat16}
    assert {p.dtype for p in layers[1].parameters()} == {torch.float32}
    assert model.lm_head.weight.dtype == torch.float32 and trunk_depth(model) == 1
    clone = copy.deepcopy(model)
    assert type(clone.model.layers[0]) is type(layers[0]) and "Autocast" in type(layers[0]).__name__
    ids = torch.randint(5, 250, (2, 12), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        low, full = model(ids).logits, reference(ids).logits
    assert low.dtype == torch.float32
    torch.testing.assert_close(low, full, atol=0.05, rtol=0.05)  # bfloat16 rounding only
    # The recorded trunk still gives the model's own log-probs, and training works.
    batch = _rollout_rows(model, tok, record=True)
    learner = Learner(model, tok, get_algorithm("grpo"), AlgoConfig(), OptimConfig())
    plain = StepBatch(**{**batch.__dict__, "trunk_states": None})
    torch.testing.assert_close(learner.score(batch, "logp"), learner.score(plain, "logp"),
                               atol=2e-2, rtol=0)  # fmt: skip


def test_the_cache_keyword_is_read_through_a_wrapper(tmp_path):
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    from algos.trunk import cache_keyword

    model, _ = load_model("tiny-random", seed=0)
    store = dist.FileStore(str(tmp_path / "store"), 1)  # a real one-process gloo group
    dist.init_process_group("gloo", store=store, rank=0, world_size=1)
    try:  # DDP's forward takes (*args, **kwargs): the model's keyword must still be found
        assert cache_keyword(DDP(model)) == cache_keyword(model)
    finally:
        dist.destroy_process_group()


def test_compute_dtype_auto_uses_bfloat16_only_where_the_device_has_it(monkeypatch):
    """model.compute_dtype = "auto": bfloat16 layers where the CPU multiplies bfloat16 in
    hardware, the model's own dtype elsewhere (emulated bfloat16 ran ~6x slower); the run says
    which. Both machines are simulated by patching the capability check."""
    import algos.policy as policy
    from algos.config import load_config

    cfg = load_config(None, ["model=tiny-random", "model.trainable_layers=1",
                             "model.compute_dtype=auto", "algo=grpo"])  # fmt: skip
    for native, expect in ((True, "bfloat16"), (False, "")):
        monkeypatch.setattr(policy, "native_bfloat16", lambda device, n=native: n)
        models = policy.build_models(cfg)
        assert models.compute_dtype == expect
        stored = {p.dtype for p in models.model.model.layers[0].parameters()}
        assert stored == {torch.bfloat16 if native else torch.float32}
        assert ("bfloat16" if native else "float32") in policy.compute_dtype_line(cfg, models)
    # Explicit settings are kept as written; "auto" on a model that is not float32 is a no-op.
    assert policy.resolve_compute_dtype("bfloat16", "float32", "cpu") == "bfloat16"
    assert policy.resolve_compute_dtype("", "float32", "cpu") == ""
    assert policy.resolve_compute_dtype("auto", "bfloat16", "cpu") == ""
    assert isinstance(policy.native_bfloat16("cpu"), bool)  # the real check runs here
    load_config(None, ["model.dtype=bfloat16", "model.compute_dtype=auto"])  # not refused
    with pytest.raises(ValueError, match="compute_dtype"):
        load_config(None, ["model.dtype=bfloat16", "model.compute_dtype=bfloat16"])


@pytest.mark.parametrize(
    ("record", "attention"), [(True, "sdpa"), (False, "sdpa"), (True, "eager")]
)
def test_a_token_tree_gives_each_rows_logits_and_gradients(record, attention):
    """pack_tree runs each distinct prefix of the rows once (one sequence, a 4-D mask of each
    token's ancestors): the logits and gradients of running every row in full."""
    from algos.learner import response_logits
    from algos.packing import pack_tree, tree_sequences

    model, tok = _frozen()
    model.set_attn_implementation(attention)
    batch = _rollout_rows(model, tok, record=record)  # a repeated prompt, a shared 30-token start
    batch = batch.select([0, 1, 2, 3, 4, 5, 6, 5])  # and a repeated row
    depth = trunk_depth(model) if record else None
    results = []
    for tree in (False, True):
        inputs = (
            pack_tree(batch, "cpu", depth) if tree else pack(batch, tok.pad_token_id, "cpu", depth)
        )
        model.zero_grad(set_to_none=True)
        logits = response_logits(model, inputs)
        mask = batch.response_mask[:, : inputs["width_r"]]
        (logits.logsumexp(-1) * mask).sum().backward()
        grads = {k: p.grad.clone() for k, p in model.named_parameters() if p.grad is not None}
        results.append((logits.detach() * mask[..., None], grads, inputs))
    (rows, g0, _), (tree, g1, inputs) = results
    seqs = tree_sequences(batch).values()
    distinct = {tuple(s[:k]) for s in seqs for k in range(1, len(s) + 1)}
    assert inputs["input_ids"].shape[1] == len(distinct) < sum(map(len, seqs)) - 5 * 30
    torch.testing.assert_close(tree, rows, atol=1e-5, rtol=0)
    assert g0.keys() == g1.keys() and g0
    for k in g0:
        torch.testing.assert_close(g1[k], g0[k], rtol=1e-4, atol=1e-6, msg=k)


def test_a_token_trees_logits_reach_their_rows_with_a_reproducible_gradient():
    """Many response tokens share a tree position; their gradients add up in a fixed order.

    With ``logits[where]`` the backward (index_put_ with accumulation) added repeated
    indices in a varying order on CPU, so two runs of one update differed in the last bits.
    Sizes as in the main job: 49,152-token vocabulary, ~900 response tokens on 300 positions.
    """
    from algos.learner import take_rows

    gen = torch.Generator().manual_seed(0)
    base = torch.randn(300, 49152, generator=gen)
    where = torch.randint(0, 300, (300, 3), generator=gen)
    upstream = torch.randn(300, 3, 49152, generator=gen)
    grads = []
    threads = torch.get_num_threads()
    torch.set_num_threads(2)  # the race needs threads (the tests run on 1 otherwise)
    try:
        for _ in range(4):
            logits = base.clone().requires_grad_(True)
            rows = take_rows(logits, where)
            assert torch.equal(rows.detach(), base[where])
            rows.backward(upstream)
            grads.append(logits.grad)
    finally:
        torch.set_num_threads(threads)
    assert all(torch.equal(grads[0], g) for g in grads[1:])
