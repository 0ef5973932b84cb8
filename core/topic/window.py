"""The Topic Window policy (Topic Memory RFC, "Window selection and context budgets",
"Cumulative work and evidence ceilings", "Topic evidence and Source lineage";
TOPIC-MEMORY.md, "Token estimates").

Pure functions over journal rows already read: the token estimator, the per-Source
complexity ceilings (checked before canonical serialisation), Window selection (the
largest contiguous prefix after the Cursor within the Source limit and 80 percent of
the context window), fragments of an oversized single Source, and the
operation-local evidence ids mapped back to exact SourceRefs.

SKELETON: signatures are fixed (other modules code against them); bodies are filled
by the window engineer.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from powercontext.core.models import Source, SourceRef
from powercontext.core.topic.processing import JournalEntry, ProcessingSettings

__all__ = [
    "MESSAGE_OVERHEAD_TOKENS",
    "Fragment",
    "Window",
    "WindowRejection",
    "WindowSource",
    "check_complexity",
    "estimate_tokens",
    "evidence_text",
    "fragments",
    "select_window",
    "window_token_budget",
]

#: Added once per message/part by :func:`estimate_tokens` callers (role, framing).
MESSAGE_OVERHEAD_TOKENS = 8


def estimate_tokens(text: str) -> int:
    """A conservative token estimate of ``text``: UTF-8 bytes / 3 rounded up, plus
    :data:`MESSAGE_OVERHEAD_TOKENS`. Never below the real count of common tokenizers
    on the benchmark texts by more than the stated margin (property-tested)."""
    raise NotImplementedError


def window_token_budget(settings: ProcessingSettings) -> int:
    """80 percent of ``settings.context_window_tokens`` (floor)."""
    raise NotImplementedError


def check_complexity(source: Source) -> str | None:
    """None when the Source is within the ceilings, else a reason (no Source text in
    it). Visits the Source's projection value (kind, content, uri, metadata keys and
    values) WITHOUT serialising it first, stopping as soon as a ceiling is passed:
    more than MAX_VISITED_VALUES values/keys, depth over MAX_DEPTH, more than
    MAX_SOURCE_CHARS text characters (metadata included)."""
    raise NotImplementedError


def evidence_text(source: Source) -> str:
    """The canonical evidence text the model reads for one Source: RFC 8785 JSON of
    ``{"kind", "content", "uri", "metadata": {k: v}}`` (uri null when absent) as str.
    Only called after :func:`check_complexity` passed."""
    raise NotImplementedError


@attrs.frozen
class WindowSource:
    """One eligible Source of a Window: its journal row, its operation-local evidence
    id (``s1``, ``s2``, ... in journal order over eligible Sources), its evidence text
    and that text's token estimate."""

    entry: JournalEntry
    evidence_id: str
    text: str
    tokens: int

    @property
    def ref(self) -> SourceRef:
        return self.entry.source.ref


@attrs.frozen
class Window:
    """A contiguous interval ``(after, through]`` of one Scope's journal. ``sources``
    are its eligible Sources (lineage-only rows excluded before token estimation but
    inside the interval); ``oversized`` is True for a single-Source Window whose one
    Source exceeds the Window token budget alone (its stage requests use
    :func:`fragments`). Not stored; no id."""

    scope_id: str
    after: int
    through: int
    sources: tuple[WindowSource, ...]
    oversized: bool = False

    def refs(self, evidence_ids: Sequence[object], field: str) -> tuple[SourceRef, ...]:
        """The exact SourceRefs of model-returned ``evidence_ids``, sorted by
        (source_id, content_hash). InvalidInputError naming ``field`` for an empty
        list, a non-string, an unknown or out-of-Window id, or a duplicate."""
        raise NotImplementedError


@attrs.frozen
class WindowRejection:
    """The earliest Source after the Cursor cannot be projected (its complexity is over
    a ceiling): processing of the Scope stops at ``position`` with ``code``
    (``source_complexity_limit``), persisted by the Worker."""

    scope_id: str
    position: int
    code: str
    reason: str


def select_window(entries: Sequence[JournalEntry], after: int,
                  settings: ProcessingSettings) -> Window | WindowRejection | None:
    """The Window after Cursor ``after`` from ``entries`` (the Scope's journal rows
    after it, ascending and contiguous from ``after + 1``; at most
    ``settings.window_limit`` are used): the largest prefix within the Source limit,
    the Window token budget and MAX_WINDOW_CHARS. A Source that would pass a budget
    stays for the next Window; a first Source over the token budget alone becomes a
    single-Source Window (``oversized``). A Source over a complexity ceiling ends the
    prefix before it; when it is the first, the result is a WindowRejection. None when
    ``entries`` is empty."""
    raise NotImplementedError


@attrs.frozen
class Fragment:
    """A contiguous piece ``text[start:end]`` of one Source's evidence text (character
    offsets into it), carrying that Source's evidence id."""

    evidence_id: str
    start: int
    end: int
    text: str


def fragments(evidence_id: str, text: str, budget_tokens: int) -> tuple[Fragment, ...]:
    """Split ``text`` into contiguous fragments whose JSON-escaped form (as it appears
    inside the stage input) each estimate at most ``budget_tokens``; every character
    kept in order, never splitting a surrogate pair or a combining sequence boundary
    rule beyond code points. InvalidInputError when ``budget_tokens`` cannot hold even
    one character."""
    raise NotImplementedError
