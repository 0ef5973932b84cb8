"""The browser test set-up itself: Debian's Chromium starts through Playwright's
``executable_path`` and talks to the ``powercontext serve`` process over real HTTP
(the API's health document, no token needed; a page of the API refuses a request
without the token)."""

from __future__ import annotations

import json

import pytest
from support.browser import Tab

pytestmark = pytest.mark.browser


def test_chromium_reaches_the_served_api(tab: Tab) -> None:
    response = tab.page.goto(tab.dashboard.url + "/v1/health")
    assert response is not None and response.status == 200
    health = json.loads(tab.page.locator("body").inner_text())
    assert health["role"] == "all", health
    assert "Chrom" in tab.page.evaluate("navigator.userAgent")


def test_the_api_refuses_a_wrong_bearer_token(tab: Tab) -> None:
    response = tab.page.request.post(
        tab.dashboard.url + "/v1/topic-memory/search",
        data={"scope_id": "project:dashboard/demo", "query": "make"},
        headers={"Authorization": "Bearer not-the-token"})
    assert response.status == 401
    assert response.json()["error"]["code"] == "unauthorized"
