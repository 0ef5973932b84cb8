"""Run ``remember(mode="extract")`` with one candidate provider on a fresh SQLite file."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from powercontext.adapters.candidates import ProviderPipeline
from powercontext.runtime import open_service


def extract_with(db: Path, provider: Any, sources: tuple[Any, ...]) -> tuple[Any, ...]:
    """(new head or None, its entries, the stored Sources, the pipeline's last result)."""

    async def go() -> tuple[Any, ...]:
        svc = open_service(db)
        pipeline = ProviderPipeline({"model": provider}, source_store=svc.backend)
        svc.candidate_pipeline = pipeline
        try:
            head = await svc.remember(None, sources=sources, mode="extract")
            entries = await svc.entries(head) if head else {}
            stored = await svc.backend.get_sources([s.source_id for s in sources])
            return head, entries, stored, pipeline.last_result
        finally:
            await svc.close()

    return asyncio.run(go())
