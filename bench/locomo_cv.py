"""Leave-one-conversation-out cross-validation of the retrieval settings on LoCoMo
(issue 14 item 3): ``python -m bench locomo`` runs it after the plain table (``--no-cv``
skips it; ``--cv-only`` runs nothing else).

Parameters. A setting is a pair (session date in the entry text or not, the vector
channel's cosine admission floor, :data:`powercontext.core.search_admission.VECTOR_MIN_COSINE`).
Every conversation is indexed through the real library once per entry text and searched
once per floor in each mode (fts, vector, hybrid; limit 25) with the floor set on the
library's admission module: every figure here is the library's own search, no
re-ranking outside it. The fts channel does not depend on the floor.

Method. For each of the conversations (a fold), the setting with the best hybrid score
on the other conversations (pooled over their questions, the mean of recall@5, @10 and
@25; ties: the first in grid order) is chosen and every mode is scored on the held-out
conversation with it. The cross-validated figure of a mode is the mean over folds of its
held-out recall@k; ``pooled`` scores every question with the setting its own fold chose.
Per category figures are pooled (a category can be rare in one conversation).
"""

from __future__ import annotations

import contextlib
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

__all__ = ["DATES", "FLOORS", "Setting", "cross_validate", "cv_table", "vector_floor"]

#: the vector admission floors tried (cosine similarity)
FLOORS = (0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.65)
#: session date in the entry text: on, off
DATES = (True, False)
Rows = list[tuple[int, list[float]]]


@dataclass(frozen=True, order=True)
class Setting:
    session_date: bool
    floor: float

    def label(self) -> str:
        return f"{'date' if self.session_date else 'no date'}, cosine >= {self.floor:.2f}"


@contextlib.contextmanager
def vector_floor(floor: float) -> Iterator[None]:
    """The library's vector admission floor set to ``floor`` for the block."""
    saved = search_admission.VECTOR_MIN_COSINE
    search_admission.VECTOR_MIN_COSINE = floor
    try:
        yield
    finally:
        search_admission.VECTOR_MIN_COSINE = saved


def _cosine(a: Sequence[float], b: Sequence[float]) -> float:
    return math.fsum(x * y for x, y in zip(a, b, strict=True))


@dataclass
class Channels:
    """One question's channel lists as the library returned them: the fts hits (the
    channel's admitted order) and the vector hits at the lowest floor, with cosines."""

    question: locomo.Question
    fts: list[tuple[RankKey, frozenset[str]]]
    vector: list[tuple[RankKey, frozenset[str], float]]


async def _channels(
    conv: locomo.Conversation, ix: locomo.Indexed, model: DiskCachedModel, floor: float
) -> list[Channels]:
    """Each question's fts and vector lists, ``budget(LIMIT)`` long, read through the
    library's own fts and vector searches (``vector_floor(floor)``, the lowest floor)."""
    budget = ranking.candidate_budget(locomo.LIMIT)
    out = []
    with vector_floor(floor):
        for q in conv.questions:
            lists: dict[str, Any] = {}
            for mode in ("fts", "vector"):
                result = await ix.service.search(q.question, [ix.ref], limit=budget, mode=mode)  # type: ignore[arg-type]
                if result.mode != mode:
                    raise RuntimeError(f"asked for {mode}, ran {result.mode}")
                lists[mode] = result.hits
            qv = model.vector(q.question)
            vec = []
            for h in lists["vector"]:
                ev = model.vector(h.text)
                if qv is None or ev is None:
                    raise RuntimeError("a vector the library used is not in the cache")
                vec.append((_key(h), ix.dias[h.entry_id], _cosine(qv, ev)))
            out.append(Channels(q, [(_key(h), ix.dias[h.entry_id]) for h in lists["fts"]], vec))
    return out


def _key(hit: Any) -> RankKey:
    return RankKey(hit.memory_ref.artifact_id, hit.entry_id, hit.entry_version_id)


def ranked(ch: Channels, mode: str, floor: float) -> list[frozenset[str]]:
    """The first LIMIT hits' dia_ids of ``mode`` at ``floor``: the vector channel is the
    prefix of its list at or above the floor (admission is monotone in distance, within
    the library's tolerance); hybrid fuses the lists with the library's RRF."""
    bar = floor - search_admission.VECTOR_COSINE_TOLERANCE
    vec = [(k, d) for k, d, c in ch.vector if c >= bar]
    if mode == "fts":
        return [d for _, d in ch.fts[: locomo.LIMIT]]
    if mode == "vector":
        return [d for _, d in vec[: locomo.LIMIT]]
    dias = dict(ch.fts) | dict(vec)
    fused = rrf.fuse({"fts": [k for k, _ in ch.fts], "vector": [k for k, _ in vec]})
    return [dias[RankKey(*f.key)] for f in fused[: locomo.LIMIT]]


def _rows(chs: list[Channels], mode: str, floor: float) -> Rows:
    return [(c.question.category, locomo.recalls(c.question.evidence, ranked(c, mode, floor)))
            for c in chs]


async def _library_rows(
    conv: locomo.Conversation, ix: locomo.Indexed, mode: str, floor: float
) -> Rows:
    """The same rows from the library's own search in ``mode`` at ``floor``."""
    out: Rows = []
    with vector_floor(floor):
        for q in conv.questions:
            hits = await locomo.rank(ix, q.question, mode)
            out.append((q.category, locomo.recalls(q.evidence, hits)))
    return out


def _mean(rows: Rows) -> list[float]:
    n = len(rows)
    return [100 * sum(r[i] for _, r in rows) / n if n else 0.0 for i in range(len(locomo.KS))]


