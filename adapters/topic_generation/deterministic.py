"""The ``deterministic`` TopicGenerationModel: extractive, no model, byte-for-byte
reproducible (TOPIC-MEMORY.md, "Providers": for tests, offline use and benchmarks; used
only when configured by name, and start-up logs that it is in use).

It reads the stage input exactly as a real provider would (``StageRequest.input_json``)
and answers with JSON text of the stage's schema (:mod:`powercontext.core.topic.
stages`), so its output passes the same checks as any model's. No clock, no
randomness, no network: the same request gives the same bytes, and no answer depends
on the order of the history handles (choices between Topics are made by their content).

How it reads a Source (kind, title, lead sentences, subject terms) is in
:mod:`._text`; how it writes a Topic (Markdown sections, the summary, which Topic a
Source belongs to, continuation parts) in :mod:`._topics`. The stages:

- ``probe``: per Source (or fragment) its title as one Probe and its subject words as
  another (short queries, so that the search's admission floor, two matched terms and a
  quarter of the query's, holds a match of a few words); a Source whose section alone
  needs more than one detail adds a Probe per part (``"<title> (part 2)"``).
- ``evolve`` (global): the Sources in order; each joins the Topic it belongs to (a
  history Topic or one begun in this Window: equal title, or half its subject terms),
  else begins one. A history Topic that gets a section is an UPDATE (its title kept,
  summary renewed, the section appended); what does not fit its detail continues in a
  new part, a CREATE ``"<title> (part N)"``. A Source whose text a Topic already holds
  adds nothing (it is not cited). A Window never gives more than the schema's 32 new
  Topics; Sources beyond them are not cited, and the server's report names them.
- ``plan``: a Probe with a ``found`` handle goes to that handle's UPDATE Item (the
  server's rule: Probes that found the same Topic share one Item); any other Probe to
  the UPDATE Item of the history Topic with its title, else to the Item of its
  Source's other Probes, else to a CREATE Item of its own (a part's Probe its own).
- ``evolve`` Item Evolver (``topic_item``): with a target, the target's title and the
  Sources' sections appended (the oldest blocks of the target left out, with a line
  saying so, when the detail would pass its limit: the new material is kept whole);
  without, a new Topic of the Sources (the part its focus names, else part 1).
- ``evolve`` final (``topic_item_final``): the same over the temporaries' details.
- ``temporary``: the Batch's title, summary and sections, as many whole as
  ``max_result_chars`` holds (a first one alone over it cut at a block boundary).
- ``reduce``: every position; evidence = the exact union of the items' ids. Probe: the
  queries joined and cut to fit; temporary: the first title and summary, the details
  joined and cut to fit (a singleton reduction must shrink).
- ``reconcile``: folds the candidates that belong to the target (or, with no target,
  to the first candidate) and fit its detail; the others stay as they are.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from typing import Any, Final, final

from powercontext.adapters.topic_generation import _topics as topics
from powercontext.adapters.topic_generation._extract import (
    _QUERY_CHARS,
    _cut,
    _fit_topic,
    _fragment_content,
    _longest,
    _max_chars,
    _nfc,
    _size,
    _topic_item,
    _union,
)
from powercontext.adapters.topic_generation._text import (
    SourceText,
    evidence_source,
    read_source,
)
from powercontext.adapters.topic_generation._words import (
    content_terms,
    cut_words,
    sentences,
    subject_words,
)
from powercontext.core.errors import InvalidInputError
from powercontext.core.topic.content import MAX_DETAIL_CHARS
from powercontext.core.topic.generation import StageRequest, StageResponse, StageUsage
from powercontext.core.topic.stages import MAX_NEW_TOPICS, MAX_PROBES
from powercontext.core.topic.window import BYTES_PER_TOKEN

__all__ = ["DETERMINISTIC_NAME", "DeterministicTopicModel"]

DETERMINISTIC_NAME: Final = "deterministic"
_PROBE_WORDS: Final = 12
_PART_QUERY = re.compile(r" \(part (\d{1,6})\)$")


def _read(item: dict[str, Any]) -> SourceText:
    """A stage input's Source item: a whole Source's evidence JSON, or a fragment."""
    if "start" in item:
        return read_source(_fragment_content(str(item.get("text", ""))))
    content, kind, uri = evidence_source(str(item.get("text", "")))
    return read_source(content, kind, uri)


def _title(src: SourceText) -> str:
    return src.title or cut_words(next(iter(src.content.splitlines()), ""), 100)


def _queries(title: str, src: SourceText) -> list[str]:
    """A Source's Probe queries: its title, then its subject words (those not in the
    title), each short enough for the search's admission floor to hold a match of a
    few terms."""
    names = [w for who, _ in src.turns for w in who.split()]
    title_terms = set(content_terms(title))
    words = [w for w in subject_words(src.content, _PROBE_WORDS, names)
             if not set(content_terms(w)) <= title_terms]
    out = [cut_words(title, _QUERY_CHARS)]
    if len(words) >= 2:
        out.append(cut_words(" ".join(words), _QUERY_CHARS))
    return out


def _part_of(query: str) -> tuple[str, int]:
    """The title a part's Probe query names and its part (1 when none)."""
    m = _PART_QUERY.search(query)
    return (query[:m.start()], int(m.group(1))) if m else (query, 1)


