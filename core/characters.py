"""The characters an identifier-like field or a one-line text may hold (Memory RFC,
"MemoryEntryInput", "MemoryChange"). A kind, a business key, a metadata key or a
change reason is shown as one piece of one line (in the prompt hook's memory block, in
human output), so a character that breaks the line (newline, carriage return, a line
separator), drives a terminal (ESC, BEL) or reorders what a reader sees (a bidirectional
override) is refused where the value is written; text shown to an agent as data is made
inert (:func:`neutral_text`). Pure.
"""

from __future__ import annotations

import re
import unicodedata

from powercontext.core.errors import InvalidInputError

__all__ = ["check_ascii_printable", "check_identifier", "check_one_line", "neutral_text"]

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


_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
#: Characters whose NFKC form is ``<`` (a full-width or small ``<`` reads as one).
_LESS_THAN = frozenset("<\ufe64\uff1c")
#: What may follow ``<`` to make a tag, a comment, a declaration or a special token.
_TAG_START = frozenset("/!?|")
_VISIBLE_ESCAPE = frozenset(("Cc", "Cf", "Zl", "Zp", "Co", "Cn", "Cs"))


def neutral_text(text: str) -> str:
    """``text`` made inert for an agent to read as data: every control, format, line or
    paragraph separator, private-use or unassigned character becomes a visible escape
    (``\\n``, ``\\r``, ``\\t``, else ``\\uXXXX`` / ``\\UXXXXXXXX``), so stored text can
    neither start a new line that poses as a role or a tool call nor hide text behind
    bidirectional overrides or zero-width characters; and every ``<`` (or a full-width
    or small one) that would open a tag, a comment or a special token (followed by a
    letter, ``/``, ``!``, ``?`` or ``|``) gets a backslash after it (``<\\/system>``),
    as JSON's ``<\\/script>`` idiom does. Nothing else changes; the exact text stays
    available through the reference."""
    out: list[str] = []
    n = len(text)
    for i, ch in enumerate(text):
        if unicodedata.category(ch) in _VISIBLE_ESCAPE:
            cp = ord(ch)
            out.append(_ESCAPES.get(ch) or (f"\\u{cp:04x}" if cp <= 0xFFFF else f"\\U{cp:08x}"))
            continue
        out.append(ch)
        if ch in _LESS_THAN and i + 1 < n and (text[i + 1] in _TAG_START
                                               or text[i + 1].isalpha()):
            out.append("\\")
    return "".join(out)
