"""The candidates plugin: registers the built-in candidate providers by name through the
same hook a third-party plugin implements (ARCHITECTURE.md, "Plugins"; Memory RFC,
"Candidate generation and model-free fallback"). The providers are the classes of
:mod:`powercontext.adapters.candidates.providers` (its docstring says what each reads);
each factory takes keyword options and imports that module only when called.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from powercontext.plugins.hookspecs import RegisterCandidateProvider, hookimpl

if TYPE_CHECKING:
    from powercontext.adapters.candidates import providers as P

__all__ = [
    "contract",
    "git",
    "model",
    "powercontext_register_candidate_providers",
    "rules",
    "structured",
    "task_outcome",
]


def contract(**options: Any) -> P.ContractProvider:
    """``ContractProvider(**options)``."""
    from powercontext.adapters.candidates.providers import ContractProvider

    return ContractProvider(**options)


def rules(**options: Any) -> P.RuleProvider:
    """``RuleProvider(**options)``."""
    from powercontext.adapters.candidates.providers import RuleProvider

    return RuleProvider(**options)


def git(**options: Any) -> P.GitChangeProvider:
    """``GitChangeProvider(**options)``."""
    from powercontext.adapters.candidates.providers import GitChangeProvider

    return GitChangeProvider(**options)


def structured(**options: Any) -> P.StructuredProvider:
    """``StructuredProvider(**options)``."""
    from powercontext.adapters.candidates.providers import StructuredProvider

    return StructuredProvider(**options)


def task_outcome(**options: Any) -> P.TaskOutcomeProvider:
    """``TaskOutcomeProvider(**options)``."""
    from powercontext.adapters.candidates.providers import TaskOutcomeProvider

    return TaskOutcomeProvider(**options)


def model(**options: Any) -> P.ModelProvider:
    """``ModelProvider(**options)``: the optional model extractor."""
    from powercontext.adapters.candidates.providers import ModelProvider

    return ModelProvider(**options)


@hookimpl
def powercontext_register_candidate_providers(register: RegisterCandidateProvider) -> None:
    register("contract", contract)
    register("rules", rules)
    register("git", git)
    register("structured", structured)
    register("task_outcome", task_outcome)
    register("model", model)
