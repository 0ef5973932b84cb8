"""``powercontext topic search|get`` end to end on a real SQLite file with the real
SQLite Topic backend: Topics are published through the service's internal
``publish`` (the spec gives users no create/update; processing comes in part 2), then
read by the CLI as a separate process (and, for the bad-input matrix, by ``main()`` in
process, the same code without a process start per case). Also: readiness per family
(a Memory command never trips Topic Memory's shape check, and the reverse) and
``memory rebuild --migrate`` refusing to strand hybrid Topic Heads."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import threading
import unicodedata
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from support.cli import cli_argv

from powercontext.core import canonical
from powercontext.core.errors import RetrievalShapeError
from powercontext.core.models import EmbeddingProfile
from powercontext.core.topic.models import TopicMemoryContent, TopicRef
from powercontext.runtime import open_topic_service, refuse_profile_change_over_topics

SCOPE_A = "repo:/work/demo-a"
SCOPE_B = "repo:/work/demo-b"
RELEASE_1 = TopicMemoryContent(
    "Release process", "How we cut a release of the library.",
    "# Releases\n\nTag the commit on main.\n\nThen run make release, which builds the wheel "
    "and uploads it.")
RELEASE_2 = TopicMemoryContent(
    "Release process", "How we cut and announce a release of the library.",
    "# Releases\n\nTag the commit on main.\n\nThen run make release, which builds the wheel "
    "and uploads it.\n\nFinally announce the release in the changelog channel.")
CAFE = TopicMemoryContent(  # NFC text; queries arrive in NFD too
    "Café ordering", "Where the team orders coffee.", "The café on the corner takes orders.")
CJK = TopicMemoryContent("数据库迁移", "迁移数据库的步骤。", "先备份数据库，然后运行迁移脚本。")
OTHER = TopicMemoryContent("Release process of B", "Scope B's own release notes.",
                           "Scope B releases by hand, never with make release.")


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("POWERCONTEXT_") and k != "OPENAI_API_KEY"}
    env["POWERCONTEXT_HOME"] = str(tmp_path / "home")
    return env


def seed(db: Path | str, *, embedding: str | None = None) -> dict[str, Any]:
    """Scope A: the release Topic at Revisions 1 and 2, a café Topic, a CJK Topic; scope
    B: one Topic of its own."""

    async def body() -> dict[str, Any]:
        async with open_topic_service(db, embedding=embedding or "none") as svc:
            src = canonical.make_source("src_release_notes", "file", "make release\n",
                                        "file:///demo/Makefile")
            src_b = canonical.make_source("src_b_notes", "user_note", "B releases by hand")
            r1, cafe, cjk = await svc.publish(SCOPE_A, creates=[
                (RELEASE_1, [src]), (CAFE, [src]), (CJK, [src])])
            (r2,) = await svc.publish(SCOPE_A, updates=[(r1.ref, RELEASE_2, [src])])
            (other,) = await svc.publish(SCOPE_B, creates=[(OTHER, [src_b])])
            return {"r1": r1, "r2": r2, "cafe": cafe, "cjk": cjk, "other": other,
                    "source": src}

    return asyncio.run(body())


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "memory.db"


@pytest.fixture(params=["sqlite", pytest.param("oceanbase", marks=pytest.mark.oceanbase)])
def any_db(request: pytest.FixtureRequest, tmp_path: Path) -> Path | str:
    """A SQLite file, or a fresh database on the session's seekdb server."""
    if request.param == "sqlite":
        return tmp_path / "memory.db"
    import secrets

    url: str = request.getfixturevalue("seekdb_url")
    return url.rstrip("/") + f"/topic_cli_{secrets.token_hex(4)}"


@pytest.fixture
def seeded_any(any_db: Path | str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
               ) -> dict[str, Any]:
    for k in [k for k in os.environ if k.startswith("POWERCONTEXT_")]:
        monkeypatch.delenv(k)
    monkeypatch.setenv("POWERCONTEXT_HOME", str(tmp_path / "home"))
    return seed(any_db)  # type: ignore[arg-type]


