"""Topic Memory backends in the plugin registry (ARCHITECTURE.md, "Plugins"): the
``powercontext_register_topic_backends`` hook, the built-ins for sqlite and oceanbase
(registered by each adapter package's plugin module, imported only when built), one
backend per scheme, the same URL forms as Memory backends."""

from __future__ import annotations

import subprocess
import sys

import pytest

from powercontext.adapters.oceanbase import plugin as oceanbase_plugin
from powercontext.adapters.sqlite import plugin as sqlite_plugin
from powercontext.core.models import EmbeddingProfile
from powercontext.plugins import DuplicateRegistrationError, Registry, UnknownPluginError, hookimpl


class _Made:
    def __init__(self, url: str, profile: object, analyzer: object = None) -> None:
        self.url, self.profile, self.analyzer = url, profile, analyzer


class _TopicPlugin:
    @hookimpl
    def powercontext_register_topic_backends(self, register):
        register("mem", lambda url, *, profile, analyzer=None: _Made(url, profile, analyzer))


class _SqliteTopicSpy:
    @hookimpl
    def powercontext_register_topic_backends(self, register):
        register("sqlite", lambda url, *, profile: _Made(url, profile))


def test_builtins_register_a_topic_backend_per_memory_scheme():
    registry = Registry(entry_points=False)
    assert list(registry.topic_backend_factories()) == ["oceanbase", "sqlite"]
    assert list(registry.topic_backend_factories()) == list(registry.backend_factories())
    assert registry.topic_backend_factories() == {
        "oceanbase": oceanbase_plugin.topic_backend, "sqlite": sqlite_plugin.topic_backend}


def test_a_third_party_topic_backend_gets_the_url_profile_and_analyzer():
    registry = Registry(plugins=[_TopicPlugin()], entry_points=False)
    profile = EmbeddingProfile("p", "m", 8)
    made = registry.topic_backend_for_url("mem://x", profile=profile, analyzer="v1")
    assert (made.url, made.profile, made.analyzer) == ("mem://x", profile, "v1")
    made = registry.topic_backend_for_url("mem://y")
    assert (made.url, made.profile, made.analyzer) == ("mem://y", None, None)


def test_two_topic_backends_for_one_scheme_are_refused():
    with pytest.raises(DuplicateRegistrationError, match="topic backends 'sqlite'"):
        Registry(plugins=[_SqliteTopicSpy()], entry_points=False)


def test_an_unknown_scheme_names_the_topic_backends_registered():
    registry = Registry(entry_points=False)
    with pytest.raises(UnknownPluginError, match="no Topic Memory backend for URL scheme 'x'"):
        registry.topic_backend_for_url("x://db")
    # a Memory-only plugin gives its scheme no Topic backend
    with pytest.raises(UnknownPluginError, match="registered: oceanbase, sqlite"):
        registry.topic_backend_for_url("mem://db")


def test_a_bare_path_builds_the_sqlite_topic_backend(tmp_path):
    from powercontext.adapters.sqlite import SQLiteTopicBackend

    backend = Registry(entry_points=False).topic_backend_for_url(str(tmp_path / "t.db"))
    assert isinstance(backend, SQLiteTopicBackend)
    assert not (tmp_path / "t.db").exists()  # nothing opened until the first call


@pytest.mark.subprocess
def test_building_the_registry_imports_no_topic_adapter():
    code = ("import sys\n"
            "from powercontext.plugins import Registry\n"
            "r = Registry(entry_points=False)\n"
            "r.topic_backend_factories()\n"
            "print(*sorted(m for m in sys.modules if m.startswith(('powercontext.adapters', "
            "'apsw', 'MySQLdb'))))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60, check=True)
    # the plugin modules and their packages only: no backend module, no driver
    assert not [m for m in out.stdout.split() if "backend" in m
                or not m.startswith("powercontext.adapters")]
    assert "powercontext.adapters.sqlite.plugin" in out.stdout.split()
