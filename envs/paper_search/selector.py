"""Relevance selectors: what scores a paper against the user's query (PaperScout's reward model).

PaperScout scores new papers with a PaSa-style LLM classifier (the *selector*). Here any object
with a ``score(query, papers)`` method can play that part:

* :class:`RuleSelector` (the default) is deterministic, so rewards are reproducible in tests
  and CI: a relevant paper scores 1.0, any other at most 0.3 in proportion to how much of the
  query it matches.
* :class:`LLMSelector` asks a model behind any OpenAI-compatible ``/chat/completions`` endpoint
  (vLLM, llama.cpp, a hosted API) whether the paper satisfies the query, using only the
  standard library's HTTP client.
"""

from __future__ import annotations

import json
import math
import os
import urllib.error
import urllib.request
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol, runtime_checkable

from .records import Paper, Query, facet_match
from .search import tokenize

#: Highest score :class:`RuleSelector` gives a paper outside the gold set; below the discrete
#: reward threshold (0.4) and the metric threshold (0.5), so only relevant papers count there.
PARTIAL_CREDIT = 0.3

JUDGE_PROMPT = """You are an expert researcher judging a literature search result.

Search request: {query}

Candidate paper
Title: {title}
Abstract: {abstract}

Does this paper satisfy every requirement of the search request? Answer with one word, True or False."""


@runtime_checkable
class Selector(Protocol):
    """Scores papers for relevance to a query."""

    def score(self, query: Query, papers: Sequence[Paper]) -> list[float]:
        """One score in [0, 1] per paper, in order (1 = certainly relevant)."""
        ...


class RuleSelector:
    """Deterministic selector: 1.0 for relevant papers, partial credit below 0.3 otherwise.

    A paper in the query's gold set scores 1.0. Otherwise, for generated data, it scores
    ``0.3 * matched / total`` over the query's facet constraints (a paper on the right task
    with the wrong method earns a little, an unrelated one 0 and is dropped); for real data,
    which has no facets, ``0.3 *`` the share of the query's terms found in title and abstract.

    Example:
        >>> q = Query("q", "GNN for Cora", frozenset({"p1"}), facets={"method": "gnn", "task": "nc"})
        >>> papers = [Paper("p1", "t"), Paper("p2", "t", facets={"method": "gnn", "task": "lp"})]
        >>> RuleSelector().score(q, papers)
        [1.0, 0.15]
    """

    def score(self, query: Query, papers: Sequence[Paper]) -> list[float]:
        """See :class:`Selector`."""
        terms = None
        out = []
        for p in papers:
            if p.paper_id in query.gold:
                out.append(1.0)
            elif query.facets and p.facets:
                matched, total = facet_match(query.facets, p.facets)
                out.append(round(PARTIAL_CREDIT * matched / total, 4))
            else:
                if terms is None:
                    terms = set(tokenize(query.text))
                words = set(tokenize(f"{p.title} {p.abstract}"))
                share = len(terms & words) / len(terms) if terms else 0.0
                out.append(round(PARTIAL_CREDIT * share, 4))
        return out


class SelectorError(RuntimeError):
    """The LLM judge could not be reached or answered in an unexpected form."""


