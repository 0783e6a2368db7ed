"""Two ranks (torchrun, gloo) compute the one-process update of the same global batch.

One real Keypad rollout of tiny-random is the global batch. The one-process run updates on all
of it; two ranks each take the rows of their task groups (3 groups: an uneven 2 + 1 share) and
run the trainer's own ``update_policy``; with ``optim.ppo_epochs = 2`` and 16-row mini-batches
of 4-row micro-batches that is 6 optimiser steps. Afterwards the parameters agree to 1e-6.

Why lr is 1e-5 here: the ranks add up a gradient in another order than one process does, so
it differs by float32 rounding (relative 1e-7). AdamW divides each gradient by its own running
magnitude, which turns that rounding into an equally *relative* change of the update of
elements whose gradient nearly cancels (a sum of terms 1e4 times larger than itself): with
lr 1e-2 such elements differ by 1e-4 although nothing is wrong. At lr 1e-5 the parameters
still move by 6e-5 and the rounding stays below 1e-8; a real error (a row lost, a local
normaliser) changes the updates by up to lr per step. AdamW is also blind to a gradient scaled
by a constant, so the gradient norm and the losses are compared too (they catch, e.g., the
world-size factor on the loss being dropped).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from launch import HERE, check, run

pytestmark = pytest.mark.slow

SCRIPT = str(HERE / "exact_update.py")
CASES = [
    "gigpo:ddp:groups",
    "gigpo:fsdp:groups",
    "reinforce_pp_kl:ddp:groups",
    "reinforce_pp_kl:fsdp:groups",
    "steppo:ddp:groups",
    "steppo:fsdp:groups",
    "gigpo:ddp:rank0",  # rank 1 holds no row: it runs empty passes only
]


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> tuple[Path, Path]:
    one, two = tmp_path_factory.mktemp("one"), tmp_path_factory.mktemp("two")
    check(run([SCRIPT, str(one), "make"]))
    (two / "batch.pt").write_bytes((one / "batch.pt").read_bytes())
    refs = sorted({f"{c.split(':')[0]}:ddp:groups" for c in CASES})
    check(run([SCRIPT, str(one), "run", *refs]))
    check(run([SCRIPT, str(two), "run", *CASES], nproc=2))
    return one, two


def _load(path: Path) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    return load_file(str(path))


@pytest.mark.parametrize("case", CASES)
def test_two_ranks_give_the_one_process_parameters(results, case):
    from algos.models import load_model

    one, two = results
    ref_name = f"{case.split(':')[0]}:ddp:groups"
    ref, got = _load(one / f"{ref_name}.safetensors"), _load(two / f"{case}.safetensors")
    assert ref.keys() == got.keys() and ref
    for k in ref:
        torch.testing.assert_close(got[k], ref[k], rtol=0, atol=1e-6, msg=k)
    # The update did something: every parameter the actor trains moved by ~lr per step.
    start = dict(load_model("tiny-random", seed=0)[0].named_parameters())
    moved = max((ref[k] - start[k].detach()).abs().max().item() for k in start)
    assert moved > 3e-5
    m_ref = json.loads((one / f"{ref_name}.json").read_text())
    m_got = json.loads((two / f"{case}.json").read_text())
    assert m_ref["actor/optimizer_steps"] == m_got["actor/optimizer_steps"] == 6.0
    for key in ("actor/grad_norm", "actor/pg_loss", "actor/entropy", "actor/advantage_mean"):
        assert m_got[key] == pytest.approx(m_ref[key], rel=1e-5, abs=1e-7), key
    for key in ("actor/zero_advantage_rows", "rollout/logp_abs_diff_max"):
        assert (key in m_got) == (key in m_ref)
    if case.startswith("steppo"):
        for key in ("critic/value_loss", "critic/critic_grad_norm"):
            assert m_got[key] == pytest.approx(m_ref[key], rel=1e-5, abs=1e-7), key
    if case.startswith("reinforce_pp_kl"):
        assert m_got["actor/kl"] == pytest.approx(m_ref["actor/kl"], rel=1e-5, abs=1e-9)
