"""``POST /v1/memory/retire`` in process on a real SQLite file, as ``memory retire``:
the active entries forgotten in one Revision, the keys removed (``key:NAME`` names
nothing, the key can name another Memory), history still readable by ``ID@REV``;
conditional like every write (a stale ``If-Match`` or a Revision that is not the head
is 409, nothing written); a secret in the reason of retire, forget or reactivate is
refused naming ``reason``."""

from __future__ import annotations

from starlette.testclient import TestClient

from tests.adapters.test_http_memory import (
    KEY,
    M,
    _call,
    _error,
    _ok,
    _remember,
    _show,
    client,
)

__all__ = ["client"]  # the fixture, shared with test_http_memory


def _retire(c: TestClient, name: str, headers: dict[str, str] | None = None,
            **extra: object) -> object:
    return _call(c, "POST", f"{M}/retire", {"memory": name, **extra}, headers)


def test_retire_forgets_the_active_entries_and_removes_the_keys(client: TestClient) -> None:
    ref = _ok(_remember(client, {"text": "Run make test before review"},
                        {"text": "The API lives in adapters/http"}))["memory_ref"]
    art = ref["artifact_id"]
    first = _ok(_show(client))["entries"]
    _ok(_call(client, "POST", f"{M}/forget", {"memory": f"key:{KEY}",
                                              "entry_ids": [first[1]["entry_id"]]}))
    retired = _retire(client, f"key:{KEY}", reason="created under the wrong key")
    out = _ok(retired)
    assert out["artifact_id"] == art
    assert out["before"] == {"artifact_id": art, "revision": 2}
    assert out["memory_ref"] == {"artifact_id": art, "revision": 3}
    assert out["forgotten"] == [first[0]["entry_id"]] and out["keys_removed"] == [KEY]
    assert retired.headers["etag"] == f'"{art}@3"'
    # key:NAME names nothing now; the Memory and its history stay readable by id
    _error(_show(client), 404, "not_found")
    head = _ok(_show(client, art))
    assert head["active_entries"] == 0 and head["keys"] == []
    assert _ok(_show(client, f"{art}@1"))["active_entries"] == 2
    changes = _ok(_call(client, "GET", f"{M}/changes", {"memory": art}))
    (rev,) = changes["revisions"]
    assert [(ch["op"], ch["reason"]) for ch in rev["changes"]] == [
        ("deactivate", "created under the wrong key")]
    # the key can name another Memory
    other = _ok(_remember(client, {"text": "A new start"}))["memory_ref"]
    assert other["artifact_id"] != art
    # again: nothing left to do, nothing written
    again = _ok(_retire(client, art))
    assert again["forgotten"] == [] and again["keys_removed"] == []
    assert again["memory_ref"] == again["before"] == {"artifact_id": art, "revision": 3}


def test_retire_is_a_conditional_write(client: TestClient) -> None:
    ref = _ok(_remember(client, {"text": "one"}))["memory_ref"]
    art = ref["artifact_id"]
    _ok(_remember(client, {"text": "two"}))
    # a stale If-Match, or an exact Revision that is not the head: 409, nothing written
    _error(_retire(client, f"key:{KEY}", {"If-Match": f'"{art}@1"'}), 409, "conflict")
    _error(_retire(client, f"{art}@1"), 409, "conflict")
    _error(_retire(client, f"key:{KEY}", {"If-Match": "nonsense"}), 400, "invalid_input",
           "If-Match")
    view = _ok(_show(client))
    assert view["head"]["revision"] == 2 and view["active_entries"] == 2
    assert view["keys"] == [KEY]
    # the head's ETag lands
    out = _ok(_retire(client, f"key:{KEY}", {"If-Match": f'"{art}@2"'}))
    assert len(out["forgotten"]) == 2 and out["memory_ref"]["revision"] == 3


def test_retire_refuses_unknown_names_and_secrets(client: TestClient) -> None:
    """A secret in the reason of retire, forget or reactivate is refused naming
    ``reason`` and nothing is written (the reason was stored in the Revision's changes,
    where ``changes`` printed it back)."""
    _error(_retire(client, "mem_art_nothere"), 404, "not_found")
    _error(_retire(client, "key:nobody"), 404, "not_found")
    _ok(_remember(client, {"text": "one"}))
    entry = _ok(_show(client))["entries"][0]["entry_id"]
    secret = "token ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    message = _error(_retire(client, f"key:{KEY}", reason=secret), 422, "invalid_input",
                     "reason")
    assert "secret" in message and "ghp_" not in message
    for op in ("forget", "reactivate"):
        _error(_call(client, "POST", f"{M}/{op}", {"memory": f"key:{KEY}",
                                                   "entry_ids": [entry], "reason": secret}),
               422, "invalid_input", "reason")
    view = _ok(_show(client))
    assert view["keys"] == [KEY] and view["head"]["revision"] == 1
    _error(_call(client, "POST", f"{M}/retire", {"memory": f"key:{KEY}", "extra": 1}),
           422, "invalid_input")
