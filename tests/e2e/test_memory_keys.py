"""One key, one Memory, in every process (ARCHITECTURE.md, Decisions: "Keys live in the
database"; issue 11 item 1): real CLI and hook processes racing on a new key, the one
form of ``repo:`` keys, the two spellings of a SQLite database, and the import of the
JSON mapping of earlier releases."""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import subprocess
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest
from click.testing import CliRunner
from support.cli import cli_argv

from powercontext.core.errors import InvalidInputError
from powercontext.core.models import MemoryEntryInput
from powercontext.entrypoints.cli.main import cli
from powercontext.memory_names import memory_key, repo_key
from powercontext.runtime import open_service
from powercontext.runtime_manifest import RuntimeManifest, import_manifest_keys


@pytest.fixture
def env(tmp_path):
    e = dict(os.environ, POWERCONTEXT_HOME=str(tmp_path / "home"))
    for name in ("POWERCONTEXT_DB", "POWERCONTEXT_EMBEDDING", "POWERCONTEXT_EXTRACTOR_MODEL"):
        e.pop(name, None)
    return e


def _state(db: str) -> tuple[dict[str, str], list, dict[str, list[str]]]:
    """(keys, heads, active entry texts by Memory id) of the database ``db``."""

    async def body():
        svc = open_service(db)
        try:
            keys = await svc.memory_keys()
            heads = (await svc.backend.inventory())["heads"]
            texts = {h.artifact_id: sorted(v.text for v in (await svc.entries(h)).values())
                     for h in heads}
            return keys, list(heads), texts
        finally:
            await svc.close()

    return asyncio.run(body())


