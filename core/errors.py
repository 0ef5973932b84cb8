"""The one error hierarchy of powercontext, rooted at :class:`PowerContextError`.

Names follow the Memory RFC. Where the spec says ``ValueError`` the error also
derives from :class:`ValueError`, so ``except ValueError`` keeps working.
"""

from __future__ import annotations

__all__ = [
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
    "SecretDetectedError",
    "WritesPausedError",
]


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
    """The embedding profile differs from the one fixed when the database was created."""


class WritesPausedError(PowerContextError):
    """Writes are paused by an offline rebuild; retry after it finishes."""


class CommitOutcomeUnknownError(PowerContextError):
    """The connection was lost during COMMIT: the Revision may or may not exist.

    Reread the head before deciding whether to replay (Memory RFC, "Concurrency and
    transactions"); never replay blindly.
    """


class BackendError(PowerContextError):
    """A database failure that is none of the typed cases above."""
