"""Leave-one-conversation-out cross-validation of the retrieval settings on LoCoMo
(issue 14 item 3): ``python -m bench locomo`` runs it after the plain table (``--no-cv``
skips it; ``--cv-only`` runs nothing else).

Parameters. A setting is a triple: the entry text (:data:`TEXTS`: ``"<speaker>: <text>"``,
with the session date prefixed, or ``"<text>"`` alone; the benchmark writes it, so it is
what both channels index), the fts admission floors for queries of three or more terms
(:data:`powercontext.core.search_admission.FTS_MIN_MATCHED` and ``FTS_MIN_COVERAGE``) and
the vector channel's cosine admission floor (``VECTOR_MIN_COSINE``). Every conversation
is indexed through the real library once per entry text, its fts channel read once per
fts admission and its vector channel once at the lowest floor, each through the library's
own search with the floors set on the library's admission module; hybrid is fused per
floor with the library's RRF (``core.rrf.fuse``): every figure here is the library's own
search, no re-ranking outside it (checked, ``library_check``).

Method. For each of the conversations (a fold), the setting with the best hybrid score
on the other conversations (pooled over their questions, the mean of recall@5, @10 and
@25; ties: the first in grid order) is chosen and every mode is scored on the held-out
conversation with it (``fts_default``: fts at the chosen entry text with the library's
default fts admission, the baseline). The cross-validated figure of a mode is the mean
over folds of its held-out recall@k; ``pooled`` scores every question with the setting
its own fold chose. Per category figures are pooled (a category can be rare in one conversation).
"""

from __future__ import annotations

import contextlib
import heapq
import math
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench import locomo
from bench.vector_cache import DiskCachedModel
from powercontext.core import ranking, rrf, search_admission
from powercontext.core.rrf import RankKey
from powercontext.plugins.registry import Registry

__all__ = [
    "FLOORS", "FTS_ADMISSIONS", "TEXTS", "Setting", "cross_validate", "cv_table",
    "fts_admission", "vector_floor",
]

#: the vector admission floors tried (cosine similarity)
FLOORS = (0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8)
#: the fts admission floors tried for queries of three or more distinct terms:
#: (minimum matched terms, minimum coverage); the library's default is (2, 0.25)
FTS_ADMISSIONS = ((1, 0.0), (2, 0.25), (2, 0.34), (2, 0.5), (3, 0.34), (3, 0.5))
#: the entry texts tried: name -> (session date prefix, speaker prefix)
TEXTS = {"speaker": (False, True), "date": (True, True), "nospeaker": (False, False)}
Rows = list[tuple[int, list[float]]]
Fts = tuple[int, float]


@dataclass(frozen=True, order=True)
class Setting:
    text: str
    fts: Fts
    floor: float

    def label(self) -> str:
        return (f"text {self.text}, fts >= {self.fts[0]} terms & {self.fts[1]:.2f}, "
                f"cosine >= {self.floor:.2f}")

    def as_dict(self) -> dict[str, Any]:
        return {"text": self.text, "fts_min_matched": self.fts[0],
                "fts_min_coverage": self.fts[1], "vector_min_cosine": self.floor}


@contextlib.contextmanager
def vector_floor(floor: float) -> Iterator[None]:
    """The library's vector admission floor set to ``floor`` for the block."""
    saved = search_admission.VECTOR_MIN_COSINE
    search_admission.VECTOR_MIN_COSINE = floor
    try:
        yield
    finally:
        search_admission.VECTOR_MIN_COSINE = saved


@contextlib.contextmanager
def fts_admission(fts: Fts) -> Iterator[None]:
    """The library's fts admission floors (matched terms, coverage) set for the block."""
    saved = search_admission.FTS_MIN_MATCHED, search_admission.FTS_MIN_COVERAGE
    search_admission.FTS_MIN_MATCHED, search_admission.FTS_MIN_COVERAGE = fts
    try:
        yield
    finally:
        search_admission.FTS_MIN_MATCHED, search_admission.FTS_MIN_COVERAGE = saved


def _cosine(a: Sequence[float], b: Sequence[float]) -> float:
    return math.fsum(x * y for x, y in zip(a, b, strict=True))


@dataclass
class Channels:
    """One question's channel lists as the library returned them: the fts hits per fts
    admission (the channel's admitted order) and the vector hits at the lowest floor,
    with cosines."""

    question: locomo.Question
    fts: dict[Fts, list[tuple[RankKey, frozenset[str]]]]
    vector: list[tuple[RankKey, frozenset[str], float]]


