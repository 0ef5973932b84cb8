"""A corpus of credential shapes, found and not found, for every write path's test
(Memory RFC, "Memory admission rules": never save secrets; docs/security.md).

Every credential here is fake: written for these tests or drawn at random by the
strategies below. Each FOUND case is ``(label, text, secret)``: a scan of ``text`` must
find ``secret`` and a redaction must leave none of it. Each NOT_FOUND text holds no
credential (hashes, SHAs, UUIDs, credential words in ordinary prose, placeholders,
references) and must pass every path unchanged. Values that would read as secrets in
this source file itself are built by concatenation.
"""

from __future__ import annotations

import base64
import re
import string

from hypothesis import strategies as st

from powercontext.core.secrets import is_placeholder

__all__ = ["FOUND", "NOT_FOUND", "credential_texts", "ordinary_texts"]

_B64_PAIR = base64.b64encode(b"deploy:" + b"Tr0ub4dor3x").decode()
_B64_PAIR_2 = base64.b64encode(b"ci-bot:" + b"Gq7!vR2mLx").decode()
_AWS_SECRET = "Q8fLm2Zr7Tx/Kp4Wn9Bv" + "3Hc6Jd1Ys5Ga0Ue7Rt2L"
_HEX_TOKEN = "9c1e5b2d8f043f7a9c1e" + "5b2d8f043f7a9c1e5b2d"

#: (label, text, the secret a scan must find in it)
FOUND: tuple[tuple[str, str, str], ...] = (
    # the nine shapes every path stored verbatim before (the list)
    ("password in prose", "The staging database password is " + "2ruL64!11ejcnL and we "
     "rotate it monthly.", "2ruL64!11ejcnL"),
    ("Password: X (note)", "Password: " + "Vq9#zLp2wEr (rotate monthly)", "Vq9#zLp2wEr"),
    (".netrc line", "machine api.example.net login deploy password " + "Xk29fLq0pZ",
     "Xk29fLq0pZ"),
    (".netrc lines", "machine git.example.org\n  login ci\n  password " + "Wm4pQz8rT2\n",
     "Wm4pQz8rT2"),
    ("curl -u", "curl -u deploy:" + "Tr0ub4dor3x https://api.example.net/v1/builds",
     "Tr0ub4dor3x"),
    ("mysql -p", "mysql -u root -p" + "Hq8sZk2Lw shop < dump.sql", "Hq8sZk2Lw"),
    ("docker auth", '{"auths": {"registry.example.net": {"auth": "' + _B64_PAIR + '"}}}',
     _B64_PAIR),
    ("bare AWS secret key", f"Use {_AWS_SECRET} as the AWS secret key for the bucket.",
     _AWS_SECRET),
    ("hex API token in prose", f"The API token for the billing service is {_HEX_TOKEN}.",
     _HEX_TOKEN),
    ("password = X for now", "the admin password = " + "Zp0rt4lAdm1n for now",
     "Zp0rt4lAdm1n"),
    # more of the same kinds
    ("password for user is", "The password for root on staging is " + "Kc8$wR1tYq.",
     "Kc8$wR1tYq"),
    ("token was set to", "The deploy token was set to " + "tk_9Hf2Lq7Wz3Xp yesterday.",
     "tk_9Hf2Lq7Wz3Xp"),
    ("secret key is", "our SECRET_ACCESS_KEY is " + "Zp0rt4lAdm1n, keep it", "Zp0rt4lAdm1n"),
    ("credentials colon", "credentials: " + "r00t:Xq4!mZ9w", "r00t:Xq4!mZ9w"),
    ("--password flag", "pg_restore --password " + "Lm4Nq8Rz2 -d app", "Lm4Nq8Rz2"),
    ("--db-password=", "deploy --db-password=" + "s3cr3tV4lue! --yes", "s3cr3tV4lue!"),
    ("--token flag", "gh release upload --token " + "Rz7pLq2Wm9Xt v1.2", "Rz7pLq2Wm9Xt"),
    ("sshpass -p", "sshpass -p " + "Yv3Kq9Lm ssh deploy@host", "Yv3Kq9Lm"),
    ("mariadb -p", "mariadb -uadmin -p" + "Gq7vR2mLx app", "Gq7vR2mLx"),
    ("npm _auth", "_auth=" + _B64_PAIR_2, _B64_PAIR_2),
    # the shapes the token rules and detect-secrets found before (kept)
    ("GitHub token", "Pushed with ghp_" + "Zq7Rt2Lm9Xw4Pk8Vn3Bc6Hd1Js5Fg0Ya2Ue7 today.",
     "ghp_" + "Zq7Rt2Lm9Xw4Pk8Vn3Bc6Hd1Js5Fg0Ya2Ue7"),
    ("AWS access key id", "key id AKIA" + "Q3ZT7LMN2XPW5RCB in the config",
     "AKIA" + "Q3ZT7LMN2XPW5RCB"),
    ("URL credentials", "DATABASE_URL is postgres://app:" + "s3cretPw@db.internal/app",
     "s3cretPw"),
    ("Authorization header", "curl -H 'Authorization: Bearer " + "abcdef1234567890xyz'",
     "abcdef1234567890xyz"),
    ("PEM private key", "-----BEGIN RSA PRIVATE " + "KEY-----\nMIIEowIBAAKCAQEA\n"
     "-----END RSA PRIVATE KEY-----", "MIIEowIBAAKCAQEA"),
    ("assignment", "password=" + "hunter2", "hunter2"),
    ("export", "export API_KEY=" + "abc123def456", "abc123def456"),
    ("JSON client_secret", '{"client_secret": "' + '9f8e7d6c5b4a"}', "9f8e7d6c5b4a"),
    ("YAML password", 'db:\n  password: "' + 'Xw9!kLm2"', "Xw9!kLm2"),
    ("Slack token", "xoxb-" + "123456789012-abcdefABCDEF12", "xoxb-"
     + "123456789012-abcdefABCDEF12"),
    ("Stripe key", "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc", "sk_live_"
     + "4eC39HqLyjWDarjtT1zdp7dc"),
    ("PGPASSWORD", "PGPASSWORD=" + "Qm3Zr8Lt psql -h db", "Qm3Zr8Lt"),
)

