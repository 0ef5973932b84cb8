"""Placeholder of the dashboard's topics pages (issue 17; filled by the dash-more branch):
its routes go on :data:`router`, which the dashboard package includes."""

from __future__ import annotations

from fastapi import APIRouter

__all__ = ["router"]

router = APIRouter()
