"""Scope ids and where a Source is journaled (TOPIC-MEMORY.md, "scope_id"; Topic Memory
RFC, "Source, Window, Cursor, and Pending").

Both families read the Scope journal (a Memory entry's evidence names Sources; the
Topic side grows from them), so this module holds only what the journal needs and
imports no Topic model: opening the Memory side never loads the Topic family.
"""

from __future__ import annotations

import unicodedata

import attrs

from powercontext.core.errors import InvalidInputError
from powercontext.core.normalize import check_str

__all__ = ["MAX_SCOPE_CHARS", "SourceScope", "check_scope_id", "nfc_text"]

MAX_SCOPE_CHARS = 256


def nfc_text(value: object, field: str) -> str:
    """NFC of a str without lone surrogates or NUL; InvalidInputError naming ``field``."""
    text = check_str(field, value)
    if "\x00" in text:
        raise InvalidInputError(field, "contains a NUL character")
    return unicodedata.normalize("NFC", text)


def check_scope_id(value: object, field: str = "scope_id") -> str:
    """The NFC form of a Scope id (TOPIC-MEMORY.md, "scope_id"): 1..256 code points
    after NFC, every one printable (``str.isprintable``: no control, format, separator
    other than the ASCII space, or unassigned characters), no lone surrogate, and no
    white space at either end. The value is never trimmed: ``" a"`` is refused, not
    read as ``"a"`` (a Scope id is compared exactly, and OceanBase's binary collation
    is PAD SPACE, where ``"a"`` equals ``"a "``). InvalidInputError naming ``field``
    otherwise."""
    text = nfc_text(value, field)
    if not text:
        raise InvalidInputError(field, "must not be empty")
    if text != text.strip():
        raise InvalidInputError(field, "must not begin or end with white space")
    if len(text) > MAX_SCOPE_CHARS:
        raise InvalidInputError(
            field, f"is {len(text)} characters after NFC; at most {MAX_SCOPE_CHARS} are allowed")
    if not text.isprintable():
        raise InvalidInputError(field, "must hold only printable characters (no control "
                                "or format characters, no line breaks)")
    return text


@attrs.frozen
class SourceScope:
    """Where a Source is journaled: its Scope, its 1-based position there and the
    server-owned ``lineage_only`` flag (Topic Memory RFC, "Source, Window, Cursor, and
    Pending")."""

    scope_id: str
    position: int
    lineage_only: bool
