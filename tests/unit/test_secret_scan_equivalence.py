"""The fast secret scan finds exactly what the straightforward scan finds (p2-scanner):
same findings (rule, description, line, span) from the core rules, from the default
scanner (core rules + detect-secrets), from a Source's fields and metadata, and the same
redaction, on generated texts mixing real-looking fake secrets with long lines, repeated
identifiers and noise (Memory RFC, "Memory admission rules"). The straightforward scan is
bench/secret_scan_reference.py, the code as it was before the scanner was made fast.

And the work it saves, counted, not timed: a detector is not called on text holding none
of its literal hints, and a name's uses are counted once per text, not once per
assignment.
"""

from __future__ import annotations

import string
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.secret_scan_reference import (  # noqa: E402
    reference_find_secrets,
    reference_scan,
    reference_source_findings,
)
from powercontext.adapters.secret_scanner import (  # noqa: E402
    _MAX_LINE,
    DetectSecretsScanner,
    default_scanner,
    redact_all,
)
from powercontext.core import secret_assignments as A  # noqa: E402
from powercontext.core import secrets as S  # noqa: E402
from powercontext.core.models import Source  # noqa: E402

_B64 = string.ascii_letters + string.digits + "+/"
_HEX = "0123456789abcdef"

# Fake secrets in the formats of the core rules and of each detect-secrets detector
# (built by concatenation, as in tests/unit/test_secrets.py).
SECRETS = (
    "ghp_" + "Zq7Rt2Lm9Xw4Pk8Vn3Bc6Hd1Js5Fg0Ya2Ue7",
    "AKIA" + "Q3ZT7LMN2XPW5RCB",
    "password" + "=hunter2",
    "PASSWORD" + ': "x9y8z7"',
    "export API_KEY" + "=abc123def456",
    "  db_pass" + ": hunter2",
    '{"client_secret' + '": "9f8e7d6c"}',
    "postgres://app" + ":s3cret@db.internal/app",
    "https://deploy" + ":tok3n@git.example.org/x.git",
    "Authorization" + ": Bearer abcdef123456789",
    "-----BEGIN RSA " + "PRIVATE KEY-----\nMIIEow\nIBAAKC\n-----END RSA PRIVATE KEY-----",
    "-----BEGIN " + "PRIVATE KEY-----",
    "xoxb-" + "123456789012-abcdefABCDEF12",
    "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc",
    "SG." + "a" * 22 + "." + "B" * 43,
    "AC" + "0123456789abcdef" * 2,
    "SK" + "fedcba9876543210" * 2,
    "123456789" + ":AAEhBOweik6ad9r_QXMENQjcrGbqCr4K-Zq",
    "0123456789abcdef" * 2 + "-us12",
    "eyJhbGciOiJIUzI1NiJ9" + ".eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlF",
    "AccountKey" + "=" + "Zq7Rt2Lm" * 11,
    " AKC" + "abcdefghij12 ",
    " AP6" + "xyzXYZ1234 ",
    "//registry.npmjs.org/" + ":_authToken=" + "npm_" + "a1B2" * 9,
    'secret = "' + 'Zq7Rt2Lm9Xw"',
    'my_password => "' + 'Xy7z!Q"',
    'api_\u212aey = "' + 'Zq7Rt2Lm9"',  # KELVIN SIGN folds to k under IGNORECASE
    'ibm_cloud_iam_api_key = "' + "a1B2c3D4e5F6" * 3 + "abcdefgh" + '"',
    'softlayer_api_key = "' + "a1b2c3d4" * 8 + '"',
    'cloudant_password = "' + "0123456789abcdef" * 4 + '"',
    'ibm_cos_secret_access_key = "' + "0123456789abcdef" * 3 + '"',
    "MTA" + "x" * 21 + ".abcdef." + "y" * 27,
    "sk-" + "proj-" + "a1B2c3D4e5F6g7H8i9J0k1",
    "AIza" + "SyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q",
    "hf_" + "abcdefghijABCDEFGHIJabcdefghijABCD",
    "glpat-" + "a1B2c3D4e5F6g7H8i9J0",
    "pypi-AgEIcHlwaS5vcmc" + "A" * 70,
    "sq0csp-" + "a" * 43,
    # caught by a detector only (no ``=``/``:`` for the core assignment rule)
    "cloud_api_key " + "a1B2c3D4e5F6" * 3 + "abcdefgh",
    "sl_api_key " + "a1b2c3d4" * 8,
    "cos_secret_key " + "0123456789abcdef" * 3,
    "cl_apikey " + "3f7a9c1e5b2d8f04" * 4,
    "cloudant_apikey " + "3f7a9c1e5b2d8f04" * 4, "CL-PASS " + "3f7a9c1e5b2d8f04" * 4,
    "SL-API-KEY " + "a1b2c3d4" * 8, "softlayer_password " + "a1b2c3d4" * 8,
    "IBM_COS_SECRET_ACCESS_KEY " + "3f7a9c1e5b2d8f04" * 3,
    "IBM_API_TOKEN " + "a1B2c3D4e5F6" * 3 + "abcdefgh",
    "rk_live_" + "4eC39HqLyjWDarjtT1zdp7dc", "glcbt-" + "ab_" + "a1B2c3D4e5F6g7H8i9J0",
    'Aws token is "' + "Zq7Rt2Lm9Xw4Pk8Vn3Bc6Hd1Js5Fg0Ya2Ue7Ab1C" + '"',
    "https://hooks.slack.com" + "/services/T01/B02/abcdef",
    'if pwd == "' + 'Zq7Rt2Lm9"', '"Zq7Rt2Lm9" == ' + "my_password",
    'contraseña "' + 'Zq7Rt2Lm9";', 'db_pass("' + 'Zq7Rt2Lm9")',
    "token" + " = word", "word word", "word", "self.token = token",
)
_WORDS = ("the", "password", "secret", "token", "key", "api", "pass", "pwd", "word",
          "run", "hash", "is", "stored", "in", "vault", "rotate", "aws", "cl", "gh", "sl",
          "AP", "ac", "-us", "contraseña", "ñ", "k\u212a", "BEGIN", "eyJ", "xox", "value")
