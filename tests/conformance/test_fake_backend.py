"""The contract kit run against the in-memory fake: proves the kit itself works the
way a third party uses it (subclass, override one fixture)."""

import pytest
from support.fakes import InMemoryBackend

from powercontext.plugins.testing import MemoryBackendContract


class TestInMemoryBackendContract(MemoryBackendContract):
    @pytest.fixture
    def memory_backend_factory(self):
        return lambda profile: InMemoryBackend(profile=profile)


from powercontext.plugins.testing import state_machine_test  # noqa: E402

TestInMemoryStateMachine = state_machine_test(InMemoryBackend)
