"""The plugin registry (ARCHITECTURE.md, "Plugins"): built-ins register through the same
hooks as third parties, entry points load, a URL scheme has exactly one backend, and
nothing heavy is imported until a factory is called."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from powercontext.core.errors import InvalidInputError, PowerContextError
from powercontext.plugins import (
    DuplicateRegistrationError,
    PluginError,
    Registry,
    UnknownPluginError,
    hookimpl,
)
from powercontext.plugins.registry import DEFAULT_PLUGINS, url_scheme
from powercontext.plugins.urls import sqlite_path_from_url


class _Made:
    """What the test factories return: the arguments they were called with."""

    def __init__(self, kind: str, url: str, profile: object) -> None:
        self.kind, self.url, self.profile = kind, url, profile


class _MemPlugin:
    @hookimpl
    def powercontext_register_backends(self, register):
        register("mem", lambda url, *, profile: _Made("mem", url, profile))

    @hookimpl
    def powercontext_register_embedding_models(self, register):
        register("echo", lambda **options: ("echo", options))

    @hookimpl
    def powercontext_register_candidate_providers(self, register):
        register("zeta", lambda **options: "zeta")
        register("alpha", lambda **options: "alpha")


class _SqliteSpy:
    """A second backend for the ``sqlite`` scheme: must be refused."""

    @hookimpl
    def powercontext_register_backends(self, register):
        register("sqlite", lambda url, *, profile: _Made("spy", url, profile))


def test_builtin_plugin_registers_backends_and_models_by_name():
    registry = Registry(entry_points=False)
    assert registry.plugin_names() == tuple(sorted(DEFAULT_PLUGINS))
    assert list(registry.backend_factories()) == ["oceanbase", "sqlite"]
    assert list(registry.embedding_model_factories()) == ["deterministic", "local", "openai"]
    assert list(registry.candidate_providers()) == [
        "contract", "git", "model", "rules", "structured", "task_outcome"]


def test_extra_plugin_is_visible_and_mappings_are_sorted_and_read_only():
    registry = Registry(plugins=[_MemPlugin()], entry_points=False)
    made = registry.backend_for_url("mem://x/y", profile="P")
    assert (made.kind, made.url, made.profile) == ("mem", "mem://x/y", "P")
    assert registry.embedding_model("echo", dims=8) == ("echo", {"dims": 8})
    assert list(registry.candidate_providers()) == [
        "alpha", "contract", "git", "model", "rules", "structured", "task_outcome", "zeta"]
    with pytest.raises(TypeError):
        registry.backend_factories()["other"] = lambda url, *, profile: None  # type: ignore[index]


def test_scheme_is_case_insensitive():
    registry = Registry(plugins=[_MemPlugin()], entry_points=False)
    assert registry.backend_for_url("MEM://host").kind == "mem"


def test_second_backend_for_one_scheme_is_refused_with_a_typed_error():
    with pytest.raises(DuplicateRegistrationError, match="'sqlite'") as info:
        Registry(plugins=[_SqliteSpy()], entry_points=False)
    assert isinstance(info.value, PowerContextError)
    assert isinstance(info.value, ValueError)


def test_register_after_construction_refuses_duplicate_and_keeps_the_old_state():
    registry = Registry(entry_points=False)
    spy = _SqliteSpy()
    with pytest.raises(DuplicateRegistrationError):
        registry.register(spy, name="spy")
    assert registry.plugin_names() == tuple(sorted(DEFAULT_PLUGINS))
    from powercontext.adapters.sqlite import plugin as sqlite_plugin

    assert registry.backend_factories()["sqlite"] is sqlite_plugin.memory_backend
    registry.register(_MemPlugin(), name="mem")
    assert "mem" in registry.backend_factories()


def test_duplicate_embedding_model_name_is_refused():
    class Twice:
        @hookimpl
        def powercontext_register_embedding_models(self, register):
            register("deterministic", lambda **o: None)

    with pytest.raises(DuplicateRegistrationError, match="embedding models 'deterministic'"):
        Registry(plugins=[Twice()], entry_points=False)


def test_misspelled_hook_fails_check_pending():
    class Typo:
        @hookimpl
        def powercontext_register_backend(self, register):  # missing "s"
            register("x", lambda url, *, profile: None)

    with pytest.raises(PluginError, match="powercontext_register_backend"):
        Registry(plugins=[Typo()], entry_points=False)


@pytest.mark.parametrize("name", ["", "Upper", "1abc", "has space", "é"])
def test_invalid_names_are_refused(name):
    class Bad:
        @hookimpl
        def powercontext_register_candidate_providers(self, register):
            register(name, lambda **o: None)

    with pytest.raises(PluginError, match="invalid candidate providers name"):
        Registry(plugins=[Bad()], entry_points=False)


def test_non_callable_factory_is_refused():
    class Bad:
        @hookimpl
        def powercontext_register_backends(self, register):
            register("bad", "not a factory")

    with pytest.raises(PluginError, match="not callable"):
        Registry(plugins=[Bad()], entry_points=False)


def test_unknown_scheme_and_model_raise_lookup_errors_naming_what_exists():
    registry = Registry(entry_points=False)
    with pytest.raises(UnknownPluginError, match=r"'postgres' \(registered: oceanbase, sqlite\)"):
        registry.backend_for_url("postgres://h/db")
    with pytest.raises(LookupError, match="no embedding model 'nope'"):
        registry.embedding_model("nope")


def test_two_registries_do_not_share_plugins():
    with_mem = Registry(plugins=[_MemPlugin()], entry_points=False)
    plain = Registry(entry_points=False)
    assert "mem" in with_mem.backend_factories()
    assert "mem" not in plain.backend_factories()
    assert with_mem.plugin_manager is not plain.plugin_manager


@pytest.mark.parametrize(
    ("url", "scheme"),
    [
        ("sqlite:///tmp/m.db", "sqlite"),
        ("oceanbase://root:@127.0.0.1:2881/test", "oceanbase"),
        ("Mem+x://h", "mem+x"),
        ("memory.db", None),
        ("./dir/memory.db", None),
        ("/abs/memory.db", None),
        ("C:\\data\\memory.db", None),
        ("sqlite:relative.db", None),
    ],
)
def test_url_scheme(url, scheme):
    assert url_scheme(url) == scheme


class _Capture:
    """Replaces the sqlite backend (after the built-in is unregistered) to see the URL."""

    @hookimpl
    def powercontext_register_backends(self, register):
        register("sqlite", lambda url, *, profile: _Made("sqlite", url, profile))


def _capturing_registry() -> Registry:
    registry = Registry(entry_points=False)
    registry.plugin_manager.unregister(name="powercontext.adapters.sqlite.plugin")
    registry.register(_Capture(), name="capture")
    return registry


def test_bare_path_means_sqlite_with_an_absolute_percent_encoded_url(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    registry = _capturing_registry()
    made = registry.backend_for_url("my memory.db")
    expected = tmp_path / "my memory.db"
    assert made.url == "sqlite://" + expected.as_uri().removeprefix("file://")
    assert "%20" in made.url
    assert sqlite_path_from_url(made.url) == str(expected)
    made_from_path = registry.backend_for_url(expected)
    assert made_from_path.url == made.url


def test_memory_path_stays_in_memory():
    assert _capturing_registry().backend_for_url(":memory:").url == "sqlite://:memory:"
    assert sqlite_path_from_url("sqlite://:memory:") == ":memory:"


@pytest.mark.parametrize(
    ("url", "path"),
    [
        ("sqlite:///tmp/m.db", "/tmp/m.db"),
        ("sqlite://localhost/tmp/m.db", "/tmp/m.db"),
        ("sqlite:///tmp/a%20b/%C3%A9.db", "/tmp/a b/é.db"),
    ],
)
def test_sqlite_path_from_url(url, path):
    assert sqlite_path_from_url(url) == path


@pytest.mark.parametrize(
    "url",
    ["sqlite://otherhost/m.db", "sqlite://", "sqlite:///", "sqlite:///m.db?mode=ro", "x:///m"],
)
def test_sqlite_path_from_bad_url_is_a_value_error_naming_url(url):
    with pytest.raises(InvalidInputError) as info:
        sqlite_path_from_url(url)
    assert info.value.field == "url"


def test_entry_point_plugins_are_loaded(tmp_path, monkeypatch):
    """A real distribution on sys.path, found through importlib.metadata."""
    (tmp_path / "pc_demo_plugin.py").write_text(
        textwrap.dedent(
            """
            from powercontext.plugins import hookimpl

            @hookimpl
            def powercontext_register_backends(register):
                register("demo", lambda url, *, profile: ("demo", url, profile))
            """
        )
    )
    dist = tmp_path / "pc_demo_plugin-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: pc-demo-plugin\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[powercontext]\ndemo = pc_demo_plugin\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        registry = Registry()
        assert "demo" in registry.plugin_names()
        assert registry.backend_for_url("demo://x") == ("demo", "demo://x", None)
        assert "demo" not in Registry(entry_points=False).backend_factories()
    finally:
        sys.modules.pop("pc_demo_plugin", None)


def test_broken_entry_point_is_a_plugin_error(tmp_path, monkeypatch):
    dist = tmp_path / "pc_broken_plugin-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: pc-broken-plugin\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[powercontext]\nbroken = pc_no_such_module_xyz\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(PluginError, match="pc_no_such_module_xyz"):
        Registry()


#: What building a Registry may import of the adapters: each built-in plugin module and
#: the package above it (whose exports load on first use), nothing else.
_PLUGIN_IMPORTS = sorted({
    "powercontext.adapters",
    *DEFAULT_PLUGINS, *(name.rpartition(".")[0] for name in DEFAULT_PLUGINS)})


@pytest.mark.subprocess
def test_building_the_registry_imports_only_the_plugin_modules_and_nothing_heavy():
    code = textwrap.dedent(
        """
        import sys
        from powercontext.plugins import Registry
        r = Registry()
        r.backend_factories(); r.embedding_model_factories(); r.candidate_providers()
        r.topic_backend_factories(); r.topic_generation_model_factories()
        print(sorted(m for m in sys.modules if m.startswith("powercontext.adapters")))
        print(sorted(
            m for m in sys.modules if m.split(".")[0] in
            ("apsw", "sqlite_vec", "MySQLdb", "torch", "sentence_transformers", "openai",
             "anthropic", "sqlglot", "httpx")
        ))
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert out == [str(_PLUGIN_IMPORTS), "[]"]