async def _search(ix: locomo.Indexed, q: str, mode: str, limit: int) -> Any:
    result = await ix.service.search(q, [ix.ref], limit=limit, mode=mode)  # type: ignore[arg-type]
    if result.mode != mode:
        raise RuntimeError(f"asked for {mode}, ran {result.mode}")
    return result.hits


async def _channels(
    conv: locomo.Conversation, ix: locomo.Indexed, model: DiskCachedModel, floor: float,
    fts_grid: Sequence[Fts],
) -> list[Channels]:
    """Each question's fts lists (one per fts admission) and vector list,
    ``budget(LIMIT)`` long, read through the library's own fts and vector searches
    (``vector_floor(floor)``, the lowest floor)."""
    budget = ranking.candidate_budget(locomo.LIMIT)
    out = []
    for q in conv.questions:
        fts = {}
        for f in fts_grid:
            with fts_admission(f):
                fts[f] = [(_key(h), ix.dias[h.entry_id])
                          for h in await _search(ix, q.question, "fts", budget)]
        with vector_floor(floor):
            hits = await _search(ix, q.question, "vector", budget)
        qv = model.vector(q.question)
        vec = []
        for h in hits:
            ev = model.vector(h.text)
            if qv is None or ev is None:
                raise RuntimeError("a vector the library used is not in the cache")
            vec.append((_key(h), ix.dias[h.entry_id], _cosine(qv, ev)))
        out.append(Channels(q, fts, vec))
    return out


def _key(hit: Any) -> RankKey:
    return RankKey(hit.memory_ref.artifact_id, hit.entry_id, hit.entry_version_id)


