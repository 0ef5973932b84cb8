"""The prompt hook's resident process (docs/hooks.md, "Faster prompts: the hook daemon";
issue 14): ``powercontext hook daemon`` keeps the library imported and answers the
``UserPromptSubmit`` events of one SQLite database over a Unix socket beside it
(``<database>-hook.sock``, mode 0600), so ``powercontext hook claude-code`` no longer
pays ~300 ms of imports per prompt.

The client half (:func:`forward`) runs first in every ``powercontext`` process
(:mod:`powercontext.entrypoints.cli.entry`) and imports the standard library only. It
forwards the hook's stdin when, and only when, all of these hold; otherwise it
returns None and the command runs in-process exactly as without a daemon:

- ``$POWERCONTEXT_HOOK_DAEMON`` is not ``0``;
- the command line is ``[--db PATH] [--embedding NAME] [--analyzer NAME] hook
  claude-code`` with at most the prompt options ``--limit/-n``, ``--mode``,
  ``--topics/--no-topics`` (and the Stop-only ``--extract/--no-extract``,
  ``--create-memory``), each well formed (:func:`parse_argv`);
- the database is a SQLite file path (not a URL) and its socket exists, is a socket
  (not a symlink), is owned by this user and grants nothing to group or others
  (:func:`socket_trusted`);
- once connected, the process listening on it runs as this user (``SO_PEERCRED``,
  where the system has it: :func:`peer_uid`), checked before a byte is sent: a socket
  another user placed there never sees the prompt and never answers for it.

The daemon answers only what it can answer exactly as the in-process hook would:
a ``UserPromptSubmit`` event with an absolute ``cwd``, from a client of the same
installation (:func:`build_id`), with the same options and the same environment in
what the hook reads (:data:`ENV_PREFIXES`, :data:`ENV_NAMES`, compared by digest). For
anything else (a Stop event, another installation, another environment, any error) it
replies ``fallback`` and the client runs the hook in-process, so nothing an agent sees
depends on the daemon but the time: a prompt event only reads, so running it again
in-process is harmless. A daemon whose own files changed (an upgrade) stops itself on
the next request.

Wire format, one connection per event: the client sends one JSON header line
``{"protocol", "build", "env", "db", "embedding", "analyzer", "limit", "mode",
"topics", "length"}`` and ``length`` raw stdin bytes; the daemon replies one JSON line
``{"status": "ok", "stdout": TEXT}`` (TEXT printed as is; empty: nothing injected) or
``{"status": "fallback", "why": TEXT}``.
"""

from __future__ import annotations

import io
import os
import sys
from typing import Any

__all__ = [
    "ENV_DISABLE",
    "ENV_NAMES",
    "ENV_PREFIXES",
    "LIMITS",
    "MAX_SOCKET_PATH",
    "MODES",
    "PROTOCOL",
    "build_id",
    "env_digest",
    "forward",
    "parse_argv",
    "peer_uid",
    "real_db",
    "socket_path",
    "socket_trusted",
]

#: ``POWERCONTEXT_HOOK_DAEMON=0`` makes every hook run in-process.
ENV_DISABLE = "POWERCONTEXT_HOOK_DAEMON"
#: The version of the wire format above.
PROTOCOL = 1
#: Environment variables a prompt hook may read (by prefix, and by name): the client's
#: and the daemon's must agree (:func:`env_digest`) for the daemon to answer.
ENV_PREFIXES = ("POWERCONTEXT_", "OPENAI_", "HF_", "SENTENCE_TRANSFORMERS_")
ENV_NAMES = ("HOME", "XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME")
#: The longest socket path a Unix socket takes here (``sun_path`` is 108 bytes).
MAX_SOCKET_PATH = 100
#: The client waits at most this long for the daemon's answer (then runs in-process).
CLIENT_TIMEOUT_S = 5.0
#: Largest header line and stdin the daemon reads from one connection.
MAX_HEADER_BYTES = 64 * 1024
MAX_STDIN_BYTES = 64 * 1024 * 1024
#: The client forwards an event of at most this many bytes (a prompt); anything larger
#: runs in-process, which cuts it at the boundary while reading.
MAX_FORWARD_BYTES = 1024 * 1024

