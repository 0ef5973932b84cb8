"""The published names of the OpenAPI document's component schemas.

Pydantic names a component schema whose class name two modules share (``SearchRequest``
of the Memory and of the Topic routes) by its module path. The published names keep the
path these modules had when the document was first published
(``powercontext__adapters__http__...``), so moving the package does not change the API's
document (``docs/openapi.json``, which a test keeps equal to ``GET /openapi.json``).
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["keep_published_names"]

_PUBLISHED_PREFIX = "powercontext__adapters__http__"
_MODULE_PREFIX = "powercontext__entrypoints__http__"


def keep_published_names(app: Any) -> None:
    """Make ``app.openapi()`` (what ``GET /openapi.json`` answers) name module-qualified
    component schemas ``powercontext__adapters__http__...`` as first published."""
    build = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:  # built once, then cached like FastAPI's own
            text = json.dumps(build()).replace(_MODULE_PREFIX, _PUBLISHED_PREFIX)
            app.openapi_schema = json.loads(text)
        schema: dict[str, Any] = app.openapi_schema
        return schema

    app.openapi = openapi
