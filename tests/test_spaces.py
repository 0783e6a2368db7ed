import gymnasium as gym
import pytest

from agent_gym.spaces import SAMPLE_CHARSET, Text


@pytest.mark.parametrize(
    "value",
    ["", "go to desk 1", "café — ünïcode ✓ 🛒", "点击[购买]", "\x00\n\t", "a" * 100, "\ud800"],
)
def test_contains_any_str_within_length(value: str) -> None:
    assert Text(max_length=100).contains(value)


@pytest.mark.parametrize("value", [None, 3, b"look", ["look"], {"a": 1}, 1.5])
def test_rejects_non_strings(value: object) -> None:
    assert not Text(max_length=100).contains(value)


def test_length_bounds() -> None:
    space = Text(max_length=5, min_length=2)
    assert not space.contains("a")
    assert space.contains("ab")
    assert not space.contains("abcdef")


def test_is_a_gymnasium_text_space_and_samples_printable() -> None:
    space = Text(max_length=30, seed=0)
    assert isinstance(space, gym.spaces.Text)
    for _ in range(50):
        s = space.sample()
        assert isinstance(s, str) and len(s) <= 30
        assert all(c in SAMPLE_CHARSET for c in s)
        assert s.isprintable()


def test_seeded_sampling_is_reproducible() -> None:
    assert Text(20, seed=3).sample() == Text(20, seed=3).sample()
