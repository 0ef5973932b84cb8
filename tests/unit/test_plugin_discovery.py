"""plugins.discovery (issue 14): importlib.metadata is skipped only when no distribution
can declare a ``powercontext`` entry point; whenever the check cannot tell it says True."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import zipfile
from importlib.machinery import PathFinder

import pytest

from powercontext.plugins.discovery import may_declare_entry_points


def _dist(root, name, entry_points=None):
    dist = root / f"{name}-1.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    if entry_points is not None:
        (dist / "entry_points.txt").write_text(entry_points)


@pytest.fixture
def only(monkeypatch):
    """sys.path reduced to the given folders, sys.meta_path to the standard finder."""
    monkeypatch.setattr(sys, "meta_path", [PathFinder])

    def set_path(*paths):
        monkeypatch.setattr(sys, "path", [str(p) for p in paths])
    return set_path


def test_no_distribution_with_the_group_is_false(tmp_path, only):
    _dist(tmp_path, "plain")
    _dist(tmp_path, "cli", "[console_scripts]\npowercontext = powercontext.cli:main\n")
    (tmp_path / "notes.egg-info").write_text("Name: notes\n")  # an egg-info file: no entry points
    only(tmp_path, tmp_path / "missing")
    assert may_declare_entry_points("powercontext") is False


@pytest.mark.parametrize("header", ["[powercontext]", "  [ powercontext ]  ", "[[powercontext]]"])
def test_a_distribution_declaring_the_group_is_true(tmp_path, only, header):
    _dist(tmp_path, "other", "[console_scripts]\nx = y:z\n")
    _dist(tmp_path, "plugin", f"[console_scripts]\nx = y:z\n\n{header}\ndemo = demo_mod\n")
    only(tmp_path)
    assert may_declare_entry_points("powercontext") is True
    assert may_declare_entry_points("powercontext.other") is False


def test_what_cannot_be_told_cheaply_is_true(tmp_path, only, monkeypatch):
    archive = tmp_path / "bundle.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("x-1.0.dist-info/entry_points.txt", "[console_scripts]\n")
    only(archive)
    assert may_declare_entry_points("powercontext") is True  # a zip: importlib reads it
    egg = tmp_path / "thing-1.0.egg"
    egg.mkdir()
    only(egg)
    assert may_declare_entry_points("powercontext") is True

    class OwnDistributions:
        @staticmethod
        def find_distributions(context=None):
            return iter(())

    only(tmp_path / "empty")
    assert may_declare_entry_points("powercontext") is False
    monkeypatch.setattr(sys, "meta_path", [PathFinder, OwnDistributions])
    assert may_declare_entry_points("powercontext") is True


@pytest.mark.subprocess
def test_registry_without_plugins_does_not_import_importlib_metadata(tmp_path):
    code = textwrap.dedent(
        """
        import sys
        from powercontext.plugins import Registry
        from powercontext.plugins.discovery import may_declare_entry_points
        Registry()
        print(may_declare_entry_points("powercontext"), "importlib.metadata" in sys.modules)
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    if out[0] == "False":  # no plugin installed in this environment
        assert out[1] == "False"
    else:  # some plugin may be declared: pluggy read the metadata
        assert out[1] == "True"
