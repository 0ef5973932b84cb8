"""LoCoMo retrieval-quality benchmark (issue 4, item 7).

``python -m bench locomo [--data FILE] [--out DIR] [--modes fts,vector,hybrid]
[--analyzer v1,v1-porter] [--model local|deterministic] [--quick]``

Method. Every dialogue turn of a conversation becomes one entry (kind ``turn``, text
``"<speaker>: <text>"``, no session date) of that conversation's own Memory, written
through the real library: a :class:`powercontext.service.MemoryService` on a fresh SQLite
file (sqlite-vec, the embedding model's profile) with ``remember(mode="append")`` in
batches of :data:`BATCH` entries. Identical turns collapse into one entry (the spec keeps
only the first identical entry), so an entry stands for every dia_id with its text.
Each question is a ``search`` with ``limit=25`` on that Memory in each mode. Each search
analyzer version (``--analyzer``, default: every registered one) gets its own databases,
so a system is named ``<mode>:<analyzer>`` (``fts:v1``); vectors are embedded once and
shared (the embedding model does not depend on the analyzer).

Scoring. Evidence recall@k = |evidence ∩ dia_ids of the top-k hits| / |evidence|,
averaged over the questions that have at least one evidence turn present in the
conversation (malformed ids such as ``D:11:26`` are repaired, unknown ones dropped).
Category 5 (adversarial) questions have evidence and are included in ``overall``;
``overall_1_4`` leaves them out. The plain-FTS5 anchor is recomputed on the same turns
(:class:`bench.anchors.PlainFTS5`).

Then (``--cv``, default on without ``--quick``) the leave-one-conversation-out
cross-validation of the retrieval settings, :mod:`bench.locomo_cv`; embedding vectors are
cached on disk under ``--workdir`` (default ``<out>/.cache``).

Outputs: ``<out>/locomo-<date>.json``, ``<out>/locomo-<date>.md`` (the tables, with the
command), ``<out>/locomo-<date>.png`` (recall against k, recall@10 per category) and the
markdown tables on stdout with our rows beside the anchors, the first of them the
retrieval table docs/benchmarks.md shows.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import tempfile
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.anchors import PUBLISHED, PlainFTS5
from bench.plotting import pyplot
from bench.vector_cache import DiskCachedModel
from powercontext.core import analyzer as analyzers
from powercontext.core import canonical, search_admission
from powercontext.core.models import ArtifactRef, MemoryEntryInput
from powercontext.plugins.registry import Registry
from powercontext.service import MemoryService

__all__ = ["KS", "Conversation", "Question", "load", "parse_evidence", "run"]

KS = (5, 10, 25)
LIMIT = 25
BATCH = 100
DEFAULT_DATA = Path("/work/shared/data/locomo-dev.json")
DEFAULT_OUT = Path(__file__).resolve().parent / "results"
MODES = ("fts", "vector", "hybrid")
PLAIN = "plain-fts5"
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}


@dataclass(frozen=True)
class Turn:
    dia_id: str
    speaker: str
    text: str
    caption: str = ""  # BLIP caption of a shared image ("blip_caption"), if any
    date: str = ""  # the session's date ("8 May, 2023"), from session_<n>_date_time


@dataclass(frozen=True)
class Question:
    question: str
    category: int
    evidence: frozenset[str]


@dataclass
class Conversation:
    sample_id: str
    turns: list[Turn]
    questions: list[Question]
    skipped: int = 0  # questions without usable evidence


@dataclass
class Indexed:
    """One conversation written to its Memory."""

    service: MemoryService
    ref: ArtifactRef
    dias: dict[str, frozenset[str]]  # entry_id -> dia_ids with that text
    texts: list[tuple[str, str]] = field(default_factory=list)  # (entry_id, text)


# ---------------------------------------------------------------------------- data

_SESSION = re.compile(r"^session_(\d+)$")
_DIA = re.compile(r"^D:?(\d+):(\d+)$")


def parse_evidence(raw: Iterable[str], known: set[str]) -> frozenset[str]:
    """Evidence dia_ids present in the conversation. Items may hold several ids
    (``"D8:6; D9:17"``); ``D:11:26`` is read as ``D11:26``; unknown ids are dropped."""
    out = set()
    for item in raw:
        for part in re.split(r"[;,\s]+", str(item)):
            m = _DIA.match(part.strip())
            if m:
                dia = f"D{m.group(1)}:{m.group(2)}"
                if dia in known:
                    out.add(dia)
    return frozenset(out)


def load(path: str | Path, *, quick: bool = False, captions: bool = True) -> list[Conversation]:
    """Conversations of a LoCoMo-format JSON file (a list of samples with
    ``conversation`` and ``qa``). ``quick`` keeps the first conversation and its first
    60 questions."""
    data = json.loads(Path(path).read_text("utf-8"))
    convs = []
    for n, sample in enumerate(data):
        c = sample["conversation"]
        sessions = sorted((int(m.group(1)), k) for k in c if (m := _SESSION.match(k)))
        turns = [
            Turn(
                t["dia_id"],
                t["speaker"],
                t["text"],
                str(t.get("blip_caption") or "") if captions else "",
                _date(c.get(f"{k}_date_time", "")),
            )
            for _, k in sessions
            if isinstance(c[k], list)
            for t in c[k]
            if str(t.get("text", "")).strip()
        ]
        known = {t.dia_id for t in turns}
        questions, skipped = [], 0
        for qa in sample.get("qa", ()):
            ev = parse_evidence(qa.get("evidence") or (), known)
            if not ev or not str(qa.get("question", "")).strip():
                skipped += 1
                continue
            questions.append(Question(qa["question"], int(qa["category"]), ev))
        convs.append(Conversation(str(sample.get("sample_id", n)), turns, questions, skipped))
    if quick:
        convs = convs[:1]
        convs[0].questions = convs[0].questions[:60]
    return convs


def _date(raw: str) -> str:
    """``"1:56 pm on 8 May, 2023"`` -> ``"8 May, 2023"``."""
    return str(raw).split(" on ", 1)[-1].strip()


def entry_text(turn: Turn, *, session_date: bool = False, speaker: bool = True) -> str:
    """``"<speaker>: <text>"`` (``speaker`` False: ``"<text>"``), then
    ``" [shared <caption>]"`` for a turn that shares an image; with ``session_date``
    prefixed by ``"[<date>] "``."""
    text = f"{turn.speaker}: {turn.text}" if speaker else turn.text
    if turn.caption:
        text += f" [shared {turn.caption}]"
    if session_date and turn.date:
        text = f"[{turn.date}] {text}"
    return text


# ---------------------------------------------------------------------------- library


async def index(
    conv: Conversation,
    db_path: Path,
    model: Any,
    registry: Registry,
    *,
    session_date: bool = False,
    analyzer: str | None = None,
    speaker: bool = True,
) -> Indexed:
    """Write ``conv``'s turns to a new Memory in a new SQLite file built with ``analyzer``
    (a version name; None: the default); entry texts :func:`entry_text` with
    ``session_date`` and ``speaker``."""
    backend = registry.backend_for_url(str(db_path), profile=model.profile, analyzer=analyzer)
    svc = MemoryService(backend, embedding_model=model)
    ref: ArtifactRef | None = None
    for i in range(0, len(conv.turns), BATCH):
        batch = [
            MemoryEntryInput("turn", entry_text(t, session_date=session_date, speaker=speaker))
            for t in conv.turns[i : i + BATCH]
        ]
        ref = await svc.remember(ref, entries=batch, mode="append")
    assert ref is not None
    by_text: dict[str, set[str]] = {}
    for t in conv.turns:
        by_text.setdefault(
            canonical.normalize_text(
                entry_text(t, session_date=session_date, speaker=speaker), "text"
            ),
            set(),
        ).add(t.dia_id)
    entries = await svc.entries(ref)
    dias = {e.entry_id: frozenset(by_text[e.text]) for e in entries.values()}
    covered = set().union(*dias.values())
    missing = {t.dia_id for t in conv.turns} - covered
    if missing:
        raise RuntimeError(f"{conv.sample_id}: turns without an entry: {sorted(missing)[:5]}")
    texts = sorted((e.entry_id, e.text) for e in entries.values())
    return Indexed(svc, ref, dias, texts)


async def rank(ix: Indexed, question: str, mode: str) -> list[frozenset[str]]:
    result = await ix.service.search(question, [ix.ref], limit=LIMIT, mode=mode)  # type: ignore[arg-type]
    if result.mode != mode:
        raise RuntimeError(f"asked for {mode}, ran {result.mode}")
    return [ix.dias[h.entry_id] for h in result.hits]


def recalls(evidence: frozenset[str], ranked: Sequence[frozenset[str]]) -> list[float]:
    out = []
    for k in KS:
        got = set().union(*ranked[:k]) if ranked[:k] else set()
        out.append(len(evidence & got) / len(evidence))
    return out


# ---------------------------------------------------------------------------- run


def settings(
    session_date: bool = False, captions: bool = True, versions: Sequence[str] = ()
) -> dict[str, Any]:
    """The retrieval settings the figures depend on."""
    return {
        "analyzers": {
            v: {"stemming": analyzers.get(v).porter, "stopwords": len(analyzers.get(v).stopwords)}
            for v in versions
        },
        "default_analyzer": analyzers.DEFAULT_VERSION,
        "fts_min_matched": search_admission.FTS_MIN_MATCHED,
        "fts_min_coverage": search_admission.FTS_MIN_COVERAGE,
        "vector_min_cosine": search_admission.VECTOR_MIN_COSINE,
        "limit": LIMIT,
        "entry_text": ("[<session date>] " if session_date else "")
        + "<speaker>: <text>"
        + (" [shared <blip_caption>] (image turns)" if captions else ""),
    }


async def evaluate(
    convs: list[Conversation],
    indexed: list[Indexed],
    modes: Sequence[str],
    *,
    plain: bool = True,
    suffix: str = "",
) -> dict[str, list[tuple[int, list[float]]]]:
    """Per system (``<mode><suffix>``, and the plain-FTS5 anchor), one (category,
    [recall@k for k in KS]) per question."""
    rows: dict[str, list[tuple[int, list[float]]]] = {m + suffix: [] for m in modes}
    if plain:
        rows[PLAIN] = []
    for conv, ix in zip(convs, indexed, strict=True):
        fts5 = PlainFTS5([text for _, text in ix.texts]) if plain else None
        for q in conv.questions:
            for mode in modes:
                rows[mode + suffix].append(
                    (q.category, recalls(q.evidence, await rank(ix, q.question, mode)))
                )
            if fts5 is not None:
                ranked = [ix.dias[ix.texts[i][0]] for i in fts5.search(q.question, LIMIT)]
                rows[PLAIN].append((q.category, recalls(q.evidence, ranked)))
        if fts5 is not None:
            fts5.close()
    return rows


def summarize(rows: list[tuple[int, list[float]]]) -> dict[str, Any]:
    def mean(sel: list[list[float]]) -> dict[str, float | int]:
        n = len(sel)
        out: dict[str, float | int] = {
            f"r@{k}": (round(100 * sum(r[i] for r in sel) / n, 2) if n else 0.0)
            for i, k in enumerate(KS)
        }
        out["n"] = n
        return out

    return {
        "overall": mean([r for _, r in rows]),
        "overall_1_4": mean([r for c, r in rows if c != 5]),
        "by_category": {
            f"{c} {CATEGORIES.get(c, '?')}": mean([r for cc, r in rows if cc == c])
            for c in sorted({c for c, _ in rows})
        },
    }


def build_model(name: str, registry: Registry) -> Any:
    if name == "local":
        return registry.embedding_model("local")
    if name == "deterministic":
        return registry.embedding_model("deterministic")
    raise SystemExit(f"unknown --model {name!r} (local or deterministic)")


async def run(
    data: Path,
    modes: Sequence[str],
    model_name: str,
    *,
    quick: bool = False,
    session_date: bool = False,
    captions: bool = True,
    workdir: Path | None = None,
    versions: Sequence[str] | None = None,
    cache: Path | None = None,
) -> dict[str, Any]:
    """Index every conversation once per analyzer version (None: every registered one),
    query every question; the JSON report as a dict. Vectors are cached on disk under
    ``cache`` (:class:`bench.vector_cache.DiskCachedModel`; None: in memory only)."""
    started = time.perf_counter()
    registry = Registry()
    model = DiskCachedModel(build_model(model_name, registry), cache)
    convs = load(data, quick=quick, captions=captions)
    versions = list(versions if versions is not None else analyzers.ANALYZERS)
    rows: dict[str, list[tuple[int, list[float]]]] = {}
    index_s = query_s = 0.0
    indexed: list[Indexed] = []
    if workdir is not None:
        workdir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="locomo-", dir=workdir) as tmp:
        for i, version in enumerate(versions):
            indexed = []
            t0 = time.perf_counter()
            for n, conv in enumerate(convs):
                indexed.append(
                    await index(
                        conv, Path(tmp) / f"conv{n}-{version}.db", model, registry,
                        session_date=session_date, analyzer=version,
                    )
                )
            index_s += time.perf_counter() - t0
            t0 = time.perf_counter()
            rows.update(
                await evaluate(convs, indexed, modes, plain=i == 0, suffix=f":{version}")
            )
            query_s += time.perf_counter() - t0
            for ix in indexed:
                await ix.service.close()
    model.close()
    return {
        "benchmark": "locomo-evidence-recall",
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "data": str(data),
        "model": model_name,
        "quick": quick,
        "settings": settings(session_date, captions, versions),
        "counts": {
            "conversations": len(convs),
            "turns": sum(len(c.turns) for c in convs),
            "entries": sum(len(ix.dias) for ix in indexed),
            "questions": sum(len(c.questions) for c in convs),
            "questions_skipped_no_evidence": sum(c.skipped for c in convs),
        },
        "runtime_s": {
            "index": round(index_s, 1),
            "query": round(query_s, 1),
            "total": round(time.perf_counter() - started, 1),
        },
        "results": {name: summarize(r) for name, r in rows.items()},
        "anchors_published": {
            k: dict(zip((f"r@{x}" for x in KS), v, strict=True)) for k, v in PUBLISHED.items()
        },
    }


# ---------------------------------------------------------------------------- output


def _label(name: str, model: str) -> str:
    if name == PLAIN:
        return "plain FTS5 porter+stopwords (measured here)"
    return f"powercontext {name} ({model})"


_MODEL_NAMES = {"local": "all-MiniLM-L6-v2", "deterministic": "deterministic hashing"}


def _readme_label(name: str, model: str) -> str:
    if name == PLAIN:
        return "plain FTS5 porter+stopwords (same texts)"
    mode, _, version = name.partition(":")
    default = " (default)" if version == analyzers.DEFAULT_VERSION else ""
    used = f", {_MODEL_NAMES.get(model, model)}" if mode != "fts" else ""
    return f"powercontext {mode}, analyzer {version}{default}{used}"


def _order(res: dict[str, Any]) -> list[str]:
    systems = [n for n in res if n != PLAIN]
    versions = list(dict.fromkeys(n.partition(":")[2] for n in systems))
    ordered = [f"{m}:{v}" for m in MODES for v in versions if f"{m}:{v}" in res]
    return ordered + ([PLAIN] if PLAIN in res else [])


def readme_table(report: dict[str, Any]) -> str:
    """The retrieval table of docs/benchmarks.md ("Retrieval quality (LoCoMo)"): overall
    evidence recall of every system, the plain FTS5 baseline and the DRAGON anchor."""
    res = report["results"]
    lines = ["| system | R@5 | R@10 | R@25 |", "|---|---:|---:|---:|"]
    for name in _order(res):
        o = res[name]["overall"]
        lines.append(f"| {_readme_label(name, report['model'])} | {o['r@5']:.1f} | "
                     f"{o['r@10']:.1f} | {o['r@25']:.1f} |")
    a, b, c = PUBLISHED["DRAGON (LoCoMo paper)"]
    lines.append(f"| DRAGON (LoCoMo paper, full set) | {a:.1f} | {b:.1f} | {c:.1f} |")
    return "\n".join(lines)


def table(report: dict[str, Any]) -> str:
    """Markdown: the docs/benchmarks.md table, then our rows (all questions with evidence)
    beside the anchors, the same without category 5 (adversarial), then per category."""
    res = report["results"]
    order = _order(res)
    head = ["| system | R@5 | R@10 | R@25 | n |", "|---|---:|---:|---:|---:|"]
    lines = ["docs/benchmarks.md table (\"Retrieval quality (LoCoMo)\"):", "",
             readme_table(report), "", *head]
    for name in order:
        o = res[name]["overall"]
        lines.append(
            f"| {_label(name, report['model'])} | {o['r@5']:.1f} | {o['r@10']:.1f} | "
            f"{o['r@25']:.1f} | {o['n']} |"
        )
    for name, (a, b, c) in PUBLISHED.items():
        lines.append(f"| {name} | {a:.1f} | {b:.1f} | {c:.1f} | full set |")
    lines += ["", "Categories 1-4 only (adversarial questions left out):", "", *head]
    for name in order:
        o = res[name]["overall_1_4"]
        lines.append(
            f"| {_label(name, report['model'])} | {o['r@5']:.1f} | {o['r@10']:.1f} | "
            f"{o['r@25']:.1f} | {o['n']} |"
        )
    lines += [
        "",
        "Per category (R@5 / R@10 / R@25):",
        "",
        "| category | n | " + " | ".join(order) + " |",
        "|---|---:|" + "---|" * len(order),
    ]
    cats = res[order[0]]["by_category"]
    for cat, first in cats.items():
        cells = []
        for name in order:
            c = res[name]["by_category"][cat]
            cells.append(f"{c['r@5']:.1f} / {c['r@10']:.1f} / {c['r@25']:.1f}")
        lines.append(f"| {cat} | {first['n']} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def plot(report: dict[str, Any], path: Path) -> bool:
    """Write the PNG; False (nothing written) without matplotlib."""
    plt = pyplot()
    if plt is None:
        return False

    res = report["results"]
    fig, (left, right) = plt.subplots(1, 2, figsize=(13, 5))
    for name, r in res.items():
        o = r["overall"]
        left.plot(
            KS,
            [o[f"r@{k}"] for k in KS],
            marker="o",
            linewidth=2,
            label=_label(name, report["model"]),
        )
    for name, vals in PUBLISHED.items():
        left.plot(KS, vals, linestyle="--", marker="x", alpha=0.7, label=name)
    left.set_xlabel("k")
    left.set_ylabel("evidence recall@k (%)")
    left.set_xticks(KS)
    left.set_title(f"LoCoMo evidence recall, all categories (model: {report['model']})")
    left.grid(alpha=0.3)
    left.legend(fontsize=7)
    cats = list(next(iter(res.values()))["by_category"])
    width = 0.8 / max(1, len(res))
    for i, (name, r) in enumerate(res.items()):
        xs = [j + i * width for j in range(len(cats))]
        right.bar(xs, [r["by_category"][c]["r@10"] for c in cats], width, label=name)
    right.set_xticks([j + width * (len(res) - 1) / 2 for j in range(len(cats))])
    right.set_xticklabels(cats, fontsize=8)
    right.set_ylabel("evidence recall@10 (%)")
    right.set_title("recall@10 by question category")
    right.legend(fontsize=7)
    right.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True