#: Texts with no credential: every path takes them as they are.
NOT_FOUND: tuple[str, ...] = (
    "commit 3f786850e387550fdab836ed7e6dc881de23001b fixed the flaky test",
    "The token's SHA-256 is e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855.",
    "password e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855 hash",
    "session id 123e4567-e89b-12d3-a456-426614174000 expired; the token was refreshed",
    "The cache key is 0d4c7a8e1f2b3c5d6e7f8091a2b3c4d5e6f70819 and never a secret.",
    "The password must come from the vault; never commit secrets.",
    # an environment variable's name where a value would be: a reference, not a secret
    "the database password is QA0_0A000",
    "Rotate the API token every 90 days and keep tokens out of logs.",
    "The session token expires after 3600s.",
    "The secret is stored in config.yaml, the password in the keychain.",
    "The token is base64-encoded and signed with HS256.",
    "The API key lives in ~/.config/app/key.txt.",
    "Set the password to ${DB_PASSWORD} in the environment.",
    "token = get_token()", "password: SecretStr", "api_key: str | None = None",
    "token_count = 5", "max_tokens: 1024", "the token = the analyzer output",
    "docker run -u 1000:1000 -p 8080:80 app",
    "ssh -p 2222 deploy@example.net", "mysql -u root -p shop  # asks for the password",
    "curl -u \"$USER:$TOKEN\" https://api.example.net",
    "pg_dump --password-stdin app", "use the --token flag with your key",
    "integrity sha512-7bVY0NvO3BgPaH1s1Bz+q8JCPIx1r0WGz1cC4n2oAVnEjAq6Yx8b2RlS7t6y4K6V2uaA==",
    "The analyzer token of x86_64 and utf-8 is v1.2.3.",
    "passwords are hashed with bcrypt; the password hash has a salt",
    "auth: oauth2 (see docs/auth.md)", "Basic auth is off.", "machine learning login flow",
    "Use the login and password fields of the form.",
    "the deploy key is in the CI settings, the access key rotates monthly",
)

_LETTERS = string.ascii_letters
#: Symbols a shell takes inside a word unquoted (the command-line shapes use them too);
#: not the sentence punctuation the rules trim, nor a dot (``a.b`` reads as a name).
_SYMBOLS = "%+-=@^_~"


#: What makes a value read as a password rather than a word, a version or a size
#: (core/secret_context.py, password_like): letters around digits, digits around
#: letters, or a symbol no word or version holds.
_PASSWORD_SHAPE = re.compile(r"[A-Za-z]\d+[A-Za-z]|\d[A-Za-z]+\d|[%=@^~]")


