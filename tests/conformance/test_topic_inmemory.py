"""The Topic contract kit and state machine on the in-memory Topic backend the kit
ships (``powercontext.testing.InMemoryTopicBackend``), used the way a third
party uses the kit (subclass, override the fixtures)."""

import pytest

from powercontext.adapters.embedding.deterministic import DeterministicEmbedding
from powercontext.testing import (
    InMemoryTopicBackend,
    TopicBackendContract,
    topic_state_machine_test,
)


class TestInMemoryTopicContract(TopicBackendContract):
    @pytest.fixture
    def topic_backend_factory(self):
        return lambda profile: InMemoryTopicBackend(profile=profile)

    @pytest.fixture
    def topic_backend_reopen(self):
        return lambda backend, profile: InMemoryTopicBackend(
            profile=profile, database=backend.database)


def _fresh(profile):
    return InMemoryTopicBackend(profile=profile)


TestInMemoryTopicStateMachine = topic_state_machine_test(_fresh)
TestInMemoryHybridTopicStateMachine = topic_state_machine_test(
    _fresh, embedding_model=DeterministicEmbedding(dimension=64), max_examples=20)
