"""The server-side boundaries of the dashboard in real headless Chromium: logout
revokes the session on the server (a copied cookie stops working too), a session
expires on the server after its lifetime, and a page whose DNS name was rebound to
127.0.0.1 can neither read a JSON twin nor prepare context nor post a flush.

Chromium resolves ``rebound.test`` to 127.0.0.1 (``--host-resolver-rules``), as a
rebinding DNS server would after the attacker's page loaded; that page itself is
served by Playwright's router, and every request it makes reaches the real server.
Chromium's own mitigation (Local / Private Network Access: a public page may not call a
loopback address) is turned off, as other browsers have none: the server must refuse
on its own."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from support.browser import CHROMIUM, CHROMIUM_ARGS, WAIT_MS, browser_unavailable
from support.serve_process import ServeProcess, clean_env

pytestmark = pytest.mark.browser

TOKEN = "browser-security-token-0123456789"
REBOUND = "rebound.test"
#: Chromium's checks on public pages calling private or loopback addresses.
_NETWORK_ACCESS_CHECKS = ("LocalNetworkAccessChecks", "BlockInsecurePrivateNetworkRequests",
                          "PrivateNetworkAccessSendPreflights",
                          "PrivateNetworkAccessRespectPreflightResults")
#: The short lifetime of the expiry server, seconds.
SHORT = 4


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Chromium that resolves ``rebound.test`` to 127.0.0.1 (this module's own: the
    rule is a launch flag)."""
    reason = browser_unavailable()
    if reason is not None:
        pytest.fail(f"browser tests under CI=true: {reason}")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        chromium = pw.chromium.launch(
            executable_path=str(CHROMIUM), headless=True,
            args=[*CHROMIUM_ARGS, f"--host-resolver-rules=MAP {REBOUND} 127.0.0.1",
                  "--disable-features=" + ",".join(_NETWORK_ACCESS_CHECKS)])
        try:
            yield chromium
        finally:
            chromium.close()


def _serve(tmp: Path, name: str, **env: str) -> ServeProcess:
    config = tmp / f"{name}.toml"
    config.write_text('[inference]\ngeneration_provider = "deterministic"\n', encoding="utf-8")
    return ServeProcess(tmp / f"{name}.db", ["--config", str(config)],
                        clean_env(tmp / f"{name}-home", **env), tmp / f"{name}.stderr")


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, ServeProcess]]:
    tmp = tmp_path_factory.mktemp("security")
    started: dict[str, ServeProcess] = {}
    try:
        started["token"] = _serve(tmp, "token", POWERCONTEXT_API_TOKEN=TOKEN)
        started["short"] = _serve(tmp, "short", POWERCONTEXT_API_TOKEN=TOKEN,
                                  POWERCONTEXT_SERVER_SESSION_LIFETIME_SECONDS=str(SHORT))
        started["open"] = _serve(tmp, "open")
        yield started
    finally:
        for server in started.values():
            server.stop()


def _context(browser: Any) -> Any:
    context = browser.new_context()
    context.set_default_timeout(WAIT_MS)
    return context


def _login(context: Any, url: str, max_age: int = 8 * 3600) -> Any:
    """Log in through the form; the page and the session cookie, whose ``Max-Age`` (as
    the server set it) must be ``max_age``."""
    page = context.new_page()
    page.goto(url + "/ui/login", wait_until="load")
    page.locator("input[name=token]").fill(TOKEN)
    with page.expect_response(lambda r: r.request.method == "POST") as posted, \
            page.expect_navigation(wait_until="load"):
        page.locator("form.login button[type=submit]").click()
    assert "/ui/login" not in page.url, page.url
    assert f"max-age={max_age};" in (posted.value.header_value("set-cookie") or "").lower()
    (cookie,) = [c for c in context.cookies() if c["name"] == "pc_session"]
    return page, cookie


def _opens(browser: Any, url: str, cookie: dict[str, Any]) -> bool:
    """Whether a fresh browser holding only a copy of ``cookie`` (no expiry: kept as a
    thief would keep it) opens the Memories page."""
    context = _context(browser)
    try:
        copy = {k: cookie[k] for k in ("name", "value", "domain", "path", "httpOnly",
                                        "sameSite")}
        context.add_cookies([copy])
        page = context.new_page()
        response = page.goto(url + "/ui/memories", wait_until="load")
        assert response is not None and response.status == 200
        return "/ui/login" not in page.url
    finally:
        context.close()


def test_logout_revokes_the_session_and_every_copy_of_its_cookie(
        browser: Any, servers: dict[str, ServeProcess]) -> None:
    url = servers["token"].url
    context = _context(browser)
    try:
        page, cookie = _login(context, url)  # Max-Age: the 8 h lifetime
        assert _opens(browser, url, cookie)  # a copy works while the session lives
        _second_page, other = _login(_context(browser), url)  # another login, its own
        with page.expect_navigation(wait_until="load"):
            page.locator("form[action='/ui/logout'] button").click()
        assert "/ui/login" in page.url
        assert not _opens(browser, url, cookie), "a copied cookie outlived the logout"
        assert _opens(browser, url, other)  # logging out ended that session only
    finally:
        context.close()


def test_a_session_expires_on_the_server_after_its_lifetime(
        browser: Any, servers: dict[str, ServeProcess]) -> None:
    url = servers["short"].url
    context = _context(browser)
    try:
        page, cookie = _login(context, url, max_age=SHORT)
        time.sleep(SHORT + 2)
        page.goto(url + "/ui/memories", wait_until="load")
        assert "/ui/login" in page.url  # the browser dropped it (Max-Age)...
        assert not _opens(browser, url, cookie)  # ...and the server refuses a kept copy
    finally:
        context.close()


_ATTACK = """<!doctype html><title>loading</title><script>
(async () => {
  const out = {};
  const go = async (name, path, init) => {
    try { const r = await fetch(path, init); out[name] = r.status;
          out[name + "_body"] = (await r.text()).slice(0, 200); }
    catch (e) { out[name] = "failed: " + e; }
  };
  await go("read", "/ui/memories?format=json");
  await go("health", "/v1/health");
  await go("prepare", "/v1/context/prepare", {method: "POST",
    headers: {"Content-Type": "application/json"},
    body: JSON.stringify({scope_id: "project:rebound", query: "deploy"})});
  await go("flush", "/ui/processing/flush?scope=project%3Arebound", {method: "POST"});
  document.title = "done " + JSON.stringify(out);
})();
</script>"""


def test_a_rebound_page_can_neither_read_nor_prepare_nor_flush(
        browser: Any, servers: dict[str, ServeProcess]) -> None:
    server = servers["open"]
    port = urlsplit(server.url).port
    origin = f"http://{REBOUND}:{port}"
    context = _context(browser)
    try:
        page = context.new_page()
        page.route(f"{origin}/attack.html", lambda route: route.fulfill(
            status=200, content_type="text/html", body=_ATTACK))
        page.goto(f"{origin}/attack.html", wait_until="load")
        page.wait_for_function("document.title.startsWith('done ')", timeout=WAIT_MS)
        out = json.loads(page.title()[len("done "):])
        for name in ("read", "health", "prepare", "flush"):
            assert out[name] == 421, out
            assert "misdirected_request" in out[name + "_body"], out
        # a top-level visit by that name is refused too; by the loopback name it opens
        response = page.goto(f"{origin}/ui/memories", wait_until="load")
        assert response is not None and response.status == 421
        response = page.goto(f"{server.url}/ui/memories", wait_until="load")
        assert response is not None and response.status == 200
    finally:
        context.close()
    assert "project:rebound" not in server.stderr()
