"""``powercontext topic unblock`` and ``topic decisions``: operator decisions at a
terminal frontier (Topic Memory RFC, "Retry and observability": terminal input or
repeated failures require deliberate operator remediation;
:mod:`powercontext.core.topic.operator`), and the blocked lines of ``topic status``.

``topic unblock --scope S --skip POSITION --by WHO --reason WHY`` passes over the
Source processing stops at (the Cursor moves to it; no Topic for it); ``--grant
FRONTIER`` gives the Window after Cursor FRONTIER one fresh allowance. Each is recorded
with who and why as an audit row in the same transaction, and the Scope is flushed so
processing resumes. ``topic decisions --scope S`` lists the audit rows. Registered on
the ``topic`` group by :mod:`powercontext.entrypoints.cli.topic`.
"""

from __future__ import annotations

from typing import Any

import click

from powercontext.entrypoints.cli.context import Ctx, pass_ctx

__all__ = ["blocked_lines", "decisions", "unblock"]


def blocked_lines(blocked: Any) -> list[str]:
    """The human lines of each BlockedFrontier: where and why the Scope stops, then the
    commands that unblock it."""
    lines = []
    for b in blocked:
        where = ("a Source no longer journaled" if b.position is None else
                 f"Source #{b.position} {b.source_id}" + (f" ({b.uri})" if b.uri else ""))
        lines.append(f"blocked: {b.scope_id} stops at {where}: {b.failure_code}: {b.reason}")
        lines.extend(f"  to go on: {cmd}" for cmd in b.commands)
    return lines


@click.command("unblock")
@click.option("--scope", "-s", "scope_id", required=True, metavar="SCOPE",
              help="The Scope stopped at a terminal frontier.")
@click.option("--skip", "skip", type=int, metavar="POSITION",
              help="Pass over the Source at this position (the one `topic status` says "
                   "processing stops at): the Cursor moves to it, no Topic is made of it.")
@click.option("--grant", "grant", type=int, metavar="FRONTIER",
              help="Give the Window after Cursor FRONTIER (the Cursor the Scope is "
                   "stopped at) one fresh allowance: 3 attempts, 512 requests, "
                   "64,000,000 tokens.")
@click.option("--by", "decided_by", required=True, metavar="WHO",
              help="Who decides (recorded; 1-128 characters).")
@click.option("--reason", required=True, metavar="WHY",
              help="Why (recorded; 1-2000 characters).")
@pass_ctx
def unblock(c: Ctx, scope_id: str, skip: int | None, grant: int | None, decided_by: str,
            reason: str) -> None:
    """Unblock a Scope stopped at a terminal frontier, on purpose (recorded).

    A Scope stops for good at a Source over a complexity ceiling
    (source_complexity_limit) or after its Window used up its allowance
    (window_attempt_limit, window_provider_budget_exceeded); flushes and restarts never
    change that. `topic status` names the Source and prints the commands. --skip passes
    over that Source; --grant gives the frontier one fresh allowance (not for a Source
    over a ceiling). The decision, who and why are stored as an audit row with its
    effect, and the Scope is flushed so processing resumes. --json prints the decision.

    \b
    powercontext topic unblock --scope repo:/x --skip 12 --by alice \\
        --reason "a 6 MB log pasted by mistake"
    powercontext topic unblock --scope repo:/x --grant 40 --by alice \\
        --reason "the provider was down; retried once"
    """
    from powercontext.entrypoints.cli.topic_run import run_topic as _run

    if (skip is None) == (grant is None):
        raise click.UsageError("give one of --skip POSITION or --grant FRONTIER")

    async def body(svc: Any) -> None:
        from powercontext.topic_shapes import processing_json

        if skip is not None:
            (st,) = await svc.status(scope_id)
            decision = await svc.unblock(scope_id, "skip", frontier=st.cursor,
                                         position=skip, decided_by=decided_by,
                                         reason=reason)
        else:
            decision = await svc.unblock(scope_id, "grant", frontier=grant,
                                         decided_by=decided_by, reason=reason)

        def human() -> None:
            d = decision
            if d.action == "skip":
                click.echo(f"skipped Source #{d.position} {d.source_id} of {d.scope_id} "
                           f"({d.failure_code}): the Cursor is at {d.position}")
            else:
                click.echo(f"granted one fresh allowance to {d.scope_id} after Cursor "
                           f"{d.source_after} ({d.failure_code}: {d.attempt_count} "
                           f"attempts, {d.reserved_requests} requests were spent)")
            click.echo(f"decision {d.decision_id} by {d.decided_by} at {d.decided_at}; "
                       f"processing resumes (the Scope is flushed)", err=True)

        c.emit({"decision": processing_json(decision)}, human)

    _run(c, body)


@click.command("decisions")
@click.option("--scope", "-s", "scope_id", required=True, metavar="SCOPE",
              help="The Scope whose operator decisions to list.")
@click.option("--limit", "-n", type=click.IntRange(1, 200), default=20, show_default=True)
@pass_ctx
def decisions(c: Ctx, scope_id: str, limit: int) -> None:
    """Read only: the operator decisions of a Scope (skip, grant), newest first, with
    who, why, when and the allowance the frontier had spent. --json prints
    {scope_id, decisions: [...]}."""
    from powercontext.entrypoints.cli.topic_run import run_topic as _run

    async def body(svc: Any) -> None:
        from powercontext.topic_shapes import processing_json

        rows = await svc.operator_decisions(scope_id, limit)

        def human() -> None:
            if not rows:
                click.echo(f"No operator decision for {scope_id}.")
            for d in rows:
                what = (f"skip #{d.position} {d.source_id}" if d.action == "skip"
                        else f"grant after Cursor {d.source_after}")
                click.echo(f"{d.decided_at}  {what}  {d.failure_code}  by {d.decided_by}: "
                           f"{d.reason}")

        c.emit({"scope_id": scope_id, "decisions": [processing_json(d) for d in rows]},
               human)

    _run(c, body)
