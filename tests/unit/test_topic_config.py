"""Topic processing configuration (TOPIC-MEMORY.md, "Configuration", "Providers"): the
TOML file and its environment overrides, unknown keys refused by name, the processing
settings, the one provider-policy check before a provider is built, start-up, and the
start-up log with secrets masked."""

from __future__ import annotations

import logging

import pytest

from powercontext.adapters.topic_generation import plugin as topic_generation_plugin
from powercontext.configuration import load_config, log_effective_config
from powercontext.core.errors import InvalidInputError, TopicProcessingUnavailableError
from powercontext.core.models import EmbeddingProfile
from powercontext.core.topic.processing import ProcessingSettings
from powercontext.plugins import Registry, UnknownPluginError, hookimpl
from powercontext.topic_provider import (
    check_startup,
    check_topic_embedding,
    check_worker_model,
    generation_problems,
    topic_generation_model,
)


class _Acme:
    def __init__(self, **options):
        self.options = options
        self.name = "acme"
        self.model = options["model"] or "acme-1"
        self.context_window_tokens = options["context_window_tokens"]
        self.max_requests = options["max_requests"]
        self.settings = options["settings"]

    async def generate(self, request):  # pragma: no cover - never called here
        raise AssertionError


class _AcmePlugin:
    def __init__(self) -> None:
        self.built: list[_Acme] = []

    @hookimpl
    def powercontext_register_topic_generation_models(self, register):
        def factory(**options):
            self.built.append(_Acme(**options))
            return self.built[-1]

        register("acme", factory)


@pytest.fixture
def plugin() -> _AcmePlugin:
    return _AcmePlugin()


@pytest.fixture
def registry(plugin) -> Registry:
    return Registry(plugins=[plugin], entry_points=False)


def write(tmp_path, text: str):
    path = tmp_path / "config.toml"
    path.write_text(text, encoding="utf-8")
    return path


def home(tmp_path, **more: str) -> dict[str, str]:
    return {"POWERCONTEXT_HOME": str(tmp_path / "home"), **more}


def test_a_missing_default_file_means_the_defaults(tmp_path):
    config = load_config(env=home(tmp_path))
    assert config.source is None
    assert config.inference.generation_provider is None
    assert config.runtime.topic_memory_auto_interval_seconds is None
    assert config.processing_settings() == ProcessingSettings()


def test_the_default_file_lives_in_the_data_dir_and_env_overrides_it(tmp_path):
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "config.toml").write_text(
        "[runtime]\ntopic_memory_source_window_limit = 4\n"
        "[inference]\ngeneration_provider = 'openai'\n"
        "[inference.generation_settings]\ntemperature = 0.5\n", encoding="utf-8")
    config = load_config(env=home(
        tmp_path, POWERCONTEXT_RUNTIME_TOPIC_MEMORY_SOURCE_WINDOW_LIMIT="7",
        POWERCONTEXT_INFERENCE_GENERATION_PROVIDER="acme",
        POWERCONTEXT_INFERENCE_GENERATION_SETTINGS_SEED="3",
        POWERCONTEXT_INFERENCE_GENERATION_TIMEOUT_SECONDS="12.5"))
    assert config.source == str(tmp_path / "home" / "config.toml")
    assert config.runtime.topic_memory_source_window_limit == 7
    assert config.inference.generation_provider == "acme"
    assert dict(config.inference.generation_settings) == {"temperature": 0.5, "seed": 3}
    assert config.inference.generation_timeout_seconds == 12.5
    assert config.processing_settings().window_limit == 7
    assert config.origins["inference.generation_settings.seed"] == \
        "POWERCONTEXT_INFERENCE_GENERATION_SETTINGS_SEED"


def test_config_path_and_powercontext_config_name_a_file_that_must_exist(tmp_path):
    path = write(tmp_path, "[inference]\ngeneration_model = 'm'\n")
    assert load_config(path, env=home(tmp_path)).inference.generation_model == "m"
    assert load_config(env=home(tmp_path, POWERCONTEXT_CONFIG=str(path))).source == str(path)
    with pytest.raises(InvalidInputError, match="no such configuration file"):
        load_config(tmp_path / "nope.toml", env=home(tmp_path))


