"""The update: actor (+ critic, + frozen reference) trained on a batch of step rows.

``ppo_epochs`` passes over shuffled mini-batches of step rows; each mini-batch is one optimiser
step, computed in micro-batches whose gradients accumulate. Every loss term is normalised by the
**mini-batch** totals (tokens, or sequences with tokens) that are passed to ``agg_loss`` for each
micro-batch, so 1 x 8 and 4 x 2 micro-batching give the same gradients (docs/algorithms.md, ``agg_loss``).
Padding rows (``sample_mask=False``) have an all-zero mask and never enter a loss or a count.
A non-finite loss or gradient norm skips the optimiser step and is counted, never applied.

The same code runs every rank of a data-parallel run (:mod:`algos.global_batch`): the
shuffle, the mini-batches and their normalisers come from the global batch, each rank forwards
its own rows of them, and at world size 1 every collective of :class:`~algos.distributed.World`
is a no-op.
"""

from __future__ import annotations

import math
import time
from typing import Any

import torch

from algos import losses
from algos.algorithms import Algorithm
from algos.batch import StepBatch
from algos.distributed import World, plain
from algos.global_batch import GlobalRows
from algos.metrics import progress_bar
from algos.packing import (
    mini_batch_counts,
    pack,
    pack_tree,
    prompt_rows,
    response_width,
    tree_parts,
    tree_sequences,
)
from algos.registry import get_policy_loss
from algos.trunk import cache_keyword, top_cache, top_forward, trunk_depth


def response_logits(model: Any, inputs: dict[str, Any]) -> torch.Tensor:
    """(b, R, V) float32 logits that predict each response token.

    With recorded trunk states in ``inputs`` (:func:`algos.packing.pack`), only the layers
    above the frozen trunk run (:func:`algos.trunk.top_forward`). With a shared prefix
    (``"prefix_ids"``), the prefix runs once and every row attends to its key/value cache,
    which gradients flow through: the same logits as running each row in full.
    """
    width_r = inputs["width_r"]
    mask = inputs["attention_mask"]
    trunk = "trunk" in inputs
    if "tree_index" in inputs:
        return _tree_logits(model, inputs)
    shape = {"position_ids": inputs["position_ids"], "logits_to_keep": width_r + 1}
    if "prefix_ids" in inputs:
        from transformers import DynamicCache

        cache = top_cache(inputs["depth"]) if trunk else DynamicCache()
        rows = mask.shape[0]
        shared = inputs["prefix_ids"].shape[1]
        head = {
            cache_keyword(model): cache, "use_cache": True, "logits_to_keep": 1,
            "position_ids": torch.arange(shared, device=mask.device)[None],
        }  # fmt: skip
        if trunk:
            top_forward(model, inputs["depth"], inputs["prefix_trunk"], **head)
        else:
            model(input_ids=inputs["prefix_ids"], **head)
        cache.batch_repeat_interleave(rows)
        mask = torch.cat([mask.new_ones(rows, shared), mask], 1)
        shape.update({cache_keyword(model): cache, "use_cache": True})
    shape["attention_mask"] = mask
    if trunk:
        out = top_forward(model, inputs["depth"], inputs["trunk"], **shape)
    else:
        out = model(input_ids=inputs["input_ids"], **{"use_cache": False, **shape})
    return out.logits[:, -width_r - 1 : -1].float()


def _tree_logits(model: Any, inputs: dict[str, Any]) -> torch.Tensor:
    """:func:`response_logits` of a token tree (:func:`algos.packing.pack_tree`)."""
    index = inputs["tree_index"]
    keep, where = torch.unique(index, return_inverse=True)  # the head runs once per position
    mask = inputs["attention_mask"]
    if _attention(model) == "eager":  # it adds the mask to the scores
        dtype = next(model.parameters()).dtype
        mask = torch.zeros(mask.shape, dtype=dtype, device=mask.device).masked_fill(
            ~mask, torch.finfo(dtype).min
        )
    shape = {"attention_mask": mask, "position_ids": inputs["position_ids"],
             "logits_to_keep": keep}  # fmt: skip
    if "trunk" in inputs:
        out = top_forward(model, inputs["depth"], inputs["trunk"], **shape)
    else:
        out = model(input_ids=inputs["input_ids"], use_cache=False, **shape)
    return take_rows(out.logits[0], where).float()


