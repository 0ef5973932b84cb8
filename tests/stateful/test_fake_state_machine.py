"""The service-level state machine on the in-memory fake backend."""

from support.fakes import InMemoryBackend

from powercontext.plugins.testing import state_machine_test

TestFakeMemoryStateMachine = state_machine_test(InMemoryBackend)
