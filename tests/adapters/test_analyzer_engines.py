"""The search analyzers on both engines, through the real search path (Memory RFC,
"Normalization, hashing, and the search analyzer"; ARCHITECTURE.md, "Analyzer versions"):
whole kinds of text (scripts without spaces, long words, full case folding, identifiers)
are found on SQLite and seekdb alike, and the database's analyzer version is recorded at
creation, checked at open, and migrated by a rebuild."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import pytest

from powercontext.core import analyzer
from powercontext.core.errors import AnalyzerMismatchError, ProfileMismatchError
from powercontext.core.models import MemoryEntryInput
from powercontext.service import MemoryService
from powercontext.testing import run

Opener = Callable[..., Any]


_CLOCK = itertools.count(1_700_000_000_000)  # ids stay unique across services
_COUNTER = itertools.count(1)


def _service(backend: Any) -> MemoryService:
    return MemoryService(backend, clock=lambda: next(_CLOCK),
                         entropy=lambda n: next(_COUNTER).to_bytes(n, "big"))


async def _store(svc: MemoryService, texts: list[str]) -> Any:
    return await svc.remember(None, entries=tuple(MemoryEntryInput("fact", t) for t in texts))


async def _texts(svc: MemoryService, ref: Any, query: str) -> list[str]:
    return [h.text for h in (await svc.search(query, (ref,), mode="fts", limit=10)).hits]


def _search_all(backend: Any, texts: list[str], queries: list[str]) -> dict[str, list[str]]:
    async def body() -> dict[str, list[str]]:
        svc = _service(backend)
        try:
            ref = await _store(svc, texts)
            return {q: await _texts(svc, ref, q) for q in queries}
        finally:
            await svc.close()

    return run(body())


# -------------------------------------------------------------- whole kinds of text

THAI = "ทีมของเราใช้ฐานข้อมูลโพสต์เกรสในการผลิต"  # "our team uses a Postgres database in production"


def test_a_word_inside_a_thai_lao_khmer_or_myanmar_run_is_found(engine) -> None:
    _, open_backend = engine
    texts = [THAI, "ภาษาไทยเป็นภาษาที่สวยงาม", "ພວກເຮົາໃຊ້ຖານຂໍ້ມູນ", "យើងប្រើមូលដ្ឋានទិន្នន័យ",
             "ကျွန်ုပ်တို့ဒေတာဘေ့စ်ကိုသုံးသည်", "an English note"]
    hits = _search_all(open_backend("thai"), texts,
                       ["ฐานข้อมูล", "ถานข้อมูล", "ຖານຂໍ້ມູນ", "ទិន្នន័យ", "ဒေတာဘေ့စ်"])
    assert hits["ฐานข้อมูล"][0] == THAI  # "database": one run, no spaces
    assert hits["ຖານຂໍ້ມູນ"][0] == texts[2]
    assert hits["ទិន្នន័យ"][0] == texts[3]
    assert hits["ဒေတာဘေ့စ်"][0] == texts[4]


def test_a_long_word_is_found_by_its_full_form_and_ranked_above_a_shared_prefix(engine) -> None:
    _, open_backend = engine
    stem = "supercalifragilisticexpialidocious" * 2  # 68 characters
    long_a, long_b = stem + "alphaalphaalpha", stem + "betabetabeta"  # > 40, share 40
    cyrillic = "Достопримечательность" * 3  # 63 characters, 126 UTF-8 bytes
    texts = [f"{long_a} is one setting", f"{long_b} is another", f"{cyrillic} here",
             "short words only"]
    hits = _search_all(open_backend("long"), texts, [long_a, long_b, cyrillic])
    assert hits[long_a][0] == texts[0]
    assert hits[long_b][0] == texts[1]
    assert hits[cyrillic] == [texts[2]]
    for text in texts:
        assert max(len(t) for t in analyzer.analyze(text)) <= 84  # seekdb drops longer


@pytest.mark.parametrize(
    ("stored", "query"),
    [
        ("ΟΔΥΣΣΕΥΣ the traveller", "οδυσσευς"),  # Greek: final sigma folds to sigma
        ("όνομα: Σίσυφος", "ΣΊΣΥΦΟΣ"),
        ("die Straße ist lang", "STRASSE"),  # German ß folds to ss
        ("GROẞE Straße", "große"),  # capital sharp s
        ("ᏣᎳᎩ ᎦᏬᏂᎯᏍᏗ", "ꮳꮃꭹ"),  # Cherokee: lowercase folds to the capitals
        ("\U00010410\U00010436\U00010449", "\U00010438\U00010436\U00010449"),  # Deseret
        ("İstanbul trip", "i\u0307stanbul"),  # İ is i + combining dot under full folding
    ],
)
def test_matching_is_case_insensitive_for_every_script(engine, stored: str, query: str) -> None:
    _, open_backend = engine
    hits = _search_all(open_backend("case"), [stored, "unrelated entry"], [query])
    assert hits[query] == [stored]


def test_an_identifier_query_ranks_the_entry_naming_it_first(engine) -> None:
    _, open_backend = engine
    texts = [
        # "adr" three times in a short entry: without the joined token BM25 put it first
        "ADR-0050: ADR process for ADRs; every ADR gets a number",
        "ADR-0005 chose SQLite for the local cache because it is embedded, needs no "
        "server and is well tested across many platforms",
        "ADR-0051 records the ADR-0050 follow-up",
        "we retired the 0005 build numbers",
        "release v1.2.4 fixed the login bug",
        "release v1.2.3 added the export button",
        "the acme-cloud-prod cluster runs nightly backups",
        "the acme-cloud-dev cluster is reset every morning",
        "src/app/models.py holds the ORM classes",
        "src/app/main.py starts the web server",
    ]
    queries = ["ADR-0005", "v1.2.3", "acme-cloud-dev", "src/app/main.py"]
    hits = _search_all(open_backend("ids"), texts, queries)
    assert hits["ADR-0005"][0] == texts[1]
    assert hits["v1.2.3"][0] == texts[5]
    assert hits["acme-cloud-dev"][0] == texts[7]
    assert hits["src/app/main.py"][0] == texts[9]


# -------------------------------------------------------------- versions at open


def _meta(backend: Any, key: str) -> str | None:
    return run(backend._run(backend._in_tx, False, backend._meta_get_sync, key))


def _set_meta(backend: Any, key: str, value: str | None) -> None:
    run(backend._run(backend._in_tx, True, backend._meta_set_sync, key, value))


def _close(backend: Any) -> None:
    run(backend.close())


def test_a_new_database_records_the_chosen_analyzer_and_uses_it(engine) -> None:
    _, open_backend = engine
    plain = open_backend("default")
    assert run(plain.analyzer()) is analyzer.get(analyzer.DEFAULT_VERSION)
    assert _meta(plain, "analyzer_version") == analyzer.DEFAULT_VERSION
    _close(plain)
    chosen = open_backend("chosen", analyzer="v1")
    texts = ["she was painting sunsets"]
    hits = _search_all(chosen, texts, ["paintings", "painting"])
    assert hits == {"paintings": [], "painting": texts}  # v1 does not stem
    assert _meta(chosen, "analyzer_version") == "v1"
    _close(chosen)
    # reopened without a choice: the database's own analyzer, not the default
    again = open_backend("chosen")
    assert run(again.analyzer()) is analyzer.V1
    _close(again)
    porter = open_backend("porter", analyzer="v1-porter")
    assert _search_all(porter, texts, ["paintings"]) == {"paintings": texts}
    _close(porter)


def test_opening_with_another_explicit_analyzer_is_a_typed_error_naming_rebuild(engine) -> None:
    _, open_backend = engine
    first = open_backend("db", analyzer="v1")
    run(first.open())
    _close(first)
    other = open_backend("db", analyzer="v1-porter")
    with pytest.raises(AnalyzerMismatchError) as info:
        run(other.capabilities())
    message = str(info.value)
    assert "'v1'" in message and "powercontext memory rebuild --analyzer v1-porter" in message
    assert isinstance(info.value, ProfileMismatchError)
    assert (info.value.stored, info.value.wanted) == ("v1", "v1-porter")
    with pytest.raises(AnalyzerMismatchError):  # every call, not only the first
        run(other.open())
    _close(other)


def test_the_ambiguous_legacy_label_is_a_mismatch_at_open(engine) -> None:
    name, open_backend = engine
    legacy = open_backend("legacy")
    run(_store_and_close(legacy, ["an entry of an earlier release"]))
    reopened = open_backend("legacy")
    if name == "sqlite":
        _set_meta(reopened, "analyzer_version", "analyzer-v1")
    else:  # earlier releases wrote only the "analyzer" key on OceanBase
        _set_meta(reopened, "analyzer_version", None)
        _set_meta(reopened, "analyzer", "analyzer-v1")
    _close(reopened)
    for choice in (None, "v1", "v1-porter"):
        backend = open_backend("legacy", analyzer=choice)
        with pytest.raises(AnalyzerMismatchError, match="'analyzer-v1'") as info:
            run(backend.open())
        wanted = choice or analyzer.DEFAULT_VERSION
        assert f"powercontext memory rebuild --analyzer {wanted}" in str(info.value)
        _close(backend)


async def _store_and_close(backend: Any, texts: list[str]) -> Any:
    svc = _service(backend)
    try:
        return await _store(svc, texts)
    finally:
        await svc.close()


def test_rebuild_with_an_analyzer_migrates_every_head_row_and_records_it(engine) -> None:
    name, open_backend = engine
    texts = ["she was painting sunsets", "ADR-0005 chose SQLite", "中文 ฐานข้อมูล"]
    ref = run(_store_and_close(open_backend("mig", analyzer="v1"), texts))
    # a second Memory, so every Memory's head is migrated, not only one
    run(_store_and_close(open_backend("mig"), ["painting walls"]))

    migrating = open_backend("mig", analyzer="v1-porter")
    with pytest.raises(AnalyzerMismatchError):
        run(migrating.open())
    report = run(migrating.rebuild(analyzer="v1-porter"))
    assert (report.memories, report.entries, report.analyzer) == (2, 4, "v1-porter")
    assert _meta(migrating, "analyzer_version") == "v1-porter"
    rows = _projection_rows(migrating)
    assert len(rows) == 4
    assert all(stored == analyzer.V1_PORTER.searchable_text(text) for stored, text in rows)
    assert run(migrating.capabilities()).fts
    _close(migrating)

    after = open_backend("mig")  # no choice: the recorded one
    assert run(after.analyzer()) is analyzer.V1_PORTER

    async def search() -> list[str]:
        svc = _service(after)
        try:
            return await _texts(svc, ref, "paintings")
        finally:
            await svc.close()

    assert run(search()) == [texts[0]]  # stemmed now
    with pytest.raises(AnalyzerMismatchError, match=r"--analyzer v1`$"):
        run(open_backend("mig", analyzer="v1").open())
    if name == "sqlite":
        assert _fts_integrity_ok(open_backend("mig"))


def test_rebuild_opens_a_mismatched_database_and_defaults_to_the_backends_choice(engine):
    _, open_backend = engine
    run(_store_and_close(open_backend("sw", analyzer="v1"), ["walking the dog"]))
    backend = open_backend("sw", analyzer="v1-porter")
    backend.allow_analyzer_migration()  # what `memory rebuild` does before it reads caps
    caps = run(backend.capabilities())
    assert not caps.fts and any("memory rebuild" in r for r in caps.reasons)
    report = run(backend.rebuild())
    assert report.analyzer == "v1-porter"
    caps = run(backend.capabilities())
    assert caps.fts and not any("FTS projection" in r for r in caps.reasons)
    _close(backend)


def test_an_interrupted_migration_leaves_a_database_that_refuses_to_open(engine) -> None:
    _, open_backend = engine
    run(_store_and_close(open_backend("crash", analyzer="v1"), ["one entry"]))
    backend = open_backend("crash")

    def boom(*_: Any) -> None:
        raise RuntimeError("crash in the middle of the rebuild")

    backend._rebuild._rebuild_rows_sync = boom  # type: ignore[method-assign]
    with pytest.raises(RuntimeError):
        run(backend.rebuild(analyzer="v1-porter"))
    _close(backend)
    with pytest.raises(AnalyzerMismatchError, match="incomplete-migration-to-v1-porter"):
        run(open_backend("crash", analyzer="v1-porter").open())
    finish = open_backend("crash")
    assert run(finish.rebuild(analyzer="v1-porter")).analyzer == "v1-porter"
    _close(finish)
    assert run(open_backend("crash").analyzer()) is analyzer.V1_PORTER


def test_an_unknown_analyzer_name_is_refused_before_any_io(engine) -> None:
    from powercontext.core.errors import InvalidInputError

    _, open_backend = engine
    with pytest.raises(InvalidInputError, match="unknown analyzer 'analyzer-v1'"):
        open_backend("never", analyzer="analyzer-v1")


def _projection_rows(backend: Any) -> list[tuple[str, str]]:
    """(stored searchable_text, entry text) of every head row."""
    def read() -> list[tuple[str, str]]:
        query = (getattr(backend, "sqlite_engine", None) or backend.ob_engine).rows
        stored = {str(e): str(t) for e, t in query(
            "SELECT entry_id, searchable_text FROM memory_entry_heads")}
        texts = {}
        for artifact_id, revision in backend._memory_tables.rows.all_heads():
            parsed = backend._memory_tables.parsed(artifact_id, revision)
            versions = backend._memory_tables.rows.entry_versions(
                [e.entry_version_id for e in parsed.revision.content.manifest.entries
                 if e.state == "active"])
            texts.update({v.entry_id: v.text for v in versions})
        assert set(stored) == set(texts)
        return [(stored[e], texts[e]) for e in sorted(texts)]

    return run(backend._run(backend._in_tx, False, read))


def _fts_integrity_ok(backend: Any) -> bool:
    from powercontext.sql import sqlite as frag

    def check() -> bool:
        backend.sqlite_engine.rows(f"INSERT INTO {frag.FTS_TABLE}({frag.FTS_TABLE}) "
                                   "VALUES('integrity-check')")
        return True

    try:
        return bool(run(backend._run(check)))
    finally:
        _close(backend)



# -------------------------------------------------------------- what seekdb forces on us


@pytest.mark.parametrize(
    "engine", [pytest.param("oceanbase", marks=pytest.mark.oceanbase)], indirect=True
)
def test_seekdb_space_parser_drops_the_innodb_stopwords_and_cannot_be_told_to_keep_them(
    engine,
) -> None:
    """The one rule an engine forces on the analyzers: seekdb's SPACE parser drops the
    InnoDB default stopwords, and (seekdb 1.4.0) offers no way to keep them. If this test
    starts failing because seekdb can keep them, keep them and shrink ENGINE_STOPWORDS."""
    _, open_backend = engine
    backend = open_backend("facts")
    run(backend.open())

    def sql(statement: str, params: tuple[Any, ...] = ()) -> Any:
        return run(backend._run(backend.ob_engine.rows, statement, params))

    def refused(statement: str) -> str:
        with pytest.raises(Exception) as info:  # the driver's own error
            sql(statement)
        return str(info.value)

    words = " ".join(sorted(analyzer.ENGINE_STOPWORDS))
    kept = sql("SELECT TOKENIZE(%s, 'space', '[{\"additional_args\":[{\"min_token_size\":1}]}]')",
               (words + " keepme",))[0][0]
    assert json_tokens(kept) == ["keepme"]
    # no per-call stopword list, no stopword table for the SPACE parser
    assert "stopwords not supported" in refused(
        "SELECT TOKENIZE('the keepme', 'space', '[{\"stopwords\":\"\"}]')")
    for props in ("stopword_table='none'", "min_token_size=1, stopword_table='none'"):
        assert "space config not supported" in refused(
            "CREATE TABLE pc_stop_probe (id INT PRIMARY KEY, s TEXT, FULLTEXT INDEX f(s) "
            f"WITH PARSER SPACE PARSER_PROPERTIES=({props}))")
    # the index drops them too, not only TOKENIZE (SET GLOBAL ft_stopword_file = '' is
    # accepted by seekdb 1.4.0 and changes nothing: not tried here, it is server-wide)
    sql("CREATE TABLE pc_stop_index (id INT PRIMARY KEY, s TEXT, FULLTEXT INDEX f(s) "
        "WITH PARSER SPACE PARSER_PROPERTIES=(min_token_size=1))")
    sql("INSERT INTO pc_stop_index VALUES (1, 'the keepme')")
    sql("COMMIT")

    def count(word: str) -> int:
        return int(sql("SELECT COUNT(*) FROM pc_stop_index WHERE MATCH(s) AGAINST "
                       "(%s IN BOOLEAN MODE)", (word,))[0][0])

    assert (count("the"), count("keepme")) == (0, 1)
    # and so every analyzer drops exactly these words at least: v1 drops nothing more
    assert analyzer.V1.stopwords == analyzer.ENGINE_STOPWORDS
    _close(backend)


def json_tokens(raw: Any) -> list[str]:
    import json

    return json.loads(raw.decode() if isinstance(raw, bytes) else raw)
