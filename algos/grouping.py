"""Grouping primitives: key factorisation and per-group statistics, vectorised.

Every group-relative estimator (GRPO, RLOO, REINFORCE++-baseline, GiGPO) reduces to two steps:
map each row's group key to a contiguous integer id (:func:`factorize`), then normalise a
per-row value by its group's mean and standard deviation (:func:`group_normalize`). Both run in
O(B) numpy work with no Python loop over groups.

Two departures from the upstream loops (verl, verl-agent) are deliberate (docs/algorithms.md, conventions):

* statistics are float64 and two-pass, and a group whose values are all equal gets a deviation
  of exactly 0. Upstream computes them in float32, where ``std`` of identical non-binary values
  comes out around 1e-7, and ``(x - mean) / (std + 1e-6)`` then gives every member the same
  O(0.1) advantage;
* group sums are accumulated in a canonical order (rows sorted by value inside each group), so
  the result is bit-for-bit the same whatever order the rows arrive in.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Sequence
from typing import Any, Literal, NamedTuple

import numpy as np

SingletonRule = Literal["raw", "self", "zero"]
_SINGLETON_RULES = ("raw", "self", "zero")


def to_hashable(obj: Any) -> Hashable:
    """Return a hashable key that is equal for two objects iff they have the same type and value.

    Upstream's ``to_hashable`` flattens arrays to tuples and passes numbers through, so a 2x2
    array collides with a (4,) array holding the same values, and ``1``, ``1.0`` and ``True``
    collide. Here every non-string key is tagged with its kind:

    * ``str`` passes through unchanged (the fast path for text anchors); ``numpy.str_`` becomes
      ``str``, and other numpy scalars are treated like the Python scalar they hold;
    * ``bool``, ``int``, ``float``, ``complex``, ``bytes`` and ``None`` are tagged with their type,
      so ``1``, ``1.0`` and ``True`` are three keys (all NaNs are one key);
    * arrays (numpy, or anything with ``.detach().cpu().numpy()`` such as a torch tensor) become
      ``('nd', dtype, shape, raw bytes)``; object arrays recurse element-wise;
    * ``tuple`` and ``list`` recurse and stay distinct from each other; ``dict``, ``set`` and
      ``frozenset`` become order-independent frozensets;
    * any other hashable object is keyed by its type and itself.

    Args:
        obj: The key to canonicalise.

    Returns:
        A hashable value; equal outputs mean "same group".

    Raises:
        TypeError: If ``obj`` (or something inside it) is unhashable and of no kind listed above.
            Pass a ``key_fn`` to the caller to map such observations to a key.

    >>> to_hashable(1) == to_hashable(1.0)
    False
    >>> to_hashable(np.zeros((2, 2))) == to_hashable(np.zeros(4))
    False
    """
    kind = type(obj)
    if kind is str:
        return obj
    if isinstance(obj, np.generic):
        return to_hashable(obj.item()) if not isinstance(obj, np.str_) else str(obj)
    if kind is bool or kind is int or kind is complex or kind is bytes:
        return (kind.__name__, obj)
    if kind is float:
        return ("float", "nan") if math.isnan(obj) else ("float", obj)
    if obj is None:
        return ("none",)
    if not isinstance(obj, np.ndarray) and hasattr(obj, "detach") and hasattr(obj, "numpy"):
        obj = obj.detach().cpu().numpy()  # torch tensor: same key as the equal numpy array
    if isinstance(obj, np.ndarray):
        if obj.dtype.hasobject:
            return ("nd_obj", obj.shape, tuple(to_hashable(v) for v in obj.ravel()))
        return ("nd", obj.dtype.str, obj.shape, np.ascontiguousarray(obj).tobytes())
    if kind is tuple or kind is list:
        return (kind.__name__, tuple(to_hashable(v) for v in obj))
    if isinstance(obj, dict):
        return ("dict", frozenset((to_hashable(k), to_hashable(v)) for k, v in obj.items()))
    if isinstance(obj, (set, frozenset)):
        return ("set", frozenset(to_hashable(v) for v in obj))
    if isinstance(obj, str):  # str subclass other than numpy's
        return str(obj)
    try:
        hash(obj)
    except TypeError:
        raise TypeError(
            f"cannot use an object of type {kind.__qualname__} as a group key: it is not "
            "hashable and not an array, sequence or mapping; pass key_fn= to map it to a key"
        ) from None
    return ("obj", kind.__module__, kind.__qualname__, obj)


def _as_numeric_array(keys: Any) -> np.ndarray | None:
    """Return ``keys`` as a 1-D numeric numpy array when it already is one, else None."""
    if hasattr(keys, "detach") and hasattr(keys, "numpy"):
        keys = keys.detach().cpu().numpy()
    if isinstance(keys, np.ndarray) and keys.dtype.kind in "biuf" and keys.ndim == 1:
        return keys
    return None


def _factorize_small_ints(keys: np.ndarray) -> tuple[np.ndarray, list[Any]]:
    """O(n) factorize for non-negative ints below 4n (ids, counters): a table instead of a sort."""
    n = keys.size
    first = np.full(int(keys.max()) + 1, n, dtype=np.int64)
    np.minimum.at(first, keys, np.arange(n, dtype=np.int64))
    present = np.flatnonzero(first < n)
    values = present[np.argsort(first[present], kind="stable")]  # first-seen order
    table = np.empty(first.size, dtype=np.int64)
    table[values] = np.arange(values.size, dtype=np.int64)
    return table[keys], values.tolist()


def factorize(
    keys: Sequence[Any] | np.ndarray, key_fn: Callable[[Any], Hashable] | None = None
) -> tuple[np.ndarray, list[Any]]:
    """Map keys to contiguous ids 0..G-1 in first-seen order.

    Numeric arrays and tensors take a ``np.unique`` fast path. Anything else (strings, mixed
    types, arrays as keys) goes through a dict keyed by ``key_fn(key)`` (default
    :func:`to_hashable`), which never needs an ordering and so never raises ``TypeError`` on
    mixed or unorderable keys.

    Args:
        keys: (B,) keys: a list, an object/str/numeric numpy array or a 1-D tensor.
        key_fn: Maps one key to a hashable canonical key; two rows share an id iff their
            canonical keys are equal. Defaults to :func:`to_hashable`. Ignored on the numeric
            fast path.

    Returns:
        ``(inv, uniques)``: ``inv`` (B,) int64 with ``keys[i]`` equivalent to
        ``uniques[inv[i]]``; ``uniques`` holds the first occurrence of each key, in order.

    >>> factorize(["b", "a", "b", 1, 1.0, True])[0].tolist()
    [0, 1, 0, 2, 3, 4]
    """
    num = _as_numeric_array(keys)
    if num is not None and key_fn is None:
        if num.dtype.kind == "f" and np.isnan(num).any():
            num = np.where(np.isnan(num), np.nan, num)  # all NaNs become one key in np.unique
        if num.dtype.kind in "iub" and num.size and 0 <= num.min() and num.max() < 4 * num.size:
            return _factorize_small_ints(num.astype(np.int64, copy=False))
        uniq, first, inv = np.unique(num, return_index=True, return_inverse=True)
        order = np.argsort(first, kind="stable")  # sorted ids -> first-seen ids
        rank = np.empty(len(order), dtype=np.int64)
        rank[order] = np.arange(len(order), dtype=np.int64)
        return rank[inv.reshape(-1)], uniq[order].tolist()
    if isinstance(keys, np.ndarray) and keys.ndim != 1:
        raise ValueError(f"keys must be one-dimensional (one key per row), got shape {keys.shape}")
    seq = keys if isinstance(keys, (list, np.ndarray)) else list(keys)
    kinds = set(map(type, seq))
    if key_fn is None and len(kinds) == 1 and kinds <= {str, np.str_, int, bytes}:
        # One plain type: Python equality already is "same type and value", so the keys go
        # into the dict as they are. dict.fromkeys and map run at C speed (no per-row Python
        # frame), which keeps 1M uuid or anchor strings well under a second.
        canon = seq
    else:
        canon = list(map(to_hashable if key_fn is None else key_fn, seq))
    table = {k: i for i, k in enumerate(dict.fromkeys(canon))}
    inv = np.fromiter(map(table.__getitem__, canon), dtype=np.int64, count=len(canon))
    return inv, [seq[r] for r in first_rows(inv)]


def first_rows(inv: np.ndarray) -> np.ndarray:
    """Row of the first occurrence of each id, for ids in first-seen order (as factorize gives).

    Args:
        inv: (B,) int64 ids from :func:`factorize`.

    Returns:
        (G,) int64 row numbers, ``first_rows(inv)[g]`` is the first row with id g.
    """
    if inv.size == 0:
        return np.zeros(0, dtype=np.int64)
    prev_max = np.maximum.accumulate(np.concatenate(([-1], inv[:-1])))
    return np.flatnonzero(inv > prev_max)


class GroupStats(NamedTuple):
    """Per-group statistics from :func:`group_mean_std`.

    Attributes:
        count: (G,) int64 members per group.
        mean: (G,) float64 group mean (0 for an empty group id).
        std: (G,) float64 unbiased (ddof=1) standard deviation; 0 for singletons and constant
            groups.
        dev: (B,) float64 ``x - mean[inv]``, exactly 0 in constant groups.
    """

    count: np.ndarray
    mean: np.ndarray
    std: np.ndarray
    dev: np.ndarray


def group_mean_std(x: Any, inv: Any, n_groups: int | None = None) -> GroupStats:
    """Group mean, unbiased std and deviations, with constant groups exactly 0.

    Two-pass and float64: ``mean = sum(x)/n``, then ``std = sqrt(sum((x-mean)^2)/max(n-1, 1))``.
    Rows are summed in (group, value) order, so the result does not depend on the row order.

    Args:
        x: (B,) values (cast to float64). Must be finite.
        inv: (B,) int group ids in ``[0, n_groups)``.
        n_groups: Number of groups G; defaults to ``inv.max() + 1``.

    Returns:
        A :class:`GroupStats`.

    Raises:
        ValueError: If shapes differ or ``x`` holds NaN or inf.
    """
    x = np.asarray(x, dtype=np.float64).reshape(-1)
    inv = np.asarray(inv, dtype=np.int64).reshape(-1)
    if x.shape != inv.shape:
        raise ValueError(
            f"x has shape {x.shape} but inv has shape {inv.shape}; need one id per value"
        )
    if not np.isfinite(x).all():
        bad = int(np.flatnonzero(~np.isfinite(x))[0])
        raise ValueError(f"x[{bad}] = {x[bad]} is not finite; group statistics need finite values")
    g = int(inv.max()) + 1 if n_groups is None and inv.size else int(n_groups or 0)
    order = np.lexsort((x, inv))
    inv_s, x_s = inv[order], x[order]
    count = np.bincount(inv_s, minlength=g)
    mean = np.bincount(inv_s, weights=x_s, minlength=g) / np.maximum(count, 1)
    dev_s = x_s - mean[inv_s]
    # Sorted by value inside each group, so a group is constant iff its first and last members
    # are equal. Zeroing those deviations removes float rounding of the mean entirely.
    ends = np.cumsum(count)
    starts = ends - count
    nonempty = count > 0
    constant = np.zeros(g, dtype=bool)
    constant[nonempty] = x_s[starts[nonempty]] == x_s[ends[nonempty] - 1]
    dev_s[constant[inv_s]] = 0.0
    var = np.bincount(inv_s, weights=dev_s * dev_s, minlength=g) / np.maximum(count - 1, 1)
    dev = np.empty_like(dev_s)
    dev[order] = dev_s
    return GroupStats(count=count, mean=mean, std=np.sqrt(var), dev=dev)


def group_normalize(
    x: Any,
    inv: Any,
    *,
    use_std: bool,
    eps: float = 1e-6,
    singleton: SingletonRule = "raw",
    n_groups: int | None = None,
) -> np.ndarray:
    """Group-relative score: ``(x - mean_g) / (std_g + eps)``, or ``x - mean_g`` without std.

    ``eps`` is added to the standard deviation, not to the variance (as upstream). A constant
    group gives exactly 0. A group with one member follows ``singleton``:

    * ``"raw"``: mean 0 and std 1, so the output is ``x / (1 + eps)`` with std, ``x`` without
      (verl GRPO; GiGPO's episode level);
    * ``"self"``: mean = its own value, so 0 (GiGPO's step level);
    * ``"zero"``: 0 (verl ``rloo_vectorized``, ROLL).

    Args:
        x: (B,) values, finite.
        inv: (B,) int group ids (see :func:`factorize`).
        use_std: Divide by ``std + eps``.
        eps: Added to the std.
        singleton: Rule for one-member groups.
        n_groups: Number of groups; defaults to ``inv.max() + 1``.

    Returns:
        (B,) float64.

    Raises:
        ValueError: On an unknown ``singleton`` rule or non-finite ``x``.

    >>> group_normalize([1.0, 0.0, 1.0, 1.0, 0.5], [0, 0, 0, 0, 1], use_std=False).tolist()
    [0.25, -0.75, 0.25, 0.25, 0.5]
    """
    if singleton not in _SINGLETON_RULES:
        raise ValueError(f"singleton={singleton!r} is not one of {_SINGLETON_RULES}")
    x = np.asarray(x, dtype=np.float64).reshape(-1)
    stats = group_mean_std(x, inv, n_groups)
    inv = np.asarray(inv, dtype=np.int64).reshape(-1)
    out = stats.dev / (stats.std[inv] + eps) if use_std else stats.dev.copy()
    single = stats.count[inv] == 1
    if singleton == "raw":
        out[single] = x[single] / (1.0 + eps) if use_std else x[single]
    else:
        out[single] = 0.0
    return out


def masked_whiten(x: np.ndarray, weight: np.ndarray, *, eps: float = 1e-8) -> np.ndarray:
    """Whiten ``x`` over the entries with positive weight: ``(x - mean) / sqrt(var + eps)``.

    The weighted mean and the unbiased (``n/(n-1)``) weighted variance of verl's
    ``masked_whiten``, in float64; ``weight`` is a token count per entry, so whitening row
    scalars with ``weight = tokens per row`` equals whitening the broadcast token matrix.
    If every weighted value is equal, or fewer than two tokens carry weight, the result is 0
    there (verl raises for fewer than two tokens; a centred single value is 0).

    Args:
        x: (N,) values.
        weight: (N,) non-negative counts; 0 excludes an entry (its output is 0).
        eps: Added to the variance.

    Returns:
        (N,) float64.
    """
    x = np.asarray(x, dtype=np.float64)
    w = np.asarray(weight, dtype=np.float64)
    out = np.zeros_like(x)
    keep = w > 0
    n = w[keep].sum()
    if n < 2:
        return out
    xs, ws = x[keep], w[keep]
    if xs.min() == xs.max():
        return out
    order = np.argsort(xs, kind="stable")  # canonical summation order: row-order invariant
    xs_o, ws_o = xs[order], ws[order]
    mean = float(np.sum(xs_o * ws_o) / n)
    dev = xs - mean
    var = float(np.sum(ws_o * (dev[order] ** 2)) / n) * n / (n - 1)
    out[keep] = dev / math.sqrt(var + eps)
    return out