def _race(env, db: str, argvs: list[list[str]], stdins: list[str | None] | None = None):
    procs = [subprocess.Popen([*cli_argv(), "--db", db, "--json", *argv], env=env,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for argv in argvs]
    outs = []
    for p, stdin in zip(procs, stdins or [None] * len(procs), strict=True):
        out, err = p.communicate(stdin, timeout=300)
        outs.append((p.returncode, out, err))
    return outs


def _eight_writers(env, db: str) -> None:
    key = "repo:/w/demo"
    texts = [f"Fact number {i} about the demo repository" for i in range(8)]
    outs = _race(env, db, [["memory", "remember", "--key", key, "--text", t] for t in texts])
    keys, heads, by_memory = _state(db)
    assert len(heads) == 1, (heads, outs)  # exactly one Memory
    assert keys == {memory_key(key): heads[0].artifact_id}
    landed = [t for t, (code, _, _) in zip(texts, outs, strict=True) if code == 0]
    assert landed, outs
    # every write that exited 0 is reachable through the key
    assert set(landed) <= set(by_memory[keys[memory_key(key)]]), outs
    for code, out, err in outs:
        assert code == 0, (out, err)


@pytest.mark.slow
@pytest.mark.subprocess
def test_eight_cli_processes_on_a_new_sqlite_key_make_one_memory_and_lose_no_write(
        env, tmp_path):
    _eight_writers(env, str(tmp_path / "new.db"))


@pytest.mark.slow
@pytest.mark.oceanbase
def test_eight_cli_processes_on_a_new_seekdb_key_make_one_memory_and_lose_no_write(
        env, seekdb_url):
    import MySQLdb

    p = urlsplit(seekdb_url)
    name = f"pc_keys_{secrets.token_hex(4)}"
    db = urlunsplit((p.scheme, p.netloc, "/" + name, "", ""))
    # the database (and its schema) made by one opener, so the race is the keys' own
    svc = open_service(db)
    asyncio.run(svc.memory_keys())
    asyncio.run(svc.close())
    try:
        _eight_writers(env, db)
    finally:
        conn = MySQLdb.connect(host=p.hostname, port=p.port, user=p.username or "root",
                               passwd=p.password or "")
        try:
            conn.cursor().execute(f"DROP DATABASE IF EXISTS `{name}`")
        finally:
            conn.close()


@pytest.mark.slow
@pytest.mark.subprocess
def test_six_concurrent_stop_hooks_in_a_fresh_repository_make_one_memory(env, tmp_path):
    root = tmp_path / "project"
    (root / ".git").mkdir(parents=True)
    (root / "Makefile").write_text("test:\n\tpytest -q\n")
    db = str(tmp_path / "memory.db")
    answers = [f"Fixed issue {i}: the parser now accepts empty input." for i in range(6)]
    payloads = [json.dumps({"session_id": f"s{i}", "transcript_path": str(tmp_path / "none"),
                            "cwd": str(root), "hook_event_name": "Stop",
                            "stop_hook_active": False, "last_assistant_message": a})
                for i, a in enumerate(answers)]
    # the race is over creating the Memory: the hooks may create one (--create-memory)
    outs = _race(env, db, [["hook", "claude-code", "--create-memory"]] * 6, payloads)
    for code, out, err in outs:
        assert code == 0, (out, err)
    keys, heads, by_memory = _state(db)
    assert len(heads) == 1, (heads, outs)
    assert keys == {repo_key(root): heads[0].artifact_id}
    reports = [json.loads(out) for _, out, _ in outs]
    assert all(r["extracted"] for r in reports), reports
    # every outcome reached the one Memory
    texts = " ".join(by_memory[heads[0].artifact_id])
    assert all(a in texts for a in answers), texts


# --------------------------------------------------------------------------- one form


@pytest.fixture
def checkout(tmp_path) -> tuple[Path, Path]:
    """(real Git top level, a symlink to it)."""
    real = tmp_path / "real" / "project"
    (real / ".git").mkdir(parents=True)
    (real / "src" / "pkg").mkdir(parents=True)
    link = tmp_path / "link"
    link.symlink_to(real)
    return real.resolve(), link


def test_a_symlinked_checkout_and_a_subdirectory_give_the_top_levels_key(checkout):
    real, link = checkout
    expected = f"repo:{real}"
    assert repo_key(real) == expected
    assert repo_key(link / "src" / "pkg") == expected
    assert memory_key(f"repo:{link}") == expected
    assert memory_key(f"repo:{real}/src/pkg") == expected
    assert memory_key(f"repo:{link}/src/") == expected
    from powercontext.entrypoints.cli import hook

    assert hook.repo_key(link / "src") == expected


def _cli(tmp_path: Path, db: str, *args: str, cwd: Path | None = None) -> dict:
    env = {"POWERCONTEXT_HOME": str(tmp_path / "home"), "POWERCONTEXT_DB": None,
           "POWERCONTEXT_EMBEDDING": None}
    old = os.getcwd()
    try:
        if cwd is not None:
            os.chdir(cwd)
        result = CliRunner(env=env).invoke(cli, ["--db", db, "--json", *args],
                                           catch_exceptions=False)
    finally:
        os.chdir(old)
    assert result.exit_code == 0, (args, result.output)
    return json.loads(result.output)


def test_key_names_from_a_symlink_or_subdirectory_write_the_memory_the_hook_reads(
        tmp_path, checkout):
    real, link = checkout
    db = str(tmp_path / "m.db")
    first = _cli(tmp_path, db, "memory", "remember", "--key", f"repo:{link}/src",
                 "--text", "Run make test before review")
    second = _cli(tmp_path, db, "memory", "remember", "--key", f"repo:{real}",
                  "--text", "Use uv for the virtualenv")
    assert second["memory_ref"] == {"artifact_id": first["memory_ref"]["artifact_id"],
                                    "revision": 2}
    shown = _cli(tmp_path, db, "memory", "show", f"key:repo:{link}/src/pkg")
    assert shown["memory_ref"] == second["memory_ref"]
    listed = _cli(tmp_path, db, "memory", "list")
    assert [m["keys"] for m in listed["memories"]] == [[f"repo:{real}"]]


def test_a_path_and_a_sqlite_url_name_one_database_with_one_set_of_keys(tmp_path):
    db = tmp_path / "m.db"
    made = _cli(tmp_path, str(db), "memory", "remember", "--key", "notes",
                "--text", "The staging database is reset every night")
    again = _cli(tmp_path, f"sqlite:///{db}", "memory", "remember", "--key", "notes",
                 "--text", "Deploys go out on Tuesdays")
    assert again["memory_ref"] == {"artifact_id": made["memory_ref"]["artifact_id"],
                                   "revision": 2}
    # the runtime manifest (the remembered embedding model ...) is one file for both
    link = tmp_path / "alias.db"
    link.symlink_to(db)
    paths = {RuntimeManifest.for_db(u).path for u in
             (str(db), f"sqlite:///{db}", str(link), f"sqlite:///{link}")}
    assert paths == {db.with_name("m.db.runtime.json")}


@pytest.mark.subprocess
def test_the_readme_commands_after_repo_bootstrap_write_the_same_memory(tmp_path):
    from powercontext.entrypoints.cli.repo import repo

    cli.add_command(repo)
    root = tmp_path / "proj"
    (root / ".git").mkdir(parents=True)
    (root / "sub").mkdir()
    (root / "Makefile").write_text("test:\n\tpytest -q\ncheck:\n\truff check .\n")
    (root / "AGENTS.md").write_text("# Agents\n\n- Always run `make test` before a commit.\n")
    link = tmp_path / "checkout"
    link.symlink_to(root)
    db = str(tmp_path / "m.db")
    boot = _cli(tmp_path, db, "repo", "bootstrap", ".", cwd=link / "sub")
    created = boot["memory_ref"]
    # docs/cli.md: powercontext memory remember --key repo:$PWD --kind preference ...
    after = _cli(tmp_path, db, "memory", "remember", "--key", f"repo:{link}", "--kind",
                 "preference", "--text", "Run make check before review", "--source",
                 str(root / "Makefile"), cwd=link)
    assert after["memory_ref"] == {"artifact_id": created["artifact_id"],
                                   "revision": created["revision"] + 1}
    keys, heads, _ = _state(db)
    assert keys == {f"repo:{root.resolve()}": created["artifact_id"]} and len(heads) == 1


# --------------------------------------------------------------------------- JSON import


def _memory(db: str, text: str) -> str:
    async def body():
        svc = open_service(db)
        try:
            ref = await svc.remember(None, mode="append", entries=(MemoryEntryInput("fact",
                                                                                    text),))
            return ref.artifact_id
        finally:
            await svc.close()

    return asyncio.run(body())


def test_the_json_mapping_of_an_earlier_release_is_imported_once(tmp_path, checkout):
    real, link = checkout
    db = str(tmp_path / "m.db")
    a, b = _memory(db, "alpha"), _memory(db, "beta")
    manifest = RuntimeManifest.for_db(db)
    manifest.set(f"repo:{link}/src", a)        # spelled through a symlink and a sub-dir
    manifest.set("notes", b)
    manifest.set("ghost", "mem_art_not_in_this_database")
    data = json.loads(manifest.path.read_text())
    data["memories"]["bad\nkey"] = a           # a key no release should have written
    manifest.path.write_text(json.dumps(data))
    manifest.set_state("embedding", {"name": "deterministic", "options": {}})

    async def body():
        svc = open_service(db, embedding="none")
        try:
            keys = await svc.memory_keys()
            again = await import_manifest_keys(db, svc)  # idempotent
            return keys, again
        finally:
            await svc.close()

    keys, again = asyncio.run(body())
    assert keys == {f"repo:{real}": a, "notes": b}
    assert again == {}
    state = RuntimeManifest.for_db(db)
    assert state.get_state("keys_imported") and state.get("notes") == b  # left in place
    assert state.get_state("embedding") == {"name": "deterministic", "options": {}}
    # a key stored in the database keeps its Memory when the file says otherwise
    state.set("notes", a)
    state.set("later", a)
    assert _state(db)[0] == {f"repo:{real}": a, "notes": b, "later": a}


def test_bad_keys_are_typed_errors_naming_the_field(tmp_path):
    db = str(tmp_path / "m.db")
    for bad in ("", "tab\there", "x" * 1025, " padded", "repo:"):
        with pytest.raises(InvalidInputError) as err:
            _cli_fail(tmp_path, db, bad)
        assert err.value.field in ("key", "memory")
    assert not Path(db).exists() or _state(db)[1] == []


def _cli_fail(tmp_path: Path, db: str, key: str) -> None:
    async def body():
        svc = open_service(db)
        try:
            await svc.remember(None, mode="append", key=memory_key(key),
                               entries=(MemoryEntryInput("fact", "never stored"),))
        finally:
            await svc.close()

    asyncio.run(body())


def test_a_database_of_an_earlier_release_gets_the_keys_table_at_open(tmp_path):
    import apsw

    db = str(tmp_path / "old.db")
    made = _memory(db, "from before keys lived in the database")
    conn = apsw.Connection(db)
    conn.execute("DROP TABLE memory_keys")  # what an earlier release created
    conn.close()
    RuntimeManifest.for_db(db).set("repo:/w/old", made)
    assert _state(db)[0] == {"repo:/w/old": made}


# --------------------------------------------------------------------------- one repository


def _git(cwd: Path, *args: str) -> str:
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.org",
               GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.org",
               GIT_CONFIG_NOSYSTEM="1", HOME=str(cwd.parent))
    return subprocess.run(["git", "-C", str(cwd), "-c", "protocol.file.allow=always", *args],
                          check=True, env=env, capture_output=True, text=True).stdout.strip()


