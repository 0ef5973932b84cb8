"""Pure memory-candidate generation and the mechanical memory admission checks (Memory
RFC, "Memory admission rules", "Candidate generation and model-free fallback", "Source
changes and incremental evidence").

A *memory candidate* is an entry proposed for a Memory (a :class:`MemoryEntryInput`,
untrusted until the planner validates it); it is not a search candidate (a projection
row a search channel finds). Everything here is a function of persisted Sources and the
current active entry versions: no I/O, no clock. The adapters in
:mod:`powercontext.adapters.candidates` run these functions as plugin-registered
providers and the optional model extractor.

- :mod:`.admission`: :func:`check_memory_admission`, what may not become an entry;
- :mod:`.screening`: :func:`screen_memory_candidates`, the gate every candidate passes;
- :mod:`.parsers`: ``pyproject.toml``, ``Makefile``, ``tox.ini``, ``package.json``;
- providers: :mod:`.contract` (:func:`contract_candidates`), :mod:`.rules`
  (:func:`rule_candidates`), :mod:`.git_changes` (:func:`git_change_candidates`),
  :mod:`.structured` (:func:`structured_candidates`), :mod:`.task_outcomes`
  (:func:`task_outcome_candidates`: one note per session, revised turn by turn);
- :mod:`.user_notes`: rules from a user's notes and prompts, a correction revising the
  rule it certainly replaces (:mod:`powercontext.core.corrections`);
- :mod:`.prompt`: the model extractor's prompt and answer parser;
- :mod:`.results`, :mod:`.sources`: the result shapes and the files read.

Revisions are proposed only when the link to an existing entry is certain; otherwise
the candidate is a new entry (Memory RFC, "remember()").
"""

from __future__ import annotations

from powercontext.core.extraction.admission import check_memory_admission
from powercontext.core.extraction.contract import TOPIC_LABELS, contract_candidates, topic_label
from powercontext.core.extraction.git_changes import git_change_candidates
from powercontext.core.extraction.parsers import (
    MakeTarget,
    parse_makefile,
    parse_package_json,
    parse_pyproject,
    parse_tox,
)
from powercontext.core.extraction.prompt import model_prompt, parse_model_answer
from powercontext.core.extraction.results import Dropped, ExtractionResult, Refusal
from powercontext.core.extraction.rules import MAX_RULES_PER_FILE, classify_rule, rule_candidates
from powercontext.core.extraction.screening import screen_memory_candidates
from powercontext.core.extraction.sources import (
    BOOTSTRAP_FILES,
    CONTRACT_FILES,
    README_FILES,
    RULE_FILES,
    source_path,
)
from powercontext.core.extraction.structured import structured_candidates
from powercontext.core.extraction.task_outcomes import (
    MAX_NOTE_SUMMARY,
    task_outcome_candidates,
    trivial_outcome,
)

__all__ = [
    "BOOTSTRAP_FILES",
    "CONTRACT_FILES",
    "MAX_NOTE_SUMMARY",
    "MAX_RULES_PER_FILE",
    "README_FILES",
    "RULE_FILES",
    "TOPIC_LABELS",
    "Dropped",
    "ExtractionResult",
    "MakeTarget",
    "Refusal",
    "check_memory_admission",
    "classify_rule",
    "contract_candidates",
    "git_change_candidates",
    "model_prompt",
    "parse_makefile",
    "parse_model_answer",
    "parse_package_json",
    "parse_pyproject",
    "parse_tox",
    "rule_candidates",
    "screen_memory_candidates",
    "source_path",
    "structured_candidates",
    "task_outcome_candidates",
    "topic_label",
    "trivial_outcome",
]