def _objective(rows: Rows) -> float:
    return sum(_mean(rows)) / len(locomo.KS)


def folds(
    convs: list[locomo.Conversation], measured: dict[Setting, dict[str, list[Rows]]],
) -> dict[str, Any]:
    """Leave-one-conversation-out: per fold the chosen setting and held-out figures; per
    mode the cross-validated figures."""
    grid = list(measured)
    fold_out = []
    held: dict[str, list[Rows]] = {m: [] for m in locomo.MODES}
    for i, conv in enumerate(convs):
        train = {
            s: _objective([r for j, rows in enumerate(measured[s]["hybrid"]) if j != i
                           for r in rows])
            for s in grid
        }
        best = max(grid, key=lambda s: (train[s], -grid.index(s)))
        for m in locomo.MODES:
            held[m].append(measured[best][m][i])
        fold_out.append({
            "held_out": conv.sample_id,
            "questions": len(conv.questions),
            "chosen": {"session_date": best.session_date, "vector_min_cosine": best.floor},
            "train_hybrid_objective": round(train[best], 2),
            **{f"{m}_r@k": [round(x, 2) for x in _mean(measured[best][m][i])]
               for m in locomo.MODES},
        })
    modes: dict[str, Any] = {}
    for m in locomo.MODES:
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
    floors: Sequence[float] = FLOORS, dates: Sequence[bool] = DATES, captions: bool = True,
    progress: Any = None,
) -> dict[str, Any]:
    """The cross-validation report (a JSON-ready dict); vectors cached under
    ``workdir / "vectors"``. Every fold's held-out figures at its chosen setting are
    checked against the library's own search at that setting (``library_check``)."""
    convs = locomo.load(data, captions=captions)
    if len(convs) < 2:
        raise SystemExit("cross-validation needs at least two conversations")
    registry = Registry()
    model = DiskCachedModel(locomo.build_model(model_name, registry), workdir / "vectors")
    settings = [Setting(d, f) for d in dates for f in floors]
    measured: dict[Setting, dict[str, list[Rows]]] = {}
    indexed: dict[bool, list[locomo.Indexed]] = {}
    workdir.mkdir(parents=True, exist_ok=True)
    with contextlib.ExitStack() as stack:
        try:
            for date in dates:
                tmp = Path(stack.enter_context(
                    tempfile.TemporaryDirectory(prefix="locomo-cv-", dir=workdir)))
                indexed[date] = ixs = []
                chans = []
                for n, c in enumerate(convs):
                    ixs.append(await locomo.index(c, tmp / f"conv{n}.db", model, registry,
                                                  session_date=date, analyzer=version))
                    chans.append(await _channels(c, ixs[-1], model, min(floors)))
                    if progress:
                        progress(f"date={date} conversation {c.sample_id}: read")
                for s in (s for s in settings if s.session_date == date):
                    measured[s] = {m: [_rows(ch, m, s.floor) for ch in chans]
                                   for m in locomo.MODES}
            report = folds(convs, measured)
            checked = differing = 0
            for i, fo in enumerate(report["folds"]):
                ch = fo["chosen"]
                best = Setting(ch["session_date"], ch["vector_min_cosine"])
                for m in locomo.MODES:
                    lib = await _library_rows(convs[i], indexed[best.session_date][i], m,
                                              best.floor)
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
        "grid": {"session_date": list(dates), "vector_min_cosine": list(floors)},
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
    for m in locomo.MODES:
        mf, po = cv["modes"][m]["mean_over_folds"], cv["modes"][m]["pooled"]["overall"]
        lines.append(f"| {m} | " + " | ".join(
            f"{mf[f'r@{k}']:.1f} ({po[f'r@{k}']:.1f})" for k in ks) + " |")
    h, f = cv["modes"]["hybrid"]["mean_over_folds"], cv["modes"]["fts"]["mean_over_folds"]
    lines += ["", "hybrid - fts (mean over folds): " + ", ".join(
        f"@{k} {h[f'r@{k}'] - f[f'r@{k}']:+.1f}" for k in ks), ""]
    cats = cv["modes"]["fts"]["pooled"]["by_category"]
    lines += ["Per category, pooled (R@5 / R@10 / R@25):", "",
              "| category | n | " + " | ".join(locomo.MODES) + " |",
              "|---|---:|" + "---|" * len(locomo.MODES)]
    for cat, first in cats.items():
        cells = []
        for m in locomo.MODES:
            c = cv["modes"][m]["pooled"]["by_category"][cat]
            cells.append(" / ".join(f"{c[f'r@{k}']:.1f}" for k in ks))
        lines.append(f"| {cat} | {first['n']} | " + " | ".join(cells) + " |")
    lines += ["", "Folds (setting chosen on the other conversations; held-out R@5/10/25):", "",
              "| held out | n | session date | vector cosine >= | fts | hybrid |",
              "|---|---:|---|---:|---|---|"]
    for fo in cv["folds"]:
        ch = fo["chosen"]
        lines.append(
            f"| {fo['held_out']} | {fo['questions']} | {'on' if ch['session_date'] else 'off'} "
            f"| {ch['vector_min_cosine']:.2f} | "
            + " | ".join(" / ".join(f"{x:.1f}" for x in fo[f"{m}_r@k"]) for m in ("fts", "hybrid"))
            + " |"
        )
    lines += ["", "In sample (every conversation, each setting; not the figure): "
              "fts | hybrid | vector R@5/10/25", ""]
    for label, r in cv["in_sample"].items():
        lines.append(f"- {label}: " + " | ".join(
            "/".join(f"{x:.1f}" for x in r[m]) for m in ("fts", "hybrid", "vector")))
    return "\n".join(lines)
