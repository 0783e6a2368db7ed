"""Policy and value losses: aggregation, PPO clip, GSPO, REINFORCE, KL estimators, entropy.

All token matrices are (B, L) and aligned with the response tokens. Masked positions may hold
garbage (even NaN): they are selected away with ``torch.where`` and never multiplied by 0.
Metrics are returned as detached 0-d tensors (no host sync inside the loss).
Formulas, upstream sources and test values: docs/algorithms.md.
"""

from __future__ import annotations

from typing import Any

import torch

AGG_MODES = ("token-mean", "seq-mean-token-sum", "seq-mean-token-mean", "seq-mean-token-sum-norm")


def _masked(loss_mat: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    return torch.where(mask != 0, loss_mat * mask.to(loss_mat.dtype), torch.zeros_like(loss_mat))


def _safe_div(num: torch.Tensor, denom: Any) -> torch.Tensor:
    """``num / denom``; 0 (with the graph kept) when the denominator is 0.

    A tensor denominator counts this call's own tokens or sequences, so it is 0 only when the
    mask is empty and ``num`` is already 0: clamping avoids a host sync on the accelerator.
    """
    if torch.is_tensor(denom):
        return num / denom.clamp(min=1)
    return num / denom if denom > 0 else num * 0.0


def masked_mean(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean of ``x`` over ``mask != 0`` (0 when the mask is empty), as a detached float tensor."""
    m = mask != 0
    total = torch.where(m, x.detach().to(torch.float32), 0.0).sum()
    return total / m.sum().clamp(min=1)


def check_token_shapes(response_mask: torch.Tensor, **tensors: torch.Tensor) -> None:
    """Raise naming the first argument whose shape is not ``response_mask``'s (B, L).

    Broadcasting would hide a mistake: (B,) per-row advantages would spread along the tokens
    whenever B happens to equal the response length.
    """
    shape = tuple(response_mask.shape)
    if len(shape) != 2:
        raise ValueError(f"response_mask must have shape (B, L), got {shape}")
    for name, t in tensors.items():
        if t is not None and tuple(t.shape) != shape:
            raise ValueError(
                f"{name} has shape {tuple(t.shape)}, response_mask {shape}: pass one value per "
                "response token (broadcast a per-row value with value[:, None] * response_mask)"
            )


def agg_loss(
    loss_mat: torch.Tensor,
    mask: torch.Tensor,
    mode: str,
    *,
    batch_num_tokens: float | None = None,
    global_batch_size: float | None = None,
    loss_scale_factor: float | None = None,
    dp_size: int = 1,
) -> torch.Tensor:
    """Aggregate a (B, L) per-token loss into a scalar.

    ``token-mean``: ``sum(m*l) / batch_num_tokens * dp_size``. ``seq-mean-token-sum`` and
    ``seq-mean-token-mean``: per-sequence token sum or token mean, summed over sequences with at
    least one token and divided by ``global_batch_size`` then multiplied by ``dp_size``.
    ``seq-mean-token-sum-norm`` (Dr.GRPO): ``sum(m*l) / loss_scale_factor`` (default L), with no
    division by the number of sequences.

    For exact gradient accumulation, pass the **mini-batch** totals (tokens, and sequences that
    have tokens) as ``batch_num_tokens`` / ``global_batch_size`` to every micro-batch; they
    default to this call's own totals. An empty denominator gives a zero loss that keeps the
    graph (Agent-R1 #88), never NaN.

    Args:
        loss_mat: (B, L) per-token loss.
        mask: (B, L) 1 where a token counts.
        mode: One of :data:`AGG_MODES`.
        batch_num_tokens: Token count of the whole mini-batch (``token-mean``).
        global_batch_size: Sequences with tokens in the whole mini-batch (seq modes).
        loss_scale_factor: The constant K of ``seq-mean-token-sum-norm``.
        dp_size: Data-parallel world size (gradients are averaged across ranks).

    Returns:
        0-d tensor.

    Raises:
        ValueError: On an unknown mode.

    >>> l = torch.tensor([[1.0, 2, 3], [4, 0, 0]]); m = torch.tensor([[1.0, 1, 1], [1, 0, 0]])
    >>> [round(agg_loss(l, m, k).item(), 3) for k in AGG_MODES]
    [2.5, 5.0, 3.0, 3.333]
    """
    if mode not in AGG_MODES:
        raise ValueError(f"unknown loss aggregation mode {mode!r}; valid: {list(AGG_MODES)}")
    if loss_mat.shape != mask.shape:
        raise ValueError(f"loss_mat {tuple(loss_mat.shape)} and mask {tuple(mask.shape)} differ")
    masked = _masked(loss_mat, mask)
    if mode == "seq-mean-token-sum-norm":
        k = loss_mat.shape[-1] if loss_scale_factor is None else loss_scale_factor
        return _safe_div(masked.sum(), k)
    if mode == "token-mean":
        denom = (mask != 0).sum() if batch_num_tokens is None else batch_num_tokens
        return _safe_div(masked.sum(), denom) * dp_size
    seq_tokens = (mask != 0).sum(-1)
    seq_loss = masked.sum(-1)
    if mode == "seq-mean-token-mean":
        seq_loss = seq_loss / (seq_tokens.to(seq_loss.dtype) + 1e-8)
    denom = (seq_tokens > 0).sum() if global_batch_size is None else global_batch_size
    return _safe_div(seq_loss.sum(), denom) * dp_size


def ppo_clip_loss(
    old_logp: torch.Tensor,
    logp: torch.Tensor,
    advantages: torch.Tensor,
    response_mask: torch.Tensor,
    *,
    clip_low: float = 0.2,
    clip_high: float = 0.2,
    clip_c: float = 3.0,
    agg: str = "token-mean",
    batch_num_tokens: float | None = None,
    global_batch_size: float | None = None,
    loss_scale_factor: float | None = None,
    dp_size: int = 1,
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """PPO clipped surrogate with dual clip and clip-higher (verl ``compute_policy_loss_vanilla``).

    ``rho = exp(clamp(logp - old_logp, -20, 20))``;
    ``l = max(-A*rho, -A*clamp(rho, 1-clip_low, 1+clip_high))``, and for ``A < 0`` also
    ``l = min(l, -A*clip_c)`` (dual clip, arXiv:1912.09729).

    Args:
        old_logp: (B, L) log-probs of the behaviour policy.
        logp: (B, L) log-probs of the current policy (requires grad).
        advantages: (B, L) advantages.
        response_mask: (B, L) 1 on action tokens.
        clip_low: epsilon below 1.
        clip_high: epsilon above 1 (DAPO's clip-higher raises it, e.g. to 0.28).
        clip_c: Dual-clip constant, > 1.
        agg: Aggregation mode (see :func:`agg_loss`).
        batch_num_tokens: Mini-batch token count for ``agg``.
        global_batch_size: Mini-batch sequence count for ``agg``.
        loss_scale_factor: K for ``seq-mean-token-sum-norm``.
        dp_size: Data-parallel world size.

    Returns:
        ``(loss, metrics)`` with metrics ``pg_clipfrac`` (share of tokens where the clip is
        active), ``pg_clipfrac_lower`` (dual clip active), ``ppo_kl`` (mean of old - new logp).

    Raises:
        ValueError: If ``clip_c <= 1``, or a tensor's shape is not ``response_mask``'s.
    """
    check_token_shapes(response_mask, old_logp=old_logp, logp=logp, advantages=advantages)
    if clip_c <= 1.0:
        raise ValueError(f"clip_c={clip_c} must be greater than 1 (dual-clip lower bound)")
    neg_kl = logp - old_logp
    ratio = torch.exp(torch.clamp(neg_kl, -20.0, 20.0))
    l1 = -advantages * ratio
    l2 = -advantages * torch.clamp(ratio, 1.0 - clip_low, 1.0 + clip_high)
    clipped = torch.maximum(l1, l2)
    l3 = -advantages * clip_c
    loss_mat = torch.where(advantages < 0, torch.minimum(clipped, l3), clipped)
    loss = agg_loss(
        loss_mat,
        response_mask,
        agg,
        batch_num_tokens=batch_num_tokens,
        global_batch_size=global_batch_size,
        loss_scale_factor=loss_scale_factor,
        dp_size=dp_size,
    )
    metrics = {
        "pg_clipfrac": masked_mean((l2 > l1).float(), response_mask),
        "pg_clipfrac_lower": masked_mean(
            ((clipped > l3) & (advantages < 0)).float(), response_mask
        ),
        "ppo_kl": masked_mean(-neg_kl, response_mask),
    }
    return loss, metrics


def gspo_loss(
    old_logp: torch.Tensor,
    logp: torch.Tensor,
    advantages: torch.Tensor,
    response_mask: torch.Tensor,
    *,
    clip_low: float = 3e-4,
    clip_high: float = 4e-4,
    agg: str = "seq-mean-token-mean",
    global_batch_size: float | None = None,
    dp_size: int = 1,
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """GSPO: one ratio per sequence (geometric mean of token ratios), token-level gradients.

    ``log s_i = sum_t m*(logp - old_logp) / max(sum_t m, 1)``; per token the value is
    ``s_i`` and the gradient flows through that token's logp
    (``log s_{i,t} = logp_t - sg(logp_t) + sg(log s_i)``, clamped at 10);
    ``l = max(-A*s, -A*clamp(s, 1-clip_low, 1+clip_high))``, no dual clip. Aggregation is always
    ``seq-mean-token-mean`` (arXiv:2507.18071). This is StepPO's ratio: the action is the whole
    response.

    Args:
        old_logp: (B, L) behaviour log-probs.
        logp: (B, L) current log-probs.
        advantages: (B, L) advantages (constant along a row).
        response_mask: (B, L) 1 on action tokens.
        clip_low: epsilon below 1 (the paper's 3e-4).
        clip_high: epsilon above 1 (the paper's 4e-4).
        agg: Must be ``"seq-mean-token-mean"``, the only mode GSPO is defined with.
        global_batch_size: Mini-batch sequence count.
        dp_size: Data-parallel world size.

    Returns:
        ``(loss, metrics)`` with ``pg_clipfrac``, ``pg_clipfrac_lower`` (always 0) and
        ``ppo_kl``.

    Raises:
        ValueError: Another ``agg``, or a tensor's shape is not ``response_mask``'s.
    """
    if agg != "seq-mean-token-mean":
        raise ValueError(f"gspo_loss aggregates with 'seq-mean-token-mean' only, got agg={agg!r}")
    check_token_shapes(response_mask, old_logp=old_logp, logp=logp, advantages=advantages)
    m = response_mask != 0
    neg_kl = torch.where(m, logp - old_logp, torch.zeros_like(logp))
    seq_len = m.sum(-1).clamp(min=1).to(logp.dtype)
    log_s_seq = neg_kl.sum(-1) / seq_len
    log_s = logp - logp.detach() + log_s_seq.detach().unsqueeze(-1)
    ratio = torch.exp(torch.clamp(log_s, max=10.0))
    l1 = -advantages * ratio
    l2 = -advantages * torch.clamp(ratio, 1.0 - clip_low, 1.0 + clip_high)
    loss_mat = torch.maximum(l1, l2)
    loss = agg_loss(
        loss_mat,
        response_mask,
        "seq-mean-token-mean",
        global_batch_size=global_batch_size,
        dp_size=dp_size,
    )
    metrics = {
        "pg_clipfrac": masked_mean((l2 > l1).float(), response_mask),
        "pg_clipfrac_lower": torch.zeros((), dtype=torch.float32),
        "ppo_kl": masked_mean(-neg_kl, response_mask),
    }
    return loss, metrics


def reinforce_loss(
    old_logp: torch.Tensor,
    logp: torch.Tensor,
    advantages: torch.Tensor,
    response_mask: torch.Tensor,
    *,
    agg: str = "seq-mean-token-sum",
    batch_num_tokens: float | None = None,
    global_batch_size: float | None = None,
    loss_scale_factor: float | None = None,
    dp_size: int = 1,
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """REINFORCE (Agent-R1 ``reinforce``): ``l = -A * logp``, no ratio, no clip.

    ``old_logp`` only feeds the ``ppo_kl`` metric.

    Returns:
        ``(loss, metrics)`` with ``ppo_kl``.

    Raises:
        ValueError: A tensor's shape is not ``response_mask``'s.
    """
    check_token_shapes(response_mask, old_logp=old_logp, logp=logp, advantages=advantages)
    loss = agg_loss(
        -advantages * logp,
        response_mask,
        agg,
        batch_num_tokens=batch_num_tokens,
        global_batch_size=global_batch_size,
        loss_scale_factor=loss_scale_factor,
        dp_size=dp_size,
    )
    return loss, {"ppo_kl": masked_mean(old_logp - logp, response_mask)}


_KL_BASE = {
    "kl": "k1",
    "k1": "k1",
    "abs": "abs",
    "mse": "k2",
    "k2": "k2",
    "low_var_kl": "k3",
    "k3": "k3",
}
KL_KINDS = (*_KL_BASE, *(k + "+" for k in _KL_BASE), "full")


def kl_estimate(logp: torch.Tensor, ref_logp: torch.Tensor, kind: str) -> torch.Tensor:
    """Per-token KL(pi || ref) estimate from sampled-token log-probs (Schulman's k1/k2/k3).

    * ``k1``/``kl``: ``logp - ref``; ``abs``: ``|logp - ref|``; ``k2``/``mse``:
      ``0.5 * (logp - ref)^2``;
    * ``k3``/``low_var_kl``: ``d = clamp(ref - logp, -20, 20)``, ``clamp(e^d - d - 1, -10, 10)``;
    * a trailing ``+`` (``k1+``, ``k3+``, ...) is straight-through: the value of the base
      estimator with the gradient of k2 (``d/dlogp = logp - ref``), an unbiased KL gradient.

    Args:
        logp: (B, L) current log-probs.
        ref_logp: (B, L) reference log-probs.
        kind: One of :data:`KL_KINDS`.

    Returns:
        (B, L) tensor.

    Raises:
        NotImplementedError: For ``"full"`` (needs the whole distribution).
        ValueError: On an unknown kind.
    """
    if kind == "full":
        raise NotImplementedError("kind='full' needs full-vocabulary log-probs; use k1, k2 or k3")
    straight = kind.endswith("+")
    base = _KL_BASE.get(kind[:-1] if straight else kind)
    if base is None:
        raise ValueError(f"unknown KL estimator {kind!r}; valid: {list(KL_KINDS)}")
    diff = logp - ref_logp
    if base == "k1":
        value = diff
    elif base == "abs":
        value = diff.abs()
    elif base == "k2":
        value = 0.5 * diff.square()
    else:
        d = torch.clamp(-diff, -20.0, 20.0)
        value = torch.clamp(torch.exp(d) - d - 1.0, -10.0, 10.0)
    if not straight:
        return value
    k2 = 0.5 * diff.square()
    return value.detach() + (k2 - k2.detach())


def entropy_from_logits(logits: torch.Tensor) -> torch.Tensor:
    """Entropy of ``softmax(logits)`` over the last axis: (..., V) -> (...).

    ``H = logsumexp(z) - sum(softmax(z) * z)``, stable for large logits.
    """
    probs = torch.softmax(logits, dim=-1)
    return torch.logsumexp(logits, dim=-1) - (probs * logits).sum(-1)


def value_loss(
    vpred: torch.Tensor,
    returns: torch.Tensor,
    old_values: torch.Tensor,
    value_mask: torch.Tensor,
    *,
    clip_eps: float = 0.5,
    agg: str = "token-mean",
    half: bool = True,
    batch_num_tokens: float | None = None,
    global_batch_size: float | None = None,
    loss_scale_factor: float | None = None,
    dp_size: int = 1,
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """Clipped value loss: ``agg(max((v-R)^2, (vclip-R)^2))``, times 0.5 when ``half``.

    ``vclip = old + clamp(v - old, -clip_eps, clip_eps)``. verl and Agent-R1 use the 0.5
    (``half=True``); verl-agent does not. For StepPO pass :func:`value_mask` so only position 0
    (V(s_t)) of real rows is trained.

    Args:
        vpred: (B, L) current critic values.
        returns: (B, L) targets.
        old_values: (B, L) critic values at rollout time.
        value_mask: (B, L) 1 where the value is trained.
        clip_eps: Value clip range (``critic.cliprange_value``).
        agg: Aggregation mode.
        half: Multiply by 0.5.
        batch_num_tokens: Mini-batch count of trained positions.
        global_batch_size: Mini-batch count of rows with a trained position.
        loss_scale_factor: K for ``seq-mean-token-sum-norm``.
        dp_size: Data-parallel world size.

    Returns:
        ``(loss, metrics)`` with ``vf_clipfrac`` and ``vpred_mean``.

    Raises:
        ValueError: A tensor's shape is not ``value_mask``'s.
    """
    check_token_shapes(value_mask, vpred=vpred, returns=returns, old_values=old_values)
    vclip = old_values + torch.clamp(vpred - old_values, -clip_eps, clip_eps)
    err = (vpred - returns).square()
    err_clip = (vclip - returns).square()
    loss_mat = torch.maximum(err, err_clip) * (0.5 if half else 1.0)
    loss = agg_loss(
        loss_mat,
        value_mask,
        agg,
        batch_num_tokens=batch_num_tokens,
        global_batch_size=global_batch_size,
        loss_scale_factor=loss_scale_factor,
        dp_size=dp_size,
    )
    metrics = {
        "vf_clipfrac": masked_mean((err_clip > err).float(), value_mask),
        "vpred_mean": masked_mean(vpred, value_mask),
    }
    return loss, metrics


def value_mask(response_mask: torch.Tensor, sample_mask: Any = None) -> torch.Tensor:
    """Step-level critic mask: position 0 only, where the row's first response token is real.

    StepPO's critic learns V(s_t) at the step boundary, ``values[:, 0]``. Agent-R1 v0.1.0
    forced position 0 on for every row, which trained padding rows towards 0; here a row's
    position 0 is on only if ``response_mask[:, 0]`` is set and the row is not padding.

    Args:
        response_mask: (B, L) 1 on action tokens.
        sample_mask: (B,) False for padding rows; None = all real.

    Returns:
        (B, L) tensor of ``response_mask``'s dtype, nonzero only in column 0.
    """
    first = response_mask[:, :1] != 0
    if sample_mask is not None:
        sm = torch.as_tensor(sample_mask, device=response_mask.device).to(torch.bool)
        if sm.shape != (response_mask.shape[0],):
            raise ValueError(
                f"sample_mask must have shape ({response_mask.shape[0]},), got {tuple(sm.shape)}"
            )
        first = first & sm.unsqueeze(1)
    out = torch.zeros_like(response_mask)
    out[:, :1] = first.to(response_mask.dtype)
    return out
