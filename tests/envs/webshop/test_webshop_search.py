"""BM25 search: tokens, ranking on a hand-made catalogue, and the saved index."""

from __future__ import annotations

from types import SimpleNamespace

from agent_gym.envs.webshop.search import SearchIndex, document_text, stem, tokenize


def _p(asin, name, description="", bullets=(), options=None):
    return SimpleNamespace(
        asin=asin, name=name, description=description, bullets=bullets, options=options or {}
    )


PRODUCTS = [
    _p("A", "Red Running Shoes", "light shoes for road running", ("breathable mesh", "ignored")),
    _p("B", "Blue Hat", "a warm hat", (), {"size": ("small", "large")}),
    _p("C", "Red Hat", "", ("a hat in red",)),
    _p("D", "Lamp", "", (), {"color": ("red",)}),
]


def test_stem_folds_plurals_only():
    assert [stem(w) for w in ("shoes", "batteries", "boxes", "dress", "bus", "is", "gas")] == [
        "shoe", "battery", "box", "dress", "bus", "is", "gas",
    ]  # fmt: skip


def test_tokenize_lowercases_and_drops_stopwords():
    assert tokenize("The RED shoes, for Running!", frozenset({"the", "for"})) == [
        "red", "shoe", "running",
    ]  # fmt: skip


def test_document_text_is_title_description_first_bullet_and_options():
    assert (
        document_text(PRODUCTS[0])
        == "red running shoes light shoes for road running breathable mesh"
    )
    assert document_text(PRODUCTS[1]) == "blue hat a warm hat size: small, large"


def test_search_ranks_and_omits_nonmatching():
    index = SearchIndex.build(PRODUCTS)
    assert index.search("running shoe")[0] == 0
    assert set(index.search("red")) == {0, 2, 3}  # title, bullet and option text all count
    assert index.search("hat")[:2] in ([1, 2], [2, 1])
    assert index.search("zebra") == [] and index.search("") == [] and index.search("the") == []
    assert index.search("red", k=1) == index.search("red")[:1]


def test_save_load_round_trip(tmp_path):
    index = SearchIndex.build(PRODUCTS)
    index.save(tmp_path / "idx")
    index.save(tmp_path / "idx")  # a second writer finds the index there: no error
    loaded = SearchIndex.load(tmp_path / "idx")
    assert loaded.asins == ["A", "B", "C", "D"]
    for q in ("red", "hat small", "running"):
        assert loaded.search(q) == index.search(q)


def test_huge_and_odd_queries_do_not_fail():
    index = SearchIndex.build(PRODUCTS)
    assert index.search("red " * 50_000)[0] in (0, 2, 3)
    assert index.search("\ud800 \x00 <script> 🛒") == []
