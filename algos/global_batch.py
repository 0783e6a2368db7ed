"""The global batch of a data-parallel iteration: every rank's step rows in one canonical order.

Why N ranks compute exactly the one-process update (docs/scaling.md):

1. **Rollout.** Rank r steps its own contiguous block of whole task groups
   (:meth:`~algos.distributed.World.env_range`), so a group never spans ranks. Its rows get
   global trajectory ids (the env index in the one-process rollout).
2. **Scores.** Each rank computes old log-probs, reference log-probs and critic values of
   its own rows (the expensive forwards).
3. **Gather.** Every rank's rows, without their prompt tokens, are all-gathered
   (:func:`gather_rows`) and put in the canonical order, (step, global env index): the order
   the one-process rollout produces. Every rank then runs the estimator on the whole batch
   (cheap), so group statistics, whitening (REINFORCE++, GAE) and every loss normaliser are
   the global ones, and keeps the advantages of its own rows.
4. **Update.** The shuffle is a permutation of the global rows from the same seed, so the
   mini-batches are the same at every world size; each rank runs its rows of each global
   mini-batch with that mini-batch's normalisers, padded with empty micro-batches so every rank
   runs the same number of forward/backward passes (the collectives of DDP/FSDP match), and the
   reduced gradient is the one-process gradient.

At world size 1 nothing is gathered or copied: :meth:`GlobalRows.single` views the batch.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from algos.batch import StepBatch
from algos.packing import prompt_rows
from algos.rollout import RolloutResult


@dataclass
class GlobalRows:
    """The rows of every rank, and which rank holds each.

    Attributes:
        batch: (N rows) the global batch without prompt tokens (at world size 1: the batch).
        owner: (N,) the rank holding row i.
        local: (N,) row i's index in its owner's batch.
        prompt_len: (N,) prompt tokens of row i.
        rank: This process's rank.
        advantages: (N, L) the estimator's advantages of the global batch, once computed.
    """

    batch: StepBatch
    owner: np.ndarray
    local: np.ndarray
    prompt_len: np.ndarray
    rank: int = 0
    advantages: torch.Tensor | None = None

    @classmethod
    def single(cls, batch: StepBatch, advantages: torch.Tensor | None = None) -> GlobalRows:
        """The one-process view: every row is this rank's, in its own order."""
        n = len(batch)
        lengths = [len(p) for p in prompt_rows(batch)] if batch.prompt_ids is not None else [0] * n
        return cls(
            batch,
            np.zeros(n, dtype=np.int64),
            np.arange(n, dtype=np.int64),
            np.asarray(lengths, dtype=np.int64),
            0,
            advantages,
        )

    def __len__(self) -> int:
        return len(self.batch)

    @property
    def is_single(self) -> bool:
        """Every row is this rank's, in its own order (world size 1)."""
        return bool((self.owner == self.rank).all() and (self.local == np.arange(len(self))).all())

    def mine(self, values: torch.Tensor, width: int) -> torch.Tensor:
        """This rank's rows of a (N, L) tensor, in local order, cut to ``width`` columns."""
        if self.is_single and values.shape[1] == width:
            return values
        mine = np.flatnonzero(self.owner == self.rank)
        order = mine[np.argsort(self.local[mine], kind="stable")]
        return values[torch.from_numpy(order)][:, :width]

    def micro_batches(self, rows: list[int], micro: int) -> list[list[int]]:
        """This rank's share of global ``rows``, as local row lists of up to ``micro`` each.

        Padded with empty lists to the largest count of any rank, so every rank runs as many
        forward/backward passes (an empty one carries no row and weighs 0). Computed from the
        global batch alone, on every rank alike: no communication.
        """
        counts: dict[int, int] = {}
        for i in rows:
            counts[int(self.owner[i])] = counts.get(int(self.owner[i]), 0) + 1
        steps = max((math.ceil(c / micro) for c in counts.values()), default=0)
        mine = [int(self.local[i]) for i in rows if self.owner[i] == self.rank]
        chunks = [mine[k : k + micro] for k in range(0, len(mine), micro)]
        return chunks + [[] for _ in range(steps - len(chunks))]

    def tokens(self, rows: list[int]) -> int:
        """Prompt plus response tokens of global ``rows``."""
        resp = (self.batch.response_mask[rows] != 0).sum().item() if rows else 0
        return int(self.prompt_len[rows].sum()) + int(resp)


