"""The transformers backend: shared-prefix sampling equals model.generate, reproducibly."""

from __future__ import annotations

import pytest
import torch
from conftest import rows_of

from algos.algorithms import get_algorithm
from algos.backends.base import SamplingParams
from algos.backends.hf import HFBackend, common_prefix
from algos.config import AlgoConfig, OptimConfig
from algos.learner import Learner
from algos.models import load_model


def _prompts() -> list[list[int]]:
    """A shared 30-token prefix, suffixes of several lengths, repeats and a short prompt."""
    g = torch.Generator().manual_seed(0)
    base = torch.randint(5, 250, (30,), generator=g).tolist()
    out = [base + torch.randint(5, 250, (k,), generator=g).tolist() for k in (3, 7, 7, 1, 12)]
    return [*out, out[1], out[1], base[:10]]


@pytest.fixture(scope="module")
def tiny():
    return load_model("tiny-random", seed=0)


def test_greedy_outputs_equal_model_generate(tiny):
    model, tok = tiny
    prompts = _prompts()
    shared = HFBackend(model, tok).generate(prompts, SamplingParams(12, 0.0))
    plain = HFBackend(model, tok, prefix_sharing=False).generate(prompts, SamplingParams(12, 0.0))
    for a, b in zip(shared, plain):
        assert a.token_ids == b.token_ids and a.finish_reason == b.finish_reason
        torch.testing.assert_close(
            torch.tensor(a.logprobs), torch.tensor(b.logprobs), atol=1e-4, rtol=0
        )


def test_each_distinct_prefix_is_prefilled_once(tiny):
    model, tok = tiny
    backend = HFBackend(model, tok)
    prompts = _prompts()
    backend.generate(prompts, SamplingParams(2, 1.0))
    distinct = {tuple(p) for p in prompts}
    shared = common_prefix(sorted(distinct))
    assert backend.prompt_tokens == sum(len(p) for p in prompts)
    assert backend.prefill_tokens == shared + sum(len(p) - shared for p in distinct)
    assert common_prefix([(1, 2, 3), (1, 2, 3)]) == 2  # every prompt keeps a token to prefill


def test_sampled_logprobs_are_what_the_learner_computes(tiny):
    model, tok = tiny
    prompts = _prompts()
    gens = HFBackend(model, tok, seed=1).generate(prompts, SamplingParams(6, 0.7, 0.9))
    batch = rows_of(prompts, gens)
    width = batch.response_length
    learner = Learner(
        model, tok, get_algorithm("grpo"), AlgoConfig(), OptimConfig(), temperature=0.7
    )
    sampled = torch.zeros(len(gens), width)
    for i, g in enumerate(gens):
        sampled[i, : len(g.logprobs)] = torch.tensor(g.logprobs)
    torch.testing.assert_close(learner.score(batch, "logp"), sampled, atol=1e-4, rtol=1e-4)


def test_sampling_is_reproducible_and_private(tiny):
    model, tok = tiny
    params = SamplingParams(8, 1.0, 0.9)
    a = HFBackend(model, tok, seed=3)
    first = [g.token_ids for g in a.generate(_prompts(), params)]
    torch.manual_seed(123)  # the global RNG does not matter
    again = [g.token_ids for g in HFBackend(model, tok, seed=3).generate(_prompts(), params)]
    assert first == again
    state = a.rng_state
    nxt = [g.token_ids for g in a.generate(_prompts(), params)]
    a.rng_state = state  # checkpoints restore it
    assert [g.token_ids for g in a.generate(_prompts(), params)] == nxt
    # Repeated prompts are separate samples, not copies of one.
    many = HFBackend(model, tok, seed=0).generate([_prompts()[0]] * 16, SamplingParams(6, 1.0))
    assert len({tuple(g.token_ids) for g in many}) > 1


def test_kept_prefixes_are_reused_by_the_next_call_with_the_same_outputs(tiny):
    """A prompt that extends one of the last call's (an episode's next step) prefills only the
    new tokens, and samples exactly what a backend without kept prefixes samples."""
    from algos.policy import freeze_lower_layers
    from algos.trunk import trunk_depth

    model, tok = load_model("tiny-random", seed=0)
    freeze_lower_layers(model, 1)
    g = torch.Generator().manual_seed(4)
    first = _prompts()
    later = [p + torch.randint(5, 250, (5,), generator=g).tolist() for p in first[:5]]
    warm, cold = HFBackend(model, tok), HFBackend(model, tok)
    for b in (warm, cold):
        b.capture_depth = trunk_depth(model)
    warm.generate(first, SamplingParams(4, 0.0))
    before = warm.prefill_tokens
    a = warm.generate(later, SamplingParams(6, 0.0))
    assert warm.prefill_tokens - before == 5 * len(later)  # only the new tokens
    b = cold.generate(later, SamplingParams(6, 0.0))
    for x, y in zip(a, b):
        assert x.token_ids == y.token_ids
        torch.testing.assert_close(torch.tensor(x.logprobs), torch.tensor(y.logprobs), atol=1e-5,
                                   rtol=0)  # fmt: skip
        torch.testing.assert_close(x.extra["trunk"], y.extra["trunk"], atol=1e-5, rtol=0)
    # New weights make every kept key stale: the next call prefills its prompts again.
    warm.sync_weights(model)
    assert len(warm.prefixes) == 0
    before = warm.prefill_tokens
    warm.generate(later[:1], SamplingParams(2, 0.0))
    assert warm.prefill_tokens - before == len(later[0])


