"""JSON read at a boundary with bounded work (standard library only): every string
literal longer than :data:`HEAD_BYTES` + :data:`TAIL_BYTES` keeps its first and last
bytes around a marker while the input streams in (a 50 MB reply costs one pass over
its bytes, never 50 MB of text to decode, scan and store), and what is left after the
cuts is at most :data:`MAX_BYTES`; :func:`check_depth` refuses a parsed value nested
deeper than :data:`MAX_DEPTH` without recursion.

:func:`bounded_json` returns the cut JSON text; the caller parses it. The cut is made
on raw bytes at a point where the kept head and tail still decode (never inside an
escape sequence or a UTF-8 character), so the result is the same JSON document with
shorter strings.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

__all__ = ["HEAD_BYTES", "MAX_BYTES", "MAX_DEPTH", "TAIL_BYTES", "bounded_json", "check_depth"]

#: A cut string keeps its first this many raw bytes ...
HEAD_BYTES = 512 * 1024
#: ... and its last this many.
TAIL_BYTES = 256 * 1024
#: The deepest nesting of arrays and objects read (hook payloads nest 2-4 deep).
MAX_DEPTH = 64
#: The most JSON bytes kept after the cuts (else ValueError).
MAX_BYTES = 8 * 1024 * 1024

#: A run of string content: up to a closing quote, or a backslash with nothing after it.
_STRING_RUN = re.compile(rb'[^"\\]*(?:\\.[^"\\]*)*', re.DOTALL)
#: Bytes outside strings, and whole strings of at most 1 KiB, up to the next other quote.
_OUTSIDE = re.compile(rb'(?:[^"]+|"(?:[^"\\]|\\.){0,1024}")*', re.DOTALL)
_QUOTE, _BACKSLASH, _LETTER_U = 0x22, 0x5C, 0x75
_HIGH_SURROGATE = re.compile(rb"\\u[dD][89abAB][0-9a-fA-F]{2}")
_LOW_SURROGATE = re.compile(rb"\\u[dD][c-fC-F]")


def _escape_starts_at(buf: bytes | bytearray, p: int) -> bool:
    """Whether the backslash at ``p`` starts an escape: the run of backslashes ending at
    ``p`` is odd (position 0 of ``buf`` being a character boundary)."""
    j = p
    while j >= 0 and p - j < 64 and buf[j] == _BACKSLASH:
        j -= 1
    if j >= 0 and buf[j] == _BACKSLASH:  # a longer run: measured in C
        return (p + 1 - len(buf[:p + 1].rstrip(b"\\"))) % 2 == 1
    return (p - j) % 2 == 1


def _is_boundary(buf: bytes | bytearray, k: int) -> bool:
    """Whether a string body (``buf``, starting at a character boundary) can be cut
    before byte ``k < len(buf)``: not inside a UTF-8 character, after the backslash of
    an escape or inside the hex digits of a ``\\uXXXX``."""
    if buf[k] & 0xC0 == 0x80:  # a UTF-8 continuation byte
        return False
    if k > 0 and buf[k - 1] == _BACKSLASH and _escape_starts_at(buf, k - 1):
        return False
    for p in range(max(0, k - 5), k - 1):
        if buf[p] == _BACKSLASH and buf[p + 1] == _LETTER_U and _escape_starts_at(buf, p):
            return False
    # between the two escapes of a surrogate pair (\uD83D\uDE00 is one character)
    return not (k >= 6 and _HIGH_SURROGATE.fullmatch(buf, k - 6, k) is not None
                and _escape_starts_at(buf, k - 6) and _LOW_SURROGATE.match(buf, k))


#: How far past the wanted position a cut looks for a boundary (an escape is at most 12
#: bytes, a UTF-8 character 4); input with none there (not JSON) is cut where wanted.
_SEARCH = 16


def _next_boundary(buf: bytes | bytearray, k: int, end: bool = False) -> int | None:
    """The first position in ``k .. k + 16`` a cut may fall on; with ``end`` (``buf``
    holds the whole string) its end counts. When 16 bytes hold none (input that is not
    valid JSON), ``k`` itself; when fewer are there yet, None."""
    k = max(0, k)
    for i in range(k, min(k + _SEARCH, len(buf))):
        if _is_boundary(buf, i):
            return i
    if len(buf) - k >= _SEARCH:
        return k
    return len(buf) if end else None


class _Cutter:
    def __init__(self, head: int, tail: int, limit: int) -> None:
        self.head_bytes, self.tail_bytes, self.limit = head, tail, limit
        self.out = bytearray()
        self.in_string = False
        self.pending = b""
        self.head = bytearray()
        self.tail = bytearray()
        self.head_full = False
        self.size = 0

    def feed(self, chunk: bytes) -> None:
        data = self.pending + chunk if self.pending else chunk
        self.pending = b""
        pos, n = 0, len(data)
        while pos < n:
            if not self.in_string:
                # in C: bytes outside strings and whole strings of at most 1 KiB
                m = _OUTSIDE.match(data, pos)
                assert m is not None  # the pattern matches the empty string
                self.out += data[pos:m.end()]
                pos = m.end()
                self._check_size()
                if pos < n:  # a longer string, or one the chunk's end cuts: streamed
                    self.out += b'"'
                    pos += 1
                    self.in_string = True
                    self.head, self.tail, self.size = bytearray(), bytearray(), 0
                    self.head_full = self.head_bytes == 0
                continue
            m = _STRING_RUN.match(data, pos)
            assert m is not None  # the pattern matches the empty string
            end = m.end()
            self._add(data[pos:end])
            if end == n:
                pos = n
            elif data[end] == _QUOTE:
                self._close_string()
                pos = end + 1
            else:  # a backslash whose escaped byte is in the next chunk
                self.pending = data[end:]
                pos = n

    def _add(self, piece: bytes) -> None:
        # the head and the tail buffer each start at a character boundary: the string's
        # start, or a cut made by _next_boundary
        self.size += len(piece)
        if self.head_full:
            self.tail += piece
            if len(self.tail) > 2 * self.tail_bytes + 2 * _SEARCH:
                cut = _next_boundary(self.tail, len(self.tail) - self.tail_bytes - _SEARCH)
                if cut is not None:
                    del self.tail[:cut]
            return
        self.head += piece
        if len(self.head) >= self.head_bytes + _SEARCH:
            cut = _next_boundary(self.head, self.head_bytes)
            assert cut is not None  # 16 bytes are there
            self.tail += self.head[cut:]
            del self.head[cut:]
            self.head_full = True

    def _close_string(self) -> None:
        if not self.head_full and len(self.head) > self.head_bytes:
            cut = _next_boundary(self.head, self.head_bytes, end=True)
            self.tail, self.head = self.head[cut:], self.head[:cut]
        cut = _next_boundary(self.tail, len(self.tail) - self.tail_bytes, end=True)
        tail = bytes(self.tail[cut:])
        dropped = self.size - len(self.head) - len(tail)
        if dropped == 0:
            self.out += self.head + tail + b'"'
        else:
            self.out += bytes(self.head) + \
                b"\\n[... %d bytes cut at the input boundary ...]\\n" % dropped + tail + b'"'
        self.in_string = False
        self.head, self.tail = bytearray(), bytearray()
        self._check_size()

    def _check_size(self) -> None:
        if len(self.out) > self.limit:
            raise ValueError(f"holds more than {self.limit} bytes after its long strings "
                             "are cut")


def bounded_json(chunks: Iterable[bytes], *, head: int = HEAD_BYTES, tail: int = TAIL_BYTES,
                 limit: int = MAX_BYTES) -> bytes:
    """The JSON bytes of ``chunks`` (read lazily, in order) with every string longer
    than ``head`` + ``tail`` bytes (default :data:`HEAD_BYTES`, :data:`TAIL_BYTES`) cut
    to its head and tail around ``\\n[... N bytes cut at the input boundary ...]\\n``
    (each part a few bytes longer or shorter where the cut would split an escape
    sequence or a UTF-8 character). ValueError, before any parsing, when more than
    ``limit`` bytes (:data:`MAX_BYTES`) are left after the cuts. Input that is not JSON
    comes out unchanged but for its cut strings, for the parser to refuse."""
    cutter = _Cutter(head, tail, limit)
    for chunk in chunks:
        cutter.feed(chunk)
    return bytes(cutter.out) + cutter.pending + (bytes(cutter.head) + bytes(cutter.tail)
                                                  if cutter.in_string else b"")


def check_depth(value: Any, limit: int = MAX_DEPTH) -> Any:
    """``value`` (decoded JSON) when its arrays and objects nest at most ``limit`` deep
    (counted without recursion); ValueError otherwise."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            item = list(item.values())
        if isinstance(item, list):
            if depth >= limit:
                raise ValueError(f"is nested more than {limit} levels deep")
            stack.extend((v, depth + 1) for v in item if isinstance(v, (list, dict)))
    return value
