"""What may reach OceanBase's ``MATCH ... AGAINST``: Analyzer v1 tokens only, each one
the ``SPACE`` parser can have indexed (Memory RFC, "OceanBase adapter"; Topic Memory
RFC, "Detail chunks and deployment-enabled retrieval channels"). Raw text never reaches
MATCH; a term the index cannot hold is refused, not silently dropped. Both families'
full-text channels check their terms here."""

from __future__ import annotations

import re
from collections.abc import Sequence

from powercontext.core.errors import InvalidInputError
from powercontext.sql import oceanbase as obsql

__all__ = ["match_terms"]

_TOKEN_RE = re.compile(r"[a-z0-9_]+")


def match_terms(terms: Sequence[str]) -> list[str]:
    """``terms`` without repeats, in order, each checked. InvalidInputError("terms") for
    a value that is not an Analyzer v1 token (``[a-z0-9_]+``) or is longer than
    :data:`powercontext.sql.oceanbase.MAX_TOKEN_CHARS` characters."""
    for t in terms:
        if not isinstance(t, str) or not _TOKEN_RE.fullmatch(t):
            raise InvalidInputError("terms", "only Analyzer v1 tokens ([a-z0-9_]) reach MATCH")
        if len(t) > obsql.MAX_TOKEN_CHARS:
            raise InvalidInputError(
                "terms", f"a term longer than {obsql.MAX_TOKEN_CHARS} characters is never "
                "indexed by the SPACE parser")
    return list(dict.fromkeys(terms))
