"""Text of generated papers and queries: titles, abstracts and requests from varied templates.

Papers name their facets with random aliases, some titles leave out the method or the task,
a third of the abstracts never name their dataset, and most abstracts carry a distractor
sentence naming another method, dataset or task. Keyword search for the query's canonical
phrasing therefore misses some relevant papers and ranks some irrelevant ones high, which is
what makes the citation graph (``expand``) worth using.
"""

from __future__ import annotations

import random

ADJECTIVES = (
    "efficient",
    "robust",
    "scalable",
    "label-efficient",
    "interpretable",
    "lightweight",
    "adaptive",
    "unified",
    "simple",
    "stable",
    "calibrated",
    "sparse",
)
IDEAS = (
    "curriculum scheduling",
    "uncertainty-aware weighting",
    "a sparse mixture of experts",
    "hierarchical memory",
    "multi-scale fusion",
    "adaptive gating",
    "latent alignment",
    "dynamic sparsity",
    "cross-view consistency",
    "residual calibration",
    "token pruning",
    "a meta-learned initialisation",
    "structured dropout",
    "bilevel optimisation",
    "low-rank adapters",
    "a learned reweighting of examples",
    "progressive resizing",
)
PROPERTIES = (
    "sample efficiency",
    "robustness",
    "generalisation",
    "calibration",
    "training stability",
    "scaling behaviour",
)
_SYLLABLES = (
    "ka",
    "lo",
    "ri",
    "ne",
    "tor",
    "vex",
    "mi",
    "sa",
    "du",
    "phi",
    "zen",
    "tra",
    "quo",
    "bel",
    "mor",
    "ly",
    "an",
    "ce",
    "ro",
    "vi",
)
_SUFFIXES = ("Net", "Former", "", "", "-X", "Flow", "Bench", "++", "Lite", "Mix")

_TITLES = (
    "{name}: {Method} for {Task}",
    "{Adj} {Method} for {Task}",
    "Improving {Task} with {Method}",
    "Revisiting {Method} for {Task} on {dataset}",
    "{name}: Towards {Adj} {Task}",
    "{name}: {Idea} for {Task}",
    "On the {Property} of {Method} in {Task}",
    "When Does {Method} Help {Task}?",
    "{name}: {Adj} {Method} with {Idea}",
    "Scaling {Method} to {dataset}",
)
_CONTEXT = (
    "{Task} is a core problem in {field}.",
    "Progress in {task} has been driven by ever larger models and benchmarks.",
    "{Task} remains difficult when labelled data is scarce.",
    "Despite recent advances, {task} systems are brittle under distribution shift.",
    "Many applications depend on accurate {task}.",
    "Learning from limited supervision is a recurring challenge in {field}.",
    "Strong baselines in {field} are often expensive to train and hard to reproduce.",
)
_METHOD = (
    "We propose {name}, a {method} approach to {task} built around {idea}.",
    "In this work we revisit {method} and show that {idea} makes it competitive for {task}.",
    "This paper studies how {method} can be adapted to {task}.",
    "We introduce {name}, which combines {method} with {idea}.",
    "We present {name}, a {method} model trained with {idea}.",
)
_METHOD_SILENT = (
    "We introduce {name}, a simple approach based on {idea}.",
    "Our approach, {name}, relies on {idea} and needs no extra supervision.",
)
_DETAIL = (
    "{Idea2} further reduces the cost of training.",
    "The approach needs no additional labels and adds little compute.",
    "We analyse its {property} and derive a simple rule for choosing hyperparameters.",
    "A theoretical analysis explains when {idea2} helps.",
    "Ablations isolate the effect of {idea2}.",
)
_DATASET = (
    "Experiments on {dataset} show gains of {gain} points over strong baselines.",
    "On {dataset}, {name} reaches state-of-the-art results with {factor}x fewer parameters.",
    "We evaluate on the {dataset} benchmark, where {name} outperforms prior work.",
)
_DATASET_SILENT = (
    "Experiments on standard benchmarks show consistent improvements.",
    "Extensive experiments confirm the benefits of the approach.",
)
_DISTRACTORS = (
    "Unlike earlier work based on {other_method}, our model needs no task-specific tuning.",
    "We also report results on {other_dataset}, where the gains are smaller.",
    "Our findings may also transfer to {other_task}.",
    "We compare against {other_method} baselines and discuss their limitations.",
)
_CLOSING = (
    "Code and models are publicly available.",
    "We release our implementation to support future research.",
    "Ablations confirm the contribution of each component.",
)

