"""The secret rules (core.secrets) and the default scanner (core rules + detect-secrets):
what is a secret, what is not, and that redaction leaves nothing behind (issue 11 item 2;
Memory RFC, "Memory admission rules")."""

from __future__ import annotations

import string
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from powercontext.adapters.secret_scanner import default_scanner, redact_all, redact_fields
from powercontext.core import canonical
from powercontext.core import secrets as S
from powercontext.core.errors import InvalidInputError, SecretDetectedError

ROOT = Path(__file__).resolve().parents[2]
GITHUB = "ghp_" + "Zq7Rt2Lm9Xw4Pk8Vn3Bc6Hd1Js5Fg0Ya2Ue7"


@pytest.mark.parametrize(("text", "rule", "secret"), [
    (f"token {GITHUB}", "github-token", GITHUB),
    ("AWS_ACCESS_KEY_ID=AKIAQ3ZT7LMN2XPW5RCB", "aws-access-key-id", "AKIAQ3ZT7LMN2XPW5RCB"),
    ("password=hunter2", "credential-assignment", "hunter2"),
    ('PASSWORD: "x"', "credential-assignment", '"x"'),
    ("export API_KEY=abc123def456", "credential-assignment", "abc123def456"),
    ("  db_pass: hunter2", "credential-assignment", "hunter2"),
    ('{"client_secret": "9f8e7d6c"}', "credential-assignment", "9f8e7d6c"),
    ("postgres://app:s3cret@db.internal/app", "url-credentials", "s3cret"),
    ("https://deploy:tok3n@git.example.org/x.git", "url-credentials", "tok3n"),
    ("curl -H 'Authorization: Bearer abcdef123456789'", "authorization-header", "abcdef123456789"),
    ("API_KEY=abc123 npm start", "credential-assignment", "abc123"),
    ("run it with password=Hunter", "credential-assignment", "Hunter"),
    ("-----BEGIN RSA PRIVATE KEY-----\nMIIEow\nIBAAKC\n-----END RSA PRIVATE KEY-----\nafter",
     "pem-private-key", "MIIEow"),
])
def test_each_kind_of_secret_is_found_and_redacted_visibly(text, rule, secret):
    found = default_scanner().scan(text)
    assert found and found[0].rule == rule and found[0].line == 1
    clean = redact_all(text)
    assert f"[REDACTED:{rule}]" in clean
    assert secret not in clean and default_scanner().scan(clean) == ()


@pytest.mark.parametrize("text", [
    "The password must come from the vault; never commit secrets.",
    "Secret: keep it in the vault.",
    "Rotate the API token every 90 days and keep tokens out of logs.",
    "commit 3f786850e387550fdab836ed7e6dc881de23001b fixed it",
    "id 123e4567-e89b-12d3-a456-426614174000",
    "content_hash e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "password = ${DB_PASSWORD}", "api_key: <your key here>", "token: ${{ secrets.GH_TOKEN }}",
    "secret = os.environ['SECRET']", "token = get_token()", "passwd=url.password or ''",
    "connect(user=u, password=password)", "api_key: str | None = None", "token: string;",
    "password: SecretStr", "if password == '':", 'password = f"{pw}"', "password: ''",
    "token_count = 5", "max_tokens: 1024", "the token = the analyzer output",
    "oceanbase://USER:PASS@HOST:PORT/DB", "oceanbase://root:@127.0.0.1:2881/test",
    "password=[REDACTED:credential-assignment]", "sk-learn is not a key",
    "permissions:\n  id-token: write\n  contents: read", "secrets: inherit",
])
def test_ordinary_text_references_and_placeholders_are_not_secrets(text):
    assert default_scanner().scan(text) == ()


_WORDS = ("the", "password", "secret", "token", "key", "must", "never", "be", "committed",
          "run", "make", "test", "hash", "manifest", "revision", "entry", "api", "is",
          "stored", "in", "vault", "rotate", "tokens", "credentials", "reviewers")
