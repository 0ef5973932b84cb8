"""Database URLs as the registry and the SQLite plugin read them (ARCHITECTURE.md,
"Plugins"): the scheme that picks a backend, a bare filesystem path as a ``sqlite:`` URL,
and the path a ``sqlite:`` URL names.

- ``sqlite:///abs/path/to/memory.db`` (the file-URL form: empty host, percent-encoded
  path) or ``sqlite://:memory:``; a bare path (``memory.db``, ``./x``) means SQLite.
- ``scheme://...`` for any other backend (``oceanbase://user:password@host:port/db``);
  the plugin registered for the scheme reads the rest.
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote, urlsplit

from powercontext.core.errors import InvalidInputError

__all__ = ["sqlite_path_from_url", "sqlite_url_for_path", "url_scheme"]

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*)://")


def url_scheme(url: str) -> str | None:
    """The lowercase scheme of ``url`` when it has the form ``scheme://...``, else None
    (a bare filesystem path such as ``memory.db``, ``./x`` or ``C:\\x``)."""
    match = _SCHEME.match(url)
    return match.group(1).lower() if match else None


def sqlite_url_for_path(path: str) -> str:
    """The ``sqlite:`` URL of a bare filesystem path: absolute (relative to the current
    directory), ``~`` expanded, percent-encoded; ``:memory:`` -> ``sqlite://:memory:``."""
    if path == ":memory:":
        return "sqlite://:memory:"
    return "sqlite://" + Path(path).expanduser().absolute().as_uri().removeprefix("file://")


def sqlite_path_from_url(url: str) -> str:
    """The database path of a ``sqlite:`` URL: ``sqlite:///tmp/m.db`` -> ``/tmp/m.db``
    (percent-decoded), ``sqlite://:memory:`` -> ``:memory:``.

    Raises :class:`~powercontext.core.errors.InvalidInputError` (a ValueError) for another
    scheme, a host other than empty or ``localhost``, or an empty path.
    """
    if url in ("sqlite://:memory:", "sqlite:///:memory:"):
        return ":memory:"
    parts = urlsplit(url)
    if parts.scheme.lower() != "sqlite":
        raise InvalidInputError("url", f"{url!r} is not a sqlite: URL")
    if parts.netloc not in ("", "localhost"):
        raise InvalidInputError(
            "url", f"{url!r} names host {parts.netloc!r}; use sqlite:///absolute/path"
        )
    if parts.query or parts.fragment:
        raise InvalidInputError("url", f"{url!r}: sqlite URLs take no query or fragment")
    path = unquote(parts.path)
    if not path or path == "/":
        raise InvalidInputError("url", f"{url!r} has no database path")
    return path
