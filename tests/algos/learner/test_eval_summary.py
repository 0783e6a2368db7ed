"""``algos eval``'s summary names where the tasks came from (generated data is labelled)."""

from algos.eval import summarize
from algos.rollout import Episode


def test_summary_line_names_the_data_source():
    eps = [
        Episode(traj=i, group=i, seed=i, won=i == 0, length=3, data_source="generated:toy")
        for i in range(4)
    ]
    out = summarize(eps)
    assert out["data_sources"] == ["generated:toy"]
    assert "data generated:toy" in out["line"]
    assert out["success_rate"] == 0.25


def test_summary_without_a_data_source_says_unknown():
    out = summarize([Episode(traj=0, group=0, seed=0)])
    assert out["data_sources"] == [] and "data unknown" in out["line"]
