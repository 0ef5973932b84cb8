"""A scripted TopicGenerationModel for the processing tests: a fake at the port (the
real-provider evidence is the loopback servers' tests). Each stage answers with the
deterministic provider unless a script overrides it; every call is recorded, and
:attr:`ScriptedTopicModel.count` counts them per stage.

Ready-made adversarial scripts (each a function returning a :data:`Script`; pass it
under its stage, e.g. ``ScriptedTopicModel({"reduce": drop_position()})``). Unless said
otherwise they start from the deterministic provider's own (valid) answer and break
exactly one rule of the stage formats (:mod:`powercontext.core.topic.accumulate`,
``.planner``):

- :func:`echo_reduce`: the first input item unchanged, every position (no progress for
  one item; evidence dropped for several unless ``union_evidence``);
- :func:`drop_position`: one input position missing (coverage);
- :func:`invent_evidence`: an evidence id the input never gave (evidence union);
- :func:`reduce_with_target`: an extra ``target`` / ``artifact_id`` field (a reduction
  cannot pick a historical identity);
- :func:`reduce_null`: ``result`` null (a reduction cannot be a NOOP);
- :func:`shrink_by_one`: a VALID reduction that only just makes progress (the largest
  result the 1/8 check allows and, for one item, one token below it);
- :func:`fail_at`: the k-th call of a stage raises (a provider fault mid-Window);
- :func:`plan_with`: a Work Plan given verbatim (valid or not).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from powercontext.adapters.topic_generation.deterministic import DeterministicTopicModel
from powercontext.core import canonical
from powercontext.core.topic.accumulate import RESULT_FRACTION
from powercontext.core.topic.accumulate import max_result_chars as max_result_chars_of
from powercontext.core.topic.content import MAX_DETAIL_CHARS
from powercontext.core.topic.generation import StageRequest, StageResponse
from powercontext.core.topic.window import (
    BYTES_PER_TOKEN,
    MESSAGE_OVERHEAD_TOKENS,
    estimate_tokens,
)

__all__ = [
    "Script",
    "ScriptedTopicModel",
    "deterministic_answer",
    "drop_position",
    "echo_reduce",
    "fail_at",
    "invent_evidence",
    "plan_with",
    "reduce_null",
    "reduce_with_target",
    "shrink_by_one",
]

Script = Callable[[StageRequest, dict[str, Any]], object]

_DETERMINISTIC = DeterministicTopicModel()


def deterministic_answer(request: StageRequest) -> dict[str, Any]:
    """The deterministic provider's answer to ``request``, parsed (no window check)."""
    return json.loads(_DETERMINISTIC.answer(request))


class ScriptedTopicModel:
    """``scripts`` maps a stage to ``fn(request, input) -> output`` (a str is sent
    as is, anything else JSON-encoded; an exception is raised as the provider's).
    ``calls`` holds every request in order, ``count`` the calls per stage."""

    def __init__(self, scripts: dict[str, Script] | None = None, *,
                 context_window_tokens: int = 125_000, max_requests: int = 1) -> None:
        self.scripts = dict(scripts or {})
        self.inner = DeterministicTopicModel(context_window_tokens, max_requests)
        self.calls: list[StageRequest] = []

    name = "scripted"
    model = "scripted"

    @property
    def context_window_tokens(self) -> int:
        return self.inner.context_window_tokens

    @property
    def max_requests(self) -> int:
        return self.inner.max_requests

    @property
    def count(self) -> Counter[str]:
        """Calls made per stage (``count["reduce"]``; 0 for a stage never called)."""
        return Counter(c.stage for c in self.calls)

    def stages(self) -> list[str]:
        return [c.stage for c in self.calls]

    async def generate(self, request: StageRequest) -> StageResponse:
        self.calls.append(request)
        script = self.scripts.get(request.stage)
        if script is None:
            return await self.inner.generate(request)
        out = script(request, json.loads(request.input_json))
        text = out if isinstance(out, str) else json.dumps(out)
        return StageResponse(text, None, 1)


# ---------------------------------------------------------------------- reduce scripts

def _positions(data: dict[str, Any]) -> list[int]:
    return [item["position"] for item in data["items"]]


def _bare(item: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in item.items() if k != "position"}


def echo_reduce(*, union_evidence: bool = False) -> Script:
    """Reduce: the FIRST input item unchanged as the result, claiming every position.
    Violates progress for a single item (``reduction_no_progress``) and, for several
    items with other evidence, the evidence union (``reduction_evidence_mismatch``)
    unless ``union_evidence`` (then only the size rule can stop it)."""
    def script(request: StageRequest, data: dict[str, Any]) -> object:
        result = _bare(data["items"][0])
        if union_evidence:
            result["evidence_ids"] = list(dict.fromkeys(
                i for item in data["items"] for i in item["evidence_ids"]))
        return {"positions": _positions(data), "result": result}
    return script


def drop_position(which: int = -1) -> Script:
    """Reduce: the deterministic reduction with one input position (default the last)
    left out: violates coverage (``reduction_coverage_mismatch``)."""
    def script(request: StageRequest, data: dict[str, Any]) -> object:
        out = deterministic_answer(request)
        del out["positions"][which]
        return out
    return script


