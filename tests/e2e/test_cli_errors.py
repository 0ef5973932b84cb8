"""A user's mistakes, end to end: every one exits with its code and one clear line (one
JSON object with --json, click usage errors included), never a traceback."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from support.cli import cli_argv

pytestmark = pytest.mark.subprocess


@pytest.fixture
def run(tmp_path):
    env = dict(os.environ, POWERCONTEXT_HOME=str(tmp_path / "home"))
    for name in ("POWERCONTEXT_DB", "POWERCONTEXT_EMBEDDING", "POWERCONTEXT_DEBUG"):
        env.pop(name, None)

    def run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*cli_argv(), *args], capture_output=True, text=True, env=env,
                              input=stdin, timeout=60, cwd=tmp_path)

    return run


@pytest.fixture
def mem(run, tmp_path) -> str:
    """A SQLite Memory with one entry, mapped to key demo."""
    proc = run("--db", str(tmp_path / "m.db"), "--json", "memory", "remember", "--key", "demo",
               "--text", "Run make test before review")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)["memory_ref"]["artifact_id"]


def _not_a_db(tmp_path: Path) -> str:
    p = tmp_path / "notes.txt"
    p.write_text("these are my notes, not a database\n")
    return str(p)


def _under_a_file(tmp_path: Path) -> str:
    p = tmp_path / "plain-file"
    p.write_text("x")
    return str(p / "memory.db")  # its "directory" is a file: nothing can be created there


# (case id, argv after the program with {db} for the good database and {mem} its Memory,
#  stdin, exit code, words the one line must hold)
CASES = [
    ("unwritable db path", ["--db", "UNDER_A_FILE", "memory", "show", "{mem}"], None, 2,
     "db: cannot create the directory"),
    ("not a database", ["--db", "NOT_A_DB", "memory", "show", "{mem}"], None, 2,
     "is not a SQLite database"),
    ("directory as db", ["--db", "DIR", "memory", "show", "{mem}"], None, 2,
     "is a directory"),
    ("rebuild on not a database", ["--db", "NOT_A_DB", "memory", "rebuild"], None, 2,
     "is not a SQLite database"),
    ("entries hold a bare string", ["--db", "{db}", "memory", "remember", "--entries", "-"],
     '["just a string"]', 2, "entries[0]: must be an object"),
    ("entries not JSON", ["--db", "{db}", "memory", "remember", "--entries", "-"],
     '{"kind": ', 2, "entries: not JSON"),
    ("entries not a list", ["--db", "{db}", "memory", "remember", "--entries", "-"],
     '{"text": "x"}', 2, "entries: must be a JSON list"),
    ("entry text not a string", ["--db", "{db}", "memory", "remember", "--entries", "-"],
     '[{"text": 5}]', 2, "entries[0].text: must be a string"),
    ("entry field unknown", ["--db", "{db}", "memory", "remember", "--entries", "-"],
     '[{"text": "x", "kidn": "fact"}]', 2, "entries[0].kidn: unknown field"),
    ("entries file missing", ["--db", "{db}", "memory", "remember", "--entries", "nope.json"],
     None, 2, "nope.json"),
    ("source file missing", ["--db", "{db}", "memory", "remember", "--text", "x", "--source",
                             "missing.txt"], None, 2, "missing.txt"),
    ("memory name with a space", ["--db", "{db}", "memory", "show", "bad name"], None, 2,
     "memory: must be"),
    ("empty key", ["--db", "{db}", "memory", "show", "key:"], None, 2, "key: needs a name"),
    ("bad revision", ["--db", "{db}", "memory", "show", "{mem}@x"], None, 2,
     "bad Revision"),
    ("revision zero", ["--db", "{db}", "memory", "show", "{mem}@0"], None, 2, "bad Revision"),
    ("revision past the head", ["--db", "{db}", "memory", "show", "key:demo@9"], None, 4,
     "has no Revision 9"),
    ("unknown key", ["--db", "{db}", "memory", "show", "key:nope"], None, 4,
     "no Memory is mapped to key 'nope'"),
    ("empty query", ["--db", "{db}", "memory", "search", "", "-m", "{mem}"], None, 2,
     "query: is empty"),
    ("blank query", ["--db", "{db}", "memory", "search", "   ", "-m", "{mem}"], None, 2,
     "query: is empty"),
    ("revise an unknown entry", ["--db", "{db}", "memory", "remember", "-m", "{mem}",
                                 "--revise", "mem_ent_nope", "--text", "x"], None, 4,
     "'mem_ent_nope'"),
    ("revise without a Memory", ["--db", "{db}", "memory", "remember", "--revise",
                                 "mem_ent_x", "--text", "x"], None, 2, "--memory"),
    ("unknown command", ["--db", "{db}", "memory", "recall"], None, 2, "No such command"),
    ("missing argument", ["--db", "{db}", "memory", "show"], None, 2, "Missing argument"),
    ("nothing to remember", ["--db", "{db}", "memory", "remember"], None, 2,
     "give --text or --entries"),
    ("bad choice", ["--db", "{db}", "memory", "search", "x", "-m", "{mem}", "--mode", "magic"],
     None, 2, "magic"),
    ("unknown source", ["--db", "{db}", "source", "show", "src_nope"], None, 4,
     "no stored Source 'src_nope'"),
    ("unreachable OceanBase", ["--db", "oceanbase://root@127.0.0.1:1/pc", "memory", "show",
                               "{mem}"], None, 1, "cannot connect"),
]


def _argv(args: list[str], tmp_path: Path, mem: str) -> list[str]:
    fill = {"{db}": str(tmp_path / "m.db"), "UNDER_A_FILE": _under_a_file(tmp_path),
            "NOT_A_DB": _not_a_db(tmp_path), "DIR": str(tmp_path)}
    return [fill.get(a, a).replace("{mem}", mem) for a in args]


@pytest.mark.parametrize(("args", "stdin", "code", "words"),
                         [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_a_user_mistake_is_one_line_with_its_exit_code(run, tmp_path, mem, args, stdin,
                                                       code, words):
    if "oceanbase://" in " ".join(args):
        pytest.importorskip("MySQLdb")
    argv = _argv(args, tmp_path, mem)
    proc = run(*argv, stdin=stdin)
    assert proc.returncode == code, (proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("powercontext: "), proc.stderr
    assert words in lines[0]
    assert proc.stdout == ""

    as_json = run("--json", *argv, stdin=stdin)  # the same mistake for an agent
    assert as_json.returncode == code
    assert "Traceback" not in as_json.stderr
    err = json.loads(as_json.stdout)
    assert err["exit_code"] == code and words in err["message"] and err["error"]


@pytest.mark.slow
def test_a_mistake_writes_nothing(run, tmp_path, mem):
    db = str(tmp_path / "m.db")
    before = run("--db", db, "--json", "memory", "show", mem).stdout
    for stdin in ('["just a string"]', '[{"text": "ok"}, {"text": 7}]'):
        assert run("--db", db, "memory", "remember", "-m", mem, "--entries", "-",
                   stdin=stdin).returncode == 2
    assert run("--db", db, "--json", "memory", "show", mem).stdout == before
    not_a_db = _not_a_db(tmp_path)
    run("--db", not_a_db, "memory", "remember", "--text", "x")
    assert Path(not_a_db).read_text() == "these are my notes, not a database\n"


def test_json_usage_error_is_a_json_object(run, tmp_path):
    proc = run("--json", "--db", str(tmp_path / "m.db"), "memory", "search", "x")
    assert proc.returncode == 2
    assert json.loads(proc.stdout) == {
        "error": "UsageError", "exit_code": 2,
        "message": "Missing option '--memory' / '-m'. (see 'powercontext memory search --help')"}


def test_help_and_version_still_exit_0(run):
    assert run("--help").returncode == 0
    assert run("memory", "list", "--help").returncode == 0
    assert run("--version").returncode == 0


def test_ctrl_c_is_one_line_and_exit_130(monkeypatch, capsys, tmp_path):
    from powercontext.entrypoints.cli import context, main

    def interrupted(coro):
        coro.close()
        raise KeyboardInterrupt

    monkeypatch.setattr(context.asyncio, "run", interrupted)
    for extra in ([], ["--json"]):
        with pytest.raises(SystemExit) as info:
            main.main([*extra, "--db", str(tmp_path / "m.db"), "memory", "show", "mem_x"])
        assert info.value.code == 130
        out, err = capsys.readouterr()
        if extra:
            assert json.loads(out)["error"] == "Interrupted"
        else:
            assert err == "powercontext: interrupted: interrupted by the user\n"


def test_an_unexpected_error_is_one_line_exit_1(monkeypatch, capsys, tmp_path):
    from powercontext.entrypoints.cli import context, main

    def broken(coro):
        coro.close()
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(context.asyncio, "run", broken)
    with pytest.raises(SystemExit) as info:
        main.main(["--db", str(tmp_path / "m.db"), "memory", "show", "mem_x"])
    assert info.value.code == 1
    _, err = capsys.readouterr()
    assert err.splitlines() == ["powercontext: unexpected error: RuntimeError: disk on fire "
                                "(POWERCONTEXT_DEBUG=1 shows the traceback)"]


def test_any_invalid_input_subclass_is_exit_2():
    from powercontext.core.errors import InvalidInputError
    from powercontext.entrypoints.cli.context import classify

    class SecretLikeError(InvalidInputError):
        pass

    assert classify(SecretLikeError("text", "holds a secret"))[:3] == (
        2, "bad input", "SecretLikeError")
