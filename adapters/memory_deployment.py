"""What a Memory database records about its deployment, checked at every open
(Memory RFC, "Normalization, hashing, and the search analyzer"; ARCHITECTURE.md,
Decisions: "Analyzer versions"): the embedding profile (fixed at the first open that
has vector infrastructure; another one is ProfileMismatchError), the Analyzer version
its FTS projection was built with (AnalyzerMismatchError for another explicit choice or
an unknown version, unless a rebuild migrates it) and the hash format (a legacy
database opens with UpgradeRequiredError until ``rehash``).

:class:`MemoryDeployment` holds that state (the deployment's profile and the
database's analyzer) and runs the checks the Memory backend's open hooks
(``_check_open_sync``, ``_check_ready_sync``) call.
"""

from __future__ import annotations

from typing import Any

import attrs

from powercontext.adapters.storage.rows import embedding_profile
from powercontext.core import analyzer as analyzers
from powercontext.core import canonical
from powercontext.core.analyzer import Analyzer
from powercontext.core.errors import (
    AnalyzerMismatchError,
    CapabilityNotSupportedError,
    ProfileMismatchError,
    UpgradeRequiredError,
)
from powercontext.core.models import EmbeddingProfile, MemoryCapabilities
from powercontext.ports.engine import MemoryRows

__all__ = ["HASH_FORMAT_KEY", "REHASH_COMMAND", "MemoryDeployment", "resolve_analyzer"]

#: Deployment metadata key recording the formula of the stored Artifact content hashes
#: (``canonical.HASH_FORMAT`` or ``canonical.LEGACY_HASH_FORMAT``).
HASH_FORMAT_KEY = "hash_format"
REHASH_COMMAND = "powercontext memory rebuild --rehash"


def resolve_analyzer(choice: str | Analyzer | None) -> Analyzer | None:
    """An explicit analyzer choice as a registered Analyzer (InvalidInputError when
    unknown), or None for no choice."""
    if choice is None or isinstance(choice, Analyzer):
        return choice
    return analyzers.get(choice)


