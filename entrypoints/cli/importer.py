"""``powercontext import claude-code`` and ``powercontext import codex``: the history an
agent already keeps for a repository, added to the repository's Scope
``repo:<Git top level>`` as ``conversation`` Sources, one per turn (Topic Memory RFC,
"Source, Window, Cursor, and Pending"), so that ``topic process`` or ``serve`` grows
Topics from a user's real work on day one.

Each turn (the user's prompt and the agent's final reply, read by
:mod:`~powercontext.entrypoints.cli.transcripts`) becomes the Source the Stop hook would
have stored for it (:func:`~powercontext.entrypoints.cli.hook_turn.conversation_source`:
bounded, secrets redacted before anything is stored, its id derived from the Scope and
the session and turn), so an import adds each turn once: a turn the hook or an earlier
import recorded is not added again, and an interrupted import, run again, adds what is
missing. Turns are written in batches of :data:`BATCH` (each batch one transaction,
with its Pending raise). A file read whole is remembered (size and modification
time, in a ledger under the data directory, never beside the database), so the next
import skips it while it is unchanged. Progress goes to stderr (a bar on a terminal,
else one line per file); a malformed line is reported there (file and line) and
skipped, never fatal.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import click

from powercontext.entrypoints.cli.context import Ctx, LazyGroup, pass_ctx
from powercontext.entrypoints.cli.transcripts import MAX_LINE_BYTES, Turn

__all__ = ["BATCH", "import_group"]

#: Turns written per transaction.
BATCH = 50
#: Skipped lines printed on stderr, at most (the rest are counted).
MAX_REPORTED = 20


class _Ledger:
    """Which transcript files an earlier import read whole: per Scope, the Scope's
    Source head then and, per agent, file path -> [size, mtime_ns]. Trusted only while
    the Scope's head has not gone below what it recorded (a new database starts over)."""

    def __init__(self, db_url: str, scope: str, agent: str, explicit: bool) -> None:
        from powercontext.core import canonical
        from powercontext.database_path import sqlite_path
        from powercontext.paths import data_dir

        sqlite = sqlite_path(db_url)
        name = os.path.realpath(sqlite) if sqlite is not None else db_url
        self.path = data_dir() / "imports" / (
            canonical.sha256_hex(name.encode("utf-8", "replace"))[:24] + ".json")
        # a file named with --from reads turns of no known directory too: its own entry
        self.scope, self.agent = scope, agent + (" --from" if explicit else "")
        try:
            self.data = json.loads(self.path.read_text("utf-8"))
        except (OSError, ValueError):
            self.data = {}
        if not isinstance(self.data, dict):
            self.data = {}
        self.files: dict[str, list[int]] = {}

    def start(self, head: int) -> None:
        entry = self.data.get(self.scope)
        if isinstance(entry, dict) and isinstance(entry.get("head"), int) \
                and entry["head"] <= head and isinstance(entry.get(self.agent), dict):
            self.files = entry[self.agent]
        self.head = head

    def unchanged(self, path: Path, stat: os.stat_result) -> bool:
        return self.files.get(str(path)) == [stat.st_size, stat.st_mtime_ns]

    def done(self, path: Path, stat: os.stat_result, head: int) -> None:
        self.files[str(path)] = [stat.st_size, stat.st_mtime_ns]
        entry = self.data.setdefault(self.scope, {})
        entry[self.agent] = self.files
        entry["head"] = head
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(self.data, sort_keys=True), "utf-8")
        os.replace(tmp, self.path)


def _files(agent: str, root: Path, paths: tuple[str, ...]) -> list[Path]:
    from powercontext.entrypoints.cli.transcripts import claude_project_dirs, codex_session_files

    if paths:
        out: list[Path] = []
        for p in map(Path, paths):
            out += sorted(q for q in p.rglob("*.jsonl") if q.is_file()) if p.is_dir() else [p]
        return out
    if agent == "codex":
        return codex_session_files()
    return [f for d in claude_project_dirs(root) for f in sorted(d.glob("*.jsonl"))
            if f.is_file() and not f.name.startswith("agent-")]


class _Inside:
    """Whether a turn's working directory is in the repository (cached per directory)."""

    def __init__(self, root: Path, key: str, explicit: bool) -> None:
        self.root, self.key, self.explicit = root, key, explicit
        self.seen: dict[str, bool] = {}

    def __call__(self, agent: str, cwd: str) -> bool:
        if not cwd:  # the file does not say: trust where it was found
            return self.explicit or agent == "claude-code"
        if cwd not in self.seen:
            from powercontext.memory_names import repo_key

            try:
                self.seen[cwd] = repo_key(cwd) == self.key
            except (OSError, ValueError):
                self.seen[cwd] = False
        return self.seen[cwd]


