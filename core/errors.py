"""The one error hierarchy of powercontext, rooted at :class:`PowerContextError`.

Names follow the Memory RFC. Where the spec says ``ValueError`` the error also
derives from :class:`ValueError`, so ``except ValueError`` keeps working.
"""

from __future__ import annotations

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
    "RevisionConflictError",
    "WritesPausedError",
]


class PowerContextError(Exception):
    """Root of every error powercontext raises on purpose."""


class InvalidInputError(PowerContextError, ValueError):
    """Bad caller input (Memory RFC, "MemoryEntryInput"). ``field`` names the offender."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field


class RevisionConflictError(PowerContextError):
    """The base Revision is not the current head (Memory RFC, "Concurrency and transactions").

    The caller rereads the head and reruns the domain operation.
    """


class CapabilityNotSupportedError(PowerContextError):
    """An explicitly requested capability is unavailable (Memory RFC, "Backend capabilities")."""


class ArtifactNotFoundError(PowerContextError, LookupError):
    """No such Artifact, Revision, entry or Source."""


class InvalidCitationError(PowerContextError, ValueError):
    """An anchor (ArtifactRef + entry_id + entry_version_id) does not match what is stored
    (Memory RFC, "expand()" and "Handoff citation")."""


class IntegrityError(PowerContextError):
    """Stored authoritative data fails its own hash or canonical-bytes check."""


class ProfileMismatchError(PowerContextError):
    """The embedding profile (or, as :class:`AnalyzerMismatchError`, the search analyzer)
    differs from the one fixed when the database was created."""


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


class WritesPausedError(PowerContextError):
    """Writes are paused by an offline rebuild; retry after it finishes."""


class CommitOutcomeUnknownError(PowerContextError):
    """The connection was lost during COMMIT: the Revision may or may not exist.

    Reread the head before deciding whether to replay (Memory RFC, "Concurrency and
    transactions"); never replay blindly.
    """


class BackendError(PowerContextError):
    """A database failure that is none of the typed cases above."""
