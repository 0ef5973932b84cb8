"""Credentials known by their context (Memory RFC, "Memory admission rules": never save
secrets): a value the token rules of :mod:`powercontext.core.secrets` cannot tell from
a word is a secret because of what introduces it. Pure, and linear in the text's length
(each rule starts only where its literal cue stands and looks a bounded way from it).

The rules (slug: what is found; the span is the value):

- ``credential-phrase``: a credential word (password, passwd, passphrase, passcode,
  pwd, secret, token, credential(s), an API / access / secret / private / auth /
  signing / encryption / master / client / license key) followed, past at most four
  linking words (``is``, ``was``, ``=``, ``:``, ``to``, ``set to``, ...) and a name
  after a preposition (``for the billing service is``), by a value that
  :func:`password_like` accepts, whatever prose follows it
  (``Password: X (rotate monthly)``, ``the admin password = X for now``). A value of
  hex digits (perhaps after words: ``src_file_<hex>``) only counts when a link states
  it (``is``, ``was``, ``=``, ``:``, ``to``: ``the API token is <hex>``, not ``token
  <sha>``), so a hash named next to the word stays.
- ``credential-near-token``: a high-entropy token (:func:`high_entropy`: 20 to 1024
  characters of letters, digits and ``+/=_-.``, upper and lower case and at least two
  digits, so never a hex SHA, a UUID or a hex hash) within six words (and 2 KiB) of a
  credential word or ``aws`` on the same line.
- ``command-line-password``: a password on a command line: the value of ``--password``
  (and ``--db-password``, ``--passwd``, ``--pass``, ``--passphrase``, ``--secret``,
  ``--token``, ``--api-key``, ``--access-key``, ``--secret-key``, ``--auth-token``;
  after a space, a value of letters only is a word: ``the --token flag``),
  ``-pVALUE`` after ``mysql``, ``mariadb``, ``mysqldump`` or another MySQL client,
  ``sshpass -p VALUE``, and the password of ``-u user:pass``, ``--user user:pass``,
  ``-U``/``--proxy-user``, ``--auth``/``-a`` (curl, wget, HTTPie).
- ``netrc-password``: the password of a ``.netrc`` line (a line starting with
  ``machine``, ``default`` or ``login`` where ``password P`` follows ``login USER``,
  ``machine HOST`` or ``account A``; or a ``password P`` line alone below a ``login``
  or ``machine`` line).
- ``basic-auth-pair``: a base64 token given as a value (after ``:`` or ``=`` and
  perhaps a quote, as Docker's ``"auth": "..."`` and npm's ``_auth=...`` are) that
  decodes to ``user:password``: a user name of letters, digits and ``._@+-``, a
  printable password that is no placeholder.

Placeholders and references are never secrets (:func:`powercontext.core.secrets.
is_placeholder`: ``${DB_PASSWORD}``, ``<your key>``, ``changeme``, ``***``).
"""

from __future__ import annotations

import binascii
import bisect
import itertools
import re
from collections.abc import Callable, Iterator

__all__ = ["context_findings", "high_entropy", "password_like"]

#: (rule, description, start, end) of one finding.
Hit = tuple[str, str, int, int]

#: Case-insensitive on ASCII letters only (``_cred_words`` finds the words in the
#: lowercased text; no other letter folds into a credential word).
_CRED_WORD = re.compile(
    r"(?i)(?<![A-Za-z0-9])(?:"
    r"(?:secret[ _-]?(?:access[ _-]?)?|access[ _-]?|private[ _-]?|api[ _-]?"
    r"|auth[ _-]?|signing[ _-]?|encryption[ _-]?|master[ _-]?|client[ _-]?|license[ _-]?)key"
    r"|apikey|pass(?:word|wd|phrase|code)|pwd|secret"
    r"|(?:(?:api|access|auth|bearer|refresh|session)[ _-]?)?token|credentials?"
    r")(?![A-Za-z0-9]|[_-][A-Za-z0-9])", re.ASCII)