class _Run:
    """One import: counts, the skipped lines and the progress display."""

    def __init__(self, c: Ctx, agent: str, key: str, root: Path, files: list[Path]) -> None:
        from rich.console import Console

        self.c, self.agent, self.key, self.root, self.files = c, agent, key, root, files
        self.console = Console(stderr=True)
        self.counts = {"files": len(files), "files_unchanged": 0, "turns": 0, "added": 0,
                       "present": 0, "outside": 0, "skipped_lines": 0}
        self.skipped: list[dict[str, Any]] = []
        self.notes: list[str] = []
        self.stopped = False

    def skip(self, path: Path, line: int, problem: str) -> None:
        self.counts["skipped_lines"] += 1
        if len(self.skipped) < 100:
            self.skipped.append({"file": str(path), "line": line, "problem": problem})
        if self.counts["skipped_lines"] <= MAX_REPORTED:
            click.echo(f"powercontext import: {path}:{line}: skipped: {problem}", err=True)

    def sources(self, svc: Any, turns: list[Turn]) -> list[Any]:
        from powercontext.entrypoints.cli.hook_turn import conversation_source

        ids = "thread_id" if self.agent == "codex" else "session_id"
        out = []
        for t in turns:
            meta = {"agent": self.agent, "repo": str(self.root), ids: t.session,
                    "imported_from": "transcript"}
            if t.turn:
                meta["turn_id"] = t.turn
            if t.timestamp:
                meta["timestamp"] = t.timestamp
            src = conversation_source(scope_id=self.key, agent=self.agent, session=t.session,
                                      turn=t.turn, prompt=t.prompt, reply=t.reply,
                                      metadata=meta, scanner=svc.secret_scanner)
            if src is not None:
                out.append(src)
        return out

    async def write(self, svc: Any, sources: list[Any], head: int,
                    max_turns: int | None) -> tuple[int, bool]:
        """Write ``sources`` in order, in batches, counting what was new; stop once
        ``max_turns`` new turns were written this run. ``(the Scope's head, whether
        every Source was written)``."""
        from powercontext.core.errors import InvalidInputError
        from powercontext.entrypoints.cli.hook_turn import record_turn

        i = 0
        while i < len(sources):
            room = BATCH if max_turns is None else max_turns - self.counts["added"]
            if room <= 0:
                self.stopped = True
                return head, False
            batch = sources[i:i + min(BATCH, room)]
            i += len(batch)
            try:
                positions = await svc.backend.put_scoped_sources(self.key, batch)
            except InvalidInputError as exc:
                if exc.field != "source_id":
                    raise
                positions = ()
                for src in batch:  # one of them is a turn recorded with other text
                    before = await svc.backend.source_head(self.key)
                    notes = await record_turn(svc, self.key, src)
                    after = await svc.backend.source_head(self.key)
                    self.counts["added" if not notes and after > before else "present"] += 1
                    head = max(head, after)
            new = sum(1 for p in positions if p > head)
            self.counts["added"] += new
            self.counts["present"] += len(positions) - new
            head = max([head, *positions])
        return head, True


def _run_import(c: Ctx, agent: str, project: str | None, paths: tuple[str, ...],
                max_turns: int | None, max_line_bytes: int) -> None:
    from powercontext.entrypoints.cli.transcripts import claude_turns, codex_turns
    from powercontext.memory_names import repo_key, repo_root

    root = repo_root(project or os.getcwd())
    key = repo_key(root)
    files = _files(agent, root, paths)
    run = _Run(c, agent, key, root, files)
    inside = _Inside(root, key, bool(paths))
    parse = codex_turns if agent == "codex" else claude_turns

    async def body(svc: Any) -> None:
        from powercontext.core.errors import CapabilityNotSupportedError

        if not callable(getattr(svc.backend, "put_scoped_sources", None)):
            raise CapabilityNotSupportedError(
                f"{type(svc.backend).__name__} has no Scope journal to import into")
        head = await svc.backend.source_head(key)
        ledger = _Ledger(c.db_url, key, agent, bool(paths))
        ledger.start(head)
        progress = _progress(run)
        try:
            for path in files:
                try:
                    stat = path.stat()
                except OSError as exc:
                    run.skip(path, 0, f"cannot read it: {exc.strerror or exc}")
                    continue
                if ledger.unchanged(path, stat):
                    run.counts["files_unchanged"] += 1
                    progress(path, None)
                    continue
                try:
                    turns, problems = parse(path, max_line_bytes)
                except OSError as exc:
                    run.skip(path, 0, f"cannot read it: {exc.strerror or exc}")
                    continue
                for line, problem in problems:
                    run.skip(path, line, problem)
                mine = [t for t in turns if inside(agent, t.cwd)]
                run.counts["outside"] += len(turns) - len(mine)
                run.counts["turns"] += len(mine)
                sources = run.sources(svc, mine)
                added = run.counts["added"]
                head, whole = await run.write(svc, sources, head, max_turns)
                progress(path, run.counts["added"] - added)
                if not whole:
                    break
                ledger.done(path, stat, head)
        finally:
            progress(None, None)
        _report(run, c)

    c.run(body)


