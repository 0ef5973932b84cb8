"""Checks of a publication batch (Topic Memory RFC, "Storage, Head, and atomic
activation": the repository "recomputes the versioned chunk sequence and Analyzer v1
title/summary text at its write boundary and rejects any incomplete or forged
projection before writing the Artifact").

Pure: what needs the database (an UPDATE's base is the current Head, the Sources are
stored, the Topic's Scope is the Scope of its Revision 1, a CREATE's id is unused) is
the adapter's to check, in the write transaction.
"""

from __future__ import annotations

from powercontext.core.analyzer import Analyzer
from powercontext.core.errors import InvalidInputError
from powercontext.core.models import EmbeddingProfile
from powercontext.core.topic.content import (
    check_ref,
    check_scope_id,
    check_source_refs,
    is_fresh_topic_id,
    make_content,
)
from powercontext.core.topic.models import (
    PublicationGuards,
    ShapeKind,
    TopicMemoryContent,
    TopicPublication,
    TopicWrite,
)
from powercontext.core.topic.projection import check_projection

__all__ = ["verify_publication", "verify_write"]


def _check_content(content: object, field: str) -> None:
    if not isinstance(content, TopicMemoryContent):
        raise InvalidInputError(field, f"must be TopicMemoryContent, got "
                                f"{type(content).__name__}")
    try:
        normal = make_content(content.title, content.summary, content.detail)
    except InvalidInputError as exc:
        raise InvalidInputError(f"{field}.{exc.field}",
                                str(exc).removeprefix(f"{exc.field}: ")) from None
    if normal != content:
        raise InvalidInputError(field, "is not normalized (NFC, trimmed): build it with "
                                "make_content")
    from powercontext.core.secrets import check_text  # writes only

    for name in ("title", "summary", "detail"):  # never a secret (Memory admission rules)
        check_text(f"{field}.{name}", getattr(content, name))


def verify_write(write: object, analyzer: Analyzer, shape: ShapeKind,
                 profile: EmbeddingProfile | None, field: str = "write") -> TopicWrite:
    """One CREATE or UPDATE checked (see :func:`verify_publication`); ``field`` prefixes
    the field names of its errors."""
    if not isinstance(write, TopicWrite):
        raise InvalidInputError(field, f"must be a TopicWrite, got {type(write).__name__}")
    if write.op not in ("create", "update"):
        raise InvalidInputError(f"{field}.op", f"must be 'create' or 'update', got "
                                f"{write.op!r}")
    if check_scope_id(write.scope_id, f"{field}.scope_id") != write.scope_id:
        raise InvalidInputError(f"{field}.scope_id", "is not in NFC")
    ref = check_ref(write.ref, f"{field}.ref")
    if write.op == "create":
        if write.base is not None:
            raise InvalidInputError(f"{field}.base", "must be None for a CREATE")
        if ref.revision != 1:
            raise InvalidInputError(f"{field}.ref.revision",
                                    f"must be 1 for a CREATE, got {ref.revision}")
        if not is_fresh_topic_id(ref.artifact_id):
            raise InvalidInputError(f"{field}.ref.artifact_id",
                                    "must be a new id from make_topic_id for a CREATE")
    else:
        if write.base is None:
            raise InvalidInputError(f"{field}.base", "is required for an UPDATE")
        base = check_ref(write.base, f"{field}.base")
        if base.artifact_id != ref.artifact_id:
            raise InvalidInputError(f"{field}.base.artifact_id",
                                    f"{base.artifact_id!r} is not the updated Topic "
                                    f"{ref.artifact_id!r}")
        if ref.revision != base.revision + 1:
            raise InvalidInputError(f"{field}.ref.revision",
                                    f"must be base.revision + 1 = {base.revision + 1}, got "
                                    f"{ref.revision}")
    _check_content(write.content, f"{field}.content")
    check_source_refs(write.sources, f"{field}.sources")
    check_projection(write.content, write.projection, analyzer, shape, profile)
    return write


def verify_publication(publication: TopicPublication, analyzer: Analyzer, shape: ShapeKind,
                       profile: EmbeddingProfile | None) -> None:
    """Everything about a batch that needs no database (Topic Memory RFC, "Storage,
    Head, and atomic activation"):

    * a :class:`TopicPublication` with at least one write (or none with non-empty
      guards: a NOOP Window advancing its Cursor) and no two writes for one
      artifact_id; ``guards`` a :class:`PublicationGuards` (their values are checked by
      :func:`powercontext.core.topic.guards.check_guards`);
    * each write: op ``create`` or ``update``; ``scope_id`` a valid Scope id in NFC;
      ``ref`` a valid TopicRef (:func:`~.content.check_ref`); a CREATE has revision 1,
      no base and a fresh-looking id (:func:`~.content.make_topic_id`'s form); an UPDATE
      has a base TopicRef of the same id with ``ref.revision == base.revision + 1``;
      content already normalized (equal to :func:`~.content.make_content` of its
      fields) and holding no secret the core rules find in its title, summary or
      detail (SecretDetectedError naming the field; a model can reassemble a secret
      from Sources each clean); sources a non-empty, sorted, unique tuple of valid
      SourceRefs;
    * each projection exactly what the content gives under ``analyzer`` and ``shape``
      (:func:`~.projection.check_projection`, with ``profile`` for hybrid).

    InvalidInputError naming the field (``writes[i].ref.revision``, ...) for a bad
    write; IntegrityError naming what differs for a forged projection."""
    if not isinstance(publication, TopicPublication):
        raise InvalidInputError("publication", f"must be a TopicPublication, got "
                                f"{type(publication).__name__}")
    if not isinstance(publication.guards, PublicationGuards):
        raise InvalidInputError("publication.guards", "must be PublicationGuards")
    writes = publication.writes
    if not isinstance(writes, tuple) or (not writes and publication.guards.empty):
        raise InvalidInputError("publication.writes", "must be a non-empty tuple of writes "
                                "(or an empty one with guards: a Window that only advances "
                                "its Cursor)")
    ids: set[str] = set()
    for i, write in enumerate(writes):
        checked = verify_write(write, analyzer, shape, profile, f"writes[{i}]")
        if checked.ref.artifact_id in ids:
            raise InvalidInputError(f"writes[{i}].ref.artifact_id",
                                    f"{checked.ref.artifact_id!r} has two writes in one batch")
        ids.add(checked.ref.artifact_id)