#: The last word of every credential phrase, in the lowercased text.
_CRED_END = re.compile(r"key|pass|pwd|secret|token|credential")
# The words a key's or a token's phrase may start with, written backwards and matched
# on the 40 characters before the key or token reversed: the longest first (a phrase
# may fail to start there, "xsecret access key", and start at the next word).
_KEY_PREFIXES_REVERSED = (
    re.compile(r"[ _-]?ssecca[ _-]?terces"),
    re.compile(r"[ _-]?(?:terces|ssecca|etavirp|ipa|htua|gningis|noitpyrcne|retsam|tneilc"
               r"|esnecil)"))
_TOKEN_PREFIXES_REVERSED = (re.compile(r"[ _-]?(?:ipa|ssecca|htua|reraeb|hserfer|noisses)"),)
_NEAR_WORD = re.compile(r"(?i)(?<![A-Za-z0-9])aws(?![A-Za-z0-9])", re.ASCII)
_TOKEN = re.compile(r"\S+")
#: Words between a credential word and its value.
_LINKS = frozenset({
    "is", "was", "are", "were", "be", "been", "will", "should", "must", "now", "still",
    "set", "to", "as", "the", "a", "an", "our", "my", "this", "that", "its", "it's",
    "here", "=", ":", ":=", "=>", "->", "==", "-", "\u2013", "\u2014", "of", "is:",
    "changed", "reset", "updated", "currently", "value", "reads", "says",
})
#: The links that state a value (a hex value counts only after one of them).
_CONNECTORS = frozenset({"is", "was", "are", "were", "=", ":", ":=", "=>", "->", "to",
                         "is:", "-", "\u2013", "\u2014"})
#: Words after which the next word is a name, not the value (``password for root is X``).
_PREPOSITIONS = frozenset({"for", "on", "in", "at", "of", "from"})
_STRIP_HEAD = "\"'`\\*"
_STRIP_TAIL = "\"'`\\)]}>.,;:?*"
#: Words and numbers joined by separators, each with at most one switch from letters to
#: digits (a separator may lead or trail: ``.netrc``, ``glpat-``).
_WORDLIKE = re.compile(
    r"[-_./+':]?(?:[A-Za-z]+\d*|\d+[A-Za-z]{0,3})"
    r"(?:[-_./+':](?:[A-Za-z]+\d*|\d+[A-Za-z]{0,3}))*[-_./+':]?")
_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_UUID = re.compile(r"[0-9a-fA-F]{8}-(?:[0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}")
_HASH_PREFIX = re.compile(r"(?i)(?:sha\d*|md5|blake\d*|crc\d*|xxh\d*)[:=-]")
_HASH_WORDS = frozenset({"sha", "sha1", "sha256", "sha512", "sha-1", "sha-256", "sha-512",
                         "md5", "hash", "digest", "checksum", "commit", "fingerprint",
                         "integrity", "etag", "uuid", "id", "revision", "rev"})
#: Hex digits, perhaps after words (``src_file_<hex>``, ``build-<hex>``): an id or a hash.
_SPACE = re.compile(r"\s")
_LETTER = re.compile(r"[^\W\d_]")
_HEX = re.compile(r"(?:[A-Za-z]+[_-])*(?:[0-9a-f]+|[0-9A-F]+)")
_HIGH_ENTROPY = re.compile(r"[A-Za-z0-9+/=_.\-]{20,1024}")
#: A run high_entropy could take: 20+ characters of its alphabet holding a digit.
_LONG_MIXED = re.compile(r"[A-Za-z0-9+/=_.\-]{20,}")
_DOTTED = re.compile(r"[A-Za-z_][\w-]*(?:\.[A-Za-z_][\w-]*)+")


def _trim(value: str) -> str:
    return value.lstrip(_STRIP_HEAD).rstrip(_STRIP_TAIL)


def password_like(value: str, is_placeholder: Callable[[str], bool]) -> bool:
    """Whether ``value`` (quotes and trailing punctuation already trimmed) reads as a
    password rather than a word: 6 to 128 characters without white space holding a
    letter and a digit or a symbol, and not a placeholder, a reference, a path, a URL,
    an e-mail address, a UUID, a prefixed hash (``sha256:...``), a dotted name, a call
    or an index (``settings.db_pw``, ``get_token()``, ``env["X"]``), or a word-like shape
    (words and numbers joined by ``-_./+`` with at most one switch from letters to
    digits each: ``base64``, ``x86_64``, ``v1.2.3``, ``SHA256-signed``, ``config.yaml``,
    ``hunter2``)."""
    if not 6 <= len(value) <= 128 or _SPACE.search(value) or not _LETTER.search(value):
        return False
    if value.isalnum() and not any(c.isdigit() for c in value):
        return False  # letters only
    if _WORDLIKE.fullmatch(value) or _EMAIL.fullmatch(value) or _UUID.fullmatch(value):
        return False
    if "://" in value or value.startswith(("/", "./", "../", "~/", "$", "%", "{", "&")) \
            or _HASH_PREFIX.match(value):
        return False
    if _DOTTED.fullmatch(value) or any(c in value for c in "()[]"):
        return False  # a dotted name, a call or an index: settings.db_pw, get_token()
    return not is_placeholder(value)