class MemoryDeployment:
    """What a Memory database records about its deployment, and the checks at open.

    ``host``: the backend's storage (``_in_tx``, ``_meta_get_sync``,
    ``_meta_set_sync``, ``_db_caps``); ``rows``: the Memory rows (``all_heads``).
    ``profile``: the deployment's fixed embedding profile (None: the stored one once
    open, if any); ``analyzer``: the explicit analyzer choice (None: no choice).

    State: ``profile``; ``analyzer`` (the database's, known once open);
    ``analyzer_migration`` (the next open accepts another analyzer: a rebuild
    migrates); ``analyzer_target`` (the (stored, target) versions while a rebuild
    migrates); ``legacy_hashes`` (the stored Revisions use the pre-spec hash formula);
    ``allow_legacy`` (rehash or resume_writes runs on a legacy database)."""

    def __init__(self, host: Any, rows: MemoryRows, *, profile: EmbeddingProfile | None = None,
                 analyzer: str | Analyzer | None = None) -> None:
        self._host = host
        self._rows = rows
        self.profile = profile
        self.analyzer_choice = resolve_analyzer(analyzer)
        self.analyzer: Analyzer | None = None
        self.analyzer_migration = False
        self.analyzer_target: tuple[str | None, str] | None = None
        self.legacy_hashes = False
        self.allow_legacy = False

    def check_open(self) -> None:
        """The Memory family's checks at open: the stored embedding profile, the
        analyzer version and the hash format (the storage's ``_check_open_sync``)."""
        self._check_profile()
        # the hash format first: a database of an earlier release may need its analyzer
        # migrated too, and one command (the rehash's rebuild) does both
        self.legacy_hashes = self._check_hash_format()
        self._check_analyzer()

    def check_ready(self) -> None:
        """Refuse every call on a database with pre-spec hashes (UpgradeRequiredError),
        unless rehash or resume_writes runs."""
        if self.legacy_hashes and not self.allow_legacy:
            raise self.upgrade_error(self.analyzer_target)

    def upgrade_error(self, migrate: tuple[str | None, str] | None) -> UpgradeRequiredError:
        """The error of a database with pre-spec hashes, naming the one command that
        upgrades it: ``memory rebuild --rehash``, with ``--analyzer NAME`` when its
        full-text projection also needs another analyzer (``migrate``: the stored
        version, None when missing, and the one to build)."""
        command = REHASH_COMMAND
        also = ""
        if migrate is not None:
            stored, target = migrate
            command += f" --analyzer {target}"
            built = f"analyzer {stored!r}" if stored is not None else "no recorded analyzer"
            also = (f", and its full-text projection was built by {built}, not {target!r}"
                    f" (the same command rebuilds it)")
        return UpgradeRequiredError(
            "this database was written by an earlier release: it stores Artifact content "
            f"hashes in the pre-spec format {canonical.LEGACY_HASH_FORMAT!r} (SHA-256 with a "
            f"prefix the Memory RFC does not write){also}; upgrade it in one step with "
            f"`{command}`, which verifies every Revision against the old formula and "
            "rewrites only the stored hash", command=command)

    def _check_hash_format(self) -> bool:
        """True when the stored Revisions use the legacy hash format. A database without
        the marker is new (no Memory yet: marked with the spec's format) or was written
        before the marker existed (it has Memories: marked legacy)."""
        host = self._host
        # a read first: an opened database never queues behind a writer for its marker
        stored = host._in_tx(False, host._meta_get_sync, HASH_FORMAT_KEY)
        if stored is None:
            stored = host._in_tx(True, self._mark_hash_format)
        if stored not in (canonical.HASH_FORMAT, canonical.LEGACY_HASH_FORMAT):
            raise UpgradeRequiredError(
                f"this database records hash format {stored!r}, which this version of "
                "powercontext does not know (a newer version wrote it)"
            )
        return bool(stored == canonical.LEGACY_HASH_FORMAT)

    def _mark_hash_format(self) -> str:
        host = self._host
        stored: str | None = host._meta_get_sync(HASH_FORMAT_KEY)
        if stored is None:
            try:
                existing = bool(self._rows.all_heads())
            except CapabilityNotSupportedError:
                existing = False  # an adapter without the listing has no old databases
            stored = canonical.LEGACY_HASH_FORMAT if existing else canonical.HASH_FORMAT
            host._meta_set_sync(HASH_FORMAT_KEY, stored)
        return stored

    def new_database_analyzer(self) -> Analyzer:
        """The analyzer a database created now records (the choice, else the default)."""
        return self.analyzer_choice or analyzers.get()

    def _check_analyzer(self) -> None:
        host = self._host
        stored = host._meta_get_sync("analyzer_version")
        if stored is None:
            # nothing recorded (an adapter that records nothing at creation): a new
            # database, which gets the choice or the default
            stored = self.new_database_analyzer().version
            host._in_tx(True, host._meta_set_sync, "analyzer_version", stored)
        known = analyzers.ANALYZERS.get(stored) if stored is not None else None
        wanted = self.analyzer_choice
        self.analyzer_target = None
        if self.analyzer_migration:
            # opened for a rebuild, which migrates: full-text search waits for it
            self.analyzer = wanted or known or analyzers.get()
            if self.analyzer != known:
                self.analyzer_target = (stored, self.analyzer.version)
                self.fts_off(stored)
            return
        if known is None or (wanted is not None and wanted != known):
            target = (wanted or analyzers.get()).version
            if self.legacy_hashes and not self.allow_legacy:
                raise self.upgrade_error((stored, target))
            raise AnalyzerMismatchError(stored, target)
        self.analyzer = known

    def fts_off(self, stored: str | None) -> None:
        """Turn full-text search off until a rebuild has migrated the FTS projection
        built by analyzer ``stored`` (the reason goes to the capabilities)."""
        assert self.analyzer is not None
        host = self._host
        caps = host._db_caps or MemoryCapabilities(True, False, False, None)
        reason = (f"the FTS projection was built by analyzer {stored!r}, not "
                  f"{self.analyzer.version!r}: `powercontext memory rebuild` migrates it")
        host._db_caps = attrs.evolve(caps, fts=False, hybrid=False,
                                     reasons=(*caps.reasons, reason))

    @property
    def db_analyzer(self) -> Analyzer:
        """The database's analyzer (the database is open)."""
        assert self.analyzer is not None, "the database is not open"
        return self.analyzer

    def _check_profile(self) -> None:
        host = self._host
        stored = host._meta_get_sync("embedding_profile")
        if self.profile is None:
            if stored is not None:
                # Opening without a profile still works for fts and authoritative reads.
                self.profile = embedding_profile(stored)
                host._db_caps = attrs.evolve(
                    host._db_caps or MemoryCapabilities(True, False, False, None),
                    embedding_profile=self.profile,
                )
            return
        wanted = canonical.canonical_dumps(self.profile).decode()
        if stored is None and not (host._db_caps and host._db_caps.vector):
            return  # no vector projection here: nothing to fix the profile to
        if stored is None:
            host._in_tx(True, host._meta_set_sync, "embedding_profile", wanted)
        elif stored != wanted:
            raise ProfileMismatchError(
                f"this database was created with embedding profile {stored}; "
                f"refusing to open it with {wanted} (a new profile needs "
                "`powercontext --embedding NAME memory rebuild --migrate`)"
            )
