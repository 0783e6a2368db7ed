"""Action parsing: what is a search, an answer, or invalid."""

from __future__ import annotations

import pytest

from agent_gym.envs.hotpotqa.actions import Answer, Invalid, Search, clean, parse_action


def parse(text: str):
    return parse_action(text, max_calls=4, max_query_chars=50)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("search[Kenya]", Search(("Kenya",))),
        ("  SEARCH[ Kenya  Nairobi ]\n", Search(("Kenya Nairobi",))),
        ("search[a]\n\nsearch[b]\nsearch[c]\nsearch[d]", Search(("a", "b", "c", "d"))),
        ("search[foo [bar]]", Search(("foo [bar]",))),
        ("search[]]]", Search(("]]",))),
        ("answer[Nairobi]", Answer("Nairobi")),
        ("Answer[ Washington\n D.C. ]", Answer("Washington D.C.")),
        ("answer[yes]", Answer("yes")),
    ],
)
def test_valid(text: str, expected: object) -> None:
    assert parse(text) == expected


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", "empty"),
        ("   \n\t", "empty"),
        ("search[]", "no query"),
        ("search[   ]", "no query"),
        ("answer[]", "no answer"),
        ("answer[ \n ]", "no answer"),
        ("search[]]]][[[", "cannot parse"),
        ("search[a]\nsearch[b]\nsearch[c]\nsearch[d]\nsearch[e]", "at most 4"),
        ("search[a]\nanswer[b]", "not mixed"),
        ("search[a] search[b]", None),  # one line, "a] search[b" is a query: valid
        ("search[" + "x" * 51 + "]", "longer than 50"),
        ("click[buy]", "cannot parse"),
        ("<action>search[x]</action>", "cannot parse"),
        ("search(x)", "cannot parse"),
    ],
)
def test_invalid(text: str, reason: str | None) -> None:
    result = parse(text)
    if reason is None:
        assert isinstance(result, Search)
    else:
        assert isinstance(result, Invalid) and reason in result.reason


def test_clean_makes_any_string_printable() -> None:
    assert clean("a\x00b\x1b[31m\ud800 c", 100) == "a b [31m? c"
    assert clean("x" * 10, 5) == "xxxx…"
    "\ud800".encode("utf-8", "replace")  # the input itself is unencodable; the output is not
    clean("\ud800" * 3, 10).encode("utf-8")