#: Request templates by query kind (the facet keys the kind constrains).
QUERY_TEMPLATES: dict[tuple[str, ...], tuple[str, ...]] = {
    ("method", "task", "dataset"): (
        "Find papers that apply {method} to {task} on {dataset}.",
        "Which papers use {method} for {task} and evaluate on {dataset}?",
        "I need work on {task} with {method}, tested on {dataset}.",
        "Papers on {task} that rely on {method} and report results on {dataset}.",
    ),
    ("method", "task"): (
        "Find papers that use {method} for {task}.",
        "Which works tackle {task} with {method}?",
        "Research on {method} applied to {task}.",
    ),
    ("method", "task", "min_year"): (
        "Find papers from {min_year} onwards that use {method} for {task}.",
        "Which papers published since {min_year} apply {method} to {task}?",
    ),
    ("task", "dataset", "min_year"): (
        "Find {task} papers published in {min_year} or later that evaluate on {dataset}.",
        "Which papers since {min_year} on {task} report results on {dataset}?",
    ),
}


def _cap(text: str) -> str:
    """Capitalise the first letter only ("CNN-based ..." and "ImageNet" stay as they are)."""
    return text[:1].upper() + text[1:]


def _title_case(text: str) -> str:
    """Capitalise words longer than three letters that start in lower case."""
    return " ".join(_cap(w) if len(w) > 3 and w[:1].islower() else w for w in text.split(" "))


def system_name(rng: random.Random) -> str:
    """A made-up system name such as ``"Torvex-X"`` or ``"Quobel"``."""
    word = "".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(2, 3)))
    return _cap(word) + rng.choice(_SUFFIXES)


def write_paper(
    rng: random.Random,
    *,
    field: str,
    task: str,
    method: str,
    dataset: str,
    other_method: str,
    other_dataset: str,
    other_task: str,
) -> tuple[str, str]:
    """Write a title and an abstract for a paper with these facets.

    Args:
        rng: Source of randomness (the generator's, for reproducibility).
        field: Field name.
        task: The phrasing of the task this paper uses (canonical name or an alias).
        method: The phrasing of the method this paper uses.
        dataset: Dataset name.
        other_method: A method the distractor sentence may name.
        other_dataset: A dataset the distractor sentence may name.
        other_task: A task the distractor sentence may name.

    Returns:
        ``(title, abstract)``.
    """
    name = system_name(rng)
    idea, idea2 = rng.sample(IDEAS, 2)
    slots = {
        "name": name,
        "field": field,
        "task": task,
        "Task": _cap(task),
        "method": method,
        "Method": _title_case(method),
        "dataset": dataset,
        "idea": idea,
        "Idea": _cap(idea),
        "idea2": idea2,
        "Idea2": _cap(idea2),
        "Adj": _cap(rng.choice(ADJECTIVES)),
        "property": rng.choice(PROPERTIES),
        "gain": f"{rng.uniform(0.3, 4.5):.1f}",
        "factor": rng.randint(2, 8),
        "other_method": other_method,
        "other_dataset": other_dataset,
        "other_task": other_task,
    }
    slots["Property"] = _title_case(slots["property"])
    title = _title_case(rng.choice(_TITLES).format(**{**slots, "Task": _title_case(task)}))
    sentences = [rng.choice(_CONTEXT)]
    sentences.append(rng.choice(_METHOD if rng.random() < 0.85 else _METHOD_SILENT))
    sentences.append(rng.choice(_DETAIL))
    sentences.append(rng.choice(_DATASET if rng.random() < 0.65 else _DATASET_SILENT))
    if rng.random() < 0.7:
        sentences.insert(rng.randint(2, len(sentences)), rng.choice(_DISTRACTORS))
    if rng.random() < 0.5:
        sentences.append(rng.choice(_CLOSING))
    abstract = " ".join(s.format(**slots) for s in sentences)
    return title, abstract


def write_query(rng: random.Random, facets: dict[str, str | int]) -> str:
    """Write a natural-language request for a facet conjunction.

    Args:
        rng: Source of randomness.
        facets: The constraints; their keys must be one of :data:`QUERY_TEMPLATES`' kinds.

    Returns:
        The request text.
    """
    kind = tuple(k for k in ("method", "task", "dataset", "min_year") if k in facets)
    return rng.choice(QUERY_TEMPLATES[kind]).format(**facets)
