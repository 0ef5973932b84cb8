"""The interactive API page: ``GET /docs`` (Swagger UI over ``/openapi.json``), with
its scripts and styles served by this server from ``/docs/assets/`` (the files the
``fastapi-offline`` package ships), so the page works with no network and loads nothing
from a CDN. Like ``/openapi.json`` it needs no token (it holds no data); its "Authorize"
button takes the bearer token for the calls it makes. Part of the ``server`` extra:
without ``fastapi-offline`` the page is off and a warning says which extra to install.
"""

from __future__ import annotations

import importlib.util
import logging
from pathlib import Path
from typing import Any

__all__ = ["ASSETS", "install"]

log = logging.getLogger("powercontext.http")

#: Where the page's scripts and styles are served.
ASSETS = "/docs/assets"


def _static_dir() -> Path | None:
    spec = importlib.util.find_spec("fastapi_offline")
    if spec is None or spec.origin is None:
        return None
    found = Path(spec.origin).parent / "static"
    return found if (found / "swagger-ui-bundle.js").is_file() else None


def install(app: Any) -> bool:
    """Add ``GET /docs`` and the assets under :data:`ASSETS` to ``app``; False (and a
    warning) when the assets are not installed."""
    from fastapi.openapi.docs import get_swagger_ui_html
    from fastapi.staticfiles import StaticFiles
    from starlette.responses import HTMLResponse

    static = _static_dir()
    if static is None:
        log.warning("the /docs page is off: its assets are not installed "
                    "(pip install 'powercontext[server]')")
        return False
    app.mount(ASSETS, StaticFiles(directory=static), name="docs-assets")

    @app.get("/docs", include_in_schema=False)
    async def docs() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url="/openapi.json", title="powercontext API",
            swagger_js_url=f"{ASSETS}/swagger-ui-bundle.js",
            swagger_css_url=f"{ASSETS}/swagger-ui.css",
            swagger_favicon_url=f"{ASSETS}/favicon.png",
            swagger_ui_parameters={"persistAuthorization": True,
                                   "displayRequestDuration": True})

    return True
