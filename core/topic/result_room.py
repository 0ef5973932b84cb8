"""The room a stage leaves for its result (Topic Memory RFC, "Window selection and
context budgets": every character of an oversized Source is kept; "Oversized Work
Items and temporary Topics": a result is limited to one eighth of the stage input
budget, and an oversized one aborts the Window).

When that room cannot hold the smallest result (:data:`MIN_RESULT_CHARS`), every
reduced Probe or temporary Topic would be refused as oversized or come back empty, and
the Window would publish as a NOOP that drops its Sources. Instead the Window fails
closed before any call of the stage (:func:`check_result_room`,
``result_budget_too_small``: nothing is published, the Cursor stays), and a
configuration whose stages can never hold a result is refused at start-up
(:func:`result_room_problems`, naming the setting).
"""

from __future__ import annotations

from powercontext.core.errors import TopicProcessingError
from powercontext.core.topic.processing import ProcessingSettings
from powercontext.core.topic.reduce_stage import (
    _KINDS,
    _RESULT_OVERHEAD_BYTES,
    _WIDEST_ASCII_ESCAPE,
    RESULT_FRACTION,
    ItemKind,
    _check_kind,
    reduce_budget,
)
from powercontext.core.topic.window import MESSAGE_OVERHEAD_TOKENS

__all__ = ["CODE_RESULT_BUDGET", "MIN_RESULT_CHARS", "check_result_room", "result_room",
           "result_room_problems"]

#: A stage's result budget cannot hold the smallest result (:func:`check_result_room`).
CODE_RESULT_BUDGET = "result_budget_too_small"
#: The characters of the smallest result of each kind: a query of one character; a
#: title, summary and detail of one character each.
MIN_RESULT_CHARS: dict[str, int] = {"probe": 1, "temporary": 3}


def result_room(budget_tokens: int) -> int:
    """The characters a result of an accumulator of input budget ``budget_tokens`` can
    hold: :func:`~powercontext.core.topic.accumulate.max_result_chars` before its floor
    of 1 (<= 0: none at all)."""
    room = 3 * (budget_tokens // RESULT_FRACTION - MESSAGE_OVERHEAD_TOKENS)
    return (room - _RESULT_OVERHEAD_BYTES) // _WIDEST_ASCII_ESCAPE


def check_result_room(kind: ItemKind, budget_tokens: int, stage: str) -> None:
    """Fail closed before any call of ``stage`` when its result budget cannot hold the
    smallest result of ``kind``: TopicProcessingError ``result_budget_too_small`` (not
    terminal; the Window is not published, the Cursor stays). InvalidInputError naming
    ``kind`` for an unknown kind."""
    room = result_room(budget_tokens)
    if room < MIN_RESULT_CHARS[_check_kind(kind)]:
        raise TopicProcessingError(
            CODE_RESULT_BUDGET, f"a {kind} result may take {max(room, 0)} characters "
            f"(1/{RESULT_FRACTION} of the stage input budget of {budget_tokens} tokens); "
            f"the smallest needs {MIN_RESULT_CHARS[kind]}: raise "
            "inference.generation_model_context_window_tokens or lower "
            "inference.generation_max_output_tokens", stage=stage)


def result_room_problems(settings: ProcessingSettings) -> list[str]:
    """The start-up check of a configuration whose accumulators can never hold a
    result (even with no focus queries, the smallest request): ``"key: why"``
    problems naming ``inference.generation_model_context_window_tokens``; empty when
    both kinds have room."""
    out = []
    for kind in _KINDS:
        room = result_room(reduce_budget(kind, settings))
        if room < MIN_RESULT_CHARS[kind]:
            out.append(
                f"inference.generation_model_context_window_tokens: "
                f"{settings.context_window_tokens} tokens with "
                f"inference.generation_max_output_tokens = {settings.max_output_tokens} "
                f"leave a {kind} result {max(room, 0)} characters (at least "
                f"{MIN_RESULT_CHARS[kind]} needed, 1/{RESULT_FRACTION} of the room a "
                "reduce request leaves): no oversized Source could be kept")
    return out