@pytest.mark.subprocess
@pytest.mark.parametrize("plugin", DEFAULT_PLUGINS)
def test_importing_a_builtin_plugin_module_imports_no_implementation(plugin):
    code = textwrap.dedent(
        f"""
        import sys
        import {plugin}
        print(*sorted(m for m in sys.modules if m.startswith("powercontext.adapters")))
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split()
    package = plugin.rpartition(".")[0]
    assert set(out) == {"powercontext.adapters", package, plugin}


@pytest.mark.subprocess
def test_builtin_embedding_factory_imports_its_adapter_only_when_called():
    code = textwrap.dedent(
        """
        import sys
        from powercontext.plugins import Registry
        factory = Registry(entry_points=False).embedding_model_factories()["deterministic"]
        before = "powercontext.adapters.embedding.deterministic" in sys.modules
        try:
            factory()
        except Exception:
            pass
        after = "powercontext.adapters.embedding.deterministic" in sys.modules
        print(before, after)
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.split() == ["False", "True"]


def test_sqlite_builtin_builds_the_sqlite_backend(tmp_path):
    sqlite_adapter = pytest.importorskip("powercontext.adapters.sqlite")
    backend_class = getattr(sqlite_adapter, "SQLiteMemoryBackend", None)
    if backend_class is None:
        pytest.skip("powercontext.adapters.sqlite has no SQLiteMemoryBackend yet")
    backend = Registry(entry_points=False).backend_for_url(tmp_path / "m.db")
    try:
        assert isinstance(backend, backend_class)
        assert backend.filename == str(tmp_path / "m.db")
    finally:
        import asyncio

        asyncio.run(backend.close())
