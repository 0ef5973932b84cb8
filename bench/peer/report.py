"""The peer benchmark's report: the table of ratios ours / peer, its Markdown and the PNG.

A ratio row is ``{"figure", "entries", "unit", "ours", "peer", "ratio", "better",
"n_ours", "n_peer"}``: ``ratio`` = ours / peer (None when either side is missing or the
peer's figure is 0), ``better`` = ``"ours"``, ``"peer"`` or ``"same"`` (lower is better
for times and sizes, higher for recall; within 2% is ``"same"``), ``"-"`` when a side
did not run. Pure functions over the JSON report (:func:`bench.peer.run`), so they are
unit-tested without either library running.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.plotting import pyplot

#: (figure, row path, unit, lower is better) of each perf figure, in table order.
PERF_FIGURES: tuple[tuple[str, tuple[str, str | None], str, bool], ...] = (
    ("remember +1 p50", ("remember_1", "p50_ms"), "ms", True),
    ("remember +1 p95", ("remember_1", "p95_ms"), "ms", True),
    ("remember +100 p50", ("remember_100", "p50_ms"), "ms", True),
    ("remember +100 p95", ("remember_100", "p95_ms"), "ms", True),
    ("forget 1 p50", ("forget_1", "p50_ms"), "ms", True),
    ("forget 1 p95", ("forget_1", "p95_ms"), "ms", True),
    ("fts search p50", ("search_fts", "p50_ms"), "ms", True),
    ("fts search p95", ("search_fts", "p95_ms"), "ms", True),
    ("fts hits per query", ("search_fts", "mean_hits_warm"), "hits", False),
    ("database size", ("db_bytes", None), "MB", True),
    ("load (batches of 100)", ("load_entries_per_s", None), "entries/s", False),
)
KS = (5, 10, 25)
SAME = 0.02


def _value(row: dict[str, Any] | None, path: tuple[str, str | None]) -> tuple[Any, Any]:
    """(value, n) of one figure of a perf row; (None, 0) when absent."""
    if row is None:
        return None, 0
    outer, inner = path
    got = row.get(outer)
    if inner is None:
        return got, 1 if got is not None else 0
    if not isinstance(got, dict):
        return None, 0
    return got.get(inner), got.get("n", 1)


def _row(figure: str, entries: int | None, unit: str, ours: Any, peer: Any,
         lower_better: bool, n_ours: Any, n_peer: Any) -> dict[str, Any]:
    ratio = None
    better = "-"
    if ours is not None and peer is not None:
        if peer:
            ratio = round(ours / peer, 3)
        if abs(ours - peer) <= SAME * max(abs(ours), abs(peer)):
            better = "same"
        else:
            better = "ours" if (ours < peer) == lower_better else "peer"
    return {"figure": figure, "entries": entries, "unit": unit, "ours": ours, "peer": peer,
            "ratio": ratio, "better": better, "n_ours": n_ours, "n_peer": n_peer}


def ratios(report: dict[str, Any]) -> list[dict[str, Any]]:
    """The ratio rows of ``report`` (its ``perf`` and ``locomo`` parts; a side that did
    not run gives rows with None for it)."""
    rows: list[dict[str, Any]] = []
    perf = report.get("perf", {})
    ours = {r["entries"]: r for r in perf.get("ours", [])}
    peer = {r["entries"]: r for r in perf.get("peer", [])}
    for figure, path, unit, lower in PERF_FIGURES:
        for size in sorted(set(ours) | set(peer)):
            a, na = _value(ours.get(size), path)
            b, nb = _value(peer.get(size), path)
            if unit == "MB":
                a = None if a is None else round(a / 1e6, 3)
                b = None if b is None else round(b / 1e6, 3)
            rows.append(_row(figure, size, unit, a, b, lower, na, nb))
    loc = report.get("locomo", {})
    for k in KS:
        a = (loc.get("ours") or {}).get("overall", {}).get(f"r@{k}")
        b = (loc.get("peer") or {}).get("overall", {}).get(f"r@{k}")
        n_a = (loc.get("ours") or {}).get("overall", {}).get("n", 0)
        n_b = (loc.get("peer") or {}).get("overall", {}).get("n", 0)
        rows.append(_row(f"LoCoMo dev fts recall@{k}", None, "%", a, b, False, n_a, n_b))
    return rows


def _fmt(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.3f}" if abs(v) < 10 else f"{v:.1f}"
    return str(v)


def markdown(report: dict[str, Any]) -> str:
    """The ratio table (Markdown), then the notes."""
    lines = ["| figure | entries | unit | ours | peer | ours / peer | better | n ours | n peer |",
             "|---|---:|---|---:|---:|---:|---|---:|---:|"]
    for r in report.get("ratios") or ratios(report):
        lines.append(
            f"| {r['figure']} | {_fmt(r['entries'])} | {r['unit']} | {_fmt(r['ours'])} | "
            f"{_fmt(r['peer'])} | {_fmt(r['ratio'])} | {r['better']} | {_fmt(r['n_ours'])} | "
            f"{_fmt(r['n_peer'])} |"
        )
    notes = report.get("notes") or []
    if notes:
        lines += ["", *(f"- {n}" for n in notes)]
    return "\n".join(lines)


def _series(rows: Sequence[dict[str, Any]], path: tuple[str, str | None]) -> tuple[list, list]:
    pts = [(r["entries"], _value(r, path)[0]) for r in sorted(rows, key=lambda r: r["entries"])]
    pts = [(x, y) for x, y in pts if y is not None]
    return [x for x, _ in pts], [y for _, y in pts]


def _legend(ax: Any, fontsize: int) -> None:
    """A legend when the axes has labelled curves (a side that did not run has none)."""
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=fontsize)


def _ratio_bars(ax: Any, rows: Sequence[dict[str, Any]]) -> None:
    """Horizontal bars of ours / peer per figure and size (rows with a ratio)."""
    rows = [r for r in rows if r["ratio"] and r["figure"] != "fts hits per query"]
    labels = [r["figure"] + (f" @{r['entries']}" if r["entries"] else "") for r in rows]
    colors = ["C2" if r["better"] == "ours" else "C3" if r["better"] == "peer" else "C7"
              for r in rows]
    values = [r["ratio"] for r in rows]
    ax.barh(range(len(rows)), [v - 1.0 for v in values], left=1.0, color=colors)
    for y, v in enumerate(values):
        ax.annotate(f"{v:.2f}", (v, y), fontsize=6, va="center",
                    ha="left" if v >= 1 else "right")
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels(labels, fontsize=7)
    ax.invert_yaxis()
    ax.set_xscale("log")
    span = max([abs(math.log10(v)) for v in values] + [0.1]) * 1.25
    ax.set_xlim(10 ** -span, 10 ** span)
    from matplotlib.ticker import NullFormatter, ScalarFormatter

    ax.xaxis.set_major_formatter(ScalarFormatter())
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.axvline(1.0, color="black", linewidth=0.8)
    ax.set_title("ours / peer (green: ours better, red: peer better)", fontsize=9)
    ax.grid(True, axis="x", which="both", alpha=0.3)


def plot(report: dict[str, Any], path: Path) -> bool:
    """PNG: latency against size (ours solid, peer dashed), database bytes per entry,
    LoCoMo fts recall against k, and the ratio ours / peer of each figure (log scale).
    False (nothing written) without matplotlib."""
    plt = pyplot()
    if plt is None:
        return False
    fig, (lat, size, rec, rat) = plt.subplots(
        1, 4, figsize=(21, 4.8), gridspec_kw={"width_ratios": [1.2, 1, 1, 1.4]}
    )
    perf = report.get("perf", {})
    curves = (("remember +1 p50", ("remember_1", "p50_ms")),
              ("remember +100 p50", ("remember_100", "p50_ms")),
              ("forget 1 p50", ("forget_1", "p50_ms")),
              ("fts p50", ("search_fts", "p50_ms")), ("fts p95", ("search_fts", "p95_ms")))
    for i, (label, fpath) in enumerate(curves):
        for side, style in (("ours", "-"), ("peer", "--")):
            xs, ys = _series(perf.get(side, []), fpath)
            if xs:
                lat.plot(xs, ys, linestyle=style, marker="o" if side == "ours" else "x",
                         color=f"C{i}", label=f"{side} {label}")
    lat.set_xscale("log")
    lat.set_yscale("log")
    lat.set_xlabel("entries in the Memory")
    lat.set_ylabel("ms")
    lat.set_title("latency against size (ours solid, peer dashed)")
    lat.grid(True, which="both", alpha=0.3)
    _legend(lat, 7)
    for side, style in (("ours", "-"), ("peer", "--")):
        xs, ys = _series(perf.get(side, []), ("bytes_per_entry", None))
        if xs:
            size.plot(xs, ys, linestyle=style, marker="o", label=side)
    size.set_xscale("log")
    size.set_xlabel("entries")
    size.set_ylabel("bytes per entry (file + WAL)")
    size.set_title("database size")
    size.grid(True, alpha=0.3)
    _legend(size, 8)
    loc = report.get("locomo", {})
    for side, style in (("ours", "-"), ("peer", "--")):
        o = (loc.get(side) or {}).get("overall")
        if o:
            rec.plot(KS, [o[f"r@{k}"] for k in KS], linestyle=style, marker="o", label=side)
    rec.set_xticks(KS)
    rec.set_xlabel("k")
    rec.set_ylabel("evidence recall@k (%)")
    rec.set_title("LoCoMo dev, full-text search")
    rec.grid(True, alpha=0.3)
    _legend(rec, 8)
    _ratio_bars(rat, report.get("ratios") or ratios(report))
    peer = report.get("peer", {})
    fig.suptitle(f"powercontext (this repository) against the upstream powercontext "
                 f"{peer.get('version', '?')} ({report.get('date', '')})", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return True
