"""The transformers backend: sampling from the learner's own module, with shared prefixes.

A rollout's prompts repeat themselves: the members of a group see the same first observation,
members in the same state see the same prompt again, and every prompt starts with the same
system prompt and template. The default path (``prefix_sharing=True``) computes each distinct
token prefix once:

1. identical prompts are prefilled once (their count is only the number of samples drawn);
2. the longest token prefix common to all distinct prompts of a batch is prefilled once, and
   its key/value cache is shared by every row;
3. each distinct prompt's own suffix is prefilled on top of it, laid out as
   ``[shared prefix | padding | suffix]`` with explicit position ids, so a row's positions
   are exactly those of its unpadded prompt;
4. the cache is expanded to one row per sample and decoded token by token, rows leaving the
   batch as they finish.

The logits of every step are the same quantity the learner recomputes (greedy outputs equal
``model.generate``'s, tested), so the first PPO ratio is 1 up to float noise.
``prefix_sharing=False`` samples with ``model.generate`` on left-padded prompts instead (any
model; the baseline of ``benchmarks/bench_learner.py``).
"""

from __future__ import annotations

from typing import Any

from algos.backends.base import Generation, SamplingParams
from algos.packing import left_pad


def eos_ids(model: Any, tokenizer: Any) -> set[int]:
    """Token ids that end a response: the generation config's eos ids plus the tokenizer's."""
    ids: set[int] = set()
    cfg_eos = getattr(model.generation_config, "eos_token_id", None)
    if isinstance(cfg_eos, int):
        ids.add(cfg_eos)
    elif cfg_eos:
        ids.update(int(i) for i in cfg_eos)
    if tokenizer.eos_token_id is not None:
        ids.add(int(tokenizer.eos_token_id))
    return ids


def common_prefix(seqs: list[tuple[int, ...]]) -> int:
    """Length of the longest token prefix every sequence shares, leaving each >= 1 token.

    >>> common_prefix([(1, 2, 3), (1, 2, 4, 5)])
    2
    >>> common_prefix([(1, 2), (1, 2)])
    1
    """
    limit = min(len(s) for s in seqs) - 1
    n = 0
    while n < limit and all(s[n] == seqs[0][n] for s in seqs):
        n += 1
    return n


def _attach_trunk(
    gens: list[Generation],
    seen: list[Any],
    owner: list[int],
    suffix_lens: list[int],
    shared: int,
    steps: list[list[int]],
) -> None:
    """Assemble each row's recorded trunk states: shared prefix, own suffix, fed tokens."""
    import torch

    seen = list(seen)
    prefix = seen.pop(0)[0] if shared else None  # (shared, H)
    suffix = seen.pop(0)  # (U, S, H), suffixes right-aligned
    fed: list[list[Any]] = [[] for _ in gens]
    for rows, states in zip(steps, seen):  # (alive, 1, H) per decoding forward
        for j, row in enumerate(rows):
            fed[row].append(states[j])
    width = suffix.shape[1]
    for row, g in enumerate(gens):
        u = owner[row]
        parts = [suffix[u, width - suffix_lens[u] :], *fed[row]]
        if prefix is not None:
            parts.insert(0, prefix)
        g.extra["trunk"] = torch.cat(parts, 0).cpu()


