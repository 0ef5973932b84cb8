"""Normalization and checks of the values a caller hands in: text, reason, kind, ids,
hashes and JSON integers (Memory RFC, "Normalization, hashing, and the search analyzer";
"MemoryEntryInput"; "MemoryChange").

Every function returns the normalized value or raises :class:`InvalidInputError` naming
the field (a ValueError, as the spec asks). :mod:`powercontext.core.canonical` builds
canonical bytes and hashes from values these functions accepted, and keeps their names.
"""

from __future__ import annotations

import re
import unicodedata

from powercontext.core.characters import check_ascii_printable, check_one_line
from powercontext.core.errors import InvalidInputError

__all__ = [
    "MAX_ID_LENGTH",
    "MAX_JSON_INT",
    "MAX_REASON_CODE_POINTS",
    "MAX_TEXT_BYTES",
    "check_hash",
    "check_id",
    "check_json_int",
    "check_str",
    "make_id",
    "normalize_kind",
    "normalize_reason",
    "normalize_text",
]

#: I-JSON (RFC 7493) and so RFC 8785 carry integers of magnitude at most 2**53 - 1.
MAX_JSON_INT = 2**53 - 1
MAX_TEXT_BYTES = 8192
MAX_REASON_CODE_POINTS = 512
MAX_ID_LENGTH = 128
_ID_RE = re.compile(r"[\x21-\x7e]{1,128}")
_HASH_RE = re.compile(r"[0-9a-f]{64}")
_CROCKFORD = "0123456789abcdefghjkmnpqrstvwxyz"


def check_json_int(value: object, field: str, minimum: int = -MAX_JSON_INT) -> int:
    """An int (not bool) in ``minimum..2**53-1``, the range I-JSON carries exactly;
    InvalidInputError naming ``field`` otherwise."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInputError(field, f"must be an integer, got {type(value).__name__}")
    if not minimum <= value <= MAX_JSON_INT:
        raise InvalidInputError(field, f"{value} is outside {minimum}..{MAX_JSON_INT} "
                                "(the I-JSON integer range)")
    return value


def check_str(field: str, value: object) -> str:
    """``value`` when it is a str UTF-8 can carry (no lone surrogate), unchanged;
    InvalidInputError naming ``field`` otherwise."""
    if not isinstance(value, str):
        raise InvalidInputError(field, f"must be a string, got {type(value).__name__}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInputError(field, "contains a lone surrogate (not valid Unicode)") from None
    return value


def normalize_text(value: object, field: str = "text") -> str:
    """NFC, trimmed, 1..8192 UTF-8 bytes (Memory RFC, "MemoryEntryInput"). ValueError otherwise."""
    text = unicodedata.normalize("NFC", check_str(field, value)).strip()
    if not text:
        raise InvalidInputError(field, "is empty after NFC normalization and trimming")
    size = len(text.encode("utf-8"))
    if size > MAX_TEXT_BYTES:
        raise InvalidInputError(field, f"is {size} UTF-8 bytes; the limit is {MAX_TEXT_BYTES}")
    return text


def normalize_reason(value: object, field: str = "reason") -> str | None:
    """NFC and trimmed, at most 512 code points, one line (Memory RFC, "MemoryChange":
    controls, line separators and bidirectional controls refused); None, blank: None."""
    if value is None:
        return None
    reason = unicodedata.normalize("NFC", check_str(field, value)).strip()
    if not reason:
        return None
    check_one_line(reason, field)
    if len(reason) > MAX_REASON_CODE_POINTS:
        raise InvalidInputError(field, f"is {len(reason)} code points; the limit is "
                                f"{MAX_REASON_CODE_POINTS}")
    return reason


def normalize_kind(value: object, field: str = "kind") -> str:
    """A non-empty kind (unknown kinds are kept), NFC and trimmed, at most 64 printable
    ASCII characters (a kind starts a line: newline, tab, ESC, BEL, DEL are refused)."""
    kind = unicodedata.normalize("NFC", check_str(field, value)).strip()
    if not kind:
        raise InvalidInputError(field, "must be a non-empty string")
    if len(kind) > 64 or not kind.isascii():
        raise InvalidInputError(field, "must be at most 64 ASCII characters")
    return check_ascii_printable(kind, field)


def check_id(value: object, field: str) -> str:
    """An ASCII id (printable, no spaces) of 1..128 characters; ValueError naming the field."""
    text = check_str(field, value)
    if not text.isascii():
        raise InvalidInputError(field, "must be ASCII")
    if not _ID_RE.fullmatch(text):
        raise InvalidInputError(
            field, f"must be 1..{MAX_ID_LENGTH} printable ASCII characters without spaces"
        )
    return text


def check_hash(value: object, field: str) -> str:
    text = check_str(field, value)
    if not _HASH_RE.fullmatch(text):
        raise InvalidInputError(field, "must be 64 lowercase hexadecimal characters")
    return text


def make_id(prefix: str, time_ms: int, entropy: bytes) -> str:
    """``prefix`` + 26 lowercase Crockford base32 characters: 48 bits of milliseconds then
    80 bits of entropy, so ids sort by time. ``entropy`` must be 10 bytes."""
    if len(entropy) != 10:
        raise ValueError("entropy must be exactly 10 bytes")
    if not 0 <= time_ms < 2**48:
        raise ValueError("time_ms must fit in 48 bits")
    number = (time_ms << 80) | int.from_bytes(entropy, "big")
    chars = []
    for _ in range(26):
        chars.append(_CROCKFORD[number & 31])
        number >>= 5
    return check_id(prefix + "".join(reversed(chars)), "id")