_PUNCT = ("", " ", "  ", "\n", "\n\n", "\t", "=", "==", ":", ": ", '"', "'", "`", ";", "(",
          ")", ",", ".", "/", "://", "@", "-", "_", "=>", ":=", "!=", "[", "]", "{", "}", "$")


def _long(piece: str, n: int) -> str:
    return piece * n


_noise = st.one_of(
    st.sampled_from(_WORDS),
    st.text(_HEX, min_size=1, max_size=64),
    st.text(_B64, min_size=1, max_size=90),
    st.text(string.printable, max_size=20),
    st.text(max_size=8),
)
_filler = st.builds(_long, st.sampled_from(("the key ", "x", "ab", "password ", "=", "AP ", ". ")),
                    st.integers(0, _MAX_LINE // 2 + 50))
_piece = st.one_of(st.sampled_from(SECRETS), st.sampled_from(SECRETS), _noise, _filler)
_texts = st.lists(st.tuples(_piece, st.sampled_from(_PUNCT)), max_size=24).map(
    lambda parts: "".join(p + sep for p, sep in parts))


def _contexts(secret: str) -> list[str]:
    """``secret`` alone, in prose, after other lines, and inside one long line: at the
    start of a piece, across a piece boundary, at the end of a piece."""
    pad = "the review is done "
    return [secret, f"note: {secret} here", f"line one\n\n{secret}\nlast",
            "x" * _MAX_LINE + secret,
            "x" * (_MAX_LINE - len(secret) // 2) + secret + " " + pad * 3,
            "y " * ((_MAX_LINE - len(secret)) // 2) + secret + "\n" + secret]


@pytest.mark.parametrize("secret", SECRETS)
def test_each_fake_secret_is_found_alike_in_every_context(secret):
    for text in _contexts(secret):
        assert default_scanner().scan(text) == reference_scan(text)
        assert S.find_secrets(text) == reference_find_secrets(text)


@given(_texts)
def test_core_rules_find_what_the_straightforward_rules_find(text):
    assert S.find_secrets(text) == reference_find_secrets(text)


@given(_texts)
def test_the_default_scan_finds_what_the_straightforward_scan_finds(text):
    assert default_scanner().scan(text) == reference_scan(text)


def _reference_redact_all(text: str, rounds: int = 4) -> str:
    for _ in range(rounds):
        found = reference_scan(text)
        if not found:
            return text
        text = S.redact(text, found)
    found = reference_scan(text)
    if found:
        text = S.redact(text, [S.SecretFinding(f.rule, f.description, f.line) for f in found])
    return text


@given(_texts)
def test_redaction_is_unchanged(text):
    assert redact_all(text) == _reference_redact_all(text)


_key = st.one_of(st.sampled_from(("password", "api_key", "note", "path", "token", "k", "DB_PASS",
                                  "secret")), st.text(string.ascii_letters + "_.-", max_size=12))
_value = st.one_of(st.sampled_from(SECRETS), _noise, st.sampled_from(("hunter2", "x", "")))


@given(content=_texts, uri=st.one_of(st.none(), st.sampled_from(SECRETS), _noise),
       metadata=st.lists(st.tuples(_key, _value), max_size=12))
def test_a_sources_findings_are_unchanged(content, uri, metadata):
    source = Source("src_x", "file", content, "0" * 64, uri, tuple(sorted(metadata)))
    assert S.source_findings(source, default_scanner().scan) \
        == reference_source_findings(source, reference_scan)
    assert S.source_findings(source) == reference_source_findings(source, reference_find_secrets)


@pytest.mark.parametrize("text", [
    "the build is green and the review is done\n" * 2000,
    "the build is green and the review is done " * 2000,  # one line, many pieces
])
def test_a_detector_is_not_called_on_text_without_its_hints(text):
    scanner = DetectSecretsScanner()
    calls = {"n": 0}
    for plugin in scanner._load():
        inner = plugin.analyze_string

        def counted(s, *a, _inner=inner, **k):
            calls["n"] += 1
            return _inner(s, *a, **k)

        plugin.analyze_string = counted
    assert scanner.scan(text) == reference_scan(text)
    assert calls["n"] == 0  # was 24 detectors x every line / piece


def test_a_names_uses_are_counted_once_per_text(monkeypatch):
    text = "".join(f"t{i}_token = shared_name\n" for i in range(300)) + "shared_name\n"
    expected = reference_find_secrets(text)
    counted = {"n": 0}
    uses_of = A.uses_of

    def counting(t, name):
        counted["n"] += 1
        return uses_of(t, name)

    monkeypatch.setattr(A, "uses_of", counting)
    assert S.find_secrets(text) == expected == ()
    assert counted["n"] == 0  # was one whole-text regex scan per assignment


_KEYISH = ("password", "PASS", "pwd", "api-key", "api_key", "x.secret", "my-token", "k\u212aey",
           "credentials", "\u0345key", "a.b", "-", ".", "_", "token_count", "passwordx", "key")
_dense = st.lists(st.one_of(st.sampled_from(_KEYISH), st.sampled_from(_PUNCT),
                            st.sampled_from(("=", ":", "'", '"', " ", "\t", "\n", "==", ":=")),
                            st.text("ab=:'\" \t\n.-_", max_size=6)), max_size=40).map("".join)


@given(st.one_of(_texts, _dense))
def test_assignments_are_the_patterns_own_matches(text):
    """The assignment search tries the pattern only at the key before each operator;
    it yields exactly ``ASSIGNMENT.finditer`` over the whole text (the 8 KB write
    profile: 1.9 ms per one-line LoCoMo text by finditer, 0.24 ms this way)."""
    ours = [(m.span(), m.groupdict()) for m in A.assignments(text)]
    assert ours == [(m.span(), m.groupdict()) for m in A.ASSIGNMENT.finditer(text)]


def test_assignments_on_one_long_line_of_prose_with_colons():
    text = " ".join(f"Caroline: I went to the park {i}. Mel: token = x{i}y password: p{i}q"
                    for i in range(200))
    ours = [(m.span(), m.groupdict()) for m in A.assignments(text)]
    assert ours == [(m.span(), m.groupdict()) for m in A.ASSIGNMENT.finditer(text)]
    assert len(ours) == 1  # rest runs to the end of the line


@given(_texts)
def test_the_write_paths_memoised_check_is_a_fresh_scans(text):
    """stored_text_secret (core/secrets.py, the planner's and the verifier's check) answers
    what find_secret finds, asked once or again."""
    assert S.stored_text_secret(text) == S.find_secret(text) == S.stored_text_secret(text)


def test_memo_keeps_only_clean_texts_and_is_bounded():
    S._memo_clean.cache_clear()
    for i in range(S.MEMO_TEXTS * 2):
        assert S.stored_text_secret(f"note {i}: the review is done") is None
    assert S._memo_clean.cache_info().currsize == S.MEMO_TEXTS
    S._memo_clean.cache_clear()
    secret = "token = 'ghp_" + "a" * 36 + "'"
    for _ in range(3):
        assert S.stored_text_secret(secret) == S.find_secret(secret) is not None
    assert S._memo_clean.cache_info().currsize == 0  # a text with a finding is never kept
    long = "the review is done\n" + "x" * S.MEMO_MAX_CHARS
    assert S.stored_text_secret(long) is None
    assert S._memo_clean.cache_info().currsize == 0


def test_other_scans_keep_no_text():
    # the scanner adapter may refuse a text the rules pass (a detector's finding)
    S._memo_clean.cache_clear()
    default_scanner().scan("the review is done; nothing to see")
    S.find_secrets("the review is done")
    S.check_text("note", "the review is done")
    assert S._memo_clean.cache_info().currsize == 0


_ascii_texts = st.one_of(
    _texts.map(lambda t: t.encode("ascii", "ignore").decode()),
    st.text(string.printable, max_size=200),
    st.lists(st.sampled_from(("KEY", "Key", "kEy", "PASS", "PwD", "Secret_Access-KEY", "SL-API",
                              "XOX", "Hooks.Slack.COM", "CLOUDANT.com", "CL_ApiToken", "=",
                              " ", "'", "\"", ";", "!=", ":", "a" * 44, "A-_" * 15)),
             max_size=30).map("".join),
)


@given(_ascii_texts)
def test_lowered_hints_find_on_the_lowercased_ascii_text_what_the_hints_find(text):
    """Each first hint that the scanner searches without IGNORECASE in the lowercased copy
    of an ASCII text (secret_scanner._ascii_lowered) matches the same spans there as the
    hint in the text."""
    import re

    from powercontext.adapters.secret_scanner import _PLUGINS, _ascii_lowered

    assert text.isascii()
    lowered_hints = [(re.compile(h[0]), _ascii_lowered(re.compile(h[0])))
                     for _m, _n, h in _PLUGINS if h]
    assert sum(low is not None for _h, low in lowered_hints) == 6
    for hint, low in lowered_hints:
        if low is not None:
            assert ([m.span() for m in low.finditer(text.lower())]
                    == [m.span() for m in hint.finditer(text)])


def test_only_a_whole_ignorecase_group_without_uppercase_is_lowered():
    import re

    from powercontext.adapters.secret_scanner import _ascii_lowered

    def low(p):
        found = _ascii_lowered(re.compile(p))
        return None if found is None else found.pattern

    assert low(r"(?i:key|pass)") == r"(?:key|pass)"
    assert low(r"(?i:[a-z]{3}\))") == r"(?:[a-z]{3}\))"
    assert low(r"(?i:[^a-z]\W\b.)") == r"(?:[^a-z]\W\b.)"
    # escapes and non-ASCII letters that stand for or fold to A-Z, ranges over A-Z, mixed
    # or partial groups, inline flags, back-references (found by review)
    for kept in (r"(?i:a)(b)", r"(?i:a)|(?i:b)", r"(?i:a(?-i:k))", r"(?i:A)", r"AKIA|(?i:aws)",
                 r"key", r"(?i:a)b", r"(?i:\x41)", r"(?i:\101)", r"(?i:\u0041)",
                 r"(?i:key|\x41pi)", r"(?i:[\x41-\x5a]{3})", "(?i:\u017f)", r"(?i:\u212a)",
                 "(?i:\u0131)", r"(?i:[\x5a-a])", r"(?i:[^\x41])", r"(?i:[@-a])", r"(?i:(a)\1)"):
        assert low(kept) is None, kept


_regex_pieces = st.sampled_from([
    "a", "k", "s", "z", "0", "_", "-", ".", "A", "K", "S", r"\x41", r"\x61", r"\101", r"\u0041",
    "\u017f", "\u212a", "\u0131", "\u0130", "[a-z]", "[@-a]", "[Z-a]", "[!-/]", "[^a]", "[^A]",
    r"[\x41-\x5a]", r"\w", r"\W", r"\s", r"\d", r"\b", ".", "|", "(", ")", "(?:", "(?-i:",
    "(?<!", "(?=", "*", "+", "?", "{2}", r"\1"])


@given(st.lists(_regex_pieces, min_size=1, max_size=8).map("".join),
       st.lists(st.text(string.printable, max_size=30), min_size=1, max_size=5))
def test_a_lowered_hint_matches_the_hints_spans_on_any_ascii_text(body, texts):
    """Whatever hint _ascii_lowered accepts (here, random regexes over escapes, ranges,
    classes, non-ASCII letters, groups and flags), its matches on the lowercased copy of
    an ASCII text are the hint's on the text."""
    import re

    from powercontext.adapters.secret_scanner import _ascii_lowered

    try:
        hint = re.compile(f"(?i:{body})")
    except (re.error, OverflowError, RecursionError):
        return
    low = _ascii_lowered(hint)
    if low is None:
        return
    for text in texts:
        assert ([m.span() for m in low.finditer(text.lower())]
                == [m.span() for m in hint.finditer(text)])


_FORMER_KEYWORD_HINT = (r"(?i:(?:key|pass|pwd|secret|contrase)\w*[]'\"]{0,2}\s*[:=!]|[!=][!=]"
                        r"|['\"`];)")
_LONG_WORDS = ("key" * 1400, "key" * 1400 + " x=", "PassKey" * 500 + "=1", "a" * 3000 + "key:")


@given(st.one_of(_texts, _ascii_texts, st.sampled_from(_LONG_WORDS)))
def test_the_keyword_hint_holds_on_the_lines_the_former_hint_held_on(text):
    """The keyword detector's first hint, taken from each word's start (linear: the former
    DENYLIST\\w* form retried every DENYLIST of a long word to its end, quadratic on a
    line of "keykey..."), matches on exactly the lines, and the pieces, the former did."""
    import re

    from powercontext.adapters.secret_scanner import _MAX_LINE, _PLUGINS

    (hint,) = [re.compile(h[0]) for _m, n, h in _PLUGINS if n == "KeywordDetector"]
    former = re.compile(_FORMER_KEYWORD_HINT)
    for line in text.split("\n"):
        for piece in [line] + [line[i:i + _MAX_LINE] for i in range(0, len(line), _MAX_LINE)]:
            assert (hint.search(piece) is None) == (former.search(piece) is None)


@pytest.mark.parametrize("text", _LONG_WORDS)
def test_long_words_of_denylist_scan_alike(text):
    assert default_scanner().scan(text) == reference_scan(text)
