"""Where hybrid loses to fts on LoCoMo (issue 14 item 3): at one setting, the questions
whose hybrid recall@5 is below fts's, per category, and what took the places of the fts
top-5 entries in hybrid's top 5: entries both channels admitted (RRF adds their two
ranks) or entries only the vector channel admitted. Every list is the library's own
``search`` (hybrid hits carry ``matched_by``).

``python -m bench.locomo_loss [--text speaker|date|nospeaker] [--floor 0.35]
[--fts 2:0.25] [--data FILE] [--model local|deterministic]`` prints a markdown table
(embeddings from the CV cache, ``bench/results/.cache/vectors``).
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
from collections import Counter
from pathlib import Path

from bench import locomo, locomo_cv
from bench.vector_cache import DiskCachedModel
from powercontext.core import analyzer as analyzers
from powercontext.plugins.registry import Registry

K = 5


async def _run(text: str, floor: float, fts: tuple[int, float], cache: Path | None,
               data: Path = locomo.DEFAULT_DATA, model_name: str = "local") -> str:
    convs = locomo.load(data)
    registry = Registry()
    model = DiskCachedModel(locomo.build_model(model_name, registry), cache)
    date, speaker = locomo_cv.TEXTS[text]
    tally: dict[int, Counter[str]] = {}
    with tempfile.TemporaryDirectory(prefix="locomo-loss-") as tmp, \
            locomo_cv.vector_floor(floor), locomo_cv.fts_admission(fts):
        for n, conv in enumerate(convs):
            ix = await locomo.index(conv, Path(tmp) / f"c{n}.db", model, registry,
                                    session_date=date, speaker=speaker,
                                    analyzer=analyzers.DEFAULT_VERSION)
            for q in conv.questions:
                t = tally.setdefault(q.category, Counter())
                t["questions"] += 1
                res = {m: (await ix.service.search(q.question, [ix.ref], limit=locomo.LIMIT,
                                                   mode=m)).hits  # type: ignore[arg-type]
                       for m in ("fts", "hybrid")}
                rec = {m: locomo.recalls(q.evidence, [ix.dias[h.entry_id] for h in hs])[0]
                       for m, hs in res.items()}
                if rec["hybrid"] >= rec["fts"]:
                    t["hybrid_gains" if rec["hybrid"] > rec["fts"] else "equal"] += 1
                    continue
                t["hybrid_loses"] += 1
                fts_top = {h.entry_id for h in res["fts"][:K]}
                for h in res["hybrid"][:K]:
                    if h.entry_id not in fts_top:
                        t["both" if len(h.matched_by) == 2 else h.matched_by[0]] += 1
                lost = [h for h in res["fts"][:K] if ix.dias[h.entry_id] & q.evidence
                        and h.entry_id not in {x.entry_id for x in res["hybrid"][:K]}]
                t["lost_evidence_entries"] += len(lost)
                t["lost_at_fts_rank_1"] += int(bool(res["fts"]) and res["fts"][0] in lost)
            await ix.service.close()
    model.close()
    cols = ["questions", "hybrid_gains", "hybrid_loses", "lost_evidence_entries",
            "lost_at_fts_rank_1", "both", "vector", "fts"]
    lines = [f"Hybrid against fts at R@{K}; text {text}, fts admission {fts}, cosine >= "
             f"{floor}. Intruders: hybrid top-{K} entries not in the fts top {K}, by "
             "matched_by, on the questions hybrid loses.", "",
             "| category | " + " | ".join(cols) + " |", "|---|" + "---:|" * len(cols)]
    for c in sorted(tally):
        lines.append(f"| {c} {locomo.CATEGORIES[c]} | "
                     + " | ".join(str(tally[c][x]) for x in cols) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.locomo_loss")
    p.add_argument("--text", default="speaker", choices=list(locomo_cv.TEXTS))
    p.add_argument("--floor", type=float, default=0.35)
    p.add_argument("--fts", default="2:0.25")
    p.add_argument("--cache", type=Path, default=locomo.DEFAULT_OUT / ".cache" / "vectors")
    p.add_argument("--data", type=Path, default=locomo.DEFAULT_DATA)
    p.add_argument("--model", default="local", choices=["local", "deterministic"])
    a = p.parse_args(argv)
    m, _, c = a.fts.partition(":")
    print(asyncio.run(_run(a.text, a.floor, (int(m), float(c)), a.cache, a.data, a.model)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
