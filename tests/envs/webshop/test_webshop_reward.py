"""The purchase reward, starting with upstream's published test cases (test_goal.py)."""

from __future__ import annotations

from math import isclose
from types import SimpleNamespace

import pytest

from agent_gym.envs.webshop.reward import (
    attribute_matches,
    normalize_color,
    option_matches,
    purchase_reward,
    title_nouns,
    type_reward,
)

SAIREED = (
    "Saireed UL Listed 2 Prong Power Cord for JBL Bar 3.1 Bar 2.1 Channel 4K Ultra HD Soundbar"
)
BRST = (
    "BRST AC Power Cord Outlet Socket Cable Plug Lead for Panasonic SC-HT830V DVD/VCR Combo "
    "Home Theater System"
)


def _type(bought_name, bought_query, bought_cat, goal_name="Name 1"):
    return type_reward(bought_name, bought_query, bought_cat, goal_name, "Query 1", "a › b › c")


# --- upstream test_get_type_reward -------------------------------------------------------
def test_type_reward_exact_match():
    r = _type("Name 1", "Query 1", "a › b › c")
    assert (r.r_type, r.query_match, r.category_match, r.title_score) == (1.0, True, True, 1.0)


@pytest.mark.parametrize(
    ("category", "match"),
    [("b › c › a", True), ("d › e › f", False), ("a › d › b", True), ("a › a › b", True),
     ("a › a › d", False)],
)  # fmt: skip
def test_category_match_needs_two_shared_levels(category, match):
    assert _type("Name 1", "Query 2", category).category_match is match


def test_query_mismatch():
    assert _type("Name 1", "Query 2", "a › b › c").query_match is False


@pytest.mark.parametrize(
    ("goal", "bought", "expected"),
    [
        ("adidas Unisex-Adult D.o.n. Issue 2 Basketball Shoe",
         "adidas Unisex-Adult D.o.n. Issue 2 Indoor Court Shoe", 0.85),
        (SAIREED + " Home Theater System Subwoofer", BRST, 0.31),
        (SAIREED, BRST, 0.17),
    ],
)  # fmt: skip
def test_title_scores_match_upstream_within_001(goal, bought, expected):
    # Upstream computes these with spaCy's en_core_web_lg; the heuristic reproduces them.
    assert isclose(_type(bought, "q", "x", goal).title_score, expected, abs_tol=1e-2)


def test_completely_different_names():
    r = _type(
        "Minkissy 2pcs Stainless Steel Eyebrow Tweezers Blackhead Acne Remover Portable Makeup "
        "Tweezers (Silver)",
        "Query 1",
        "a › b › c",
        "Rusticware 921ORB Kitchen and Bath Cabinet Knob",
    )
    assert r.title_score < 0.05 and r.r_type == 0.0


def test_r_type_ladder_by_hand():
    # title 1/2 -> 1.0 with no other match; 1/6 (0.1 <= s <= 0.2) -> 0.5; 1/11 < 0.1 -> 0.1.
    assert _type("lamp", "q", "x › y", "lamp shade").r_type == 1.0
    assert _type("lamp", "q", "x › y", "lamp shade cord plug bulb switch").r_type == 0.5
    many = "lamp shade cord plug bulb switch base arm clip stand knob"
    assert _type("lamp", "q", "x › y", many).r_type == 0.1
    assert _type("Name 1", "q", "x › y", "1 2 3").title_score == 0.2  # goal without nouns


# --- upstream test_get_attribute_reward ---------------------------------------------------
GOAL_ATTRS = ["tea tree", "essential oils", "natural ingredients"]


@pytest.mark.parametrize(
    ("attrs", "title", "bullets", "description", "expected"),
    [
        (["tea tree", "essential oil", "natural ingredients"], "", [], "", 3),
        (["essential oil", "natural ingredients"], "", [], "", 2),
        ([], "", ["This shampoo has essential oils and smells like lemons"],
         "Best shampoo on the market, made with natural ingredients", 2),
        (["tea bag", "earl gray", "lipton"], "English tea for breakfast",
         ["Soothing aroma", "Calming, great feeling"],
         "Best tea made by Lipton, great to pair with breakfast", 0),
    ],
)  # fmt: skip
def test_attribute_matches(attrs, title, bullets, description, expected):
    assert attribute_matches(GOAL_ATTRS, attrs, title, bullets, description) == expected


