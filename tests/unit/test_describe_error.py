"""core.errors.describe_error: what an error may say in a log or a stored attempt error
(Topic Memory RFC, "Retry and observability": never Source text, prompts or output)."""

from __future__ import annotations

import pytest

from powercontext.adapters.topic_generation.deterministic import DeterministicTopicModel
from powercontext.core.errors import (
    BackendError,
    InvalidInputError,
    TopicProcessingError,
    describe_error,
    is_own_component,
)

CANARY = "CANARY-7f3a the user's private note"


class PluginModel:
    """A provider from outside the package (a plugin)."""


def test_own_errors_keep_their_message() -> None:
    err = InvalidInputError("window_limit", "must be >= 1")
    assert describe_error(err) == str(err)
    own = DeterministicTopicModel()
    assert is_own_component(own)
    assert describe_error(BackendError("HTTP 429"), own) == "HTTP 429"


@pytest.mark.parametrize("exc", [
    RuntimeError(CANARY),
    ValueError(f"bad input {CANARY!r}"),
])
def test_foreign_exceptions_are_named_by_type(exc: Exception) -> None:
    assert describe_error(exc) == type(exc).__name__
    assert describe_error(exc, DeterministicTopicModel()) == type(exc).__name__


def test_a_plugins_powercontext_error_is_named_by_type() -> None:
    # the failing input of the chaos canary test: a plugin provider raising BackendError
    # with its request quoted; `topic process` printed it before
    plugin = PluginModel()
    assert not is_own_component(plugin)
    assert describe_error(BackendError(f"request was {CANARY}"), plugin) == "BackendError"
    refused = TopicProcessingError("model_refused", f"refused {CANARY}")
    assert describe_error(refused, plugin) == "TopicProcessingError (model_refused)"
