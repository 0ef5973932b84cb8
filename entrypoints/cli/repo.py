"""``powercontext repo``: repository Memory from its operating contract and from Git
increments (Memory RFC, "Source changes and incremental evidence", "Coding Agent
scenario"; issue 5 item 4).

``repo bootstrap PATH`` persists only the bounded contract Sources
(:data:`powercontext.core.extraction.BOOTSTRAP_FILES` when present: build and tool
configuration, agent files, contributing guides in Markdown or reStructuredText,
READMEs, and the ``scripts/<name>`` entry points they name; a file holding a secret is
skipped naming the line, a link out of the repository is skipped and named, a file
reached twice through a link is read once), runs the candidate pipeline and creates or
updates the repository's Memory, stored with the business key ``repo:<repository>`` in
the same transaction (a sub-directory, a symlinked checkout or a linked ``git
worktree`` names the same key: :func:`powercontext.memory_names.identity_root`); the
runtime manifest keeps ``last_processed_commit`` under that key. The report lists the
sentences of the contract documents that were not kept, with their reasons.

``repo sync PATH`` persists the Git change ``last_processed_commit..HEAD`` as one
Source (plus the contract files at HEAD when the change touches one) and runs the
pipeline against the current head: an entry is revised only when the link is certain
(its evidence is a file the change touched and the topic or rule line matches),
otherwise new content becomes a new entry. Nothing is deactivated by absence.

Both store their Sources in the repository's Scope ``repo:<git top level>`` (the key's
form) first: Topic Memory's Source journal and Pending raise, in one transaction
(TOPIC-MEMORY.md, "Scopes are new"); the Memory write is unchanged.

Both honour the global ``--db`` and ``--json``. Register with ``cli.add_command(repo)``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from powercontext.entrypoints.cli.writes import settled as _settled

__all__ = ["repo"]

_PATH = click.Path(exists=True, file_okay=False, dir_okay=True)
_PROVIDER_HELP = ("Run only this candidate provider (repeat): contract, rules, git, structured, "
                  "task_outcome, model. Default: every configured one.")


@click.group()
def repo() -> None:
    """Repository Memory: bootstrap from the operating contract, sync Git increments."""


async def _mapped_head(svc: Any, key: str) -> Any:
    artifact_id = await svc.memory_key(key)
    return None if artifact_id is None else await svc.head(artifact_id)


def _applied_to(before: Any, after: Any) -> Any:
    """The Revision ``after`` was written on: ``before`` unless a concurrent write landed
    in between (then the one just before ``after``)."""
    if after is None or after == before or after.revision == 1:
        return before
    if before is None or before.artifact_id != after.artifact_id \
            or after.revision != before.revision + 1:
        return type(after)(after.artifact_id, after.revision - 1)
    return before


async def _journal(svc: Any, key: str, sources: Any) -> list[str]:
    """The Sources stored first in the repository's Scope (``repo:<path>``, the key's
    form; Topic Memory's journal and Pending raise), after the same secret check
    ``remember`` makes, so nothing with a secret is stored; ``remember`` then finds them
    stored (idempotent) and its Memory behaviour is unchanged."""
    from powercontext.entrypoints.cli.sources import journal_sources

    svc.check_secrets(sources)
    return await journal_sources(svc, key, sources)


def _pipeline(svc: Any) -> Any:
    from powercontext.adapters.candidates import pipeline_from_registry
    from powercontext.plugins.registry import Registry

    pipeline = pipeline_from_registry(Registry(), source_store=svc.backend)
    svc.candidate_pipeline = pipeline
    return pipeline


async def _report(c: Any, svc: Any, *, root: Path, key: str, before: Any, after: Any,
                  sources: Any, skipped: Any, pipeline: Any, commit: str | None,
                  action: str, scope_notes: list[str] | None = None) -> None:
    from powercontext.core.shapes import to_json

    changed = after is not None and after != before
    rows: list[dict[str, Any]] = []
    if changed:
        (rc,) = await svc.changes(after)
        versions = await svc.entries(after, [ch.entry_id for ch in rc.changes])
        for ch in rc.changes:
            # the MemoryChange shape, plus the entry version it leads to
            v = versions.get(ch.entry_id)
            rows.append(dict(to_json(ch), entry_version_id=ch.to_entry_version_id,
                             kind=v.kind if v else None, text=v.text if v else None,
                             source_ids=[s.source_id for s in v.sources] if v else []))
    result = pipeline.last_result if pipeline is not None else None
    data: dict[str, Any] = {
        "repo": str(root), "key": key, "memory_ref": to_json(after), "changed": changed,
        "created": before is None and after is not None,
        "last_processed_commit": commit,
        "sources": [{"source_id": s.source_id, "kind": s.kind, "uri": s.uri,
                     "path": dict(s.metadata).get("path")} for s in sources],
        "skipped": [{"path": s.path, "reason": s.reason} for s in skipped],
        "changes": rows,
        "refused": to_json(result.refused if result else ()),
        "notes": [*(result.notes if result else ()), *(scope_notes or ())],
        "dropped": [{"path": d.path, "line": d.line, "reason": d.reason, "text": d.text}
                    for d in (result.dropped if result else ())],
    }
    counts: dict[str, int] = {}
    for d in data["dropped"]:
        counts[d["reason"]] = counts.get(d["reason"], 0) + 1
    data["dropped_counts"] = counts

    def human() -> None:
        click.echo(f"{action} {root}: {len(sources)} Source(s) persisted"
                   + (f", {len(skipped)} file(s) skipped" if skipped else "") + ".")
        for s in skipped:
            click.echo(f"  skipped {s.path}: {s.reason}")
        if after is None:
            click.echo("Nothing worth saving: no Memory was created.")
        elif not changed:
            click.echo(f"No change: {after.artifact_id} stays at Revision {after.revision}.")
        else:
            verb = "Created" if before is None else "Updated"
            click.echo(f"{verb} {after.artifact_id} Revision {after.revision} ({key}):")
            for r in rows:
                click.echo(f"  {r['op']:<7} {r['entry_id']} {r['kind']:<11} {r['text']}")
        for r in data["refused"]:
            click.echo(f"  refused ({r['provider']}): {r['reason']}: {r['text']}")
        if counts:
            why = ", ".join(f"{n} {reason}" for reason, n in sorted(
                counts.items(), key=lambda kv: (-kv[1], kv[0])))
            click.echo(f"  not kept: {sum(counts.values())} sentence(s) of the contract "
                       f"documents ({why}); --json lists them")
        for n in data["notes"]:
            click.echo(f"  note: {n}")
        if commit:
            click.echo(f"Last processed commit: {commit}")

    c.emit(data, human)


@repo.command()
@click.argument("path", type=_PATH, default=".")
@click.option("--provider", "providers", multiple=True, metavar="NAME", help=_PROVIDER_HELP)
@click.pass_obj
def bootstrap(c: Any, path: str, providers: tuple[str, ...]) -> None:
    """Remember a repository's operating contract: build, dependencies, toolchain
    (Python, Node, Rust, Go), test and verification commands (and the quick test loop a
    guide names), and the rules of AGENTS.md, CLAUDE.md and the contributing guides.
    Contributor process, navigation and fragments are left out; the report counts them
    by reason (--json lists them).

    \b
    powercontext repo bootstrap .
    powercontext --json repo bootstrap ~/src/project
    """

    async def body(svc: Any) -> None:
        from powercontext.adapters.candidates.git import head_commit
        from powercontext.adapters.candidates.repository import contract_sources
        from powercontext.core.errors import InvalidInputError
        from powercontext.core.extraction import BOOTSTRAP_FILES
        from powercontext.memory_names import identity_root, repo_key, repo_root

        root = repo_root(path)  # a sub-directory or a symlinked checkout: its top level
        key = repo_key(root)  # a linked worktree: its repository's key
        sources, skipped = contract_sources(root, uri_root=identity_root(root))
        if not sources:
            raise InvalidInputError(
                "path", f"no operating-contract file ({', '.join(BOOTSTRAP_FILES)}) in {root}")
        commit = head_commit(root)
        pipeline = _pipeline(svc)
        manifest = c.manifest()
        before = await _mapped_head(svc, key)
        scope_notes = await _journal(svc, key, sources)
        # the key's Memory (created with its key in one transaction when there is none)
        after = await _settled(svc, lambda: svc.remember(
            None, sources=sources, mode="extract", providers=providers or None, key=key))
        before = _applied_to(before, after)
        if commit is not None and (after is not None or before is not None):
            state = dict(manifest.get_state(key) or {})
            state["last_processed_commit"] = commit
            manifest.set_state(key, state)
        await _report(c, svc, root=root, key=key, before=before, after=after, sources=sources,
                      skipped=skipped, pipeline=pipeline, commit=commit, action="Bootstrapped",
                      scope_notes=scope_notes)

    c.run(body)


@repo.command()
@click.argument("path", type=_PATH, default=".")
@click.option("--provider", "providers", multiple=True, metavar="NAME", help=_PROVIDER_HELP)
@click.pass_obj
def sync(c: Any, path: str, providers: tuple[str, ...]) -> None:
    """Remember what Git changed since the last processed commit (bootstrap first).

    \b
    powercontext repo sync .
    """

    async def body(svc: Any) -> None:
        from powercontext.adapters.candidates.git import GitError, git_change_source, head_commit
        from powercontext.adapters.candidates.repository import contract_sources
        from powercontext.core.errors import ArtifactNotFoundError, InvalidInputError
        from powercontext.core.extraction import BOOTSTRAP_FILES
        from powercontext.core.repo_docs import script_mentions
        from powercontext.memory_names import identity_root, repo_key, repo_root

        root = repo_root(path)
        key = repo_key(root)
        named = identity_root(root)
        manifest = c.manifest()
        if await svc.memory_key(key) is None:
            raise ArtifactNotFoundError(
                f"no Memory is mapped to {key!r}: run `powercontext repo bootstrap {root}` first")
        state = dict(manifest.get_state(key) or {})
        last = state.get("last_processed_commit")
        commit = head_commit(root)
        if commit is None:
            raise GitError(f"{root} is not a Git work tree with a commit")
        if not last:
            raise InvalidInputError("last_processed_commit",
                                    f"unknown for {key!r}: run `powercontext repo bootstrap` first")
        before = await _mapped_head(svc, key)
        change = git_change_source(root, last, commit, uri_root=named)
        if change is None:
            await _report(c, svc, root=root, key=key, before=before, after=before, sources=(),
                          skipped=(), pipeline=None, commit=commit, action="Synced")
            return
        paths = dict(change.metadata)["paths"].splitlines()
        snapshots: tuple[Any, ...] = ()
        skipped: tuple[Any, ...] = ()
        if any(p in BOOTSTRAP_FILES or script_mentions(p) == (p,) for p in paths):
            snapshots, skipped = contract_sources(root, commit=commit, uri_root=named)
        sources = (change, *snapshots)
        pipeline = _pipeline(svc)
        scope_notes = await _journal(svc, key, sources)
        after = await _settled(svc, lambda: svc.remember(
            None, sources=sources, mode="extract", providers=providers or None, key=key))
        before = _applied_to(before, after)
        state["last_processed_commit"] = commit
        manifest.set_state(key, state)
        await _report(c, svc, root=root, key=key, before=before, after=after, sources=sources,
                      skipped=skipped, pipeline=pipeline, commit=commit, action="Synced",
                      scope_notes=scope_notes)

    c.run(body)
