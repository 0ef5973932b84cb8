"""Every port is declared in ports/ (ARCHITECTURE.md, "The layers": ``ports/`` holds the
typing.Protocol interfaces the application drives). Reads the ``ast`` of every product
module: a ``class X(Protocol)`` outside ports/ must be one of the few named below, each a
structural type that is not a port, with the reason it stays where it is."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = ("core", "ports", "sql", "adapters", "plugins", "app", "entrypoints", "testing")

#: (file, class) -> why it is not in ports/.
NOT_PORTS = {
    # core cannot import ports (ports import core): the argument shapes of pure functions.
    ("core/recall.py", "_Analyzer"): "the query_terms shape a pure ranking rule takes",
    ("core/recall.py", "_Slot"): "the fields the slot rules read of an item",
    ("core/ranking.py", "ManifestItems"): "a manifest's items as a search reads them",
    # adapter-private: what the manifest log needs of an engine's shared templates.
    ("adapters/manifest_log.py", "LogEngine"): "the engine's template runner, inside adapters",
    # adapter-private: what the Topic family's collaborators use of the storage they are
    # composed on, and of the ledger's and the Supervisor's rows (the SQL rows and the
    # in-memory kit backend's dict rows give them); the application never sees them.
    ("adapters/topic_host.py", "TopicHost"): "the storage as the Topic collaborators use it",
    ("adapters/topic_host.py", "TopicArtifactHost"): "the same, with the Artifact rows",
    ("adapters/storage/sources.py", "SourceHost"): "the storage as the Source journal uses it",
    ("adapters/topic_ledger_rows.py", "LedgerRows"): "the processing ledger's rows",
    ("adapters/topic_supervision_rows.py", "SupervisionRows"): "the Supervisor's rows",
    # the contract kit's own fixture hook, not something the application drives.
    ("testing/contract_faults.py", "FaultInjection"): "a test hook of the kit",
    # inside one entry point: the Supervisor's own structured-log callback.
    ("entrypoints/supervisor_workers.py", "Emit"): "the Supervisor's log callback",
}


def _protocols_outside_ports() -> set[tuple[str, str]]:
    found = set()
    for folder in FOLDERS:
        if folder == "ports" or not (ROOT / folder).is_dir():
            continue
        for path in sorted((ROOT / folder).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                if isinstance(node, ast.ClassDef) and any(
                        (isinstance(b, ast.Name) and b.id == "Protocol")
                        or (isinstance(b, ast.Attribute) and b.attr == "Protocol")
                        or (isinstance(b, ast.Subscript) and isinstance(b.value, ast.Name)
                            and b.value.id == "Protocol")
                        for b in node.bases):
                    found.add((path.relative_to(ROOT).as_posix(), node.name))
    return found


def test_every_protocol_outside_ports_is_a_named_exception():
    stray = _protocols_outside_ports() - set(NOT_PORTS)
    assert stray == set(), f"declare these ports in ports/: {sorted(stray)}"


def test_the_extraction_ports_are_declared_in_ports():
    from powercontext.adapters.candidates import CandidateProvider
    from powercontext.plugins.hookspecs import BackendFactory as Hook
    from powercontext.ports.extraction import CandidateProvider as Port
    from powercontext.ports.extraction import GenerationModel
    from powercontext.ports.factories import BackendFactory

    assert CandidateProvider is Port  # the adapter package's public name still works
    assert Hook is BackendFactory
    assert GenerationModel.__module__ == "powercontext.ports.extraction"
