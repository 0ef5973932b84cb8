"""Properties of the CLI's input checks and of ``setup``'s config edits: any JSON given
as ``--entries`` is either valid entry specs or an InvalidInputError naming where it is
wrong; a setup plan applied to any settings keeps every other setting and a second plan
changes nothing."""

from __future__ import annotations

import io
import json
import tempfile
import tomllib
from pathlib import Path

import pytest
import tomlkit
from hypothesis import given
from hypothesis import strategies as st

from powercontext.core.errors import InvalidInputError
from powercontext.entrypoints.cli.hosts.claude_code import settings_plan as claude_settings_plan
from powercontext.entrypoints.cli.hosts.codex import plan as codex_plan
from powercontext.entrypoints.cli.memory import entry_specs as _entry_specs

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-10, 10) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3)
    | st.dictionaries(st.sampled_from(["text", "kind", "reason", "revise", "x"]), inner,
                      max_size=4),
    max_leaves=12,
)


@given(json_values)
def test_entries_json_is_specs_or_a_named_invalid_input(value):
    try:
        specs = _entry_specs(io.StringIO(json.dumps(value)))
    except InvalidInputError as exc:
        assert exc.field.startswith("entries")
        return
    assert isinstance(value, list) and len(specs) == len(value)
    for spec in specs:
        assert isinstance(spec["text"], str) and isinstance(spec["kind"], str)
        assert set(spec) <= {"text", "kind", "reason", "revise"}


keys = st.text(st.characters(codec="ascii", categories=["L", "N"]), min_size=1, max_size=6)
leaf = st.none() | st.booleans() | st.integers(-5, 5) | st.text(max_size=6)
hook_groups = st.lists(st.fixed_dictionaries({"hooks": st.lists(st.fixed_dictionaries(
    {"type": st.just("command"), "command": st.text(max_size=12)}), max_size=2)}), max_size=2)
settings_docs = st.fixed_dictionaries(
    {},
    optional={
        "hooks": st.dictionaries(st.sampled_from(["Stop", "UserPromptSubmit", "PreToolUse"]),
                                 hook_groups, max_size=3),
        "permissions": st.dictionaries(keys, leaf, max_size=2),
        "model": st.text(max_size=6),
    },
)


@given(settings_docs)
def test_claude_settings_keep_everything_else_and_are_idempotent(doc):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "settings.json"
        path.write_text(json.dumps(doc))
        command = "powercontext hook claude-code"
        first = claude_settings_plan(path, command)
        first.write()
        after = json.loads(path.read_text())
        for k, v in doc.items():
            if k != "hooks":
                assert after[k] == v
        for event, groups in doc.get("hooks", {}).items():
            if event not in ("Stop", "UserPromptSubmit"):
                assert after["hooks"][event] == groups
            else:  # their hook groups stay, in order; only ours is added
                theirs = [g for g in after["hooks"][event]
                          if all(h["command"] != command for h in g["hooks"])]
                assert theirs == [g for g in groups
                                  if all(h["command"] != command for h in g["hooks"])]
        for event in ("Stop", "UserPromptSubmit"):
            assert sum(h["command"] == command for g in after["hooks"][event]
                       for h in g["hooks"]) == 1
        second = claude_settings_plan(path, command)
        assert not second.changed
        assert (Path(tmp) / "settings.json.bak").exists() == (first.before is not None)


toml_docs = st.dictionaries(
    keys.filter(lambda k: k not in ("notify", "mcp_servers")),
    leaf.filter(lambda v: v is not None) | st.dictionaries(keys, st.integers(0, 9), max_size=2),
    max_size=4)


@pytest.mark.parametrize("with_comment", [False, True])
@given(doc=toml_docs)
def test_codex_config_keeps_everything_else_and_is_idempotent(with_comment, doc):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "config.toml"
        text = ("# mine\n" if with_comment else "") + tomlkit.dumps(doc)
        path.write_text(text)
        plan = codex_plan(path, "powercontext", [], force=False)
        plan.write()
        after = tomllib.loads(path.read_text())
        assert {k: v for k, v in after.items() if k not in ("notify", "mcp_servers")} == doc
        assert after["notify"] == ["powercontext", "hook", "codex"]
        assert after["mcp_servers"]["powercontext"] == {"command": "powercontext",
                                                        "args": ["mcp"]}
        assert path.read_text().startswith("# mine\n") == with_comment
        assert not codex_plan(path, "powercontext", [], force=False).changed


_NAME_PARTS = st.sampled_from(["key:", "key:demo", "@", "@0", "@1", "@2", "@9", "mem_art_x",
                               " ", "", "repo:/a@b", "MEM", "é"])


@pytest.fixture(scope="module")
def resolver_db(tmp_path_factory):
    """A SQLite Memory at Revision 2 under key demo, and key repo:/a@b at Revision 1."""
    import asyncio

    from powercontext.core.models import MemoryEntryInput
    from powercontext.runtime import open_service
    from powercontext.runtime_manifest import RuntimeManifest

    db = tmp_path_factory.mktemp("resolve") / "m.db"

    async def body():
        svc = open_service(db)
        try:
            r1 = await svc.remember(None, mode="append",
                                    entries=(MemoryEntryInput("fact", "one"),))
            r2 = await svc.remember(r1, mode="append", entries=(MemoryEntryInput("fact", "two"),))
            other = await svc.remember(None, mode="append",
                                       entries=(MemoryEntryInput("fact", "other"),))
            return r2, other
        finally:
            await svc.close()

    head, other = asyncio.run(body())
    manifest = RuntimeManifest.for_db(str(db))
    manifest.set("demo", head.artifact_id)
    manifest.set("repo:/a@b", other.artifact_id)
    return db, head, other


@given(parts=st.lists(_NAME_PARTS, max_size=4))
def test_any_memory_name_resolves_or_is_a_typed_error(resolver_db, parts):
    import asyncio

    from powercontext.core.errors import ArtifactNotFoundError
    from powercontext.core.models import ArtifactRef
    from powercontext.memory_names import resolve_memory
    from powercontext.runtime import open_service

    db, head, other = resolver_db
    name = "".join(parts).replace("MEM", head.artifact_id)

    async def body():
        svc = open_service(db)
        try:
            return await resolve_memory(svc, name)
        finally:
            await svc.close()

    try:
        ref = asyncio.run(body())
    except (InvalidInputError, ArtifactNotFoundError):
        return
    assert isinstance(ref, ArtifactRef)
    if ref.artifact_id == head.artifact_id:
        assert 1 <= ref.revision <= head.revision
    else:
        assert ref == other  # the whole key "repo:/a@b" wins over a split at "@"


def test_key_at_revision_names_the_exact_revision(resolver_db):
    import asyncio

    from powercontext.core.models import ArtifactRef
    from powercontext.memory_names import resolve_memory
    from powercontext.runtime import open_service

    db, head, other = resolver_db

    async def body():
        svc = open_service(db)
        try:
            return [await resolve_memory(svc, n)
                    for n in ("key:demo", "key:demo@1", "key:repo:/a@b", "key:repo:/a@b@1",
                              f"{head.artifact_id}@1")]
        finally:
            await svc.close()

    assert asyncio.run(body()) == [head, ArtifactRef(head.artifact_id, 1), other, other,
                                   ArtifactRef(head.artifact_id, 1)]
