"""Properties of the context rules' search (core/secret_context.py): the credential
words found from each phrase's last word in the lowercased text are exactly the
matches of the phrase pattern over the text, on texts dense with the words, their
prefixes, separators and case variants (a literal search instead of the pattern tried
at every position must change nothing)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from powercontext.core.secret_context import _CRED_WORD, _NEAR_WORD, _aws_words, _cred_words

_PIECES = ("key", "pass", "password", "passwd", "pwd", "secret", "token", "tokens",
           "credential", "credentials", "api", "apikey", "access", "private", "auth",
           "aws", "bearer", "session", "client", "license", "signing", "master", "monkey",
           "passed", "$", "%", "{", "-", "_", " ", "  ", "\n", ".", ":", "=", "x", "7",
           "\u212a", "\u017f", "\u0130", "é")
#: Every prefix a key's or a token's phrase takes, with each separator.
_PHRASES = tuple(f"{w}{sep}{last}" for w in ("aws", "secret", "secret access", "access",
                                             "private", "api", "auth", "signing",
                                             "encryption", "master", "client", "license",
                                             "bearer", "refresh", "session", "monkey")
                 for sep in (" ", "_", "-", "") for last in ("key", "token"))


@settings(max_examples=500)
@given(st.lists(st.tuples(st.sampled_from(_PIECES) | st.sampled_from(_PHRASES),
                          st.booleans()), max_size=30))
def test_the_words_found_from_their_last_word_are_the_patterns_matches(parts):
    text = "".join(p.upper() if up else p for p, up in parts)
    lowered = text.lower()
    low = lowered if len(lowered) == len(text) else None
    assert [m.span() for m in _cred_words(text, low)] == \
        [m.span() for m in _CRED_WORD.finditer(text)]
    assert [m.span() for m in _aws_words(text, low)] == \
        [m.span() for m in _NEAR_WORD.finditer(text)]
