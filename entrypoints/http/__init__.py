"""The HTTP API of ``powercontext serve`` (Topic Memory RFC, "HTTP API", "Prepared
Context"; TOPIC-MEMORY.md, "Auth"), FastAPI + uvicorn:

* ``POST /v1/topic-memory/flush``, ``/search``, ``/get`` (:mod:`.topic`);
* ``POST /v1/context/prepare`` (:mod:`.context`);
* ``GET /openapi.json`` and ``GET /v1/health``.

:func:`powercontext.entrypoints.http.app.create_app` builds the app; errors are mapped
once (:mod:`.errors`): 401 without the bearer token, 422 for bad input, 404 for an
unknown reference, 503 when Topic processing (or the database) is unavailable, never
a 500 for bad input.
"""
