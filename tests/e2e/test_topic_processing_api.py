"""The Python API of Topic processing on a real SQLite file (issue 13 items 1, 2 and 7):
``TopicMemoryService.add_sources`` / ``flush`` / ``status`` / ``process`` and
``powercontext.open_topic_processor`` do what ``source add``, ``topic flush|status|
process --once`` do; a configuration that cannot run is TopicProcessingUnavailableError
before any connection or request; bad input is refused naming the field, nothing
written."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

import powercontext
from powercontext import make_source, open_topic_processor, open_topic_service
from powercontext.core.errors import InvalidInputError, TopicProcessingUnavailableError

SCOPE = "project:api"
DETERMINISTIC = '[inference]\ngeneration_provider = "deterministic"\n'


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    for k in [k for k in __import__("os").environ if k.startswith("POWERCONTEXT_")]:
        monkeypatch.delenv(k)
    monkeypatch.setenv("POWERCONTEXT_HOME", str(tmp_path / "home"))
    return {"POWERCONTEXT_HOME": str(tmp_path / "home")}


def _sources() -> list[powercontext.Source]:
    return [make_source("src_api_release", "file", "# Releases\n\nTag main, then run make "
                        "release to build the wheel.\n", "file:///demo/releases.md"),
            make_source("src_api_turn", "chat_turn", "user: deploys go out on Tuesdays",
                        None, {"role": "user"})]


def test_the_python_api_adds_flushes_processes_and_reports(tmp_path, env):
    db = tmp_path / "api.db"
    config = tmp_path / "config.toml"
    config.write_text(DETERMINISTIC, encoding="utf-8")

    async def body() -> None:
        async with open_topic_service(db, embedding="none") as svc:
            assert await svc.flush(SCOPE) == "idle"  # no Source yet: nothing written
            assert await svc.status() == ()
            assert await svc.add_sources(SCOPE, _sources()) == (1, 2)
            assert await svc.add_sources(SCOPE, _sources()[:1]) == (1,)  # idempotent
            assert await svc.flush(SCOPE) == "accepted"
            (st,) = await svc.status(SCOPE)
            assert (st.source_head, st.cursor, st.pending.flush_generation) == (2, 0, 1)
        processor = open_topic_processor(db, config=config, embedding="none", env=env)
        try:
            report = await processor.process(SCOPE)
        finally:
            await processor.service.close()
        assert report.stopped is None and report.status.covered
        assert [(w.after, w.through) for w in report.windows] == [(0, 2)]
        assert report.windows[0].created
        async with open_topic_service(db, embedding="none") as svc:
            (st,) = await svc.status(SCOPE)
            assert (st.cursor, st.pending, st.budget) == (2, None, None)
            assert await svc.flush(SCOPE) == "idle"
            # a new Source, processed through the service with the configured model
            more = make_source("src_api_more", "chat_turn", "assistant: roll back by "
                               "redeploying the previous tag")
            assert await svc.add_sources(SCOPE, [more]) == (3,)
            again = await svc.process(SCOPE, model=processor.model,
                                      settings=processor.settings)
            assert again.stopped is None and again.status.cursor == 3
            published = {r for w in report.windows + again.windows
                         for r in w.created + w.updated}
            heads = await svc.backend.heads(SCOPE)
            assert heads and {h.artifact_id for h in heads} == {
                r.artifact_id for r in published}

    asyncio.run(body())


def test_an_unusable_configuration_is_unavailable_before_any_connection(tmp_path, env):
    db = tmp_path / "never.db"
    with pytest.raises(TopicProcessingUnavailableError) as exc:
        open_topic_processor(db, env=env)  # the default file is missing: defaults
    assert any("generation_provider" in p for p in exc.value.problems)
    refused = tmp_path / "refused.toml"
    refused.write_text(DETERMINISTIC + "[inference.generation_settings]\n"
                       "previous_response_id = \"resp_1\"\n", encoding="utf-8")
    with pytest.raises(TopicProcessingUnavailableError) as exc:
        open_topic_processor(db, config=str(refused), env=env)
    assert any("previous_response_id" in p for p in exc.value.problems)
    with pytest.raises(InvalidInputError):  # an unknown key in the file is bad input
        bad = tmp_path / "bad.toml"
        bad.write_text(DETERMINISTIC + "colour = \"red\"\n", encoding="utf-8")
        open_topic_processor(db, config=bad, env=env)
    assert not db.exists()
    assert isinstance(exc.value, powercontext.CapabilityNotSupportedError)


@pytest.mark.parametrize("scope", ["", "s" * 257, "a\tb", 7])
def test_bad_scopes_are_refused_naming_scope_id_and_write_nothing(tmp_path, env, scope):
    db = tmp_path / "bad.db"

    async def body() -> None:
        async with open_topic_service(db, embedding="none") as svc:
            for call in (svc.add_sources(scope, _sources()), svc.flush(scope),
                         svc.status(scope), svc.process(scope, model=None)):
                with pytest.raises(InvalidInputError) as exc:
                    await call
                assert exc.value.field == "scope_id"
            assert await svc.status() == ()

    asyncio.run(body())


def test_process_refuses_settings_out_of_range_naming_them(tmp_path, env):
    from powercontext.core.topic.processing import ProcessingSettings

    async def body() -> None:
        async with open_topic_service(tmp_path / "s.db", embedding="none") as svc:
            with pytest.raises(InvalidInputError) as exc:
                await svc.process(SCOPE, model=None,
                                  settings=ProcessingSettings(window_limit=101))
            assert exc.value.field == "runtime.topic_memory_source_window_limit"

    asyncio.run(body())


def test_process_runs_the_worker_start_up_policy_on_the_model_it_is_given(tmp_path, env):
    """Worker bootstrap validates the same policy as the configuration: a model of an
    unknown provider, or one carrying a refused setting, is refused before anything is
    read or reserved."""
    from powercontext.adapters.topic_generation.deterministic import DeterministicTopicModel

    class Posing:
        """The deterministic model posing under another name or with a setting."""

        def __init__(self, name: str, settings: dict[str, object]) -> None:
            self._inner, self.name, self.settings = DeterministicTopicModel(), name, settings

        def __getattr__(self, attr: str) -> object:
            return getattr(self._inner, attr)

    def Unknown() -> Posing:
        return Posing("mystery", {})

    def Hidden() -> Posing:
        return Posing("deterministic", {"previous_response_id": "resp_1"})

    async def body() -> None:
        async with open_topic_service(tmp_path / "w.db", embedding="none") as svc:
            await svc.add_sources(SCOPE, _sources())
            for model, word in ((Unknown(), "mystery"), (Hidden(), "previous_response_id")):
                with pytest.raises(TopicProcessingUnavailableError, match=word):
                    await svc.process(SCOPE, model=model)
            (status,) = await svc.status(SCOPE)
            assert status.cursor == 0 and status.budget is None  # no attempt was spent

    asyncio.run(body())
