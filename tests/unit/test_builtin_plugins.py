"""Every built-in is a plugin like a third party's (ARCHITECTURE.md, "Plugins"): each
adapter package registers itself from its own ``plugin`` module through the public
hookspecs, the registry loads those modules by name exactly as it registers any plugin
module, and a third party's module (passed in or found by entry point) sits beside them
under the same rules: one plugin per URL scheme or name, no silent override."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import sys
import textwrap
from pathlib import Path

import pytest

from powercontext.plugins import DuplicateRegistrationError, Registry
from powercontext.plugins.registry import DEFAULT_PLUGINS

#: A third party's plugin module, written the way every built-in ``plugin.py`` is:
#: module-level ``@hookimpl`` functions, the implementation imported by the factory.
_THIRD_PARTY = textwrap.dedent(
    '''
    from powercontext.plugins import hookimpl

    def memory_backend(url, *, profile, analyzer=None):
        from pc_thirdparty_impl import Backend
        return Backend(url, profile, analyzer)

    def echo(**options):
        return ("echo", options)

    @hookimpl
    def powercontext_register_backends(register):
        register("mem", memory_backend)

    @hookimpl
    def powercontext_register_embedding_models(register):
        register("echo", echo)
    ''')

_IMPL = textwrap.dedent(
    '''
    class Backend:
        def __init__(self, url, profile, analyzer):
            self.url, self.profile, self.analyzer = url, profile, analyzer
    ''')


@pytest.fixture
def third_party(tmp_path, monkeypatch):
    """The module ``pc_thirdparty_plugin`` on sys.path (its implementation beside it)."""
    (tmp_path / "pc_thirdparty_plugin.py").write_text(_THIRD_PARTY)
    (tmp_path / "pc_thirdparty_impl.py").write_text(_IMPL)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    for name in ("pc_thirdparty_plugin", "pc_thirdparty_impl", "pc_thirdparty_sqlite"):
        sys.modules.pop(name, None)


def _entry_point(root, name: str, module: str) -> None:
    dist = root / f"{module}-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {module}\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(f"[powercontext]\n{name} = {module}\n")


def test_each_adapter_package_registers_itself_from_its_own_plugin_module():
    assert DEFAULT_PLUGINS == (
        "powercontext.adapters.sqlite.plugin",
        "powercontext.adapters.oceanbase.plugin",
        "powercontext.adapters.embedding.plugin",
        "powercontext.adapters.candidates.plugin",
        "powercontext.adapters.topic_generation.plugin",
    )
    registry = Registry(entry_points=False)
    owner = {}
    for dotted in DEFAULT_PLUGINS:
        module = importlib.import_module(dotted)
        assert registry.plugin_manager.get_plugin(dotted) is module
        for mapping in (registry.backend_factories(), registry.topic_backend_factories(),
                        registry.embedding_model_factories(), registry.candidate_providers(),
                        registry.topic_generation_model_factories()):
            for name, factory in mapping.items():
                if factory.__module__ == dotted:
                    owner.setdefault(dotted, set()).add(name)
    assert owner == {
        "powercontext.adapters.sqlite.plugin": {"sqlite"},
        "powercontext.adapters.oceanbase.plugin": {"oceanbase"},
        "powercontext.adapters.embedding.plugin": {"deterministic", "local", "openai"},
        "powercontext.adapters.candidates.plugin": {
            "contract", "git", "model", "rules", "structured", "task_outcome"},
        "powercontext.adapters.topic_generation.plugin": {
            "anthropic", "deterministic", "openai"},
    }


def test_the_builtins_registered_through_the_public_api_give_the_same_registry():
    """Unregister every built-in, then register each module with ``Registry.register``,
    the call a host makes for a third party's plugin object: the same factories."""
    full = Registry(entry_points=False)
    empty = Registry(entry_points=False)
    for dotted in DEFAULT_PLUGINS:
        empty.plugin_manager.unregister(name=dotted)
    for dotted in DEFAULT_PLUGINS:
        empty.register(importlib.import_module(dotted), name=dotted)
    assert dict(empty.backend_factories()) == dict(full.backend_factories())
    assert dict(empty.topic_backend_factories()) == dict(full.topic_backend_factories())
    assert dict(empty.embedding_model_factories()) == dict(full.embedding_model_factories())
    assert dict(empty.candidate_providers()) == dict(full.candidate_providers())
    assert dict(empty.topic_generation_model_factories()) == dict(
        full.topic_generation_model_factories())


