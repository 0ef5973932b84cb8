"""What a Memory database records about its deployment, checked at every open
(Memory RFC, "Normalization, hashing, and the search analyzer"; ARCHITECTURE.md,
Decisions: "Analyzer versions"): the embedding profile (fixed at the first open that
has vector infrastructure; another one is ProfileMismatchError), the Analyzer version
its FTS projection was built with (AnalyzerMismatchError for another explicit choice or
an unknown version, unless a rebuild migrates it) and the hash format (a legacy
database opens with UpgradeRequiredError until ``rehash``).

:class:`MemoryDeploymentMixin` implements the storage base's open hooks
(``_check_open_sync``, ``_check_ready_sync``) for the Memory family.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs

from powercontext.adapters.memory_rehash import (
    HASH_FORMAT_KEY,
    REHASH_COMMAND,
    MemoryRehashMixin,
)
from powercontext.adapters.storage.rows import embedding_profile
from powercontext.core import analyzer as analyzers
from powercontext.core import canonical
from powercontext.core.analyzer import Analyzer
from powercontext.core.errors import (
    AnalyzerMismatchError,
    ProfileMismatchError,
    UpgradeRequiredError,
)
from powercontext.core.models import EmbeddingProfile, MemoryCapabilities

__all__ = ["MemoryDeploymentMixin"]


class MemoryDeploymentMixin(MemoryRehashMixin):
    """The Memory family's checks at open and before every call, and the database's
    analyzer. The host class (DatabaseMemoryBackend) sets the state listed under
    ``TYPE_CHECKING`` in its ``__init__``."""

    if TYPE_CHECKING:  # set by DatabaseMemoryBackend.__init__
        _profile: EmbeddingProfile | None
        _analyzer_choice: Analyzer | None
        _analyzer: Analyzer | None
        _analyzer_migration: bool
        #: (stored, target) analyzer versions while a rebuild migrates, else None
        _analyzer_target: tuple[str | None, str] | None

    def _check_open_sync(self) -> None:
        """The Memory family's checks at open: the stored embedding profile, the
        analyzer version and the hash format (see :meth:`StorageBackend._check_open_sync`)."""
        self._check_profile_sync()
        # the hash format first: a database of an earlier release may need its analyzer
        # migrated too, and one command (the rehash's rebuild) does both
        self._legacy_hashes = self._check_hash_format_sync()
        self._check_analyzer_sync()

    def _check_ready_sync(self) -> None:
        if self._legacy_hashes and not self._allow_legacy:
            raise self._upgrade_error(self._analyzer_target)

    def _upgrade_error(self, migrate: tuple[str | None, str] | None) -> UpgradeRequiredError:
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

    def _check_hash_format_sync(self) -> bool:
        """True when the stored Revisions use the legacy hash format. A database without
        the marker is new (no Memory yet: marked with the spec's format) or was written
        before the marker existed (it has Memories: marked legacy)."""
        # a read first: an opened database never queues behind a writer for its marker
        stored = self._in_tx(False, self._meta_get_sync, HASH_FORMAT_KEY)
        if stored is None:
            stored = self._in_tx(True, self._mark_hash_format_sync)
        if stored not in (canonical.HASH_FORMAT, canonical.LEGACY_HASH_FORMAT):
            raise UpgradeRequiredError(
                f"this database records hash format {stored!r}, which this version of "
                "powercontext does not know (a newer version wrote it)"
            )
        return stored == canonical.LEGACY_HASH_FORMAT

    def _new_database_analyzer(self) -> Analyzer:
        """The analyzer a database created now records (the choice, else the default)."""
        return self._analyzer_choice or analyzers.get()

    def _check_analyzer_sync(self) -> None:
        stored = self._meta_get_sync("analyzer_version")
        if stored is None:
            # nothing recorded (an adapter that records nothing at creation): a new
            # database, which gets the choice or the default
            stored = self._new_database_analyzer().version
            self._begin_sync(True)
            try:
                self._meta_set_sync("analyzer_version", stored)
                self._commit_sync()
            except BaseException:
                self._rollback_sync()
                raise
        known = analyzers.ANALYZERS.get(stored) if stored is not None else None
        wanted = self._analyzer_choice
        self._analyzer_target = None
        if self._analyzer_migration:
            # opened for a rebuild, which migrates: full-text search waits for it
            self._analyzer = wanted or known or analyzers.get()
            if self._analyzer != known:
                self._analyzer_target = (stored, self._analyzer.version)
                self._fts_off_sync(stored)
            return
        if known is None or (wanted is not None and wanted != known):
            target = (wanted or analyzers.get()).version
            if self._legacy_hashes and not self._allow_legacy:
                raise self._upgrade_error((stored, target))
            raise AnalyzerMismatchError(stored, target)
        self._analyzer = known

    def _fts_off_sync(self, stored: str | None) -> None:
        assert self._analyzer is not None
        caps = self._db_caps or MemoryCapabilities(True, False, False, None)
        reason = (f"the FTS projection was built by analyzer {stored!r}, not "
                  f"{self._analyzer.version!r}: `powercontext memory rebuild` migrates it")
        self._db_caps = attrs.evolve(caps, fts=False, hybrid=False,
                                     reasons=(*caps.reasons, reason))

    @property
    def _db_analyzer(self) -> Analyzer:
        assert self._analyzer is not None, "the database is not open"
        return self._analyzer

    async def analyzer(self) -> Analyzer:
        """The database's analyzer (recorded at creation; Memory RFC, "Normalization,
        hashing, and the search analyzer"). Opens the database: AnalyzerMismatchError
        when it records another version than the one asked for, or an unknown one."""
        await self._run(lambda: None)
        assert self._analyzer is not None
        return self._analyzer

    def _check_profile_sync(self) -> None:
        stored = self._meta_get_sync("embedding_profile")
        if self._profile is None:
            if stored is not None:
                # Opening without a profile still works for fts and authoritative reads.
                self._profile = embedding_profile(stored)
                self._db_caps = attrs.evolve(
                    self._db_caps or MemoryCapabilities(True, False, False, None),
                    embedding_profile=self._profile,
                )
            return
        wanted = canonical.canonical_dumps(self._profile).decode()
        if stored is None and not (self._db_caps and self._db_caps.vector):
            return  # no vector projection here: nothing to fix the profile to
        if stored is None:
            self._begin_sync(True)
            try:
                self._meta_set_sync("embedding_profile", wanted)
                self._commit_sync()
            except BaseException:
                self._rollback_sync()
                raise
        elif stored != wanted:
            raise ProfileMismatchError(
                f"this database was created with embedding profile {stored}; "
                f"refusing to open it with {wanted} (a new profile needs "
                "`powercontext --embedding NAME memory rebuild --migrate`)"
            )
