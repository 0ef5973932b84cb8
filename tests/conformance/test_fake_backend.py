"""The contract kit run against the in-memory backend the kit ships
(``powercontext.testing.InMemoryBackend``): proves the kit itself works the way
a third party uses it (subclass, override one fixture)."""

import pytest

from powercontext.testing import (
    InMemoryBackend,
    MemoryBackendContract,
    state_machine_test,
)


class TestInMemoryBackendContract(MemoryBackendContract):
    @pytest.fixture
    def memory_backend_factory(self):
        return lambda profile: InMemoryBackend(profile=profile)


TestInMemoryStateMachine = state_machine_test(InMemoryBackend)