def empty_batch() -> StepBatch:
    """A batch of 0 rows: a rank whose episodes all ended before their first step."""
    return StepBatch(
        prompt_ids=[],
        response_ids=torch.zeros((0, 1), dtype=torch.long),
        response_mask=torch.zeros((0, 1)),
        step_reward=torch.zeros(0),
        index=np.zeros(0, dtype=np.int64),
        traj_uid=np.zeros(0, dtype=np.int64),
        step_index=torch.zeros(0, dtype=torch.long),
        old_log_prob=torch.zeros((0, 1)),
    )


def light(batch: StepBatch) -> tuple[StepBatch | None, np.ndarray]:
    """What a rank sends: its rows without per-token inputs (None if it has none), prompt lengths.

    Prompt ids and any per-row list of tensors (recorded trunk states) stay on their rank: the
    estimators and normalisers read masks, rewards, keys and scores only.
    """
    lengths = np.asarray([len(p) for p in prompt_rows(batch)], dtype=np.int64)
    if len(batch) == 0:
        return None, lengths
    drop = {"prompt_ids": None, "prompt_mask": None}
    for f in dataclasses.fields(batch):
        if isinstance(getattr(batch, f.name), list):
            drop[f.name] = None
    return dataclasses.replace(batch, **drop), lengths


def merge(parts: list[tuple[StepBatch | None, np.ndarray]], rank: int) -> GlobalRows:
    """Every rank's :func:`light` rows as one batch in canonical (step, trajectory) order.

    The trajectory ids must be global (the env index of the one-process rollout), so this
    order is the one that rollout produces.

    Raises:
        ValueError: No rank has any row.
    """
    batches, owner, local, lengths = [], [], [], []
    for r, (b, plen) in enumerate(parts):
        if b is None:
            continue
        batches.append(b)
        owner.append(np.full(len(b), r, dtype=np.int64))
        local.append(np.arange(len(b), dtype=np.int64))
        lengths.append(plen)
    if not batches:
        raise ValueError("merge: no rank has a step row")
    whole = StepBatch.concat(batches) if len(batches) > 1 else batches[0]
    steps, traj = whole.step_index.tolist(), whole.traj_uid.tolist()
    order = sorted(range(len(whole)), key=lambda i: (steps[i], traj[i]))
    return GlobalRows(
        whole.select(order),
        np.concatenate(owner)[order],
        np.concatenate(local)[order],
        np.concatenate(lengths)[order],
        rank,
    )


def gather_rows(world: Any, batch: StepBatch) -> GlobalRows:
    """The global batch of this iteration (all-gathered at world size > 1, else ``batch``)."""
    if world.size == 1:
        return GlobalRows.single(batch)
    return merge(world.all_gather_object(light(batch)), world.rank)


def gather_rollout(world: Any, ro: Any, offset: int) -> Any:
    """This rank's rollout with global trajectory ids, and every rank's episodes and counts.

    Returns a :class:`SharedRollout` whose ``batch`` is this rank's rows (an empty batch when
    it has none but another rank does) and whose episodes (in env order), token counts and
    length cover every rank; the times are the slowest rank's. At world size 1, ``ro``.
    """
    if world.size == 1:
        return ro
    if ro.batch is not None:
        ro.batch.traj_uid = np.asarray(ro.batch.traj_uid) + offset
    for ep in ro.episodes:
        ep.traj += offset
    mine = (ro.episodes, len(ro), ro.prompt_tokens, ro.response_tokens, ro.trimmed_prompts,
            ro.seconds, ro.generate_seconds)  # fmt: skip
    every = world.all_gather_object(mine)
    rows = sum(p[1] for p in every)
    batch = ro.batch if ro.batch is not None else (empty_batch() if rows else None)
    return SharedRollout(
        batch=batch,
        episodes=[ep for p in every for ep in p[0]],
        prompt_tokens=sum(p[2] for p in every),
        response_tokens=sum(p[3] for p in every),
        trimmed_prompts=sum(p[4] for p in every),
        seconds=max(p[5] for p in every),
        generate_seconds=max(p[6] for p in every),
        rows=rows,
    )


@dataclass
class SharedRollout(RolloutResult):
    """A rollout shared by the ranks: ``batch`` is this rank's rows, the rest is everyone's."""

    rows: int = 0
    """Step rows of every rank."""

    def __len__(self) -> int:
        return self.rows