#: The prompt hook's ``--mode`` choices and ``--limit`` range (``hook claude-code``).
MODES = ("auto", "fts", "vector", "hybrid")
LIMITS = range(1, 51)
_GLOBAL = {"--db": "db", "--embedding": "embedding", "--analyzer": "analyzer"}
_FLAGS = {"--topics": ("topics", True), "--no-topics": ("topics", False),
          "--extract": (None, None), "--no-extract": (None, None),
          "--create-memory": (None, None)}


def parse_argv(argv: list[str]) -> dict[str, Any] | None:
    """The options of ``[GLOBAL...] hook claude-code [OPTION...]`` as a dict (``db``,
    ``embedding``, ``analyzer``: str or None; ``limit`` 1-50, default 5; ``mode``, default
    ``auto``; ``topics``, default True), or None for any other command line, including
    one click would refuse (the in-process command then reports it)."""
    out: dict[str, Any] = {"db": None, "embedding": None, "analyzer": None,
                           "limit": 5, "mode": "auto", "topics": True}
    args = list(argv)
    i = 0
    while i < len(args) and args[i] != "hook":
        got = _valued(args, i)
        if got is None or got[0] not in _GLOBAL:
            return None
        name, value, i = got
        out[_GLOBAL[name]] = value
    if args[i : i + 2] != ["hook", "claude-code"]:
        return None
    i += 2
    while i < len(args):
        if args[i] in _FLAGS:
            key, flag = _FLAGS[args[i]]
            if key is not None:
                out[key] = flag
            i += 1
            continue
        got = _valued(args, i)
        if got is None or got[0] not in ("--limit", "-n", "--mode") \
                or args[i].startswith("-n="):
            return None
        name, value, i = got
        if name == "--mode":
            if value not in MODES:
                return None
            out["mode"] = value
        elif value.isascii() and value.isdigit() and int(value) in LIMITS:
            out["limit"] = int(value)
        else:
            return None
    return out


def _valued(args: list[str], i: int) -> tuple[str, str, int] | None:
    """``(name, value, index after)`` of the option ``args[i]`` (``NAME=VALUE`` or ``NAME
    VALUE``), or None when its value is missing."""
    name, eq, value = args[i].partition("=")
    if eq:
        return name, value, i + 1
    return None if i + 1 >= len(args) else (name, args[i + 1], i + 2)


def socket_path(db: str) -> str | None:
    """``<real path of the database>-hook.sock``, or None for a database that is not a
    SQLite file path (a URL, ``:memory:``) or whose socket path would exceed
    :data:`MAX_SOCKET_PATH` bytes."""
    if not db or "://" in db or db == ":memory:":
        return None
    path = real_db(db) + "-hook.sock"
    return path if len(os.fsencode(path)) <= MAX_SOCKET_PATH else None


def socket_trusted(path: str) -> bool:
    """Whether ``path`` is a Unix socket this user's daemon could have made: a socket
    (``lstat``: a symlink is not one) owned by this process's user, with no permission
    for group or others (the daemon binds it 0600)."""
    import stat

    try:
        st = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISSOCK(st.st_mode) and st.st_uid == os.getuid() \
        and st.st_mode & 0o077 == 0


def peer_uid(sock: Any) -> int | None:
    """The user id of the process at the other end of the connected Unix socket
    ``sock`` (``SO_PEERCRED``), or None where the system does not tell it (then
    :func:`socket_trusted` is the check)."""
    import socket
    import struct

    option = getattr(socket, "SO_PEERCRED", None)
    if option is None:
        return None
    size = struct.calcsize("3i")
    _pid, uid, _gid = struct.unpack("3i", sock.getsockopt(socket.SOL_SOCKET, option, size))
    return int(uid)


def real_db(db: str) -> str:
    """The real path of the database file ``db`` names (``~`` expanded, symlinks
    resolved): how the client and the daemon name one database alike."""
    return os.path.realpath(os.path.expanduser(db))


def setup_hint(db_args: list[str]) -> str:
    """The line ``setup claude-code`` prints for the daemon, given the ``--db PATH``
    words it put in the hook command (none: the default database); empty for a database
    the daemon does not serve (:func:`socket_path`: a URL, ``:memory:``, a long path)."""
    if socket_path(_database({"db": db_args[-1] if db_args else None})) is None:
        return ""
    import shlex

    where = f" --db {shlex.quote(db_args[-1])}" if db_args else ""
    return (f"Prompts are answered faster (~0.1 s instead of ~0.4 s) while `powercontext"
            f"{where} hook daemon` runs; without it the hook works as before.")


