"""Per-row inputs in, token tensors out: the shared plumbing of every advantage estimator.

Estimators take per-row values (rewards, ids, masks) as numpy arrays, lists or tensors, compute
in float64 numpy on the rows with ``sample_mask=True``, and return ``(B, L)`` tensors where each
row's scalar is broadcast over its response tokens. Padding rows get 0.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from algos.batch import object_array


def as_mask(response_mask: Any) -> torch.Tensor:
    """Return ``response_mask`` as a 2-D tensor, or raise naming its shape."""
    mask = torch.as_tensor(response_mask)
    if mask.dim() != 2:
        raise ValueError(
            f"response_mask must have shape (B, L), got {tuple(mask.shape)}; "
            "pass one row of response tokens per step"
        )
    return mask


def out_dtype(mask: torch.Tensor) -> torch.dtype:
    """Advantages are float32, or float64 when the mask itself is float64."""
    return torch.float64 if mask.dtype == torch.float64 else torch.float32


def as_float_rows(values: Any, name: str, n: int) -> np.ndarray:
    """Return ``values`` as a (n,) finite float64 array, or raise naming the field."""
    if isinstance(values, torch.Tensor):
        values = values.detach().cpu().to(torch.float64).numpy()
    arr = np.asarray(values, dtype=np.float64)
    if arr.shape != (n,):
        raise ValueError(f"{name} must have shape ({n},), one value per row; got {arr.shape}")
    if not np.isfinite(arr).all():
        bad = int(np.flatnonzero(~np.isfinite(arr))[0])
        raise ValueError(f"{name}[{bad}] = {arr[bad]} is not finite")
    return arr


def as_key_rows(values: Any, name: str, n: int) -> Any:
    """Check that a per-row key field (``index``, ``traj_uid``, ``anchor_obs``) has n entries."""
    if isinstance(values, torch.Tensor):
        values = values.detach().cpu().numpy()
    size = values.shape[0] if isinstance(values, np.ndarray) and values.ndim else len(values)
    if isinstance(values, np.ndarray) and values.ndim != 1 or size != n:
        shape = values.shape if isinstance(values, np.ndarray) else (size,)
        raise ValueError(f"{name} must have shape ({n},), one key per row; got {shape}")
    return values


def check_finite_tokens(name: str, values: torch.Tensor, mask: torch.Tensor) -> None:
    """Raise naming ``name`` and the first (row, token) where ``values`` is NaN/inf under ``mask``.

    Positions outside the mask may hold anything (they are selected away), so only masked-in
    entries are checked: one NaN there would silently turn the whole batch's whitening NaN.
    """
    bad = mask & ~torch.isfinite(values)
    if bad.any():
        row, col = (int(i) for i in torch.nonzero(bad)[0])
        raise ValueError(f"{name}[{row}, {col}] = {float(values[row, col])} is not finite")


def valid_rows(sample_mask: Any, n: int) -> np.ndarray:
    """Return the (n,) bool array of real rows: ``sample_mask``, or all True when None."""
    if sample_mask is None:
        return np.ones(n, dtype=bool)
    if isinstance(sample_mask, torch.Tensor):
        sample_mask = sample_mask.detach().cpu().numpy()
    arr = np.asarray(sample_mask)
    if arr.shape != (n,):
        raise ValueError(f"sample_mask must have shape ({n},), one flag per row; got {arr.shape}")
    return arr.astype(bool)


def take(values: Any, rows: np.ndarray) -> Any:
    """Select ``rows`` (a bool mask) from a key field; arrays stay arrays, lists become arrays."""
    if rows.all():
        return values
    if isinstance(values, np.ndarray):
        return values[rows]
    return object_array([values[i] for i in np.flatnonzero(rows)])


def scatter_rows(values: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Place per-valid-row ``values`` back into a (B,) float64 array that is 0 elsewhere."""
    if rows.all():
        return np.asarray(values, dtype=np.float64)
    full = np.zeros(rows.shape[0], dtype=np.float64)
    full[rows] = values
    return full


def broadcast_rows(values: np.ndarray, mask: torch.Tensor) -> torch.Tensor:
    """Broadcast a (B,) per-row scalar over the row's tokens: ``values[:, None] * mask``."""
    dtype = out_dtype(mask)
    col = torch.from_numpy(np.ascontiguousarray(values, dtype=np.float64)).to(dtype)
    return col.to(mask.device).unsqueeze(1) * mask.to(dtype)


def token_counts(mask: torch.Tensor) -> np.ndarray:
    """(B,) float64 number of response tokens per row."""
    return (mask != 0).sum(dim=1).cpu().numpy().astype(np.float64)