def _part_count(title: str, src: SourceText) -> int:
    book = topics.Book.new(title)
    book.add("s", _render(src, title), topics.leads_of(src))
    return max(1, len(book.parts))


@final
class DeterministicTopicModel:
    """``TopicGenerationModel`` ``deterministic`` (model ``deterministic``).

    ``context_window_tokens`` (default 125,000) is what the server budgets with;
    ``max_requests`` (default 1) what each call is reserved for. :meth:`generate`
    answers one stage request with ``requests=1`` and usage equal to the request's
    estimate (input) and the output's length in characters / 3 (output); it makes no
    network request. InvalidInputError (field ``request``) for another stage, a
    request over the context window, or input that is not the server's stage input."""

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
        text = self.answer(request)
        usage = StageUsage(input_tokens=request.estimated_tokens - request.max_output_tokens,
                           output_tokens=-(-len(text) // 3))
        return StageResponse(text, usage, 1)

    def answer(self, request: StageRequest) -> str:
        """The output text :meth:`generate` answers ``request`` with (no context-window
        check, no usage): the stage's JSON, keys sorted, compact, non-ASCII as is.
        InvalidInputError (field ``request``) for input that is not the stage's."""
        try:
            data = json.loads(request.input_json)
            out = self._answer(request.stage, request.schema_name, data)
        except (ValueError, KeyError, TypeError, AttributeError, IndexError):
            raise InvalidInputError("request", f"input_json is not a {request.stage} stage "
                                    "input") from None
        return json.dumps(out, ensure_ascii=False, sort_keys=True, separators=(",", ":"))

    def _answer(self, stage: str, schema_name: str, data: dict[str, Any]) -> dict[str, Any]:
        if stage == "probe":
            return _probe(data["sources"])
        if stage == "evolve":
            if schema_name == "topic_item_final" or "temporaries" in data:
                return _final(data["temporaries"], data["target"])
            if schema_name == "topic_item" or "target" in data:
                return _item(data["sources"], data["target"], data.get("focus", []))
            return _evolve(data["sources"], data.get("history", []))
        if stage == "plan":
            return _plan(data["probes"], data["history"])
        if stage == "temporary":
            return _temporary(data["sources"], _max_chars(data))
        if stage == "reduce":
            return _reduce(data["kind"], data["items"], _max_chars(data))
        if stage == "reconcile":
            return _reconcile(data["target"], data["candidates"])
        raise InvalidInputError("request", f"stage {stage!r} is not served by the "
                                "deterministic provider")


# ---------------------------------------------------------------------- probe, plan

def _probe(sources: list[dict[str, Any]]) -> dict[str, Any]:
    probes: list[dict[str, Any]] = []
    for item in sources:
        src = _read(item)
        if not src.content:
            continue
        title = _title(src)
        queries = _queries(title, src)
        parts = 1 if "start" in item else _part_count(title, src)
        queries += [cut_words(f"{title} (part {k})", _QUERY_CHARS) for k in range(2, parts + 1)]
        for q in queries:
            if len(probes) == MAX_PROBES:
                return {"probes": probes}
            probes.append({"query": q, "evidence_ids": [item["id"]]})
    return {"probes": probes}


def _plan(probes: list[dict[str, Any]], history: list[dict[str, Any]]) -> dict[str, Any]:
    by_title: dict[str, str] = {}
    for h in sorted(history, key=lambda h: (topics.title_key(h["title"]), h["title"],
                                            h["summary"], h["snippet"] or "")):
        by_title.setdefault(topics.title_key(h["title"]), h["handle"])
    items: dict[tuple[str, str], dict[str, Any]] = {}
    of_source: dict[frozenset[str], tuple[str, str]] = {}

    def put(p: dict[str, Any], key: tuple[str, str], target: str | None) -> None:
        items.setdefault(key, {"operation": key[0], "target": target, "probes": []})
        items[key]["probes"].append(p["id"])
        of_source.setdefault(frozenset(p["evidence_ids"]), key)

    for p in probes:  # the server's rule first: a found Topic's Probes in its Item
        if p.get("found"):
            put(p, ("update", p["found"]), p["found"])
    for p in probes:
        if p.get("found"):
            continue
        part = _part_of(p["query"])[1]
        handle = by_title.get(topics.title_key(p["query"]))
        if handle:
            put(p, ("update", handle), handle)
        elif part == 1 and frozenset(p["evidence_ids"]) in of_source:
            key = of_source[frozenset(p["evidence_ids"])]  # the Source's other Probes' Item
            put(p, key, key[1] if key[0] == "update" else None)
        else:  # a CREATE Item per Source, a part its own
            put(p, ("create", "\0".join([*sorted(p["evidence_ids"]), str(part)])), None)
    order = {pid: i for i, pid in enumerate(p["id"] for p in probes)}
    for item in items.values():
        item["probes"].sort(key=order.__getitem__)
    return {"items": list(items.values())}


# ---------------------------------------------------------------------- evolve

def _evolve(sources: list[dict[str, Any]], history: list[dict[str, Any]]) -> dict[str, Any]:
    books = topics.books_of_history(history)
    for item in sources:
        src = _read(item)
        if not src.content:
            continue
        title = _title(src)
        parts = [p for b in books for p in b.parts]
        found = topics.best(title, topics.source_terms(src), parts)
        book = next((b for b in books if found in b.parts), None)
        if book is None:
            book = topics.Book.new(title)
            books.append(book)
        book.add(item["id"], _render(src, book.base), topics.leads_of(src))
    slots: dict[str, Any] = {h["handle"]: None for h in history}
    new: list[dict[str, Any]] = []
    # a history Topic's continuations first; then whole new Books while the schema's
    # bound holds (a Book left out leaves its Sources uncited: the report names them)
    for book in sorted(books, key=lambda b: all(p.handle is None for p in b.parts)):
        made = [p for p in book.changed() if p.handle is None]
        if all(p.handle is None for p in book.parts) and len(new) + len(made) > MAX_NEW_TOPICS:
            continue
        for part in book.changed():
            if part.handle is not None:
                slots[part.handle] = part.topic()
        new.extend(p.topic() for p in made)
    return {"history": slots, "new": new[:MAX_NEW_TOPICS]}


def _render(src: SourceText, title: str) -> Callable[[bool], str]:
    return lambda opening: topics.section(src, title, opening)


def _as_is(text: str) -> Callable[[bool], str]:
    return lambda _opening: text


def _texts(sources: Sequence[dict[str, Any]], title: str) -> list[tuple[str, str, SourceText]]:
    out = []
    for item in sources:
        src = _read(item)
        if src.content:
            out.append((item["id"], topics.section(src, title), src))
    return out


def _item(sources: list[dict[str, Any]], target: dict[str, Any] | None,
          focus: list[str]) -> dict[str, Any]:
    if target is not None:
        texts = _texts(sources, target["title"])
        return {"topic": _onto(target, [(i, t, topics.leads_of(s)) for i, t, s in texts],
                               roll=True)}
    first = next((s for s in map(_read, sources) if s.content), None)
    if first is None:
        return {"topic": None}
    title = _title(first)
    wanted = {_part_of(q)[1] for q in focus if _part_of(q)[0] == title} or {1}
    book = topics.Book.new(title)
    for item in sources:
        src = _read(item)
        if src.content:
            book.add(item["id"], _render(src, title), topics.leads_of(src))
    number = min(wanted)
    part = next((p for p in book.parts if topics.base_title(p.title)[1] == number),
                book.parts[0] if book.parts else None)
    return {"topic": part.topic() if part is not None else None}


def _onto(target: dict[str, Any], adds: Sequence[tuple[str, str, tuple[str, ...]]], *,
          roll: bool) -> dict[str, Any] | None:
    """``target`` with the texts it does not hold yet appended, citing them; None when
    nothing is new. ``roll``: the oldest blocks of the target are left out (a line says
    so, :func:`topics.roll`) when all would pass the detail limit; else the texts that
    do not fit are left for others."""
    old = _nfc(target["detail"]).strip()
    kept: list[tuple[str, str, tuple[str, ...]]] = []
    for eid, text, leads in adds:
        if text in old or any(text == t for _, t, _ in kept):
            continue
        joined = [t for _, t, _ in kept] + [text]
        fits = topics.roll(old, joined) if roll else (
            "ok" if len("\n\n".join([old, *joined])) <= MAX_DETAIL_CHARS else None)
        if fits is None:
            if roll:
                break  # the new texts alone pass the limit: keep those that fit
            continue
        kept.append((eid, text, leads))
    if not kept:
        return None
    texts = [t for _, t, _ in kept]
    detail = topics.roll(old, texts) if roll else "\n\n".join([old, *texts])
    assert detail is not None
    first = sentences(target["summary"])[:1]
    summary = topics.summary(first, kept[-1][2], target["title"])
    return _topic_item(target["title"], summary, detail, [eid for eid, _, _ in kept])


def _final(temporaries: list[dict[str, Any]], target: dict[str, Any] | None
           ) -> dict[str, Any]:
    adds = [(t["id"], _nfc(t["detail"]).strip(), tuple(sentences(t["summary"])[:1]))
            for t in temporaries if _nfc(t["detail"]).strip()]
    if not adds:
        return {"topic": None}
    if target is not None:
        return {"topic": _onto(target, adds, roll=True)}
    first = temporaries[0]
    book = topics.Book.new(cut_words(first["title"], 100))
    for eid, text, leads in adds:
        book.add(eid, _as_is(text), leads)
    return {"topic": book.parts[0].topic()}


# ---------------------------------------------------------------------- part 3

def _temporary(sources: list[dict[str, Any]], max_chars: int) -> dict[str, Any]:
    read = [(item["id"], _read(item)) for item in sources]
    read = [(i, s) for i, s in read if s.content]
    if not read:
        return {"topic": None}
    title = _title(read[0][1])
    ids: list[str] = []
    texts: list[str] = []
    for eid, src in read:
        text = topics.section(src, title, not texts)
        if eid in ids:
            texts[ids.index(eid)] += "\n\n" + text
        else:
            ids.append(eid)
            texts.append(text)
    summary = topics.summary(topics.leads_of(read[0][1]), None, title)
    best = None
    for k in range(1, len(texts) + 1):
        detail = "\n\n".join(texts[:k])
        if len(detail) > MAX_DETAIL_CHARS or len(title) + len(summary) + len(detail) > max_chars:
            break
        best = _topic_item(title, summary, detail, ids[:k])
    if best is None:
        best = _fit_topic(title, summary, texts[0], ids[:1], max_chars)
    return {"topic": best}


def _reduce(kind: str, items: list[dict[str, Any]], max_chars: int) -> dict[str, Any]:
    positions = [i["position"] for i in items]
    ids = _union(items)
    max_bytes: int | None = None
    if len(items) == 1:  # a singleton reduction must shrink the item's estimate
        alone = {k: v for k, v in items[0].items() if k != "position"}
        tokens = -(-_size(alone) // BYTES_PER_TOKEN)
        max_bytes = BYTES_PER_TOKEN * (tokens - 1)
    result: dict[str, Any] | None
    if kind == "probe":
        joined = _cut(" ".join(i["query"] for i in items), _QUERY_CHARS)
        query = _longest(joined, lambda q: len(q) <= max_chars and (
            max_bytes is None or _size({"query": q, "evidence_ids": ids}) <= max_bytes))
        result = {"query": query or _cut(joined, 1), "evidence_ids": ids}
    else:
        details = "\n\n".join(_nfc(i["detail"]).strip() for i in items)
        result = _fit_topic(items[0]["title"], items[0]["summary"], details, ids,
                            max_chars, max_bytes)
        if result is None:  # nothing fits: the smallest honest answer (refused)
            result = _topic_item(_cut(items[0]["title"], 1), _cut(items[0]["summary"], 1),
                                 _cut(details, 1), ids)
    return {"positions": positions, "result": result}


def _latest(summary: str) -> tuple[str, ...]:
    """The newest Source's lead in a summary this provider wrote (after ``Latest:``),
    else its first sentence."""
    head, mark, tail = summary.partition(" Latest: ")
    return tuple(sentences(tail if mark else head)[:1])


def _reconcile(target: dict[str, Any] | None,
               candidates: list[dict[str, Any]]) -> dict[str, Any]:
    if target is None and not candidates:
        return {"merged": None}
    anchor = target if target is not None else candidates[0]
    title = anchor["title"]
    terms = topics.topic_terms(anchor["title"], anchor["summary"], anchor["detail"])
    fold = [c for k, c in enumerate(candidates)
            if (target is None and k == 0)
            or topics.similarity(c["title"], _source_terms(c), title, terms) is not None]
    adds = [(c["id"], _nfc(c["detail"]).strip(), _latest(c["summary"])) for c in fold]
    if target is not None:
        held = [c["id"] for c in fold if _nfc(c["detail"]).strip() in target["detail"]]
        merged = _onto(target, adds, roll=False)
        if merged is None:
            return {"merged": None if not held else _topic_item(
                target["title"], target["summary"], target["detail"], held)}
        merged["evidence_ids"] = [c["id"] for c in fold if c["id"] in held
                                  or c["id"] in merged["evidence_ids"]]
        return {"merged": merged}
    head = {"title": title, "summary": candidates[0]["summary"],
            "detail": candidates[0]["detail"]}
    merged = _onto(head, adds[1:], roll=False)
    held = [c["id"] for c in fold[1:] if _nfc(c["detail"]).strip() in head["detail"]]
    if merged is None and not held:
        return {"merged": None}
    if merged is None:
        return {"merged": _topic_item(title, head["summary"], head["detail"],
                                      [candidates[0]["id"], *held])}
    merged["evidence_ids"] = [c["id"] for c in fold if c is candidates[0] or c["id"] in held
                              or c["id"] in merged["evidence_ids"]]
    return {"merged": merged}


_LABEL = re.compile(r"\*\*[^*\n]{1,40}:\*\*")


def _source_terms(candidate: dict[str, Any]) -> frozenset[str]:
    """A reconcile candidate's subject terms, as its Source's were (speaker labels out)."""
    return topics.source_terms(read_source(_LABEL.sub(" ", candidate["detail"])))
