"""Search matches what people type, on SQLite and seekdb alike (the default analyzer
``v2``; docs/analyzers.md, "v2"; Memory RFC, "Normalization, hashing, and the search
analyzer"): a query without the accents, widths or special letters of the stored text
finds it, a version number without its ``v`` ranks the entry naming that version first,
and over generated text both engines index exactly the analyzer's tokens and return the
same hits. Through the real search path of each engine."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from support.engines import search_all, service, store, texts_found

from powercontext.core import analyzer
from powercontext.testing import run

EXAMPLES = [
    ("cafe", "café au lait"),
    ("resume", "send me your résumé"),
    ("zurich", "the Zürich office"),
    ("API", "the ＡＰＩ gateway"),  # full-width
    ("ｶﾀｶﾅ", "カタカナで書く"),  # half-width finds full-width
    ("プログラム", "ﾃｽﾄのﾌﾟﾛｸﾞﾗﾑ"),  # and the other way round, voiced marks included
    ("istanbul", "the İstanbul office"),  # Turkish dotted capital I
    ("diyarbakir", "Diyarbakır trip"),  # Turkish dotless i
    ("strasse", "die Straße ist lang"),
    ("kobenhavn", "København harbour"),
    ("lodz", "Łódź station"),
    ("file", "the ﬁle manager"),  # ligature
    ("microservice", "a micro\u00adservice split"),  # soft hyphen
]


def test_what_people_type_finds_the_entry_on_both_engines(engine) -> None:
    _, open_backend = engine
    texts = [stored for _, stored in EXAMPLES] + ["an unrelated entry", "cafeteria menu"]
    hits = search_all(open_backend("typed"), texts, [q for q, _ in EXAMPLES])
    assert {q: hits[q] for q, _ in EXAMPLES} == {q: [stored] for q, stored in EXAMPLES}


VERSIONS = [
    "release v1.2.3 added the export button",
    "release v1.2.4 fixed the login bug",
    # each holds the numbers 1, 2 and 3: with Analyzer v1 they outranked the v1.2.3 entry
    "the upgrade from 1.2 to 2.3 took 1 day",
    "step 1 of 3: copy 2 files",
    "route 1.2.3.4 through the gateway",
]


def test_a_version_number_without_its_v_ranks_the_entry_naming_it_first(engine) -> None:
    _, open_backend = engine
    hits = search_all(open_backend("versions"), VERSIONS,
                      ["1.2.3", "v1.2.3", "V1.2.3", "ｖ１．２．３"])
    assert {q: found[0] for q, found in hits.items()} == dict.fromkeys(hits, VERSIONS[0])


def test_an_existing_database_keeps_its_analyzer_and_v1_keeps_the_spec_rules(engine) -> None:
    _, open_backend = engine
    for version in ("v1", "v1-porter"):
        backend = open_backend(f"old_{version.replace('-', '_')}", analyzer=version)
        hits = search_all(backend, ["café au lait", VERSIONS[0], VERSIONS[2]],
                          ["cafe", "café", "1.2.3"])
        assert run(backend.analyzer()) is analyzer.get(version)
        assert hits["cafe"] == [] and hits["café"] == ["café au lait"]
        assert hits["1.2.3"][0] == VERSIONS[2]  # the behaviour v2 fixes


# -------------------------------------------------------------- the engines, differentially

_WORDS = [
    "café", "cafe", "CAFÉ", "résumé", "resume", "Zürich", "zurich", "ＡＰＩ", "API", "api",
    "ｶﾀｶﾅ", "カタカナ", "ｶﾞｲﾄﾞ", "ガイド", "v1.2.3", "1.2.3", "V1.2.3", "release-1.2.4",
    "pkg-2.0.1.tar.gz", "İstanbul", "ıstanbul", "Straße", "strasse", "ﬁle", "København",
    "Łódź", "Ærø", "œuvre", "Οδυσσεύς", "ΟΔΥΣΣΕΥΣ", "ёлка", "مُحَمَّد", "שָׁלוֹם", "中文",
    "数据库", "한국어", "ㅋㅋ", "ﾡﾤ", "ทีม", "ฐานข้อมูล", "㌖", "ำ", "ADR-0005", "src/app/main.py",
    "micro\u00adservice", "zero\u200bwidth", "x²", "①", "deploy", "deploying", "the", "notes",
    "go", "ci", "x86_64", "2",
]
_TEXT = st.lists(st.one_of(st.sampled_from(_WORDS), st.text(max_size=3)), min_size=1,
                 max_size=12).map(" ".join)


def _stored_rows(backend: Any, artifact_id: str) -> dict[str, str]:
    """entry text -> stored searchable_text of every head row of one Memory."""
    def read() -> dict[str, str]:
        query = (getattr(backend, "sqlite_engine", None) or backend.ob_engine).rows
        mark = "?" if hasattr(backend, "sqlite_engine") else "%s"
        stored = {str(e): str(t) for e, t in query(
            "SELECT entry_id, searchable_text FROM memory_entry_heads "
            f"WHERE memory_artifact_id = {mark}", (artifact_id,))}
        revision = backend._memory_tables.rows.head(artifact_id)
        parsed = backend._memory_tables.parsed(artifact_id, revision)
        ids = [e.entry_version_id for e in parsed.revision.content.manifest.entries]
        texts = {v.entry_id: v.text for v in backend._memory_tables.rows.entry_versions(ids)}
        return {texts[e]: s for e, s in stored.items()}

    return run(backend._run(backend._in_tx, False, read))


def _sqlite_tokens(backend: Any, text: str) -> list[str]:
    import apsw

    def tokenize() -> list[str]:
        # the tokenizer of memory_entry_search_fts (sql/sqlite.py)
        tok = backend.sqlite_engine.connection.fts5_tokenizer(
            "unicode61", ["remove_diacritics", "0", "tokenchars", "_"])
        return list(tok(text.encode(), apsw.FTS5_TOKENIZE_DOCUMENT, None,
                        include_offsets=False, include_colocated=False))

    return run(backend._run(tokenize))


def _seekdb_tokens(backend: Any, text: str) -> list[str]:
    from powercontext.sql import oceanbase as obsql

    raw = run(backend._run(backend.ob_engine.rows, obsql.tokenize(), (text,)))[0][0]
    return list(json.loads(raw.decode() if isinstance(raw, bytes) else raw))


@pytest.fixture(scope="module")
def both(seekdb_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """One SQLite file and one seekdb database for the whole module (each example writes
    its own Memory, and search is per Memory)."""
    from oceanbase_server import fresh_database

    from powercontext.adapters.oceanbase import OceanBaseMemoryBackend
    from powercontext.adapters.sqlite import SQLiteMemoryBackend

    path = tmp_path_factory.mktemp("diff") / "d.db"
    with fresh_database(seekdb_url, "pc_an_diff") as url:
        backends = {"sqlite": SQLiteMemoryBackend(str(path)),
                    "oceanbase": OceanBaseMemoryBackend(url)}
        try:
            yield backends
        finally:
            for backend in backends.values():
                run(backend.close())


def _entry_texts(raw: list[str]) -> list[str]:
    """The distinct valid entry texts among ``raw``, as stored (NFC, trimmed)."""
    from powercontext.core import canonical
    from powercontext.core.errors import InvalidInputError

    out: list[str] = []
    for t in raw:
        try:
            out.append(canonical.normalize_text(t, "text"))
        except InvalidInputError:
            continue
    return list(dict.fromkeys(out))


@pytest.mark.oceanbase
@settings(max_examples=30, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(st.lists(_TEXT, min_size=1, max_size=12),
       st.lists(st.one_of(st.sampled_from(_WORDS), _TEXT), min_size=1, max_size=6))
def test_over_generated_text_both_engines_index_the_analyzer_tokens_and_agree_on_hits(
        both: dict[str, Any], raw: list[str], queries: list[str]) -> None:
    from powercontext.core.errors import InvalidInputError

    texts = _entry_texts(raw)
    assume(texts)
    a = analyzer.get()
    answers: dict[str, dict[str, Any]] = {}
    for name, backend in both.items():
        async def body(backend: Any = backend) -> tuple[Any, dict[str, Any]]:
            svc = service(backend)
            ref = await store(svc, texts)
            out: dict[str, Any] = {}
            for q in queries:
                try:
                    out[q] = set(await texts_found(svc, ref, q, limit=len(texts)))
                except InvalidInputError as exc:  # no searchable term: on both alike
                    out[q] = exc.field
            return ref, out

        ref, answers[name] = run(body())
        stored = _stored_rows(backend, ref.artifact_id)
        engine_tokens = _sqlite_tokens if name == "sqlite" else _seekdb_tokens
        for text in texts:
            assert stored[text] == a.searchable_text(text), (name, text)
            if stored[text]:  # what the engine's own tokenizer keeps of the row
                kept = engine_tokens(backend, stored[text])
                if name == "sqlite":
                    assert kept == a.analyze(text), (name, text)
                else:  # TOKENIZE answers each distinct token once, in its own order
                    assert sorted(kept) == sorted(set(a.analyze(text))), (name, text)
    assert answers["sqlite"] == answers["oceanbase"]