# --- upstream test_get_option_reward (options now carry their names) ----------------------
@pytest.mark.parametrize(
    ("goal", "chosen", "expected"),
    [
        (["grey", "XL", "pack of 12"], {"amount": "pack of 12", "color": "grey", "size": "XL"}, 3),
        (["grey", "XL", "pack of 12"], {"amount": "pack of 12", "color": "blue", "size": "XL"}, 2),
        (["cool powder snow", "XL", "pack of 12"],
         {"amount": "pack of 12", "color": "powder snow", "size": "XL"}, 3),
        ([], {"a": "goal 1", "b": "goal 2"}, 0),
        (["goal 1", "goal 2"], {}, 0),
    ],
)  # fmt: skip
def test_option_matches(goal, chosen, expected):
    assert option_matches(goal, chosen, "", [], "") == expected


def test_size_is_exact_other_options_fuzzy():
    # "x-large" vs "xx-large": token_set_ratio is high, but sizes must match exactly.
    assert option_matches(["xx-large"], {"size": "x-large"}, "", [], "") == 0
    assert option_matches(["xx-large"], {"fit": "x-large"}, "", [], "") == 1


def test_option_found_in_title_counts():
    assert option_matches(["red"], {"size": "queen"}, "Queen Bed Frame", [], "") == 1


@pytest.mark.parametrize(
    ("value", "expected"),
    [("", ""), ("black forest", "black"), ("violet lavender", "lavender"),
     ("steelivy fuchsia", "fuchsia"), ("123alabaster", "alabaster"), ("webshop", "webshop")],
)  # fmt: skip
def test_normalize_color_upstream_cases(value, expected):
    assert normalize_color(value) == expected


# --- upstream test_get_reward -------------------------------------------------------------
def _product(**kw):
    base = dict(
        name="Mens D.O.N. Issue 2 Gca Basketball Sneakers Shoes Casual - Off White",
        query="Query 1",
        product_category="a › b › c",
        attributes=("tea tree", "essential oil", "natural ingredients"),
        bullets=(),
        description="",
        price=35.0,
    )
    return SimpleNamespace(**{**base, **kw})


def _goal(**kw):
    base = dict(
        name="Mens D.O.N. Issue 2 Gca Basketball Sneakers Shoes Casual - Off White",
        query="Query 1",
        product_category="a › b › c",
        attributes=GOAL_ATTRS,
        options=["grey", "XL"],
        price_upper=40.0,
    )
    return SimpleNamespace(**{**base, **kw})


CHOSEN = {"color": "grey", "size": "XL"}


def test_reward_exact_match_is_one():
    assert purchase_reward(_product(), _goal(), CHOSEN).total == 1.0


def test_reward_variations_match_upstream():
    # Upstream passes BulletPoints as a bare string here, so ' '.join() spaces its letters
    # out and "essential oils" is not found in it; empty bullets reproduce that count: only
    # "natural ingredients" (from the description) matches. (1 + 2 + 1) / 6.
    product = _product(attributes=(), description="Best shampoo, made with natural ingredients")
    assert isclose(purchase_reward(product, _goal(), CHOSEN).total, 4 / 6)
    goal = _goal(options=["grey", "XL", "pack of 12"])  # (1 + 2 + 1) / 7 = 0.5714
    assert isclose(purchase_reward(product, goal, CHOSEN).total, 0.5714, abs_tol=1e-4)
    # Different type: no query or category match, title score 1/6 -> r_type 0.5: 0.2857.
    goal = _goal(options=["grey", "XL", "pack of 12"], name=SAIREED)
    product = _product(
        attributes=(),
        description="Best shampoo, made with natural ingredients",
        name=BRST,
        query="Query 2",
        product_category="a › d › e",
    )
    r = purchase_reward(product, goal, CHOSEN)
    assert r.r_type == 0.5 and isclose(r.total, 0.2857, abs_tol=1e-4)


def test_price_over_limit_loses_one_part():
    r = purchase_reward(_product(price=40.01), _goal(), CHOSEN)
    assert not r.price_ok and isclose(r.total, 5 / 6)


def test_title_nouns_drop_numbers_stopwords_and_title_adjectives():
    assert title_nouns("Ultra HD 4K TV for the Living Room, 55 Inch") == (
        "hd", "4k", "tv", "living", "room", "inch",
    )  # fmt: skip


def test_unknown_noun_parser_is_an_error():
    with pytest.raises(ValueError, match="noun_parser"):
        title_nouns("x", "nltk")
