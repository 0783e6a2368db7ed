"""The transformers backend: sampling from the learner's own module, with shared prefixes.

A rollout's prompts repeat themselves: the members of a group see the same first observation,
members in the same state see the same prompt again, and every prompt starts with the same
system prompt and template. The default path (``prefix_sharing=True``) computes each distinct
token prefix once:

1. identical prompts are prefilled once (their count is only the number of samples drawn);
2. the key/value caches of the last calls' prompts are kept (:class:`PrefixStore`, emptied
   when the weights change): a prompt that starts like one of them (the next step of the
   same episode, whose prompt repeats the task and the room before what changed) reuses the
   longest such prefix and prefills only the rest;
3. the longest token prefix common to all distinct prompts of a batch is prefilled once
   where no kept prefix covers it, and its key/value cache is shared by every row;
4. each distinct prompt's own suffix is prefilled on top of its prefix, laid out as
   ``[padding | prefix | padding | suffix]`` with explicit position ids, so a row's positions
   are exactly those of its unpadded prompt;
5. the cache is expanded to one row per sample and decoded token by token, each token's keys
   and values written into room reserved for them (:func:`reserve`, not a copy of the whole
   cache per token), rows leaving the batch as they finish.

Greedy calls (held-out evaluations) also chunk their prompts by the part each must prefill
rather than by length, and answer a prompt already answered greedily under the same weights
from that answer, without a forward (:meth:`HFBackend.generate`).

The logits of every step are the same quantity the learner recomputes (greedy outputs equal
``model.generate``'s, tested), so the first PPO ratio is 1 up to float noise.
``prefix_sharing=False`` samples with ``model.generate`` on left-padded prompts instead (any
model; the baseline of ``benchmarks/bench_learner.py``).
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass
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


def reserve(cache: Any, room: int) -> None:
    """Let each layer of a ``DynamicCache`` grow by up to ``room`` positions in place.

    A ``DynamicCache`` layer grows by concatenation, which copies its whole cache at every
    decoded token: a third of a decode step's time with 13 rows of 800 positions, half with
    32 (SmolLM2-135M, bfloat16 layers; ``benchmarks/bench_learner.py --decode-step``). After
    this, a layer's first update copies its cache once, as concatenation would, into a buffer
    with ``room`` spare positions, and later updates write into that room: its ``keys`` and
    ``values`` are views of the filled part, holding the same values (so the same outputs,
    tested) without the copies. Nothing is copied here.
    """
    grow = _reserved_layer_class()
    for layer in cache.layers:
        layer.__class__ = grow
        layer.room, layer.key_room, layer.value_room = max(room, 0), None, None


@functools.cache
def _reserved_layer_class() -> type:
    """The ``DynamicLayer`` of :func:`reserve` (the class is made once, on first use)."""
    from transformers.cache_utils import DynamicLayer

    class ReservedLayer(DynamicLayer):
        """A ``DynamicLayer`` whose keys and values become views of buffers with spare room."""

        room: int
        key_room: Any
        value_room: Any

        def update(self, key_states: Any, value_states: Any, *args: Any, **kwargs: Any) -> Any:
            if not self.is_initialized or self.keys.dim() != 4:  # empty: filled as it would be
                self.key_room = self.value_room = None
                return super().update(key_states, value_states, *args, **kwargs)
            n, k = self.keys.shape[2], key_states.shape[2]
            if self.key_room is None or n + k > self.key_room.shape[2]:
                self._move(k)
            self.key_room[:, :, n : n + k] = key_states
            self.value_room[:, :, n : n + k] = value_states
            self.keys = self.key_room[:, :, : n + k]
            self.values = self.value_room[:, :, : n + k]
            return self.keys, self.values

        def _move(self, k: int) -> None:
            """Copy the filled part into buffers with room for ``k`` more and ``self.room``."""
            keys, values = self.keys, self.values
            n = keys.shape[2]
            size = n + k + max(self.room, k)
            self.key_room = keys.new_empty((*keys.shape[:2], size, keys.shape[3]))
            self.value_room = values.new_empty((*values.shape[:2], size, values.shape[3]))
            self.key_room[:, :, :n] = keys
            self.value_room[:, :, :n] = values

        def reorder_cache(self, beam_idx: Any) -> None:
            if self.key_room is None:
                super().reorder_cache(beam_idx)
                return
            n = self.keys.shape[2]
            rows = beam_idx.to(self.key_room.device)
            self.key_room = self.key_room.index_select(0, rows)
            self.value_room = self.value_room.index_select(0, rows)
            self.keys, self.values = self.key_room[:, :, :n], self.value_room[:, :, :n]

    return ReservedLayer


#: Most greedy answers :class:`HFBackend` keeps for prompts that come again.
KEPT_ANSWERS = 16384


def _copy(answer: Generation | None) -> Generation | None:
    """A copy of a kept answer that its new holder may change without changing the kept one."""
    if answer is None:
        return None
    logprobs = None if answer.logprobs is None else list(answer.logprobs)
    return dataclasses.replace(
        answer, token_ids=list(answer.token_ids), logprobs=logprobs, extra=dict(answer.extra)
    )


@dataclass
class _Prefix:
    """One prompt's key/value cache, kept for later prompts that start the same way."""

    tokens: Any
    """The prompt's token ids (a numpy array, for fast prefix comparison)."""
    kv: list[tuple[Any, Any]]
    """Per layer, ``(keys, values)`` of shape (kv heads, len(tokens), head dim)."""
    trunk: Any = None
    """(len(tokens), hidden) states entering the first trained layer, when recorded."""


