"""The request and response models of the Memory routes (:mod:`.memory`,
:mod:`.memory_writes`, :mod:`.sources`): what the OpenAPI document states and pydantic
checks before a route runs (strict types, no extra field; a refusal is a 422
``invalid_input`` naming the field). The services check the same values again (the
limits of the CLI: texts 1..8,192 UTF-8 bytes after trimming, reasons at most 512 code
points, ids at most 128 ASCII characters, keys 1,024 characters, queries 8,192
characters and 64 terms, secrets refused).

The response models mirror the shapes of :func:`powercontext.core.shapes.to_json`; the
routes return those shapes (never hand-built copies of them), and the schemathesis test
checks every answer against these models.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from powercontext.core.query import MAX_QUERY_CHARS

__all__ = [
    "ArtifactRefIn",
    "ArtifactRefOut",
    "ChangesOut",
    "CitationIn",
    "CitationOut",
    "EntryIn",
    "EntryVersionOut",
    "ExpandOut",
    "ExpandRequest",
    "ForgetRequest",
    "MemoryListOut",
    "MemoryName",
    "OrganizeRequest",
    "RememberRequest",
    "RetireOut",
    "RetireRequest",
    "ReviseRequest",
    "SearchOut",
    "SearchRequest",
    "ShowOut",
    "SourceAddOut",
    "SourceAddRequest",
    "SourceIn",
    "SourceOut",
    "ValidateOut",
    "WriteOut",
]

_STRICT = ConfigDict(extra="forbid", strict=True)
_OUT = ConfigDict(extra="forbid")
_MAX_INT = 2**53 - 1

#: Raw bounds, four times the services' limits (those apply after NFC and trimming).
_TEXT_CHARS = 4 * 8192
_REASON_CHARS = 4 * 512
_ID_CHARS = 4 * 128
_NAME_CHARS = 4 * 1024 + 64
#: Entries and ids one request may name (the 256 KiB body bound comes first anyway).
MAX_ITEMS = 1000

MemoryName = Annotated[str, Field(
    min_length=1, max_length=_NAME_CHARS,
    examples=["key:repo:/abs/path", "mem_art_01jb...", "mem_art_01jb...@3"],
    description="A Memory: ID (its head), ID@REV (an exact Revision; a write needs the "
                "head), key:NAME (the Memory a business key names) or key:NAME@REV.")]
EntryId = Annotated[str, Field(min_length=1, max_length=_ID_CHARS,
                               examples=["mem_ent_01jb..."])]
Reason = Annotated[str | None, Field(max_length=_REASON_CHARS,
                                     description="Why (at most 512 code points).")]
EntryIds = Annotated[list[EntryId], Field(min_length=1, max_length=MAX_ITEMS)]


class SourceIn(BaseModel):
    """Evidence: stored as a Source (its id derived from its content hash, so the same
    Source twice is one) and cited by every entry of the call. ``metadata`` is kept:
    it is part of the content hash."""

    model_config = _STRICT
    content: Annotated[str, Field(min_length=1, max_length=256 * 1024)]
    kind: Annotated[str, Field(min_length=1, max_length=_ID_CHARS)] = "user_note"
    uri: Annotated[str | None, Field(max_length=8192)] = None
    metadata: Annotated[dict[str, str], Field(max_length=256)] = {}


class EntryIn(BaseModel):
    """One explicit entry."""

    model_config = _STRICT
    text: Annotated[str, Field(min_length=1, max_length=_TEXT_CHARS,
                               description="1..8,192 UTF-8 bytes after trimming.")]
    kind: Annotated[str, Field(min_length=1, max_length=_ID_CHARS,
                               description="fact, preference, decision, constraint, "
                                           "working_note (any one-line string).")] = "fact"
    reason: Reason = None
    revise: Annotated[str | None, Field(
        max_length=_ID_CHARS, description="An entry_id of the Memory: its current version "
                                          "is revised instead of a new entry added.")] = None


class RememberRequest(BaseModel):
    """``memory`` (a write needs its head) or ``key`` (its Memory, created with the key
    when none is); neither: a new Memory."""

    model_config = _STRICT
    entries: Annotated[list[EntryIn], Field(min_length=1, max_length=MAX_ITEMS)]
    memory: MemoryName | None = None
    key: Annotated[str | None, Field(min_length=1, max_length=_NAME_CHARS,
                                     examples=["repo:/abs/path"])] = None
    sources: Annotated[list[SourceIn], Field(max_length=64)] = []


class ReviseRequest(BaseModel):
    """A new version of one entry (its kind kept unless given)."""

    model_config = _STRICT
    memory: MemoryName
    entry_id: EntryId
    text: Annotated[str, Field(min_length=1, max_length=_TEXT_CHARS)]
    kind: Annotated[str | None, Field(min_length=1, max_length=_ID_CHARS)] = None
    reason: Reason = None
    sources: Annotated[list[SourceIn], Field(max_length=64)] = []


class ForgetRequest(BaseModel):
    """Entries to mark inactive (forget) or active again (reactivate)."""

    model_config = _STRICT
    memory: MemoryName
    entry_ids: EntryIds
    reason: Reason = None


class RetireRequest(BaseModel):
    """Retire the Memory ``memory`` names (its head): every active entry inactive in
    one new Revision, then every key naming it removed."""

    model_config = _STRICT
    memory: MemoryName
    reason: Reason = None


class OrganizeRequest(BaseModel):
    model_config = _STRICT
    memory: MemoryName
    steps: Annotated[list[Literal["dedupe", "normalize", "default"]],
                     Field(min_length=1, max_length=3)] = ["default"]


class SearchRequest(BaseModel):
    model_config = _STRICT
    query: Annotated[str, Field(min_length=1, max_length=MAX_QUERY_CHARS,
                                description="1..8,192 characters, at most 64 distinct "
                                            "terms, not blank.")]
    memories: Annotated[list[MemoryName], Field(
        min_length=1, max_length=64,
        description="The Memories to search (current heads: ID, key:NAME, or an ID@REV "
                    "that is the head).")]
    limit: Annotated[int, Field(ge=1, le=1024)] = 8
    mode: Literal["auto", "fts", "vector", "hybrid"] = "auto"


class ArtifactRefIn(BaseModel):
    model_config = _STRICT
    artifact_id: Annotated[str, Field(min_length=1, max_length=_ID_CHARS)]
    revision: Annotated[int, Field(ge=1, le=_MAX_INT)]


class CitationIn(BaseModel):
    """A Handoff citation: ArtifactRef + entry_id + entry_version_id (also a search
    hit's anchor)."""

    model_config = _STRICT
    memory_ref: ArtifactRefIn
    entry_id: EntryId
    entry_version_id: EntryId


class ExpandRequest(BaseModel):
    """``anchors`` (hits or citations), or ``memory`` and ``entry_ids`` (their versions
    at that Revision), or both."""

    model_config = _STRICT
    anchors: Annotated[list[CitationIn], Field(max_length=MAX_ITEMS)] = []
    memory: MemoryName | None = None
    entry_ids: Annotated[list[EntryId], Field(max_length=MAX_ITEMS)] = []


class SourceAddRequest(BaseModel):
    model_config = _STRICT
    scope_id: Annotated[str, Field(min_length=1, max_length=1024,
                                   examples=["repo:/abs/path", "project:x"])]
    sources: Annotated[list[SourceIn], Field(min_length=1, max_length=MAX_ITEMS)]


# ------------------------------------------------------------------ responses


class ArtifactRefOut(BaseModel):
    model_config = _OUT
    artifact_id: str
    revision: int


class SourceRefOut(BaseModel):
    model_config = _OUT
    source_id: str
    content_hash: str


class EntryVersionOut(BaseModel):
    model_config = _OUT
    memory_artifact_id: str
    entry_id: str
    entry_version_id: str
    version: int
    previous_version_id: str | None
    kind: str
    text: str
    source_refs: list[SourceRefOut]
    artifact_refs: list[ArtifactRefOut]
    entry_content_hash: str
    created_in_revision: int


class ShownEntryOut(EntryVersionOut):
    state: Literal["active", "inactive"]


class ShowOut(BaseModel):
    model_config = _OUT
    memory_ref: ArtifactRefOut
    head: ArtifactRefOut
    keys: list[str]
    content_hash: str
    active_entries: int
    entries_total: int
    entries: list[ShownEntryOut]


class MemoryRowOut(BaseModel):
    model_config = _OUT
    artifact_id: str
    keys: list[str]
    memory_ref: ArtifactRefOut
    active_entries: int
    entries: int


class MemoryListOut(BaseModel):
    model_config = _OUT
    memories: list[MemoryRowOut]


class ChangeOut(BaseModel):
    model_config = _OUT
    op: Literal["add", "revise", "deactivate", "reactivate"]
    entry_id: str
    from_entry_version_id: str | None
    to_entry_version_id: str | None
    reason: str | None


class RevisionChangesOut(BaseModel):
    model_config = _OUT
    memory_ref: ArtifactRefOut
    changes: list[ChangeOut]


class ChangesOut(BaseModel):
    model_config = _OUT
    memory_ref: ArtifactRefOut
    revisions: list[RevisionChangesOut]


class WriteOut(BaseModel):
    """The outcome of a write: the new head (or the unchanged one; null when nothing
    was worth a new Memory), whether it changed and the changes it made."""

    model_config = _OUT
    memory_ref: ArtifactRefOut | None
    changed: bool
    changes: list[ChangeOut]


class RetireOut(BaseModel):
    """The outcome of a retire: the head it started from (``before``), the head after
    (``memory_ref``; the same when no entry was active), the entries it marked inactive
    and the keys it removed (``key:NAME`` names no Memory now)."""

    model_config = _OUT
    artifact_id: str
    before: ArtifactRefOut
    memory_ref: ArtifactRefOut
    forgotten: list[str]
    keys_removed: list[str]


class HitOut(BaseModel):
    """A hit and its receipt: ``rank`` (1-based), ``matched_by`` (the channels that
    found it), ``score`` (RRF) and ``matched_terms`` (the query's terms it holds)."""

    model_config = _OUT
    memory_ref: ArtifactRefOut
    entry_id: str
    entry_version_id: str
    kind: str
    text: str
    score: float
    matched_by: list[Literal["fts", "vector"]]
    rank: int
    matched_terms: list[str]


class SearchOut(BaseModel):
    model_config = _OUT
    mode: Literal["fts", "vector", "hybrid", "auto"]
    fallback_reason: str | None
    hits: list[HitOut]
    untrusted: Literal[True]


class ExpandOut(BaseModel):
    model_config = _OUT
    entries: list[EntryVersionOut]
    untrusted: Literal[True]


class CitationOut(BaseModel):
    model_config = _OUT
    memory_ref: ArtifactRefOut
    entry_id: str
    entry_version_id: str


class ValidateOut(BaseModel):
    """``valid`` true with the exact entry, or false with the reason (``error`` is the
    error class: InvalidCitationError or ArtifactNotFoundError)."""

    model_config = _OUT
    valid: bool
    entry: EntryVersionOut | None
    error: str | None
    message: str | None


class SourceOut(BaseModel):
    model_config = _OUT
    source_id: str
    kind: str
    uri: str | None
    content_hash: str
    metadata: dict[str, str]
    content: str
    untrusted: Literal[True]


class SourceAddedOut(BaseModel):
    model_config = _OUT
    source_id: str
    position: int
    kind: str
    uri: str | None
    content_hash: str
    over_topic_ceiling: str | None


class SourceAddOut(BaseModel):
    model_config = _OUT
    scope_id: str
    sources: list[SourceAddedOut]
