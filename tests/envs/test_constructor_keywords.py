"""Each env's constructor keywords are checked for their kind when the env is made.

Env-specific (each env has its own keywords), so not a check of ``test_env_contract.py``,
whose checks are also run against remote envs.
"""

from __future__ import annotations

import re

import gymnasium as gym
import pytest

import agent_gym  # noqa: F401  (registers the AgentR1/* ids)


@pytest.mark.parametrize(
    ("env_id", "kwargs", "message"),
    [
        (
            "AgentR1/WebShop-v0",
            {"num_products": "abc"},
            "num_products must be a whole number or None, got 'abc' (str)",
        ),
        (
            "AgentR1/WebShop-v0",
            {"num_products": 1.5},
            "num_products must be a whole number or None, got 1.5",
        ),
        (
            "AgentR1/WebShop-v0",
            {"goals_per_product": "6"},
            "goals_per_product must be a whole number, got '6'",
        ),
        ("AgentR1/WebShop-v0", {"seed": "x"}, "seed must be a whole number, got 'x' (str)"),
        # HotpotQA's counts took True for 1 (a bool is an int) and refused numpy's integers
        ("AgentR1/HotpotQA-v0", {"top_k": True}, "top_k must be a whole number, got True"),
        ("AgentR1/HotpotQA-v0", {"passage_chars": 0}, "passage_chars must be >= 1, got 0"),
        (
            "AgentR1/HotpotQA-v0",
            {"force_first_search": "no"},
            "force_first_search must be True or False, got 'no'",
        ),
        (
            "AgentR1/PaperSearch-v0",
            {"search_top_k": "x"},
            "search_top_k must be a whole number, got 'x'",
        ),
        (
            "AgentR1/PaperSearch-v0",
            {"citations_limit": -2},
            "citations_limit must be >= -1, got -2",
        ),
        (
            "AgentR1/PaperSearch-v0",
            {"search_cost": "x"},
            "search_cost must be a finite number or None, got 'x'",
        ),
        (
            "AgentR1/PaperSearch-v0",
            {"expand_cost": float("nan")},
            "expand_cost must be a finite number or None, got nan",
        ),
        (
            "AgentR1/PaperSearch-v0",
            {"discrete_reward": "no"},
            "discrete_reward must be True or False, got 'no'",
        ),
        (
            "AgentR1/PaperSearch-v0",
            {"corpus_seed": 1.5},
            "corpus_seed must be a whole number, got 1.5",
        ),
        (
            "AgentR1/ALFWorld-v0",
            {"expert_plan": "no"},
            "expert_plan must be True or False, got 'no' (str)",
        ),
    ],
)
def test_constructor_keywords_of_the_wrong_kind_are_named(env_id, kwargs, message) -> None:
    """As typed on a command line they failed far from their name (``invalid literal for
    int()`` at the first reset, a TypeError), or not at all: ``"no"`` was taken as True."""
    with pytest.raises(ValueError, match=re.escape(message)):
        gym.make(env_id, **kwargs)