class PrefixStore:
    """The key/value caches of recent prompts (a cross-call prefix cache, as vLLM keeps).

    :meth:`match` finds, for a new prompt, the kept prompt sharing the longest token prefix
    with it (leaving at least one token to compute, whose logits start the response). Entries
    are dropped oldest first once they hold more than ``max_tokens`` tokens, and all at once
    by :meth:`clear` (new weights make every cached key stale).
    """

    def __init__(self, max_tokens: int) -> None:
        self.max_tokens = max_tokens
        self._entries: list[_Prefix] = []
        self._tokens = 0

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        """Forget every kept prompt."""
        self._entries.clear()
        self._tokens = 0

    def add(self, entry: _Prefix) -> None:
        """Keep ``entry``, dropping the oldest entries beyond the token budget."""
        if self.max_tokens <= 0:
            return  # keeping nothing: every call prefills its own prompts
        self._entries.append(entry)
        self._tokens += len(entry.tokens)
        while self._tokens > self.max_tokens and len(self._entries) > 1:
            self._tokens -= len(self._entries.pop(0).tokens)

    def match(self, prompt: Any, *, trunk: bool) -> tuple[_Prefix | None, int]:
        """``(entry, n)``: the kept prompt with the longest common prefix, n < len(prompt).

        With ``trunk`` only entries that recorded their trunk states qualify.
        """
        import numpy as np

        best, best_n = None, 0
        limit = len(prompt) - 1
        for entry in self._entries:
            if trunk and entry.trunk is None:
                continue
            n = min(limit, len(entry.tokens))
            if n <= best_n:
                continue
            differ = np.flatnonzero(entry.tokens[:n] != prompt[:n])
            common = int(differ[0]) if differ.size else n
            if common > best_n:
                best, best_n = entry, common
        return best, best_n


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
        prefix_tokens: Most prompt tokens whose key/value caches are kept for later calls
            (23-46 KB a token for SmolLM2-135M, bfloat16 to float32); 0 keeps none.
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
        prefix_tokens: int = 49152,
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
        #: Positions the prefill forwards ran, the padding of each chunk's rows included.
        self.prefill_cells = 0
        #: Key/value caches of the latest prompts (cleared by :meth:`sync_weights`).
        self.prefixes = PrefixStore(prefix_tokens)
        #: Greedy answers since the last weight change, by (prompt, params); oldest first.
        self._answers: dict[tuple[tuple[int, ...], SamplingParams], Generation] = {}

    def _forward(self, cache: Any, **inputs: Any) -> Any:
        """``model(**inputs)`` with ``cache`` under the keyword this transformers version uses."""
        if self._cache_kw is None:
            from algos.trunk import cache_keyword

            self._cache_kw = cache_keyword(self.model)
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
        """Point at ``model`` (the learner's module is used directly, so nothing is copied).

        The kept prefixes are dropped: they were computed with the old weights.
        """
        self.model = model
        self.prefixes.clear()
        self._answers.clear()

    def generate(self, prompts: list[list[int]], params: SamplingParams) -> list[Generation]:
        """Sample one response per prompt; see :class:`~algos.backends.base.Generation`.

        A greedy response is a function of the prompt and the weights, so a prompt answered
        greedily since the last :meth:`sync_weights` gets that answer again without a forward
        (a held-out game whose command did nothing shows the same prompt until it ends).
        """
        import torch

        if not prompts:
            return []
        keys = [tuple(p) for p in prompts]  # hashable: the kept answers' and sorts' keys
        out: list[Generation | None] = [None] * len(prompts)
        greedy = params.temperature <= 0
        if greedy:
            out = [_copy(self._answers.get((k, params))) for k in keys]
        todo = [i for i, g in enumerate(out) if g is None]
        order = self._order(keys, todo, by_new_part=greedy)
        run = self._shared if self.prefix_sharing else self._hf_generate
        was_training = self.model.training
        self.model.eval()
        try:
            with torch.no_grad():
                for start in range(0, len(order), self.max_batch_size):
                    chunk = order[start : start + self.max_batch_size]
                    for i, g in zip(chunk, run([prompts[i] for i in chunk], params)):
                        out[i] = g
                        if greedy:
                            self._remember((keys[i], params), g)
        finally:
            self.model.train(was_training)
        self.prompt_tokens += sum(len(p) for p in prompts)
        return out  # type: ignore[return-value]

    def _remember(self, key: tuple[tuple[int, ...], SamplingParams], answer: Generation) -> None:
        """Keep a greedy answer, forgetting the oldest beyond :data:`KEPT_ANSWERS`."""
        self._answers[key] = answer
        if len(self._answers) > KEPT_ANSWERS:
            del self._answers[next(iter(self._answers))]

    def _order(
        self, prompts: list[tuple[int, ...]], todo: list[int], *, by_new_part: bool
    ) -> list[int]:
        """The indices ``todo`` of ``prompts`` in the order they are chunked: alike together.

        A chunk's prompts are left-padded to its longest, so each of its rows costs as much as
        that one; by default prompts are sorted by length. With ``by_new_part`` (greedy calls)
        and shared prefixes they are sorted by the part no kept prefix covers (as matched now;
        a chunk may match more once the chunks before it kept theirs), the part the chunk
        prefills. On the main job's held-out games, where that part is 1 to 150 tokens a step
        whatever the prompt's length, the positions run went from 1.63x the tokens prefilled
        to 1.21x with the kept greedy answers (``benchmarks/bench_eval.py``). Sampled calls
        keep the length order: the order also decides which random draws each row gets, so
        changing it would change every seed's samples. Identical prompts share a key, so they
        stay in one chunk (and are prefilled once).
        """
        import numpy as np

        if not (by_new_part and self.prefix_sharing):
            return sorted(todo, key=lambda i: (len(prompts[i]), prompts[i]))
        trunk = self.capture_depth is not None
        new: dict[tuple[int, ...], int] = {}
        for i in todo:
            p = prompts[i]
            if p not in new:
                new[p] = len(p) - self.prefixes.match(np.asarray(p), trunk=trunk)[1]
        return sorted(todo, key=lambda i: (new[prompts[i]], len(prompts[i]), prompts[i]))

    # ---- the shared-prefix path ---------------------------------------------------------------

    def _shared(self, prompts: list[list[int]], params: SamplingParams) -> list[Generation]:
        import numpy as np
        import torch
        from transformers import DynamicCache

        device, pad, depth = self._device(), self.tokenizer.pad_token_id, self.capture_depth
        distinct: dict[tuple[int, ...], int] = {}
        owner = [distinct.setdefault(tuple(p), len(distinct)) for p in prompts]
        uniq = list(distinct)
        arrays = [np.asarray(u) for u in uniq]
        hits = [self.prefixes.match(a, trunk=depth is not None) for a in arrays]
        shared = common_prefix(uniq)
        if shared and any(n < shared for _, n in hits):
            head = self._keep_prefix(uniq[0][:shared], depth)
            hits = [(head, shared) if n < shared else (e, n) for e, n in hits]
        kept = [n for _, n in hits]
        width = max(kept)
        cache = DynamicCache()
        before = torch.zeros(len(uniq), width, dtype=torch.long, device=device)
        if width:
            self._fill_cache(cache, hits, width)
            for u, n in enumerate(kept):
                before[u, width - n :] = 1
        ids, mask = left_pad([u[n:] for u, n in zip(uniq, kept)], pad)
        ids, mask = ids.to(device), mask.to(device)
        start = torch.tensor(kept, device=device)[:, None]
        positions = start + (mask.cumsum(-1) - 1).clamp(min=0)
        attention = torch.cat([before, mask], 1)
        out, states = self._run(
            cache, depth, input_ids=ids, attention_mask=attention, position_ids=positions,
            logits_to_keep=1,
        )  # fmt: skip
        self.prefill_tokens += int(mask.sum())
        self.prefill_cells += mask.numel()
        trunks = self._keep_prompts(cache, hits, arrays, width, states)
        rows = torch.tensor(owner, device=device)
        reserve(cache, params.max_new_tokens - 1)  # the most tokens decoding feeds back
        cache.reorder_cache(rows)  # one row per sample
        gens, fed = self._decode(out.logits[rows, -1].float(), cache, attention[rows],
                                 positions[rows, -1], params, depth)  # fmt: skip
        if depth is not None:
            for row, g in enumerate(gens):
                g.extra["trunk"] = torch.cat([trunks[owner[row]], *fed[row]], 0).cpu()
        return gens

    def _run(self, cache: Any, depth: int | None, **inputs: Any) -> tuple[Any, Any]:
        """One forward; with ``depth``, also the (rows, tokens, hidden) states entering it."""
        if depth is None:
            return self._forward(cache, **inputs), None
        from algos.trunk import capture

        with capture(self.model, depth) as seen:
            out = self._forward(cache, **inputs)
        return out, seen[0]

    def _keep_prefix(self, tokens: tuple[int, ...], depth: int | None) -> _Prefix:
        """Prefill ``tokens`` (one row) and keep their cache; return the entry."""
        import numpy as np
        import torch
        from transformers import DynamicCache

        cache = DynamicCache()
        _, states = self._run(
            cache, depth, input_ids=torch.tensor([tokens], device=self._device()), logits_to_keep=1
        )
        self.prefill_tokens += len(tokens)
        self.prefill_cells += len(tokens)
        kv = [(layer.keys[0], layer.values[0]) for layer in cache.layers]
        entry = _Prefix(np.asarray(tokens), kv, None if states is None else states[0])
        self.prefixes.add(entry)
        return entry

    @staticmethod
    def _fill_cache(cache: Any, hits: list[tuple[_Prefix | None, int]], width: int) -> None:
        """Lay each row's kept prefix out right-aligned in ``width`` cache positions."""
        ref = next(e for e, n in hits if n)
        for i, (k0, v0) in enumerate(ref.kv):
            keys = k0.new_zeros((len(hits), k0.shape[0], width, k0.shape[2]))
            values = v0.new_zeros((len(hits), v0.shape[0], width, v0.shape[2]))
            for u, (entry, n) in enumerate(hits):
                if n:
                    keys[u, :, width - n :] = entry.kv[i][0][:, :n]
                    values[u, :, width - n :] = entry.kv[i][1][:, :n]
            cache.update(keys, values, i)

    def _keep_prompts(
        self, cache: Any, hits: list[tuple[_Prefix | None, int]], arrays: list[Any], width: int,
        states: Any,
    ) -> list[Any]:  # fmt: skip
        """Keep every prompt's cache (kept prefix + new suffix); return their trunk states."""
        import torch

        trunks = []
        total = cache.layers[0].keys.shape[2]
        for u, (entry, n) in enumerate(hits):
            new = len(arrays[u]) - n
            own = [*range(width - n, width), *range(total - new, total)]
            index = torch.tensor(own, device=cache.layers[0].keys.device)
            kv = [
                (layer.keys[u].index_select(1, index), layer.values[u].index_select(1, index))
                for layer in cache.layers
            ]
            trunk = None
            if states is not None:
                parts = [states[u, states.shape[1] - new :]]
                if n:
                    parts.insert(0, entry.trunk[:n])
                trunk = torch.cat(parts, 0)
            self.prefixes.add(_Prefix(arrays[u], kv, trunk))
            trunks.append(trunk)
        return trunks

    def _decode(
        self,
        logits: Any,
        cache: Any,
        attention: Any,
        last_pos: Any,
        params: SamplingParams,
        depth: int | None,
    ) -> tuple[list[Generation], list[list[Any]]]:
        """Sample up to ``max_new_tokens`` per row from prefilled ``logits`` and ``cache``.

        Returns the generations and, per row, the trunk states of the tokens it fed back
        (each (1, hidden); empty lists when ``depth`` is None).
        """
        import torch

        n, device = logits.shape[0], logits.device
        tokens: list[list[int]] = [[] for _ in range(n)]
        logps: list[list[float]] = [[] for _ in range(n)]
        fed: list[list[Any]] = [[] for _ in range(n)]
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
            out, states = self._run(
                cache, depth, input_ids=tok[:, None], attention_mask=attention,
                position_ids=last_pos[:, None],
            )  # fmt: skip
            if states is not None:
                for j, row in enumerate(alive.tolist()):
                    fed[row].append(states[j])
            logits = out.logits[:, -1].float()
        gens = [self._generation(t, lp, f) for t, lp, f in zip(tokens, logps, finish)]
        return gens, fed

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
        self.prefill_cells += attn.numel()
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
