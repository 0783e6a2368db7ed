"""Model inputs from step rows: ``[left-padded prompt | right-padded response]``.

The rollout's prompts have different lengths; generation and the learner both left-pad them
(:func:`left_pad`), so the last prompt token of every row sits in the same column and the
response follows it.
"""

from __future__ import annotations

from typing import Any

import torch

from algos.batch import StepBatch


def left_pad(seqs: list[list[int]] | list[torch.Tensor], pad_id: int, width: int | None = None
             ) -> tuple[torch.Tensor, torch.Tensor]:  # fmt: skip
    """``(ids, attention_mask)``, both (n, width) long, each sequence right-aligned.

    >>> ids, attn = left_pad([[5, 6], [7]], pad_id=0)
    >>> ids.tolist(), attn.tolist()
    ([[5, 6], [0, 7]], [[1, 1], [0, 1]])
    """
    width = max((len(p) for p in seqs), default=0) if width is None else width
    ids = torch.full((len(seqs), width), pad_id, dtype=torch.long)
    attn = torch.zeros((len(seqs), width), dtype=torch.long)
    for row, p in enumerate(seqs):
        if len(p):
            ids[row, width - len(p) :] = torch.as_tensor(p, dtype=torch.long)
            attn[row, width - len(p) :] = 1
    return ids, attn


def response_width(batch: StepBatch) -> int:
    """Columns up to the last real response token of any row (at least 1)."""
    cols = torch.nonzero((batch.response_mask != 0).any(0))
    return int(cols.max()) + 1 if len(cols) else 1


def prompt_rows(batch: StepBatch) -> list[torch.Tensor]:
    """The B prompts as 1-D id tensors (a padded ``(B, P)`` prompt tensor is unpadded)."""
    if batch.prompt_ids is None:
        raise ValueError("the learner needs StepBatch.prompt_ids (the rollout's prompt tokens)")
    if isinstance(batch.prompt_ids, list):
        return batch.prompt_ids
    mask = batch.prompt_mask if batch.prompt_mask is not None else torch.ones_like(batch.prompt_ids)
    return [ids[m != 0] for ids, m in zip(batch.prompt_ids, mask)]


#: Fewest shared prompt tokens worth a forward of their own (:func:`pack`'s ``share_prefix``).
MIN_SHARED_PREFIX = 16


def shared_prefix(prompts: list[torch.Tensor]) -> int:
    """Leading tokens every prompt has in common, leaving each at least one of its own.

    >>> shared_prefix([torch.tensor([1, 2, 3]), torch.tensor([1, 2, 4, 5])])
    2
    """
    if len(prompts) < 2:
        return 0
    limit = min(len(p) for p in prompts) - 1
    if limit <= 0:
        return 0
    first = prompts[0][:limit]
    differ = torch.zeros(limit, dtype=torch.bool)
    for p in prompts[1:]:
        differ |= p[:limit] != first
    where = torch.nonzero(differ)
    return int(where[0]) if len(where) else limit


def pack(
    batch: StepBatch,
    pad_id: int,
    device: Any,
    depth: int | None = None,
    *,
    share_prefix: bool = False,
) -> dict[str, Any]:
    """Model inputs ``[left-padded prompt | right-padded response]`` and their positions.

    Response token j sits at column ``P + j`` and is predicted by column ``P + j - 1``, so the
    logits of the last ``R + 1`` columns (minus the very last) score the response. ``R`` is
    :func:`response_width` of the batch: columns past every row's last real token are cut.

    With ``depth`` and the batch's ``trunk_states``, ``"trunk"`` holds those states laid out
    the same way (zeros where a column is padding or has no state: a row's last response
    token, which predicts nothing), for :func:`algos.trunk.top_forward`.

    With ``share_prefix``, prompt tokens that every row starts with (at least
    :data:`MIN_SHARED_PREFIX` of them) are taken out of the rows into ``"prefix_ids"`` (1, S)
    (and ``"prefix_trunk"``), for :func:`algos.learner.response_logits` to run once, the rows
    then attending to its cache; positions stay those of the unshared layout. The rows of an
    episode's steps, or of a group's members, share their task and room: most of the prompt.
    """
    prompts = prompt_rows(batch)
    shared = shared_prefix(prompts) if share_prefix else 0
    if shared < MIN_SHARED_PREFIX:
        shared = 0
    prompt_ids, prompt_attn = left_pad([p[shared:] for p in prompts], pad_id)
    width_r = response_width(batch)
    resp_mask = batch.response_mask[:, :width_r] != 0
    resp_ids = torch.where(resp_mask, batch.response_ids[:, :width_r], pad_id)
    ids = torch.cat([prompt_ids, resp_ids], dim=1)
    attn = torch.cat([prompt_attn, resp_mask.long()], dim=1)
    pos = shared + (attn.cumsum(-1) - 1).clamp(min=0)
    out = {
        "input_ids": ids.to(device),
        "attention_mask": attn.to(device),
        "position_ids": pos.to(device),
        "width_r": width_r,
    }
    if shared:
        out["prefix_ids"] = prompts[0][None, :shared].to(device)
    if depth is not None and batch.trunk_states is not None:
        out["depth"] = depth
        out["trunk"] = _trunk_layout(batch, prompt_ids.shape[1], width_r, shared).to(device)
        if shared:
            out["prefix_trunk"] = batch.trunk_states[0][None, :shared].to(device)
    return out


