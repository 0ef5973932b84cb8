"""Coding-agent hooks: ``powercontext hook claude-code`` and ``powercontext hook codex``
(Memory RFC, "Coding Agent scenario", "Task events and extraction boundaries").

Claude Code runs ``powercontext hook claude-code`` once per event with the hook JSON on
stdin:

- ``UserPromptSubmit`` (``session_id``, ``transcript_path``, ``cwd``, ``prompt``): the
  repository Memory the database's key ``repo:<git top level of cwd>`` names is
  searched with bounded queries built from the prompt and the vocabulary of its
  development-task intents (:func:`prompt_queries`, :func:`intent_queries`, fused by
  RRF), only what passes the relevance bar is kept, rules first with at most
  :data:`MAX_NOTES` working_notes (``hook_prompt``, :mod:`powercontext.core.recall`),
  and the hits are printed as
  ``{"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": ...}}``,
  marked untrusted and below system and developer policy, inside a fence that stored
  text cannot close (:func:`render_context`); up to 3 Topics of the repository's Scope
  ``repo:<path>`` follow the entries (``hook_prompt.prompt_topics``, through
  ``prepare_context``, held to the same bar; ``--no-topics`` leaves them out). No hit:
  no output. With ``--json`` each injected item's receipt (channel, rank, matched
  intents and terms) is printed beside the answer; it is always logged. By default the
  prompt is embedded only when that is cheap (never with torch).
- ``Stop`` (``session_id``, ``transcript_path``, ``cwd``, ``stop_hook_active``, and in
  newer versions ``last_assistant_message``): the turn's outcome (the last assistant
  message, from the payload or the transcript JSONL) is persisted as a ``task_outcome``
  Source, its secrets redacted first (``[REDACTED:github-token]``); when a candidate
  pipeline is configured, the repository has a Memory (or ``--create-memory`` /
  ``$POWERCONTEXT_HOOK_CREATE=1``) and the outcome is not :func:`trivial_outcome`,
  ``remember(mode="extract")`` runs on it. The turn itself (the user prompt and the
  final reply, bounded, secrets redacted) is added to the repository's Scope
  ``repo:<path>`` as one ``conversation`` Source, so Topics grow from real work
  (``hook_turn``; one Source per turn).

Codex runs its ``notify`` program with one JSON argument; ``powercontext hook codex``
handles ``agent-turn-complete`` (``thread-id``, ``turn-id``, ``cwd``, ``input-messages``,
``last-assistant-message``) like a Stop.

Every payload is bounded and sanitised at the boundary, before any work
(``hook_payload.load_payload``): stdin is cut while it is read (a string keeps its first
512 KiB and last 256 KiB, nesting deeper than 64 is refused cleanly), every text is then
clipped to 32 Ki characters around a marker (a 50 MB reply is one pass over its bytes,
not a minute of secret scanning), and :func:`sanitize` makes lone UTF-16 surrogates
U+FFFD, keys too (invalid UTF-8 on stdin too), so odd text never loses a turn.
A hook never breaks the agent: any failure prints one line on stderr, is logged to
``<data dir>/logs/hooks.log`` (a bounded, rotated log: ``hook_log``; input the boundary
refuses in one line, without a traceback) and exits 0. Start-up stays small: nothing
beyond click is imported until an event needs it (a database that does not exist is
never created).

This module holds the click commands and the guard; the parts live beside it:
``hook_payload`` (the payload boundary, transcripts), ``hook_fence`` (the memory
fence), ``hook_prompt`` (prompt queries, searches and slots), ``hook_outcome`` (the
turn's outcome) and ``hook_turn`` (the turn as a conversation Source). Their public
names are re-exported here.
"""

from __future__ import annotations

import atexit
import gc
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from powercontext.entrypoints.cli.context import LazyGroup
from powercontext.entrypoints.cli.hook_fence import MAX_CONTEXT_CHARS, defang, render_context
from powercontext.entrypoints.cli.hook_outcome import (
    ENV_HOOK_CREATE,
    MAX_OUTCOME_CHARS,
    record_outcome,
    trivial_outcome,
)
from powercontext.entrypoints.cli.hook_payload import (
    HookInputError,
    clean_text,
    clip_text,
    event_cwd,
    extract_transcript_turn,
    hook_output,
    load_payload,
    repo_key,
    repo_root,
    sanitize,
    transcript_turn,
)
from powercontext.entrypoints.cli.hook_prompt import (
    MAX_HOOK_QUERIES,
    MAX_HOOK_QUERY_TERMS,
    MAX_NOTES,
    PROMPT_REMOTE_TIMEOUT_S,
    intent_queries,
    prompt_context,
    prompt_queries,
)