def _progress(run: _Run) -> Any:
    """A callable ``(path, added or None)`` that shows one file done; ``(None, None)``
    ends the display. A bar on a terminal, one line per file otherwise."""
    if run.console.is_terminal and not run.c.as_json:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

        bar = Progress(TextColumn("importing {task.description}"), BarColumn(),
                       MofNCompleteColumn(), TextColumn("{task.fields[added]} new turns"),
                       console=run.console, transient=True)
        task = bar.add_task(run.agent, total=len(run.files), added=0)
        bar.start()

        def show(path: Path | None, added: int | None) -> None:
            if path is None:
                bar.stop()
                return
            bar.update(task, advance=1, added=run.counts["added"])

        return show

    def line(path: Path | None, added: int | None) -> None:
        if path is not None and added is not None:
            click.echo(f"powercontext import: {path}: {added} new turns "
                       f"({run.counts['added']} so far)", err=True)

    return line


def _report(run: _Run, c: Ctx) -> None:
    counts = run.counts
    nxt = f"powercontext topic process --scope {run.key} --once"
    data = {"agent": run.agent, "scope_id": run.key, **counts, "stopped": run.stopped,
            "skipped": run.skipped, "next": nxt}

    def human() -> None:
        read = counts["files"] - counts["files_unchanged"]
        click.echo(f"Imported {counts['added']} new turns of {run.agent} into {run.key}: "
                   f"{counts['turns']} turns in {read} file{'s' * (read != 1)} read, "
                   f"{counts['present']} of them already there"
                   + (f"; {counts['files_unchanged']} file"
                      f"{'s' * (counts['files_unchanged'] != 1)} unchanged since the last "
                      "import" if counts["files_unchanged"] else "") + ".")
        if not counts["files"]:
            click.echo(f"No {run.agent} session files were found for {run.root} "
                       "(--from names them).")
        if counts["outside"]:
            click.echo(f"{counts['outside']} turns of other directories were left out.")
        if counts["skipped_lines"]:
            click.echo(f"{counts['skipped_lines']} lines were skipped (see above).")
        if run.stopped:
            click.echo("Stopped at --max-turns; run the same command again to go on.")
        if counts["added"]:
            click.echo(f"Topics grow from them with `{nxt}` (or `powercontext serve`).")

    c.emit(data, human)


_PROJECT = click.option("--project", type=click.Path(exists=True, file_okay=False),
                        help="The repository (default: the one around the current "
                             "directory); its Scope is repo:<Git top level>.")
_FROM = click.option("--from", "paths", multiple=True, type=click.Path(exists=True),
                     help="Read these transcript files (or the .jsonl files under these "
                          "directories) instead of the agent's own location.")
_MAX_TURNS = click.option("--max-turns", type=click.IntRange(min=1), default=None,
                          help="Stop after this many new turns (run again to go on).")
_MAX_LINE = click.option("--max-line-bytes", type=click.IntRange(min=1024),
                         default=MAX_LINE_BYTES, show_default=True,
                         help="A longer line is reported and skipped.")


@click.group("import", cls=LazyGroup)
def import_group() -> None:
    """Import the history an agent already keeps for this repository (each turn a
    conversation Source in its Scope, once), so Topics grow from it."""


@import_group.command("claude-code")
@_PROJECT
@_FROM
@_MAX_TURNS
@_MAX_LINE
@pass_ctx
def import_claude_code(c: Ctx, project: str | None, paths: tuple[str, ...],
                       max_turns: int | None, max_line_bytes: int) -> None:
    """Claude Code's sessions of this repository ($CLAUDE_CONFIG_DIR or ~/.claude,
    projects/<the repository's path, - for every other character>*/*.jsonl).

    \b
    powercontext import claude-code
    powercontext topic process --scope repo:$(git rev-parse --show-toplevel) --once
    """
    _run_import(c, "claude-code", project, paths, max_turns, max_line_bytes)


@import_group.command("codex")
@_PROJECT
@_FROM
@_MAX_TURNS
@_MAX_LINE
@pass_ctx
def import_codex(c: Ctx, project: str | None, paths: tuple[str, ...],
                 max_turns: int | None, max_line_bytes: int) -> None:
    """Codex's sessions of this repository ($CODEX_HOME or ~/.codex, sessions/ and
    archived_sessions/, those whose working directory is in the repository).

    \b
    powercontext import codex
    """
    _run_import(c, "codex", project, paths, max_turns, max_line_bytes)