def _trunk_layout(batch: StepBatch, width_p: int, width_r: int, shared: int = 0) -> torch.Tensor:
    states = batch.trunk_states
    hidden = states[0].shape[-1]
    out = torch.zeros(len(states), width_p + width_r, hidden, dtype=states[0].dtype)
    for i, (p, t) in enumerate(zip(prompt_rows(batch), states)):
        start = width_p - (len(p) - shared)
        n = min(t.shape[0] - shared, width_p + width_r - start)
        out[i, start : start + n] = t[shared : shared + n]
    return out


def mini_batch_counts(mask: torch.Tensor) -> dict[str, float]:
    """Normalisers of a mini-batch: real tokens and sequences with at least one token."""
    return {
        "batch_num_tokens": float((mask != 0).sum().item()),
        "global_batch_size": float(((mask != 0).sum(-1) > 0).sum().item()),
    }


# ---- a mini-batch as one token tree --------------------------------------------------------


def tree_sequences(batch: StepBatch, rows: Any = None) -> dict[int, list[int]]:
    """What each of ``rows`` (default: all) feeds the model, by row: prompt and response.

    The last response token is left out: it predicts nothing (:func:`pack` feeds it as a
    column whose logits are dropped).
    """
    prompts = prompt_rows(batch)
    rows = range(len(prompts)) if rows is None else rows
    out = {}
    for i in rows:
        r = int((batch.response_mask[i] != 0).sum())
        out[i] = prompts[i].tolist() + batch.response_ids[i, : max(r - 1, 0)].tolist()
    return out


def tree_parts(seqs: dict[int, list[int]], budget: int) -> list[list[int]]:
    """The rows of ``seqs`` in sequence order, in parts of at most ``budget`` tree tokens.

    A token tree (:func:`pack_tree`) holds each distinct prefix of its rows' sequences once:
    in sorted order a row adds the tokens past its common prefix with the row before it. A
    row longer than ``budget`` gets a part of its own.

    >>> tree_parts({0: [1, 2, 3], 1: [1, 2, 4], 2: [9, 9]}, budget=4)
    [[0, 1], [2]]
    """
    parts: list[list[int]] = []
    size, prev = 0, None
    for i in sorted(seqs, key=seqs.__getitem__):
        add = len(seqs[i]) - (_common(seqs[i], seqs[prev]) if prev is not None else 0)
        if not parts or size + add > budget:
            parts.append([])
            size, add = 0, len(seqs[i])
        parts[-1].append(i)
        size, prev = size + add, i
    return parts


def _common(a: list[int], b: list[int]) -> int:
    n = min(len(a), len(b))
    k = 0
    while k < n and a[k] == b[k]:
        k += 1
    return k


def pack_tree(batch: StepBatch, device: Any, depth: int | None = None) -> dict[str, Any] | None:
    """The rows as one sequence holding each distinct prefix once: a token tree.

    Rows that start alike (a group's members at its first step, every step that shows the
    same room, identical prompts with different answers) run their common tokens once, where
    :func:`pack` shares only what every row of a micro-batch starts with. The tree's tokens
    are laid out parents first; a 4-D ``"attention_mask"`` (1, 1, T, T) lets each token see
    exactly its ancestors and itself, and ``"position_ids"`` are each token's place in its
    own sequence, so every logit is the one running that row alone would give (up to float
    rounding). ``"tree_index"`` (b, R) is the tree position whose logits predict each
    response token (the last token before it), ``"targets"`` (b, R) those tokens (0 past a
    row's end); :func:`algos.learner.response_logits` gathers the logits into the (b, R, V)
    layout :func:`pack` gives.

    Returns None for a row without prompt tokens, or where the batch's recorded trunk
    states do not cover its sequences (the caller then uses :func:`pack`).
    """
    prompts = prompt_rows(batch)
    seqs = tree_sequences(batch)
    if min((len(p) for p in prompts), default=0) == 0:
        return None
    states = batch.trunk_states if depth is not None else None
    if states is not None and any(states[i].shape[0] < len(s) for i, s in seqs.items()):
        return None
    order = sorted(seqs, key=seqs.__getitem__)
    tokens: list[int] = []
    parent: list[int] = []
    source: list[tuple[int, int]] = []  # (row, index in that row's sequence) of each node
    paths: list[list[int]] = [[] for _ in seqs]
    prev: list[int] = []
    prev_seq: list[int] = []
    for i in order:
        s = seqs[i]
        k = _common(s, prev_seq)
        path = prev[:k]
        for j in range(k, len(s)):
            parent.append(path[-1] if path else -1)
            path.append(len(tokens))
            tokens.append(s[j])
            source.append((i, j))
        paths[i] = path
        prev, prev_seq = path, s
    n = len(tokens)
    allowed = torch.zeros(n, n, dtype=torch.bool)
    for j, up in enumerate(parent):
        if up >= 0:
            allowed[j] = allowed[up]
        allowed[j, j] = True
    width_r = response_width(batch)
    index = torch.zeros(len(seqs), width_r, dtype=torch.long)
    for i, path in enumerate(paths):
        # Response token j is predicted by the token before it: sequence position P + j - 1.
        last = len(path) - 1
        cols = [min(len(prompts[i]) - 1 + j, last) for j in range(width_r)]
        index[i] = torch.tensor([path[c] for c in cols])
    targets = batch.response_ids[:, :width_r] * (batch.response_mask[:, :width_r] != 0)
    out = {
        "input_ids": torch.tensor([tokens], dtype=torch.long).to(device),
        "attention_mask": allowed[None, None].to(device),
        "position_ids": torch.tensor([[j for _, j in source]], dtype=torch.long).to(device),
        "tree_index": index.to(device),
        "targets": targets.to(device),
        "width_r": width_r,
    }
    if states is not None:
        out["depth"] = depth
        out["trunk"] = torch.stack([states[row][j] for row, j in source])[None].to(device)
    return out