class LLMSelector:
    """An LLM judge at an OpenAI-compatible endpoint.

    Each paper is one ``/chat/completions`` request with :data:`JUDGE_PROMPT`, asking for one
    token with log-probabilities. The score is ``P(True) / (P(True) + P(False))`` over the
    first token's top log-probabilities (as PaSa's selector reads its "True" probability);
    servers without log-probabilities fall back to the answer text (True -> 1, else 0).
    Scores are cached per (query, paper), so GRPO groups that revisit papers cost nothing.

    Args:
        base_url: Endpoint root, e.g. ``"http://127.0.0.1:8000/v1"``.
        model: Model name sent in each request.
        api_key: Bearer token; defaults to ``$OPENAI_API_KEY`` when set.
        timeout: Seconds per request.
        max_workers: Concurrent requests for one tool call's papers.
        prompt: Template with ``{query}``, ``{title}`` and ``{abstract}``.

    Raises:
        SelectorError: From :meth:`score`, naming the URL, when a request fails.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        timeout: float = 60.0,
        max_workers: int = 8,
        prompt: str = JUDGE_PROMPT,
    ) -> None:
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.model = model
        self.api_key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY")
        self.timeout = timeout
        self.max_workers = max(1, max_workers)
        self.prompt = prompt
        self._cache: dict[tuple[str, str], float] = {}

    def score(self, query: Query, papers: Sequence[Paper]) -> list[float]:
        """See :class:`Selector`."""
        todo = list(
            {p.paper_id: p for p in papers if (query.text, p.paper_id) not in self._cache}.values()
        )
        if len(todo) == 1 or self.max_workers == 1:
            results = [self._judge(query, p) for p in todo]
        elif todo:
            with ThreadPoolExecutor(min(self.max_workers, len(todo))) as pool:
                results = list(pool.map(lambda p: self._judge(query, p), todo))
        else:
            results = []
        if len(self._cache) > 200_000:  # bound memory over very long runs
            self._cache.clear()
        for p, s in zip(todo, results):
            self._cache[(query.text, p.paper_id)] = s
        return [self._cache[(query.text, p.paper_id)] for p in papers]

    def _judge(self, query: Query, paper: Paper) -> float:
        content = self.prompt.format(query=query.text, title=paper.title, abstract=paper.abstract)
        body = {
            "model": self.model,
            "messages": [{"role": "user", "content": content}],
            "max_tokens": 1,
            "temperature": 0.0,
            "logprobs": True,
            "top_logprobs": 5,
        }
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        request = urllib.request.Request(
            self.url, data=json.dumps(body).encode(), headers=headers, method="POST"
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                reply = json.loads(response.read().decode("utf-8"))
        except urllib.error.HTTPError as exc:
            raise SelectorError(f"selector {self.url}: HTTP {exc.code} {exc.reason}") from exc
        except (urllib.error.URLError, OSError) as exc:
            raise SelectorError(f"selector {self.url}: cannot connect ({exc})") from exc
        except json.JSONDecodeError as exc:
            raise SelectorError(f"selector {self.url}: reply is not JSON ({exc.msg})") from exc
        return _read_judgement(reply, self.url)


def _read_judgement(reply: Any, url: str) -> float:
    """P(True) from a chat-completions reply (log-probabilities first, then the text)."""
    try:
        choice = reply["choices"][0]
    except (KeyError, IndexError, TypeError):
        raise SelectorError(f"selector {url}: reply has no choices: {str(reply)[:200]}") from None
    try:
        first = ((choice.get("logprobs") or {}).get("content") or [{}])[0] or {}
        probs = {"true": 0.0, "false": 0.0}
        for t in first.get("top_logprobs") or []:
            word = str(t["token"]).strip().lower()
            if word in probs:
                probs[word] += math.exp(float(t["logprob"]))
        if probs["true"] + probs["false"] > 0:
            return probs["true"] / (probs["true"] + probs["false"])
        text = str((choice.get("message") or {}).get("content") or "").strip().lower()
    except (AttributeError, KeyError, IndexError, TypeError, ValueError) as exc:
        raise SelectorError(
            f"selector {url}: unexpected reply {str(reply)[:200]} ({exc!r})"
        ) from None
    return 1.0 if text.startswith("true") else 0.0


def make_selector(spec: str | dict | Selector) -> Selector:
    """Turn the env's ``selector`` argument into a selector.

    Args:
        spec: ``"rule"``; a dict ``{"type": "llm", "base_url": ..., "model": ..., ...}``
            (the :class:`LLMSelector` arguments; usable from the command line as JSON); or
            any object with a ``score(query, papers)`` method.

    Raises:
        ValueError: For anything else, listing what is accepted.
    """
    if isinstance(spec, str) and spec == "rule":
        return RuleSelector()
    if isinstance(spec, dict) and spec.get("type") == "llm":
        args = {k: v for k, v in spec.items() if k != "type"}
        try:
            return LLMSelector(**args)
        except TypeError as exc:
            raise ValueError(f"selector={spec!r}: {exc}; give base_url and model") from None
    if isinstance(spec, Selector) and not isinstance(spec, (str, dict)):
        return spec
    raise ValueError(
        f"selector={spec!r} is not understood; use 'rule', a dict "
        "{'type': 'llm', 'base_url': 'http://host:port/v1', 'model': 'name'}, or an object "
        "with a score(query, papers) method"
    )