def take_rows(logits: torch.Tensor, where: torch.Tensor) -> torch.Tensor:
    """``logits[where]`` (``where`` of any shape, indexing dim 0) with a reproducible backward.

    Several response tokens are often predicted by one tree position, so ``where`` repeats
    indices. The backward of ``logits[where]`` accumulates with ``index_put_``, whose CPU
    kernel (torch 2.13) adds repeated indices in an order that varies from call to call, so
    two runs of one update differed in the last bits; ``index_select``'s backward adds them
    in a fixed order (tested).
    """
    rows = logits.index_select(0, where.reshape(-1))
    return rows.reshape(*where.shape, *logits.shape[1:])


def tree_attention(model: Any) -> bool:
    """Whether ``model``'s attention takes the token tree's 4-D mask (sdpa and eager do)."""
    return _attention(model) in ("sdpa", "eager")


def _attention(model: Any) -> str | None:
    config = getattr(plain(model), "config", None)
    return getattr(config, "_attn_implementation", None)


def token_logp(logits: torch.Tensor, inputs: dict[str, Any], temperature: float) -> torch.Tensor:
    """(b, R) log-prob of each response token under ``softmax(logits / temperature)``."""
    targets = inputs.get("targets")
    if targets is None:
        targets = inputs["input_ids"][:, -inputs["width_r"] :]
    logp = torch.log_softmax(logits / temperature, dim=-1)
    return logp.gather(-1, targets.unsqueeze(-1)).squeeze(-1)


def response_values(critic: Any, inputs: dict[str, Any]) -> torch.Tensor:
    """(b, R) critic values; column 0 is V(prompt), the value at the step boundary."""
    width_r = inputs["width_r"]
    v = critic(inputs["input_ids"], inputs["attention_mask"], inputs["position_ids"])
    return v[:, -width_r - 1 : -1]


