"""``powercontext memory rebuild``: the offline rebuild of heads, FTS and vectors from
the authoritative tables, and the migrations it carries (embedding profile, search
analyzer, the pre-spec Artifact content hash). It drives the backend's
:class:`powercontext.ports.MemoryRebuild` capability; a backend without it is refused.
Registered by :mod:`powercontext.entrypoints.cli.main`.
"""

from __future__ import annotations

import sys
from typing import Any

import click

from powercontext.entrypoints.cli.context import EXIT_INTEGRITY, Ctx, pass_ctx

__all__ = ["rebuild"]


@click.command()
@click.option(
    "--migrate",
    is_flag=True,
    help="Switch the database to the --embedding model's profile (drops and "
    "rebuilds every vector) and make that model the one later commands use.",
)
@click.option(
    "--resume",
    "resume_only",
    is_flag=True,
    help="Only clear a write pause left by a crashed rebuild.",
)
@click.option(
    "--rehash",
    is_flag=True,
    help="First upgrade a database written with the pre-spec Artifact content hash: "
    "verify every Revision against the old formula and rewrite only its stored hash "
    "(one transaction, writers paused).",
)
@click.option(
    "--analyzer",
    "target_analyzer",
    metavar="NAME",
    help="Migrate the full-text projections to this search analyzer (v1, v1-porter, v2): "
    "every Memory head row and every active Topic is re-analyzed and the FTS indexes "
    "rebuilt.",
)
@pass_ctx
def rebuild(
    c: Ctx, migrate: bool, resume_only: bool, rehash: bool, target_analyzer: str | None
) -> None:
    """Offline rebuild of heads, FTS and vectors from the authoritative tables.

    Pauses every writer, re-validates each Memory's manifest and hashes, rebuilds its
    projections, shows progress on stderr, then resumes writers. Vectors come from the
    model every command uses (--embedding, $POWERCONTEXT_EMBEDDING*, else the one this
    database remembers). A vector that cannot be refilled (no model, the model down, a
    refused vector) is kept as stored; each entry left without one is listed. Use it
    after the embedding model was down, after a crash, with --migrate to move to a new
    embedding profile, with --analyzer NAME to move to another search analyzer (also the
    fix for an "analyzer mismatch" error), or with --rehash once on a database written
    before the hashes followed the spec (see docs/storage.md, "Upgrading an older
    database").
    """
    from rich.console import Console
    from rich.progress import Progress

    from powercontext.database_path import check_sqlite_path
    from powercontext.embedding_config import remember_embedding, resolve_embedding
    from powercontext.plugins.registry import Registry
    from powercontext.ports import MemoryRebuild
    from powercontext.runtime import refuse_profile_change_over_topics

    check_sqlite_path(c.db_url)
    registry = Registry()
    backend = registry.backend_for_url(c.db_url, profile=None)
    if not isinstance(backend, MemoryRebuild):
        raise click.UsageError(f"the backend for {c.db_url} has no offline rebuild")

    async def body(_: Any) -> None:
        rehashed = None
        topics = None
        nonlocal backend
        # the analyzer the rebuild builds (else the one a new database records): the
        # open names it when the database needs an upgrade first (typed errors here)
        choice = target_analyzer or c.analyzer
        if choice is not None:
            backend = registry.backend_for_url(c.db_url, profile=None, analyzer=choice)
        if not isinstance(backend, MemoryRebuild):
            raise click.UsageError(f"the backend for {c.db_url} has no offline rebuild")
        backend.allow_analyzer_migration()  # the rebuild is what migrates a mismatch
        try:
            if resume_only:
                await backend.resume_writes()
                c.emit({"resumed": True}, lambda: click.echo("Writes resumed."))
                return
            name, options, model = resolve_embedding(
                c.db_url, c.embedding, registry=registry, remember=False
            )
            if migrate and model is None:
                raise click.UsageError("--migrate needs the new model: --embedding NAME")
            if rehash:
                rehashed = await backend.rehash()
            caps = await backend.capabilities()
            stored = caps.embedding_profile
            new_profile = None
            if model is not None and stored != model.profile:
                if not migrate:
                    raise click.UsageError(
                        f"the database's embedding profile is {stored}; the model's is "
                        f"{model.profile}. Pass --migrate to switch (all vectors are rebuilt)."
                    )
                new_profile = model.profile
                # Topic Heads built under the old profile would lose their vectors
                await refuse_profile_change_over_topics(c.db_url, new_profile,
                                                        registry=registry)
            with Progress(transient=True, console=Console(stderr=True), disable=c.as_json) as bar:
                task = bar.add_task("rebuilding", total=None)

                def tick(done: int, total: int, artifact_id: str) -> None:
                    bar.update(task, total=total, completed=done, description=artifact_id)

                report = await backend.rebuild(
                    model, new_profile=new_profile, analyzer=target_analyzer, progress=tick
                )
                topics = await _rebuild_topics(c.db_url, registry, tick)
            if migrate and name is not None:
                remember_embedding(c.db_url, name, options)
        finally:
            await backend.close()

        def human() -> None:
            click.echo(
                ("" if rehashed is None else
                 "Hashes already follow the spec. " if rehashed.already else
                 f"Rewrote the stored hash of {rehashed.rewritten} Revisions. ")
                + f"Rebuilt {report.memories} Memories: {report.entries} active "
                f"entries, {report.vectors} vectors"
                + (f" ({report.kept} kept as stored)" if report.kept else "")
                + f", analyzer {report.analyzer}"
                + (f"; re-analyzed {topics.topics} Topics ({topics.chunks} chunks)"
                   if topics is not None and topics.topics + len(topics.corrupt) else "")
                + (
                    f"; still incomplete: {', '.join(report.incomplete)}"
                    if report.incomplete
                    else "."
                )
            )
            for artifact_id, entry_id, reason in report.missing:
                click.echo(f"  no vector for {entry_id} in {artifact_id}: {reason}")

        from powercontext.core.shapes import to_json

        c.emit(dict(to_json(report), embedding=name,
                    **({} if rehashed is None else {"rehash": to_json(rehashed)}),
                    **({} if topics is None else {"topics": to_json(topics)})), human)
        if rehashed is not None and rehashed.corrupt:
            for artifact_id, revision, error in rehashed.corrupt:
                click.echo(f"powercontext: integrity error in {artifact_id}@{revision}: {error} "
                           "(its stored hash was left as it was)", err=True)
        topics_corrupt = topics.corrupt if topics is not None else []
        for artifact_id, revision, error in topics_corrupt:
            click.echo(f"powercontext: integrity error in Topic {artifact_id}@{revision}: "
                       f"{error} (its projection was left as it was)", err=True)
        if report.corrupt or (rehashed is not None and rehashed.corrupt) or topics_corrupt:
            for artifact_id, error in report.corrupt:
                click.echo(f"powercontext: integrity error in {artifact_id}: {error} "
                           "(its projection was left as it was)", err=True)
            sys.exit(EXIT_INTEGRITY)

    class _NoService:
        async def close(self) -> None:
            pass

    c._service = _NoService()
    c.run(body)



async def _rebuild_topics(db_url: str, registry: Any, tick: Any) -> Any:
    """Bring the Topic projections to the analyzer the Memory rebuild recorded (a
    TopicRebuildReport; nothing to do when they are built by it already), or None when
    this database's scheme has no Topic backend that can. Opens the Topic backend
    (which may create Topic Memory's empty tables)."""
    from powercontext.plugins.registry import UnknownPluginError
    from powercontext.ports.topic import TopicRebuild

    try:
        topic_backend = registry.topic_backend_for_url(db_url)
    except (UnknownPluginError, ImportError, AttributeError):
        return None
    try:
        if not isinstance(topic_backend, TopicRebuild):
            return None
        topic_backend.allow_analyzer_migration()
        return await topic_backend.rebuild_fts(progress=tick)
    finally:
        await topic_backend.close()