class HFBackend:
    """Sample with transformers from the learner's own module (no weight copy).

    Prompts are batched by length into chunks of at most ``max_batch_size``; the log-prob of
    every sampled token is ``log_softmax(logits / temperature)`` of the raw logits (no top-p
    renormalisation), as the learner computes it.

    Sampling draws from the backend's own generator (seeded by ``seed``), not torch's global
    one, so what a run samples does not depend on anything else that used the global RNG
    (a first-time model conversion, a data build); :attr:`rng_state` is saved with checkpoints.

    Args:
        model: A causal LM (``PreTrainedModel`` or a peft wrapper of one).
        tokenizer: Its tokenizer (its pad token pads the prompts).
        max_batch_size: Most prompts per chunk (bounds memory on long prompts).
        seed: Seed of the sampling generator.
        prefix_sharing: Prefill shared prefixes once (module docstring); False uses
            ``model.generate``.
    """

    returns_logprobs = True

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        *,
        max_batch_size: int = 64,
        seed: int = 0,
        prefix_sharing: bool = True,
    ) -> None:
        import torch

        self.model = model
        self.tokenizer = tokenizer
        self.max_batch_size = max_batch_size
        self.prefix_sharing = prefix_sharing
        self._eos = eos_ids(model, tokenizer)
        self._cache_kw: str | None = None
        #: Record the states entering this decoder layer (:mod:`algos.trunk`) into each
        #: Generation's ``extra["trunk"]``; None records nothing (evaluation).
        self.capture_depth: int | None = None
        self._generator = torch.Generator(device=self._device()).manual_seed(seed)
        #: Prompt tokens prefilled and prompt tokens asked for, summed over calls.
        self.prefill_tokens = self.prompt_tokens = 0

    def _forward(self, cache: Any, **inputs: Any) -> Any:
        """``model(**inputs)`` with ``cache`` under the keyword this transformers version uses.

        (``past_key_values`` was renamed ``cache`` in transformers 5.2x; both are accepted
        for a while, the old one with a warning.)
        """
        if self._cache_kw is None:
            import inspect

            params = inspect.signature(self.model.forward).parameters
            self._cache_kw = "cache" if "cache" in params else "past_key_values"
        return self.model(**inputs, **{self._cache_kw: cache}, use_cache=True)

    def _device(self) -> Any:
        return next(self.model.parameters()).device

    @property
    def rng_state(self) -> Any:
        """The sampling generator's state (a tensor)."""
        return self._generator.get_state()

    @rng_state.setter
    def rng_state(self, state: Any) -> None:
        self._generator.set_state(state)

    def sync_weights(self, model: Any) -> None:
        """Point at ``model`` (the learner's module is used directly, so nothing is copied)."""
        self.model = model

    def generate(self, prompts: list[list[int]], params: SamplingParams) -> list[Generation]:
        """Sample one response per prompt; see :class:`~algos.backends.base.Generation`."""
        import torch

        if not prompts:
            return []
        order = sorted(range(len(prompts)), key=lambda i: (len(prompts[i]), prompts[i]))
        out: list[Generation | None] = [None] * len(prompts)
        run = self._shared if self.prefix_sharing else self._hf_generate
        was_training = self.model.training
        self.model.eval()
        try:
            with torch.no_grad():
                for start in range(0, len(order), self.max_batch_size):
                    chunk = order[start : start + self.max_batch_size]
                    for i, g in zip(chunk, run([prompts[i] for i in chunk], params)):
                        out[i] = g
        finally:
            self.model.train(was_training)
        self.prompt_tokens += sum(len(p) for p in prompts)
        return out  # type: ignore[return-value]

    # ---- the shared-prefix path ---------------------------------------------------------------

    def _shared(self, prompts: list[list[int]], params: SamplingParams) -> list[Generation]:
        if self.capture_depth is None:
            return self._shared_run(prompts, params, None)
        from algos.trunk import capture

        with capture(self.model, self.capture_depth) as seen:
            return self._shared_run(prompts, params, seen)

    def _shared_run(
        self, prompts: list[list[int]], params: SamplingParams, seen: list | None
    ) -> list[Generation]:
        import torch
        from transformers import DynamicCache

        device, pad = self._device(), self.tokenizer.pad_token_id
        distinct: dict[tuple[int, ...], int] = {}
        owner = [distinct.setdefault(tuple(p), len(distinct)) for p in prompts]
        uniq = list(distinct)
        shared = common_prefix(uniq)
        cache = DynamicCache()
        if shared:
            prefix = torch.tensor([uniq[0][:shared]], device=device)
            self._forward(cache, input_ids=prefix, logits_to_keep=1)
            cache.reorder_cache(torch.zeros(len(uniq), dtype=torch.long, device=device))
        ids, mask = left_pad([u[shared:] for u in uniq], pad)
        ids, mask = ids.to(device), mask.to(device)
        positions = (shared + mask.cumsum(-1) - 1).clamp(min=shared)
        attention = torch.cat(
            [torch.ones(len(uniq), shared, dtype=mask.dtype, device=device), mask], 1
        )
        out = self._forward(
            cache, input_ids=ids, attention_mask=attention, position_ids=positions, logits_to_keep=1
        )
        self.prefill_tokens += shared + int(mask.sum())
        rows = torch.tensor(owner, device=device)
        cache.reorder_cache(rows)
        steps: list[list[int]] = []
        gens = self._decode(out.logits[rows, -1].float(), cache, attention[rows],
                            positions[rows, -1], params, steps)  # fmt: skip
        if seen is not None:
            _attach_trunk(gens, seen, owner, [len(u) - shared for u in uniq], shared, steps)
        return gens

    def _decode(
        self,
        logits: Any,
        cache: Any,
        attention: Any,
        last_pos: Any,
        params: SamplingParams,
        steps: list[list[int]],
    ) -> list[Generation]:
        """Sample up to ``max_new_tokens`` per row from prefilled ``logits`` and ``cache``.

        ``steps`` receives, for every decoding forward, the rows it fed a token for.
        """
        import torch

        n, device = logits.shape[0], logits.device
        tokens: list[list[int]] = [[] for _ in range(n)]
        logps: list[list[float]] = [[] for _ in range(n)]
        finish = ["length"] * n
        alive = torch.arange(n, device=device)
        eos = torch.tensor(sorted(self._eos), device=device)
        for t in range(params.max_new_tokens):
            tok, lp = self._sample(logits, params)
            for row, k, p in zip(alive.tolist(), tok.tolist(), lp.tolist()):
                tokens[row].append(k)
                logps[row].append(p)
            done = torch.isin(tok, eos)
            for row in alive[done].tolist():
                finish[row] = "stop"
            keep = ~done
            if not keep.any() or t == params.max_new_tokens - 1:
                break
            if not keep.all():  # finished rows leave the batch
                cache.reorder_cache(torch.nonzero(keep).squeeze(1))
                alive, tok = alive[keep], tok[keep]
                attention, last_pos = attention[keep], last_pos[keep]
            attention = torch.cat([attention, torch.ones_like(attention[:, :1])], 1)
            last_pos = last_pos + 1
            steps.append(alive.tolist())
            out = self._forward(
                cache,
                input_ids=tok[:, None],
                attention_mask=attention,
                position_ids=last_pos[:, None],
            )
            logits = out.logits[:, -1].float()
        return [self._generation(t, lp, f) for t, lp, f in zip(tokens, logps, finish)]

    def _sample(self, logits: Any, params: SamplingParams) -> tuple[Any, Any]:
        """``(tokens, their log-probs under softmax(logits / T))`` for (n, V) logits."""
        import torch

        if params.temperature <= 0:
            tok = logits.argmax(-1)
            return tok, torch.log_softmax(logits, -1).gather(-1, tok[:, None]).squeeze(1)
        logp = torch.log_softmax(logits / params.temperature, -1)
        probs = logp.exp()
        if params.top_p < 1.0:  # nucleus: the smallest set of tokens with mass >= top_p
            sorted_p, idx = probs.sort(-1, descending=True)
            drop = sorted_p.cumsum(-1) - sorted_p >= params.top_p
            probs = probs.scatter(-1, idx, sorted_p.masked_fill(drop, 0.0))
        tok = torch.multinomial(probs, 1, generator=self._generator).squeeze(1)
        return tok, logp.gather(-1, tok[:, None]).squeeze(1)

    def _generation(self, tokens: list[int], logps: list[float], finish: str) -> Generation:
        text = self.tokenizer.decode(tokens, skip_special_tokens=True)
        return Generation(token_ids=tokens, logprobs=logps, text=text, finish_reason=finish)

    # ---- the model.generate path --------------------------------------------------------------

    def _hf_generate(self, prompts: list[list[int]], params: SamplingParams) -> list[Generation]:
        import torch

        device, pad = self._device(), self.tokenizer.pad_token_id
        ids, attn = left_pad(prompts, pad)
        width = ids.shape[1]
        greedy = params.temperature <= 0
        kwargs: dict[str, Any] = {"do_sample": not greedy}
        if not greedy:
            kwargs.update(temperature=params.temperature, top_p=params.top_p, top_k=0)
        with torch.random.fork_rng(devices=[device.index or 0] if device.type == "cuda" else []):
            torch.manual_seed(int(torch.randint(2**62, (1,), generator=self._generator)))
            result = self.model.generate(
                input_ids=ids.to(device), attention_mask=attn.to(device),
                max_new_tokens=params.max_new_tokens, output_logits=True,
                return_dict_in_generate=True, pad_token_id=pad, eos_token_id=sorted(self._eos),
                use_cache=True, **kwargs,
            )  # fmt: skip
        self.prefill_tokens += int(attn.sum())
        new = result.sequences[:, width:]  # (b, T)
        logits = torch.stack(result.logits, dim=1).float()  # (b, T, V): raw, before warpers
        temp = params.temperature if not greedy else 1.0
        logp = torch.log_softmax(logits / temp, dim=-1).gather(-1, new.unsqueeze(-1)).squeeze(-1)
        gens = []
        for row in range(len(prompts)):
            toks = new[row].tolist()
            end = next((j for j, t in enumerate(toks) if t in self._eos), None)
            n = len(toks) if end is None else end + 1
            finish = "length" if end is None else "stop"
            gens.append(self._generation(toks[:n], logp[row, :n].tolist(), finish))
        return gens
