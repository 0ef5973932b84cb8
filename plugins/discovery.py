"""Whether any installed distribution may declare an entry point of a group, told without
importing :mod:`importlib.metadata` (ARCHITECTURE.md, "Plugins").

Importing ``importlib.metadata`` (with ``email``, ``zipfile``, ``csv`` and the rest it
pulls in) cost about an eighth of the instructions of a whole prompt hook
(``powercontext hook claude-code``, issue 14: 113 M of 898 M under valgrind), and a
database with no third-party plugin never needs it. :func:`may_declare_entry_points`
looks where ``importlib.metadata`` looks (every ``sys.path`` entry's ``*.dist-info`` and
``*.egg-info`` folders, their ``entry_points.txt``) for a section header of the group.
It answers True whenever it cannot tell, so pluggy's loading (which reads the real
metadata) runs whenever an entry point may exist: a ``sys.path`` entry that is a file
(a zip or an egg), an ``.egg`` folder, an unreadable ``entry_points.txt``, or a meta-path
finder besides the standard one that finds distributions of its own.
"""

from __future__ import annotations

import os
import re
import sys
from importlib.machinery import PathFinder

__all__ = ["may_declare_entry_points"]


def _section(group: str) -> re.Pattern[str]:
    # a superset of the headers importlib.metadata reads as the group (it strips the line
    # and the brackets): spaces and doubled brackets count too
    return re.compile(r"^\s*\[+\s*" + re.escape(group) + r"\s*\]+\s*$", re.MULTILINE)


def may_declare_entry_points(group: str) -> bool:
    """False only when no distribution visible to ``importlib.metadata`` (``sys.path``,
    ``sys.meta_path``) declares an entry point section ``[group]``; True when one does
    or when that cannot be told cheaply (see the module docstring). Never raises."""
    for finder in sys.meta_path:
        if finder is not PathFinder and hasattr(finder, "find_distributions"):
            return True  # distributions from elsewhere: let importlib.metadata look
    header = _section(group)
    for entry in sys.path:
        root = entry or "."
        if root.lower().endswith(".egg"):
            return True
        try:
            names = os.listdir(root)
        except FileNotFoundError:
            continue  # importlib.metadata finds nothing there either
        except OSError:
            if os.path.exists(root):
                return True  # a zip file or an unreadable folder: cannot tell
            continue
        for name in names:
            if not name.lower().endswith((".dist-info", ".egg-info")):
                continue
            try:
                with open(os.path.join(root, name, "entry_points.txt"), encoding="utf-8",
                          errors="replace") as fh:
                    text = fh.read()
            except (FileNotFoundError, NotADirectoryError):
                continue  # no entry points (an egg-info may be a file)
            except OSError:
                return True
            if header.search(text):
                return True
    return False
