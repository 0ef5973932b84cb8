"""The turn's outcome (Memory RFC, "Task events and extraction boundaries"): a Stop
(Claude Code) or ``agent-turn-complete`` (Codex) persists the last assistant message as a
``task_outcome`` Source, its secrets redacted first, and, unless the outcome is
:func:`trivial_outcome`, runs ``remember(mode="extract")`` on the repository Memory
(:func:`record_outcome`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from powercontext.entrypoints.cli.hook_payload import repo_key, repo_root
from powercontext.entrypoints.cli.hook_turn import bounded_text

__all__ = [
    "ENV_HOOK_CREATE",
    "MAX_OUTCOME_CHARS",
    "MAX_REQUEST_CHARS",
    "TRIVIAL_MAX_WORDS",
    "record_outcome",
    "trivial_outcome",
]

#: A task outcome keeps at most this many characters of the assistant message.
MAX_OUTCOME_CHARS = 16000
#: The request (last user prompt) kept in the outcome's metadata.
MAX_REQUEST_CHARS = 2000
#: Environment setting that lets a Stop create (and map) a Memory for a repository that
#: has none; the ``--create-memory`` flag does the same.
ENV_HOOK_CREATE = "POWERCONTEXT_HOOK_CREATE"
#: An outcome longer than this many words is never trivial.
TRIVIAL_MAX_WORDS = 12


def trivial_outcome(answer: str, metadata: Any = None) -> str | None:
    """Why the turn's outcome ``answer`` is not worth a working_note, or None when it is
    (:func:`powercontext.core.extraction.task_outcomes.trivial_outcome`: no verification,
    at most :data:`TRIVIAL_MAX_WORDS` words, and only acknowledgements and pleasantries
    or a cosmetic change)."""
    from powercontext.core.extraction.task_outcomes import trivial_outcome as trivial

    return trivial(answer, metadata)


def _pipeline(svc: Any) -> Any:
    """The service's candidate pipeline; when none is set, every provider the plugin
    registry configures (as ``powercontext repo`` does). None when unavailable."""
    if getattr(svc, "candidate_pipeline", None) is not None:
        return svc.candidate_pipeline
    try:
        from powercontext.adapters.candidates import pipeline_from_registry
        from powercontext.plugins.registry import Registry
    except ImportError:
        return None
    svc.candidate_pipeline = pipeline_from_registry(Registry(), source_store=svc.backend)
    return svc.candidate_pipeline


def _head_commit(root: Path) -> str | None:
    if not (root / ".git").exists():
        return None
    try:
        from powercontext.adapters.candidates.git import head_commit
    except ImportError:
        return None
    return head_commit(root)


async def _record_turn(svc: Any, key: str, agent: str, answer: str, request: str,
                       turn: dict[str, str], metadata: dict[str, str],
                       report: dict[str, Any]) -> list[str]:
    """The turn as a conversation Source in the Scope ``key``; any failure is a note."""
    from powercontext.entrypoints.cli.hook_turn import conversation_source, record_turn

    if turn.get("turn") and "turn_id" not in metadata:
        metadata = {**metadata, "turn_id": turn["turn"]}
    try:
        source = conversation_source(
            scope_id=key, agent=agent, session=turn.get("session", ""),
            turn=turn.get("turn", ""), prompt=turn.get("prompt") or request, reply=answer,
            metadata=metadata, scanner=svc.secret_scanner)
        if source is None:
            return []
        notes = await record_turn(svc, key, source)
        if not notes:
            report["turn_source_id"] = source.source_id
        return notes
    except Exception as exc:  # the turn is best effort: the outcome and extraction go on
        return [f"the turn was not recorded: {type(exc).__name__}: {exc}"]


async def record_outcome(c: Any, *, agent: str, cwd: str, answer: str, request: str,
                          uri: str | None, ids: dict[str, str], extract: bool = True,
                          create: bool = False, turn: dict[str, str] | None = None
                          ) -> dict[str, Any]:
    """Persist a ``task_outcome`` Source (first, so the evidence is never lost; the
    Memory's evidence, stored without a Scope), then the finished turn as a
    ``conversation`` Source in the repository's Scope ``repo:<path>`` (Topic Memory's
    Source journal and Pending raise, one transaction;
    :func:`~powercontext.entrypoints.cli.hook_turn.record_turn`; ``turn``: ``{"session",
    "turn", "prompt"}``, the prompt defaulting to ``request``), then, when ``extract``
    and the answer is not :func:`trivial_outcome`, run ``remember(mode="extract")`` on
    the repository Memory (the session's note, :mod:`powercontext.core.extraction.
    task_outcomes`). When the user's words of the turn (``request``) ask for a durable
    change, they are stored as a ``user_note`` Source too and extracted with it, even
    after a trivial outcome (the rule provider derives the rule in the user's words, a
    correction revising the rule it certainly replaces). A repository without a Memory
    gets one (mapped to ``repo:<path>``) only when ``create`` (``--create-memory`` or
    ``$POWERCONTEXT_HOOK_CREATE=1``); otherwise only the Sources are stored. A turn that
    cannot be recorded is a note, never a failure. Returns what happened (printed with
    ``--json``: ``source_id``, ``turn_source_id`` (None when no turn was recorded),
    ``user_note_source_id`` (when the user's words were stored), ``repo_key``,
    ``memory_ref``, ``extracted``, ``trivial``, ``notes``)."""
    from powercontext.adapters.secret_scanner import redact_all, redact_fields
    from powercontext.core import canonical
    from powercontext.core.errors import CapabilityNotSupportedError, RevisionConflictError
    from powercontext.core.shapes import to_json

    root = repo_root(cwd)
    key = repo_key(root)
    svc = c.service()
    # Sources are append-only: secrets are redacted before the Source (and its id and
    # hash) exist, visibly ("[REDACTED:github-token]"), and before any cut, so that a
    # cut never leaves half a token behind.
    scanner = svc.secret_scanner
    answer, request = redact_all(answer, scanner), redact_all(request, scanner)
    metadata = {"agent": agent, "cwd": str(Path(cwd).resolve()), "repo": str(root),
                **{k: v for k, v in ids.items() if v}}
    if (turn or {}).get("turn") and "turn_id" not in metadata:
        metadata["turn_id"] = (turn or {})["turn"]
    if request:
        metadata["request"] = bounded_text(request, MAX_REQUEST_CHARS)
    head = _head_commit(root)
    if head:
        metadata["head"] = head
    content = bounded_text(answer, MAX_OUTCOME_CHARS) if answer else (
        f"{agent} finished a turn; no assistant message was recorded.")
    turn_meta: dict[str, str] = {k: metadata[k] for k in ("agent", "repo", "head")
                                 if k in metadata}
    turn_meta.update((k, v) for k, v in ids.items() if v)
    content, uri, metadata = redact_fields(content, uri, metadata, scanner)
    digest = canonical.source_content_hash("task_outcome", content, uri,
                                           tuple(sorted(metadata.items())))
    source = canonical.make_source(f"src_{digest[:40]}", "task_outcome", content, uri, metadata)
    note = _user_note(request, metadata)
    report: dict[str, Any] = {"source_id": source.source_id, "turn_source_id": None,
                              "repo_key": key, "memory_ref": None, "extracted": False,
                              "trivial": None}
    trivial = trivial_outcome(answer, metadata) if answer else None
    if trivial is not None:
        report["trivial"] = trivial
        report["notes"] = [f"the outcome is {trivial}: stored as a Source, no working_note"]
    if note is not None:
        report["user_note_source_id"] = note.source_id
    import functools

    from powercontext.entrypoints.cli.writes import settled

    try:
        await svc.backend.put_sources((source,) if note is None else (source, note))
        # the turn, in the repository's Scope (repo:<path>, the Memory key's form)
        turn_notes = await _record_turn(svc, key, agent, answer, request, turn or {},
                                        turn_meta, report)
        if turn_notes:
            report["notes"] = [*report.get("notes", []), *turn_notes]
        evidence = tuple(x for x in (source if answer and trivial is None else None, note)
                         if x is not None)
        pipeline = _pipeline(svc) if extract and evidence else None
        if pipeline is None:
            return report
        for _attempt in range(3):
            if not create and await svc.memory_key(key) is None:
                report["notes"] = [f"no Memory for {key}: only the Source is stored "
                                   f"(`powercontext repo bootstrap`, or {ENV_HOOK_CREATE}=1)"]
                return report
            try:
                # the key's Memory, created with its key in one transaction when there is
                # none (the service rereads both when another hook wins the race); an
                # unknown COMMIT is reread: landed -> its ref; not landed -> a conflict
                after = await settled(svc, functools.partial(
                    svc.remember, None, sources=evidence, mode="extract", key=key))
            except RevisionConflictError:
                continue  # another writer moved the head: reread and rerun
            except CapabilityNotSupportedError as exc:
                report["notes"] = [str(exc)]
                return report
            last = getattr(pipeline, "last_result", None)
            report.update(extracted=True, memory_ref=to_json(after))
            if last is not None:
                report["refused"] = to_json(last.refused)
                report["notes"] = [*report.get("notes", []), *last.notes]
            return report
        raise RevisionConflictError(f"Memory for {key} kept moving; the Source is stored")
    finally:
        await svc.close()


def _user_note(request: str, metadata: dict[str, str]) -> Any | None:
    """The user's own words of the turn as a ``user_note`` Source, when they ask for a
    durable change (:func:`powercontext.core.corrections.user_rules`: "from now
    on ...", "always ...", "... instead of `make test`"), else None. Content: the
    request (already redacted, at most :data:`MAX_REQUEST_CHARS`); metadata: the agent,
    repository, session and turn of the outcome; the id is the content hash, so the same
    words of the same turn are one Source."""
    from powercontext.core import canonical
    from powercontext.core.corrections import user_rules

    text = bounded_text(request.strip(), MAX_REQUEST_CHARS)
    if not text or not user_rules(text):
        return None
    meta = {k: metadata[k] for k in ("agent", "repo", "session_id", "thread_id", "turn_id",
                                     "event") if metadata.get(k)}
    meta["trigger"] = "user-prompt"
    items = tuple(sorted(meta.items()))
    digest = canonical.source_content_hash("user_note", text, None, items)
    return canonical.make_source(f"src_{digest[:40]}", "user_note", text, None, meta)
