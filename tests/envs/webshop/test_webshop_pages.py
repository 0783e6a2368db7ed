"""Pages: rendering from the templates and the text/clickables read back with bs4."""

from __future__ import annotations

from types import SimpleNamespace

from agent_gym.envs.webshop import pages


def _act(action):
    return f"/s/t/do?action={action}"


PRODUCT = SimpleNamespace(
    asin="B0TEST0001",
    name="Acme Lamp",
    price_tag="$10.0",
    rating="N.A.",
    image=None,
    options={"color": ("black", "navy | white")},
    description="",
    bullets=("Bright",),
    reviews=(),
)


def test_parse_page_text_and_clickables_by_hand():
    html = (
        "<html><head><title>T</title><style>p{}</style></head><body>"
        "<!-- comment --><h4>Instruction:<br>buy a lamp</h4>"
        '<a class="btn" href="#"> Back to Search </a><p>  </p>'
        '<a class="product-link" href="#">B0TEST0001</a><script>var x;</script>'
        '<input type="radio" name="color" value="black"><label>black</label>'
        '<button class="btn">Search</button></body></html>'
    )
    page = pages.parse_page(html)
    assert page.text == (
        "Instruction: [SEP] buy a lamp [SEP] Back to Search [SEP] B0TEST0001 [SEP] black [SEP] Search"
    )
    assert list(page.clickables) == ["back to search", "b0test0001", "black"]
    assert page.clickables["b0test0001"] == pages.Clickable("product", "B0TEST0001")
    assert page.clickables["black"] == pages.Clickable("option", "black", "color")
    assert page.has_search is False


def test_search_page_has_search_box_and_no_click_search():
    html = pages.render("search", instruction="buy a lamp", act=_act, search_url="/s/t/search")
    page = pages.parse_page(html)
    assert page.text == "WebShop [SEP] Instruction: [SEP] buy a lamp [SEP] Search"
    assert page.has_search and page.clickables == {}


def test_results_page_structure():
    html = pages.render(
        "results", instruction="i", act=_act, keywords="lamp", page=2, total=25,
        products=[PRODUCT],
    )  # fmt: skip
    page = pages.parse_page(html)
    assert page.text == (
        "Instruction: [SEP] i [SEP] Current Query: lamp [SEP] Back to Search [SEP] "
        "Page 2 (Total results: 25) [SEP] < Prev [SEP] Next > [SEP] B0TEST0001 [SEP] "
        "Acme Lamp [SEP] $10.0"
    )
    assert list(page.clickables) == ["back to search", "< prev", "next >", "b0test0001"]


def test_item_page_options_and_selection():
    html = pages.render(
        "item", instruction="i", act=_act, keywords="lamp", product=PRODUCT,
        options={"color": "navy | white"},
    )  # fmt: skip
    page = pages.parse_page(html)
    assert (
        "color [SEP] black [SEP] navy | white [SEP] You have clicked color: navy | white."
        in page.text
    )
    assert page.text.endswith(
        "Acme Lamp [SEP] Price: $10.0 [SEP] Rating: N.A. [SEP] Description [SEP] Features [SEP] Reviews [SEP] Buy Now"
    )
    assert list(page.clickables) == [
        "back to search", "< prev", "description", "features", "reviews", "buy now", "black",
        "navy | white",
    ]  # fmt: skip
    assert 'value="navy | white" data-url="/s/t/do?action=click[navy | white]" checked' in html


def test_sub_pages():
    for kind, expected in (
        ("description", "No Description"),
        ("features", "Bright"),
        ("reviews", "No reviews found"),
    ):
        html = pages.render(
            kind, instruction="i", act=_act, keywords="k", product=PRODUCT, options={}
        )
        text = pages.parse_page(html).text
        assert text.endswith(f"< Prev [SEP] {expected}"), text


def test_interpolated_text_is_escaped():
    evil = '<script>alert(1)</script>&amp;"'
    html = pages.render(
        "results", instruction=evil, act=_act, keywords=evil, page=1, total=0, products=[]
    )
    assert "<script>alert" not in html and "&lt;script&gt;" in html
    assert pages.parse_page(html).text.startswith(
        f"Instruction: [SEP] {evil} [SEP] Current Query: {evil}"
    )
