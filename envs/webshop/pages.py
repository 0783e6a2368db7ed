"""WebShop's pages: HTML rendered from Jinja2 templates, and read back with beautifulsoup4.

The templates (``templates/*.html``) keep upstream's structure: the instruction in
``#instruction-text``, buttons with class ``btn``, product ids as ``a.product-link``,
options as ``input[type=radio]`` with their labels, and a ``#search_input`` box on the
search page. Every clickable element is also a link (``act(action)`` builds its URL), so the
same HTML is what the env parses for the agent and what the HTTP server sends a browser.

:func:`parse_page` does what upstream's text env does with a page:

* ``text``: the visible strings (not in ``head, title, style, script, meta``, not
  comments), stripped, empty ones dropped, joined with `` [SEP] ``;
* ``clickables``: lower-cased button texts, lower-cased product ids and option values, in
  upstream's order (buttons, product links, options), mapped to what they are;
* ``has_search``: whether the page has the search box.

Jinja2 autoescaping escapes everything interpolated, so a query such as
``<script>alert(1)</script>`` is shown as text, never run.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

TEMPLATE_DIR = Path(__file__).with_name("templates")
#: Page kind -> template file.
TEMPLATES = {
    "search": "search_page.html",
    "results": "results_page.html",
    "item": "item_page.html",
    "description": "description_page.html",
    "features": "features_page.html",
    "reviews": "review_page.html",
    "done": "done_page.html",
}
#: Tags whose strings are not visible (upstream ``tag_visible``).
HIDDEN_TAGS = frozenset({"style", "script", "head", "title", "meta", "[document]"})
SEP = " [SEP] "


@dataclass(frozen=True)
class Clickable:
    """What a ``click[...]`` target is.

    Attributes:
        kind: ``"button"``, ``"product"`` or ``"option"``.
        value: Button text (lower case), product id (upper case) or option value.
        option: Option name for ``kind == "option"``, else ``""``.
    """

    kind: str
    value: str
    option: str = ""


@dataclass(frozen=True)
class ParsedPage:
    """What the agent sees of a page (see the module docstring)."""

    text: str
    clickables: dict[str, Clickable]
    has_search: bool


@functools.lru_cache(maxsize=1)
def _jinja() -> Any:
    import jinja2

    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATE_DIR)),
        autoescape=True,
        keep_trailing_newline=False,
        undefined=jinja2.StrictUndefined,
    )


def render(kind: str, **context: Any) -> str:
    """Render page ``kind`` (a key of :data:`TEMPLATES`) with ``context``.

    Every page needs ``instruction`` and ``act`` (action -> URL); see the templates for the
    rest (``keywords``, ``page``, ``total``, ``products``, ``product``, ``options``,
    ``reward``, ``search_url``, ``new_task_url``).
    """
    context.setdefault("keywords", None)
    return _jinja().get_template(TEMPLATES[kind]).render(**context)


def _is_visible(s: Any) -> bool:
    from bs4.element import Comment, Declaration, Doctype

    return not isinstance(s, (Comment, Doctype, Declaration)) and s.parent.name not in HIDDEN_TAGS


def visible_strings(soup: Any) -> list[str]:
    """The stripped, non-empty visible strings of a parsed page, in document order."""
    return [t for s in soup.find_all(string=True) if _is_visible(s) and (t := s.strip())]


@functools.lru_cache(maxsize=4096)
def parse_page(html: str) -> ParsedPage:
    """Read a page's text observation and clickables from its HTML (memoised: pages repeat).

    Example:
        >>> page = parse_page('<h4>Hi</h4><a class="btn" href="#">Buy Now</a>')
        >>> page.text, list(page.clickables)
        ('Hi [SEP] Buy Now', ['buy now'])
    """
    from bs4 import BeautifulSoup, NavigableString

    soup = BeautifulSoup(html, "html.parser")
    strings: list[str] = []
    buttons: dict[str, Clickable] = {}
    links: dict[str, Clickable] = {}
    radios: dict[str, Clickable] = {}
    has_search = False
    # One walk over the tree (several find_all calls cost more than the parse itself).
    for node in soup.descendants:
        if isinstance(node, NavigableString):
            if _is_visible(node) and (text := node.strip()):
                strings.append(text)
            continue
        classes = node.get("class") or ()
        if "btn" in classes:
            text = node.get_text().strip().lower()
            if text != "search":  # upstream never lets click[search] through
                buttons.setdefault(text, Clickable("button", text))
        elif "product-link" in classes:
            asin = node.get_text().strip()
            links.setdefault(asin.lower(), Clickable("product", asin.upper()))
        elif node.name == "input":
            if node.get("type") == "radio":
                value = node.get("value", "")
                radios.setdefault(value, Clickable("option", value, node.get("name", "")))
            elif node.get("id") == "search_input":
                has_search = True
    # Upstream's order: buttons, then product links, then options; the first of a name wins.
    clickables = dict(buttons)
    for group in (links, radios):
        for key, value in group.items():
            clickables.setdefault(key, value)
    return ParsedPage(text=SEP.join(strings), clickables=clickables, has_search=has_search)
