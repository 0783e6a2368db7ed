"""WebShopEnv: page transitions, invalid actions, rewards, the expert, and official data."""

from __future__ import annotations

from pathlib import Path

import gymnasium as gym
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import agent_gym  # noqa: F401 - registers the ids
from agent_gym.envs.webshop.env import MAX_QUERY_CHARS, SEARCH_PLACEHOLDER, WebShopEnv
from agent_gym.envs.webshop.expert import expert_queries

FIXTURES = Path(__file__).parent / "fixtures" / "official"


@pytest.fixture()
def env():
    e = WebShopEnv(split="test")
    yield e
    e.close()


def _goal_with_options(env):
    for i in range(len(env.store.catalogue.split("test"))):
        env.reset(options={"task_id": f"test-{i}"})
        goal = env._goal
        product = env.store.catalogue.by_asin[goal.asin]
        if len(goal.options) >= 1 and len(product.options) >= 1:
            return goal, product
    raise AssertionError("no goal with options")


def test_walk_through_every_page(env):
    goal, product = _goal_with_options(env)
    obs, info = env.reset(options={"task_id": env._task_id(goal)})
    assert info["admissible_actions"] == [SEARCH_PLACEHOLDER] and info["page"] == "search"
    obs, r, term, trunc, info = env.step(f"search[{goal.name}]")
    assert (r, term, trunc, info["is_action_valid"], info["page"]) == (
        0.0,
        False,
        False,
        True,
        "results",
    )
    assert f"Current Query: {goal.name.lower()}" in obs and "Page 1 (Total results: " in obs
    assert info["admissible_actions"][0] == "click[back to search]"
    asin = goal.asin.lower()
    if "click[next >]" in info["admissible_actions"]:
        _, _, _, _, info = env.step("click[next >]")
        assert "Page 2 (Total results:" in info["anchor_obs"]
        _, _, _, _, info = env.step("click[< prev]")
        assert "Page 1 (Total results:" in info["anchor_obs"]
    obs, _, _, _, info = env.step(f"Click[{goal.asin}]")  # verb and target are case-insensitive
    assert info["page"] == "item" and f"Price: {product.price_tag}" in obs
    value = goal.options[0]
    _, _, _, _, info = env.step(f"click[{value}]")
    assert "You have clicked" in info["anchor_obs"] and value in info["anchor_obs"]
    for sub in ("description", "features", "reviews"):
        _, _, _, _, info = env.step(f"click[{sub}]")
        assert info["page"] == sub
        _, _, _, _, info = env.step("click[< prev]")
        assert info["page"] == "item" and value in info["anchor_obs"]  # options survive
    _, _, _, _, info = env.step("click[< prev]")
    assert info["page"] == "results" and f"click[{asin}]" in info["admissible_actions"]
    _, _, _, _, info = env.step("click[back to search]")
    assert info["page"] == "search" and info["admissible_actions"] == [SEARCH_PLACEHOLDER]


@pytest.mark.parametrize(
    ("action", "reason"),
    [
        ("buy it", "write search[keywords] or click[target]"),
        ("click[buy now]", "is not clickable on this page"),
        ("search[   ]", "needs keywords"),
        ("click[search]", "is not clickable"),
        ("search[a]trailing", "write search[keywords]"),
    ],
)
def test_invalid_actions_leave_the_state_unchanged(env, action, reason):
    obs0, info0 = env.reset(seed=1)
    obs, r, term, trunc, info = env.step(action)
    assert info["is_action_valid"] is False and reason in obs
    assert obs.endswith(obs0) and info["anchor_obs"] == info0["anchor_obs"]
    assert (r, term, trunc) == (0.0, False, False)


def test_search_only_from_the_search_page(env):
    env.reset(seed=1)
    _, _, _, _, info = env.step("search[lamp]")
    obs, _, _, _, info2 = env.step("search[chair]")
    assert not info2["is_action_valid"] and "search page only" in obs
    assert info2["anchor_obs"] == info["anchor_obs"]


@pytest.mark.parametrize(
    "query",
    ["<script>alert(1)</script>&amp;", "\ud800 lone surrogate", "\x00\x1b[31m", "x" * 100_000,
     "]]][[[", "点击 кликнуть 🛒"],
)  # fmt: skip
def test_any_query_is_shown_as_text(env, query):
    env.reset(seed=2)
    obs, _, _, _, info = env.step(f"search[{query}]")
    assert info["is_action_valid"] is True
    assert "<script>alert" not in env.page_html
    shown = query.replace("\ud800", "").lower()[:MAX_QUERY_CHARS].strip()  # surrogates dropped
    assert shown[:50] in obs
    obs.encode("utf-8")  # never a lone surrogate
    assert "x" * (MAX_QUERY_CHARS + 1) not in obs  # the echo of a 100k-character query is cut