@pytest.mark.parametrize(("text", "field"), [
    ("[runtime]\ntopic_memory_window = 3\n", "runtime.topic_memory_window"),
    ("[inference]\ngeneration_temperature = 0\n", "inference.generation_temperature"),
    ("[daemon]\nport = 1\n", "daemon"),
    ("[runtime]\ntopic_memory_source_window_limit = '10'\n",
     "runtime.topic_memory_source_window_limit"),
    ("[runtime]\ntopic_memory_source_window_limit = true\n",
     "runtime.topic_memory_source_window_limit"),
    ("[inference]\ngeneration_settings = 3\n", "inference.generation_settings"),
    ("[runtime]\nartifact_processing_role = 'worker'\n", "runtime.artifact_processing_role"),
    ("[runtime]\nartifact_processing_max_workers = 0\n",
     "runtime.artifact_processing_max_workers"),
    ("[runtime]\ntopic_memory_auto_interval_seconds = 0\n",
     "runtime.topic_memory_auto_interval_seconds"),
    ("[runtime\n", "config"),
    ("[server]\nallowed_hosts = 'a.example'\n", "server.allowed_hosts"),
    ("[server]\nallowed_hosts = ['a.example', 3]\n", "server.allowed_hosts"),
])
def test_unknown_keys_and_bad_values_are_refused_by_name(tmp_path, text, field):
    with pytest.raises(InvalidInputError) as info:
        load_config(write(tmp_path, text), env=home(tmp_path))
    assert info.value.field == field


def test_allowed_hosts_is_a_list_in_the_file_and_comma_separated_in_the_environment(
        tmp_path):
    path = write(tmp_path, "[server]\nallowed_hosts = ['a.example', 'b.example']\n")
    assert load_config(path, env=home(tmp_path)).server.allowed_hosts == (
        "a.example", "b.example")
    config = load_config(path, env=home(
        tmp_path, POWERCONTEXT_SERVER_ALLOWED_HOSTS=" c.example ,, d.example"))
    assert config.server.allowed_hosts == ("c.example", "d.example")
    assert load_config(env=home(tmp_path)).server.allowed_hosts == ()


def test_unknown_environment_overrides_are_refused_by_name(tmp_path):
    with pytest.raises(InvalidInputError) as info:
        load_config(env=home(tmp_path, POWERCONTEXT_RUNTIME_WINDOW="3"))
    assert info.value.field == "POWERCONTEXT_RUNTIME_WINDOW"
    with pytest.raises(InvalidInputError) as info:
        load_config(env=home(tmp_path, POWERCONTEXT_INFERENCE_GENERATION_MAX_REQUESTS="x"))
    assert info.value.field == "POWERCONTEXT_INFERENCE_GENERATION_MAX_REQUESTS"
    # other POWERCONTEXT_ variables are not configuration keys
    load_config(env=home(tmp_path, POWERCONTEXT_DB="/x", POWERCONTEXT_EMBEDDING="none"))


def test_an_empty_override_unsets_an_optional_key(tmp_path):
    path = write(tmp_path, "[runtime]\ntopic_memory_auto_interval_seconds = 60\n")
    assert load_config(path, env=home(tmp_path)).runtime \
        .topic_memory_auto_interval_seconds == 60
    assert load_config(path, env=home(
        tmp_path, POWERCONTEXT_RUNTIME_TOPIC_MEMORY_AUTO_INTERVAL_SECONDS="")).runtime \
        .topic_memory_auto_interval_seconds is None


def test_processing_settings_out_of_range_name_the_key(tmp_path):
    config = load_config(write(tmp_path, "[runtime]\ntopic_memory_source_window_limit = 101\n"),
                         env=home(tmp_path))
    with pytest.raises(InvalidInputError) as info:
        config.processing_settings()
    assert info.value.field == "runtime.topic_memory_source_window_limit"


def test_a_small_context_window_alone_is_valid_its_output_default_follows(tmp_path):
    # found by a user: context 8192 alone was refused because the unset output default
    # (8192) passed half the context, with two different ranges in the messages
    text = '[inference]\ngeneration_provider = "deterministic"\n' \
           "generation_model_context_window_tokens = 8192\n"
    config = load_config(write(tmp_path, text), env=home(tmp_path))
    assert config.processing_settings().max_output_tokens == 4096
    assert generation_problems(config) == ()
    explicit = load_config(write(tmp_path, text + "generation_max_output_tokens = 8192\n"),
                           env=home(tmp_path))
    with pytest.raises(InvalidInputError) as info:
        explicit.processing_settings()
    assert info.value.field == "inference.generation_max_output_tokens"
    assert "at most half of inference.generation_model_context_window_tokens = 8192" \
        in str(info.value)