class Learner:
    """Actor, optional critic and reference, their optimisers, and the PPO-family update.

    Args:
        model: The policy (a Hugging Face causal LM, possibly peft-wrapped).
        tokenizer: Its tokenizer (pad id for packing).
        algo: The algorithm (loss and critic choice).
        algo_cfg: The ``[algo]`` config section.
        optim_cfg: The ``[optim]`` config section.
        temperature: Rollout temperature (log-probs are taken at the same temperature).
        critic: Optional value model (:class:`~algos.critic.ValueModel`).
        ref_model: Optional frozen reference for the KL term.
        loss_scale_factor: The constant K of ``seq-mean-token-sum-norm`` (Dr.GRPO); the
            trainer passes the response budget. None: each mini-batch's response width.
        world: The data-parallel world (default: one process); ``model`` and ``critic`` are
            already wrapped for it (:meth:`~algos.distributed.World.wrap`).
    """

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        algo: Algorithm,
        algo_cfg: Any,
        optim_cfg: Any,
        *,
        temperature: float = 1.0,
        critic: Any = None,
        ref_model: Any = None,
        loss_scale_factor: float | None = None,
        world: World | None = None,
    ) -> None:
        self.world = world if world is not None else World()
        # One process only: ranks whose rows share prefixes of different lengths would run
        # different numbers of forwards, and an FSDP forward is a collective.
        self._share = self.world.size == 1
        #: Tokens per token-tree pass (:func:`algos.packing.pack_tree`); 0: micro-batches of
        #: rows. Not with a critic (it reads whole rows) or several ranks (as above).
        self.tree_tokens = optim_cfg.tree_tokens if self._share and critic is None else 0
        if not tree_attention(model):
            self.tree_tokens = 0
        self.loss_scale_factor = loss_scale_factor
        self.model, self.tokenizer, self.algo = model, tokenizer, algo
        self.acfg, self.ocfg = algo_cfg, optim_cfg
        self.temperature = temperature if temperature > 0 else 1.0
        self.critic, self.ref_model = critic, ref_model
        #: Skip rows whose loss is exactly zero (see :meth:`_rows_with_gradient`).
        self.skip_zero_advantage = True
        #: First trainable layer when the trunk below is frozen (None: the full model runs).
        self.trunk_depth = trunk_depth(model)
        #: The policy loss, looked up in ``algos.POLICY_LOSSES`` (so registered losses work).
        self.policy_loss = get_policy_loss(algo_cfg.policy_loss or algo.loss)
        self._loss_options = self.policy_loss.config_options(algo_cfg)
        self.device = next(model.parameters()).device
        params = [p for p in model.parameters() if p.requires_grad]
        self.optimizer = torch.optim.AdamW(
            params, lr=optim_cfg.lr, weight_decay=optim_cfg.weight_decay
        )
        self.critic_optimizer = (
            torch.optim.AdamW(critic.parameters(), lr=optim_cfg.critic_lr) if critic else None
        )

    # ---- forward passes without gradient (old log-probs, reference, values) -------------

    @torch.no_grad()
    def score(self, batch: StepBatch, what: str) -> torch.Tensor:
        """(B, L) ``"logp"`` (actor), ``"ref"`` (reference) or ``"values"`` (critic), 0 off-mask."""
        out = torch.zeros(batch.response_mask.shape, dtype=torch.float32)
        step = max(self.ocfg.micro_batch_size, 1)
        module = {"logp": self.model, "ref": self.ref_model, "values": self.critic}[what]
        if module is None:
            raise ValueError(f"score({what!r}): this learner has no such model")
        was = module.training
        module.eval()
        try:
            tree = what != "values" and self.tree_tokens > 0  # the critic reads whole rows
            if tree:
                chunks = tree_parts(tree_sequences(batch), self.tree_tokens)
            else:
                # Every rank runs as many forwards (an FSDP forward all-gathers weights).
                order = by_prompt(batch, range(len(batch)))
                count = self.world.max_int(math.ceil(len(batch) / step))
                chunks = [order[k * step : (k + 1) * step] for k in range(count)]
            for rows in chunks:
                mb = batch.select(rows) if rows else self._filler(batch)
                depth = self.trunk_depth if what != "values" else None  # the ref shares it
                inputs = self._inputs(mb, depth, tree=tree and bool(rows), share=what != "values")
                if what == "values":
                    val = response_values(self.critic, inputs)
                else:
                    val = token_logp(response_logits(module, inputs), inputs, self.temperature)
                w = inputs["width_r"]
                if rows:
                    out[rows, :w] = val.float().cpu() * mb.response_mask[:, :w]
        finally:
            module.train(was)
        return out

    # ---- the update ----------------------------------------------------------------------

    def update(
        self,
        batch: StepBatch,
        advantages: torch.Tensor,
        returns: torch.Tensor | None = None,
        *,
        seed: int,
        train_actor: bool = True,
        progress: bool = False,
        rows: GlobalRows | None = None,
    ) -> dict[str, float]:
        """Run ``ppo_epochs`` over shuffled mini-batches; return mean metrics.

        Args:
            batch: The step rows, with ``old_log_prob`` (and ``values`` for a critic,
                ``ref_log_prob`` for the KL term) filled in.
            advantages: (B, L) the estimator's advantages.
            returns: (B, L) critic targets (critic algorithms only).
            seed: Seed of the shuffling (so a resumed run shuffles identically).
            train_actor: False during critic warm-up.
            progress: Show a progress bar over optimiser steps.
            rows: The global batch this rank's ``batch`` is part of, with its advantages
                (:func:`algos.global_batch.gather_rows`); None: ``batch`` is all of it.

        Raises:
            ValueError: A field the update needs is missing, or a shape disagrees.
        """
        if batch.old_log_prob is None:
            raise ValueError("update: StepBatch.old_log_prob is None (rollout or score('logp'))")
        if tuple(advantages.shape) != tuple(batch.response_mask.shape):
            raise ValueError(
                f"update: advantages have shape {tuple(advantages.shape)}, the batch's response "
                f"mask {tuple(batch.response_mask.shape)}"
            )
        if self.critic is not None and (returns is None or batch.values is None):
            raise ValueError("update: a critic needs returns and StepBatch.values")
        rows = rows if rows is not None else GlobalRows.single(batch, advantages)
        n = len(rows)
        mini = self.ocfg.mini_batch_size or n
        gen = torch.Generator().manual_seed(seed)
        sums: dict[str, float] = {}
        counts: dict[str, int] = {}
        steps = self.ocfg.ppo_epochs * math.ceil(n / mini)
        bar = progress_bar(progress, "update (optimizer steps)", total=steps)
        t0, tokens = time.perf_counter(), 0
        for _ in range(self.ocfg.ppo_epochs):
            perm = torch.randperm(n, generator=gen).tolist()
            for start in range(0, n, mini):
                chosen = perm[start : start + mini]
                metrics = self._mini_batch_step(
                    batch, advantages, returns, train_actor, rows=rows, chosen=chosen
                )
                tokens += rows.tokens(chosen)
                for k, v in metrics.items():
                    if v is not None and math.isfinite(v):
                        sums[k] = sums.get(k, 0.0) + v
                        counts[k] = counts.get(k, 0) + 1
                bar.update(1)
        bar.close()
        out = {k: sums[k] / counts[k] for k in sums if k not in ("skipped", "rows_skipped")}
        out["skipped_steps"] = sums.get("skipped", 0.0)
        out["zero_advantage_rows"] = sums.get("rows_skipped", 0.0)
        out["optimizer_steps"] = float(steps)
        secs = time.perf_counter() - t0
        out["update_tokens_per_s"] = tokens / secs if secs > 0 else 0.0
        return out

    def _mini_batch_step(
        self,
        batch: StepBatch,
        advantages: torch.Tensor,
        returns: torch.Tensor | None,
        train_actor: bool,
        *,
        rows: GlobalRows | None = None,
        chosen: list[int] | None = None,
    ) -> dict[str, float]:
        """One optimiser step on the global rows ``chosen``, accumulated over micro-batches.

        ``batch``, ``advantages`` and ``returns`` are this rank's rows; without ``rows`` they
        are the whole mini-batch.
        """
        if rows is None:
            rows, chosen = GlobalRows.single(batch, advantages), list(range(len(batch)))
        micro = max(self.ocfg.micro_batch_size, 1)
        mb = rows.batch.select(chosen)  # the global mini-batch: its normalisers
        # Mini-batch normalisers, shared by every micro-batch (exact accumulation).
        k = self.loss_scale_factor or float(response_width(mb))
        norm = {**mini_batch_counts(mb.response_mask), "loss_scale_factor": k}
        vnorm = None
        if self.critic is not None:
            vnorm = {**mini_batch_counts(self._value_mask(mb)), "loss_scale_factor": k}
        self.optimizer.zero_grad(set_to_none=True)
        if self.critic_optimizer is not None:
            self.critic_optimizer.zero_grad(set_to_none=True)
        acc: dict[str, float] = {}
        finite = True
        keep = self._rows_with_gradient(mb, rows.advantages[chosen], train_actor)
        has_tokens = (mb.response_mask != 0).any(-1).tolist()  # padding rows: no forward pass
        active = [chosen[j] for j in keep if has_tokens[j]]
        if self.tree_tokens:  # one process: global rows are local rows
            parts = tree_parts(tree_sequences(rows.batch, active), self.tree_tokens)
        else:
            # Rows that start alike share micro-batches, whose common prefix then runs once.
            parts = rows.micro_batches(by_prompt(rows.batch, active), micro)
        trained = ([self.model] if train_actor else []) + ([self.critic] if self.critic else [])
        for j, local in enumerate(parts):
            # An empty part (another rank has more rows here) is a zero-weight pass.
            part = batch.select(local) if local else self._filler(batch)
            adv = advantages[local] if local else torch.zeros(1, 1)
            inputs = self._inputs(
                part, self.trunk_depth, tree=bool(local), share=self.critic is None
            )  # the critic reads whole rows
            w = inputs["width_r"]
            loss = torch.zeros((), device=self.device)
            weight = part.response_mask.sum().item() / max(norm["batch_num_tokens"], 1.0)
            if train_actor:
                terms = self._actor_loss(part, adv[:, :w], inputs, norm)
                loss = loss + terms.pop("loss")
                _accumulate(acc, terms, weight)
            if self.critic is not None:
                ret = returns[local] if local else torch.zeros(1, 1)
                vloss, vmetrics = self._critic_loss(part, ret[:, :w], inputs, vnorm)
                loss = loss + self.acfg.value_coef * vloss
                _accumulate(acc, vmetrics, weight)
            # No early exit on a non-finite loss: the ranks' backward passes must pair up. Its
            # gradients are dropped below.
            finite = finite and bool(torch.isfinite(loss))
            with self.world.grad_sync(trained, enabled=j == len(parts) - 1):
                self.world.scale_loss(loss).backward()
        acc, finite = self.world.reduce_metrics(acc, finite)
        metrics = dict(acc)
        if train_actor and not active:
            metrics["pg_loss"] = 0.0  # every row's loss is exactly 0
        if len(keep) < len(mb):
            metrics["rows_skipped"] = float(len(mb) - len(keep))
            _zero_missing_grads(self.model)  # an all-zero step is still a step for AdamW
        if finite and train_actor:
            gn = torch.nn.utils.clip_grad_norm_(
                [p for p in self.model.parameters() if p.requires_grad], self.ocfg.max_grad_norm
            )
            metrics["grad_norm"] = float(gn)
            finite = math.isfinite(float(gn))
        if finite and self.critic is not None:
            cgn = torch.nn.utils.clip_grad_norm_(self.critic.parameters(), self.ocfg.max_grad_norm)
            metrics["critic_grad_norm"] = float(cgn)
            finite = math.isfinite(float(cgn))
        if not finite:
            # Never apply a step built from NaN/inf: drop the gradients and count the skip.
            self.optimizer.zero_grad(set_to_none=True)
            if self.critic_optimizer is not None:
                self.critic_optimizer.zero_grad(set_to_none=True)
            return {"skipped": 1.0}
        if train_actor:
            self.optimizer.step()
        if self.critic_optimizer is not None:
            self.critic_optimizer.step()
        return metrics

    def _rows_with_gradient(
        self, mb: StepBatch, advantages: torch.Tensor, train_actor: bool
    ) -> list[int]:
        """The rows whose loss can have a gradient (all rows, unless skipping is exact).

        With no entropy bonus, no KL term and no critic, a row whose advantages are all 0 has a
        policy loss of exactly 0 (every registered loss is ``-A * f(ratio)``), so its forward
        and backward passes change nothing; the normalisers still count it. GRPO-style groups
        whose members all got the same reward are such rows, often most of a batch early on.
        """
        rows = list(range(len(mb)))
        exact = (
            self.skip_zero_advantage
            and train_actor
            and self.critic is None
            and self.acfg.entropy_coeff == 0
            and not (self.acfg.kl_coef and self.ref_model is not None)
        )
        if not exact:
            return rows
        nonzero = (advantages != 0).any(dim=-1).tolist()
        return [i for i in rows if nonzero[i]]

    def _filler(self, like: StepBatch) -> StepBatch:
        """One empty row (one pad token, no response token) with ``like``'s optional fields.

        A rank with fewer rows than another runs it in place of a micro-batch, so that the
        ranks' forward/backward passes (and the collectives inside them) pair up; its loss is
        exactly 0 and so are its gradients.
        """
        zeros = torch.zeros((1, 1))
        pad = self.tokenizer.pad_token_id
        return StepBatch(
            prompt_ids=[torch.tensor([pad], dtype=torch.long)],
            response_ids=torch.full((1, 1), pad, dtype=torch.long),
            response_mask=zeros,
            step_reward=torch.zeros(1),
            index=[None],
            traj_uid=[None],
            step_index=[0],
            sample_mask=[False],
            old_log_prob=zeros,
            ref_log_prob=zeros if like.ref_log_prob is not None else None,
            values=zeros if like.values is not None else None,
        )

    def _inputs(self, part: StepBatch, depth: int | None, *, tree: bool, share: bool) -> dict:
        """The model inputs of ``part``: a token tree, else rows (sharing a prefix if ``share``)."""
        if tree and self.tree_tokens:
            inputs = pack_tree(part, self.device, depth)
            if inputs is not None:
                return inputs
        return pack(part, self.tokenizer.pad_token_id, self.device, depth,
                    share_prefix=share and self._share)  # fmt: skip

    def _actor_loss(
        self,
        part: StepBatch,
        advantages: torch.Tensor,
        inputs: dict[str, Any],
        norm: dict[str, float],
    ) -> dict[str, Any]:
        a = self.acfg
        w = inputs["width_r"]
        logits = response_logits(self.model, inputs)
        logp = token_logp(logits, inputs, self.temperature)
        mask = part.response_mask[:, :w].to(self.device)
        old = part.old_log_prob[:, :w].to(self.device)
        agg = {"agg": a.loss_agg, **norm}
        pg, m = self.policy_loss(
            old,
            logp,
            advantages.to(self.device),
            mask,
            **self._loss_options,
            **{k: v for k, v in agg.items() if k in self.policy_loss.agg_keywords},
        )
        total = pg
        out: dict[str, Any] = {"pg_loss": pg.item()}
        out.update({k: float(v) for k, v in m.items()})
        with torch.set_grad_enabled(a.entropy_coeff != 0):
            ent_mat = losses.entropy_from_logits(logits / self.temperature)
            ent = losses.agg_loss(ent_mat, mask, a.loss_agg, **norm)
        out["entropy"] = ent.item()
        if a.entropy_coeff:
            total = total - a.entropy_coeff * ent
        if a.kl_coef and part.ref_log_prob is not None:
            ref = part.ref_log_prob[:, :w].to(self.device)
            kl_mat = losses.kl_estimate(logp, ref, a.kl_type)
            kl = losses.agg_loss(kl_mat, mask, a.loss_agg, **norm)
            total = total + a.kl_coef * kl
            out["kl"] = kl.item()
        out["loss"] = total
        return out

    def _value_mask(self, part: StepBatch) -> torch.Tensor:
        if self.algo.value_level == "step":
            return losses.value_mask(part.response_mask, part.sample_mask)
        return part.response_mask

    def _critic_loss(
        self,
        part: StepBatch,
        returns: torch.Tensor,
        inputs: dict[str, Any],
        norm: dict[str, float],
    ) -> tuple[torch.Tensor, dict[str, float]]:
        w = inputs["width_r"]
        vpred = response_values(self.critic, inputs)
        vmask = self._value_mask(part)[:, :w].to(self.device)
        loss, m = losses.value_loss(
            vpred,
            returns.to(self.device),
            part.values[:, :w].to(self.device),
            vmask,
            clip_eps=self.acfg.value_clip,
            agg=self.acfg.loss_agg,
            **norm,
        )
        out = {"value_loss": loss.item()}
        out.update({k: float(v) for k, v in m.items()})
        return loss, out


