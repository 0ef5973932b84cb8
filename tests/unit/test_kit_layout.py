"""The contract kit's shape (``powercontext.plugins.testing``): the public names of the
single-module kit still import from the package, every contract group is part of
:class:`MemoryBackendContract`, modules stay short, and the shipped in-memory backend
declares every capability the kit can test."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import powercontext.plugins.testing as kit
from powercontext import ports
from powercontext.adapters.database import DatabaseMemoryBackend

#: The public names of plugins/testing.py before it became a package.
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
    assert isinstance(backend, kit.FaultInjection)
    assert backend.fault_points() == kit.InMemoryBackend.FAULT_POINTS
