"""The CLI after a COMMIT whose outcome is unknown (Memory RFC, "Concurrency and
transactions"): it rereads the planned Revision and maps ``--key`` only when the write
landed, so a retry never creates a second Memory. The lost reply is injected at the
SQLite adapter's COMMIT primitive (the OceanBase test kills a real connection)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from support.keys import stored_key

import powercontext.runtime as runtime_mod
from powercontext.adapters.sqlite import SQLiteMemoryBackend
from powercontext.core.errors import BackendError, CommitOutcomeUnknownError
from powercontext.entrypoints.cli.main import cli
from powercontext.service import MemoryService


class _LostReply(SQLiteMemoryBackend):
    """The first plan COMMIT loses its reply: ``landed`` commits first, ``lost`` rolls
    back; ``unreadable`` commits and then the next reads fail too."""

    def __init__(self, path: str, mode: str) -> None:
        super().__init__(path)
        self.mode = mode
        self._armed = True
        self._in_plan = False
        self._fail_reads = False
        rows = self._memory_tables.rows
        real_head = rows.head

        def head(artifact_id: str) -> int | None:
            if self._fail_reads:
                raise BackendError("injected: the server does not answer")
            return real_head(artifact_id)

        rows.head = head

    def _commit_plan_sync(self, plan, vectors, key=None):  # type: ignore[no-untyped-def]
        self._in_plan = True
        return super()._commit_plan_sync(plan, vectors, key)

    def _commit_sync(self) -> None:
        if not (self._armed and self._in_plan):
            return super()._commit_sync()
        self._armed = self._in_plan = False
        if self.mode == "lost":
            self._rollback_sync()
        else:
            super()._commit_sync()
            self._fail_reads = self.mode == "unreadable"
        raise CommitOutcomeUnknownError("injected: the connection failed during COMMIT")


@pytest.fixture
def cli_with(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    db = tmp_path / "memory.db"
    monkeypatch.setenv("POWERCONTEXT_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("POWERCONTEXT_DB", raising=False)
    monkeypatch.delenv("POWERCONTEXT_EMBEDDING", raising=False)

    def invoke(mode: str | None, *args: str):
        if mode is None:
            monkeypatch.undo()
            monkeypatch.setenv("POWERCONTEXT_HOME", str(tmp_path / "home"))
        else:
            monkeypatch.setattr(runtime_mod, "open_service",
                                lambda url, **_: MemoryService(_LostReply(url, mode)))
        return CliRunner().invoke(cli, ["--db", str(db), "--json", *args],
                                  catch_exceptions=False)

    return db, invoke


def _heads(db: Path) -> list[str]:
    import apsw

    conn = apsw.Connection(str(db))
    try:
        return [r[0] for r in conn.execute("SELECT artifact_id FROM artifact_heads")]
    finally:
        conn.close()


REMEMBER = ("memory", "remember", "--key", "repo:demo", "--text")


def test_a_landed_commit_is_reread_and_its_new_memory_mapped_to_the_key(cli_with) -> None:
    db, invoke = cli_with
    first = invoke("landed", *REMEMBER, "Run make test before review")
    assert first.exit_code == 0, (first.stdout, first.stderr)
    out = json.loads(first.stdout)
    assert out["changed"] is True and out["memory_ref"]["revision"] == 1
    assert "landed" in first.stderr
    created = out["memory_ref"]["artifact_id"]
    assert stored_key(db, "repo:demo") == created
    # the retry an agent makes with the key writes to the same Memory
    again = invoke(None, *REMEMBER, "Use uv for the virtualenv")
    assert again.exit_code == 0, again.stdout
    assert json.loads(again.stdout)["memory_ref"] == {"artifact_id": created, "revision": 2}
    assert _heads(db) == [created]


def test_a_commit_that_did_not_land_says_nothing_was_written_and_maps_no_key(
    cli_with,
) -> None:
    db, invoke = cli_with
    first = invoke("lost", *REMEMBER, "Run make test before review")
    assert first.exit_code == 3, first.stdout
    err = json.loads(first.stdout)
    assert "nothing changed; run the same command again" in err["message"]
    assert stored_key(db, "repo:demo") is None
    assert _heads(db) == []
    again = invoke(None, *REMEMBER, "Run make test before review")
    assert again.exit_code == 0
    assert len(_heads(db)) == 1


def test_an_unreadable_database_keeps_the_outcome_unknown_and_names_the_check(
    cli_with,
) -> None:
    db, invoke = cli_with
    first = invoke("unreadable", *REMEMBER, "Run make test before review")
    assert first.exit_code == 1, first.stdout
    err = json.loads(first.stdout)
    assert err["error"] == "CommitOutcomeUnknownError"
    (created,) = _heads(db)  # it did land; the CLI could not see it
    assert f"powercontext memory changes {created}@1" in err["message"]
    # the key was stored in the transaction that landed: the key names what landed
    assert stored_key(db, "repo:demo") == created