__all__ = [
    "MAX_CONTEXT_CHARS",
    "MAX_HOOK_QUERIES",
    "MAX_HOOK_QUERY_TERMS",
    "MAX_NOTES",
    "MAX_OUTCOME_CHARS",
    "defang",
    "extract_transcript_turn",
    "hook",
    "intent_queries",
    "prompt_queries",
    "render_context",
    "repo_key",
    "repo_root",
    "sanitize",
    "trivial_outcome",
]


def _log_failure(event: str, exc: BaseException) -> str | None:
    """Log the failure with its traceback to the hooks' bounded log
    (:mod:`~powercontext.entrypoints.cli.hook_log`; input the boundary refused,
    :class:`HookInputError`, in one line without one); its path, or None."""
    from powercontext.entrypoints.cli.hook_log import log_failure, log_refused

    if isinstance(exc, HookInputError):
        return log_refused(event, clean_text(str(exc)))
    return log_failure(event, exc)


def _guard(event: str, fn: Callable[[], None],
           fallback: str | Callable[[], str] = "") -> None:
    """Run ``fn``; on any error print one line on stderr, log it, and exit 0.

    The cyclic garbage collector is off while ``fn`` runs, and restored after: a hook
    handles one event (bounded allocations) in a short process, and the collections its
    imports would set off only trace long-lived module objects. At the process's exit
    everything still alive is frozen (:func:`gc.freeze`), so the interpreter's last
    collections skip it (50-100 ms of the prompt hook's ~400 before, issue 14); objects
    are still freed by reference counting, and a hook leaves no open file in a cycle."""
    atexit.unregister(gc.freeze)  # once per process, however many hooks ran in it
    atexit.register(gc.freeze)
    enabled = gc.isenabled()
    gc.disable()
    try:
        fn()
    except Exception as exc:  # a hook must never break the agent
        where = _log_failure(event, exc)
        msg = clean_text(f"powercontext hook {event}: {type(exc).__name__}: {exc}")
        click.echo(msg + (f" (logged to {where})" if where else ""), err=True)
        answer = fallback() if callable(fallback) else fallback
        if answer:  # a host that parses stdout as JSON gets its neutral answer
            click.echo(answer)
        sys.exit(0)
    finally:
        if enabled:
            gc.enable()


def _ctx(obj: Any) -> Any:
    if obj is None or not hasattr(obj, "service"):
        raise RuntimeError("run as `powercontext hook ...` (the CLI group sets up the database)")
    return obj


def _run(coro: Any) -> Any:
    import asyncio

    return asyncio.run(coro)


def _emit(data: Any) -> None:
    click.echo(hook_output(data), nl=False)



# --------------------------------------------------------------------------- commands


@click.group(cls=LazyGroup, lazy={
    "gemini": "hosts.gemini:hook", "cursor": "hosts.cursor:hook",
    "opencode": "hosts.opencode:hook"})
def hook() -> None:
    """Hooks for coding agents (Claude Code, Codex, Gemini CLI, Cursor, OpenCode). They
    always exit 0; `powercontext setup AGENT` writes each agent's configuration.

    \b
    Claude Code (.claude/settings.json): UserPromptSubmit and Stop run
        powercontext hook claude-code
    Codex (~/.codex/config.toml):
        notify = ["powercontext", "hook", "codex"]
    Gemini CLI (.gemini/settings.json): BeforeAgent and AfterAgent run
        powercontext hook gemini
    Cursor (.cursor/hooks.json): beforeSubmitPrompt, afterAgentResponse, stop run
        powercontext hook cursor
    OpenCode (.opencode/plugins/powercontext.js): the plugin runs
        powercontext hook opencode
    Faster prompts (optional, one per database, in its own terminal):
        powercontext hook daemon
    """


@hook.command("claude-code")
@click.option("--limit", "-n", default=5, show_default=True, type=click.IntRange(1, 50),
              help="At most this many entries are added to a prompt.")
@click.option("--mode", default="auto", show_default=True,
              type=click.Choice(["auto", "fts", "vector", "hybrid"]),
              help="Search mode for prompts. auto: full text, plus vectors only when the "
                   "model is cheap (deterministic, or a remote model with a timeout of at "
                   f"most {PROMPT_REMOTE_TIMEOUT_S:g} s); never loads torch. hybrid/vector "
                   "always embed the prompt.")
@click.option("--topics/--no-topics", default=True, show_default=True,
              help="On a prompt, also add up to 3 Topics of the repository's Scope "
                   "(repo:<path>) after the Memory entries.")
@click.option("--extract/--no-extract", default=True, show_default=True,
              help="On Stop, run the candidate pipeline (else only store the Source).")
@click.option("--create-memory", is_flag=True, envvar=ENV_HOOK_CREATE,
              help="On Stop, create a Memory for a repository that has none "
                   f"(also ${ENV_HOOK_CREATE}=1; default: only bootstrapped repositories).")
