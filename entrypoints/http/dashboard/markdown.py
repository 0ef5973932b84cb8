"""A Topic's Markdown as safe HTML (issue 17, "Topics per Scope": "rendered from
Markdown (sanitised)"): the one place the dashboard puts HTML made from stored text on
a page.

Two layers, both well-kept libraries (pinned in constraints.txt): ``markdown-it-py``
renders CommonMark (plus tables and strikethrough) with raw HTML **off** (a ``<script>``
in the Markdown comes out as escaped text) and refuses ``javascript:``/``vbscript:``/
``file:``/most ``data:`` link targets; ``nh3`` (the Rust ``ammonia`` sanitiser) then
keeps only the tags and attributes of :data:`TAGS`/:data:`ATTRIBUTES` and links with
the schemes of :data:`URL_SCHEMES` (``rel="noopener noreferrer nofollow"`` added), so
no event-handler attribute (``onerror=``), ``style`` or script URL can survive even if
the first layer let one through. Images are not kept (the page's CSP would refuse
remote ones anyway)."""

from __future__ import annotations

from typing import Any

import markupsafe

__all__ = ["ATTRIBUTES", "TAGS", "URL_SCHEMES", "render_markdown", "sanitize_html"]

TAGS = frozenset({"p", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "strong", "em",
                  "s", "del", "code", "pre", "blockquote", "ul", "ol", "li", "a", "table",
                  "thead", "tbody", "tr", "th", "td"})
ATTRIBUTES: dict[str, set[str]] = {"a": {"href", "title"}, "ol": {"start"},
                                   "th": {"align"}, "td": {"align"}}
URL_SCHEMES = frozenset({"http", "https", "mailto"})


class _Md:
    """The one MarkdownIt instance, built on first use (no import-time side effects)."""

    md: Any = None


def _markdown() -> Any:
    if _Md.md is None:
        from markdown_it import MarkdownIt

        _Md.md = MarkdownIt("commonmark", {"html": False}).enable(["table", "strikethrough"])
    return _Md.md


def sanitize_html(html: str) -> str:
    """``html`` with only :data:`TAGS`, :data:`ATTRIBUTES` and :data:`URL_SCHEMES` left
    (nh3; the second layer of :func:`render_markdown`)."""
    import nh3

    return nh3.clean(html, tags=set(TAGS), attributes=ATTRIBUTES,
                     url_schemes=set(URL_SCHEMES), link_rel="noopener noreferrer nofollow",
                     strip_comments=True)


def render_markdown(text: str) -> markupsafe.Markup:
    """``text`` (untrusted Markdown) as sanitised HTML, marked safe for the templates."""
    clean = sanitize_html(_markdown().render(text))
    return markupsafe.Markup(clean)  # the one Markup of stored text: sanitised above
