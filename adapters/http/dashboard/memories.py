"""The Memories pages of the dashboard (issue 17; Memory RFC, "Search and reads",
"changes()", "Handoff citation")."""

from __future__ import annotations

from fastapi import APIRouter, Depends
from fastapi.responses import RedirectResponse

from powercontext.adapters.http.dashboard.web import viewer

__all__ = ["router"]

router = APIRouter(include_in_schema=False)


@router.get("/ui", dependencies=[Depends(viewer)])
@router.get("/ui/", dependencies=[Depends(viewer)])
async def home() -> RedirectResponse:
    """303 to ``/ui/memories``."""
    return RedirectResponse("/ui/memories", status_code=303)
