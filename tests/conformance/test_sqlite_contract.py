"""The SQLite backend runs the contract kit exactly as a third-party backend would."""

import itertools
import tempfile
from pathlib import Path

import pytest

from powercontext.adapters.sqlite import SQLiteMemoryBackend
from powercontext.testing import MemoryBackendContract, state_machine_test


class TestSQLiteContract(MemoryBackendContract):
    @pytest.fixture
    def memory_backend_factory(self, tmp_path):
        counter = itertools.count()
        return lambda profile: SQLiteMemoryBackend(
            str(tmp_path / f"memory-{next(counter)}.db"), profile=profile
        )


def _fresh_sqlite():
    return SQLiteMemoryBackend(str(Path(tempfile.mkdtemp(prefix="pc-sm-")) / "memory.db"))


TestSQLiteStateMachine = state_machine_test(_fresh_sqlite)