def test_the_builtin_providers_are_registered_lazily_by_name():
    registry = Registry(entry_points=False)
    assert list(registry.topic_generation_model_factories()) == [
        "anthropic", "deterministic", "openai"]
    assert registry.topic_generation_model_factories()["deterministic"] is \
        topic_generation_plugin.deterministic
    with pytest.raises(UnknownPluginError, match="gemini"):
        registry.topic_generation_model("gemini")


def test_a_plugin_provider_is_built_after_the_policy(tmp_path, registry, plugin):
    config = load_config(write(tmp_path, "[inference]\ngeneration_provider = 'acme'\n"
                               "generation_max_requests = 2\n"
                               "[inference.generation_settings]\nseed = 9\n"),
                         env=home(tmp_path))
    model = topic_generation_model(config, registry)
    assert model is plugin.built[-1]
    assert plugin.built[-1].options == {
        "model": None, "base_url": None, "api_key": None, "context_window_tokens": 125_000,
        "max_requests": 2, "timeout_seconds": 60.0, "settings": {"seed": 9}}
    check_worker_model(model, registry)


@pytest.mark.parametrize(("toml", "key"), [
    ("", "inference.generation_provider"),
    ("generation_provider = 'gemini'\n", "inference.generation_provider"),
    ("generation_provider = 'acme'\n[inference.generation_settings]\nstore = false\n",
     "inference.generation_settings.store"),
    ("generation_provider = 'acme'\n[inference.generation_settings]\nextra_body = {a = 1}\n",
     "inference.generation_settings.extra_body"),
    ("generation_provider = 'acme'\n[inference.generation_settings]\nbackground = true\n",
     "inference.generation_settings.background"),
    ("generation_provider = 'acme'\n[inference.generation_settings]\ntools = []\n",
     "inference.generation_settings.tools"),
    ("generation_provider = 'acme'\n[inference.generation_settings]\ntemperature = 3\n",
     "inference.generation_settings.temperature"),
    ("generation_provider = 'acme'\n[inference.generation_settings]\ntimeout_seconds = 5\n",
     "inference.generation_settings.timeout_seconds"),
    ("generation_provider = 'acme'\ngeneration_timeout_seconds = 0.5\n",
     "inference.generation_timeout_seconds"),
    ("generation_provider = 'acme'\ngeneration_max_requests = 17\n",
     "inference.generation_max_requests"),
    ("generation_provider = 'openai'\n", "inference.generation_model"),
])
def test_a_refused_configuration_is_unavailable_and_builds_nothing(
        tmp_path, registry, plugin, toml, key):
    config = load_config(write(tmp_path, "[inference]\n" + toml), env=home(tmp_path))
    with pytest.raises(TopicProcessingUnavailableError) as info:
        topic_generation_model(config, registry, env={})
    assert any(p.startswith(key + ":") for p in info.value.problems), info.value.problems
    assert plugin.built == []
    assert check_startup(config, registry) is None  # no automatic scheduling: no error


def test_the_sdk_providers_need_a_key_unless_a_compatible_endpoint_is_named(tmp_path, registry):
    config = load_config(write(tmp_path, "[inference]\ngeneration_provider = 'anthropic'\n"
                               "generation_model = 'claude-x'\n"), env=home(tmp_path))
    assert generation_problems(config, registry, env={}) == (
        "inference.generation_api_key: not set, nor $ANTHROPIC_API_KEY",)
    assert generation_problems(config, registry, env={"ANTHROPIC_API_KEY": "k"}) == ()
    local = load_config(write(tmp_path, "[inference]\ngeneration_provider = 'openai'\n"
                              "generation_model = 'm'\n"
                              "generation_base_url = 'http://127.0.0.1:1/v1'\n"),
                        env=home(tmp_path))
    assert generation_problems(local, registry, env={}) == ()


def test_automatic_scheduling_makes_an_unavailable_configuration_a_startup_error(
        tmp_path, registry):
    config = load_config(write(tmp_path, "[runtime]\ntopic_memory_auto_interval_seconds = 60\n"
                               "[inference]\ngeneration_provider = 'acme'\n"
                               "[inference.generation_settings]\nprevious_response_id = 'r'\n"),
                         env=home(tmp_path))
    with pytest.raises(TopicProcessingUnavailableError, match="start-up refused") as info:
        check_startup(config, registry)
    assert info.value.problems == (
        "inference.generation_settings.previous_response_id: hidden response/conversation "
        "history is refused (every stage call is self-contained)",)
    fine = load_config(write(tmp_path, "[runtime]\ntopic_memory_auto_interval_seconds = 60\n"
                             "[inference]\ngeneration_provider = 'acme'\n"),
                       env=home(tmp_path))
    assert check_startup(fine, registry) is not None


