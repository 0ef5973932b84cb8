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
import re
import unicodedata
from collections.abc import Callable, Sequence
from typing import Any, Final, final

from powercontext.core import canonical
from powercontext.core.errors import InvalidInputError
from powercontext.core.topic.content import MAX_DETAIL_CHARS, MAX_SUMMARY_CHARS, MAX_TITLE_CHARS
from powercontext.core.topic.generation import StageRequest, StageResponse, StageUsage
from powercontext.core.topic.window import BYTES_PER_TOKEN

__all__ = ["DETERMINISTIC_NAME", "DeterministicTopicModel"]

DETERMINISTIC_NAME: Final = "deterministic"
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
    not a number, not a stop word, not a speaker's name), ties by first appearance;
    each in its first-seen spelling."""
    names = {w.casefold() for speaker, _ in turns for w in _WORD.findall(speaker)}
    count: dict[str, int] = {}
    spelling: dict[str, str] = {}
    for _, text in turns:
        for w in _WORD.findall(text):
            key = w.casefold()
            if len(key) < 3 or key.isdigit() or key in _STOP_WORDS or key in names:
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
