"""Any OpenAI-compatible endpoint (vLLM, SGLang, llama.cpp server, hosted APIs).

Two modes:

* **token mode** (``tokenizer`` given): prompts are token ids sent to ``/v1/completions``
  (vLLM accepts token-id prompts); the server is asked for the sampled tokens' log-probs and
  ids (``logprobs=1``, vLLM's ``return_token_ids``). Training needs this mode, and only works
  if the server returns both; otherwise ``returns_logprobs`` is False and the trainer refuses.
* **chat mode** (no tokenizer): prompts are chat messages sent to ``/v1/chat/completions``;
  for evaluating third-party models. No token ids, no log-probs.

Only the standard library is used (``urllib``), so no extra is needed.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

from agent_gym.remote import server_url_parts
from algos.backends.base import Generation, SamplingParams


def check_base_url(base_url: str) -> None:
    """Refuse a server root that is not an ``http://`` or ``https://`` URL with a host.

    Raises:
        ValueError: Naming the URL.
    """
    if server_url_parts(base_url, ("http", "https")) is None:
        raise ValueError(
            f"openai backend: {base_url!r} is not a server URL; give one like "
            "http://127.0.0.1:8000 (with or without /v1)"
        )


class OpenAIBackend:
    """Sample from an OpenAI-compatible server.

    Args:
        base_url: Server root, e.g. ``http://127.0.0.1:8000`` (``/v1`` is added if missing).
        model: Served model name.
        tokenizer: The served model's tokenizer for token mode, or None for chat mode.
        api_key: Sent as a bearer token (``EMPTY`` for local servers).
        timeout: Seconds per request.

    Raises:
        ValueError: ``base_url`` is not an http(s) URL.
    """

    def __init__(
        self,
        base_url: str,
        *,
        model: str,
        tokenizer: Any = None,
        api_key: str = "EMPTY",
        timeout: float = 120.0,
    ) -> None:
        check_base_url(base_url)
        url = base_url.rstrip("/")
        self.base_url = url if url.endswith("/v1") else url + "/v1"
        self.model, self.tokenizer, self.api_key, self.timeout = model, tokenizer, api_key, timeout
        self.returns_logprobs = tokenizer is not None

    def sync_weights(self, model: Any) -> None:
        """A remote server's weights cannot be replaced from here."""
        raise NotImplementedError(
            "the openai backend serves a fixed model: use it for evaluation, and hf or vllm "
            "for training"
        )

    def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        req = urllib.request.Request(
            self.base_url + path,
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json", "Authorization": f"Bearer {self.api_key}"},
        )
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                return json.loads(resp.read())
        except urllib.error.URLError as exc:
            raise ConnectionError(f"{self.base_url + path}: {exc}") from exc

    def generate(self, prompts: list[Any], params: SamplingParams) -> list[Generation]:
        """One response per prompt (token id lists in token mode, message lists in chat mode)."""
        sampling = {
            "max_tokens": params.max_new_tokens,
            "temperature": params.temperature,
            "top_p": params.top_p,
        }
        if self.tokenizer is None:
            out = []
            for messages in prompts:
                data = self._post(
                    "/chat/completions", {"model": self.model, "messages": messages, **sampling}
                )
                choice = data["choices"][0]
                out.append(
                    Generation(
                        [],
                        None,
                        choice["message"]["content"] or "",
                        "length" if choice.get("finish_reason") == "length" else "stop",
                    )
                )
            return out
        data = self._post(
            "/completions",
            {
                "model": self.model,
                "prompt": prompts,
                "logprobs": 1,
                "return_token_ids": True,
                **sampling,
            },
        )
        choices = sorted(data["choices"], key=lambda c: c.get("index", 0))
        out = []
        for choice in choices:
            ids = choice.get("token_ids")
            lp = (choice.get("logprobs") or {}).get("token_logprobs")
            if ids is None or lp is None:
                self.returns_logprobs = False
            out.append(
                Generation(
                    token_ids=list(ids or []),
                    logprobs=[float(x) for x in lp] if lp is not None else None,
                    text=choice.get("text", ""),
                    finish_reason="length" if choice.get("finish_reason") == "length" else "stop",
                )
            )
        return out