class _Embedding:
    profile = EmbeddingProfile("p", "m", 8, "l2", "unit")


@pytest.mark.parametrize(("table", "key"), [
    ("encoding_format = 'base64'\n", "encoding_format"),
    ("extra_body = {x = 1}\n", "extra_body"),
    ("dimensions = 16\n", "dimensions"),
    ("truncate = 'end'\n", "truncate"),
])
def test_topic_embedding_admits_only_matching_dimensions_and_truncate(tmp_path, table, key):
    config = load_config(write(tmp_path, "[inference.embedding_settings]\n" + table),
                         env=home(tmp_path))
    with pytest.raises(TopicProcessingUnavailableError) as info:
        check_topic_embedding(config, _Embedding())
    assert info.value.problems[0].startswith(f"inference.embedding_settings.{key}:")
    ok = load_config(write(tmp_path, "[inference.embedding_settings]\ndimensions = 8\n"
                           "truncate = false\n"), env=home(tmp_path))
    check_topic_embedding(ok, _Embedding())


def test_the_startup_log_has_one_line_per_setting_and_masks_secrets(tmp_path, caplog):
    config = load_config(write(tmp_path, (
        "[inference]\ngeneration_provider = 'deterministic'\n"
        "generation_api_key = 'sk-live-very-secret'\n"
        "generation_base_url = 'https://user:hunter2@llm.example:8443/v1'\n"
        "[inference.generation_settings]\ntemperature = 0.3\n"
        "extra_headers = {Authorization = 'Bearer tok-secret'}\n")), env=home(tmp_path))
    logger = logging.getLogger("powercontext.topic.test")
    with caplog.at_level(logging.INFO, logger=logger.name):
        log_effective_config(config, logger)
    text = caplog.text
    for secret in ("sk-live-very-secret", "hunter2", "tok-secret", "user:"):
        assert secret not in text
    lines = [r.getMessage() for r in caplog.records]
    assert "config runtime.topic_memory_source_window_limit = 10 (default)" in lines
    assert f"config inference.generation_provider = 'deterministic' ({tmp_path}/config.toml)" \
        in lines
    assert "config inference.generation_settings.temperature = 0.3 " \
           f"({tmp_path}/config.toml)" in lines
    assert any("llm.example:8443" in line for line in lines)
    assert any("deterministic provider" in line for line in lines)
    configs = [r for r in caplog.records if r.getMessage().startswith("config ")]
    assert len(configs) == 10 + 8 + 2 + 5


def test_the_deterministic_factory_passes_only_the_options_its_class_names():
    from support.llm_servers import Reply

    from powercontext.adapters.topic_generation.deterministic import DeterministicTopicModel

    options = {"model": None, "base_url": None, "api_key": "k", "status": 201,
               "settings": {}}
    made = Reply(**topic_generation_plugin.accepted_options(Reply, options))
    assert made.status == 201 and made.body is None  # api_key, model, ... not passed
    with pytest.raises(TypeError):  # the SDK providers get every option
        Reply(**options)
    model = Registry(entry_points=False).topic_generation_model(
        "deterministic", model=None, base_url=None, api_key="k", context_window_tokens=4096,
        max_requests=2, timeout_seconds=1.0, settings={})
    assert isinstance(model, DeterministicTopicModel)


class _MissingSdkPlugin:
    @hookimpl
    def powercontext_register_topic_generation_models(self, register):
        def factory(**options):
            raise ImportError("no sdk", name="acme_sdk")

        register("acme", factory)


def test_a_missing_sdk_makes_topic_processing_unavailable(tmp_path):
    config = load_config(write(tmp_path, "[inference]\ngeneration_provider = 'acme'\n"),
                         env=home(tmp_path))
    registry = Registry(plugins=[_MissingSdkPlugin()], entry_points=False)
    with pytest.raises(TopicProcessingUnavailableError) as info:
        topic_generation_model(config, registry)
    assert info.value.problems == (
        "inference.generation_provider: 'acme' needs a package that is not installed "
        "(acme_sdk)",)
