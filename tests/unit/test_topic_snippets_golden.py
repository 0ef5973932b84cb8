"""The snippet of every case of golden/topic_snippets.json, byte for byte: chunk texts
of English turns, identifiers, long joined runs, CJK, Thai, marks, folded forms and
CRLFs, each with queries of words it holds (stemmed forms, repeats, absent words), under
every Analyzer; recorded from the definition kept in tests/support/snippet_reference.py
before the search path computed snippets from a span index. ``PC_WRITE_GOLDEN=1``
rewrites the file from that reference (only when the definition is meant to change)."""

from __future__ import annotations

import json
import os
import random
from pathlib import Path
from typing import Any

import pytest

from powercontext.core import analyzer
from powercontext.core.topic.snippets import match_snippet, stable_snippet
from tests.support import snippet_reference

GOLDEN = Path(__file__).parent / "golden" / "topic_snippets.json"

PROSE = ("we deployed the new payment service on friday and the rollback plan worked; "
           "Caroline said running tests before review is what keeps the release happy. "
           "Melanie painted sunsets, adopted a puppy named Biscuit and went hiking with "
           "her kids. The migration generalization broke relational queries twice, so the "
           "team wrote ADR-0005 about connection pooling in main.py and config_v2.yaml. "
           "Happiness, happily, happier: the runners ran and runs were repeated at "
           "10:30 pm on 8 May, 2023 with version v1.2.3 of the api-gateway")
ENGLISH = PROSE.split(" ")
OTHER = ["中文", "服务器", "部署了新的", "ก่ข", "ภาษาไทย", "x\u0301", "Straße", "café", "ＡＰＩ",
         "ｶﾀｶﾅ", "micro\u00adservice", "zero\u200bwidth", "㈱日本", "ｖ１．２．３", "naïve",
         "\U0001f600", "\u2019s", "“quoted”", "—", "–", "a\u2024b",
         "averyveryverylongidentifier-" * 3 + "end", "x" * 90, "a_b.c-d/e"]
SEPS = [" ", " ", " ", " ", "\n", ", ", ". ", "\r\n", "\n\n", "\u3000", "", " (", ") "]


def _texts() -> list[str]:
    rng = random.Random(20261208)
    texts = []
    for i in range(48):
        pool = ENGLISH if i % 3 else ENGLISH + OTHER
        words = rng.choices(pool, k=rng.randint(4, 300))
        texts.append("".join(w + rng.choice(SEPS) for w in words).strip(" "))
    return texts


def _queries(text: str, rng: random.Random) -> list[str]:
    words = text.split() or ["nothing"]
    out = [rng.choice(words), " ".join(rng.choices(words, k=3)),
           " ".join(rng.choices(words + ENGLISH, k=rng.randint(2, 6))),
           "absent words only zyzzyva", rng.choice(words) + " " + rng.choice(OTHER)]
    return out


def _cases() -> dict[str, Any]:
    rng = random.Random(7)
    texts = _texts()
    cases = []
    for t, text in enumerate(texts):
        for query in _queries(text, rng):
            for version, a in analyzer.ANALYZERS.items():
                terms = a.query_terms(query)
                cases.append([version, t, query,
                              snippet_reference.match_snippet(text, terms, a)])
    return {"texts": texts, "stable": [snippet_reference.stable_snippet(t) for t in texts],
            "cases": cases}


def _golden() -> dict[str, Any]:
    if os.environ.get("PC_WRITE_GOLDEN"):
        GOLDEN.write_text(json.dumps(_cases(), ensure_ascii=True, indent=0) + "\n",
                          encoding="utf-8")
    return json.loads(GOLDEN.read_text(encoding="utf-8"))  # type: ignore[no-any-return]


def test_the_golden_holds_hundreds_of_matched_and_unmatched_cases() -> None:
    cases = _golden()["cases"]
    found = sum(1 for *_, snip in cases if snip is not None)
    assert len(cases) >= 700 and found >= 450 and len(cases) - found >= 100


def test_the_reference_still_gives_the_golden() -> None:
    assert _cases() == _golden()


@pytest.mark.parametrize("version", sorted(analyzer.ANALYZERS))
def test_match_snippet_gives_the_golden_snippets(version: str) -> None:
    golden = _golden()
    a = analyzer.ANALYZERS[version]
    got = [[v, t, q, match_snippet(golden["texts"][t], a.query_terms(q), a)]
           for v, t, q, _ in golden["cases"] if v == version]
    assert got == [c for c in golden["cases"] if c[0] == version]


def test_stable_snippet_gives_the_golden_windows() -> None:
    golden = _golden()
    assert [stable_snippet(t) for t in golden["texts"]] == golden["stable"]
