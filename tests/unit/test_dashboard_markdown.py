"""A Topic's Markdown on the dashboard (issue 17: "rendered from Markdown
(sanitised)"; entrypoints/http/dashboard/markdown.py): markdown-it-py with raw HTML off,
then nh3. Each layer is tested on its own, so either one alone keeps a ``<script>``,
a ``javascript:`` link and an ``onerror=`` attribute out of the page."""

from __future__ import annotations

import markupsafe
import pytest
from support.dashboard import start_tags

from powercontext.entrypoints.http.dashboard.markdown import render_markdown, sanitize_html

PAYLOADS = [
    "<script>alert(1)</script>",
    "<SCRIPT SRC=//evil.example/x.js></SCRIPT>",
    "[x](javascript:alert(1))",
    "[x](JaVaScRiPt:alert(1))",
    "[x](  javascript:alert(1)  )",
    "<javascript:alert(1)>",
    "[x](data:text/html;base64,PHNjcmlwdD4=)",
    "[x](vbscript:msgbox)",
    "<img src=x onerror=alert(1)>",
    "![i](x\" onerror=\"alert(1))",
    '<a href="javascript:alert(1)" onclick="alert(2)">y</a>',
    "<div style=\"background:url(javascript:alert(1))\">d</div>",
    "<iframe src=https://evil.example></iframe>",
    "<svg><script>alert(1)</script></svg>",
    "<!-- <script>alert(1)</script> -->",
]



def _assert_inert(html: str) -> None:
    for tag, attrs in start_tags(html):
        assert tag not in ("script", "img", "iframe", "svg", "div", "style"), html
        assert not any(k.startswith("on") or k == "style" for k in attrs), html
        href = (attrs.get("href") or "").strip().lower()
        assert not href or href.startswith(("http://", "https://", "mailto:")), html


@pytest.mark.parametrize("payload", PAYLOADS)
def test_render_markdown_leaves_no_active_content(payload: str) -> None:
    out = render_markdown("Intro\n\n" + payload + "\n")
    assert isinstance(out, markupsafe.Markup)
    _assert_inert(str(out))


@pytest.mark.parametrize("payload", PAYLOADS)
def test_the_sanitiser_alone_strips_raw_html(payload: str) -> None:
    # as if the Markdown layer had passed raw HTML through
    _assert_inert(sanitize_html(payload))


def test_ordinary_markdown_survives() -> None:
    out = str(render_markdown("# T\n\n**b** *i* `c`\n\n- one\n- two\n\n"
                              "[site](https://example.org/a?b=1) | x |\n\n"
                              "| a | b |\n|---|---|\n| 1 | 2 |\n"))
    for want in ("<h1>T</h1>", "<strong>b</strong>", "<em>i</em>", "<code>c</code>",
                 "<li>one</li>", "<table>", "<td>1</td>",
                 '<a href="https://example.org/a?b=1" rel="noopener noreferrer nofollow">'):
        assert want in out, out
