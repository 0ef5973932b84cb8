"""The one error hierarchy of powercontext, rooted at :class:`PowerContextError`.

Names follow the Memory RFC. Where the spec says ``ValueError`` the error also
derives from :class:`ValueError`, so ``except ValueError`` keeps working.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # core.models imports this module
    from powercontext.core.models import ArtifactRef

__all__ = [
    "AnalyzerMismatchError",
    "ArtifactNotFoundError",
    "BackendError",
    "CapabilityNotSupportedError",
    "CommitOutcomeUnknownError",
    "IntegrityError",
    "InvalidCitationError",
    "InvalidInputError",
    "PowerContextError",
    "ProfileMismatchError",
    "RetrievalShapeError",
    "RevisionConflictError",
    "SecretDetectedError",
    "SupervisorTermError",
    "SupervisorUnavailableError",
    "TopicProcessingError",
    "TopicProcessingUnavailableError",
    "UpgradeRequiredError",
    "WritesPausedError",
]  # the error classes only; describe_error and is_own_component are helpers


class PowerContextError(Exception):
    """Root of every error powercontext raises on purpose."""


class InvalidInputError(PowerContextError, ValueError):
    """Bad caller input (Memory RFC, "MemoryEntryInput"). ``field`` names the offender."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field


class SecretDetectedError(InvalidInputError):
    """Input holds a secret, so it is refused before anything is stored (Memory RFC,
    "Memory admission rules": never save secrets; Sources are append-only). ``field``
    names where (``sources[0].content``), ``rule`` the kind of secret, ``line`` the
    1-based line; the message never contains the secret itself."""

    def __init__(self, field: str, rule: str, description: str, line: int) -> None:
        super().__init__(field, f"line {line}: looks like a secret ({description}); "
                         "secrets are never stored: remove it or use a placeholder")
        self.rule = rule
        self.description = description
        self.line = line


class RevisionConflictError(PowerContextError):
    """The base Revision is not the current head (Memory RFC, "Concurrency and transactions").

    The caller rereads the head and reruns the domain operation.
    """


class SupervisorTermError(RevisionConflictError):
    """A fenced transaction carried a Supervisor term that is no longer current: the
    lease row's holder or generation changed, or (OceanBase) the lease expired by
    database time (Topic Memory RFC, "Leases and terms"). The whole transaction rolled
    back and changed nothing; for the Supervisor it is a control signal (leadership
    lost), never an ordinary failure."""


class CapabilityNotSupportedError(PowerContextError):
    """An explicitly requested capability is unavailable (Memory RFC, "Backend capabilities")."""


class SupervisorUnavailableError(CapabilityNotSupportedError):
    """A Supervisor cannot start here: another Supervisor already runs on this SQLite
    database (SQLite supports one single-process ``all`` Supervisor), or the role is
    not supported by the engine (Topic Memory RFC, "Artifact Processing Supervisor")."""


class ArtifactNotFoundError(PowerContextError, LookupError):
    """No such Artifact, Revision, entry or Source."""


class InvalidCitationError(PowerContextError, ValueError):
    """An anchor (ArtifactRef + entry_id + entry_version_id) does not match what is stored
    (Memory RFC, "expand()" and "Handoff citation")."""


class IntegrityError(PowerContextError):
    """Stored authoritative data fails its own hash or canonical-bytes check."""


class UpgradeRequiredError(IntegrityError):
    """The database stores its Revisions in an older format than this code reads (e.g.
    Artifact content hashes from before the spec's formula). The message names the
    command that upgrades it; nothing is changed until that command runs. ``command``
    is that one command (None when no command of this version upgrades it)."""

    def __init__(self, message: str, command: str | None = None) -> None:
        super().__init__(message)
        self.command = command


class ProfileMismatchError(PowerContextError):
    """The embedding profile (or, as :class:`AnalyzerMismatchError`, the search analyzer)
    differs from the one fixed when the database was created."""


class RetrievalShapeError(ProfileMismatchError):
    """Topic Memory's retrieval shape refuses this configuration (Topic Memory RFC,
    "Configuration"): Topic Heads without a stored shape, vector configuration over an
    FTS-only deployment with Heads, a hybrid deployment opened without its embedding
    profile or with another one, or a hybrid database whose Heads lack vectors. The
    message names what was found and what would open the database."""


