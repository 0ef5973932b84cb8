"""Helpers of the dashboard's browser tests (tests/browser): where the browser is, the
flags it runs with, one test's page (:class:`Tab`) and screenshots (:func:`shot`)."""

from __future__ import annotations

import importlib.util
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from support.dashboard_content import Content
from support.serve_process import ServeProcess

CHROMIUM = Path("/usr/bin/chromium")
#: As root Chromium needs --no-sandbox; the rest keeps it from calling out (the network
#: here is closed, and its refused connections would only slow it down).
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--disable-dev-shm-usage"]
TOKEN = "browser-test-token-0123456789"
ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "tests" / "artifacts"
DOCS_IMG = ROOT / "docs" / "img"
#: How long one browser action may wait for the page (a wait bound on a loaded 2-core
#: machine, not an assertion on speed).
WAIT_MS = 60_000
#: The screenshots docs/dashboard.md shows (docs/img/FILE), by the name :func:`shot` gets.
DOCS_SHOTS = {"memory-detail": "dashboard-memory.png", "topic": "dashboard-topic.png",
              "memory-dark": "dashboard-memory-dark.png",
              "processing": "dashboard-processing.png"}


def browser_unavailable() -> str | None:
    """Why the browser tests cannot run here, or None."""
    if importlib.util.find_spec("playwright") is None:
        return "Playwright for Python is not installed (the dev extra has it: make install)"
    if not CHROMIUM.exists():
        return (f"{CHROMIUM} is missing: Debian's chromium package is not installed "
                "(make test installs it as root; else: sudo apt-get install -y chromium)")
    return None


@dataclass
class Dashboard:
    """The running server: its base URL, token and the content it serves."""

    url: str
    token: str
    content: Content
    server: ServeProcess

    def ui(self, path: str, **query: Any) -> str:
        """The absolute URL of ``path`` (``/ui/...``) with ``query``."""
        return self.url + path + (("?" + urlencode(query)) if query else "")


@dataclass
class Tab:
    """One test's page, the dialogs it saw, and the dashboard it is on."""

    page: Any
    dashboard: Dashboard
    dialogs: list[str] = field(default_factory=list)

    def goto(self, path: str, **query: Any) -> Any:
        """Open ``path`` (``/ui/...``); Playwright's response."""
        return self.page.goto(self.dashboard.ui(path, **query), wait_until="load")

    def submit(self, form: Any) -> Any:
        """Submit ``form`` (a locator) with its submit button; the response of the page
        it led to."""
        with self.page.expect_navigation(wait_until="load") as nav:
            form.locator("button[type=submit], input[type=submit], button:not([type])"
                         ).first.click()
        return nav.value

    def login(self, token: str | None = None) -> Any:
        """Log in through the form at ``/ui/login`` with ``token`` (default: the right
        one); the response of the page the form led to."""
        self.goto("/ui/login")
        field_ = self.page.locator("input[name=token]")
        field_.fill(token if token is not None else self.dashboard.token)
        return self.submit(self.page.locator("form", has=field_))

    def text(self) -> str:
        """The page's visible text (what a person reads)."""
        return str(self.page.locator("body").inner_text())


def shot(tab: Tab, name: str) -> Path:
    """A screenshot of the whole page to ``tests/artifacts/NAME.png``; with
    ``POWERCONTEXT_DOCS_SCREENSHOTS=1`` also the docs' (:data:`DOCS_SHOTS`: the
    viewport only, to keep the PNGs small)."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{re.sub(r'[^A-Za-z0-9_.-]', '_', name)}.png"
    tab.page.screenshot(path=str(path), full_page=True)
    if os.environ.get("POWERCONTEXT_DOCS_SCREENSHOTS") == "1" and name in DOCS_SHOTS:
        DOCS_IMG.mkdir(parents=True, exist_ok=True)
        docs = DOCS_IMG / DOCS_SHOTS[name]
        tab.page.screenshot(path=str(docs), full_page=False)
        _shrink(docs)
    return path


def _shrink(png: Path) -> None:
    """``png`` with a 64-colour palette (Pillow, from the dev extra's matplotlib): a
    page of flat colours stays legible at a third of the bytes."""
    from PIL import Image

    with Image.open(png) as image:
        small = image.convert("RGB").quantize(colors=64, method=Image.Quantize.MEDIANCUT)
    small.save(png, optimize=True)
