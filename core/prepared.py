"""The values of prepared context (Topic Memory RFC, "Prepared Context"): what ``POST
/v1/context/prepare`` returns for one Scope and query. Plain frozen values, built by
:func:`powercontext.context_prepare.prepare_context`; their JSON shapes are in
:mod:`powercontext.core.shapes`.
"""

from __future__ import annotations

from typing import Literal

import attrs

from powercontext.core.topic.models import TopicRef

__all__ = ["MEMORY_FAMILY", "ContextItem", "MemoryEntryRef", "PreparedContext"]

MEMORY_FAMILY: Literal["memory"] = "memory"


@attrs.frozen
class MemoryEntryRef:
    """The exact reference of a Memory item: one entry version of one Revision (the
    Memory RFC's Handoff citation, written flat with its family). JSON: ``{"family":
    "memory", "artifact_id", "revision", "entry_id", "entry_version_id"}``."""

    artifact_id: str
    revision: int
    entry_id: str
    entry_version_id: str
    family: Literal["memory"] = MEMORY_FAMILY


@attrs.frozen
class ContextItem:
    """One prepared hit: ``family`` (``memory`` or ``topic-memory``), its ``rank`` in
    its own family (1-based, the family's own search order), ``title``, ``summary``,
    ``snippet`` (None when there is none) and ``ref`` (JSON key ``artifact``): the exact
    reference, a
    :class:`MemoryEntryRef` (``title`` is the entry's kind, ``summary`` its text, no
    snippet) or a :class:`~powercontext.core.topic.models.TopicRef` (expand it with
    ``get`` in the response's Scope). Every text is neutral (``neutral_text``)."""

    family: Literal["memory", "topic-memory"]
    rank: int
    title: str
    summary: str
    snippet: str | None
    ref: MemoryEntryRef | TopicRef


@attrs.frozen
class PreparedContext:
    """The prepared context of one Scope and query: the interleaved ``items``,
    ``truncated`` (items left out to honour ``max_bytes``) and ``bytes`` (the UTF-8
    size of the JSON response, which counts itself, <= ``max_bytes``)."""

    scope_id: str
    query: str
    items: tuple[ContextItem, ...]
    truncated: int
    bytes: int