class AnalyzerMismatchError(ProfileMismatchError):
    """The database's full-text projection was built by another analyzer version than the
    one asked for, or by an unknown one (such as the ambiguous ``analyzer-v1`` label);
    Memory RFC, "Normalization, hashing, and the search analyzer": changing analyzer
    rules needs a migration that rebuilds searchable_text and the full-text index. The
    message names the fix, ``powercontext memory rebuild --analyzer NAME``. ``stored`` is
    the database's version (None when missing), ``wanted`` the one asked for."""

    def __init__(self, stored: str | None, wanted: str) -> None:
        built = f"analyzer {stored!r}" if stored is not None else "no recorded analyzer"
        super().__init__(
            f"this database's full-text projection was built by {built}, not {wanted!r}; "
            f"migrate it with `powercontext memory rebuild --analyzer {wanted}`"
        )
        self.stored = stored
        self.wanted = wanted
        self.command = f"powercontext memory rebuild --analyzer {wanted}"


class WritesPausedError(PowerContextError):
    """Writes are paused by an offline rebuild; retry after it finishes."""


class CommitOutcomeUnknownError(PowerContextError):
    """The connection was lost during COMMIT: the Revision may or may not exist.

    Reread the head before deciding whether to replay (Memory RFC, "Concurrency and
    transactions"); never replay blindly. ``planned`` is the ArtifactRef the commit would
    have created (a new Memory's id at Revision 1) or advanced the head to, and
    ``content_hash`` the Artifact content hash of that planned Revision: the commit
    landed exactly when Revision ``planned`` exists with that hash
    (``MemoryService.commit_landed``). Both are None when the error arises outside a
    planned commit.
    """

    def __init__(
        self, message: str, *, planned: ArtifactRef | None = None,
        content_hash: str | None = None,
    ) -> None:
        super().__init__(message)
        self.planned = planned
        self.content_hash = content_hash


class BackendError(PowerContextError):
    """A database failure that is none of the typed cases above."""


class TopicProcessingError(PowerContextError):
    """One Topic Window failed and was rolled back whole: Cursor, Pending, Topics and
    projections unchanged, reservations consumed (Topic Memory RFC, "Retry and
    observability"). ``code`` is the bounded failure code (e.g.
    ``model_output_invalid``, ``provider_error``, ``window_attempt_limit``,
    ``window_provider_budget_exceeded``, ``source_complexity_limit``,
    ``cursor_conflict``, ``attempt_superseded``); ``stage`` the stage that failed
    (``attempt``, ``window``, ``probe``, ``history``, ``evolve``, ``embed``,
    ``publish``); ``terminal`` is True for a terminal frontier (no further attempt
    of this Window is admitted; only an operator can remedy it). The message never
    holds Source text, prompts or model output."""

    def __init__(self, code: str, message: str, *, stage: str = "",
                 terminal: bool = False) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.stage = stage
        self.terminal = terminal


class TopicProcessingUnavailableError(CapabilityNotSupportedError):
    """Topic processing is unavailable: the Topic generation configuration fails the
    provider policy (Topic Memory RFC, "Cumulative work and evidence ceilings"; an
    unknown provider, a refused setting, a missing SDK). ``problems`` lists each
    offending setting as ``"name: why"``."""

    def __init__(self, message: str, problems: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.problems = problems


def is_own_component(component: object) -> bool:
    """True when ``component`` (a provider, a model, any plugged-in object) is
    powercontext's own: its class is defined in the ``powercontext`` package."""
    return type(component).__module__.partition(".")[0] == "powercontext"


def describe_error(exc: BaseException, origin: object | None = None) -> str:
    """A one-line description of ``exc`` fit for logs, stored attempt errors and error
    messages, which never carry Source text, prompts, model output or secrets (Topic
    Memory RFC, "Retry and observability"). The message of a :class:`PowerContextError`
    raised by powercontext's own code is kept (those name settings, codes and sizes);
    any other exception, and any exception out of ``origin`` when ``origin`` (the
    provider or model that raised it) is not powercontext's own
    (:func:`is_own_component`), is described by its type alone: a plugin's or an SDK's
    message may quote the request it failed on."""
    own = origin is None or is_own_component(origin)
    if own and isinstance(exc, PowerContextError):
        return str(exc)
    name = type(exc).__name__
    code = getattr(exc, "code", None) if isinstance(exc, TopicProcessingError) else None
    return f"{name} ({code})" if code else name
