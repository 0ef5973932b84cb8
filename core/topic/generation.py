"""Values at the Topic provider boundary (Topic Memory RFC, "Cumulative work and
evidence ceilings", "Probe and historical Topic selection", "Evolution operations and
model output"; TOPIC-MEMORY.md, "Providers").

One *stage call* is one structured request of a Topic stage (``probe``, ``evolve``;
part 3 adds ``plan``, ``temporary``, ``reduce``, ``reconcile``) to a
:class:`~powercontext.ports.topic.TopicGenerationModel`. The server builds the request
(prompts, the stage input as JSON text, the output JSON Schema); the provider returns
the raw structured output as JSON *text*, which the core parses itself (duplicate keys
refused), so every provider's output passes the same checks.
"""

from __future__ import annotations

from typing import Literal

import attrs

__all__ = [
    "STAGES",
    "Stage",
    "StageRequest",
    "StageResponse",
    "StageUsage",
]

Stage = Literal["probe", "evolve", "plan", "temporary", "reduce", "reconcile"]
STAGES: tuple[Stage, ...] = ("probe", "evolve", "plan", "temporary", "reduce", "reconcile")


@attrs.frozen
class StageRequest:
    """One structured stage call. ``system`` and ``instructions`` are the server's
    prompts; ``input_json`` is the stage input (Sources with operation-local evidence
    ids, history Topics with local handles) as JSON text; ``schema_name`` and
    ``schema_json`` (a JSON Schema object as canonical JSON text, ``additionalProperties:
    false`` throughout) describe the only output accepted; ``max_output_tokens`` caps
    the answer. ``estimated_tokens`` is the whole request's conservative estimate
    (:func:`powercontext.core.topic.window.estimate_tokens`), which never exceeds the
    context window."""

    stage: Stage
    system: str
    instructions: str
    input_json: str
    schema_name: str
    schema_json: str
    max_output_tokens: int
    estimated_tokens: int


@attrs.frozen
class StageUsage:
    """Provider-reported usage (None where the provider did not say)."""

    input_tokens: int | None = None
    output_tokens: int | None = None


@attrs.frozen
class StageResponse:
    """The complete answer of one stage call: ``output_text`` is the raw structured
    output (JSON text, not yet parsed), ``usage`` what the provider reported (None:
    missing usage, which refunds nothing), ``requests`` how many provider requests the
    call made (<= the reservation). Suspended or incomplete answers never become a
    StageResponse: the provider refuses them at the raw boundary."""

    output_text: str
    usage: StageUsage | None = None
    requests: int = 1