@click.pass_obj
def claude_code(obj: Any, limit: int, mode: str, topics: bool, extract: bool,
                create_memory: bool) -> None:
    """Handle one Claude Code hook event (JSON on stdin).

    UserPromptSubmit prints the matching memory (and Topics of the repository's
    Scope) as untrusted additionalContext; Stop stores the turn's outcome as a
    task_outcome Source, adds the turn to the repository's Scope as a conversation
    Source and runs the candidate pipeline. Other events are ignored.
    """

    def body() -> None:
        c = _ctx(obj)
        payload = load_payload(None, "hook input")  # bounded at the boundary
        event = payload.get("hook_event_name")
        if event == "UserPromptSubmit":
            _emit(_run(prompt_context(c, payload, limit, mode, topics=topics,
                                      receipts=bool(getattr(c, "as_json", False)))))
        elif event == "Stop":
            answer = payload.get("last_assistant_message")
            request = turn_id = ""
            transcript = payload.get("transcript_path")
            if isinstance(transcript, str) and transcript:
                from_file, request, turn_id = transcript_turn(transcript)
                if not isinstance(answer, str) or not answer.strip():
                    answer = from_file
            session = str(payload.get("session_id") or "")
            ids = {"event": "Stop", "session_id": session}
            uri = None
            if isinstance(transcript, str) and Path(transcript).is_absolute():
                uri = Path(transcript).as_uri()
            report = _run(record_outcome(
                c, agent="claude-code", cwd=event_cwd(payload),
                answer=(answer or "").strip(), request=request, uri=uri, ids=ids,
                extract=extract, create=create_memory,
                turn={"session": session, "turn": turn_id, "prompt": request}))
            if getattr(c, "as_json", False):
                _emit(report)

    _guard("claude-code", body)


@hook.command("daemon")
@click.option("--verbose", "-v", is_flag=True, help="Print one line per event on stderr.")
@click.option("--load-model", is_flag=True,
              help="Load the database's embedding model before listening, so the first "
                   "--mode hybrid/vector prompt does not wait for it (the model is kept "
                   "either way once a prompt has used it).")
@click.pass_obj
def daemon(obj: Any, verbose: bool, load_model: bool) -> None:
    """Answer the prompt hook of this database from one resident process.

    Runs in the foreground until Ctrl-C or SIGTERM, listening on a Unix socket beside
    the SQLite database (DB-hook.sock, mode 0600). While it runs, `powercontext hook
    claude-code` hands each UserPromptSubmit event to it instead of importing the
    library (about 300 ms per prompt); it prints the same context, and every other
    event, option, environment or failure runs in-process as before.
    The embedding model is built once and kept, so `--mode hybrid` prompts with the
    local model answer in a fraction of a second after the first.
    POWERCONTEXT_HOOK_DAEMON=0 turns the hand-over off.
    """
    from powercontext.entrypoints.cli.hook_daemon_server import run_daemon

    run_daemon(_ctx(obj), verbose, load_model)


@hook.command("codex")
@click.argument("payload", required=False)
@click.option("--extract/--no-extract", default=True, show_default=True,
              help="Run the candidate pipeline (else only store the Source).")
@click.option("--create-memory", is_flag=True, envvar=ENV_HOOK_CREATE,
              help="Create a Memory for a repository that has none "
                   f"(also ${ENV_HOOK_CREATE}=1; default: only bootstrapped repositories).")
@click.pass_obj
def codex(obj: Any, payload: str | None, extract: bool, create_memory: bool) -> None:
    """Handle one Codex notify event (the JSON argument Codex appends).

    agent-turn-complete stores the turn's outcome as a task_outcome Source, adds the
    turn to the repository's Scope as a conversation Source and runs the candidate
    pipeline; other notification types are ignored.
    """

    def body() -> None:
        c = _ctx(obj)
        if payload is None:
            raise HookInputError("Codex passes the notification as one JSON argument")
        data = load_payload(clean_text(payload), "notification")
        if data.get("type") != "agent-turn-complete":
            return
        answer = data.get("last-assistant-message")
        inputs = data.get("input-messages")
        request = clip_text("\n".join(m for m in inputs if isinstance(m, str))
                            if isinstance(inputs, list) else "")
        ids = {"event": "agent-turn-complete",
               "thread_id": str(data.get("thread-id") or ""),
               "turn_id": str(data.get("turn-id") or "")}
        report = _run(record_outcome(
            c, agent="codex", cwd=data.get("cwd") or os.getcwd(),
            answer=answer.strip() if isinstance(answer, str) else "", request=request.strip(),
            uri=None, ids=ids, extract=extract, create=create_memory,
            turn={"session": ids["thread_id"], "turn": ids["turn_id"],
                  "prompt": request.strip()}))
        if getattr(c, "as_json", False):
            _emit(report)

    _guard("codex", body)