_hex = st.text("0123456789abcdef", min_size=40, max_size=40)
_piece = st.one_of(
    st.sampled_from(_WORDS),
    _hex,                                               # git SHAs
    st.uuids().map(str),                                # UUIDs
    st.text("0123456789abcdef", min_size=64, max_size=64),  # SHA-256 content hashes
    _hex.map(lambda h: f"src_file_{h}"),                # Source ids
    st.integers(0, 10**6).map(str),
)


#: The prose words without "is": "the API token is <hex>" states a credential (a hex
#: value after a credential word and a link that states it, core/secret_context.py).
_NOT_STATED = st.sampled_from([w for w in _WORDS if w != "is"])


@given(st.lists(st.one_of(_piece.filter(lambda p: p != "is"), _NOT_STATED), min_size=1,
                max_size=30).map(" ".join))
def test_prose_shas_uuids_and_hashes_are_never_secrets(text):
    assert default_scanner().scan(text + ".") == ()


@given(prose=st.lists(st.sampled_from(_WORDS), max_size=8).map(" ".join),
       value=st.text(string.ascii_letters + string.digits + "!#%^*_+", min_size=4, max_size=24)
       .filter(lambda v: not S.is_placeholder(v) and any(c.isdigit() for c in v)),
       key=st.sampled_from(["password", "DB_PASSWORD", "api_key", "secret", "auth_token"]))
def test_an_assignment_anywhere_in_prose_is_found_and_redacted_away(prose, value, key):
    text = f"{prose}\n{key}={value}\n{prose}"
    assert any(f.line == 2 for f in default_scanner().scan(text))
    clean = redact_all(text)
    assert value not in clean.split("\n")[1] and default_scanner().scan(clean) == ()


def test_this_repositorys_own_files_hold_no_secret():
    files = [p for p in ROOT.iterdir() if p.is_file() and p.suffix in ("", ".md", ".toml",
                                                                       ".ini", ".txt")]
    for folder in ("core", "app", "adapters", "ports", "sql", "plugins", "entrypoints", "bench"):
        # not the kit: its tests hold fake secrets
        files += [p for p in (ROOT / folder).rglob("*.py")
                  if ROOT / "plugins" / "testing" not in p.parents]
    assert len(files) > 30
    scanner = default_scanner()
    flagged = [(str(p.relative_to(ROOT)), f.line) for p in files
               for f in scanner.scan(p.read_text("utf-8"))]
    assert flagged == []


def test_secret_detected_error_names_field_rule_and_line_never_the_secret():
    src = canonical.make_source("src_x", "file", "a\nb\nexport TOKEN=zz9yy8xx7\n")
    with pytest.raises(SecretDetectedError) as info:
        S.check_sources((src,), default_scanner().scan)
    err = info.value
    assert isinstance(err, InvalidInputError) and isinstance(err, ValueError)
    assert (err.field, err.rule, err.line) == ("sources[0].content", "credential-assignment", 3)
    assert "zz9yy8xx7" not in str(err)


def test_redact_fields_redacts_content_uri_and_secret_named_metadata():
    content, uri, meta = redact_fields(
        f"pushed with {GITHUB}", "postgres://app:s3cret@db/app",
        {"password": "hunter2", "request": "set password=hunter2", "cwd": "/src/app"})
    assert content == "pushed with [REDACTED:github-token]"
    assert uri == "postgres://app:[REDACTED:url-credentials]@db/app"
    assert meta == {"password": "[REDACTED:credential-assignment]",
                    "request": "set password=[REDACTED:credential-assignment]",
                    "cwd": "/src/app"}


@pytest.mark.parametrize("code", [
    # a variable the code uses elsewhere too (found in core/analyzer.py by the repo scan)
    "token = word\nif len(token) > 3:\n    return word[:3]\nfor word in words:\n    pass\n",
    # one literal of an expression, not a whole value
    'token = "x_" + data.hex()\n',
    "secret = 'prefix' % value\n",
])
def test_code_that_assigns_to_a_secret_named_variable_is_not_a_secret(code):
    assert S.find_secrets(code) == ()


@pytest.mark.parametrize("text", ["password=hunter2", "password = hunter2\n",
                                  '[db]\npassword = "s3cr3t-Value"\n'])
def test_a_value_used_once_is_still_a_secret(text):
    assert [f.rule for f in S.find_secrets(text)] == ["credential-assignment"]
