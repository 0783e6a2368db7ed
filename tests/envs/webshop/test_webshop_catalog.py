"""The generated catalogue and the official-format loader (fixtures written by us)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from agent_gym.envs.webshop.catalog import CatalogueError, load_catalogue
from agent_gym.envs.webshop.generator import DATA_SOURCE, generate
from agent_gym.envs.webshop.vocabulary import ATTRIBUTE_PHRASES, PRODUCT_TYPES

FIXTURES = Path(__file__).parent / "fixtures" / "official"


@pytest.fixture(scope="module")
def files():
    return generate(num_products=60, goals_per_product=3, seed=5)


def test_generator_is_deterministic_and_seeded(files):
    assert generate(num_products=60, goals_per_product=3, seed=5) == files
    assert generate(num_products=60, goals_per_product=3, seed=6) != files


def test_generated_records_follow_upstream_schema_and_are_labelled(files):
    products = files["items_shuffle.json"]
    assert len(products) == 60 and len({p["asin"] for p in products}) == 60
    for p in products:
        assert {"asin", "name", "full_description", "small_description", "pricing",
                "customization_options", "category", "query", "product_category",
                "images"} <= set(p)  # fmt: skip
        assert p["data_source"] == DATA_SOURCE
        assert len(p["asin"]) == 10 and p["pricing"].startswith("$")
    for rec in files["items_ins_v2.json"].values():
        assert rec["data_source"] == DATA_SOURCE and rec["attributes"]
    goals = [g for gs in files["items_human_ins.json"].values() for g in gs]
    assert len(goals) == 180 and all(g["data_source"] == DATA_SOURCE for g in goals)


def test_goals_cover_products_with_and_without_options(files):
    goals = [g for gs in files["items_human_ins.json"].values() for g in gs]
    assert any(g["instruction_options"] for g in goals)
    assert any(not g["instruction_options"] for g in goals)


def test_vocabulary_is_consistent():
    for t in PRODUCT_TYPES:
        assert all(a in ATTRIBUTE_PHRASES for a in t.attributes), t.query
        values = [v for _, vs in t.options for v in vs]
        assert len(values) == len(set(values)), f"{t.query}: an option value repeats"
        assert len(t.phrases) >= 2


def test_loader_reads_generated_files(tmp_path, files):
    for name, obj in files.items():
        (tmp_path / name).write_text(json.dumps(obj))
    cat = load_catalogue(tmp_path)
    assert len(cat.products) == 60 and len(cat.goals) == 180
    assert [g.index for g in cat.goals] == list(range(180))
    goal = cat.goals[0]
    product = cat.by_asin[goal.asin]
    assert goal.name == product.name and goal.query == product.query
    assert product.price <= goal.price_upper
    assert goal.instruction.endswith(f", and price lower than {goal.price_upper:.2f} dollars")
    assert len(cat.split("test")) == 180
    with pytest.raises(ValueError, match="split 'train'.*only 180 goals"):
        cat.split("train")


def test_official_fixture_loads_as_upstream():
    cat = load_catalogue(FIXTURES)
    # 'nan' and the duplicate id are skipped; so are the goal without attributes and the
    # goal whose product is not in the catalogue.
    assert [p.asin for p in cat.products] == ["B07XQ1TEST", "B08TESTTEE", "B09NOOPTNS"]
    assert len(cat.goals) == 4 and cat.skipped_goals == 1
    tee = cat.by_asin["B08TESTTEE"]
    assert tee.options == {"color": ("navy | white", "heather grey"), "size": ("small", "x-large")}
    assert tee.price_tag == "$12.0 to $18.5" and 12.0 <= tee.price <= 18.5
    assert tee.query == "men's t-shirt" and tee.bullets == ("Machine wash cold. Classic fit.",)
    lamp = cat.by_asin["B09NOOPTNS"]
    assert lamp.price_tag == "$100.0" and lamp.attributes == ("DUMMY_ATTR",)
    deo = cat.by_asin["B07XQ1TEST"]
    assert deo.rating == 4.5 and deo.reviews[0] == {
        "title": "Works for me", "score": 5, "body": "No irritation at all.",
    }  # fmt: skip
    assert deo.image == "https://example.invalid/deodorant.jpg"
    assert all(g.data_source == "official:webshop" for g in cat.goals)


def test_official_goals_shuffle_with_seed_233():
    a, b = load_catalogue(FIXTURES), load_catalogue(FIXTURES)
    assert [g.instruction for g in a.goals] == [g.instruction for g in b.goals]
    assert [g.price_upper for g in a.goals] == [g.price_upper for g in b.goals]


def _broken(tmp_path: Path, edit) -> Path:
    shutil.copytree(FIXTURES, tmp_path / "data")
    path = tmp_path / "data" / "items_shuffle_1000.json"
    records = json.loads(path.read_text())
    edit(records)
    path.write_text(json.dumps(records))
    return tmp_path / "data"


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda r: r[1].pop("name"), r"items_shuffle_1000.json: record 1 \(asin 'B08TESTTEE'\): field 'name' is missing"),
        (lambda r: r[0].update(pricing=12), r"record 0 \(asin 'B07XQ1TEST'\): field 'pricing' must be a string"),
        (lambda r: r[0].update(pricing="$abc"), r"record 0 .*'pricing' '\$abc' has no number"),
        (lambda r: r[2].update(customization_options={"Color": [{"image": None}]}), r"record 2 .*customization_options\['Color'\]\[0\] needs a string 'value'"),
        (lambda r: r[1].update(small_description=[1, 2]), r"record 1 .*'small_description' must be"),
        (lambda r: r[0].update(query=None), r"record 0 .*field 'query' is a NoneType"),
    ],
)  # fmt: skip
def test_malformed_record_names_file_record_and_field(tmp_path, edit, message):
    with pytest.raises(CatalogueError, match=message):
        load_catalogue(_broken(tmp_path, edit))


def test_missing_files_and_folder_are_explained(tmp_path):
    with pytest.raises(CatalogueError, match="not a folder"):
        load_catalogue(tmp_path / "nope")
    with pytest.raises(CatalogueError, match="items_shuffle.json, items_shuffle_1000.json found"):
        load_catalogue(tmp_path)
    shutil.copytree(FIXTURES, tmp_path / "d")
    (tmp_path / "d" / "items_human_ins.json").write_text(
        '{"B07XQ1TEST": [{"instruction": 3, "instruction_attributes": ["a"], '
        '"instruction_options": []}]}'
    )
    with pytest.raises(
        CatalogueError,
        match=r"items_human_ins.json: asin 'B07XQ1TEST', instruction 0: field 'instruction'",
    ):
        load_catalogue(tmp_path / "d")
    (tmp_path / "d" / "items_human_ins.json").write_text("{not json")
    with pytest.raises(CatalogueError, match="items_human_ins.json: not valid JSON"):
        load_catalogue(tmp_path / "d")


def _edit_json(directory: Path, name: str, edit) -> None:
    path = directory / name
    obj = json.loads(path.read_text())
    edit(obj)
    path.write_text(json.dumps(obj))


def test_attributes_given_as_a_string_are_rejected(tmp_path):
    # Upstream iterates the string, one "attribute" per character; that is never meant.
    shutil.copytree(FIXTURES, tmp_path / "d")
    _edit_json(
        tmp_path / "d",
        "items_ins_v2_1000.json",
        lambda a: a["B08TESTTEE"].update(attributes="machine wash"),
    )
    with pytest.raises(CatalogueError) as e:
        load_catalogue(tmp_path / "d")
    message = str(e.value)
    assert message.startswith("items_ins_v2_1000.json: asin 'B08TESTTEE': field 'attributes'")
    assert "is a string ('machine wash'), not a list of strings" in message
    assert "\n" not in message


@pytest.mark.parametrize(
    ("edit", "got"),
    [(lambda g: g["B08TESTTEE"][0].update(instruction_options=None), "got None"),
     (lambda g: g["B08TESTTEE"][0].pop("instruction_options"), "got missing"),
     (lambda g: g["B08TESTTEE"][0].update(instruction_options="red"), "got 'red'")],
)  # fmt: skip
def test_instruction_options_must_be_a_list(tmp_path, edit, got):
    # Upstream loads null and fails with a TypeError only when the goal's item is bought.
    shutil.copytree(FIXTURES, tmp_path / "d")
    _edit_json(tmp_path / "d", "items_human_ins.json", edit)
    with pytest.raises(CatalogueError) as e:
        load_catalogue(tmp_path / "d")
    assert str(e.value) == (
        "items_human_ins.json: asin 'B08TESTTEE', instruction 0: field 'instruction_options' "
        f"must be a list of strings ([] for none), {got}"
    )


@pytest.mark.parametrize(
    "name", ["items_shuffle_1000.json", "items_ins_v2_1000.json", "items_human_ins.json",
             "reviews.json"],
)  # fmt: skip
def test_a_file_that_is_not_utf8_is_named(tmp_path, name):
    shutil.copytree(FIXTURES, tmp_path / "d")
    path = tmp_path / "d" / name
    text = path.read_text(encoding="utf-8")
    path.write_bytes(text.encode("utf-8").replace(b"[", '["caf\u00e9", '.encode("latin-1"), 1))
    with pytest.raises(CatalogueError) as e:
        load_catalogue(tmp_path / "d")
    assert str(e.value).startswith(f"{path}: not UTF-8 text (byte 0xe9 at offset ")
