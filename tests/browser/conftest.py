"""Fixtures of the dashboard's browser tests (issue 17): one database with real content
(:mod:`support.dashboard_content`), ``powercontext serve`` on it as its own process
(127.0.0.1, port 0, a token, the ``deterministic`` Topic provider so the Supervisor
processes flushes), and headless Chromium from Debian's ``chromium`` package
(``/usr/bin/chromium``) driven by Playwright for Python through ``executable_path``
(no browser download).

Without the browser or Playwright every test here skips and says which is missing and
how to install it (``make test`` installs both as root); under ``CI=true`` they fail
instead: CI runs as root, so a missing browser there is a broken install.

Each test gets a fresh browser context (no cookie); every JavaScript dialog is recorded
and dismissed (the tests assert none opened: stored text must never run).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from support.browser import (
    CHROMIUM,
    CHROMIUM_ARGS,
    TOKEN,
    WAIT_MS,
    Dashboard,
    Tab,
    browser_unavailable,
)
from support.dashboard_content import build_content
from support.serve_process import ServeProcess, clean_env

HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    reason = browser_unavailable()
    if reason is None or os.environ.get("CI") == "true":
        return  # under CI the browser fixture fails with the reason instead
    skip = pytest.mark.skip(reason=f"browser tests: {reason}")
    for item in items:
        if Path(str(item.path)).resolve().is_relative_to(HERE):
            item.add_marker(skip)


@pytest.fixture(scope="module")
def dashboard(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Dashboard]:
    """``powercontext serve`` on a new content database, stopped by its pid at the end
    of the module (not of the session: no server outlives these tests)."""
    tmp = tmp_path_factory.mktemp("dashboard")
    with ThreadPoolExecutor(1) as pool:  # its own thread: asyncio.run beside Playwright's loop
        content = pool.submit(build_content, tmp).result()
    env = clean_env(tmp / "home", POWERCONTEXT_API_TOKEN=TOKEN)
    server = ServeProcess(content.db, ["--config", str(content.config), "--host",
                                       "127.0.0.1"], env, tmp / "serve.stderr")
    try:
        yield Dashboard(server.url, TOKEN, content, server)
    finally:
        server.stop()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Headless Debian Chromium through Playwright, one per module (a context per test).
    Not per session: Playwright's sync API keeps an event loop running in this thread
    while it is open, and the tests after these ones call ``asyncio.run``."""
    reason = browser_unavailable()
    if reason is not None:
        pytest.fail(f"browser tests under CI=true: {reason}")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS,
                                      headless=True)
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture
def tab(browser: Any, dashboard: Dashboard) -> Iterator[Tab]:
    """A fresh browser context (no cookie) and page; every dialog recorded and dismissed."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(WAIT_MS)
    page = context.new_page()
    tab = Tab(page, dashboard)

    def on_dialog(dialog: Any) -> None:
        tab.dialogs.append(f"{dialog.type}: {dialog.message}")
        dialog.dismiss()

    page.on("dialog", on_dialog)
    try:
        yield tab
    finally:
        context.close()
    assert tab.dialogs == [], f"a dialog opened: stored text ran as script: {tab.dialogs}"


@pytest.fixture
def user(tab: Tab) -> Tab:
    """A tab logged in with the right token (through the form: the session cookie)."""
    response = tab.login()
    assert response is not None and response.status == 200, tab.text()
    assert "/ui/login" not in tab.page.url, tab.page.url
    return tab
