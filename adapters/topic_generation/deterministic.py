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
  content, else its first non-empty line; for chat-like content (speaker turns ``"[when]
  Name: text"``, see :func:`_chat_turns`) the four most frequent content words of the
  turns instead (a chat's first line is a greeting or a session header, not its
  subject), and its Probe query is the eight most frequent. A group whose title
  casefold-equals a history Topic's title UPDATEs that Topic (detail = the old detail,
  then the group's texts not already in it; bounded), or is a NOOP (null) when nothing
  is new; any other group CREATEs a Topic (summary = the first sentences of its first
  Source's body, detail = the group's texts joined by blank lines). A Detail keeps as
  many whole texts as its limit holds and cites only those (a first text alone over it
  is cut at a block boundary: blank line, else line, else space); titles and summaries
  are cut the same way. That is the provider's own choice, as a model's would be; the
  server never truncates.

Part 3 stages (formats in :mod:`powercontext.core.topic.accumulate`, ``.planner``,
``.temporary``, ``.reconcile``), dispatched by ``schema_name`` (then by input shape):

- ``plan``: a Probe goes to the UPDATE Item of the first history handle whose title's
  casefolded words (runs of word characters, at least one) all occur among the Probe
  query's casefolded words, else to the CREATE Item of the Probes with its exact
  evidence-id set (one Item per set, first-seen order). Items in first-seen order.
- ``evolve`` Item Evolver (``topic_item``): as ``evolve`` for one group: with a
  target, its title and summary and the detail = the target's detail then the Sources'
  texts not already in it (null when nothing is new); without, a CREATE titled by the
  first Source.
- ``evolve`` final (``topic_item_final``): the same over the temporaries' details,
  citing the temporaries kept (``t1``...).
- ``temporary``: the Batch's title, summary and texts (a fragment's content, its JSON
  framing and escapes undone), as many whole texts as ``max_result_chars`` holds (the
  result's title, summary and detail together, in code points: the guidance
  :func:`powercontext.core.topic.accumulate.max_result_chars` sizes so that any such
  text stays within the item-token limit), a first text alone over it cut at a block
  boundary; citing the ids kept; null for a Batch with no text.
- ``reduce``: every position; evidence = the exact union of the items' ids (in order
  of first appearance). Probe: the queries joined, cut at a word to 512 characters;
  temporary: the first title and summary, the details joined, cut to fit. The result's
  text stays within ``max_result_chars`` and, for one item, its estimate below the
  input item's own (a singleton reduction must shrink).
- ``reconcile``: folds every candidate it can hold: with a target, the target's title
  and summary and the detail = the target's detail then the candidates' details not
  already in it; without, the first candidate's title and summary and the details
  joined (at least two candidates, else null).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Final, final

from powercontext.adapters.topic_generation._extract import (
    _MAX_PROBES,
    _QUERY_CHARS,
    _WORD,
    _content,
    _cut,
    _fit_topic,
    _fold,
    _longest,
    _max_chars,
    _nfc,
    _pack,
    _probe_query,
    _size,
    _summary,
    _text_of,
    _title,
    _topic_item,
    _union,
)
from powercontext.core.errors import InvalidInputError
from powercontext.core.topic.content import MAX_DETAIL_CHARS, MAX_SUMMARY_CHARS, MAX_TITLE_CHARS
from powercontext.core.topic.generation import StageRequest, StageResponse, StageUsage
from powercontext.core.topic.window import BYTES_PER_TOKEN

__all__ = ["DETERMINISTIC_NAME", "DeterministicTopicModel"]

