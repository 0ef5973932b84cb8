"""Text helpers of the ``deterministic`` Topic provider (:mod:`.deterministic`): Source
content out of evidence text and fragments, cuts at block boundaries, titles (Markdown
heading, first line, or the subject words of a chat), summaries, Probe queries and
TOPIC items sized to a limit. Pure: no I/O, no clock, no randomness."""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Callable, Sequence
from typing import Any, Final

from powercontext.core import canonical
from powercontext.core.topic.content import MAX_DETAIL_CHARS, MAX_SUMMARY_CHARS, MAX_TITLE_CHARS

_PROBE_WORDS: Final = 8
_MAX_PROBES: Final = 32
_QUERY_CHARS: Final = 512
_SUMMARY_SENTENCES: Final = 2
_WORD = re.compile(r"\w+")
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
#: A chat turn line: optional ``[when]``, a speaker (1-40 characters, no colon), ``": "``.
_TURN = re.compile(r"^\s*(\[[^\]\n]{1,80}\]\s*)?([^\s:\[\]][^:\n]{0,39}):\s+(\S.*)$")
_TITLE_WORDS: Final = 4
_STOP_TEXT: Final = """
about above after again against all also and any are aren because been before being
below between both but can cannot could did didn does doesn doing don down during each
even ever few for from further get got had has have having her here hers herself him
himself his how i'm into its itself just let like lot made make many more most much must
myself nor not now off once only other our ours ourselves out over own really same say
she should since some still such than that the their theirs them themselves then there
these they thing things think this those though through too under until very want was
wasn way well were weren what when where which while who whom why will with won would
yeah yes you your yours yourself yourselves going know good great thanks thank sure
definitely totally awesome wow glad hey okay one two lots feel feeling see went come
came time day new happy love cool nice amazing lol also back yep sounds something
anything everything always never maybe pretty kind sort tell told said ask asked
last others taking shared
""".replace("i'm ", "")
_STOP_WORDS: Final = frozenset(_STOP_TEXT.split())
_JSON_ESCAPE = re.compile(r'\\(["\\/bfnrt]|u[0-9a-fA-F]{4})')
_ESCAPES: Final = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n",
                   "r": "\r", "t": "\t"}
_EVIDENCE_HEAD: Final = '{"content":"'
_EVIDENCE_TAIL: Final = '","kind":"'


def _nfc(text: str) -> str:
    return unicodedata.normalize("NFC", text)


def _content(item: dict[str, Any]) -> str:
    """The Source content inside one input item's evidence text (RFC 8785 JSON of kind,
    content, uri, metadata); a fragment's raw text when it is not whole JSON. NUL
    characters are left out: Topic text cannot hold them, and they carry nothing a
    reader needs."""
    text = item.get("text", "")
    try:
        value = json.loads(text)
    except ValueError:
        return str(text).replace("\x00", "")
    if isinstance(value, dict) and isinstance(value.get("content"), str):
        return str(value["content"]).replace("\x00", "")
    return str(text).replace("\x00", "")


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


def _pack(old: str, ids: list[str], texts: list[str]) -> tuple[str, list[str]]:
    """``old`` then the texts (blank line between), as many whole texts as the Detail
    limit holds (the first cut at a block boundary when it alone is over), and the ids
    of the texts kept."""
    detail, kept = old, list[str]()
    for i, t in zip(ids, texts, strict=True):
        joined = f"{detail}\n\n{t}" if detail else t
        if len(_nfc(joined).strip()) > MAX_DETAIL_CHARS:
            if not kept and not old:
                return _cut(joined, MAX_DETAIL_CHARS), [i]
            break
        detail, kept = joined, [*kept, i]
    return _cut(detail, MAX_DETAIL_CHARS), kept


