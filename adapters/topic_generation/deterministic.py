"""The ``deterministic`` TopicGenerationModel: extractive, no model, byte-for-byte
reproducible (TOPIC-MEMORY.md, "Providers": for tests, offline use and benchmarks; used
only when configured by name, and start-up logs that it is in use).

It reads the stage input exactly as a real provider would (``StageRequest.input_json``)
and answers with JSON text of the stage's schema (:mod:`powercontext.core.topic.
stages`), so its output passes the same checks as any model's. No clock, no
randomness, no network: the same request gives the same bytes.

- ``probe``: one Probe per Source (or fragment), the first distinct words of its
  content (at most 8), citing that Source.
- ``evolve``: Sources are grouped by their title: the first Markdown heading of the
  content, else its first non-empty line. A group whose title casefold-equals a history
  Topic's title UPDATEs that Topic (detail = the old detail, then the group's texts not
  already in it; bounded), or is a NOOP (null) when nothing is new; any other group
  CREATEs a Topic (summary = the first sentences of its first Source's body, detail =
  the group's texts joined by blank lines). A Detail keeps as many whole texts as its
  limit holds and cites only those (a first text alone over it is cut at a block
  boundary: blank line, else line, else space); titles and summaries are cut the same
  way. That is the provider's own choice, as a model's would be; the server never
  truncates.
"""

from __future__ import annotations

import json
import re
import unicodedata
from typing import Any, Final, final

from powercontext.core.errors import InvalidInputError
from powercontext.core.topic.content import MAX_DETAIL_CHARS, MAX_SUMMARY_CHARS, MAX_TITLE_CHARS
from powercontext.core.topic.generation import StageRequest, StageResponse, StageUsage

__all__ = ["DETERMINISTIC_NAME", "DeterministicTopicModel"]

DETERMINISTIC_NAME: Final = "deterministic"
_PROBE_WORDS: Final = 8
_MAX_PROBES: Final = 32
_QUERY_CHARS: Final = 512
_SUMMARY_SENTENCES: Final = 2
_WORD = re.compile(r"\w+")
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


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


def _title(content: str) -> str:
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


@final
class DeterministicTopicModel:
    """``TopicGenerationModel`` ``deterministic`` (model ``deterministic``).

    ``context_window_tokens`` (default 125,000) is what the server budgets with;
    ``max_requests`` (default 1) what each call is reserved for. :meth:`generate`
    answers one ``probe`` or ``evolve`` request with ``requests=1`` and usage equal to
    the request's estimate (input) and the output's length in characters / 3
    (output); it makes no network request. InvalidInputError (field ``request``) for
    another stage, a request over the context window, or input that is not the
    server's stage input."""

    def __init__(self, context_window_tokens: int = 125_000, max_requests: int = 1) -> None:
        if isinstance(context_window_tokens, bool) or not isinstance(
                context_window_tokens, int) or context_window_tokens < 1:
            raise InvalidInputError("context_window_tokens", "must be an integer >= 1")
        if isinstance(max_requests, bool) or not isinstance(max_requests, int) or not (
                1 <= max_requests <= 16):
            raise InvalidInputError("max_requests", "must be an integer in 1..16")
        self._context = context_window_tokens
        self._max_requests = max_requests

    @property
    def name(self) -> str:
        return DETERMINISTIC_NAME

    @property
    def model(self) -> str:
        return DETERMINISTIC_NAME

    @property
    def context_window_tokens(self) -> int:
        return self._context

    @property
    def max_requests(self) -> int:
        return self._max_requests

    async def generate(self, request: StageRequest) -> StageResponse:
        if not isinstance(request, StageRequest):
            raise InvalidInputError("request", "must be a StageRequest")
        if request.estimated_tokens > self._context:
            raise InvalidInputError(
                "request", f"estimates {request.estimated_tokens} tokens; the context "
                f"window is {self._context}")
        try:
            data = json.loads(request.input_json)
            sources = data["sources"]
        except (ValueError, KeyError, TypeError):
            raise InvalidInputError("request", "input_json is not a stage input") from None
        if request.stage == "probe":
            out: dict[str, Any] = self._probe(sources)
        elif request.stage == "evolve":
            out = self._evolve(sources, data.get("history", []))
        else:
            raise InvalidInputError("request", f"stage {request.stage!r} is not served by the "
                                    "deterministic provider")
        text = json.dumps(out, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
        usage = StageUsage(input_tokens=request.estimated_tokens - request.max_output_tokens,
                           output_tokens=-(-len(text) // 3))
        return StageResponse(text, usage, 1)

    @staticmethod
    def _probe(sources: list[dict[str, Any]]) -> dict[str, Any]:
        probes: list[dict[str, Any]] = []
        for item in sources:
            query = _probe_query(_content(item))
            if query and len(probes) < _MAX_PROBES:
                probes.append({"query": query, "evidence_ids": [item["id"]]})
        return {"probes": probes}

    @staticmethod
    def _evolve(sources: list[dict[str, Any]],
                history: list[dict[str, Any]]) -> dict[str, Any]:
        groups: dict[str, tuple[str, list[str], list[str]]] = {}
        for item in sources:
            content = _nfc(_content(item)).strip()
            if not content:
                continue
            title = _title(content)
            if not title:
                continue
            key = title.casefold()
            if key not in groups:
                groups[key] = (title, [], [])
            groups[key][1].append(item["id"])
            groups[key][2].append(content)
        slots: dict[str, Any] = {h["handle"]: None for h in history}
        by_title: dict[str, Any] = {}
        for h in history:
            by_title.setdefault(h["title"].casefold(), h)
        new = []
        for key, (title, ids, texts) in groups.items():
            target = by_title.get(key)
            if target is None:
                detail, kept = _pack("", ids, texts)
                if detail:
                    new.append({"title": title, "summary": _summary(texts[0], title),
                                "detail": detail, "evidence_ids": kept})
                continue
            old = target["detail"]
            fresh = [(i, t) for i, t in zip(ids, texts, strict=True) if t not in old]
            detail, kept = _pack(old, [i for i, _ in fresh], [t for _, t in fresh])
            if kept:
                slots[target["handle"]] = {"title": target["title"],
                                           "summary": target["summary"],
                                           "detail": detail, "evidence_ids": kept}
        return {"history": slots, "new": new}
