"""Upgrading a database an earlier release wrote, from the CLI: one command names the one
step that upgrades it, following any command's advice never leads to a second one, and
``info`` always answers (exit 0, with the command).

An earlier release's database carries the ``analyzer-v1`` label (not a version: its rules
changed under it), stores its Artifact content hashes with the pre-spec prefix and has
no hash-format marker. It is built the way ``tests/adapters/test_sqlite_rehash.py``
builds one: written by today's code, then its hashes and markers rewritten with SQL.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import subprocess
from pathlib import Path

import apsw
import pytest
import sqlite_vec
from support.cli import cli_argv

from powercontext.adapters.database import HASH_FORMAT_KEY
from powercontext.adapters.sqlite import SQLiteMemoryBackend
from powercontext.core import canonical
from powercontext.core.analyzer import DEFAULT_VERSION
from powercontext.core.models import ArtifactRef

pytestmark = pytest.mark.subprocess  # the CLI

OLD_ARTIFACT_PREFIX = b"powercontext:artifact-content:v1\x00"


def _raw(path: Path) -> apsw.Connection:
    conn = apsw.Connection(str(path))
    conn.enable_load_extension(True)
    conn.load_extension(sqlite_vec.loadable_path())
    return conn


def make_earlier_release(path: Path, *, analyzer_label: str | None = "analyzer-v1") -> None:
    """Rewrite ``path`` (written by today's code) as an earlier release left it: every
    Revision's content hash in the legacy formula, no hash-format marker, and the
    analyzer label ``analyzer_label`` (None: today's analyzer kept)."""
    backend = SQLiteMemoryBackend(str(path))

    async def bodies() -> dict[tuple[str, int], bytes]:
        out = {}
        for aid in set((await backend.memory_keys()).values()):
            head = await backend.head(aid)
            assert head is not None
            for r in range(1, head.revision + 1):
                rev = await backend.load_revision(ArtifactRef(aid, r))
                out[(aid, r)] = canonical.canonical_dumps(rev.content)
        return out

    stored = asyncio.run(bodies())
    backend.close_sync()
    conn = _raw(path)
    with conn:
        for (aid, r), body in stored.items():
            conn.execute("UPDATE artifact_revisions SET content_hash = ? "
                         "WHERE artifact_id = ? AND revision = ?",
                         (hashlib.sha256(OLD_ARTIFACT_PREFIX + body).hexdigest(), aid, r))
        conn.execute("DELETE FROM powercontext_meta WHERE key = ?", (HASH_FORMAT_KEY,))
        if analyzer_label is not None:
            conn.execute("UPDATE powercontext_meta SET value = ? WHERE key = 'analyzer_version'",
                         (analyzer_label,))
    conn.close()


@pytest.fixture
def pc(tmp_path: Path):
    db = tmp_path / "memory.db"
    env = dict(os.environ, POWERCONTEXT_HOME=str(tmp_path / "home"))
    for name in ("POWERCONTEXT_DB", "POWERCONTEXT_EMBEDDING", "POWERCONTEXT_ANALYZER"):
        env.pop(name, None)

    def run(*args: str, expect: int | None = 0) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run([*cli_argv(), "--db", str(db), *args], capture_output=True,
                              text=True, env=env, timeout=120)
        if expect is not None:
            assert proc.returncode == expect, (args, proc.returncode, proc.stdout, proc.stderr)
        return proc

    run.db = db  # type: ignore[attr-defined]
    return run


def _seed(pc) -> None:
    pc("memory", "remember", "--key", "repo:demo", "--text", "walking the dog every morning")
    pc("memory", "remember", "--key", "repo:demo", "--text", "the cache lives in redis")


def _upgrade_command(message: str) -> str:
    """The one command a message names (between backticks)."""
    commands = [part for i, part in enumerate(message.split("`")) if i % 2]
    assert len(commands) == 1, message
    assert commands[0].startswith("powercontext memory rebuild"), message
    return commands[0]


def test_every_command_names_one_step_and_info_answers(pc) -> None:
    _seed(pc)
    make_earlier_release(pc.db)

    info = json.loads(pc("--json", "info").stdout)  # exit 0: info always answers
    command = info["upgrade"]["command"]
    assert command == f"powercontext memory rebuild --rehash --analyzer {DEFAULT_VERSION}"
    assert _upgrade_command(info["upgrade"]["message"]) == command
    human = pc("info").stdout
    assert f"upgrade with:     {command}" in human

    # every other command, the former advice included, names that same command
    for args in (("memory", "search", "-m", "key:repo:demo", "walk"),
                 ("memory", "list"),
                 ("memory", "remember", "--key", "repo:demo", "--text", "a third fact"),
                 ("memory", "rebuild", "--analyzer", DEFAULT_VERSION),
                 ("memory", "rebuild")):
        refused = pc("--json", *args, expect=7)
        err = json.loads(refused.stdout)
        assert err["error"] == "UpgradeRequiredError", (args, err)
        assert _upgrade_command(err["message"]) == command, (args, err)

    done = pc("--json", *command.split()[1:])
    assert json.loads(done.stdout)["rehash"]["rewritten"] == 2
    hits = json.loads(pc("--json", "memory", "search", "-m", "key:repo:demo", "walk").stdout)
    assert [h["text"] for h in hits["hits"]] == ["walking the dog every morning"]
    after = json.loads(pc("--json", "info").stdout)
    assert after["upgrade"] is None
    assert (after["analyzer_version"], after["active_entries"]) == (DEFAULT_VERSION, 2)


def test_an_earlier_release_with_a_known_analyzer_needs_only_the_rehash(pc) -> None:
    _seed(pc)
    make_earlier_release(pc.db, analyzer_label=None)
    info = json.loads(pc("--json", "info").stdout)
    assert info["upgrade"]["command"] == "powercontext memory rebuild --rehash"
    err = json.loads(pc("--json", "memory", "list", expect=7).stdout)
    assert _upgrade_command(err["message"]) == "powercontext memory rebuild --rehash"
    pc("memory", "rebuild", "--rehash")
    assert json.loads(pc("--json", "memory", "list").stdout)["memories"]


def test_the_upgrade_keeps_an_analyzer_the_user_names(pc) -> None:
    _seed(pc)
    make_earlier_release(pc.db)
    err = json.loads(pc("--json", "memory", "rebuild", "--analyzer", "v1", expect=7).stdout)
    command = _upgrade_command(err["message"])
    assert command == "powercontext memory rebuild --rehash --analyzer v1"
    pc(*command.split()[1:])
    assert json.loads(pc("--json", "info").stdout)["analyzer_version"] == "v1"


def test_info_answers_an_analyzer_mismatch_with_its_command(pc) -> None:
    pc("--analyzer", "v1", "memory", "remember", "--key", "repo:demo", "--text", "walking")
    other = "v1-porter"
    info = json.loads(pc("--analyzer", other, "--json", "info").stdout)
    assert info["upgrade"]["error"] == "AnalyzerMismatchError"
    assert info["upgrade"]["command"] == f"powercontext memory rebuild --analyzer {other}"
    assert info["analyzer_version"] == "v1"