DETERMINISTIC_NAME: Final = "deterministic"

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
            return self._probe(data["sources"])
        if stage == "evolve":
            if schema_name == "topic_item_final" or "temporaries" in data:
                return self._final(data["temporaries"], data["target"])
            if schema_name == "topic_item" or "target" in data:
                return self._item(data["sources"], data["target"])
            return self._evolve(data["sources"], data.get("history", []))
        if stage == "plan":
            return self._plan(data["probes"], data["history"])
        if stage == "temporary":
            return self._temporary(data["sources"], _max_chars(data))
        if stage == "reduce":
            return self._reduce(data["kind"], data["items"], _max_chars(data))
        if stage == "reconcile":
            return self._reconcile(data["target"], data["candidates"])
        raise InvalidInputError("request", f"stage {stage!r} is not served by the "
                                "deterministic provider")

    @staticmethod
    def _probe(sources: list[dict[str, Any]]) -> dict[str, Any]:
        probes: list[dict[str, Any]] = []
        for item in sources:
            query = _probe_query(_text_of(item))
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

    @staticmethod
    def _plan(probes: list[dict[str, Any]], history: list[dict[str, Any]]) -> dict[str, Any]:
        words = [(h["handle"], {w.casefold() for w in _WORD.findall(h["title"])})
                 for h in history]
        items: dict[tuple[str, Any], dict[str, Any]] = {}
        for p in probes:
            query = {w.casefold() for w in _WORD.findall(p["query"])}
            handle = next((h for h, ws in words if ws and ws <= query), None)
            if handle is not None:
                key: tuple[str, Any] = ("update", handle)
                fresh = {"operation": "update", "target": handle, "probes": []}
            else:
                key = ("create", frozenset(p["evidence_ids"]))
                fresh = {"operation": "create", "target": None, "probes": []}
            items.setdefault(key, fresh)["probes"].append(p["id"])
        return {"items": list(items.values())}

    @staticmethod
    def _item(sources: list[dict[str, Any]], target: dict[str, Any] | None) -> dict[str, Any]:
        ids, texts = [], []
        for item in sources:
            content = _nfc(_text_of(item)).strip()
            if content:
                ids.append(item["id"])
                texts.append(content)

        def heading() -> tuple[str, str]:
            title = _title(texts[0])
            return title, _summary(texts[0], title)

        return {"topic": _one_topic(ids, texts, target, heading)}

    @staticmethod
    def _final(temporaries: list[dict[str, Any]],
               target: dict[str, Any] | None) -> dict[str, Any]:
        ids = [t["id"] for t in temporaries]
        texts = [_nfc(t["detail"]).strip() for t in temporaries]
        first = temporaries[0] if temporaries else {}
        return {"topic": _one_topic(ids, texts, target,
                                    lambda: (first["title"], first["summary"]))}

    @staticmethod
    def _temporary(sources: list[dict[str, Any]], max_chars: int) -> dict[str, Any]:
        ids: list[str] = []
        texts: list[str] = []
        for item in sources:
            content = _nfc(_text_of(item)).strip()
            if content and item["id"] not in ids:
                ids.append(item["id"])
                texts.append(content)
            elif content:
                texts[ids.index(item["id"])] += "\n\n" + content
        if not texts:
            return {"topic": None}
        title = _title(texts[0])
        summary = _summary(texts[0], title)
        best = None
        for k in range(1, len(texts) + 1):
            detail = "\n\n".join(texts[:k])
            if len(detail) > MAX_DETAIL_CHARS:
                break
            if len(title) + len(summary) + len(detail) > max_chars:
                break
            best = _topic_item(title, summary, detail, ids[:k])
        if best is None:
            best = _fit_topic(title, summary, texts[0], ids[:1], max_chars)
        return {"topic": best}

    @staticmethod
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

    @staticmethod
    def _reconcile(target: dict[str, Any] | None,
                   candidates: list[dict[str, Any]]) -> dict[str, Any]:
        ids = [c["id"] for c in candidates]
        texts = [_nfc(c["detail"]).strip() for c in candidates]
        if target is not None:
            detail, kept, held = _fold(_nfc(target["detail"]).strip(), ids, texts)
            folded = [i for i in ids if i in kept or i in held]
            if not folded:
                return {"merged": None}
            return {"merged": _topic_item(target["title"], target["summary"], detail, folded)}
        detail, folded = "", list[str]()
        for i, t in zip(ids, texts, strict=True):
            if t and t in detail:
                folded.append(i)
                continue
            joined = f"{detail}\n\n{t}" if detail else t
            if len(_nfc(joined).strip()) > MAX_DETAIL_CHARS:
                break
            detail, folded = joined, [*folded, i]
        if len(folded) < 2:
            return {"merged": None}
        first = candidates[0]
        return {"merged": _topic_item(first["title"], first["summary"],
                                      _cut(detail, MAX_DETAIL_CHARS), folded)}


def _one_topic(ids: list[str], texts: list[str], target: dict[str, Any] | None,
               heading: Callable[[], tuple[str, str]]) -> dict[str, Any] | None:
    """One Item's TOPIC (or None: NOOP): with a ``target``, its title and summary and
    its detail then the texts not already in it (None when nothing is added); without,
    ``heading()``'s title and summary and the texts packed (:func:`_pack`)."""
    if not texts:
        return None
    if target is not None:
        old = target["detail"]
        fresh = [(i, t) for i, t in zip(ids, texts, strict=True) if t not in old]
        detail, kept = _pack(old, [i for i, _ in fresh], [t for _, t in fresh])
        if not kept:
            return None
        return _topic_item(target["title"], target["summary"], detail, kept)
    detail, kept = _pack("", ids, texts)
    if not detail:
        return None
    title, summary = heading()
    return _topic_item(_cut(title, MAX_TITLE_CHARS), _cut(summary, MAX_SUMMARY_CHARS),
                       detail, kept)
