"""Property: any settings table is either accepted (only admitted keys, each value in
range) or refused with one problem per offending key, naming it (Topic Memory RFC,
"Cumulative work and evidence ceilings")."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from powercontext.core.topic.provider_policy import (
    SERVICE_TIERS,
    allowed_generation_settings,
    check_embedding_policy,
    check_generation_policy,
)

KNOWN = ("anthropic", "deterministic", "openai", "acme")
CONTEXT = 10_000

keys = st.sampled_from([
    "temperature", "top_p", "seed", "max_output_tokens", "timeout_seconds",
    "service_tier", "store", "extra_body", "extra_headers", "previous_response_id",
    "conversation", "background", "tools", "tool_choice", "stream", "dimensions",
    "truncate", "logprobs", "",
]) | st.text(max_size=12)
values = (st.none() | st.booleans() | st.integers(-5, 20_000)
          | st.floats(allow_nan=True, allow_infinity=True)
          | st.sampled_from(["auto", "default", "flex", "priority", "scale",
                             "standard_only", "start", "end", "none", "x"])
          | st.lists(st.integers(), max_size=2))


def _shown(key: str) -> str:
    return key if key.isprintable() else repr(key)


def _named(problems: tuple[str, ...], offenders: set[str]) -> None:
    """One problem per offender, in the policy's key order, each starting with its name."""
    expected = sorted(offenders, key=repr)
    assert len(problems) == len(expected)
    for problem, key in zip(problems, expected, strict=True):
        assert problem.startswith(f"{_shown(key)}: ")


def _in_range(provider: str, key: str, value: object) -> bool:
    def num(lo: float, hi: float) -> bool:
        return (not isinstance(value, bool) and isinstance(value, int | float)
                and math.isfinite(value) and lo <= value <= hi)

    def whole(lo: int, hi: int) -> bool:
        return not isinstance(value, bool) and isinstance(value, int) and lo <= value <= hi

    return {
        "temperature": lambda: num(0, 2), "top_p": lambda: num(0, 1),
        "seed": lambda: whole(0, 2**53), "max_output_tokens": lambda: whole(1, CONTEXT),
        "timeout_seconds": lambda: num(1, 3600),
        "service_tier": lambda: value in SERVICE_TIERS.get(provider, SERVICE_TIERS["openai"])
        and isinstance(value, str),
    }[key]()


@given(st.sampled_from(KNOWN), st.dictionaries(keys, values, max_size=6))
def test_generation_settings_are_accepted_or_each_offender_named(provider, settings):
    problems = check_generation_policy(provider, settings, known_providers=KNOWN,
                                       context_window_tokens=CONTEXT)
    allowed = allowed_generation_settings(provider)
    offenders = {k for k, v in settings.items()
                 if k not in allowed or not _in_range(provider, k, v)}
    _named(problems, offenders)
    if not problems:
        assert set(settings) <= allowed


@given(st.dictionaries(keys, values, max_size=6))
def test_embedding_settings_are_accepted_or_each_offender_named(settings):
    problems = check_embedding_policy(settings)

    def ok(k: str, v: object) -> bool:
        if k == "dimensions":
            return not isinstance(v, bool) and isinstance(v, int) and 1 <= v <= 4096
        if k == "truncate":
            return isinstance(v, bool) or v in ("none", "start", "end")
        return False

    offenders = {k for k, v in settings.items() if not ok(k, v)}
    _named(problems, offenders)
