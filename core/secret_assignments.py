"""Credential assignments and placeholders, the secret rule that reads code and
configuration (Memory RFC, "Memory admission rules": never save secrets): a
password/secret/token key followed by ``=`` or ``:`` and a value (``password=<value>``,
``PASSWORD: "<value>"``, ``export API_KEY=...``) is a secret unless the value is a
placeholder or a reference (``${DB_PASSWORD}``, ``<your key>``, ``os.environ[...]``, a
type name, the variable of the same name, a variable the text uses elsewhere) or code.
:func:`powercontext.core.secrets.find_secrets` runs this rule with the others.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

__all__ = [
    "ASSIGNMENT",
    "WordUses",
    "assignment_value",
    "assignments",
    "is_placeholder",
    "uses_of",
]

_SECRET_WORD = (r"(?:pass(?:word|wd|phrase)|secret|token|api[_\-]?key|(?:access|private|secret"
                r"|auth|signing|encryption|master)[_\-]?key|credentials?)")
# The key ends with a secret word right before the operator (``token_count = 5`` and
# ``max_tokens: 10`` do not match); ``pass``/``pwd`` count only as a whole component.
ASSIGNMENT = re.compile(
    r"(?i)(?<![\w.\-])(?P<key>[\w.\-]*?" + _SECRET_WORD
    + r"|(?:[\w.\-]*[_.\-])?(?:pass|pwd))(?P<kq>[\"']?)[ \t]*(?P<op>=(?!=)|:(?![:=]))[ \t]*"
    r"(?:(?P<q>[fFbBrRuU]?[\"'])(?P<qv>[^\"'\n]*)[\"']|(?P<uv>[^\s\"'`,;)&|]+))"
    r"(?P<rest>[^\n]*)")
_OPERATOR = re.compile("[=:]")
_ENV_STYLE = re.compile(r"^[A-Z][A-Z0-9_]*$")
_PLACEHOLDER_WORDS = frozenset({
    "none", "null", "nil", "true", "false", "undefined", "yes", "no", "on", "off",
    "read", "write", "read-write", "inherit", "auto", "default", "env", "environment",
    "str", "string", "int", "bool", "boolean", "number", "bytes", "any", "object", "dict",
    "optional", "required", "secret", "secrets", "password", "pass", "passwd", "token",
    "key", "apikey", "api_key", "api-key", "changeme", "change-me", "example", "placeholder",
    "redacted", "dummy", "fake", "test", "testing", "todo", "tbd", "value", "empty", "hidden",
    "masked", "n/a",
})
_PLACEHOLDER_PREFIXES = (
    "your", "my-", "my_", "test-", "test_", "dummy", "fake", "example", "changeme", "change_me",
    "replace", "insert", "redacted",
    "os.environ", "os.getenv", "getenv", "env.", "env[", "process.env", "settings.",
    "config.", "self.", "secrets.", "vault:", "op://", "keyring", "import.meta.env",
)
_REFERENCE = re.compile(r"^[A-Za-z_][\w]*(?:\.[A-Za-z_]\w*)+$|[()\[\]]")
_IDENTIFIER = re.compile(r"^[a-z_][a-z0-9_]*$")
_TYPE_NAME = re.compile(r"^[A-Z][a-z]+(?:[A-Z][a-z]*)*$")


def is_placeholder(value: str) -> bool:
    """True when ``value`` stands for a secret instead of being one: empty, a template
    (``${X}``, ``{{ x }}``, ``<your key>``, ``%(x)s``, ``$VAR``), a mask (``***``,
    ``xxxx``, ``...``, ``[REDACTED:...]``), a word such as ``changeme``/``password``/
    ``none``, an environment or settings reference (``os.environ[...]``,
    ``process.env.X``), or an environment variable name (``DB_PASSWORD``)."""
    v = value.strip().strip("\"'`")
    if not v:
        return True
    low = v.lower()
    if v[0] in "$<{%[*" or set(v) <= set("*.#?-") or (len(v) >= 3 and set(low) == {"x"}):
        return True
    if low in _PLACEHOLDER_WORDS or low.startswith(_PLACEHOLDER_PREFIXES):
        return True
    if low.endswith(("_here", "-here", "...", "…")):
        return True
    return bool(_ENV_STYLE.match(v) and "_" in v)


#: What follows a string literal that is only part of an expression.
_CONTINUATION = ("+", "%", ".", "*", "[", "if ", "or ", "and ")
#: An identifier value used this many times in the text is a variable, not a secret.
_VARIABLE_USES = 3


#: A whole word (a maximal run of ``\w``) not right after a ``.``.
_WORD_USE = re.compile(r"(?<![\w.])\w+")


def uses_of(text: str, name: str) -> int:
    r"""How often identifier ``name`` occurs in ``text`` as a whole word not after a
    ``.`` (``(?<![\w.])name(?!\w)``)."""
    return len(re.findall(rf"(?<![\w.]){re.escape(name)}(?!\w)", text))


class WordUses:
    r""":func:`uses_of` for many names of one text: the text's words counted once, on
    first use (an identifier ``name`` matches ``(?<![\w.])name(?!\w)`` exactly where a
    maximal ``\w`` run equal to it starts after no ``.``)."""

    def __init__(self, text: str) -> None:
        self._text = text
        self._counts: dict[str, int] | None = None

    def __call__(self, name: str) -> int:
        if self._counts is None:
            counts: dict[str, int] = {}
            for word in _WORD_USE.findall(self._text):
                counts[word] = counts.get(word, 0) + 1
            self._counts = counts
        return self._counts.get(name, 0)


def assignment_value(m: re.Match[str], uses: Callable[[str], int] | None = None
                      ) -> tuple[str, int, int] | None:
    """The secret value of an assignment match and its span, or None when the value is
    a placeholder, a reference or code. ``uses(name)`` counts an identifier's uses in
    ``m.string`` (default :func:`uses_of`)."""
    key = m.group("key")
    if m.group("q") is not None:
        value, start = m.group("qv"), m.start("qv")
        if "{" in value and "}" in value:  # an f-string or a template
            return None
        if m.group("rest").lstrip().startswith(_CONTINUATION):
            return None  # one literal of an expression: token = "x_" + data.hex()
    else:
        value, start = m.group("uv"), m.start("uv")
        rest = m.group("rest")
        if _REFERENCE.search(value) or value.startswith(("/", "./", "../", "~/")):
            return None
        tight = m.group("op") == "=" and m.string[m.end("kq"):m.start("uv")] == "="
        if (_TYPE_NAME.match(value) and not tight) \
                or value.lower() == key.lower().lstrip("-").rsplit(".", 1)[-1]:
            return None  # a type annotation (api_key: SecretStr) or token=token
        tail = rest.lstrip()
        if tail.startswith((",", ")")) and _IDENTIFIER.match(value):
            return None  # a keyword argument passing a variable: connect(password=pw)
        if _IDENTIFIER.match(value) and (uses(value) if uses is not None
                                         else uses_of(m.string, value)) >= _VARIABLE_USES:
            return None  # a variable the text uses elsewhere too: token = word
        if m.group("op") == ":":
            if tail and not tail.startswith("#"):
                return None  # prose after a colon: "Secret: keep it in the vault"
        elif (not tight and tail
              and not tail.startswith(("#", "//", "`", "&", "|", "\\", ",", ")"))):
            return None  # "the token = the analyzer output"; password=hunter2 is tight
    if is_placeholder(value):
        return None
    return value, start, start + len(value)


#: One character of an assignment's key (the key is a maximal run of them).
_KEY_CHAR = re.compile(r"[\w.\-]", re.IGNORECASE)


def _key_start(text: str, line_start: int, op: int) -> int | None:
    r"""Where an assignment whose operator stands at ``op`` must start, or None when no
    key can stand before it: back over ``[ \t]*`` and at most one quote to the end of
    the maximal ``[\w.\-]`` run before them, then to that run's start."""
    j = op
    while j > line_start and text[j - 1] in " \t":
        j -= 1
    if j > line_start and text[j - 1] in "\"'":
        j -= 1
    end = j
    while j > line_start and _KEY_CHAR.match(text, j - 1) is not None:
        j -= 1
    return j if j < end else None


def assignments(text: str) -> Iterable[re.Match[str]]:
    r"""``ASSIGNMENT.finditer(text)``, without trying the pattern at every position.

    Equivalent: a match never spans a newline and its ``rest`` runs to the line's end,
    so a line holds at most one match, the leftmost; and a match is a key that is a
    whole maximal ``[\w.\-]`` run (the lookbehind refuses a start inside one, and
    what follows the key, a quote, a blank or the operator, is none of those
    characters), then an optional quote, blanks and the operator. So on each line
    holding an ``=`` or ``:`` the pattern is tried only at the start of the key before
    each operator, in order, and the first that matches is the line's match (the
    lookbehind sees the text before ``pos``; keys of later operators start later)."""
    pos, n = 0, len(text)
    while (op := _OPERATOR.search(text, pos)) is not None:
        start = text.rfind("\n", 0, op.start()) + 1
        end = text.find("\n", op.start())
        end = n if end < 0 else end
        at: re.Match[str] | None = op
        while at is not None:
            key = _key_start(text, start, at.start())
            if key is not None and (m := ASSIGNMENT.match(text, key, end)) is not None:
                yield m
                break
            at = _OPERATOR.search(text, at.start() + 1, end)
        pos = end + 1