@pytest.fixture
def seeded(db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    for k in [k for k in os.environ if k.startswith("POWERCONTEXT_")]:
        monkeypatch.delenv(k)
    monkeypatch.setenv("POWERCONTEXT_HOME", str(tmp_path / "home"))
    return seed(db)


def proc(db: Path | str, tmp_path: Path, *args: str | bytes, expect: int = 0
         ) -> subprocess.CompletedProcess[bytes]:
    """The CLI as its own process (arguments may be bytes: invalid UTF-8 reaches Python
    as lone surrogates, by surrogateescape)."""
    argv = [*cli_argv(), "--db", str(db), *args]
    out = subprocess.run(argv, capture_output=True, env=_env(tmp_path), timeout=120)
    assert out.returncode == expect, (args, out.returncode, out.stdout, out.stderr)
    return out


def cli(db: Path, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, Any, str]:
    """``main()`` in process: (exit code, parsed --json stdout, stderr)."""
    from powercontext.entrypoints.cli.main import main

    with pytest.raises(SystemExit) as exc:
        main(["--db", str(db), "--json", *args])
    captured = capsys.readouterr()
    return int(exc.value.code or 0), json.loads(captured.out), captured.err


def ref_json(ref: TopicRef) -> dict[str, Any]:
    return {"family": "topic-memory", "artifact_id": ref.artifact_id, "revision": ref.revision}


# ------------------------------------------------------------------ the scenario


@pytest.mark.subprocess
@pytest.mark.slow
def test_search_then_get_the_exact_ref_in_a_real_process(seeded_any, any_db, tmp_path):
    seeded, db = seeded_any, any_db
    r1, r2 = seeded["r1"], seeded["r2"]
    found = json.loads(proc(db, tmp_path, "--json", "topic", "search", "make release",
                            "--scope", SCOPE_A).stdout)
    assert found["untrusted"] is True and found["channels"] == ["topic_fts", "detail_fts"]
    hit = found["hits"][0]
    assert set(hit) == {"artifact", "title", "summary", "snippet", "score", "matched_by"}
    assert hit["artifact"] == ref_json(r2.ref)  # the active Revision, never Revision 1
    assert hit["title"] == "Release process" and hit["summary"] == RELEASE_2.summary
    assert hit["matched_by"] == ["topic_fts", "detail_fts"]
    assert "make release" in hit["snippet"]
    assert [h["artifact"]["artifact_id"] for h in found["hits"]].count(r2.ref.artifact_id) == 1

    got = json.loads(proc(db, tmp_path, "--json", "topic", "get", json.dumps(hit["artifact"]),
                          "--scope", SCOPE_A).stdout)
    assert got["artifact"] == hit["artifact"] and got["detail"] == RELEASE_2.detail
    assert got["based_on"] == ref_json(r1.ref)
    assert got["sources"] == [{"source_id": "src_release_notes",
                               "content_hash": seeded["source"].content_hash}]
    assert got["published_at"] == r2.published_at
    assert set(got) >= {"title", "summary", "detail", "sources", "based_on", "published_at"}

    # the historical Revision stays readable, with its own published_at
    old = json.loads(proc(db, tmp_path, "--json", "topic", "get",
                          f"{r1.ref.artifact_id}@1", "--scope", SCOPE_A).stdout)
    assert old["detail"] == RELEASE_1.detail and old["based_on"] is None
    assert old["published_at"] == r1.published_at
    assert old["published_at"] <= got["published_at"]

    human = proc(db, tmp_path, "topic", "search", "make release", "--scope", SCOPE_A)
    assert f"ref: {r2.ref.artifact_id}@2".encode() in human.stdout
    page = proc(db, tmp_path, "topic", "get", f"{r2.ref.artifact_id}@2", "--scope", SCOPE_A)
    assert b"Finally announce the release" in page.stdout


@pytest.mark.subprocess
def test_lone_surrogates_from_the_command_line_are_bad_input(seeded, db, tmp_path):
    out = proc(db, tmp_path, "topic", "search", b"release \xff", "--scope", SCOPE_A,
               expect=2)
    assert b"query" in out.stderr and b"surrogate" in out.stderr
    out = proc(db, tmp_path, "topic", "search", "release", "--scope", b"repo:\xfe", expect=2)
    assert b"scope_id" in out.stderr


@pytest.mark.subprocess
def test_help_says_where_topics_come_from(tmp_path, db):
    text = proc(db, tmp_path, "topic", "--help").stdout.decode()
    flat = " ".join(text.split())
    assert "processing the Scope's Source journal" in flat and "nothing here edits" in flat
    commands = set(text.split("Commands:")[1].split())
    assert {"search", "get", "flush", "status", "process"} <= commands
    # part 2 adds processing on request; still no user create/update/delete/publish
    assert not {"create", "update", "delete", "publish"} & commands
    assert not db.exists()  # --help opens nothing


# ------------------------------------------------------------------ bad input, found


@pytest.mark.parametrize(("args", "code", "field"), [
    (("search", "x" * 8193, "--scope", SCOPE_A), 2, "query"),
    (("search", " ".join(f"word{i}" for i in range(65)), "--scope", SCOPE_A), 2, "query"),
    (("search", "the of a", "--scope", SCOPE_A), 2, "query"),  # only stopwords
    (("search", "?!  ...", "--scope", SCOPE_A), 2, "query"),
    (("search", "release", "--scope", SCOPE_A, "--limit", "0"), 2, "limit"),
    (("search", "release", "--scope", SCOPE_A, "--limit", "21"), 2, "limit"),
    (("search", "release", "--scope", SCOPE_A, "--limit", "ten"), 2, "limit"),
    (("search", "release", "--scope", ""), 2, "scope_id"),
    (("search", "release", "--scope", "s" * 257), 2, "scope_id"),
    (("search", "release", "--scope", "repo:\x07bell"), 2, "scope_id"),
    (("get", '{"family": "memory", "artifact_id": "mem_art_x", "revision": 1}',
      "--scope", SCOPE_A), 2, "artifact.family"),
    (("get", "{not json", "--scope", SCOPE_A), 2, "artifact"),
])
def test_bad_input_is_exit_2_naming_the_field(seeded, db, capsys, args, code, field):
    rc, out, _ = cli(db, capsys, "topic", *args)
    assert rc == code and out["exit_code"] == code, out
    assert field in out["message"], out


@pytest.mark.parametrize("revision", ["0", "-1", ""])
def test_get_refuses_revision_0_negative_or_missing(seeded, db, capsys, revision):
    ref = seeded["r2"].ref.artifact_id + (f"@{revision}" if revision else "")
    rc, out, _ = cli(db, capsys, "topic", "get", ref, "--scope", SCOPE_A)
    assert rc == 2 and "revision" in out["message"], out
    as_json = {"family": "topic-memory", "artifact_id": seeded["r2"].ref.artifact_id}
    if revision:
        as_json["revision"] = int(revision)
    rc, out, _ = cli(db, capsys, "topic", "get", json.dumps(as_json), "--scope", SCOPE_A)
    assert rc == 2 and "revision" in out["message"], out


def test_another_scopes_topic_is_not_found_and_never_found(seeded, db, capsys):
    other = seeded["other"].ref
    rc, out, _ = cli(db, capsys, "topic", "get", f"{other.artifact_id}@1", "--scope", SCOPE_A)
    assert rc == 4 and out["error"] == "ArtifactNotFoundError"
    assert "Scope B" not in out["message"] and SCOPE_B not in out["message"]
    rc, out, _ = cli(db, capsys, "topic", "search", "release by hand", "--scope", SCOPE_A)
    assert rc == 0 and other.artifact_id not in {h["artifact"]["artifact_id"] for h in out["hits"]}
    rc, out, _ = cli(db, capsys, "topic", "search", "release by hand", "--scope", SCOPE_B)
    assert [h["artifact"]["artifact_id"] for h in out["hits"]] == [other.artifact_id]
    rc, out, _ = cli(db, capsys, "topic", "get", "topic_art_00000000000000000000000000@1",
                     "--scope", SCOPE_A)
    assert rc == 4


def test_hard_queries_answer_without_error(seeded, db, capsys):
    def hits(query: str) -> list[str]:
        rc, out, err = cli(db, capsys, "topic", "search", query, "--scope", SCOPE_A)
        assert rc == 0, (query, out, err)
        return [h["artifact"]["artifact_id"] for h in out["hits"]]

    release, cafe, cjk = (seeded[k].ref.artifact_id for k in ("r2", "cafe", "cjk"))
    assert hits('"release" AND (NEAR(make* OR -wheel)) ^title:x')[0] == release  # FTS syntax
    assert hits("数据库") == [cjk]
    assert hits(unicodedata.normalize("NFD", "café corner")) == [cafe]
    assert len(hits("release")) >= 1


def test_limit_caps_the_hits_and_a_small_limit_is_a_prefix(seeded, db, capsys):
    _, big, _ = cli(db, capsys, "topic", "search", "release orders", "--scope", SCOPE_A,
                    "--limit", "20")
    _, small, _ = cli(db, capsys, "topic", "search", "release orders", "--scope",
                      SCOPE_A, "--limit", "1")
    assert len(big["hits"]) == 2
    assert len(small["hits"]) == 1 and small["hits"] == big["hits"][:1]


# ------------------------------------------------------------------ readiness per family


@pytest.mark.subprocess
def test_a_hybrid_topic_database_leaves_memory_commands_alone(db, tmp_path, monkeypatch):
    for k in [k for k in os.environ if k.startswith("POWERCONTEXT_")]:
        monkeypatch.delenv(k)
    monkeypatch.setenv("POWERCONTEXT_HOME", str(tmp_path / "home"))
    proc(db, tmp_path, "--embedding", "none", "memory", "remember", "--key", "repo:demo",
         "--kind", "fact", "--text", "Releases are cut with make release")
    seeded = seed(db, embedding="deterministic")
    # Memory without any model: never trips Topic Memory's hybrid shape
    out = proc(db, tmp_path, "--embedding", "none", "--json", "memory", "search",
               "make release", "-m", "key:repo:demo")
    assert [h["text"] for h in json.loads(out.stdout)["hits"]] == [
        "Releases are cut with make release"]
    # Topic Memory with its model: 4 channels
    out = json.loads(proc(db, tmp_path, "--embedding", "deterministic", "--json", "topic",
                          "search", "make release", "--scope", SCOPE_A).stdout)
    assert out["channels"] == ["topic_fts", "topic_vector", "detail_fts", "detail_vector"]
    assert out["hits"][0]["artifact"] == ref_json(seeded["r2"].ref)
    # Topic Memory without its model: a shape error naming the fix
    err = proc(db, tmp_path, "--embedding", "none", "topic", "search", "make release",
               "--scope", SCOPE_A, expect=2).stderr.decode()
    assert "--embedding" in err


@pytest.mark.subprocess
def test_a_memory_database_with_a_profile_leaves_topic_commands_alone(db, tmp_path):
    proc(db, tmp_path, "--embedding", "deterministic", "memory", "remember", "--key",
         "repo:demo", "--kind", "fact", "--text", "Releases are cut with make release")
    # the remembered model gives Topic Memory a profile; no Topics yet: nothing refused
    out = json.loads(proc(db, tmp_path, "--json", "topic", "search", "make release",
                          "--scope", SCOPE_A).stdout)
    assert out["hits"] == []
    out = json.loads(proc(db, tmp_path, "--embedding", "none", "--json", "topic", "search",
                          "make release", "--scope", SCOPE_A).stdout)
    assert out["hits"] == [] and out["channels"] == ["topic_fts", "detail_fts"]
    out = json.loads(proc(db, tmp_path, "--json", "memory", "search", "make release",
                          "-m", "key:repo:demo").stdout)
    assert len(out["hits"]) == 1


def test_profile_migration_refuses_to_strand_hybrid_topic_heads(db, tmp_path, monkeypatch):
    for k in [k for k in os.environ if k.startswith("POWERCONTEXT_")]:
        monkeypatch.delenv(k)
    monkeypatch.setenv("POWERCONTEXT_HOME", str(tmp_path / "home"))
    other = EmbeddingProfile("other-8", "other", 8)
    asyncio.run(refuse_profile_change_over_topics(str(db), other))  # no Topics: passes
    seed(db, embedding="deterministic")
    with pytest.raises(RetrievalShapeError, match="never backfilled"):
        asyncio.run(refuse_profile_change_over_topics(str(db), other))
    from powercontext.adapters.embedding.deterministic import DeterministicEmbedding

    same = DeterministicEmbedding().profile
    asyncio.run(refuse_profile_change_over_topics(str(db), same))  # the same profile: passes


def test_profile_migration_passes_over_fts_only_topics(seeded, db):
    asyncio.run(refuse_profile_change_over_topics(str(db), EmbeddingProfile("o-8", "o", 8)))


class _FakeEmbeddings(BaseHTTPRequestHandler):
    """An OpenAI-compatible /embeddings endpoint: 8 dimensions, one fixed unit vector."""

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        data = json.dumps({"object": "list", "model": body["model"], "data": [
            {"object": "embedding", "index": i, "embedding": [1.0] + [0.0] * 7}
            for i, _ in enumerate(body["input"])],
            "usage": {"prompt_tokens": 1, "total_tokens": 1}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.mark.subprocess
def test_memory_rebuild_migrate_refuses_while_hybrid_topic_heads_exist(db, tmp_path,
                                                                       monkeypatch):
    pytest.importorskip("openai")
    for k in [k for k in os.environ if k.startswith("POWERCONTEXT_")]:
        monkeypatch.delenv(k)
    monkeypatch.setenv("POWERCONTEXT_HOME", str(tmp_path / "home"))
    proc(db, tmp_path, "--embedding", "deterministic", "memory", "remember", "--key",
         "repo:demo", "--kind", "fact", "--text", "Releases are cut with make release")
    seeded = seed(db, embedding="deterministic")
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _FakeEmbeddings)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    try:
        env = {"POWERCONTEXT_EMBEDDING": "openai", "POWERCONTEXT_EMBEDDING_MODEL": "fake",
               "POWERCONTEXT_EMBEDDING_DIMENSION": "8", "OPENAI_API_KEY": "test-key",
               "POWERCONTEXT_EMBEDDING_BASE_URL": f"http://127.0.0.1:{srv.server_address[1]}/v1"}
        argv = [*cli_argv(), "--db", str(db), "memory", "rebuild", "--migrate"]
        out = subprocess.run(argv, capture_output=True, text=True, timeout=120,
                             env={**_env(tmp_path), **env})
    finally:
        srv.shutdown()
        srv.server_close()
        thread.join(5)
    assert out.returncode == 2, (out.stdout, out.stderr)
    assert "never backfilled" in out.stderr
    # nothing moved: both families still open with the remembered model
    found = json.loads(proc(db, tmp_path, "--json", "topic", "search", "make release",
                            "--scope", SCOPE_A).stdout)
    assert found["hits"][0]["artifact"] == ref_json(seeded["r2"].ref)
    assert "topic_vector" in found["channels"]
    hits = json.loads(proc(db, tmp_path, "--json", "memory", "search", "make release", "-m",
                           "key:repo:demo", "--mode", "vector").stdout)["hits"]
    assert [h["text"] for h in hits] == ["Releases are cut with make release"]
