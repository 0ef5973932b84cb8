"""The Porter stemmer of the ``v1-porter`` analyzer (core/analyzer.py, ``stem``) and how
its analyze() uses it. Stems are checked against SQLite FTS5's own ``porter`` tokenizer
(through APSW), the "plain FTS5" baseline of the LoCoMo benchmark, so the two agree word
for word."""

from __future__ import annotations

import apsw
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from powercontext.core.analyzer import EXTENDED_STOPWORDS as STOPWORDS
from powercontext.core.analyzer import V1_PORTER, stem

# Stemming is the rule of the ``v1-porter`` analyzer (``v1`` does not stem).
analyze = V1_PORTER.analyze
query_terms = V1_PORTER.query_terms

# (word, stem) pairs from M. F. Porter, "An algorithm for suffix stripping" (1980).
PAPER = [
    ("caresses", "caress"), ("ponies", "poni"), ("ties", "ti"), ("caress", "caress"),
    ("cats", "cat"), ("feed", "feed"), ("agreed", "agre"), ("plastered", "plaster"),
    ("bled", "bled"), ("motoring", "motor"), ("sing", "sing"), ("conflated", "conflat"),
    ("troubled", "troubl"), ("sized", "size"), ("hopping", "hop"), ("tanned", "tan"),
    ("falling", "fall"), ("hissing", "hiss"), ("fizzed", "fizz"), ("failing", "fail"),
    ("filing", "file"), ("happy", "happi"), ("sky", "sky"), ("relational", "relat"),
    ("conditional", "condit"), ("rational", "ration"), ("digitizer", "digit"),
    ("operator", "oper"), ("feudalism", "feudal"), ("decisiveness", "decis"),
    ("hopefulness", "hope"), ("callousness", "callous"), ("formaliti", "formal"),
    ("sensitiviti", "sensit"), ("sensibiliti", "sensibl"), ("triplicate", "triplic"),
    ("formative", "form"), ("formalize", "formal"), ("electrical", "electr"),
    ("hopeful", "hope"), ("goodness", "good"), ("revival", "reviv"),
    ("allowance", "allow"), ("inference", "infer"), ("airliner", "airlin"),
    ("adjustable", "adjust"), ("defensible", "defens"), ("replacement", "replac"),
    ("adjustment", "adjust"), ("dependent", "depend"), ("adoption", "adopt"),
    ("communism", "commun"), ("activate", "activ"), ("effective", "effect"),
    ("bowdlerize", "bowdler"), ("probate", "probat"), ("rate", "rate"), ("cease", "ceas"),
    ("controll", "control"), ("roll", "roll"), ("generalizations", "gener"),
    ("oscillators", "oscil"),
]  # fmt: skip


@pytest.mark.parametrize(("word", "expected"), PAPER)
def test_porter_paper_examples(word: str, expected: str) -> None:
    assert stem(word) == expected


def _fts5_porter(words: list[str]) -> list[str]:
    """Each word's token from an FTS5 table with tokenize='porter ascii'."""
    conn = apsw.Connection(":memory:")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(x, tokenize='porter ascii')")
    conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, instance)")
    with conn:
        for i, w in enumerate(words):
            conn.execute("INSERT INTO t (rowid, x) VALUES (?, ?)", (i, w))
    by_doc = {doc: term for term, doc in conn.execute("SELECT term, doc FROM v")}
    conn.close()
    return [by_doc[i] for i in range(len(words))]


VOCABULARY = """painting paints painted painter swimming swims camping hiking adopted adopting
agencies counseling counselor transgender relationships grateful inspiring pottery sunsets
photography volunteering running marathon guitars kids children parents happily friendship
ceremonies conferences mentorship sculptures feeling feelings caring cared recently
yesterday tomorrow weekends vacationing"""


def test_stems_equal_sqlite_fts5_porter_on_a_vocabulary() -> None:
    words = sorted({w for w, _ in PAPER} | set(VOCABULARY.split()))
    assert [stem(w) for w in words] == _fts5_porter(words)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=20),
        min_size=1,
        max_size=40,
    )
)
def test_stems_equal_sqlite_fts5_porter_on_random_words(words: list[str]) -> None:
    assert [stem(w) for w in words] == _fts5_porter(words)


def test_analyze_stems_ascii_letter_words_only() -> None:
    assert analyze("Painting paints PAINTED") == ["paint", "paint", "paint"]
    assert analyze("mp3s 2023 covid19") == ["mp3s", "2023", "covid19"]
    assert analyze("café paintings") == ["x_" + "café".encode().hex(), "paint"]


def test_word_whose_stem_is_a_stopword_is_kept_unstemmed() -> None:
    assert stem("one") == "on" and "on" in STOPWORDS
    assert analyze("one ones") == ["one", "ones"]


def test_contraction_pieces_and_auxiliaries_are_stopwords() -> None:
    assert analyze("Caroline's dog didn't do it; we'll see, I've been there") == [
        "carolin", "dog", "didn", "see"]  # fmt: skip
    assert query_terms("Where does Biscuit swim?") == ("biscuit", "swim")
    assert query_terms("What did Biscuit do while swimming?") == ("biscuit", "while", "swim")
