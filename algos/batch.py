"""``StepBatch``: the row-per-step data contract between rollout, estimators and learner.

One row is one LLM call, i.e. one env step: the prompt is the observation at step t, the response
is the action (docs/algorithms.md, the batch). Token ids come from generation and are never
re-tokenised. Padding rows (to make a batch divisible by micro-batch or world sizes) carry
``sample_mask=False`` and all-zero masks, so they enter no statistic and no loss: upstream's
duplicated rows biased both.

>>> import torch
>>> b = StepBatch(
...     response_ids=torch.tensor([[5, 6], [7, 0]]),
...     response_mask=torch.tensor([[1, 1], [1, 0]]),
...     step_reward=[0.0, 1.0], index=["task0", "task0"], traj_uid=["a", "a"], step_index=[0, 1],
... )
>>> len(b.pad_to(4)), b.pad_to(4).sample_mask.tolist()
(4, [True, True, False, False])
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

_KEY_FIELDS = ("index", "traj_uid", "anchor_obs", "end_reason")
_ROW_BOOL_FIELDS = ("is_action_valid", "terminated", "truncated", "sample_mask")
_TOKEN_FLOAT_FIELDS = ("old_log_prob", "ref_log_prob", "values")


def object_array(values: Any) -> np.ndarray:
    """A 1-D object array holding ``values`` one per entry.

    Built element by element into ``np.full(n, None, dtype=object)`` so that tuples or arrays
    as keys stay one entry per row instead of becoming a 2-D array (``np.asarray`` would).

    >>> object_array([(1, 2), "a"]).shape
    (2,)
    """
    seq = values.tolist() if isinstance(values, np.ndarray) else list(values)
    arr = np.full(len(seq), None, dtype=object)
    for i, v in enumerate(seq):
        arr[i] = v
    return arr


def _object_rows(values: Any, name: str, n: int) -> np.ndarray:
    """A (n,) numpy array of keys; numeric/str arrays are kept, anything else becomes object."""
    if isinstance(values, torch.Tensor):
        values = values.detach().cpu().numpy()
    if isinstance(values, np.ndarray) and values.ndim == 1 and values.dtype.kind in "biufUO":
        arr = values
    else:
        arr = object_array(values)
    if arr.shape != (n,):
        raise ValueError(
            f"StepBatch.{name}: expected shape ({n},) (one entry per row), got {arr.shape}"
        )
    return arr


def _tensor(values: Any, name: str, shape: tuple[int, ...], dtype: torch.dtype) -> torch.Tensor:
    t = torch.as_tensor(values)
    if tuple(t.shape) != shape:
        raise ValueError(f"StepBatch.{name}: expected shape {shape}, got {tuple(t.shape)}")
    if dtype == torch.long and (t.is_floating_point() or t.is_complex()):
        raise ValueError(f"StepBatch.{name}: expected integer token ids, got dtype {t.dtype}")
    return t.to(dtype)


@dataclass(kw_only=True)
class StepBatch:
    """A batch of B step rows with responses padded to length L.

    Per-row numeric fields are tensors; key fields (``index``, ``traj_uid``, ``anchor_obs``) are
    (B,) numpy arrays (object dtype unless given as a numeric or str array). Construction
    validates every shape and names the bad field; lists and arrays are converted.
    """

    response_ids: torch.Tensor
    """(B, L) long: generated token ids, right-padded."""
    response_mask: torch.Tensor
    """(B, L) float32: 1 on tokens the policy produced, 0 on padding and tool/observation tokens."""
    step_reward: torch.Tensor
    """(B,) float64: the env reward of this step (reward shaping included)."""
    index: np.ndarray
    """(B,) task-group key: equal for the N rollouts of one task (GRPO/GiGPO groups)."""
    traj_uid: np.ndarray
    """(B,) trajectory key, shared by all steps of one episode."""
    step_index: torch.Tensor
    """(B,) long: 0..T-1 position of the step in its trajectory."""
    prompt_ids: list[torch.Tensor] | torch.Tensor | None = None
    """Prompt token ids: a list of B 1-D long tensors, or a (B, P) left-padded tensor."""
    prompt_mask: torch.Tensor | None = None
    """(B, P) attention mask of a padded ``prompt_ids`` tensor (default: all ones)."""
    anchor_obs: np.ndarray | None = None
    """(B,) object: pre-action observation without history (GiGPO's anchor state)."""
    end_reason: np.ndarray | None = None
    """(B,) object: why the episode ended (``terminated``, ``truncated``, ``max_steps``,
    ``context_limit``) on the last row of each ended trajectory, ``""`` on every other row."""
    is_action_valid: torch.Tensor | None = None
    """(B,) bool: the env understood the action (default all True)."""
    terminated: torch.Tensor | None = None
    """(B,) bool: the episode ended with this step (task done)."""
    truncated: torch.Tensor | None = None
    """(B,) bool: the episode hit its step limit at this step."""
    sample_mask: torch.Tensor | None = None
    """(B,) bool: False for padding rows (default all True)."""
    old_log_prob: torch.Tensor | None = None
    """(B, L) float: behaviour-policy log-prob of each response token."""
    ref_log_prob: torch.Tensor | None = None
    """(B, L) float: reference-policy log-prob of each response token."""
    values: torch.Tensor | None = None
    """(B, L) float: critic values; ``values[:, 0]`` is V(s_t) at the step boundary."""
    trunk_states: list[torch.Tensor] | None = None
    """B tensors (T_i, H): hidden states entering the first trainable layer for the row's
    prompt and response tokens, recorded by the rollout (:mod:`algos.trunk`)."""

    def __post_init__(self) -> None:
        ids = torch.as_tensor(self.response_ids)
        if ids.dim() != 2:
            raise ValueError(
                f"StepBatch.response_ids: expected shape (B, L), got {tuple(ids.shape)}"
            )
        b, l_ = ids.shape
        self.response_ids = _tensor(ids, "response_ids", (b, l_), torch.long)
        self.response_mask = _tensor(self.response_mask, "response_mask", (b, l_), torch.float32)
        self.step_reward = _tensor(self.step_reward, "step_reward", (b,), torch.float64)
        self.step_index = _tensor(self.step_index, "step_index", (b,), torch.long)
        for name in _KEY_FIELDS:
            if getattr(self, name) is not None:
                setattr(self, name, _object_rows(getattr(self, name), name, b))
        for name in ("index", "traj_uid"):
            if getattr(self, name) is None:
                raise ValueError(f"StepBatch.{name} is required: one key per row")
        defaults = {
            "is_action_valid": True,
            "terminated": False,
            "truncated": False,
            "sample_mask": True,
        }
        for name in _ROW_BOOL_FIELDS:
            value = getattr(self, name)
            if value is None:
                value = torch.full((b,), defaults[name], dtype=torch.bool)
            setattr(self, name, _tensor(value, name, (b,), torch.bool))
        for name in _TOKEN_FLOAT_FIELDS:
            value = getattr(self, name)
            if value is not None:
                t = torch.as_tensor(value)
                setattr(
                    self,
                    name,
                    _tensor(t, name, (b, l_), t.dtype if t.is_floating_point() else torch.float32),
                )
        self._check_prompts(b)
        if self.trunk_states is not None and len(self.trunk_states) != b:
            raise ValueError(
                f"StepBatch.trunk_states: expected {b} tensors, got {len(self.trunk_states)}"
            )

    def _check_prompts(self, b: int) -> None:
        if self.prompt_ids is None:
            if self.prompt_mask is not None:
                raise ValueError("StepBatch.prompt_mask given without prompt_ids")
            return
        if isinstance(self.prompt_ids, torch.Tensor):
            if self.prompt_ids.dim() != 2 or self.prompt_ids.shape[0] != b:
                raise ValueError(
                    f"StepBatch.prompt_ids: expected shape ({b}, P) or a list of {b} 1-D tensors, "
                    f"got {tuple(self.prompt_ids.shape)}"
                )
            p = self.prompt_ids.shape[1]
            self.prompt_ids = _tensor(self.prompt_ids, "prompt_ids", (b, p), torch.long)
            if self.prompt_mask is not None:
                self.prompt_mask = _tensor(self.prompt_mask, "prompt_mask", (b, p), torch.long)
            return
        prompts = [torch.as_tensor(p) for p in self.prompt_ids]
        if len(prompts) != b:
            raise ValueError(f"StepBatch.prompt_ids: expected {b} prompts, got {len(prompts)}")
        for i, p in enumerate(prompts):
            if p.dim() != 1:
                raise ValueError(
                    f"StepBatch.prompt_ids[{i}]: expected a 1-D tensor, got {tuple(p.shape)}"
                )
            prompts[i] = _tensor(p, f"prompt_ids[{i}]", tuple(p.shape), torch.long)
        self.prompt_ids = prompts
        if self.prompt_mask is not None:
            raise ValueError(
                "StepBatch.prompt_mask only applies to a padded (B, P) prompt_ids tensor"
            )

    def __len__(self) -> int:
        return self.response_ids.shape[0]

    @property
    def response_length(self) -> int:
        """L, the padded response length."""
        return self.response_ids.shape[1]

    def select(self, idx: Any) -> StepBatch:
        """Rows ``idx`` (int sequence, slice, bool mask or tensor) as a new batch, in that order."""
        n = len(self)
        if isinstance(idx, slice):
            rows = np.arange(n)[idx]
        else:
            rows = np.asarray(idx.detach().cpu().numpy() if torch.is_tensor(idx) else idx)
            if rows.dtype == bool:
                if rows.shape != (n,):
                    raise ValueError(f"select: bool mask must have shape ({n},), got {rows.shape}")
                rows = np.flatnonzero(rows)
            rows = rows.astype(np.int64).reshape(-1)
        t_rows = torch.from_numpy(rows)
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if v is None:
                out[f.name] = None
            elif isinstance(v, np.ndarray):
                out[f.name] = v[rows]
            elif isinstance(v, list):
                out[f.name] = [v[i] for i in rows]
            else:
                out[f.name] = v[t_rows.to(v.device)]
        return StepBatch(**out)

    def pad_to(self, n: int) -> StepBatch:
        """Append padding rows up to ``n`` rows; real rows are unchanged.

        Padding rows copy row 0's prompt and response token ids (so a forward pass over them is
        well defined) but have ``sample_mask=False``, an all-zero ``response_mask``, zero
        log-probs and values, reward 0, step 0 and keys None: they enter no statistic and no
        loss.

        Raises:
            ValueError: If ``n`` is smaller than the batch, or the batch is empty.
        """
        b = len(self)
        if n < b:
            raise ValueError(f"pad_to({n}): the batch already has {b} rows")
        if n == b:
            return self
        if b == 0:
            raise ValueError("pad_to: cannot pad an empty batch (no row to copy token ids from)")
        k = n - b
        pad = self.select([0] * k)
        pad.response_mask = torch.zeros_like(pad.response_mask)
        pad.step_reward = torch.zeros_like(pad.step_reward)
        pad.step_index = torch.zeros_like(pad.step_index)
        for name in _KEY_FIELDS:
            if getattr(pad, name) is not None:
                setattr(pad, name, np.full(k, None, dtype=object))
        for name in _ROW_BOOL_FIELDS:
            setattr(pad, name, torch.zeros(k, dtype=torch.bool))
        for name in _TOKEN_FLOAT_FIELDS:
            if getattr(pad, name) is not None:
                setattr(pad, name, torch.zeros_like(getattr(pad, name)))
        return StepBatch.concat([self, pad])

    @staticmethod
    def concat(batches: Sequence[StepBatch], pad_token_id: int = 0) -> StepBatch:
        """Concatenate batches row-wise.

        Shorter responses are right-padded to the longest L (masks, log-probs and values 0);
        padded prompt tensors are left-padded to the widest P with ``prompt_mask`` 0. An optional
        field must be present in all batches or in none.

        Raises:
            ValueError: On an empty list or a field present in some batches only.
        """
        if not batches:
            raise ValueError("StepBatch.concat needs at least one batch")
        width = max(b.response_length for b in batches)
        out: dict[str, Any] = {}
        for f in dataclasses.fields(StepBatch):
            if f.name in ("prompt_ids", "prompt_mask"):
                continue  # _concat_prompts below
            vals = [getattr(b, f.name) for b in batches]
            present = [v is not None for v in vals]
            if not all(present):
                if any(present):
                    raise ValueError(
                        f"StepBatch.concat: field {f.name!r} is set in some batches only"
                    )
                out[f.name] = None
                continue
            if isinstance(vals[0], list):
                out[f.name] = [t for v in vals for t in v]
            elif isinstance(vals[0], np.ndarray):
                out[f.name] = (
                    np.concatenate([object_array(v) for v in vals])
                    if len({v.dtype.kind for v in vals}) > 1
                    else np.concatenate(vals)
                )
            elif vals[0].dim() == 2:
                fill = pad_token_id if f.name == "response_ids" else 0
                out[f.name] = torch.cat(
                    [torch.nn.functional.pad(v, (0, width - v.shape[1]), value=fill) for v in vals]
                )
            else:
                out[f.name] = torch.cat(vals)
        out.update(_concat_prompts(batches, pad_token_id))
        return StepBatch(**out)

    def to(self, device: torch.device | str) -> StepBatch:
        """A copy with every tensor moved to ``device`` (key arrays stay on the host)."""
        out = {}
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if isinstance(v, torch.Tensor):
                v = v.to(device)
            elif isinstance(v, list):
                v = [p.to(device) for p in v]
            out[f.name] = v
        return StepBatch(**out)

    def token_level_rewards(self, per_row: Any = None) -> torch.Tensor:
        """(B, L) float32 with each row's reward on its last action token (0 elsewhere).

        Args:
            per_row: (B,) values to place; defaults to ``step_reward``.
        """
        vals = (
            self.step_reward if per_row is None else torch.as_tensor(per_row, dtype=torch.float64)
        )
        mask = self.response_mask != 0
        pos = torch.arange(self.response_length, device=mask.device).expand_as(mask)
        last = torch.where(mask, pos, -1).max(dim=1).values
        out = torch.zeros(mask.shape, dtype=torch.float32, device=mask.device)
        has = (last >= 0) & self.sample_mask.to(mask.device)
        rows = torch.nonzero(has).squeeze(1)
        out[rows, last[rows]] = vals.to(out.device)[rows].to(torch.float32)
        return out


def _concat_prompts(batches: Sequence[StepBatch], pad_token_id: int) -> dict[str, Any]:
    prompts = [b.prompt_ids for b in batches]
    if all(p is None for p in prompts):
        return {"prompt_ids": None, "prompt_mask": None}
    if any(p is None for p in prompts):
        raise ValueError("StepBatch.concat: field 'prompt_ids' is set in some batches only")
    if all(isinstance(p, list) for p in prompts):
        return {"prompt_ids": [p for ps in prompts for p in ps], "prompt_mask": None}
    if not all(isinstance(p, torch.Tensor) for p in prompts):
        raise ValueError(
            "StepBatch.concat: prompt_ids is a list in some batches, a tensor in others"
        )
    width = max(p.shape[1] for p in prompts)
    ids, masks = [], []
    for b in batches:
        mask = b.prompt_mask if b.prompt_mask is not None else torch.ones_like(b.prompt_ids)
        gap = width - b.prompt_ids.shape[1]
        ids.append(torch.nn.functional.pad(b.prompt_ids, (gap, 0), value=pad_token_id))
        masks.append(torch.nn.functional.pad(mask, (gap, 0), value=0))
    return {"prompt_ids": torch.cat(ids), "prompt_mask": torch.cat(masks)}


def save_batch(batch: StepBatch, path: Any) -> None:
    """Write ``batch`` as tensors and plain lists only, readable with ``weights_only=True``."""
    fields = {}
    for f in dataclasses.fields(batch):
        value = getattr(batch, f.name)
        fields[f.name] = value.tolist() if isinstance(value, np.ndarray) else value
    torch.save(fields, path)


def load_batch(path: Any) -> StepBatch:
    """Read a :func:`save_batch` file; nothing in it is unpickled into code."""
    return StepBatch(**torch.load(path, weights_only=True))