def invent_evidence(evidence_id: str = "s999") -> Script:
    """Reduce: the deterministic reduction citing one more evidence id the input never
    gave: violates the exact evidence union (``reduction_evidence_mismatch``, or
    ``model_output_invalid`` when the id is not in the Window at all)."""
    def script(request: StageRequest, data: dict[str, Any]) -> object:
        out = deterministic_answer(request)
        out["result"]["evidence_ids"].append(evidence_id)
        return out
    return script


def reduce_with_target(field: str = "target", value: object = "h1", *,
                       inside: bool = False) -> Script:
    """Reduce: the deterministic reduction with an extra ``field`` (``target``,
    ``artifact_id``, ...) at the top level or, with ``inside``, in the result: a
    reduction picking a historical identity (``model_output_invalid``)."""
    def script(request: StageRequest, data: dict[str, Any]) -> object:
        out = deterministic_answer(request)
        (out["result"] if inside else out)[field] = value
        return out
    return script


def reduce_null() -> Script:
    """Reduce: every position, ``result`` null: a NOOP reduction
    (``model_output_invalid``)."""
    def script(request: StageRequest, data: dict[str, Any]) -> object:
        return {"positions": _positions(data), "result": None}
    return script


def _dumps(value: Any) -> str:
    return canonical.canonical_dumps(value).decode("utf-8")


def _size(value: Any) -> int:
    return len(canonical.canonical_dumps(value))


def _longest_prefix(text: str, ok: Callable[[str], bool]) -> str | None:
    # the longest non-empty stripped prefix passing ok (cut anywhere, not at a boundary)
    lo, hi, best = 1, len(text), None
    while lo <= hi:
        mid = (lo + hi) // 2
        cut = text[:mid].strip()
        if cut and ok(cut):
            best, lo = cut, mid + 1
        else:
            hi = mid - 1
    return best


def _token_limit(max_result_chars: int) -> int:
    """The smallest item-token limit ``B // 8`` whose ``max_result_chars`` guidance is
    ``max_result_chars`` (a lower bound of the request's real limit)."""
    lo, hi = 1, 1 << 40
    while lo < hi:
        mid = (lo + hi) // 2
        if max_result_chars_of(mid * RESULT_FRACTION) >= max_result_chars:
            hi = mid
        else:
            lo = mid + 1
    return lo


def shrink_by_one() -> Script:
    """Reduce: a VALID reduction (every position, the exact evidence union) that only
    just makes progress: the result is as large as the CHECK allows (it ignores the
    ``max_result_chars`` guidance and fills the item-token limit ``B // 8`` the guidance
    implies) and, for a single item, estimates exactly one token less than that item
    when that is within the limit. The accumulator must still finish within ``2n + 1``
    attempts against it."""
    def script(request: StageRequest, data: dict[str, Any]) -> object:
        items = data["items"]
        tokens = _token_limit(data["max_result_chars"])
        if len(items) == 1:
            tokens = min(tokens, estimate_tokens(_dumps(_bare(items[0]))) - 1)
        limit = BYTES_PER_TOKEN * (tokens - MESSAGE_OVERHEAD_TOKENS)  # bytes, estimate <= tokens
        ids = list(dict.fromkeys(i for item in items for i in item["evidence_ids"]))
        if data["kind"] == "probe":
            joined = " ".join(item["query"] for item in items)[:512]
            query = _longest_prefix(joined, lambda q: _size(
                {"query": q, "evidence_ids": ids}) <= limit) or joined[:1]
            result: dict[str, Any] = {"query": query, "evidence_ids": ids}
        else:
            first = items[0]
            detail = "\n\n".join(item["detail"] for item in items)[:MAX_DETAIL_CHARS]
            summary = first["summary"]

            def fits(s: str, d: str) -> bool:
                return _size({"title": first["title"], "summary": s, "detail": d,
                              "evidence_ids": ids}) <= limit
            if not fits(summary, detail[:1]):
                summary = _longest_prefix(summary, lambda s: fits(s, detail[:1])) or \
                    summary[:1]
            cut = _longest_prefix(detail, lambda d: fits(summary, d)) or detail[:1]
            result = {"title": first["title"], "summary": summary, "detail": cut,
                      "evidence_ids": ids}
        return {"positions": _positions(data), "result": result}
    return script


# ---------------------------------------------------------------------- any stage

def fail_at(stage: str, k: int, exc: BaseException) -> Script:
    """The ``k``-th call (1-based) of ``stage`` raises ``exc`` (as the provider's own
    failure: a BackendError, a TopicProcessingError, ...); every other call answers as
    the deterministic provider. Register it under the same stage."""
    if k < 1:
        raise ValueError("k is 1-based")
    seen = [0]

    def script(request: StageRequest, data: dict[str, Any]) -> object:
        if request.stage == stage:
            seen[0] += 1
            if seen[0] == k:
                raise exc
        return deterministic_answer(request)
    return script


def plan_with(items: Sequence[dict[str, Any]]
              | Callable[[dict[str, Any]], Sequence[dict[str, Any]]]) -> Script:
    """Plan: ``{"items": items}`` verbatim (e.g. a Probe in no Item or two, an UPDATE
    with no target, a CREATE with one, two Items on one target), or the items
    ``items(input)`` returns when it is callable."""
    def script(request: StageRequest, data: dict[str, Any]) -> object:
        chosen = items(data) if callable(items) else items
        return {"items": [dict(i) for i in chosen]}
    return script