def test_a_third_party_plugin_module_is_registered_like_a_builtin_one(third_party):
    module = importlib.import_module("pc_thirdparty_plugin")
    registry = Registry(plugins=[module], entry_points=False)
    assert registry.plugin_names() == tuple(sorted(
        (*DEFAULT_PLUGINS, registry.plugin_manager.get_name(module))))
    assert registry.backend_factories()["mem"] is module.memory_backend
    assert "pc_thirdparty_impl" not in sys.modules  # nothing built yet, like a built-in
    made = registry.backend_for_url("mem://x", profile=None, analyzer="v1")
    assert (made.url, made.profile, made.analyzer) == ("mem://x", None, "v1")
    assert registry.embedding_model("echo", dims=3) == ("echo", {"dims": 3})
    assert list(registry.backend_factories()) == ["mem", "oceanbase", "sqlite"]


def test_a_third_party_plugin_module_found_by_entry_point_sits_beside_the_builtins(
        third_party):
    _entry_point(third_party, "thirdparty", "pc_thirdparty_plugin")
    registry = Registry()
    assert "thirdparty" in registry.plugin_names()
    assert set(DEFAULT_PLUGINS) <= set(registry.plugin_names())
    assert list(registry.backend_factories()) == ["mem", "oceanbase", "sqlite"]
    assert registry.backend_for_url("mem://y").url == "mem://y"


def test_a_third_party_entry_point_cannot_take_a_builtin_scheme(third_party):
    (third_party / "pc_thirdparty_sqlite.py").write_text(textwrap.dedent(
        '''
        from powercontext.plugins import hookimpl

        @hookimpl
        def powercontext_register_backends(register):
            register("sqlite", lambda url, *, profile: None)
        '''))
    _entry_point(third_party, "takeover", "pc_thirdparty_sqlite")
    with pytest.raises(DuplicateRegistrationError, match="backends 'sqlite'") as info:
        Registry()
    assert "memory_backend" in str(info.value)  # names the built-in it collides with


def _module_level_imports(module_name: str) -> list[str]:
    """The absolute names a module imports when it is imported (``if TYPE_CHECKING:``
    blocks and imports inside functions left out)."""
    spec = importlib.util.find_spec(module_name)
    assert spec is not None and spec.origin is not None
    tree = ast.parse(Path(spec.origin).read_text(encoding="utf-8"))
    names: list[str] = []
    for node in tree.body:
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, f"{module_name}: relative import"
            names.append(str(node.module))
    return names


#: ``powercontext.adapters`` is every adapter package's parent, imported before it anyway;
#: it holds the packages' first-use import (standard library only, checked below).
_CHEAP = ("powercontext.plugins.hookspecs", "powercontext.plugins.urls",
          "powercontext.plugins", "powercontext.adapters", "__future__")


def test_the_adapters_package_imports_only_the_standard_library():
    names = _module_level_imports("powercontext.adapters")
    assert [n for n in names if n != "__future__"
            and n.split(".")[0] not in sys.stdlib_module_names] == []


@pytest.mark.parametrize("plugin", DEFAULT_PLUGINS)
def test_a_builtin_plugin_module_and_its_package_import_nothing_heavy(plugin):
    """What the registry imports for a built-in: the plugin module and its package
    ``__init__``. Both import only the standard library and the plugin API at module
    level (no driver, SDK or implementation module: those are imported by a factory or
    on first use of an export)."""
    package = plugin.rpartition(".")[0]
    for module_name in (plugin, package):
        heavy = [name for name in _module_level_imports(module_name)
                 if name not in _CHEAP and name.split(".")[0] not in sys.stdlib_module_names]
        assert heavy == [], f"{module_name} imports {heavy} when imported"
