"""The dashboard's shared machinery (issue 17) through the whole app in process
(Starlette's TestClient) over a real SQLite Memory: the login form and its signed
``pc_session`` cookie, a wrong token, the bearer token, the redirect of a browser
without a session, same-origin refusal of cross-origin POSTs, the JSON twin and the
HTML/JSON error pages, the security headers, autoescape and the chart geometry."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jinja2
import pytest
from hypothesis import given
from hypothesis import strategies as st
from starlette.testclient import TestClient
from support.dashboard import ORIGIN, TOKEN, client, seed

from powercontext.entrypoints.http.dashboard import web
from powercontext.entrypoints.http.dashboard.auth import safe_next
from powercontext.entrypoints.http.dashboard.sessions import MAX_FAILURES, SessionStore


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    path = tmp_path_factory.mktemp("dash-web") / "memory.db"
    return path, seed(path)


@pytest.fixture
def ui(db: tuple[Path, dict[str, Any]]) -> Iterator[TestClient]:
    c, svc = client(db[0])
    yield c
    asyncio.run(svc.close())


def _login(c: TestClient, token: str = TOKEN, next_url: str = "/ui/memories") -> Any:
    return c.post("/ui/login", data={"token": token, "next": next_url},
                  headers={"Origin": ORIGIN}, follow_redirects=False)


def test_a_browser_without_a_session_is_sent_to_the_login_form(ui: TestClient) -> None:
    r = ui.get("/ui/memories?page=1", follow_redirects=False)
    assert r.status_code == 303
    assert r.headers["location"] == "/ui/login?next=%2Fui%2Fmemories%3Fpage%3D1"
    form = ui.get(r.headers["location"])
    assert form.status_code == 200
    assert 'name="token"' in form.text and 'value="/ui/memories?page=1"' in form.text


def test_a_json_request_without_credentials_gets_the_api_401(ui: TestClient) -> None:
    r = ui.get("/ui/memories", headers={"Accept": "application/json"})
    assert r.status_code == 401
    assert r.json()["error"]["code"] == "unauthorized"
    assert ui.get("/ui/memories?format=json").status_code == 401


def test_login_sets_a_signed_session_cookie_that_opens_the_pages(ui: TestClient) -> None:
    assert "Log out" not in ui.get("/ui/login").text  # no session yet
    r = _login(ui, next_url="/ui/memories?page=1")
    assert r.status_code == 303 and r.headers["location"] == "/ui/memories?page=1"
    cookie = r.headers["set-cookie"]
    assert cookie.startswith(f"{web.COOKIE_NAME}=")
    for attribute in ("HttpOnly", "Path=/ui", "SameSite=strict"):
        assert attribute.lower() in cookie.lower()
    assert "secure" not in cookie.lower()  # plain http here; https gets Secure
    value = cookie.split(";")[0].split("=", 1)[1]
    assert TOKEN not in value and SessionStore(TOKEN).valid(value)
    assert f"Max-Age={8 * 3600}".lower() in cookie.lower()  # the browser drops it too
    page = ui.get("/ui/memories")  # the client keeps the cookie
    assert page.status_code == 200 and "<h1>Memories</h1>" in page.text
    assert 'action="/ui/logout"' in page.text


def test_a_forged_or_foreign_cookie_is_not_a_session(ui: TestClient) -> None:
    forged = SessionStore("another-token").issue()
    assert not SessionStore(TOKEN).valid(forged)
    for value in (forged, "abc.def", "", "x" * 97, f"{'0' * 32}.{'0' * 64}",
                  "eyJzaWQiOiJ4In0.aaaaaa.bbbbbbbbbbbbbbbbbbbbbbbbbbb"):
        ui.cookies.set(web.COOKIE_NAME, value, path="/ui")
        assert ui.get("/ui/memories", follow_redirects=False).status_code == 303, value
        ui.cookies.clear()


def test_a_wrong_token_answers_the_form_again_with_401(ui: TestClient) -> None:
    r = _login(ui, token="wrong")
    assert r.status_code == 401
    assert "That token is not accepted." in r.text and 'name="token"' in r.text
    assert "set-cookie" not in r.headers
    j = ui.post("/ui/login?format=json", data={"token": "wrong"}, headers={"Origin": ORIGIN})
    assert j.status_code == 401 and j.json()["error"]["code"] == "unauthorized"
    assert ui.get("/ui/memories", follow_redirects=False).status_code == 303


def test_the_bearer_token_opens_pages_and_a_wrong_one_is_refused(ui: TestClient) -> None:
    ok = ui.get("/ui/memories?format=json", headers={"Authorization": f"Bearer {TOKEN}"})
    assert ok.status_code == 200 and "memories" in ok.json()
    bad = ui.get("/ui/memories?format=json", headers={"Authorization": "Bearer nope"})
    assert bad.status_code == 401 and bad.json()["error"]["code"] == "unauthorized"
    html = ui.get("/ui/memories", headers={"Authorization": "Bearer nope"})
    assert html.status_code == 401 and "text/html" in html.headers["content-type"]


def test_logout_clears_the_cookie(ui: TestClient) -> None:
    _login(ui)
    r = ui.post("/ui/logout", headers={"Origin": ORIGIN}, follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == "/ui/login"
    assert f'{web.COOKIE_NAME}=""' in r.headers["set-cookie"]
    ui.cookies.clear()
    assert ui.get("/ui/memories", follow_redirects=False).status_code == 303


def test_logout_revokes_the_session_a_copied_cookie_included(ui: TestClient) -> None:
    copied = _login(ui).cookies[web.COOKIE_NAME]
    other = _login(ui).cookies[web.COOKIE_NAME]  # a second login: its own session
    assert copied != other
    ui.cookies.clear()
    ui.cookies.set(web.COOKIE_NAME, copied, path="/ui")
    assert ui.get("/ui/memories", follow_redirects=False).status_code == 200
    ui.post("/ui/logout", headers={"Origin": ORIGIN}, follow_redirects=False)
    for value, status in ((copied, 303), (other, 200)):
        ui.cookies.clear()
        ui.cookies.set(web.COOKIE_NAME, value, path="/ui")
        assert ui.get("/ui/memories", follow_redirects=False).status_code == status
        assert ui.get("/ui/memories?format=json").status_code == (
            401 if status == 303 else 200)


def test_a_session_expires_on_the_server_after_its_lifetime(ui: TestClient) -> None:
    now = [1_800_000_000.0]
    ui.app.state.sessions = SessionStore(TOKEN, 3600, clock=lambda: now[0])  # type: ignore[attr-defined]
    value = _login(ui).cookies[web.COOKIE_NAME]
    now[0] += 3600
    assert ui.get("/ui/memories", follow_redirects=False).status_code == 200
    now[0] += 1
    ui.cookies.clear()
    ui.cookies.set(web.COOKIE_NAME, value, path="/ui")  # kept past Max-Age, as a copy is
    r = ui.get("/ui/memories?page=2", follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"].startswith("/ui/login")


def test_failed_logins_are_throttled_even_the_right_token_then(ui: TestClient) -> None:
    for _ in range(MAX_FAILURES):
        assert _login(ui, token="wrong-token").status_code == 401
    refused = _login(ui)
    assert refused.status_code == 429 and "set-cookie" not in refused.headers
    assert 1 <= int(refused.headers["retry-after"]) <= 60
    assert "Too many failed logins" in refused.text and 'name="token"' in refused.text
    j = ui.post("/ui/login?format=json", data={"token": TOKEN}, headers={"Origin": ORIGIN})
    assert j.status_code == 429 and j.json()["error"]["code"] == "too_many_requests"
    # the bearer token on the API and the pages is no login: it still answers
    ok = ui.get("/ui/memories?format=json", headers={"Authorization": f"Bearer {TOKEN}"})
    assert ok.status_code == 200


@pytest.mark.parametrize("headers", [
    {"Origin": "http://evil.example"},
    {"Origin": "http://testserver:8080"},
    {"Origin": "https://testserver"},
    {"Origin": "null"},
    {"Referer": "http://evil.example/ui/memories"},
    {},
])
def test_a_cross_origin_post_is_refused_403(ui: TestClient, headers: dict[str, str]) -> None:
    for path, data in (("/ui/login", {"token": TOKEN}), ("/ui/logout", {}),
                       ("/ui/citations/validate", {"citation": "{}"})):
        r = ui.post(path, data=data, headers={**headers, "Authorization": f"Bearer {TOKEN}"},
                    follow_redirects=False)
        assert r.status_code == 403, (path, headers)
        assert "set-cookie" not in r.headers
        j = ui.post(path + "?format=json", data=data,
                    headers={**headers, "Authorization": f"Bearer {TOKEN}"})
        assert j.json()["error"]["code"] == "forbidden_origin"


def test_a_same_origin_referer_is_accepted_when_there_is_no_origin(ui: TestClient) -> None:
    r = ui.post("/ui/login", data={"token": TOKEN},
                headers={"Referer": f"{ORIGIN}/ui/login"}, follow_redirects=False)
    assert r.status_code == 303 and "set-cookie" in r.headers


@pytest.mark.parametrize("value, expected", [
    ("/ui/memories/x?page=2", "/ui/memories/x?page=2"), ("/ui", "/ui"),
    ("https://evil.example/ui", "/ui/memories"), ("//evil.example", "/ui/memories"),
    ("/uix", "/ui/memories"), ("/ui\\..", "/ui/memories"), (None, "/ui/memories"),
    ("/v1/health", "/ui/memories"), ("/ui/\nSet-Cookie", "/ui/memories"),
])
def test_login_only_ever_redirects_into_the_dashboard(value: str | None, expected: str) -> None:
    assert safe_next(value) == expected


def test_without_a_server_token_no_login_is_needed(db: tuple[Path, dict[str, Any]]) -> None:
    c, svc = client(db[0], token=None)
    try:
        assert c.get("/ui/memories").status_code == 200
        r = c.get("/ui/login?next=/ui/memories", follow_redirects=False)
        assert r.status_code == 303 and r.headers["location"] == "/ui/memories"
        assert "Log out" not in c.get("/ui/memories").text
    finally:
        asyncio.run(svc.close())


def test_pages_carry_security_headers_and_the_json_twin_varies(ui: TestClient) -> None:
    _login(ui)
    r = ui.get("/ui/memories")
    csp = r.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "frame-ancestors 'none'" in csp
    assert r.headers["x-content-type-options"] == "nosniff"
    assert "Accept" in r.headers["vary"]
    j = ui.get("/ui/memories", headers={"Accept": "application/json"})
    assert j.headers["content-type"].startswith("application/json")
    assert ui.get("/ui/memories?format=html",
                  headers={"Accept": "application/json"}).text.startswith("<!doctype html>")


def test_unknown_dashboard_paths_are_html_404_pages_and_api_404_for_json(
        ui: TestClient) -> None:
    r = ui.get("/ui/no-such-page")
    assert r.status_code == 404 and "text/html" in r.headers["content-type"]
    assert "404" in r.text and "not_found" in r.text
    j = ui.get("/ui/no-such-page?format=json")
    assert j.status_code == 404 and j.json()["error"]["code"] == "not_found"
    api = ui.get("/v1/nothing")  # the API keeps its JSON errors
    assert api.headers["content-type"].startswith("application/json")


def test_the_dashboard_is_not_in_the_openapi_document(ui: TestClient) -> None:
    paths = ui.get("/openapi.json").json()["paths"]
    assert not [p for p in paths if p.startswith("/ui")]


def test_the_stylesheet_and_script_are_served_without_a_session(ui: TestClient) -> None:
    css = ui.get("/ui/static/style.css")
    assert css.status_code == 200 and "text/css" in css.headers["content-type"]
    assert ui.get("/ui/static/dashboard.js").status_code == 200


def test_every_template_autoescapes_and_undefined_names_fail() -> None:
    env = web.environment()
    assert env.from_string("{{ x }}").render(x="<script>") == "&lt;script&gt;"
    with pytest.raises(jinja2.UndefinedError):
        env.from_string("{{ missing }}").render()
    for name in env.list_templates():
        source = (web.TEMPLATES / name).read_text()
        assert "|safe" not in source.replace(" ", ""), name  # no template bypasses escaping


def test_chart_layout_scales_points_into_the_plot_area() -> None:
    g = web.chart_layout([("a", 1), ("b", 4), {"x": "c", "y": 2}], 640, 200, "bar")
    assert len(g["bars"]) == 3 and not g["empty"]
    top, bottom = g["plot"]["top"], g["plot"]["bottom"]
    heights = [b["h"] for b in g["bars"]]
    assert heights[1] == max(heights) and all(0 < h <= bottom - top for h in heights)
    assert g["yticks"][0]["label"] == "0"
    line = web.chart_layout([(str(i), i * i) for i in range(20)], kind="line")
    assert line["path"].startswith("M") and len(line["dots"]) == 20
    assert line["xticks"][-1]["label"] == "19" and len(line["xticks"]) <= 9
    assert web.chart_layout([], kind="line")["empty"]
    with pytest.raises(ValueError):
        web.chart_layout([("a", float("nan"))])


def test_the_plot_macros_render_svg_with_escaped_labels() -> None:
    env = web.environment()
    html = env.from_string('{% from "_plots.html" import bar_chart, line_chart %}'
                           '{{ bar_chart(p, title="T<", x_label="day", y_label="n") }}'
                           '{{ line_chart(p, title="L") }}').render(p=[["<d>", 3], ["e", 1]])
    assert html.count("<svg") == 2 and "<rect" in html and "<path" in html
    assert "&lt;d&gt;" in html and "T&lt;" in html and "<d>" not in html


def test_the_session_cookie_is_secure_over_https(db: tuple[Path, dict[str, Any]]) -> None:
    c, svc = client(db[0])
    try:
        c.base_url = c.base_url.copy_with(scheme="https")  # type: ignore[attr-defined]
        r = c.post("/ui/login", data={"token": TOKEN}, follow_redirects=False,
                   headers={"Origin": "https://testserver"})
        assert r.status_code == 303 and "; secure" in r.headers["set-cookie"].lower()
    finally:
        asyncio.run(svc.close())


@given(st.text(max_size=40) | st.from_regex(r"\A/ui[/?][ -~]{0,20}\Z"))
def test_login_never_redirects_outside_the_dashboard(value: str) -> None:
    target = safe_next(value)
    assert target.startswith("/ui") and not target.startswith("//")
    assert target == value or target == "/ui/memories"
    assert not any(ord(c) < 0x21 for c in target) and "\\" not in target


@given(st.lists(st.tuples(st.text(max_size=5), st.integers(0, 10**9)), max_size=60),
       st.sampled_from(["bar", "line"]))
def test_chart_shapes_stay_inside_the_plot_area(points: list[tuple[str, int]],
                                                kind: str) -> None:
    g = web.chart_layout(points, 640, 200, kind)
    box = g["plot"]
    for b in g["bars"]:
        assert box["left"] <= b["x"] and b["x"] + b["w"] <= box["right"] + 0.01
        assert box["top"] - 0.01 <= b["y"] <= box["bottom"] and b["h"] >= 0
    for d in g["dots"]:
        assert box["left"] <= d["x"] <= box["right"]
        assert box["top"] - 0.01 <= d["y"] <= box["bottom"]
    assert len(g["xticks"]) <= 9