def _repo(path: Path, files: dict[str, str]) -> Path:
    path.mkdir(parents=True)
    for name, text in files.items():
        (path / name).write_text(text)
    _git(path, "init", "-q", "-b", "main")
    _git(path, "add", "-A")
    _git(path, "commit", "-qm", "init")
    return path.resolve()


@pytest.mark.subprocess
def test_a_linked_git_worktree_shares_the_repositorys_memory(tmp_path):
    """`git worktree add` makes another top level; it is the same repository (Git's
    common directory), so bootstrap, hooks and --key repo:$PWD name one Memory."""
    from powercontext.entrypoints.cli import hook
    from powercontext.entrypoints.cli.repo import repo
    from powercontext.memory_names import identity_root, repo_root

    cli.add_command(repo)
    main = _repo(tmp_path / "proj", {
        "Makefile": "test:\n\tpytest -q\n",
        "AGENTS.md": "# Agents\n\n- Always run `make test` before a commit.\n"})
    wt = tmp_path / "proj-feature"
    _git(main, "worktree", "add", "-q", "-b", "feature", str(wt))
    (wt / "src").mkdir()
    assert repo_root(wt / "src") == wt.resolve()  # the checkout a bootstrap reads
    assert identity_root(wt / "src") == main
    assert repo_key(wt / "src") == repo_key(main) == f"repo:{main}"
    assert memory_key(f"repo:{wt}") == f"repo:{main}"
    assert hook.repo_key(wt) == f"repo:{main}"
    db = str(tmp_path / "m.db")
    boot = _cli(tmp_path, db, "repo", "bootstrap", ".", cwd=wt / "src")
    assert boot["key"] == f"repo:{main}" and boot["created"]
    again = _cli(tmp_path, db, "repo", "bootstrap", str(main))  # the main checkout: same files
    assert again["memory_ref"] == boot["memory_ref"] and again["changed"] is False
    wrote = _cli(tmp_path, db, "memory", "remember", "--key", f"repo:{wt}", "--text",
                 "Feature branches are rebased, never merged", cwd=wt)
    assert wrote["memory_ref"]["artifact_id"] == boot["memory_ref"]["artifact_id"]
    keys, heads, _ = _state(db)
    assert keys == {f"repo:{main}": boot["memory_ref"]["artifact_id"]} and len(heads) == 1


