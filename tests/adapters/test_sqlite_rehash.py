"""Databases written with the pre-spec hashes (Memory RFC, "Normalization, hashing, and
the search analyzer"): they open with a typed error naming the upgrade command, and
``rehash()`` verifies every Revision against the old formula and rewrites only the
stored content hash, in one transaction with writers paused."""

from __future__ import annotations

import hashlib
import json
import zlib
from pathlib import Path

import apsw
import pytest
import rfc8785
import sqlite_vec

from powercontext.adapters.database import HASH_FORMAT_KEY
from powercontext.adapters.embedding.deterministic import DeterministicEmbedding
from powercontext.adapters.sqlite import SQLiteMemoryBackend
from powercontext.core import canonical
from powercontext.core.errors import (
    CapabilityNotSupportedError,
    IntegrityError,
    UpgradeRequiredError,
    WritesPausedError,
)
from powercontext.core.models import ArtifactRef, MemorySearchRequest

from .conftest import add, id_factory, run

OLD_ARTIFACT_PREFIX = b"powercontext:artifact-content:v1\x00"
OLD_EMBEDDING_PREFIX = b"powercontext:embedding-content:v1\x00"
MODEL = DeterministicEmbedding(dimension=16)


def _raw(path: Path) -> apsw.Connection:
    conn = apsw.Connection(str(path))
    conn.enable_load_extension(True)
    conn.load_extension(sqlite_vec.loadable_path())
    return conn


def _authoritative(path: Path) -> dict[str, list[tuple]]:
    conn = _raw(path)
    try:
        return {
            "revisions": conn.execute(
                "SELECT artifact_id, revision, family, content_encoding, content, lineage, "
                "content_hash FROM artifact_revisions ORDER BY artifact_id, revision").fetchall(),
            "versions": conn.execute(
                "SELECT * FROM memory_entry_versions ORDER BY entry_version_id").fetchall(),
            "heads": conn.execute("SELECT * FROM artifact_heads ORDER BY artifact_id").fetchall(),
        }
    finally:
        conn.close()


def _write_old_database(path: Path, log: bool = False) -> list[ArtifactRef]:
    """A database as the code before the fix wrote it: every stored Artifact content
    hash and embedding hash carries the old prefix, and there is no hash-format marker.
    Memory A has 40 Revisions (deltas and a checkpoint), Memory B two. That release had
    no manifest log: Revision rows hold their manifests (``log``: written with the log,
    as a database whose hashes were tampered with to the old formula would be)."""
    b = SQLiteMemoryBackend(str(path), profile=MODEL.profile)
    if not log:
        b._manifest_log = None
    nid = id_factory("old")
    ra = None
    for i in range(40):
        ra = run(add(b, ra, [f"alpha fact number {i}"], nid, with_vectors=False))
    rb = run(add(b, None, ["bravo fact one"], nid, with_vectors=False))
    rb = run(add(b, rb, ["bravo fact two"], nid, with_vectors=False))
    assert run(b.rebuild(MODEL)).vectors == 42
    bodies = {}
    for ref in (ra, rb):
        for r in range(1, ref.revision + 1):
            rev = run(b.load_revision(ArtifactRef(ref.artifact_id, r)))
            bodies[(ref.artifact_id, r)] = canonical.canonical_dumps(rev.content)
    b.close_sync()
    conn = _raw(path)
    with conn:
        for (aid, r), body in bodies.items():
            old = hashlib.sha256(OLD_ARTIFACT_PREFIX + body).hexdigest()
            conn.execute("UPDATE artifact_revisions SET content_hash = ? "
                         "WHERE artifact_id = ? AND revision = ?", (old, aid, r))
        profile = canonical.canonical_dumps(MODEL.profile)
        for pid, h in conn.execute("SELECT projection_id, entry_content_hash "
                                   "FROM memory_entry_vector_metadata").fetchall():
            old = hashlib.sha256(OLD_EMBEDDING_PREFIX + profile + h.encode()).hexdigest()
            conn.execute("UPDATE memory_entry_vector_metadata SET embedding_content_hash = ? "
                         "WHERE projection_id = ?", (old, pid))
        conn.execute("DELETE FROM powercontext_meta WHERE key = ?", (HASH_FORMAT_KEY,))
    conn.close()
    return [ra, rb]


