"""What the hooks of the hosts beyond Claude Code and Codex share (Gemini CLI, Cursor,
OpenCode): the prompt side (:func:`recall`: the repository Memory's matching entries
and Topics, rendered and fenced as the Claude Code prompt hook renders them) and the
turn side (:func:`record`: the turn's outcome as a ``task_outcome`` Source, the turn as
a ``conversation`` Source in the repository's Scope and, when worth it, a session note;
:func:`~powercontext.entrypoints.cli.hook_outcome.record_outcome`), and the options every
such hook takes. Nothing beyond click is imported until an event needs it.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import click

__all__ = ["event_options", "recall", "record", "run", "turn_options"]


def run(coro: Any) -> Any:
    import asyncio

    return asyncio.run(coro)


def ctx(obj: Any) -> Any:
    if obj is None or not hasattr(obj, "service"):
        raise RuntimeError("run as `powercontext hook ...` (the CLI group sets up the database)")
    return obj


def cwd_of(*candidates: Any) -> str:
    """The first non-empty string of ``candidates``, else the current directory."""
    for value in candidates:
        if isinstance(value, str) and value:
            return value
    return os.getcwd()


def recall(c: Any, agent: str, prompt: Any, cwd: str, options: dict[str, Any],
           event: str) -> dict[str, Any] | None:
    """The prompt hook's answer for ``prompt`` in the repository around ``cwd``:
    ``{"hookSpecificOutput": {"hookEventName": event, "additionalContext": ...}}`` (and
    ``receipts`` with ``--json``), or None when nothing passes the relevance bar
    (:func:`~powercontext.entrypoints.cli.hook_prompt.prompt_context`)."""
    from powercontext.entrypoints.cli.hook_prompt import prompt_context

    if not isinstance(prompt, str) or not prompt.strip():
        return None
    return run(prompt_context(c, {"prompt": prompt, "cwd": cwd}, options["limit"],
                              options["mode"], topics=options["topics"],
                              receipts=bool(getattr(c, "as_json", False)), agent=agent,
                              event=event))


def record(c: Any, agent: str, *, cwd: str, prompt: str, reply: str, session: str,
           turn: str, ids: dict[str, str], options: dict[str, Any]) -> dict[str, Any]:
    """Store a finished turn (Memory RFC, "Task events and extraction boundaries"): the
    reply as a ``task_outcome`` Source, the turn as a ``conversation`` Source of the
    repository's Scope (one per turn: ``turn`` names it, else its text does) and, unless
    ``--no-extract`` or the reply is trivial, a session note. Returns the report the
    Stop hook prints with ``--json``."""
    from powercontext.entrypoints.cli.hook_outcome import record_outcome

    return run(record_outcome(
        c, agent=agent, cwd=cwd, answer=reply.strip(), request=prompt.strip(), uri=None,
        ids={k: v for k, v in ids.items() if v}, extract=options["extract"],
        create=options["create_memory"],
        turn={"session": session, "turn": turn, "prompt": prompt.strip()}))


def event_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``--limit``, ``--mode`` and ``--topics`` (the prompt side)."""
    from powercontext.entrypoints.cli.hook_prompt import PROMPT_REMOTE_TIMEOUT_S

    fn = click.option("--topics/--no-topics", default=True, show_default=True,
                      help="On a prompt, also add up to 3 Topics of the repository's Scope "
                           "(repo:<path>) after the Memory entries.")(fn)
    fn = click.option("--mode", default="auto", show_default=True,
                      type=click.Choice(["auto", "fts", "vector", "hybrid"]),
                      help="Search mode for prompts. auto: full text, plus vectors only "
                           "when the model is cheap (deterministic, or remote with a "
                           f"timeout of at most {PROMPT_REMOTE_TIMEOUT_S:g} s).")(fn)
    return click.option("--limit", "-n", default=5, show_default=True,
                        type=click.IntRange(1, 50),
                        help="At most this many entries are added to a prompt.")(fn)


def turn_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``--extract/--no-extract`` and ``--create-memory`` (the turn side)."""
    from powercontext.entrypoints.cli.hook_outcome import ENV_HOOK_CREATE

    fn = click.option("--create-memory", is_flag=True, envvar=ENV_HOOK_CREATE,
                      help="At a turn's end, create a Memory for a repository that has "
                           f"none (also ${ENV_HOOK_CREATE}=1; default: only bootstrapped "
                           "repositories).")(fn)
    return click.option("--extract/--no-extract", default=True, show_default=True,
                        help="At a turn's end, run the candidate pipeline (else only store "
                             "the Sources).")(fn)
