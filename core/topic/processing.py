"""Values and constants of Source-driven Topic processing (Topic Memory RFC, "Source,
Window, Cursor, and Pending", "Window selection and context budgets", "Cumulative work
and evidence ceilings", "Pending dirty set", "Retry and observability";
TOPIC-MEMORY.md).

Pure values only: the storage adapters persist them, :mod:`powercontext.topic_processing`
drives them. Positions are 1-based journal positions of one Scope; a Cursor of 0 means
nothing of the Scope was processed yet.
"""

from __future__ import annotations

from typing import Literal

import attrs

from powercontext.core.models import Source

__all__ = [
    "ATTEMPT_LIMIT",
    "BINDING",
    "CODE_ATTEMPT_LIMIT",
    "CODE_BUDGET_EXCEEDED",
    "CODE_COMPLEXITY",
    "DEFAULT_CONTEXT_WINDOW_TOKENS",
    "DEFAULT_WINDOW_LIMIT",
    "MAX_DEPTH",
    "MAX_SOURCE_CHARS",
    "MAX_VISITED_VALUES",
    "MAX_WINDOW_CHARS",
    "REQUEST_LIMIT",
    "TERMINAL_CODES",
    "TOKEN_LIMIT",
    "WINDOW_LIMIT_CEILING",
    "WINDOW_TOKEN_RATIO",
    "AttemptGrant",
    "BudgetRelease",
    "BudgetRow",
    "CursorAdvance",
    "FlushStatus",
    "JournalEntry",
    "PendingRow",
    "PendingUpdate",
    "ProcessingSettings",
    "ScopeStatus",
    "check_settings",
]

#: The processing binding this family registers (Topic Memory RFC, "Family, binding").
BINDING = "topic-memory-source-window"

#: ``runtime.topic_memory_source_window_limit``: default and server ceiling.
DEFAULT_WINDOW_LIMIT = 10
WINDOW_LIMIT_CEILING = 100
#: ``inference.generation_model_context_window_tokens`` default.
DEFAULT_CONTEXT_WINDOW_TOKENS = 125_000
#: The Source Window takes at most this share of the context window (not configurable).
WINDOW_TOKEN_RATIO = 0.8

#: Per-Source complexity ceilings, checked before canonical serialisation, metadata
#: included; and the Window's total canonical evidence characters.
MAX_VISITED_VALUES = 65_536
MAX_DEPTH = 32
MAX_SOURCE_CHARS = 4_194_304
MAX_WINDOW_CHARS = 4_194_304

#: The durable allowance of one (scope_id, binding_name, source_after) key.
ATTEMPT_LIMIT = 3
REQUEST_LIMIT = 512
TOKEN_LIMIT = 64_000_000

CODE_BUDGET_EXCEEDED = "window_provider_budget_exceeded"
CODE_ATTEMPT_LIMIT = "window_attempt_limit"
CODE_COMPLEXITY = "source_complexity_limit"
#: Failure codes that make a budget row a terminal frontier: no attempt is admitted.
TERMINAL_CODES = frozenset({CODE_BUDGET_EXCEEDED, CODE_ATTEMPT_LIMIT, CODE_COMPLEXITY})

FlushStatus = Literal["accepted", "idle"]


@attrs.frozen
class JournalEntry:
    """One row of a Scope's Source journal: its 1-based ``position`` in the Scope, the
    stored Source, and the server-owned ``lineage_only`` flag (no public capture path
    sets it; such Sources are skipped by generation but advance the Cursor)."""

    scope_id: str
    position: int
    source: Source
    lineage_only: bool = False


@attrs.frozen
class PendingRow:
    """``pc_artifact_processing_pending`` (the spec's DDL): which (binding, Scope) may be
    behind. ``source_through >= 1``; ``0 <= handled_flush_generation <=
    flush_generation``."""

    binding_name: str
    scope_id: str
    source_through: int
    flush_generation: int = 0
    handled_flush_generation: int = 0


@attrs.frozen
class BudgetRow:
    """``pc_topic_memory_work_budgets``, keyed by (scope_id, binding_name,
    source_after): the frontier (``source_after`` = the Cursor the Window starts
    after), the furthest Window end attempted, the opaque id of the attempt holding
    publication authority, the attempt count, the reserved requests and token capacity
    (never refunded), and a bounded failure code (None, a transient code, or one of
    :data:`TERMINAL_CODES`). No prompts, Source text or model output."""

    scope_id: str
    binding_name: str
    source_after: int
    furthest_through: int
    attempt_id: str
    attempt_count: int
    reserved_requests: int
    reserved_tokens: int
    failure_code: str | None = None

    @property
    def terminal(self) -> bool:
        return self.failure_code in TERMINAL_CODES