#: the least common multiple of 61 .. 60 + MAX_RANK: 1 / (60 + r) is _LCM // (60 + r) over
#: _LCM, exactly, so integer sums order candidates as the library's exact fractions do
MAX_RANK = 200
_LCM = math.lcm(*range(rrf.RRF_K + 1, rrf.RRF_K + MAX_RANK + 1))
_INV = [0] + [_LCM // (rrf.RRF_K + r) for r in range(1, MAX_RANK + 1)]


def fuse_top(channels: Sequence[Sequence[RankKey]], n: int) -> list[RankKey]:
    """The first ``n`` keys of :func:`powercontext.core.rrf.fuse` over ``channels`` (in
    channel order), computed with exact integers instead of fractions (the same order,
    tested; fractions are too slow for the grid)."""
    scores: dict[RankKey, int] = {}
    for keys in channels:
        seen: set[RankKey] = set()
        rank = 0
        for key in keys:
            if key in seen:
                continue
            seen.add(key)
            rank += 1
            scores[key] = scores.get(key, 0) + _INV[rank]
    return heapq.nsmallest(n, scores, key=lambda k: (-scores[k], rrf._tie_key(k)))


def ranked(ch: Channels, mode: str, fts: Fts, floor: float) -> list[frozenset[str]]:
    """The first LIMIT hits' dia_ids of ``mode`` at (``fts``, ``floor``): the vector
    channel is the prefix of its list at or above the floor (admission is monotone in
    distance, within the library's tolerance); hybrid fuses the lists with the library's
    RRF."""
    bar = floor - search_admission.VECTOR_COSINE_TOLERANCE
    vec = [(k, d) for k, d, c in ch.vector if c >= bar]
    if mode == "fts":
        return [d for _, d in ch.fts[fts][: locomo.LIMIT]]
    if mode == "vector":
        return [d for _, d in vec[: locomo.LIMIT]]
    dias = dict(ch.fts[fts]) | dict(vec)
    fused = fuse_top([[k for k, _ in ch.fts[fts]], [k for k, _ in vec]], locomo.LIMIT)
    return [dias[k] for k in fused]


def _rows(chs: list[Channels], mode: str, fts: Fts, floor: float) -> Rows:
    return [(c.question.category, locomo.recalls(c.question.evidence,
                                                 ranked(c, mode, fts, floor)))
            for c in chs]


async def _library_rows(
    conv: locomo.Conversation, ix: locomo.Indexed, mode: str, s: Setting
) -> Rows:
    """The same rows from the library's own search in ``mode`` at setting ``s``."""
    out: Rows = []
    with vector_floor(s.floor), fts_admission(s.fts):
        for q in conv.questions:
            hits = await locomo.rank(ix, q.question, mode)
            out.append((q.category, locomo.recalls(q.evidence, hits)))
    return out


def _mean(rows: Rows) -> list[float]:
    n = len(rows)
    return [100 * sum(r[i] for _, r in rows) / n if n else 0.0 for i in range(len(locomo.KS))]


def _objective(rows: Rows) -> float:
    return sum(_mean(rows)) / len(locomo.KS)


DEFAULT_FTS: Fts = (2, 0.25)
#: the rows of the report: the three modes at the chosen setting, and fts at the chosen
#: entry text with the library's default fts admission (the baseline hybrid must beat)
ROWS = (*locomo.MODES, "fts_default")


def folds(
    convs: list[locomo.Conversation], measured: dict[Setting, dict[str, list[Rows]]],
) -> dict[str, Any]:
    """Leave-one-conversation-out: per fold the chosen setting and held-out figures; per
    mode the cross-validated figures."""
    grid = list(measured)
    fold_out = []
    held: dict[str, list[Rows]] = {m: [] for m in ROWS}
    for i, conv in enumerate(convs):
        train = {
            s: _objective([r for j, rows in enumerate(measured[s]["hybrid"]) if j != i
                           for r in rows])
            for s in grid
        }
        best = max(grid, key=lambda s: (train[s], -grid.index(s)))
        base = next(s for s in grid if s.text == best.text and s.fts == DEFAULT_FTS)
        for m in locomo.MODES:
            held[m].append(measured[best][m][i])
        held["fts_default"].append(measured[base]["fts"][i])
        fold_out.append({
            "held_out": conv.sample_id,
            "questions": len(conv.questions),
            "chosen": best.as_dict(),
            "train_hybrid_objective": round(train[best], 2),
            **{f"{m}_r@k": [round(x, 2) for x in _mean(held[m][-1])] for m in ROWS},
        })
    modes: dict[str, Any] = {}
    for m in ROWS:
        per_fold = [_mean(rows) for rows in held[m]]
        pooled = [r for rows in held[m] for r in rows]
        modes[m] = {
            "mean_over_folds": {f"r@{k}": round(sum(f[j] for f in per_fold) / len(per_fold), 2)
                                for j, k in enumerate(locomo.KS)},
            "pooled": locomo.summarize(pooled),
        }
    in_sample = {
        s.label(): {m: [round(x, 2) for x in _mean([r for rows in measured[s][m] for r in rows])]
                    for m in ("fts", "hybrid", "vector")}
        for s in grid
    }
    return {"folds": fold_out, "modes": modes, "in_sample": in_sample}


async def cross_validate(
    data: Path, model_name: str, *, version: str, workdir: Path,
    floors: Sequence[float] = FLOORS, texts: Sequence[str] = tuple(TEXTS),
    fts_grid: Sequence[Fts] = FTS_ADMISSIONS, captions: bool = True, progress: Any = None,
) -> dict[str, Any]:
    """The cross-validation report (a JSON-ready dict); vectors cached under
    ``workdir / "vectors"``. Every fold's held-out figures at its chosen setting are
    checked against the library's own search at that setting (``library_check``)."""
    convs = locomo.load(data, captions=captions)
    if len(convs) < 2:
        raise SystemExit("cross-validation needs at least two conversations")
    if DEFAULT_FTS not in fts_grid:
        fts_grid = (DEFAULT_FTS, *fts_grid)
    registry = Registry()
    model = DiskCachedModel(locomo.build_model(model_name, registry), workdir / "vectors")
    settings = [Setting(t, f, v) for t in texts for f in fts_grid for v in floors]
    measured: dict[Setting, dict[str, list[Rows]]] = {}
    indexed: dict[str, list[locomo.Indexed]] = {}
    workdir.mkdir(parents=True, exist_ok=True)
    with contextlib.ExitStack() as stack:
        try:
            for text in texts:
                date, speaker = TEXTS[text]
                tmp = Path(stack.enter_context(
                    tempfile.TemporaryDirectory(prefix="locomo-cv-", dir=workdir)))
                indexed[text] = ixs = []
                chans = []
                for n, c in enumerate(convs):
                    ixs.append(await locomo.index(c, tmp / f"conv{n}.db", model, registry,
                                                  session_date=date, speaker=speaker,
                                                  analyzer=version))
                    chans.append(await _channels(c, ixs[-1], model, min(floors), fts_grid))
                    if progress:
                        progress(f"text={text} conversation {c.sample_id}: read")
                for s in (s for s in settings if s.text == text):
                    measured[s] = {m: [_rows(ch, m, s.fts, s.floor) for ch in chans]
                                   for m in locomo.MODES}
            report = folds(convs, measured)
            checked = differing = 0
            for i, fo in enumerate(report["folds"]):
                ch = fo["chosen"]
                best = Setting(ch["text"], (ch["fts_min_matched"], ch["fts_min_coverage"]),
                               ch["vector_min_cosine"])
                for m in locomo.MODES:
                    lib = await _library_rows(convs[i], indexed[best.text][i], m, best)
                    checked += len(lib)
                    differing += sum(a != b for a, b in zip(lib, measured[best][m][i],
                                                            strict=True))
        finally:
            for ixs in indexed.values():
                for ix in ixs:
                    await ix.service.close()
            model.close()
    report.update({
        "analyzer": version,
        "grid": {"text": {t: dict(zip(("session_date", "speaker"), TEXTS[t], strict=True))
                          for t in texts},
                 "fts_admission": [list(f) for f in fts_grid],
                 "vector_min_cosine": list(floors)},
        "objective": "hybrid mean of recall@5/10/25 pooled over the training questions",
        "texts_embedded": model.embedded,
        "library_check": {"questions_x_modes": checked, "differing": differing},
    })
    if differing:
        raise RuntimeError(f"the fold figures differ from the library's search on "
                           f"{differing} of {checked} questions x modes")
    return report


def cv_table(cv: dict[str, Any]) -> str:
    """Markdown: the cross-validated table per mode, per category, and the folds."""
    ks = locomo.KS
    lines = [
        f"Cross-validated (leave one conversation out, analyzer {cv['analyzer']}; mean over "
        "folds, pooled in brackets):",
        "",
        "| mode | " + " | ".join(f"R@{k}" for k in ks) + " |",
        "|---|" + "---:|" * len(ks),
    ]
    for m in ROWS:
        mf, po = cv["modes"][m]["mean_over_folds"], cv["modes"][m]["pooled"]["overall"]
        lines.append(f"| {m} | " + " | ".join(
            f"{mf[f'r@{k}']:.1f} ({po[f'r@{k}']:.1f})" for k in ks) + " |")
    h = cv["modes"]["hybrid"]["mean_over_folds"]
    lines.append("")
    for base in ("fts", "fts_default"):
        f = cv["modes"][base]["mean_over_folds"]
        lines.append(f"hybrid - {base} (mean over folds): " + ", ".join(
            f"@{k} {h[f'r@{k}'] - f[f'r@{k}']:+.1f}" for k in ks))
    lines.append("")
    cats = cv["modes"]["fts"]["pooled"]["by_category"]
    lines += ["Per category, pooled (R@5 / R@10 / R@25):", "",
              "| category | n | " + " | ".join(ROWS) + " |",
              "|---|---:|" + "---|" * len(ROWS)]
    for cat, first in cats.items():
        cells = []
        for m in ROWS:
            c = cv["modes"][m]["pooled"]["by_category"][cat]
            cells.append(" / ".join(f"{c[f'r@{k}']:.1f}" for k in ks))
        lines.append(f"| {cat} | {first['n']} | " + " | ".join(cells) + " |")
    lines += ["", "Folds (setting chosen on the other conversations; held-out R@5/10/25):", "",
              "| held out | n | text | fts terms, coverage | vector cosine >= | fts "
              "| fts default | hybrid |",
              "|---|---:|---|---|---:|---|---|---|"]
    for fo in cv["folds"]:
        ch = fo["chosen"]
        lines.append(
            f"| {fo['held_out']} | {fo['questions']} | {ch['text']} "
            f"| {ch['fts_min_matched']}, {ch['fts_min_coverage']:.2f} "
            f"| {ch['vector_min_cosine']:.2f} | "
            + " | ".join(" / ".join(f"{x:.1f}" for x in fo[f"{m}_r@k"])
                         for m in ("fts", "fts_default", "hybrid"))
            + " |"
        )
    lines += ["", "In sample (every conversation, each setting; not the figure): "
              "fts | hybrid | vector R@5/10/25", ""]
    for label, r in cv["in_sample"].items():
        lines.append(f"- {label}: " + " | ".join(
            "/".join(f"{x:.1f}" for x in r[m]) for m in ("fts", "hybrid", "vector")))
    return "\n".join(lines)
