"""Text helpers of the ``deterministic`` Topic provider (:mod:`.deterministic`): a
fragment's Source content, cuts at block boundaries, sizes and TOPIC items sized to a
limit (the temporary and reduce stages). Pure: no I/O, no clock, no randomness."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Sequence
from typing import Any, Final

from powercontext.core import canonical
from powercontext.core.topic.content import MAX_DETAIL_CHARS, MAX_SUMMARY_CHARS, MAX_TITLE_CHARS

_QUERY_CHARS: Final = 512
_JSON_ESCAPE = re.compile(r'\\(["\\/bfnrt]|u[0-9a-fA-F]{4})')
_ESCAPES: Final = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n",
                   "r": "\r", "t": "\t"}
_EVIDENCE_HEAD: Final = '{"content":"'
_EVIDENCE_TAIL: Final = '","kind":"'


def _nfc(text: str) -> str:
    return unicodedata.normalize("NFC", text)


def _cut(text: str, limit: int) -> str:
    """``text`` within ``limit`` code points, cut at the last block boundary (blank
    line), else line, else space, else character; trimmed; NFC."""
    text = _nfc(text).strip()
    while len(text) > limit:
        head = text[:limit]
        for sep in ("\n\n", "\n", " "):
            at = head.rfind(sep)
            if at > 0:
                head = head[:at]
                break
        text = _nfc(head).strip()
    return text


def _unescape(match: re.Match[str]) -> str:
    code = match.group(1)
    if code[0] == "u":
        char = chr(int(code[1:], 16))
        return "" if char == "\x00" or "\ud800" <= char <= "\udfff" else char
    return _ESCAPES[code]


def _fragment_content(text: str) -> str:
    """The Source content a fragment of its evidence text (RFC 8785 JSON of content,
    kind, metadata, uri: ``content`` first) shows: the JSON framing at either end and
    the string escapes undone, best effort (a cut escape stays as it is); NUL left
    out."""
    if text.startswith(_EVIDENCE_HEAD):
        text = text[len(_EVIDENCE_HEAD):]
    tail = text.rfind(_EVIDENCE_TAIL)
    if tail >= 0:
        text = text[:tail]
    if (len(text) - len(text.rstrip("\\"))) % 2:
        text = text[:-1]  # an escape cut at the fragment's end
    return _JSON_ESCAPE.sub(_unescape, text).replace("\x00", "")


def _size(value: Any) -> int:
    """UTF-8 bytes of ``value``'s canonical JSON: what the core's item estimate counts."""
    return len(canonical.canonical_dumps(value, "output"))


def _longest(text: str, ok: Callable[[str], bool]) -> str | None:
    """The longest :func:`_cut` of ``text`` (cut at a block boundary) that is non-empty
    and passes ``ok``; None when not even one character does. Binary search over the
    code-point limit (the cut is a prefix that grows with the limit)."""
    base = _nfc(text).strip()
    if base and ok(base):
        return base
    lo, hi, best = 1, len(base), None
    while lo <= hi:
        mid = (lo + hi) // 2
        cut = _cut(base[:mid + 1], mid)
        if cut and ok(cut):
            best, lo = cut, mid + 1
        else:
            hi = mid - 1
    return best


def _topic_item(title: str, summary: str, detail: str, ids: Sequence[str]) -> dict[str, Any]:
    return {"title": title, "summary": summary, "detail": detail, "evidence_ids": list(ids)}


def _fit_topic(title: str, summary: str, detail: str, ids: Sequence[str],
               max_chars: int, max_bytes: int | None = None) -> dict[str, Any] | None:
    """A TOPIC item of these fields whose text (title, summary and detail together) is
    at most ``max_chars`` code points and, when given, whose canonical JSON is at most
    ``max_bytes`` UTF-8 bytes: the detail cut first (block boundary), then the summary,
    then the title, each kept as long as it can be; None when not even one character of
    each fits."""
    title = _cut(title, MAX_TITLE_CHARS)
    summary = _cut(summary, MAX_SUMMARY_CHARS)
    detail = _cut(detail, MAX_DETAIL_CHARS)
    if not (title and summary and detail):
        return None

    def fits(t: str, s: str, d: str) -> bool:
        return len(t) + len(s) + len(d) <= max_chars and (
            max_bytes is None or _size(_topic_item(t, s, d, ids)) <= max_bytes)

    least = _cut(detail, 1)
    if not fits(title, summary, least):
        cut_summary = _longest(summary, lambda s: fits(title, s, least))
        if cut_summary is None:
            cut_title = _longest(title, lambda t: fits(t, least, least))
            if cut_title is None:
                return None
            title, cut_summary = cut_title, least
        summary = cut_summary
    kept = _longest(detail, lambda d: fits(title, summary, d))
    return None if kept is None else _topic_item(title, summary, kept, ids)


def _max_chars(data: dict[str, Any]) -> int:
    """The input's ``max_result_chars`` (a required integer >= 1)."""
    limit = data["max_result_chars"]
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise ValueError("max_result_chars")
    return limit


def _union(items: Sequence[dict[str, Any]]) -> list[str]:
    return list(dict.fromkeys(i for item in items for i in item.get("evidence_ids", ())))