@pytest.mark.subprocess
def test_a_submodule_is_its_own_repository(tmp_path):
    """A path inside a submodule names the submodule (its own contract files), never the
    superproject; a linked worktree of the submodule names the submodule's checkout."""
    from powercontext.memory_names import identity_root

    lib = _repo(tmp_path / "lib", {"AGENTS.md": "- Run `make lint` first.\n"})
    app = _repo(tmp_path / "app", {"README.md": "# app\n"})
    _git(app, "submodule", "add", "-q", str(lib), "vendor/lib")
    _git(app, "commit", "-qm", "vendor lib")
    sub = app / "vendor" / "lib"
    (sub / "src").mkdir()
    assert (sub / ".git").is_file()  # gitdir: ../../.git/modules/vendor/lib
    assert identity_root(sub / "src") == sub
    assert repo_key(sub / "src") == f"repo:{sub}" != repo_key(app) == f"repo:{app}"
    wt = tmp_path / "lib-wt"
    _git(sub, "worktree", "add", "-q", "-b", "topic", str(wt))
    assert identity_root(wt) == sub and repo_key(wt) == f"repo:{sub}"


def _remember_under(db: str, key: str, text: str) -> str:
    """What an earlier release did with `--key key:repo:...`: a Memory under that key."""

    async def body():
        svc = open_service(db)
        try:
            ref = await svc.remember(None, mode="append", key=key,
                                     entries=(MemoryEntryInput("fact", text),))
            return ref.artifact_id
        finally:
            await svc.close()

    return asyncio.run(body())


