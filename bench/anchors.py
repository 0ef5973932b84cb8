"""Reference points for the LoCoMo retrieval benchmark (issue 4, item 7).

:data:`PUBLISHED` holds the anchors quoted in the issue (full LoCoMo set, turn level,
evidence recall in percent at k = 5 / 10 / 25). :class:`PlainFTS5` recomputes the
"plain SQLite FTS5 with porter stemming and stopwords" anchor on the data actually being
scored: an in-memory APSW FTS5 table with ``tokenize='porter unicode61'``, the question's
words minus :data:`STOPWORDS` OR-ed together, ordered by ``bm25``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import apsw

__all__ = ["PUBLISHED", "STOPWORDS", "PlainFTS5"]

#: name -> (recall@5, recall@10, recall@25) in percent, as quoted in issue 4.
PUBLISHED: dict[str, tuple[float, float, float]] = {
    "DRAGON (LoCoMo paper)": (56.7, 66.2, 76.7),
    "plain FTS5 porter+stopwords (published)": (54.0, 62.5, 71.4),
    "all-MiniLM-L6-v2 alone (published)": (33.0, 43.0, 55.0),
}

#: The NLTK English stopword list (179 words, apostrophes split the way unicode61 splits
#: them), the usual choice for a "plain FTS5 with stopwords" baseline.
STOPWORDS = frozenset(
    """i me my myself we our ours ourselves you you're you've you'll you'd your yours
    yourself yourselves he him his himself she she's her hers herself it it's its itself
    they them their theirs themselves what which who whom this that that'll these those am
    is are was were be been being have has had having do does did doing a an the and but if
    or because as until while of at by for with about against between into through during
    before after above below to from up down in out on off over under again further then
    once here there when where why how all any both each few more most other some such no
    nor not only own same so than too very s t can will just don don't should should've now
    d ll m o re ve y ain aren aren't couldn couldn't didn didn't doesn doesn't hadn hadn't
    hasn hasn't haven haven't isn isn't ma mightn mightn't mustn mustn't needn needn't shan
    shan't shouldn shouldn't wasn wasn't weren weren't won won't wouldn wouldn't""".split()  # noqa: SIM905
)

_WORD = re.compile(r"[^\W_]+", re.UNICODE)


def _query_words(question: str) -> list[str]:
    words = [w.lower() for w in _WORD.findall(question)]
    return [w for w in dict.fromkeys(words) if w not in STOPWORDS]


class PlainFTS5:
    """One conversation's turns in an in-memory FTS5 table (``porter unicode61``).

    ``docs`` are the entry texts; :meth:`search` returns document indexes, best first.
    """

    def __init__(self, docs: Sequence[str]) -> None:
        self._conn = apsw.Connection(":memory:")
        self._conn.execute("CREATE VIRTUAL TABLE t USING fts5(body, tokenize='porter unicode61')")
        with self._conn:
            for i, doc in enumerate(docs):
                self._conn.execute("INSERT INTO t (rowid, body) VALUES (?, ?)", (i, doc))

    def search(self, question: str, limit: int = 25) -> list[int]:
        words = _query_words(question)
        if not words:
            return []
        match = " OR ".join('"' + w.replace('"', '""') + '"' for w in words)
        rows = self._conn.execute(
            "SELECT rowid FROM t WHERE t MATCH ? ORDER BY bm25(t), rowid LIMIT ?", (match, limit)
        )
        return [int(r[0]) for r in rows]

    def close(self) -> None:
        self._conn.close()