def test_an_old_format_database_opens_with_a_typed_error_naming_the_upgrade(
    db_path: Path,
) -> None:
    refs = _write_old_database(db_path)
    before = _authoritative(db_path)
    for _ in range(2):  # the marker it records keeps refusing on the next open
        b = SQLiteMemoryBackend(str(db_path), profile=MODEL.profile)
        with pytest.raises(UpgradeRequiredError) as info:
            run(b.load_revision(refs[0]))
        assert "powercontext memory rebuild --rehash" in str(info.value)
        assert isinstance(info.value, IntegrityError)
        with pytest.raises(UpgradeRequiredError):
            run(b.search(MemorySearchRequest("alpha", (refs[0],), 5, "fts")))
        with pytest.raises(UpgradeRequiredError):  # answered without the worker thread
            run(b.capabilities())
        b.close_sync()
    assert _authoritative(db_path) == before  # nothing was read as corrupt or rewritten


def test_rehash_verifies_and_rewrites_only_the_stored_hash(db_path: Path) -> None:
    refs = _write_old_database(db_path)
    before = _authoritative(db_path)
    b = SQLiteMemoryBackend(str(db_path), profile=MODEL.profile)
    report = run(b.rehash())
    assert (report.rewritten, report.current, report.corrupt, report.already) == (42, 0, [],
                                                                                   False)
    # every Revision now verifies under the spec's formula, recomputed here by hand
    for ref in refs:
        for r in range(1, ref.revision + 1):
            rev = run(b.load_revision(ArtifactRef(ref.artifact_id, r)))
            body = canonical.content_bytes(rev.content)
            assert rev.content_hash == hashlib.sha256(body).hexdigest()
    b.close_sync()
    after = _authoritative(db_path)
    # content, encoding, lineage, entry versions and heads are byte for byte the same
    assert [r[:6] for r in after["revisions"]] == [r[:6] for r in before["revisions"]]
    assert after["versions"] == before["versions"] and after["heads"] == before["heads"]
    assert all(a[6] != b_[6] for a, b_ in zip(after["revisions"], before["revisions"],
                                              strict=True))
    # idempotent
    b = SQLiteMemoryBackend(str(db_path), profile=MODEL.profile)
    assert run(b.rehash()).already
    b.close_sync()


def test_rehash_reads_revisions_stored_in_the_manifest_log(db_path: Path) -> None:
    """Rehash rebuilds the canonical bytes of manifest-log Revisions (their changes in the
    row, their manifest in the log) as it does for full and delta rows."""
    refs = _write_old_database(db_path, log=True)
    b = SQLiteMemoryBackend(str(db_path), profile=MODEL.profile)
    report = run(b.rehash())
    assert (report.rewritten, report.corrupt) == (42, [])
    for ref in refs:
        for r in range(1, ref.revision + 1):
            rev = run(b.load_revision(ArtifactRef(ref.artifact_id, r)))
            assert rev.content_hash == hashlib.sha256(
                canonical.content_bytes(rev.content)).hexdigest()
    b.close_sync()


def test_after_rehash_old_vectors_are_untrusted_until_a_rebuild_refills_them(
    db_path: Path,
) -> None:
    refs = _write_old_database(db_path)
    b = SQLiteMemoryBackend(str(db_path), profile=MODEL.profile)
    run(b.rehash())
    q = run(MODEL.embed(("alpha fact number 3",))).vectors[0]
    with pytest.raises(CapabilityNotSupportedError, match="incomplete"):
        run(b.search(MemorySearchRequest("alpha", tuple(refs), 5, "vector", q)))
    auto = run(b.search(MemorySearchRequest("alpha fact number 3", tuple(refs), 5, "auto", q)))
    assert auto.mode == "fts" and auto.hits[0].text == "alpha fact number 3"
    report = run(b.rebuild(MODEL))
    assert (report.vectors, report.incomplete, report.corrupt) == (42, [], [])
    res = run(b.search(MemorySearchRequest("alpha", tuple(refs), 5, "vector", q)))
    assert res.hits[0].text == "alpha fact number 3"
    b.close_sync()


