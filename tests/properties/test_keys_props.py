"""Properties of business keys (core.keys.normalize_key; memory_names.memory_key)."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from powercontext.core.errors import InvalidInputError
from powercontext.core.keys import MAX_KEY_CHARS, normalize_key
from powercontext.memory_names import memory_key

#: Controls, format characters (bidirectional overrides, zero-width, the soft hyphen),
#: line/paragraph separators and lone surrogates (core/characters.py).
_REFUSED = {"Cc", "Cf", "Zl", "Zp", "Cs"}


@given(st.text(max_size=MAX_KEY_CHARS + 8))
@example("\xad")  # a soft hyphen (Cf): refused, which the property once called a fault
def test_a_key_is_its_nfc_form_or_a_typed_error_naming_the_field(text):
    try:
        key = normalize_key(text, "key")
    except InvalidInputError as exc:
        assert exc.field == "key"
        nfc = unicodedata.normalize("NFC", text)
        assert (not nfc or nfc != nfc.strip() or len(nfc) > MAX_KEY_CHARS
                or any(unicodedata.category(c) in _REFUSED for c in text))
        return
    assert key == unicodedata.normalize("NFC", text)
    assert 1 <= len(key) <= MAX_KEY_CHARS and key == key.strip()
    assert not any(unicodedata.category(c) in _REFUSED for c in key)
    assert normalize_key(key) == key  # idempotent


@given(st.text(st.characters(codec="utf-8", categories=("L", "N", "P", "S")), min_size=1,
               max_size=40))
def test_two_spellings_of_one_key_are_one_key(name):
    nfd = unicodedata.normalize("NFD", name)
    assert normalize_key(nfd) == normalize_key(unicodedata.normalize("NFC", name))


@given(st.lists(st.sampled_from(["src", "pkg", "a b", "ü", "..", "."]), max_size=4))
def test_a_repo_key_inside_a_checkout_is_the_top_levels(tmp_path_factory, parts):
    root = tmp_path_factory.mktemp("repo")
    (root / ".git").mkdir()
    inner = root.joinpath(*parts) if parts else root
    want = f"repo:{root.resolve()}"
    if ".." in parts:  # may leave the checkout: then it is that real path (or its repo)
        return
    assert memory_key(f"repo:{inner}") == want
    assert memory_key(memory_key(f"repo:{inner}")) == want


@pytest.mark.parametrize("bad", [None, 3, b"repo:/x", "", "a\x00b", "line\nbreak",
                                 "\u2028", "x" * (MAX_KEY_CHARS + 1), "repo:"])
def test_malformed_keys_are_invalid_input(bad):
    with pytest.raises(InvalidInputError) as err:
        memory_key(bad)
    assert err.value.field == "key"
