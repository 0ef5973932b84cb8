"""The Topic Window policy (Topic Memory RFC, "Window selection and context budgets",
"Cumulative work and evidence ceilings", "Topic evidence and Source lineage";
TOPIC-MEMORY.md, "Token estimates").

Pure functions over journal rows already read: the token estimator, the per-Source
complexity ceilings (checked before canonical serialisation), Window selection (the
largest contiguous prefix after the Cursor within the Source limit and 80 percent of
the context window), fragments of an oversized single Source, and the
operation-local evidence ids mapped back to exact SourceRefs.

The rules, in the order :func:`select_window` applies them to each journal row after
the Cursor:

1. at most ``settings.window_limit`` rows (lineage-only rows count: they are Journal
   positions of the Window);
2. a lineage-only row is inside the interval but gets no evidence id, no evidence text
   and no token estimate, and is never serialised;
3. an eligible Source over a complexity ceiling (:func:`check_complexity`, or its
   canonical evidence text over MAX_SOURCE_CHARS) ends the prefix before it; when no
   row precedes it in this Window, the result is a :class:`WindowRejection`;
4. the eligible Sources' estimated tokens stay within :func:`window_token_budget` and
   their evidence characters within MAX_WINDOW_CHARS; the Source that would pass
   either stays for the next Window;
5. the first eligible Source over the token budget alone is a single-Source Window
   (``oversized``; lineage-only rows before it stay in the interval): the Window ends
   with it, and its stage requests use :func:`fragments`.
"""

from __future__ import annotations

import json
from bisect import bisect_right
from collections.abc import Sequence
from itertools import accumulate
from typing import Any

import attrs

from powercontext.core.canonical import canonical_dumps, sort_source_refs
from powercontext.core.errors import IntegrityError, InvalidInputError
from powercontext.core.models import Source, SourceRef
from powercontext.core.topic.processing import (
    CODE_COMPLEXITY,
    MAX_DEPTH,
    MAX_SOURCE_CHARS,
    MAX_VISITED_VALUES,
    MAX_WINDOW_CHARS,
    JournalEntry,
    ProcessingSettings,
)

__all__ = [
    "BYTES_PER_TOKEN",
    "MESSAGE_OVERHEAD_TOKENS",
    "Fragment",
    "Window",
    "WindowRejection",
    "WindowSource",
    "check_complexity",
    "check_value_complexity",
    "escaped_tokens",
    "estimate_tokens",
    "evidence_text",
    "fragments",
    "projected_evidence",
    "select_window",
    "source_projection",
    "window_token_budget",
]

#: Added once per message/part by :func:`estimate_tokens` (role, framing).
MESSAGE_OVERHEAD_TOKENS = 8
#: UTF-8 bytes per estimated token (rounded up per text).
BYTES_PER_TOKEN: int = 3  # annotated: the secret scanner reads "X_TOKEN = 3" as a credential


