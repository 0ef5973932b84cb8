"""The Host policy of ``serve`` and ``mcp --transport http`` (DNS rebinding): which
``Host`` header values a server bound to an address answers."""

from __future__ import annotations

import ipaddress
import socket

import pytest
from hypothesis import given
from hypothesis import strategies as st

from powercontext.entrypoints.http.hosts import HostPolicy, host_name

_LABEL = st.from_regex(r"[a-z0-9]([a-z0-9-]{0,20}[a-z0-9])?", fullmatch=True)
NAMES = st.lists(_LABEL, min_size=1, max_size=4).map(".".join).filter(
    lambda n: n != "localhost" and not _is_ip(n))
PORTS = st.one_of(st.none(), st.integers(0, 65_535))


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def _header(name: str, port: int | None) -> str:
    shown = f"[{name}]" if ":" in name else name
    return shown if port is None else f"{shown}:{port}"


@given(NAMES, PORTS, st.sampled_from(["127.0.0.1", "::1", "localhost"]))
def test_a_loopback_server_refuses_every_other_name(name: str, port: int | None,
                                                    bind: str) -> None:
    assert not HostPolicy.for_bind(bind).allows(_header(name, port))
    assert not HostPolicy.for_bind(bind).allows(_header(name.upper(), port))


@given(st.integers(0x7F000000, 0x7FFFFFFF).map(lambda i: str(ipaddress.IPv4Address(i))),
       PORTS)
def test_every_loopback_address_is_answered(address: str, port: int | None) -> None:
    assert HostPolicy.for_bind("127.0.0.1").allows(_header(address, port))


@given(st.ip_addresses(), PORTS)
def test_a_wildcard_bind_answers_any_address_but_no_foreign_name(address: object,
                                                                 port: int | None) -> None:
    policy = HostPolicy.for_bind("0.0.0.0")
    assert policy.allows(_header(str(address), port))
    assert not policy.allows(_header("rebound.example", port))
    assert policy.allows(_header(socket.gethostname(), port))


@given(NAMES, PORTS)
def test_listed_names_are_answered_with_any_port_and_case(name: str, port: int | None) -> None:
    policy = HostPolicy.for_bind("127.0.0.1", [name.upper()])
    assert policy.allows(_header(name, port))
    assert not policy.allows(_header(name + ".evil", port))
    assert host_name(_header(name, port)) == name


def test_a_named_bind_answers_its_name_and_loopback() -> None:
    policy = HostPolicy.for_bind("memory.internal")
    assert policy.allows("memory.internal:8765") and policy.allows("localhost:1")
    assert not policy.allows("other.internal:8765")
    assert HostPolicy.for_bind("192.0.2.10").allows("192.0.2.10:8765")
    assert not HostPolicy.for_bind("192.0.2.10").allows("192.0.2.11:8765")


@pytest.mark.parametrize("header", [None, "", " localhost", "localhost ", "localhost:x",
                                    "localhost:99999", "a@localhost", "localhost/x",
                                    "localhost?x", "local\\host", "[::1", "localhost:8765#"])
def test_a_malformed_or_missing_host_is_refused(header: str | None) -> None:
    assert not HostPolicy.for_bind("127.0.0.1").allows(header)


def test_a_star_answers_anything() -> None:
    assert HostPolicy.for_bind("127.0.0.1", ["*"]).allows("anything.example")
    assert HostPolicy.for_bind("127.0.0.1", ["*"]).allows(None)


@pytest.mark.parametrize("bad", ["a.example:80", "http://a.example", "a.example/x",
                                 "u@a.example", "", "a b"])
def test_an_allowed_entry_must_be_a_bare_host(bad: str) -> None:
    with pytest.raises(ValueError, match="not a host name"):
        HostPolicy.for_bind("127.0.0.1", [bad])
