"""Dashboard sessions and the failed-login throttle against simple models: a session is
valid exactly while it is within its lifetime and not revoked, whatever the order of
logins, logouts and time; a client is refused exactly while it has had
``max_failures`` failures within the window; both keep bounded memory."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from powercontext.entrypoints.http.dashboard import sessions
from powercontext.entrypoints.http.dashboard.sessions import LoginThrottle, SessionStore

TOKEN = "session-test-token-0123456789"

# an operation: ("login",), ("logout", index of an issued cookie), ("wait", seconds)
OPS = st.lists(st.one_of(
    st.just(("login",)),
    st.tuples(st.just("logout"), st.integers(0, 20)),
    st.tuples(st.just("wait"), st.integers(0, 400)),
), max_size=40)


@settings(max_examples=200)
@given(OPS, st.integers(1, 600))
def test_a_session_is_valid_exactly_within_its_lifetime_until_logout(ops, lifetime) -> None:
    now = [1_800_000_000.0]
    store = SessionStore(TOKEN, lifetime, clock=lambda: now[0])
    issued: list[tuple[str, float]] = []
    revoked: set[int] = set()
    for op in ops:
        if op[0] == "login":
            issued.append((store.issue(), now[0]))
        elif op[0] == "logout" and issued:
            index = op[1] % len(issued)
            value, at = issued[index]
            store.revoke(value)
            if now[0] - int(at) <= lifetime:  # an expired cookie has nothing to revoke
                revoked.add(index)
        elif op[0] == "wait":
            now[0] += op[1]
        for index, (value, at) in enumerate(issued):
            alive = int(now[0]) - int(at) <= lifetime and index not in revoked
            assert store.valid(value) is alive, (index, now[0] - at, lifetime)
            # another process with the same token agrees on lifetime (not on logouts)
            same_token = SessionStore(TOKEN, lifetime, clock=lambda: now[0])
            assert same_token.valid(value) is (int(now[0]) - int(at) <= lifetime)
            assert not SessionStore("another-token-0123456789", lifetime,
                                    clock=lambda: now[0]).valid(value)


@given(st.binary(max_size=300).map(lambda b: b.decode("latin-1")))
def test_no_arbitrary_value_is_a_session(value: str) -> None:
    assert not SessionStore(TOKEN).valid(value)


def test_a_cookie_never_holds_the_token_and_each_login_is_new() -> None:
    store = SessionStore(TOKEN)
    values = {store.issue() for _ in range(50)}
    assert len(values) == 50 and not any(TOKEN in v for v in values)


def test_revocations_are_bounded_and_forget_the_soonest_to_expire(monkeypatch) -> None:
    monkeypatch.setattr(sessions, "MAX_REVOKED", 8)
    now = [1_800_000_000.0]
    store = SessionStore(TOKEN, 100, clock=lambda: now[0])
    cookies = []
    for _ in range(12):
        cookies.append(store.issue())
        now[0] += 1
    for value in cookies:
        store.revoke(value)
        assert store.revoked <= 8
    assert [store.valid(v) for v in cookies] == [True] * 4 + [False] * 8
    now[0] += 200  # all expired: the next revocation prunes them
    store.revoke(store.issue())
    assert store.revoked == 1


def test_a_lifetime_under_one_second_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 1 second"):
        SessionStore(TOKEN, 0)


EVENTS = st.lists(st.tuples(st.sampled_from(["a", "b", "c"]),
                            st.sampled_from(["fail", "ok", "wait"]),
                            st.floats(0, 30, allow_nan=False)), max_size=60)


@settings(max_examples=300)
@given(EVENTS)
def test_a_client_is_refused_exactly_after_max_failures_within_the_window(events) -> None:
    now = [0.0]
    throttle = LoginThrottle(max_failures=3, window=60.0, clock=lambda: now[0])
    failures: dict[str, list[float]] = {}
    for client, what, seconds in events:
        recent = [t for t in failures.get(client, []) if now[0] - t < 60.0]
        expected = 0.0 if len(recent) < 3 else recent[-3] + 60.0 - now[0]
        assert throttle.wait(client) == pytest.approx(expected)
        if what == "fail" and expected == 0.0:
            failures.setdefault(client, []).append(now[0])
            throttle.failed(client)
        elif what == "ok" and expected == 0.0:
            failures.pop(client, None)
            throttle.succeeded(client)
        now[0] += seconds


def test_the_throttle_remembers_a_bounded_number_of_clients() -> None:
    now = [0.0]
    throttle = LoginThrottle(max_failures=2, window=60.0, max_clients=100,
                             clock=lambda: now[0])
    for i in range(10_000):
        throttle.failed(f"10.0.{i // 256}.{i % 256}")
        assert len(throttle) <= 100
    throttle.failed("10.0.39.15")  # the last client seen: its two failures count
    assert throttle.wait("10.0.39.15") > 0
    assert all(len(v) <= 2 for v in throttle.state().values())