@attrs.frozen
class AttemptGrant:
    """A processing attempt admitted by the durable allowance: committed before any
    Source is materialised. ``attempt_id`` holds publication authority until a newer
    attempt of the same key takes it."""

    scope_id: str
    binding_name: str
    source_after: int
    attempt_id: str
    attempt_count: int
    #: The Supervisor term the attempt was admitted under
    #: (:class:`powercontext.core.topic.supervision.SupervisorTerm`), checked again by
    #: every fenced call of the attempt; None for explicit processing outside a
    #: Supervisor (``topic process``).
    supervisor: object | None = None


@attrs.frozen
class ScopeStatus:
    """What ``topic status`` shows for one Scope (read only): the Source head (0: no
    Source), the Cursor (0: nothing processed), the Pending row and the budget row
    (None when absent)."""

    scope_id: str
    binding_name: str
    source_head: int
    cursor: int
    pending: PendingRow | None
    budget: BudgetRow | None

    @property
    def covered(self) -> bool:
        return self.cursor >= self.source_head


# ---------------------------------------------------------------- publication guards
# The values filling :class:`~powercontext.core.topic.models.PublicationGuards`.


@attrs.frozen
class CursorAdvance:
    """Cursor CAS and advance, inside the publication transaction: the Cursor of
    (binding_name, scope_id) must still be ``expected`` (0 = no Cursor row yet), then
    becomes ``through`` (> expected). A mismatch is a RevisionConflictError and rolls
    the whole publication back."""

    binding_name: str
    scope_id: str
    expected: int
    through: int


@attrs.frozen
class PendingUpdate:
    """The Pending update of explicit processing, after the Cursor advance:
    ``claimed_flush_generation`` (the flush generation frozen when the wave started, or
    None when this Window does not end the wave) raises
    ``handled_flush_generation = max(current, claimed)``; then the row is deleted when
    ``cursor >= source_through and handled_flush_generation == flush_generation``."""

    claimed_flush_generation: int | None


@attrs.frozen
class BudgetRelease:
    """Fencing by attempt and the budget-row delete: the row of (scope_id,
    binding_name, source_after) must exist with ``attempt_id`` (else the attempt was
    superseded: RevisionConflictError, whole rollback); it is deleted by this
    publication only."""

    attempt_id: str
    source_after: int


@attrs.frozen
class ProcessingSettings:
    """The deployment settings one Topic Worker runs with (TOPIC-MEMORY.md,
    "Configuration"): ``window_limit`` (``runtime.topic_memory_source_window_limit``,
    1..100), ``context_window_tokens``
    (``inference.generation_model_context_window_tokens``), ``max_requests``
    (generation max requests of one stage call, reserved whole before it),
    ``max_output_tokens`` (the output reservation of one stage call), and history
    selection (``history_max_candidates`` <= 20, ``history_rrf_threshold`` 0..100,
    ``history_min_candidates`` <= max). InvalidInputError naming the setting when out
    of range (:func:`check_settings`)."""

    window_limit: int = DEFAULT_WINDOW_LIMIT
    context_window_tokens: int = DEFAULT_CONTEXT_WINDOW_TOKENS
    max_requests: int = 1
    max_output_tokens: int = 8_192
    history_max_candidates: int = 20
    history_rrf_threshold: float = 70.0
    history_min_candidates: int = 5


def check_settings(s: ProcessingSettings) -> ProcessingSettings:
    """``s`` when every setting is in range, else InvalidInputError naming it."""
    from powercontext.core.errors import InvalidInputError

    def whole(name: str, value: object, lo: int, hi: int, why: str = "") -> None:
        if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
            raise InvalidInputError(name, f"must be an integer in {lo}..{hi}{why}, "
                                          f"not {value!r}")

    whole("runtime.topic_memory_source_window_limit", s.window_limit, 1, WINDOW_LIMIT_CEILING)
    whole("inference.generation_model_context_window_tokens", s.context_window_tokens,
          1_024, 10_000_000)
    whole("inference.generation_max_requests", s.max_requests, 1, 16)
    whole("inference.generation_max_output_tokens", s.max_output_tokens, 256,
          s.context_window_tokens // 2, " (at most half of "
          f"inference.generation_model_context_window_tokens = {s.context_window_tokens})")
    whole("runtime.topic_memory_history_max_candidates", s.history_max_candidates, 1, 20)
    whole("runtime.topic_memory_history_min_candidates", s.history_min_candidates, 0,
          s.history_max_candidates)
    t = s.history_rrf_threshold
    if isinstance(t, bool) or not isinstance(t, int | float) or not 0 <= t <= 100:
        raise InvalidInputError("runtime.topic_memory_history_rrf_threshold",
                                f"must be a number in 0..100, not {t!r}")
    return s
