"""The contract kit's shape (``powercontext.testing``): the public names of the
single-module kit still import from the package, every contract group is part of
:class:`MemoryBackendContract`, modules stay short, and the shipped in-memory backend
declares every capability the kit can test."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import sys

import pytest

import powercontext.testing as kit
from powercontext import ports
from powercontext.adapters.database import DatabaseMemoryBackend

#: The public names of the kit when it was the single module plugins/testing.py.
ORIGINAL_NAMES = ("NASTY_QUERIES", "VOCABULARY", "MemoryBackendContract", "MemoryStateMachine",
                  "entry_texts", "run", "sources", "state_machine_test", "consumes")


def _modules() -> list[object]:
    return [importlib.import_module(f"{kit.__name__}.{m.name}")
            for m in pkgutil.iter_modules(kit.__path__)]


def test_the_original_public_names_import_from_the_package():
    for name in ORIGINAL_NAMES:
        assert hasattr(kit, name), name
    assert set(kit.__all__) >= set(ORIGINAL_NAMES) - {"consumes"} | {"InMemoryBackend"}
    assert all(hasattr(kit, name) for name in kit.__all__)


def test_every_contract_group_is_part_of_the_whole_contract():
    groups = {obj for module in _modules() for _, obj in inspect.getmembers(module, inspect.isclass)
              if issubclass(obj, kit.ContractBase) and obj.__name__.endswith("Contract")
              and obj is not kit.MemoryBackendContract}
    assert len(groups) >= 8
    assert groups <= set(kit.MemoryBackendContract.__mro__)
    # no group shadows another's test (a shadowed test would silently never run)
    defined = [n for g in groups for n in vars(g) if n.startswith("test_")]
    assert len(defined) == len(set(defined)) >= 36
    assert set(defined) == {n for n in dir(kit.MemoryBackendContract) if n.startswith("test_")}


def test_every_kit_module_is_short():
    for module in _modules():
        lines = inspect.getsource(module).count("\n")  # type: ignore[arg-type]
        assert lines <= 500, f"{module.__name__} has {lines} lines"


def test_the_shipped_in_memory_backend_declares_every_capability():
    backend = kit.InMemoryBackend()
    assert isinstance(backend, DatabaseMemoryBackend)
    assert isinstance(backend, ports.MemoryRebuild)
    assert isinstance(backend, ports.MemoryInventory)
    assert isinstance(backend, ports.SourceCitations)
    assert isinstance(backend, ports.EntryKinds)
    assert isinstance(backend, kit.FaultInjection)
    assert backend.fault_points() == kit.InMemoryBackend.FAULT_POINTS


def test_the_old_kit_name_imports_the_same_kit_with_a_warning():
    """``powercontext.plugins.testing`` (the name the documentation gave third parties
    before the kit became ``powercontext.testing``) still imports for one release: the
    same classes, its modules under the old names too, and a DeprecationWarning."""
    old_name = "powercontext.plugins.testing"
    for name in [n for n in sys.modules if n == old_name or n.startswith(old_name + ".")]:
        del sys.modules[name]
    with pytest.warns(DeprecationWarning, match="import powercontext.testing"):
        old = importlib.import_module(old_name)
    assert old.MemoryBackendContract is kit.MemoryBackendContract
    assert old.InMemoryBackend is kit.InMemoryBackend
    assert set(old.__all__) == set(kit.__all__)
    assert all(getattr(old, name) is getattr(kit, name) for name in kit.__all__)
    strategies = importlib.import_module(f"{old_name}.strategies")
    assert strategies is importlib.import_module("powercontext.testing.strategies")
    from powercontext.plugins.testing.topic_backend import InMemoryTopicBackend

    assert InMemoryTopicBackend is kit.InMemoryTopicBackend