def estimate_tokens(text: str) -> int:
    """A conservative token estimate of one text part: ``ceil(utf8_bytes / 3) + 8``
    (TOPIC-MEMORY.md, "Token estimates"; no tokenizer is available at run time). A lone
    surrogate counts as its 3 surrogate-escape bytes.

    Margin (property-tested in tests/properties/test_topic_window_props.py): for every
    text the estimate is at least the BPE-ish reference ``ceil(utf8_bytes / 4)`` and at
    least one third of the word-and-punctuation count (each run of word characters and
    each other non-space character counted once; a byte-level BPE never needs more
    tokens than UTF-8 bytes, and an estimate of bytes / 3 is a third of that worst
    case); on the benchmark prose (LoCoMo turns, the bench Topic details and summaries)
    it is at least the full word-and-punctuation count and the all-MiniLM-L6-v2
    WordPiece count, and on those turns' canonical evidence JSON at least 0.9 of the
    word-and-punctuation count (0.85 of WordPiece: both count every JSON punctuation
    mark as its own token, which byte-level BPE merges)."""
    return -(-len(text.encode("utf-8", "surrogatepass")) // BYTES_PER_TOKEN) \
        + MESSAGE_OVERHEAD_TOKENS


def window_token_budget(settings: ProcessingSettings) -> int:
    """80 percent of ``settings.context_window_tokens`` (floor), in estimated tokens:
    the most the eligible Sources of one Window may estimate together (125,000 ->
    100,000)."""
    return settings.context_window_tokens * 4 // 5


def source_projection(source: Source) -> dict[str, Any]:
    """The plain JSON value the model reads for one Source: ``{"kind", "content",
    "uri" (None when absent), "metadata": {key: value}}``."""
    return {"kind": source.kind, "content": source.content, "uri": source.uri,
            "metadata": dict(source.metadata)}


def check_value_complexity(value: Any, *, max_values: int = MAX_VISITED_VALUES,
                           max_depth: int = MAX_DEPTH,
                           max_chars: int = MAX_SOURCE_CHARS) -> str | None:
    """None when the plain JSON ``value`` (dict / list / tuple / scalars) is within the
    ceilings, else a reason naming the ceiling (never any of the text). Counted without
    serialising, iteratively (no recursion), stopping at the first ceiling passed:

    - values: every value visited counts 1 (the root, each container element and each
      object member's value) and every object key counts 1; more than ``max_values``
      is over;
    - depth: the root container is at depth 1, a container inside it at depth 2, ...;
      a scalar adds none; a container at a depth over ``max_depth`` is over;
    - characters: code points of every string, object keys included; more than
      ``max_chars`` is over.

    A container whose members alone would pass the value ceiling is refused before
    any member is visited."""
    visited = 0
    chars = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        visited += 1
        if visited > max_values:
            return f"more than {max_values} values and keys"
        if isinstance(item, str):
            chars += len(item)
        elif isinstance(item, dict | list | tuple):
            if depth > max_depth:
                return f"nested deeper than {max_depth}"
            members = len(item) * (2 if isinstance(item, dict) else 1)
            if visited + len(stack) + members > max_values:
                return f"more than {max_values} values and keys"
            if isinstance(item, dict):
                for key, member in item.items():
                    visited += 1
                    chars += len(key) if isinstance(key, str) else 0
                    stack.append((member, depth + 1))
            else:
                stack.extend((member, depth + 1) for member in reversed(item))
        if chars > max_chars:
            return f"more than {max_chars} text characters"
    return None


def check_complexity(source: Source) -> str | None:
    """None when the Source is within the ceilings, else a reason (no Source text in
    it). Visits the Source's projection value (:func:`source_projection`: kind,
    content, uri, metadata keys and values, and the projection's own keys) WITHOUT
    serialising it first, stopping as soon as a ceiling is passed: more than
    MAX_VISITED_VALUES values/keys, depth over MAX_DEPTH, more than MAX_SOURCE_CHARS
    text characters (metadata included); see :func:`check_value_complexity`. A
    Source's metadata is flat string pairs, so its projection is at depth 2."""
    return check_value_complexity(source_projection(source))


def evidence_text(source: Source) -> str:
    """The canonical evidence text the model reads for one Source: RFC 8785 JSON of
    ``{"kind", "content", "uri", "metadata": {k: v}}`` (uri null when absent) as str.
    Only called after :func:`check_complexity` passed. InvalidInputError (field
    ``source``) when RFC 8785 cannot carry a value (a stored Source always can)."""
    return canonical_dumps(source_projection(source), "source").decode("utf-8")


def projected_evidence(source: Source) -> tuple[str | None, str]:
    """``(None, evidence text)`` when Topic processing can read ``source``, else
    ``(reason, "")``: :func:`check_complexity` first (nothing serialised when it is
    over), then the canonical evidence text (:func:`evidence_text`, kind, uri, metadata
    keys and JSON escaping included) must be at most MAX_SOURCE_CHARS characters. The
    reason holds no Source text."""
    reason = check_complexity(source)
    if reason is not None:
        return reason, ""
    text = evidence_text(source)
    if len(text) > MAX_SOURCE_CHARS:
        return f"canonical evidence over {MAX_SOURCE_CHARS} characters", ""
    return None, text


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

    @property
    def tokens(self) -> int:
        """The eligible Sources' estimated tokens together."""
        return sum(s.tokens for s in self.sources)

    def refs(self, evidence_ids: Sequence[object], field: str) -> tuple[SourceRef, ...]:
        """The exact SourceRefs of model-returned ``evidence_ids``, sorted by
        (UTF-8 source_id, content_hash). InvalidInputError naming ``field`` for a
        non-list, an empty list, a non-string, an unknown id (not of the form ``s<n>``),
        an out-of-Window id (``s<n>`` that this Window did not give), or a duplicate
        (Topic Memory RFC, "Topic evidence and Source lineage")."""
        if isinstance(evidence_ids, str | bytes) or not isinstance(evidence_ids, Sequence):
            raise InvalidInputError(field, "must be a list of evidence ids")
        if not evidence_ids:
            raise InvalidInputError(field, "must name at least one evidence id")
        by_id = {s.evidence_id: s.ref for s in self.sources}
        seen: set[str] = set()
        for i, eid in enumerate(evidence_ids):
            if not isinstance(eid, str):
                raise InvalidInputError(f"{field}[{i}]", "must be a string evidence id")
            if eid in seen:
                raise InvalidInputError(f"{field}[{i}]", f"duplicate evidence id {eid!r}")
            seen.add(eid)
            if eid not in by_id:
                shaped = eid[:1] == "s" and eid[1:].isascii() and eid[1:].isdigit()
                what = "is not in this Window" if shaped else "is not an evidence id"
                raise InvalidInputError(f"{field}[{i}]", f"{eid[:40]!r} {what}")
        return sort_source_refs(by_id[eid] for eid in seen)


@attrs.frozen
class WindowRejection:
    """The earliest Source after the Cursor cannot be projected (its complexity is over
    a ceiling): processing of the Scope stops at ``position`` with ``code``
    (``source_complexity_limit``), persisted by the Worker."""

    scope_id: str
    position: int
    code: str
    reason: str


def _check_entries(entries: Sequence[JournalEntry], after: int) -> None:
    scope = entries[0].scope_id
    for i, entry in enumerate(entries):
        if entry.position != after + 1 + i or entry.scope_id != scope:
            raise IntegrityError(
                f"journal rows of Scope {scope!r} after {after} are not contiguous: row "
                f"{i} is position {entry.position} of Scope {entry.scope_id!r}")


def select_window(entries: Sequence[JournalEntry], after: int,
                  settings: ProcessingSettings) -> Window | WindowRejection | None:
    """The Window after Cursor ``after`` from ``entries`` (the Scope's journal rows
    after it, ascending and contiguous from ``after + 1``; at most
    ``settings.window_limit`` are used): the largest prefix within the Source limit,
    the Window token budget and MAX_WINDOW_CHARS. A Source that would pass a budget
    stays for the next Window; a first Source over the token budget alone becomes a
    single-Source Window (``oversized``). A Source over a complexity ceiling ends the
    prefix before it; when it is the first, the result is a WindowRejection. None when
    ``entries`` is empty. The module docstring lists the rules in order.
    IntegrityError when ``entries`` are not contiguous from ``after + 1`` in one
    Scope. Each eligible Source is serialised once, only after its complexity check
    passed; rows after the Window's end are not looked at."""
    if not entries:
        return None
    _check_entries(entries, after)
    scope = entries[0].scope_id
    budget = window_token_budget(settings)
    chosen: list[WindowSource] = []
    through = after
    tokens = chars = 0
    oversized = False
    for entry in entries[:settings.window_limit]:
        if entry.lineage_only:
            through = entry.position
            continue
        reason, text = projected_evidence(entry.source)
        if reason is not None:
            if through == after:
                return WindowRejection(scope, entry.position, CODE_COMPLEXITY, reason)
            break
        cost = estimate_tokens(text)
        if not chosen and cost > budget:
            oversized = True
        elif tokens + cost > budget or chars + len(text) > MAX_WINDOW_CHARS:
            break
        chosen.append(WindowSource(entry, f"s{len(chosen) + 1}", text, cost))
        tokens += cost
        chars += len(text)
        through = entry.position
        if oversized:
            break
    return Window(scope, after, through, tuple(chosen), oversized)


@attrs.frozen
class Fragment:
    """A contiguous piece ``text[start:end]`` of one Source's evidence text (code-point
    offsets into it), carrying that Source's evidence id."""

    evidence_id: str
    start: int
    end: int
    text: str


def _escaped_bytes(char: str) -> int:
    # The larger of the two JSON escapings of one code point, in UTF-8 bytes, quotes
    # excluded (ensure_ascii=True is never smaller; both are computed to say so).
    loose = len(json.dumps(char, ensure_ascii=False).encode("utf-8", "surrogatepass")) - 2
    strict = len(json.dumps(char, ensure_ascii=True)) - 2
    return max(loose, strict)


class _CostTable(dict[int, str]):
    # str.translate table, filled per call (core keeps no process-global cache): code
    # point -> chr(its escaped bytes), at most 12.
    def __missing__(self, code: int) -> str:
        value = self[code] = chr(_escaped_bytes(chr(code)))
        return value


def escaped_tokens(text: str) -> int:
    """:func:`estimate_tokens` of ``text`` as a JSON string inside the stage input:
    the larger of ``json.dumps(text, ensure_ascii=False)`` and ``ensure_ascii=True``."""
    return max(estimate_tokens(json.dumps(text, ensure_ascii=False)),
               estimate_tokens(json.dumps(text, ensure_ascii=True)))


def _pair_at(text: str, i: int) -> bool:
    # True when cutting before index i would split a high surrogate from its low one.
    return 0 < i < len(text) and "\ud800" <= text[i - 1] <= "\udbff" \
        and "\udc00" <= text[i] <= "\udfff"


def fragments(evidence_id: str, text: str, budget_tokens: int) -> tuple[Fragment, ...]:
    """Split ``text`` into contiguous fragments whose JSON-escaped form (as it appears
    inside the stage input, quotes included; the larger of ``ensure_ascii`` False and
    True, see :func:`escaped_tokens`) each estimate at most ``budget_tokens``; every
    character kept in order (the fragments' texts concatenate to ``text``; offsets are
    code points, ``end`` of one = ``start`` of the next). Cuts fall on code points and
    never between a high surrogate and the low surrogate after it (combining sequences
    may be cut). Greedy, so deterministic: each fragment is the longest that fits.
    ``()`` for an empty text. InvalidInputError (field ``budget_tokens``) when the
    budget cannot hold even one character (or one surrogate pair) of ``text``."""
    if isinstance(budget_tokens, bool) or not isinstance(budget_tokens, int):
        raise InvalidInputError("budget_tokens", "must be an integer")
    # ceil((b + 2) / 3) + 8 <= budget  <=>  b <= 3 * (budget - 8) - 2
    room = BYTES_PER_TOKEN * (budget_tokens - MESSAGE_OVERHEAD_TOKENS) - 2
    costs = text.translate(_CostTable()).encode("latin-1")  # one byte per code point
    prefix = [0, *accumulate(costs)]
    out: list[Fragment] = []
    start = 0
    while start < len(text):
        end = bisect_right(prefix, prefix[start] + room) - 1
        if end < len(text) and _pair_at(text, end):
            end -= 1
        if end <= start:
            raise InvalidInputError(
                "budget_tokens", f"{budget_tokens} tokens cannot hold one character of "
                f"the text at offset {start} as JSON")
        out.append(Fragment(evidence_id, start, end, text[start:end]))
        start = end
    return tuple(out)