def _chat_turns(content: str) -> list[tuple[str, str]] | None:
    """``(speaker, text)`` of each turn when ``content`` is chat-like, else None.
    Chat-like: no Markdown heading and either two or more ``"[when] Name: text"`` turn
    lines (the ``[when]`` optional) with every non-empty line but the first a turn (a
    first line may be a session header), or one single dated turn. Anything else
    (Markdown, code, logs, one ``"Key: value"`` line) keeps the first-line rules."""
    lines = [line for line in content.splitlines() if line.strip()]
    if not lines or any(_HEADING.match(line) for line in lines):
        return None
    matches = [_TURN.match(line) for line in lines]
    turns = [(m.group(2).strip(), m.group(3).strip()) for m in matches if m]
    if len(lines) == 1:
        m = matches[0]
        return turns if m and m.group(1) else None
    if len(turns) >= 2 and all(matches[1:]):
        return turns
    return None


def _keywords(turns: list[tuple[str, str]], limit: int) -> list[str]:
    """The ``limit`` most frequent content words of the turns' texts (3+ characters,
    not a number, not a stop word, not a speaker's name nor, capitalised, the start of
    one: "Mel" of "Melanie" but not "car" of "Caroline"), ties by first appearance;
    each in its first-seen spelling."""
    names = {w.casefold() for speaker, _ in turns for w in _WORD.findall(speaker)}

    def is_name(word: str, key: str) -> bool:  # a speaker's name or its short form "Mel"
        return key in names or (word[:1].isupper() and any(n.startswith(key) for n in names))

    count: dict[str, int] = {}
    spelling: dict[str, str] = {}
    for _, text in turns:
        for w in _WORD.findall(text):
            key = w.casefold()
            if len(key) < 3 or key.isdigit() or key in _STOP_WORDS or is_name(w, key):
                continue
            count[key] = count.get(key, 0) + 1
            spelling.setdefault(key, w)
    order = {k: i for i, k in enumerate(count)}
    best = sorted(count, key=lambda k: (-count[k], order[k]))[:limit]
    return [spelling[k] for k in best]


def _title(content: str) -> str:
    turns = _chat_turns(content)
    if turns is not None:
        words = _keywords(turns, _TITLE_WORDS)
        if words:
            return _cut(", ".join(words), MAX_TITLE_CHARS)
    first = ""
    for line in content.splitlines():
        if not line.strip():
            continue
        m = _HEADING.match(line)
        if m and m.group(1).strip():
            return _cut(m.group(1), MAX_TITLE_CHARS)
        if not first:
            first = line
    return _cut(first or content, MAX_TITLE_CHARS)


def _summary(content: str, title: str) -> str:
    body = " ".join(line.strip() for line in content.splitlines()
                    if line.strip() and not _HEADING.match(line))
    sentences = _SENTENCE_END.split(body) if body else []
    summary = " ".join(sentences[:_SUMMARY_SENTENCES])
    return _cut(summary, MAX_SUMMARY_CHARS) or title


def _probe_query(content: str) -> str:
    turns = _chat_turns(content)
    if turns is not None:
        chat = _keywords(turns, _PROBE_WORDS)
        if chat:
            return _cut(" ".join(chat), _QUERY_CHARS)
    words: list[str] = []
    seen: set[str] = set()
    for w in _WORD.findall(content):
        key = w.casefold()
        if key not in seen:
            seen.add(key)
            words.append(w)
        if len(words) == _PROBE_WORDS:
            break
    return _cut(" ".join(words), _QUERY_CHARS)


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


def _text_of(item: dict[str, Any]) -> str:
    """A stage input's Source item as content: whole Sources through :func:`_content`,
    fragments (``start``/``end`` given) through :func:`_fragment_content`."""
    if "start" in item:
        return _fragment_content(str(item.get("text", "")))
    return _content(item)


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


def _fold(old: str, ids: Sequence[str], texts: Sequence[str]
          ) -> tuple[str, list[str], list[str]]:
    """``old`` then the texts not already in it (:func:`_pack`): the detail, the ids of
    the texts it added, and the ids of the texts it already held (folded, no text)."""
    fresh = [(i, t) for i, t in zip(ids, texts, strict=True) if t not in old]
    held = [i for i, t in zip(ids, texts, strict=True) if t in old]
    detail, kept = _pack(old, [i for i, _ in fresh], [t for _, t in fresh])
    return detail, kept, held
