"""The configuration files ``powercontext setup`` edits, for every host: a
:class:`ConfigFile` (the text now and the text wanted, written atomically after a
backup, never when unchanged) and the JSON helpers the hosts' planners share. A file
that does not parse is refused (InvalidInputError naming it) and left as it is; a
JSON file with comments too (``opencode.jsonc``, a commented ``settings.json``): its
comments would be lost, so the user is shown what to add instead.
"""

from __future__ import annotations

import difflib
import json
import os
import shutil
from pathlib import Path
from typing import Any

__all__ = ["ConfigFile", "dump_json", "json_file", "load_json", "read", "section"]


class ConfigFile:
    """One configuration file: its current text (None: no file) and the text a setup
    wants."""

    def __init__(self, path: Path, before: str | None, after: str) -> None:
        self.path = path
        self.before = before
        self.after = after

    @property
    def changed(self) -> bool:
        return self.before != self.after

    def diff(self) -> str:
        return "".join(difflib.unified_diff(
            (self.before or "").splitlines(keepends=True), self.after.splitlines(keepends=True),
            fromfile=f"{self.path} (now)" if self.before is not None else "/dev/null",
            tofile=f"{self.path} (after setup)"))

    def write(self) -> Path | None:
        """Write the new text (atomically) after backing the old one up as ``FILE.bak``;
        the backup's path, or None when there was no file. Nothing happens when nothing
        changed."""
        if not self.changed:
            return None
        self.path.parent.mkdir(parents=True, exist_ok=True)
        backup = None
        if self.before is not None:
            backup = self.path.with_name(self.path.name + ".bak")
            shutil.copy2(self.path, backup)
        tmp = self.path.with_name(f".{self.path.name}.powercontext-tmp")
        tmp.write_text(self.after, "utf-8")
        if self.path.exists():
            shutil.copymode(self.path, tmp)
        os.replace(tmp, self.path)
        return backup


def read(path: Path) -> str | None:
    """The file's text, None when it does not exist; InvalidInputError when it cannot be
    read."""
    from powercontext.core.errors import InvalidInputError

    try:
        return path.read_text("utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInputError(str(path), f"cannot read it: {exc}") from exc


def load_json(path: Path, text: str | None, *, hint: str = "") -> dict[str, Any]:
    """The JSON object of ``text`` (``{}`` for no file or a blank one). InvalidInputError
    naming ``path`` when it is not JSON (``hint``: what to add by hand, for a file
    with comments) or not an object; nothing is changed then."""
    from powercontext.core.errors import InvalidInputError

    if text is None or not text.strip():
        return {}
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise InvalidInputError(str(path), f"is not valid JSON ({exc}); nothing was changed "
                                "(setup rewrites plain JSON only, so no comment is ever "
                                "lost): fix or move it first"
                                + (f", or {hint}" if hint else "")) from exc
    if not isinstance(data, dict):
        raise InvalidInputError(str(path), "must hold a JSON object; nothing was changed")
    return data


def dump_json(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def section(path: Path, data: dict[str, Any], key: str, kind: type, where: str = "") -> Any:
    """``data[key]``, created empty (a ``dict`` or ``list``) when missing;
    InvalidInputError naming ``path: where+key`` when it holds another type."""
    from powercontext.core.errors import InvalidInputError

    value = data.setdefault(key, kind())
    if not isinstance(value, kind):
        raise InvalidInputError(f"{path}: {where}{key}",
                                f"must be {'an object' if kind is dict else 'a list'}; "
                                "nothing was changed")
    return value


def json_file(path: Path) -> Any:
    """The file's JSON value, None when it is missing or not JSON (for ``doctor``)."""
    try:
        return json.loads(path.read_text("utf-8"))
    except (OSError, ValueError):
        return None