#: Metrics that are already mini-batch-normalised partial sums (they add up over micro-batches);
#: every other metric is a per-micro-batch mean, weighted by the micro-batch's token share.
_SUMMED = frozenset({"pg_loss", "entropy", "kl", "value_loss"})


def by_prompt(batch: StepBatch, rows: Any) -> list[int]:
    """``rows`` ordered by their prompt tokens, so that rows starting alike are neighbours.

    Micro-batches cut from this order share long prefixes (:func:`algos.packing.pack`); the
    sum a mini-batch accumulates does not depend on the order.
    """
    if batch.prompt_ids is None:
        return list(rows)
    prompts = prompt_rows(batch)
    return sorted(rows, key=lambda i: prompts[i].tolist())


def _zero_missing_grads(model: Any) -> None:
    """Give trainable parameters that got no gradient an explicit zero one.

    AdamW skips a parameter whose ``grad`` is None but moves one whose gradient is zero
    (momentum, weight decay), so skipped rows must leave zeros, not Nones, to keep the update
    identical to computing them.
    """
    for p in model.parameters():
        if p.requires_grad and p.grad is None:
            p.grad = torch.zeros_like(p)


def _accumulate(acc: dict[str, float], metrics: dict[str, float], weight: float) -> None:
    for k, v in metrics.items():
        acc[k] = acc.get(k, 0.0) + (v if k in _SUMMED else v * weight)