def test_buying_ends_the_episode_with_the_reward(env):
    env.reset(options={"task_id": "test-0"})
    goal = env._goal
    for action in (f"search[{goal.name}]", f"click[{goal.asin}]", "click[buy now]"):
        obs, reward, term, trunc, info = env.step(action)
    expected = (len(goal.attributes) + 0 + 1) / (len(goal.attributes) + len(goal.options) + 1)
    assert term is True and trunc is False and reward == pytest.approx(expected)
    assert info["score"] == reward and info["won"] is (reward >= 1.0)
    assert info["reward_info"]["option_matches"] == 0 and info["purchased"]["asin"] == goal.asin
    assert "Your score (min 0.0, max 1.0)" in obs and info["admissible_actions"] == []
    obs, reward, term, _, info = env.step("click[buy now]")
    assert not info["is_action_valid"] and reward == 0.0 and "episode is over" in obs


def test_wrong_product_scores_less(env):
    env.reset(options={"task_id": "test-1"})
    goal = env._goal
    other = next(p for p in env.store.catalogue.products if p.query != goal.query)
    env.step(f"search[{other.name}]")
    _, reward, term, _, info = env.step(f"click[{other.asin}]")
    _, reward, term, _, info = env.step("click[buy now]")
    assert term and reward < 1.0 and not info["won"]


def test_expert_wins_at_least_99_percent_of_sampled_goals():
    env = WebShopEnv(split="train")
    wins = n = 0
    for seed in range(150):
        env.reset(seed=seed)
        for _ in range(15):
            action = env.expert_action()
            _, _, term, _, info = env.step(action)
            if term:
                break
        wins += info["won"]
        n += 1
        assert env.expert_action() is None or not info["won"]
    assert wins / n >= 0.99, f"expert won {wins}/{n}"


def test_copying_the_instruction_is_not_always_the_best_query(env):
    env.reset(seed=0)
    cat, index = env.store.catalogue, env.store.index

    def rank(query, asin):
        hits = [cat.products[i].asin for i in index.search(query)]
        return hits.index(asin) if asin in hits else len(hits) + 1

    goals = cat.split("test")[:200]
    worse = sum(rank(g.instruction, g.asin) > rank(expert_queries(g)[1], g.asin) for g in goals)
    assert worse >= 0.2 * len(goals), f"the instruction was a worse query for only {worse}/200"


def test_task_ids_and_seeds(env):
    _, a = env.reset(seed=3)
    _, b = env.reset(seed=3)
    _, c = env.reset(seed=4)
    assert a["task_id"] == b["task_id"] != c["task_id"]
    assert a["task_id"].startswith("test-")
    _, d = env.reset(options={"task_id": 7})
    assert d["task_id"] == "test-7"
    _, e = env.reset(options={"task_id": "train-5"})  # other splits are reachable by id
    assert e["task_id"] == "train-5"
    for bad in ("test-99999", "holdout-1", "test-x", "test-\u00b2"):  # "²": isdigit() but not int()
        with pytest.raises(ValueError, match="task_id"):
            env.reset(options={"task_id": bad})


def test_html_observation_mode():
    env = WebShopEnv(observation_mode="html")
    obs, info = env.reset(seed=0)
    assert obs.startswith("<!DOCTYPE html>") and 'id="search_input"' in obs
    assert info["anchor_obs"].startswith("WebShop [SEP] Instruction:")


def test_constructor_errors_name_the_value():
    for kwargs, match in (
        ({"split": "valid"}, "split='valid'"),
        ({"noun_parser": "nltk"}, "noun_parser='nltk'"),
        ({"observation_mode": "pixels"}, "observation_mode='pixels'"),
    ):
        with pytest.raises(ValueError, match=match):
            WebShopEnv(**kwargs)


def test_official_fixture_data_through_gym_make():
    env = gym.make("AgentR1/WebShop-v0", data=str(FIXTURES), split="test")
    for seed in range(4):
        _, info = env.reset(options={"task_id": f"test-{seed}"})
        assert info["data_source"] == "official:webshop"
        while (action := env.unwrapped.expert_action()) is not None:
            _, reward, term, trunc, info = env.step(action)
        assert info["won"], (info["task"], info.get("reward_info"))
    env.close()