def test_rehash_reports_a_revision_matching_neither_formula_and_leaves_it(
    db_path: Path,
) -> None:
    refs = _write_old_database(db_path)
    conn = _raw(db_path)
    conn.execute("UPDATE artifact_revisions SET content_hash = ? WHERE artifact_id = ? "
                 "AND revision = 2", ("f" * 64, refs[1].artifact_id))
    conn.close()
    b = SQLiteMemoryBackend(str(db_path), profile=MODEL.profile)
    report = run(b.rehash())
    assert report.rewritten == 41
    assert [(a, r) for a, r, _ in report.corrupt] == [(refs[1].artifact_id, 2)]
    with pytest.raises(IntegrityError, match="does not match its content hash"):
        run(b.load_revision(refs[1]))
    assert run(b.load_revision(refs[0])).ref == refs[0]
    b.close_sync()


def test_rehash_refuses_while_writes_are_paused(db_path: Path) -> None:
    _write_old_database(db_path)
    conn = _raw(db_path)
    conn.execute("INSERT INTO powercontext_meta (key, value) VALUES ('writes_paused', 'x')")
    conn.close()
    before = _authoritative(db_path)
    b = SQLiteMemoryBackend(str(db_path), profile=MODEL.profile)
    with pytest.raises(WritesPausedError):
        run(b.rehash())
    b.close_sync()
    assert _authoritative(db_path) == before


def test_a_new_database_is_marked_with_the_spec_hash_format(db_path: Path) -> None:
    b = SQLiteMemoryBackend(str(db_path))
    run(add(b, None, ["a fresh fact"], id_factory()))
    b.close_sync()
    conn = _raw(db_path)
    assert conn.execute("SELECT value FROM powercontext_meta WHERE key = ?",
                        (HASH_FORMAT_KEY,)).fetchall() == [(canonical.HASH_FORMAT,)]
    conn.close()
    b = SQLiteMemoryBackend(str(db_path))
    assert run(b.rehash()).already
    b.close_sync()


@pytest.mark.subprocess
def test_cli_names_the_upgrade_and_rebuild_rehash_performs_it(db_path: Path,
                                                              tmp_path: Path) -> None:
    import json
    import os
    import subprocess

    from support.cli import cli_argv

    refs = _write_old_database(db_path)
    env = dict(os.environ, POWERCONTEXT_HOME=str(tmp_path / "home"))
    env.pop("POWERCONTEXT_DB", None)
    env.pop("POWERCONTEXT_EMBEDDING", None)

    def pc(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*cli_argv(), "--db", str(db_path), *args], capture_output=True,
                              text=True, env=env, timeout=120)

    search = ("--json", "memory", "search", "alpha", "-m", refs[0].artifact_id)
    refused = pc(*search)
    assert refused.returncode == 7, refused.stderr
    err = json.loads(refused.stdout)
    assert err["error"] == "UpgradeRequiredError"
    assert "powercontext memory rebuild --rehash" in err["message"]
    done = pc("--json", "memory", "rebuild", "--rehash")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["rehash"] == {"rewritten": 42, "already_current": False, "corrupt": []}
    assert out["memories"] == 2 and out["corrupt"] == []
    found = pc(*search)
    assert found.returncode == 0, found.stderr
    assert json.loads(found.stdout)["hits"]
    again = pc("--json", "memory", "rebuild", "--rehash")
    assert json.loads(again.stdout)["rehash"]["already_current"] is True


