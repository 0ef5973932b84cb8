"""The year's Markdown table and PNG plots (``bench/results/year-<stamp>.md``, ``.png``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.plotting import NO_PLOT, pyplot


def _ms(v: Any) -> str:
    return "-" if v is None else f"{v:.1f}"


def rows(result: dict[str, Any]) -> list[tuple[str, str, str, str, str, str]]:
    """(figure, ours p50, ours p95, raw p50, raw p95, note) per measured figure."""
    out: list[tuple[str, str, str, str, str, str]] = []
    for r in result.get("memory_search", []):
        out.append((f"Memory search {r['mode']} ({r['entries']:,} entries)",
                    _ms(r["ours_p50_ms"]), _ms(r["ours_p95_ms"]), _ms(r["raw_p50_ms"]),
                    _ms(r["raw_p95_ms"]), f"same hits {_check(r)}"))
    t = result.get("topic_search")
    if t:
        out.append((f"Topic search {t['shape']} (Scope of {t.get('scope_topics') or '?'} "
                    f"Topics)", _ms(t["ours_p50_ms"]), _ms(t["ours_p95_ms"]),
                    _ms(t["raw_p50_ms"]), _ms(t["raw_p95_ms"]), f"same hits {_check(t)}"))
    p = result.get("prepare")
    if p:
        out.append(("context/prepare (in process)", _ms(p["p50_ms"]), _ms(p["p95_ms"]), "-",
                    "-", f"CPU p95 {p['cpu_p95_ms']:.1f}; {p['mean_items']} items"))
    for label, h in (result.get("hooks") or {}).items():
        out.append((f"prompt hook, {label}", _ms(h["p50_ms"]), _ms(h["p95_ms"]), "-", "-",
                    f"CPU p95 {h['cpu_p95_ms']:.0f}; injected {h['injected']}/{h['n']}"))
    f = result.get("flush")
    if f:
        out.append(("flush to first searchable Topic", _ms(f["wall_ms"]), "-", "-", "-",
                    f"CPU {f['cpu_ms']:.0f} ms; {f['turns']} new turns; found {f['found']}"))
    return out


def _size(size: dict[str, Any]) -> str:
    if size.get("bytes"):
        return f"{size['bytes'] / 1e6:.1f} MB"
    return f"size not measured ({size.get('note', 'no figure')})"


def _check(r: dict[str, Any]) -> str:
    c = r.get("check") or {}
    if "queries" in c:
        return f"{c['queries'] - c.get('mismatches', 0)}/{c['queries']}"
    return str(c.get("same", "?"))


def markdown(result: dict[str, Any]) -> str:
    b = result["built"]
    st = b["stages"]
    lines = [f"`{result['command']}`", "",
             f"{result['date']}, backend {b['backend']}, scale {b['scale']} (Memories "
             f"{b.get('memory_scale') or b['scale']}), seed {b['seed']}, "
             f"built at commit {b['commit']}; load average {result['load']}", "",
             "| built | count | wall s | CPU s | per wall second | per CPU second |",
             "|---|---:|---:|---:|---:|---:|"]
    for name, unit in (("memories", "entries"), ("sources", "turns"),
                       ("processing", "turns processed")):
        s = st[name]
        rate = s["count"] / s["wall_s"] if s["wall_s"] else 0
        cpu_rate = s["count"] / s["cpu_s"] if s["cpu_s"] else 0
        lines.append(f"| {name} ({unit}) | {s['count']:,} | {s['wall_s']:.1f} | "
                     f"{s['cpu_s']:.1f} | {rate:.1f} | {cpu_rate:.1f} |")
    lines += ["", f"{len(b['repos'])} Memories ({min(b['entries']):,} to {max(b['entries']):,} "
              f"entries), {b['sources_per_scope'] * len(b['repos']):,} turns in "
              f"{len(b['repos'])} Scopes, {b['topics']:,} Topics ({b['revisions']:,} "
              f"Revisions, {b['windows']:,} Windows); database {_size(result['size'])}; "
              f"peak RSS build {b['maxrss_mb']:.0f} MB, "
              f"measure {result['maxrss_mb']:.0f} MB",
              "", "| figure | ours p50 ms | ours p95 ms | raw p50 ms | raw p95 ms | note |",
              "|---|---:|---:|---:|---:|---|"]
    lines += [f"| {' | '.join(r)} |" for r in rows(result)]
    lines += [""] + [f"- {n}" for n in result.get("notes", [])]
    return "\n".join(lines) + "\n"


def plots(result: dict[str, Any], prefix: Path) -> list[str]:
    """Ours against raw (p95) per figure, and the processing per Scope (turns per
    second); [] and a note without matplotlib."""
    plt = pyplot()
    if plt is None:
        result["notes"].append(NO_PLOT)
        return []
    fig, (a, b) = plt.subplots(1, 2, figsize=(13, 4.5))
    table = [r for r in rows(result) if r[2] != "-"]
    names = [r[0] for r in table]
    ours = [float(r[2]) for r in table]
    raw = [float(r[4]) if r[4] != "-" else 0.0 for r in table]
    ys = range(len(names))
    a.barh([y + 0.2 for y in ys], ours, height=0.4, label="ours p95")
    a.barh([y - 0.2 for y in ys], raw, height=0.4, label="raw p95")
    a.set_yticks(list(ys), names, fontsize=7)
    a.set_xscale("log")
    a.set_xlabel("ms (log)")
    a.legend()
    proc = result["built"].get("processing") or []
    if proc:
        b.bar(range(1, len(proc) + 1), [p[0] / p[4] if p[4] else 0 for p in proc])
        b.set_xlabel("Scope (processed in this order)")
        b.set_ylabel("turns per second (wall)")
    fig.suptitle(f"bench year: {result['built']['backend']}, scale {result['built']['scale']}")
    fig.tight_layout()
    path = f"{prefix}.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return [path]