def high_entropy(value: str) -> bool:
    """Whether ``value`` is a high-entropy token: 20 to 1024 characters of letters,
    digits and ``+/=_-.``, with upper and lower case letters and at least two digits,
    not an option, a dotted name, a path whose every part is word-like or a prefixed
    hash. One-case hex (SHAs, content hashes, UUIDs) never is."""
    if _HIGH_ENTROPY.fullmatch(value) is None or _HASH_PREFIX.match(value):
        return False
    if value.startswith("-") or _DOTTED.fullmatch(value):
        return False  # an option, a dotted name (org.example.Lib2)
    if "/" in value and all(_WORDLIKE.fullmatch(p) for p in value.split("/") if p):
        return False  # a path of words (/home/dev/Project2/Main3.java)
    digits = sum(c.isdigit() for c in value)
    return digits >= 2 and any(c.isupper() for c in value) and any(c.islower() for c in value)


class _Lines:
    """Line bounds from one index of the text's newlines, and the tokens and facts of
    each line holding a cue, found once per line (never once per cue: a megabyte line
    with a cue every few characters stays linear)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self._newlines: list[int] | None = None
        self._tokens: dict[int, tuple[list[int], list[int]]] = {}
        self._facts: dict[tuple[str, int], object] = {}
        self._runs: tuple[list[int], list[int]] | None = None

    def bounds(self, pos: int) -> tuple[int, int]:
        if self._newlines is None:
            self._newlines = [m.start() for m in re.finditer("\n", self.text)]
        i = bisect.bisect_left(self._newlines, pos)
        start = self._newlines[i - 1] + 1 if i > 0 else 0
        end = self._newlines[i] if i < len(self._newlines) else len(self.text)
        return start, end

    def tokens(self, start: int, end: int) -> tuple[list[int], list[int]]:
        found = self._tokens.get(start)
        if found is None:
            spans = [(m.start(), m.end()) for m in _TOKEN.finditer(self.text, start, end)]
            found = ([s for s, _ in spans], [e for _, e in spans])
            self._tokens[start] = found
        return found

    def long_run_near(self, pos: int) -> bool:
        """Whether a run :func:`high_entropy` could take (20+ characters of its alphabet,
        upper and lower case) lies within :data:`_NEAR_CHARS` characters of ``pos`` (the
        runs found once)."""
        if self._runs is None:
            runs = [(m.start(), m.end()) for m in _LONG_MIXED.finditer(self.text)
                    if (r := m.group()) != r.lower() and r != r.upper()]  # both cases
            self._runs = ([a for a, _ in runs], [b for _, b in runs])
        starts, ends = self._runs
        i = bisect.bisect_left(ends, pos - _NEAR_CHARS)  # runs are disjoint: ends sorted
        return i < len(starts) and starts[i] < pos + _NEAR_CHARS

    def fact(self, name: str, pos: int, compute: Callable[[int, int], object]) -> object:
        """``compute(start, end)`` of the line holding ``pos``, once per line."""
        start, end = self.bounds(pos)
        key = (name, start)
        if key not in self._facts:
            self._facts[key] = compute(start, end)
        return self._facts[key]


#: How far from its cue a high-entropy token may stand (and at most six words).
_NEAR_CHARS = 2048
#: A token longer than this cannot hold a value the phrase rule takes.
_MAX_WORD = 160


def _phrase_value(text: str, m: re.Match[str],
                  is_placeholder: Callable[[str], bool]) -> tuple[int, int] | None:
    """The span of the value a credential word introduces, or None. Looks at most seven
    words and 1,200 characters past the word (never the rest of a long line)."""
    at, pos = m.start(), m.end()
    if at and not text[at - 1].isspace():
        if text[at - 1] in "$%{":
            return None  # a variable's name ($PWD, %PASSWORD%, ${TOKEN})
        before = text[max(0, at - 64):at].split()  # the word's token (64 at most)
        if before and before[-1].lstrip("\"'`([{").startswith("-"):
            return None  # an option's name (--password): the command-line rule's
    connected = False  # the value is stated: is, =, :, to ...
    first: list[tuple[int, int]] = []
    if pos < len(text) and not text[pos].isspace():  # the rest of the word's token
        rest = text[pos:pos + _MAX_WORD + 2].split(None, 1)[0]
        if rest[0] not in ":=\"'`":
            return None  # token's, tokenizer-like tails are no operator
        connected = rest[0] in ":="
        pos += len(rest)
        stripped = rest.lstrip(":=\"'`")
        if stripped:
            first.append((pos - len(stripped), pos))
    window_end = min(len(text), pos + 7 * (_MAX_WORD + 8))
    line_end = text.find("\n", pos, window_end)
    tokens = (t.span() for t in _TOKEN.finditer(text, pos, window_end if line_end < 0
                                                  else line_end))
    naming = 0  # words of a name after a preposition (for the admin, of the API)
    links = 0
    for s, e in itertools.chain(first, itertools.islice(tokens, 6)):
        if e - s > _MAX_WORD:
            return None
        word = text[s:e]
        low = word.lower().rstrip(",")
        if low in _LINKS or not low.strip(":="):
            links += 1
            if low in _CONNECTORS or not low.strip(":="):
                connected, naming = True, 0
        elif low in _PREPOSITIONS:
            links += 1
            naming = 1
        elif naming:  # a name: plain words until a link that states the value
            if not word[:1].isalpha() or naming > 3:
                return None
            naming += 1
        else:
            value = _trim(word)
            if not value or value[0] in "([{<-" or value.isalpha():
                return None  # code structure, an option, a word: not a value
            if not connected and _HEX.fullmatch(value):
                return None  # "token <hex>": a hash named next to the word, not given as it
            vs = s + word.index(value)
            return (vs, vs + len(value)) if password_like(value, is_placeholder) else None
        if links > 4:
            return None
    return None


def _near_tokens(text: str, lines: _Lines, m: re.Match[str],
                 seen: set[int]) -> list[tuple[int, int]]:
    """High-entropy tokens within six words of the cue ``m`` on its line."""
    start, end = lines.bounds(m.start())
    starts, ends = lines.tokens(start, end)
    k = bisect.bisect_right(starts, m.start()) - 1
    out = []
    for i in range(max(0, k - 6), min(len(starts), k + 7)):
        if i in seen or not 20 <= ends[i] - starts[i] <= 1100:
            continue
        word = text[starts[i]:ends[i]]
        value = _trim(word.split("=", 1)[1] if "=" in word[:-2] and not word.endswith("=")
                      else word.split(":", 1)[-1] if ":" in word else word)
        if not high_entropy(value):
            continue
        before = text[starts[i - 1]:ends[i - 1]].lower().strip(":=,") if i > 0 else ""
        if before in _HASH_WORDS:
            continue
        seen.add(i)
        vs = starts[i] + word.rfind(value)
        out.append((vs, vs + len(value)))
    return out


# Each pattern starts with a literal (found fast), the character before it is checked
# in code (a leading look-behind makes the engine try every position).
_LONG_FLAG = re.compile(
    r"--(?:[a-z0-9]+-)*(?:password|passwd|pass|passphrase|secret|token|"
    r"api-?key|access-key|secret-key|auth-token)(?:=|[ \t]+)"
    r"(?P<v>'[^'\n]{0,256}'|\"[^\"\n]{0,256}\"|[^\s'\"`;|&)]+)", re.IGNORECASE)
_MYSQL_CUE = re.compile(r"mysql|mariadb")  # in the lowercased text
_MYSQL = re.compile(r"(?i)(?:mysql(?:dump|admin|import|check|show|sh)?|mariadb"
                    r"(?:-dump|-admin)?)(?![\w-])")
_ATTACHED_P = re.compile(r"(?<!\S)-p(?P<v>[^\s'\"`;|&]+)")
_SPACED_P = re.compile(r"(?<!\S)-p[ \t]*(?P<v>[^\s'\"`;|&]+)")
_USER_PASS = re.compile(
    r"-(?:u|U|a|-user|-proxy-user|-auth|-basic-auth)(?:=|[ \t]*)['\"]?"
    r"[^\s:'\"@/]{1,64}:(?P<v>[^\s'\"`;|&]+)")
_HTTP_CLIENT = re.compile(r"(?i)(?<![\w-])(?:curl|wget|https?|httpie)(?![\w-])")
_NETRC = re.compile(r"password[ \t]+(?P<v>\S+)")
#: A base64 token given as a value: after ``:`` or ``=`` (and a quote), as Docker's
#: ``"auth": "..."`` and npm's ``_auth=...`` are.
_B64_VALUE = re.compile(r"[:=][ \t]*[\"']?(?P<v>[A-Za-z0-9+/]{8,344}={0,2})(?![A-Za-z0-9+/=])")
_USER_NAME = re.compile(rb"[A-Za-z0-9._@+\-]{1,64}")


def _unquote(value: str) -> str:
    return value[1:-1] if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"" \
        else value


def _free_before(text: str, pos: int) -> bool:
    """Whether no word character or ``-`` stands right before ``pos``."""
    return pos == 0 or not (text[pos - 1].isalnum() or text[pos - 1] in "_-")


def _flag_hits(text: str, low: str | None, lines: _Lines,
               is_placeholder: Callable[[str], bool], strong: Callable[[str], bool]
               ) -> list[Hit]:
    desc = "password on a command line"
    out: list[Hit] = []
    if "--" in text:
        for m in _LONG_FLAG.finditer(text):
            if not _free_before(text, m.start()):
                continue
            v, s = _unquote(m.group("v")), m.start("v") + (m.group("v") != _unquote(m.group("v")))
            spaced = m.group()[m.start("v") - m.start() - 1] in " \t"
            if strong(v) and not (spaced and v.isalpha()):  # "--token flag": a word
                out.append(("command-line-password", desc, s, s + len(v)))
    cues: list[tuple[int, re.Pattern[str]]] = []
    if low is None or "mysql" in low or "mariadb" in low:
        cues += [(c.end(), _ATTACHED_P) for c in _MYSQL.finditer(text)
                 if _free_before(text, c.start())]
    at = text.find("sshpass")
    while at >= 0:
        if _free_before(text, at) and not (text[at + 7:at + 8].isalnum()
                                           or text[at + 7:at + 8] in "_-"):
            cues.append((at + 7, _SPACED_P))
        at = text.find("sshpass", at + 7)
    done: set[tuple[int, int]] = set()
    for cue_end, pattern in cues:
        start, end = lines.bounds(cue_end - 1)
        if (start, id(pattern)) in done:
            continue
        done.add((start, id(pattern)))  # from the line's first cue to its end, once
        for m in pattern.finditer(text, cue_end, end):
            if strong(m.group("v")):
                out.append(("command-line-password", desc, m.start("v"), m.end("v")))
    for m in _USER_PASS.finditer(text):
        if not _free_before(text, m.start()):
            continue
        v = m.group("v")
        client = lines.fact("client", m.start(), lambda a, b: _HTTP_CLIENT.search(
            text, a, b) is not None)
        if password_like(_trim(v), is_placeholder) or (client and strong(v) and len(v) >= 4):
            out.append(("command-line-password", desc, m.start("v"), m.end("v")))
    return out


def _netrc_hits(text: str, lines: _Lines, strong: Callable[[str], bool]) -> list[Hit]:
    out: list[Hit] = []

    def alone(a: int, b: int) -> bool:  # "password P" below a "login U" / "machine H" line
        if len(_TOKEN.findall(text, a, min(b, a + 4096))) != 2 or a == 0:
            return False
        p, q = lines.bounds(a - 1)
        return text[p:min(q, p + 4096)].lstrip().startswith(("login ", "machine ", "default"))

    for m in _NETRC.finditer(text):
        if not _free_before(text, m.start()):
            continue
        netrc_line = lines.fact("netrc-line", m.start(), lambda a, b: text[a:min(b, a + 64)]
                                .lstrip().startswith(("machine ", "default ", "login ")))
        if netrc_line:
            before = text[max(0, m.start() - 200):m.start()].split()[-2:]
            after_pair = len(before) == 2 and before[0] in ("login", "machine", "account")
        else:
            after_pair = False
        if (after_pair or lines.fact("netrc-alone", m.start(), alone)) \
                and strong(m.group("v")):
            out.append(("netrc-password", "password of a .netrc line", m.start("v"),
                        m.end("v")))
    return out


def _basic_auth_hits(text: str, is_placeholder: Callable[[str], bool]) -> list[Hit]:
    out: list[Hit] = []
    for m in _B64_VALUE.finditer(text):
        token = m.group("v")
        padded = token + "=" * (-len(token) % 4) if "=" not in token else token
        if len(padded) % 4 or (token.isalpha() and token.islower()):
            continue
        try:
            raw = binascii.a2b_base64(padded)
        except (binascii.Error, ValueError):
            continue
        user, colon, password = raw.partition(b":")
        if not colon or not password or not all(0x21 <= b <= 0x7E for b in raw) \
                or _USER_NAME.fullmatch(user) is None or password.startswith(b"//"):
            continue
        if is_placeholder(password.decode("ascii")):
            continue
        out.append(("basic-auth-pair", "base64 user:password pair", m.start("v"), m.end("v")))
    return out


def _cred_words(text: str, low: str | None) -> Iterator[re.Match[str]]:
    """``_CRED_WORD.finditer(text)``, found from the last word of each phrase in the
    lowercased text (a literal search) and matched from where its phrase starts."""
    if low is None:  # lowering changed the length: offsets differ, search the text
        yield from _CRED_WORD.finditer(text)
        return
    last = 0
    for a in _CRED_END.finditer(low):
        p, word = a.start(), a.group()
        if p < last:
            continue
        starts = [p]
        if word in ("key", "token"):
            before = low[max(0, p - 40):p][::-1]
            found = [p - f.end() for r in (_KEY_PREFIXES_REVERSED if word == "key"
                                           else _TOKEN_PREFIXES_REVERSED)
                     if (f := r.match(before)) is not None]
            starts = found + ([] if word == "key" else [p])  # a key alone is no word
        for start in starts:
            m = _CRED_WORD.match(text, start)
            if m is not None and m.end() > p:
                last = m.end()
                yield m
                break


def _aws_words(text: str, low: str | None) -> Iterator[re.Match[str]]:
    if low is None:
        yield from _NEAR_WORD.finditer(text)
        return
    at = low.find("aws")
    while at >= 0:
        m = _NEAR_WORD.match(text, at)
        if m is not None:
            yield m
        at = low.find("aws", at + 3)


def context_findings(text: str, is_placeholder: Callable[[str], bool]
                     ) -> list[Hit]:
    """Every ``(rule, description, start, end)`` the rules of the module docstring find
    in ``text``, in no particular order (spans may overlap one another; the caller
    merges them with the token rules' findings). ``is_placeholder`` is
    :func:`powercontext.core.secrets.is_placeholder`. Never raises on any string."""
    lines = _Lines(text)

    def strong(value: str) -> bool:  # a value the context alone makes a secret
        v = _unquote(value)
        return bool(v) and not v.startswith("-") and not is_placeholder(v)

    lowered = text.lower()
    low = lowered if len(lowered) == len(text) else None
    out: list[Hit] = []
    near_seen: dict[int, set[int]] = {}
    def near(m: re.Match[str]) -> list[Hit]:
        if not lines.long_run_near(m.start()):
            return []  # no token high_entropy could take is near the cue
        seen = near_seen.setdefault(lines.bounds(m.start())[0], set())
        return [("credential-near-token", "high-entropy token next to a credential word",
                 s, e) for s, e in _near_tokens(text, lines, m, seen)]

    for m in _cred_words(text, low):
        span = _phrase_value(text, m, is_placeholder)
        if span is not None:
            out.append(("credential-phrase", "credential in prose", *span))
        out += near(m)
    for m in _aws_words(text, low):
        out += near(m)
    out += _flag_hits(text, low, lines, is_placeholder, strong)
    if "password" in text:
        out += _netrc_hits(text, lines, strong)
    if ":" in text or "=" in text:
        out += _basic_auth_hits(text, is_placeholder)
    return out