def test_a_rehash_that_crashed_while_paused_can_be_resumed_and_rerun(db_path: Path) -> None:
    refs = _write_old_database(db_path)
    conn = _raw(db_path)  # what a process killed inside rehash() leaves: the pause only
    conn.execute("INSERT INTO powercontext_meta (key, value) VALUES ('writes_paused', 'x')")
    conn.close()
    b = SQLiteMemoryBackend(str(db_path), profile=MODEL.profile)
    with pytest.raises(WritesPausedError, match="--resume"):
        run(b.rehash())
    run(b.resume_writes())  # `memory rebuild --resume` works before the upgrade
    with pytest.raises(UpgradeRequiredError):
        run(b.load_revision(refs[0]))
    assert run(b.rehash()).rewritten == 42
    assert run(b.load_revision(refs[0])).ref == refs[0]
    b.close_sync()


def test_stored_hashes_are_recomputable_from_the_stored_bytes_by_the_spec(
    db_path: Path,
) -> None:
    b = SQLiteMemoryBackend(str(db_path), profile=MODEL.profile)
    ref = run(add(b, None, ["spec hashes are stored"], id_factory("spec"), with_vectors=False))
    run(b.rebuild(MODEL))
    ref = run(add(b, ref, ["and recomputed from the rows"], id_factory("spec2"),
                  with_vectors=False))
    b.close_sync()
    conn = _raw(db_path)
    try:
        # each Revision row holds its changes; its manifest is, per entry, the newest
        # row of the manifest log at or before it: both rebuilt here with rfc8785 alone
        for r in (1, 2):
            ((encoding, content, stored),) = conn.execute(
                "SELECT content_encoding, content, content_hash FROM artifact_revisions "
                "WHERE artifact_id = ? AND revision = ?", (ref.artifact_id, r)).fetchall()
            assert encoding == "manifest-log"
            changes = json.loads(zlib.decompress(bytes(content)))["changes"]
            items = {}
            for entry_id, version, content_hash, state in conn.execute(
                    "SELECT entry_id, entry_version_id, entry_content_hash, state "
                    "FROM memory_manifest_items WHERE memory_artifact_id = ? "
                    "AND revision <= ? ORDER BY revision", (ref.artifact_id, r)):
                items[entry_id] = {"entry_content_hash": content_hash, "entry_id": entry_id,
                                   "entry_version_id": version, "state": state}
            body = rfc8785.dumps({
                "changes": [dict(zip(("op", "entry_id", "from_entry_version_id",
                                      "to_entry_version_id", "reason"), c, strict=True))
                            for c in changes],
                "manifest": {"entries": [items[k] for k in sorted(items)],
                             "format": "flat-v1"},
                "schema": "powercontext.memory.v1"})
            assert body.startswith(b'{"changes":[{"entry_id":')
            assert stored == hashlib.sha256(body).hexdigest()
        ((profile_json,),) = conn.execute(
            "SELECT value FROM powercontext_meta WHERE key = 'embedding_profile'").fetchall()
        ((entry_hash, embedding_hash),) = conn.execute(
            "SELECT entry_content_hash, embedding_content_hash "
            "FROM memory_entry_vector_metadata").fetchall()
        assert embedding_hash == hashlib.sha256(
            profile_json.encode("utf-8") + entry_hash.encode("ascii")).hexdigest()
    finally:
        conn.close()


def test_an_open_database_reports_its_capabilities_without_the_worker_thread(
    db_path: Path,
) -> None:
    b = SQLiteMemoryBackend(str(db_path), profile=MODEL.profile)
    first = run(b.capabilities())  # opens, on the worker thread

    async def no_hop(*_args):  # type: ignore[no-untyped-def]
        raise AssertionError("capabilities() of an open database went to the worker")

    b._run = no_hop  # type: ignore[method-assign]
    assert run(b.capabilities()) is first
    del b._run
    b.close_sync()
    assert run(b.capabilities()) == first  # closed: reopened through the worker
    b.close_sync()