def build_id() -> str:
    """This installation: the protocol, and the size and modification time of this file
    (an upgrade rewrites it)."""
    st = os.stat(__file__)
    return f"{PROTOCOL}:{st.st_size}:{st.st_mtime_ns}"


def env_digest(environ: Any = None) -> str:
    """SHA-256 of the environment variables a prompt hook may read (sorted name=value
    lines; :data:`ENV_DISABLE` left out), so the values never travel."""
    import hashlib

    env = os.environ if environ is None else environ
    lines = sorted(f"{k}={v}" for k, v in env.items() if k != ENV_DISABLE and (
        k.startswith(ENV_PREFIXES) or k in ENV_NAMES))
    return hashlib.sha256("\n".join(lines).encode("utf-8", "surrogateescape")).hexdigest()


def _database(opts: dict[str, Any]) -> str:
    if opts["db"]:
        return str(opts["db"])
    from powercontext.paths import default_db_url

    return default_db_url()


def forward(argv: list[str]) -> int | None:
    """Answer this command through the daemon: 0 after printing the daemon's answer, or
    None when the command must run in-process (module docstring). Never raises; when it
    has read stdin and returns None, ``sys.stdin`` holds the same bytes again."""
    if os.environ.get(ENV_DISABLE) == "0":
        return None
    try:
        opts = parse_argv(argv)
        if opts is None:
            return None
        db = _database(opts)
        path = socket_path(db)
        if path is None or not socket_trusted(path):
            return None
    except Exception:
        return None
    buffer = getattr(sys.stdin, "buffer", None)
    if buffer is None:
        return None
    # at most MAX_FORWARD_BYTES: a larger event (a Stop with a long reply) is read by the
    # in-process hook, which cuts it while reading
    data = buffer.read(MAX_FORWARD_BYTES + 1)
    try:
        return None if len(data) > MAX_FORWARD_BYTES else _ask(path, db, opts, data)
    except Exception:
        return None
    finally:
        import io

        rest = buffer if len(data) > MAX_FORWARD_BYTES else io.BytesIO()
        sys.stdin = io.TextIOWrapper(io.BufferedReader(_Replay(data, rest)),
                                     encoding="utf-8", errors="replace")


class _Replay(io.RawIOBase):
    """The bytes already read, then the rest of the stream they came from."""

    def __init__(self, head: bytes, rest: Any) -> None:
        self._head = memoryview(head)
        self._rest = rest

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        if self._head:
            n = min(len(b), len(self._head))
            b[:n] = self._head[:n]
            self._head = self._head[n:]
            return n
        data = self._rest.read(len(b))
        b[:len(data)] = data
        return len(data)


def _ask(path: str, db: str, opts: dict[str, Any], data: bytes) -> int | None:
    import json
    import socket

    env = os.environ
    header = {"protocol": PROTOCOL, "build": build_id(), "env": env_digest(),
              "db": real_db(db),
              "embedding": opts["embedding"] or env.get("POWERCONTEXT_EMBEDDING") or None,
              "analyzer": opts["analyzer"] or env.get("POWERCONTEXT_ANALYZER") or None,
              "limit": opts["limit"], "mode": opts["mode"], "topics": opts["topics"],
              "length": len(data)}
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(CLIENT_TIMEOUT_S)
        sock.connect(path)
        uid = peer_uid(sock)
        if uid is not None and uid != os.getuid():
            return None  # another user listens there: it gets nothing
        sock.sendall(json.dumps(header).encode("utf-8") + b"\n" + data)
        sock.shutdown(socket.SHUT_WR)
        chunks = []
        while chunk := sock.recv(1 << 16):
            chunks.append(chunk)
    reply = json.loads(b"".join(chunks))
    if not isinstance(reply, dict) or reply.get("status") != "ok" \
            or not isinstance(reply.get("stdout"), str):
        return None
    sys.stdout.write(reply["stdout"])
    sys.stdout.flush()
    return 0