@st.composite
def passwords(draw: st.DrawFn) -> str:
    """A password that mixes letters with digits or symbols more than a word does:
    letters, digits and symbols alternating in runs (a random fake)."""
    parts = []
    for i in range(draw(st.integers(3, 6))):
        alphabet = (_LETTERS, string.digits, _SYMBOLS)[i % 3 if draw(st.booleans()) else
                                                      (i % 2)]
        parts.append(draw(st.text(alphabet, min_size=1, max_size=4)))
    value = "".join(parts)
    if len(value) < 8:
        value += draw(st.text(_LETTERS, min_size=2, max_size=2)) + "7z" * 2
    value = value[:40]
    if not _PASSWORD_SHAPE.search(value):  # a version-like shape (e6-73733): make it mixed
        value += "q7Z"
    if is_placeholder(value):
        # your..., test_..., example..., or an environment variable's name (QA0_0A000
        # is one: upper case, digits and underscores): it stands for a secret, so the
        # scanner rightly leaves it; a lower-case letter and digits make it a value
        value = "Qz" + value + "7z"
    return value


def _mixed(alphabet: str, size: int) -> st.SearchStrategy[str]:
    return st.text(alphabet, min_size=size, max_size=size).filter(
        lambda v: any(c.isupper() for c in v) and any(c.islower() for c in v)
        and sum(c.isdigit() for c in v) >= 2)


aws_secrets = _mixed(_LETTERS + string.digits + "+/", 40)
hex_tokens = st.text("0123456789abcdef", min_size=32, max_size=64).filter(
    lambda v: any(c.isalpha() for c in v) and any(c.isdigit() for c in v))
users = st.text(string.ascii_lowercase, min_size=3, max_size=10)
_words = st.lists(st.sampled_from(("we", "deploy", "on", "staging", "after", "review",
                                   "the", "build", "passed", "ok", "today")), max_size=6
                  ).map(" ".join)


@st.composite
def credential_texts(draw: st.DrawFn) -> tuple[str, str]:
    """``(text, secret)``: a random fake credential in one of the shapes of FOUND, with
    prose around it."""
    pw = draw(passwords())
    user = draw(users)
    shape = draw(st.sampled_from(range(11)))
    if shape == 0:
        place = draw(st.sampled_from(["database", "admin", "wifi"]))
        body, secret = f"the {place} password is {pw}", pw
    elif shape == 1:
        body, secret = f"Password: {pw} (rotate monthly)", pw
    elif shape == 2:
        body, secret = f"machine h.example.net login {user} password {pw}", pw
    elif shape == 3:
        body, secret = f"curl -u {user}:{pw} https://api.example.net", pw
    elif shape == 4:
        body, secret = f"mysql -u {user} -p{pw} shop", pw
    elif shape == 5:
        pair = base64.b64encode(f"{user}:{pw}".encode()).decode()
        body, secret = f'{{"auth": "{pair}"}}', pair
    elif shape == 6:
        key = draw(aws_secrets)
        body, secret = f"use {key} as the AWS secret key", key
    elif shape == 7:
        tok = draw(hex_tokens)
        body, secret = f"the API token is {tok}", tok
    elif shape == 8:
        body, secret = f"the admin password = {pw} for now", pw
    elif shape == 9:
        body, secret = f"deploy --password {pw} --yes", pw
    else:
        body, secret = f"sshpass -p {pw} ssh {user}@host", pw
    return f"{draw(_words)} {body} {draw(_words)}".strip(), secret


@st.composite
def ordinary_texts(draw: st.DrawFn) -> str:
    """Prose with credential words next to SHAs, hashes, UUIDs and ids, none of them
    stated as a credential (no ``is``/``=``/``:`` between the word and the value)."""
    pieces = st.one_of(
        st.sampled_from(("the", "password", "secret", "token", "key", "api", "rotate",
                         "commit", "hash", "stored", "in", "vault", "of", "and", "never")),
        st.text("0123456789abcdef", min_size=40, max_size=40),
        st.text("0123456789abcdef", min_size=64, max_size=64),
        st.uuids().map(str),
        st.integers(0, 10**6).map(str),
    )
    return " ".join(draw(st.lists(pieces, min_size=1, max_size=20))) + "."