def test_a_printed_memory_name_passed_as_a_key_is_refused_with_the_spelling(tmp_path):
    db = str(tmp_path / "m.db")
    made = _cli(tmp_path, db, "memory", "remember", "--key", f"repo:{tmp_path}", "--text",
                "Run make test before review")
    name = _cli(tmp_path, db, "memory", "list")["memories"][0]
    printed = f"key:repo:{tmp_path.resolve()}"
    env = {"POWERCONTEXT_HOME": str(tmp_path / "home"), "POWERCONTEXT_DB": None}
    result = CliRunner(env=env).invoke(cli, ["--db", db, "memory", "remember", "--key",
                                             printed, "--text", "Use uv"])
    assert result.exit_code == 2, result.output
    out = result.output + (result.stderr if result.stderr_bytes else "")
    assert f"the key it names is 'repo:{tmp_path.resolve()}'" in out
    assert f"--key repo:{tmp_path.resolve()}" in out and f"--memory {printed}" in out
    keys, heads, texts = _state(db)
    assert keys == {f"repo:{tmp_path.resolve()}": made["memory_ref"]["artifact_id"]}
    assert len(heads) == 1 and texts[heads[0].artifact_id] == ["Run make test before review"]
    assert name["keys"] == [f"repo:{tmp_path.resolve()}"]
    # the printed name is the Memory name: --memory takes it
    again = _cli(tmp_path, db, "memory", "remember", "--memory", printed, "--text", "Use uv")
    assert again["memory_ref"]["revision"] == 2
    with pytest.raises(InvalidInputError, match="is a Memory name"):
        memory_key(printed)


def test_a_memory_created_by_mistake_is_retired_keeping_its_history(tmp_path):
    db = str(tmp_path / "m.db")
    real = _cli(tmp_path, db, "memory", "remember", "--key", "repo:/w/app", "--text",
                "Run make test before review")["memory_ref"]["artifact_id"]
    wrong = _remember_under(db, "key:repo:/w/app", "Use uv")  # an earlier release did this
    listed = {m["artifact_id"]: m for m in _cli(tmp_path, db, "memory", "list")["memories"]}
    assert listed[wrong]["keys"] == ["key:repo:/w/app"]
    out = _cli(tmp_path, db, "memory", "retire", "key:key:repo:/w/app", "--reason",
               "made by pasting a Memory name as a key")
    assert out["artifact_id"] == wrong and out["keys_removed"] == ["key:repo:/w/app"]
    assert out["before"] == {"artifact_id": wrong, "revision": 1}
    assert out["memory_ref"] == {"artifact_id": wrong, "revision": 2}
    assert len(out["forgotten"]) == 1
    keys, heads, _ = _state(db)
    assert keys == {"repo:/w/app": real} and len(heads) == 2  # nothing deleted
    old = _cli(tmp_path, db, "memory", "show", f"{wrong}@1")  # history is readable
    assert [e["text"] for e in old["entries"]] == ["Use uv"]
    now = _cli(tmp_path, db, "memory", "show", wrong)
    assert [e["state"] for e in now["entries"]] in ([], ["inactive"])
    again = _cli(tmp_path, db, "memory", "retire", wrong)  # idempotent
    assert again["forgotten"] == [] and again["keys_removed"] == []
    assert again["memory_ref"] == out["memory_ref"]
    # the real Memory is untouched and still named by its key
    shown = _cli(tmp_path, db, "memory", "show", "key:repo:/w/app")
    assert shown["memory_ref"] == {"artifact_id": real, "revision": 1}
