"""The Detail chunk policy ``topic-chunks-v1`` (Topic Memory RFC, "Detail chunks and
deployment-enabled retrieval channels", items 1-4).

1. Semantic blocks: a fenced code block (```` ``` ```` or ``~~~``, kept whole), a
   Markdown ATX heading line, a list item (with its continuation lines), a paragraph
   (lines up to a blank line). Blank lines stay with the block before them, so blocks
   tile the Detail.
2. A block longer than :data:`MAX_CHUNK_CHARS` is cut at sentence ends (lines for code);
   a piece still longer is a *windowed span*: fixed windows of MAX_CHUNK_CHARS that
   overlap by :data:`OVERLAP_CHARS` (the only place chunks overlap).
3. Pieces are packed in order: a chunk takes the next piece while it is shorter than
   :data:`TARGET_CHARS` and stays within MAX_CHUNK_CHARS; a heading starts a new chunk
   once the current one holds :data:`TAIL_CHARS`. A last chunk (before a windowed span
   or at the end) shorter than TAIL_CHARS merges into the chunk before it when both fit.
4. If that gives more than :data:`MAX_CHUNKS` chunks (adversarial Markdown), the whole
   Detail is cut into the same overlapping windows instead.

Offsets are code points of the (NFC) Detail; ``chunk.text == detail[start:end]``;
chunks ascend by start and end; their union is exactly ``[0, len(detail))``; no chunk
boundary falls inside a CRLF pair or a surrogate pair. Time is linear in the length.

The chunk count bound (a property test holds it). A window boundary moves back by at
most one code point (never inside CRLF or a surrogate pair), so consecutive window
starts advance by at least ``W - O - 2 = 2048 - 256 - 2 = 1790`` code points, and a
window that starts within ``W`` of the end is the last. For a Detail of
``L <= MAX_DETAIL_CHARS = 32768`` code points the fallback makes at most
``1 + ceil((L - W) / 1790) = 1 + ceil(30720 / 1790) = 1 + 18 = 19`` windows, and the
structural result is used only when it has at most MAX_CHUNKS = 48. So no valid Detail
has more than 48 chunks. 48 x 80 (the per-channel candidate budget at limit 20) = 3840
neighbours stays within sqlite-vec's k <= 4096.

The full-text column bound. Every analyzer version (v1, v1-porter, v2) writes at most
:data:`FTS_CHARS_PER_CODE_POINT` = 26 ASCII characters per code point of NFC input
(a Detail is NFC, and no slice of it holds a character NFC would expand): the worst
is a run of single-character clusters of a script written without spaces (Thai): per
cluster ``g_`` + 6 hex (8),
its share of one ``gb_<6>_<6>`` bigram (16) and two spaces, 26; a cluster of ``c``
code points has at most ``6 + 8(c - 1)`` hex digits, which appear in one unigram and
two bigrams, so it costs ``3h + 8 <= 26c``. A CJK character gives at most ``u_<5>`` +
``b_<5>_<5>`` + 2 = 22; words, joined identifiers and hashed long tokens give less,
case-folding expansions included (measured over every code point in several patterns).
v2's compatibility folding stays within it because it keeps the characters whose
compatibility form is several CJK, Thai or Lao characters, a phrase or a letter with two
marks (``core/analyzer_fold.KEPT``); its other foldings, measured the same way, give at
most 22.
Input that is not NFC can exceed it (``"\u0e01\u0f73"`` repeated: about 31, since NFC
splits U+0F73 into two marks), which is why the bound is stated for NFC text. So a
chunk's fts text is at most :data:`MAX_CHUNK_FTS_CHARS` = 26 x 2048 = 53,248
characters (bytes, ASCII): the OceanBase column is assumed to be ``TEXT`` (65,535
bytes).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from powercontext.core.errors import InvalidInputError
from powercontext.core.topic.models import DetailChunk

__all__ = [
    "CHUNK_POLICY_VERSION",
    "FTS_CHARS_PER_CODE_POINT",
    "FTS_COLUMN_BYTES",
    "MAX_CHUNKS",
    "MAX_CHUNK_CHARS",
    "MAX_CHUNK_FTS_CHARS",
    "OVERLAP_CHARS",
    "TAIL_CHARS",
    "TARGET_CHARS",
    "chunk_detail",
    "max_fts_chars",
    "window_count_bound",
]

CHUNK_POLICY_VERSION = "topic-chunks-v1"
#: Hard chunk count per Topic: MAX_CHUNKS x the per-channel candidate count (80 at
#: limit 20) stays within vec0's k <= 4096.
MAX_CHUNKS = 48
#: Code points a packed chunk aims for.
TARGET_CHARS = 1024
#: Code points a chunk never exceeds.
MAX_CHUNK_CHARS = 2048
#: An undersized tail: shorter than this it merges backwards when it fits.
TAIL_CHARS = 256
#: Overlap of consecutive fixed windows (code points), 1/8 of a window.
OVERLAP_CHARS = 256
#: Worst-case Analyzer v1 text characters per code point of NFC input (module docstring).
FTS_CHARS_PER_CODE_POINT = 26
#: Worst-case length of a chunk's fts text (ASCII characters = bytes).
MAX_CHUNK_FTS_CHARS = FTS_CHARS_PER_CODE_POINT * MAX_CHUNK_CHARS
#: The full-text column size this policy assumes (OceanBase ``TEXT``, bytes).
FTS_COLUMN_BYTES = 65535

_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})")
_HEADING = re.compile(r" {0,3}#{1,6}(?:[ \t]|\r|\n|$)")
_ITEM = re.compile(r"[ \t]*(?:[-*+]|\d{1,9}[.)])(?:[ \t]|\r|\n|$)")
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+")
#: A sentence ends after terminal punctuation (and closing quotes or brackets) followed
#: by whitespace, or right after an ideographic terminator. Each alternative starts only
#: at the first character of its run (the lookbehinds) and never backtracks (possessive
#: quantifiers), so a run of a million dots is scanned once, not a million times.
_SENTENCE_END = re.compile(
    r"(?<![.!?])[.!?]++[\"'\u2019\u201d)\]]*+\s++"
    r"|(?<![\u3002\uff01\uff1f\uff0e])[\u3002\uff01\uff1f\uff0e]++\s*+")
_LOW, _HIGH = range(0xDC00, 0xE000), range(0xD800, 0xDC00)


def max_fts_chars(code_points: int) -> int:
    """Worst-case length of the Analyzer v1 text of ``code_points`` code points of NFC
    text (module docstring)."""
    return FTS_CHARS_PER_CODE_POINT * code_points


def window_count_bound(length: int) -> int:
    """The most windows the fallback makes for a Detail of ``length`` code points
    (module docstring): 1 up to MAX_CHUNK_CHARS, then one per 1,790 more."""
    step = MAX_CHUNK_CHARS - OVERLAP_CHARS - 2
    return 1 if length <= MAX_CHUNK_CHARS else 1 + -(-(length - MAX_CHUNK_CHARS) // step)


def _safe(text: str, i: int) -> int:
    """``i`` moved back by one when it would split a CRLF or a surrogate pair."""
    if 0 < i < len(text):
        a, b = text[i - 1], text[i]
        if (a == "\r" and b == "\n") or (ord(a) in _HIGH and ord(b) in _LOW):
            return i - 1
    return i


def _windows(text: str, start: int, end: int) -> Iterator[tuple[int, int]]:
    """Fixed overlapping windows over ``[start, end)``: ascending, covering it."""
    s = start
    while True:
        if end - s <= MAX_CHUNK_CHARS:
            yield s, end
            return
        e = _safe(text, s + MAX_CHUNK_CHARS)
        yield s, e
        s = _safe(text, e - OVERLAP_CHARS)


def _blocks(text: str) -> Iterator[tuple[int, int, str]]:
    """Semantic blocks ``(start, end, kind)`` tiling ``text``; kind is ``heading``,
    ``code``, ``item`` or ``para``. Blank lines stay with the block before them."""
    start, kind, fence = 0, "", ""
    pos, prev_blank, closed = 0, False, False
    for m in _LINE.finditer(text):
        line = m.group()
        if fence:  # inside a fenced code block: only its closing fence ends it
            stripped = line.strip()
            if stripped.startswith(fence) and not stripped.strip(fence[0]):
                fence, closed = "", True
            pos = m.end()
            continue
        blank = not line.strip()
        opening = _FENCE.match(line)
        new = ""
        if opening:
            new = "code"
        elif _HEADING.match(line):
            new = "heading"
        elif _ITEM.match(line):
            new = "item"
        elif not blank and (kind in ("", "heading") or closed or (
                prev_blank and not (kind == "item" and line[0] in " \t"))):
            new = "para"
        if new:
            if pos > start:
                yield start, pos, kind
            start, kind, closed = pos, new, False
            if opening:
                fence = opening.group(1)
        prev_blank = blank
        pos = m.end()
    if pos > start:
        yield start, pos, kind or "para"


def _sentences(text: str, start: int, end: int, code: bool) -> Iterator[tuple[int, int]]:
    """Pieces of an over-long block: sentences (lines for code), tiling it."""
    s = start
    pattern = _LINE if code else _SENTENCE_END
    for m in pattern.finditer(text, start, end):
        e = _safe(text, m.end())
        if s < e < end:
            yield s, e
            s = e
    if end > s:
        yield s, end


def _pieces(text: str) -> Iterator[tuple[int, int, str]]:
    """Packable pieces ``(start, end, kind)`` (kind ``window`` for a windowed span,
    which is packed alone and then cut into windows)."""
    for start, end, kind in _blocks(text):
        if end - start <= MAX_CHUNK_CHARS:
            yield start, end, kind
            continue
        for s, e in _sentences(text, start, end, kind == "code"):
            yield s, e, "window" if e - s > MAX_CHUNK_CHARS else kind


def _structural(text: str) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    run_start = 0  # index in ``out`` of the first chunk of the current packed run
    cur: list[int] | None = None  # [start, end] of the chunk being packed

    def close_run() -> None:
        nonlocal cur
        if cur is not None:
            out.append((cur[0], cur[1]))
            cur = None
        # merge an undersized tail backwards when both fit
        if len(out) - run_start >= 2:
            (ps, _), (ts, te) = out[-2], out[-1]
            if te - ts < TAIL_CHARS and te - ps <= MAX_CHUNK_CHARS:
                out[-2:] = [(ps, te)]

    for s, e, kind in _pieces(text):
        if len(out) > MAX_CHUNKS + 1:
            break  # the fallback will be used: stop early (linear time either way)
        if kind == "window":
            close_run()
            out.extend(_windows(text, s, e))
            run_start = len(out)
            continue
        if cur is None:
            cur = [s, e]
            continue
        size = cur[1] - cur[0]
        if (kind == "heading" and size >= TAIL_CHARS) or size >= TARGET_CHARS or (
                size + e - s > MAX_CHUNK_CHARS):
            out.append((cur[0], cur[1]))
            cur = [s, e]
        else:
            cur[1] = e
    close_run()
    return out


def chunk_detail(detail: str) -> tuple[DetailChunk, ...]:
    """The chunks of ``detail`` under :data:`CHUNK_POLICY_VERSION` (module docstring):
    deterministic, ascending, covering every code point, each at most
    :data:`MAX_CHUNK_CHARS` code points, at least one, and at most :data:`MAX_CHUNKS`
    for any Detail of at most ``MAX_DETAIL_CHARS`` code points (a longer string is
    still chunked, in at most :func:`window_count_bound` windows). InvalidInputError
    (field ``detail``) for a non-string or an empty string."""
    if not isinstance(detail, str):
        raise InvalidInputError("detail", f"must be a string, got {type(detail).__name__}")
    if not detail:
        raise InvalidInputError("detail", "is empty")
    spans = _structural(detail)
    if len(spans) > MAX_CHUNKS:
        spans = list(_windows(detail, 0, len(detail)))
    return tuple(DetailChunk(i, s, e, detail[s:e]) for i, (s, e) in enumerate(spans))
