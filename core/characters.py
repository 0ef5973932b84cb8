"""The characters an identifier-like field or a one-line text may hold (Memory RFC,
"MemoryEntryInput", "MemoryChange"). A kind, a business key, a metadata key or a
change reason is shown as one piece of one line (in the prompt hook's memory block, in
human output), so a character that breaks the line (newline, carriage return, a line
separator), drives a terminal (ESC, BEL) or reorders what a reader sees (a bidirectional
override) is refused where the value is written. Pure.
"""

from __future__ import annotations

import re
import unicodedata

from powercontext.core.errors import InvalidInputError

__all__ = ["check_ascii_printable", "check_identifier", "check_one_line"]

_ASCII_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
#: Controls (C0, DEL, C1), line/paragraph separators and bidirectional controls.
_NOT_IN_LINES = re.compile(
    "[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]")
#: Unicode categories no identifier holds: controls, format characters (bidirectional
#: overrides, zero-width characters), line/paragraph separators, lone surrogates.
_NOT_IN_IDENTIFIERS = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs"})


def _refuse(field: str, ch: str, what: str) -> InvalidInputError:
    return InvalidInputError(field, f"must not contain {what} (found U+{ord(ch):04X})")


def check_ascii_printable(text: str, field: str) -> str:
    """``text`` (ASCII) when it holds no control character (C0, DEL): InvalidInputError
    naming ``field`` otherwise."""
    bad = _ASCII_CONTROL.search(text)
    if bad is not None:
        raise _refuse(field, bad.group(), "control characters")
    return text


def check_one_line(text: str, field: str) -> str:
    """``text`` when it is one line: no control character (C0, DEL, C1: line breaks,
    tab, ESC, BEL), line or paragraph separator or bidirectional control (U+061C,
    U+200E, U+200F, U+202A-U+202E, U+2066-U+2069). InvalidInputError naming ``field``."""
    bad = _NOT_IN_LINES.search(text)
    if bad is not None:
        raise _refuse(field, bad.group(), "line breaks or other control characters")
    return text


def check_identifier(value: object, field: str) -> str:
    """``value`` when it is a str without control characters (Unicode Cc: newline, ESC,
    BEL, DEL, C1), format characters (Cf: bidirectional overrides, zero-width
    characters), line or paragraph separators (Zl, Zp) or lone surrogates.
    InvalidInputError naming ``field`` otherwise."""
    if not isinstance(value, str):
        raise InvalidInputError(field, f"must be a string, got {type(value).__name__}")
    if not (value.isascii() and value.isprintable()):
        for ch in value:
            if unicodedata.category(ch) in _NOT_IN_IDENTIFIERS:
                raise _refuse(field, ch, "control or format characters")
    return value