def test_prepare_is_idempotent():
    first = WebShopEnv.prepare(progress=False)
    assert first == WebShopEnv.prepare(progress=False)
    assert "1,000 products, 6,000 goals (generated:webshop-catalogue)" in first


def test_a_bad_data_folder_fails_at_construction_in_one_line(tmp_path):
    from agent_gym.envs.webshop.catalog import CatalogueError

    with pytest.raises(CatalogueError) as e:
        gym.make("AgentR1/WebShop-v0", data="/nonexistent")
    assert str(e.value).startswith("data='/nonexistent' is not a folder") and "\n" not in str(
        e.value
    )
    assert WebShopEnv(data=FIXTURES, split="test").data == str(FIXTURES)  # a Path is fine
    with pytest.raises(TypeError, match="data must be 'generated' or a folder path, got 3"):
        WebShopEnv(data=3)
    with pytest.raises(CatalogueError, match="none of items_ins_v2.json, items_ins_v2_1000.json"):
        (tmp_path / "items_shuffle.json").write_text("[]")
        WebShopEnv(data=str(tmp_path))


def test_reward_mode_and_noun_parser_are_checked_and_reported(monkeypatch):
    from agent_gym.envs.webshop import nouns

    with pytest.raises(ValueError, match="reward='lenient' is not one of"):
        WebShopEnv(reward="lenient")
    assert WebShopEnv(noun_parser="heuristic").noun_parser == "heuristic"
    model = nouns.installed_spacy_model()
    assert WebShopEnv().noun_parser == (f"spacy:{model}" if model else "heuristic")
    # Without a model, asking for spaCy fails when the env is made, not at "buy now".
    monkeypatch.setattr(nouns, "SPACY_MODELS", ("agent_gym_no_such_model",))
    with pytest.raises(nouns.NounParserError, match="noun_parser='spacy' needs spaCy"):
        gym.make("AgentR1/WebShop-v0", noun_parser="spacy")
    nouns._warn_fallback.cache_clear()
    with pytest.warns(UserWarning, match="no spaCy model"):
        assert WebShopEnv().noun_parser == "heuristic"  # "auto" falls back, and says so


@pytest.mark.parametrize("mode", ["upstream", "strict"])
def test_the_reward_info_names_mode_and_parser(mode):
    env = WebShopEnv(split="test", reward=mode, noun_parser="heuristic")
    env.reset(options={"task_id": "test-0"})
    while (action := env.expert_action()) is not None:
        _, reward, _, _, info = env.step(action)
    assert reward == 1.0
    assert info["reward_info"]["mode"] == mode and info["reward_info"]["noun_parser"] == "heuristic"


def _all_strings(obj):
    if isinstance(obj, str):
        yield obj
    elif isinstance(obj, dict):
        for k, v in obj.items():
            yield from _all_strings(k)
            yield from _all_strings(v)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            yield from _all_strings(v)


def _check_returned(env, obs, info):
    assert env.observation_space.contains(obs)
    for text in (obs, *_all_strings(info)):
        text.encode("utf-8")  # raises on a lone surrogate


_actions = st.one_of(
    st.text(max_size=40),
    st.builds(lambda t: f"search[{t}]", st.text(max_size=2000)),
    st.builds(lambda t: f"click[{t}]", st.text(max_size=40)),
    st.sampled_from(
        ["search[\ud800]", "click[\udfff]", "search[red \ud83d shoes]", "click[< prev]"]
    ),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(actions=st.lists(_actions, min_size=1, max_size=4))
def test_observations_are_encodable_and_within_the_space(actions):
    env = WebShopEnv(split="test", noun_parser="heuristic")
    obs, info = env.reset(seed=5)
    _check_returned(env, obs, info)
    for action in actions:
        obs, _, term, _, info = env.step(action)
        _check_returned(env, obs, info)
        if term:
            break


def test_lone_surrogates_in_the_data_never_reach_the_agent(tmp_path):
    import json
    import shutil

    shutil.copytree(FIXTURES, tmp_path / "d")
    path = tmp_path / "d" / "items_shuffle_1000.json"
    records = json.loads(path.read_text())
    for rec in records:
        rec["name"] = rec["name"] + " \ud800"  # valid JSON ("\ud800" escape), not encodable
    path.write_text(json.dumps(records))
    env = WebShopEnv(data=str(tmp_path / "d"), split="test", noun_parser="heuristic")
    obs, info = env.reset(options={"task_id": "test-0"})
    _check_returned(env, obs, info)
    while (action := env.expert_action()) is not None:
        obs, reward, _, _, info = env.step(action)
        _check_returned(env, obs, info)
    assert info["won"]
