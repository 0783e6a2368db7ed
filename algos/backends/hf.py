"""The transformers backend: ``model.generate`` batched over every active env, left-padded."""

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


class HFBackend:
    """Sample with transformers ``generate`` from the learner's own module (no weight copy).

    Prompts are left-padded into batches of at most ``max_batch_size`` (sorted by length so
    that a batch holds prompts of similar length), and the log-prob of every sampled token is
    taken from the raw logits as ``log_softmax(logits / temperature)``: the same quantity the
    learner recomputes, so the first PPO ratio is 1 up to float noise.

    Sampling draws from the backend's own random state (seeded by ``seed``), not torch's global
    one, so what a run samples does not depend on anything else that used the global RNG
    (a first-time model conversion, a data build); :attr:`rng_state` is saved with checkpoints.

    Args:
        model: A causal LM (``PreTrainedModel`` or a peft wrapper of one).
        tokenizer: Its tokenizer (its pad token pads the prompts).
        max_batch_size: Most prompts per ``generate`` call (bounds memory on long prompts).
        seed: Seed of the sampling state.
    """

    returns_logprobs = True

    def __init__(
        self, model: Any, tokenizer: Any, *, max_batch_size: int = 64, seed: int = 0
    ) -> None:
        import torch

        self.model = model
        self.tokenizer = tokenizer
        self.max_batch_size = max_batch_size
        self._eos = eos_ids(model, tokenizer)
        with torch.random.fork_rng(devices=self._devices()):
            torch.manual_seed(seed)
            self.rng_state = self._get_state()

    def _devices(self) -> list[int]:
        device = next(self.model.parameters()).device
        return [device.index or 0] if device.type == "cuda" else []

    def _get_state(self) -> dict[str, Any]:
        import torch

        state = {"cpu": torch.get_rng_state()}
        if self._devices():
            state["cuda"] = torch.cuda.get_rng_state(self._devices()[0])
        return state

    def _set_state(self, state: dict[str, Any]) -> None:
        import torch

        torch.set_rng_state(state["cpu"])
        if self._devices() and "cuda" in state:
            torch.cuda.set_rng_state(state["cuda"], self._devices()[0])

    def sync_weights(self, model: Any) -> None:
        """Point at ``model`` (the learner's module is used directly, so nothing is copied)."""
        self.model = model

    def generate(self, prompts: list[list[int]], params: SamplingParams) -> list[Generation]:
        """Sample one response per prompt; see :class:`~algos.backends.base.Generation`."""
        import torch

        if not prompts:
            return []
        order = sorted(range(len(prompts)), key=lambda i: len(prompts[i]))
        out: list[Generation | None] = [None] * len(prompts)
        was_training = self.model.training
        self.model.eval()
        try:
            with torch.no_grad(), torch.random.fork_rng(devices=self._devices()):
                self._set_state(self.rng_state)
                for start in range(0, len(order), self.max_batch_size):
                    chunk = order[start : start + self.max_batch_size]
                    gens = self._generate_batch([prompts[i] for i in chunk], params)
                    for i, g in zip(chunk, gens):
                        out[i] = g
                self.rng_state = self._get_state()
        finally:
            self.model.train(was_training)
        return out  # type: ignore[return-value]

    def _generate_batch(self, prompts: list[list[int]], params: SamplingParams) -> list[Generation]:
        import torch

        device = next(self.model.parameters()).device
        pad = self.tokenizer.pad_token_id
        ids, attn = left_pad(prompts, pad)
        width = ids.shape[1]
        greedy = params.temperature <= 0
        kwargs: dict[str, Any] = {"do_sample": not greedy}
        if not greedy:
            kwargs.update(temperature=params.temperature, top_p=params.top_p, top_k=0)
        result = self.model.generate(
            input_ids=ids.to(device),
            attention_mask=attn.to(device),
            max_new_tokens=params.max_new_tokens,
            output_logits=True,
            return_dict_in_generate=True,
            pad_token_id=pad,
            eos_token_id=sorted(self._eos),
            use_cache=True,
            **kwargs,
        )
        new = result.sequences[:, width:]  # (b, T)
        logits = torch.stack(result.logits, dim=1).float()  # (b, T, V): raw, before warpers
        temp = params.temperature if not greedy else 1.0
        logp = torch.log_softmax(logits / temp, dim=-1).gather(-1, new.unsqueeze(-1)).squeeze(-1)
        gens = []
        for row in range(len(prompts)):
            toks = new[row].tolist()
            end = next((j for j, t in enumerate(toks) if t in self._eos), None)
            if end is None:
                finish, n = "length", len(toks)
            else:
                finish, n = "stop", end + 1
            toks = toks[:n]
            gens.append(
                Generation(
                    token_ids=toks,
                    logprobs=logp[row, :n].tolist(),
                    text=self.tokenizer.decode(toks, skip_special_tokens=True),
                    finish_reason=finish,
                )
            )
        return gens