def test_reserved_cache_room_changes_no_output(tiny, monkeypatch):
    """Decoding into reserved room (the default) samples exactly what concatenation samples."""
    import algos.backends.hf as hf

    model, tok = tiny
    prompts = _prompts()
    params = [SamplingParams(12, 1.0), SamplingParams(9, 0.7, 0.9), SamplingParams(12, 0.0)]

    def run() -> list:
        backend = HFBackend(model, tok, seed=4)
        backend._eos |= set(range(0, 256, 5))  # so that rows finish, and leave, at varied steps
        return [
            (g.token_ids, g.logprobs, g.finish_reason)
            for p in params
            for g in backend.generate(prompts, p)
        ]

    reserved = run()
    assert len({len(t) for t, _, why in reserved if why == "stop"}) >= 3  # rows left early
    monkeypatch.setattr(hf, "reserve", lambda cache, room: None)
    assert run() == reserved  # bit for bit, rows leaving the batch as they finish


def test_reserved_layers_grow_past_their_room():
    from transformers import DynamicCache

    from algos.backends.hf import reserve

    g = torch.Generator().manual_seed(0)
    plain, roomy = DynamicCache(), DynamicCache()
    first = [torch.randn(3, 2, 5, 4, generator=g) for _ in range(2)]
    plain.update(*first, 0)
    roomy.update(*first, 0)
    reserve(roomy, 1)
    reserve(roomy, 1)  # twice changes nothing
    for k in (1, 3, 2):  # the second update overflows the room of 1 position
        new = [torch.randn(3, 2, k, 4, generator=g) for _ in range(2)]
        assert all(torch.equal(a, b) for a, b in zip(plain.update(*new, 0), roomy.update(*new, 0)))
    rows = torch.tensor([2, 0])
    plain.reorder_cache(rows)
    roomy.reorder_cache(rows)
    assert torch.equal(plain.layers[0].keys, roomy.layers[0].keys)
    assert torch.equal(plain.layers[0].values, roomy.layers[0].values)
    assert roomy.get_seq_length() == 11
    empty = DynamicCache()
    reserve(empty, 4)  # no layers yet: harmless, and the cache fills as before
    for k in (5, 1):
        new = [torch.randn(1, 2, k, 4, generator=g) for _ in range(2)]
        assert empty.update(*new, 0)[0].shape == (1, 2, 5 if k == 5 else 6, 4)


def test_a_greedy_answer_is_kept_until_the_weights_change(tiny):
    """A prompt answered greedily before is answered again without a forward (a held-out game
    whose command did nothing shows the same prompt again), until new weights come."""
    model, tok = tiny
    backend, greedy = HFBackend(model, tok), SamplingParams(6, 0.0)
    prompts = _prompts()
    first = backend.generate(prompts, greedy)
    before = backend.prefill_tokens
    again = backend.generate(prompts[::-1], greedy)
    assert backend.prefill_tokens == before  # nothing run
    assert [g.token_ids for g in again] == [g.token_ids for g in first[::-1]]
    assert [g.logprobs for g in again] == [g.logprobs for g in first[::-1]]
    again[0].token_ids.append(7)  # each caller holds its own copy
    assert backend.generate(prompts[-1:], greedy)[0].token_ids == first[-1].token_ids
    backend.generate(prompts[:1], SamplingParams(6, 1.0))  # sampled calls are drawn anew
    backend.generate(prompts[:1], SamplingParams(5, 0.0))  # ... and other params answered anew
    assert backend.prefill_tokens > before
    backend.sync_weights(model)
    before = backend.prefill_tokens
    backend.generate(prompts[:1], greedy)
    assert backend.prefill_tokens > before


def test_greedy_calls_chunk_by_the_part_they_prefill(tiny):
    """Greedy chunks group prompts by the part no kept prefix covers, so a chunk pads to its
    longest new part; sampled chunks keep the length order (it decides each row's draws)."""
    model, tok = tiny
    g = torch.Generator().manual_seed(5)

    def prompt(first: int, n: int) -> list[int]:
        return [first, *torch.randint(5, 250, (n - 1,), generator=g).tolist()]

    kept = [prompt(1, 40), prompt(2, 25)]
    later = [kept[0] + [9], kept[1] + [9], prompt(3, 30), prompt(4, 35)]  # new: 1, 1, 30, 35
    for params, cells in ((SamplingParams(4, 0.0), 2 + 2 * 35), (SamplingParams(4, 1.0), 130)):
        backend = HFBackend(model, tok, max_batch_size=2)
        backend.generate(kept, params)
        start = backend.prefill_cells
        backend.generate(later, params)
        # greedy: [1, 1] then [30, 35]; by length: [26 -> 1, 30] then [35, 41 -> 1]
        assert backend.prefill_cells - start == cells
    plain = HFBackend(model, tok, prefix_sharing=False).generate(later, SamplingParams(4, 0.0))
    backend = HFBackend(model, tok, max_batch_size=2)
    backend.generate(kept, SamplingParams(4, 0.0))
    out = backend.generate(later, SamplingParams(4, 0.0))
    assert [a.token_ids for a in out] == [b.token_ids for b in plain]
