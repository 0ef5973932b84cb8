"""The OpenAPI document of ``powercontext serve`` without a running server: what
``GET /openapi.json`` answers (role ``all``), for the checked-in copy
``docs/openapi.json`` that a test keeps equal to it.

``python -m powercontext.entrypoints.http.openapi > docs/openapi.json`` writes it anew
(sorted keys, two-space indent, ``info.version`` left out: it changes with every
release, the routes do not).
"""

from __future__ import annotations

import json
import sys
from typing import Any

__all__ = ["document", "main"]


def document() -> dict[str, Any]:
    """The published OpenAPI document without ``info.version``."""
    from powercontext.entrypoints.http.app import create_app
    from powercontext.entrypoints.http.deps import Services

    # the document is the same with or without a token: every route declares it
    spec: dict[str, Any] = create_app(Services(memory=None, topic=None),
                                      api_token=None).openapi()
    spec = json.loads(json.dumps(spec))  # a deep copy: the app caches its document
    spec["info"].pop("version", None)
    return spec


def main() -> None:
    """Print :func:`document` as the checked-in file holds it."""
    sys.stdout.write(json.dumps(document(), indent=2, sort_keys=True, ensure_ascii=False)
                     + "\n")


if __name__ == "__main__":
    main()
