"""Business keys of Memories (ARCHITECTURE.md, Decisions: "Keys live in the database";
Memory RFC, "Memory identity": a key such as ``repo:/abs/path`` names one Memory).

Pure: the key's form only. What a ``repo:`` key's path means on a file system is the
application's (``powercontext.memory_names.memory_key``).
"""

from __future__ import annotations

import unicodedata

from powercontext.core.characters import check_identifier
from powercontext.core.errors import InvalidInputError

__all__ = ["MAX_KEY_CHARS", "normalize_key"]

#: The longest key, in characters (the database column holds this many).
MAX_KEY_CHARS = 1024


def normalize_key(key: object, field: str = "key") -> str:
    """A business key in its stored form: the NFC form of ``key``.

    Rules: a ``str`` of 1..:data:`MAX_KEY_CHARS` characters (counted after NFC), without
    control characters (Unicode Cc, including newline and tab), format characters (Cf:
    bidirectional overrides, zero-width characters), line or paragraph separators or
    lone surrogates, and not starting or ending with white space. Two
    spellings with one NFC form are the same key. InvalidInputError naming ``field``
    otherwise (:func:`powercontext.core.characters.check_identifier`).
    """
    key = unicodedata.normalize("NFC", check_identifier(key, field))
    if not key:
        raise InvalidInputError(field, "must be non-empty")
    if key != key.strip():
        raise InvalidInputError(field, "must not start or end with white space")
    if len(key) > MAX_KEY_CHARS:
        raise InvalidInputError(field, f"is {len(key)} characters; at most {MAX_KEY_CHARS}")
    return key
