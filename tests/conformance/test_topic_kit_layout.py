"""The Topic contract kit's shape: every Topic contract group is part of
:class:`TopicBackendContract` and no group shadows another's test, the shipped
in-memory Topic backend implements the port and the kit's fault hook, and its fault
points are each on the path of some publication (the faults group asserts that)."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import powercontext.testing as kit
from powercontext.ports.topic import TopicMemoryBackend


def _topic_groups() -> set[type]:
    modules = [importlib.import_module(f"{kit.__name__}.{m.name}")
               for m in pkgutil.iter_modules(kit.__path__) if m.name.startswith("topic_")]
    return {obj for module in modules for _, obj in inspect.getmembers(module, inspect.isclass)
            if issubclass(obj, kit.TopicContractBase) and obj.__name__.endswith("Contract")
            and obj is not kit.TopicBackendContract}


def test_every_topic_contract_group_is_part_of_the_whole_contract():
    groups = _topic_groups()
    assert len(groups) >= 6
    assert groups <= set(kit.TopicBackendContract.__mro__)
    defined = [n for g in groups for n in vars(g) if n.startswith("test_")]
    assert len(defined) == len(set(defined)) >= 25
    assert set(defined) == {n for n in dir(kit.TopicBackendContract) if n.startswith("test_")}


def test_the_topic_kit_names_are_public():
    for name in ("TopicBackendContract", "TopicContractBase", "TopicKit", "TopicStateMachine",
                 "InMemoryTopicBackend", "TopicDatabase", "topic_state_machine_test"):
        assert name in kit.__all__ and hasattr(kit, name), name


def test_the_in_memory_topic_backend_implements_the_port_and_the_fault_hook():
    backend = kit.InMemoryTopicBackend()
    assert isinstance(backend, TopicMemoryBackend)
    assert isinstance(backend, kit.FaultInjection)
    assert backend.fault_points() == kit.InMemoryTopicBackend.FAULT_POINTS
    try:
        backend.inject_fault("no_such_point")
    except ValueError:
        pass
    else:
        raise AssertionError("an unknown fault point is a ValueError")
