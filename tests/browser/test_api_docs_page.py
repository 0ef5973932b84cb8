"""The interactive API page ``/docs`` in real headless Chromium, with every request
that leaves the server refused (as on a machine without a network): Swagger UI loads
from the server's own files, lists every operation of the document, takes the token
through its Authorize dialog and runs ``GET /v1/memory/list`` with it (200)."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

import pytest
from support.browser import Tab, shot

pytestmark = pytest.mark.browser


def test_the_docs_page_works_offline_and_runs_an_operation(tab: Tab) -> None:
    page = tab.page
    server = urlsplit(tab.dashboard.url).netloc
    outside: list[str] = []

    def only_this_server(route: Any) -> None:
        if urlsplit(route.request.url).netloc != server:
            outside.append(route.request.url)
            route.abort()
        else:
            route.continue_()

    page.route("**/*", only_this_server)
    response = tab.goto("/docs")
    assert response is not None and response.status == 200
    page.wait_for_selector(".opblock-summary-path")
    paths = {p.strip().replace("\u200b", "")
             for p in page.locator(".opblock-summary-path").all_inner_texts()}
    assert {"/v1/memory/list", "/v1/memory/show", "/v1/memory/remember",
            "/v1/memory/search", "/v1/sources/add", "/v1/topic-memory/get"} <= paths

    page.locator("button.authorize").first.click()
    page.locator(".modal-ux input").first.fill(tab.dashboard.token)
    page.locator(".modal-ux button.authorize").first.click()
    page.locator(".modal-ux button.btn-done, .modal-ux button.close-modal").first.click()

    block = page.locator(".opblock", has=page.locator(
        ".opblock-summary-path[data-path='/v1/memory/list']"))
    block.locator(".opblock-summary").first.click()
    block.locator("button.try-out__btn").click()
    block.locator("button.execute").click()
    status = block.locator(".live-responses-table tbody .response-col_status").first
    status.wait_for()
    assert status.inner_text().strip().startswith("200")
    assert '"memories"' in block.locator(".live-responses-table").inner_text()
    shot(tab, "api-docs")
    assert outside == [], f"the page asked for files elsewhere: {outside}"
