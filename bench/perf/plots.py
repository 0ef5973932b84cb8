"""PNG plots of each figure against the number of entries (matplotlib, imported lazily)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.perf.common import MODES
from bench.plotting import pyplot


def plots(result: dict[str, Any], prefix: Path) -> list[str]:
    """PNG plots against the number of entries; [] (and a note) without matplotlib."""
    plt = pyplot()
    if plt is None:
        result["notes"].append("matplotlib is not installed: no plots")
        return []
    written = []
    search = result["search"]
    engines = sorted({r["engine"] for r in search})
    if search:
        fig, axes = plt.subplots(1, len(MODES), figsize=(5 * len(MODES), 4), squeeze=False)
        for ax, mode in zip(axes[0], MODES, strict=True):
            series = 0
            for eng in engines:
                for mems in sorted({r["memories"] for r in search}):
                    rows = sorted(
                        (
                            r
                            for r in search
                            if (r["engine"], r["mode"], r["memories"]) == (eng, mode, mems)
                        ),
                        key=lambda r: r["entries"],
                    )
                    if not rows:
                        continue
                    xs = [r["entries"] for r in rows]
                    color = f"C{series % 10}"
                    series += 1
                    ax.plot(
                        xs,
                        [r["ours_p95_ms"] for r in rows],
                        marker="o",
                        color=color,
                        label=f"{eng} x{mems} ours",
                    )
                    ax.plot(
                        xs,
                        [r["raw_p95_ms"] for r in rows],
                        marker="x",
                        linestyle="--",
                        color=color,
                        label=f"{eng} x{mems} raw",
                    )
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_title(f"{mode} search p95")
            ax.set_xlabel("active entries")
            ax.set_ylabel("ms")
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=7)
        fig.tight_layout()
        path = f"{prefix}-search.png"
        fig.savefig(path, dpi=100)
        plt.close(fig)
        written.append(path)
        fig, ax = plt.subplots(figsize=(6, 4))
        for eng in engines:
            for mode in MODES:
                for mems in sorted({r["memories"] for r in search}):
                    rows = sorted(
                        (
                            r
                            for r in search
                            if (r["engine"], r["mode"], r["memories"]) == (eng, mode, mems)
                        ),
                        key=lambda r: r["entries"],
                    )
                    if rows:
                        ax.plot(
                            [r["entries"] for r in rows],
                            [r["ratio_p95"] for r in rows],
                            marker="o",
                            label=f"{eng} {mode} x{mems}",
                        )
        ax.axhline(1.3, color="grey", linestyle=":", label="fts target 1.3x")
        ax.set_xscale("log")
        ax.set_title("search p95 ratio ours / raw")
        ax.set_xlabel("active entries")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
        fig.tight_layout()
        path = f"{prefix}-ratio.png"
        fig.savefig(path, dpi=100)
        plt.close(fig)
        written.append(path)
    writes = result["writes"]
    if writes:
        fig, ax = plt.subplots(figsize=(6, 4))
        for eng in sorted({r["engine"] for r in writes}):
            for op in dict.fromkeys(r["op"] for r in writes):
                rows = sorted(
                    (r for r in writes if (r["engine"], r["op"]) == (eng, op)),
                    key=lambda r: r["entries"],
                )
                if rows:
                    ax.plot(
                        [r["entries"] for r in rows],
                        [r["p50_ms"] for r in rows],
                        marker="o",
                        label=f"{eng} {op}",
                    )
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title("write / read p50")
        ax.set_xlabel("entries in the Memory")
        ax.set_ylabel("ms")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
        fig.tight_layout()
        path = f"{prefix}-writes.png"
        fig.savefig(path, dpi=100)
        plt.close(fig)
        written.append(path)
    if result["datasets"]:
        fig, ax = plt.subplots(figsize=(6, 4))
        for eng in sorted({d["engine"] for d in result["datasets"]}):
            for mems in sorted({d["memories"] for d in result["datasets"]}):
                rows = sorted(
                    (d for d in result["datasets"] if (d["engine"], d["memories"]) == (eng, mems)),
                    key=lambda d: d["entries"],
                )
                if rows:
                    ax.plot(
                        [d["entries"] for d in rows],
                        [d["bytes_per_entry"] for d in rows],
                        marker="o",
                        label=f"{eng} x{mems}",
                    )
        ax.set_xscale("log")
        ax.set_title("database bytes per entry")
        ax.set_xlabel("entries")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
        fig.tight_layout()
        path = f"{prefix}-size.png"
        fig.savefig(path, dpi=100)
        plt.close(fig)
        written.append(path)
    return written


# ---------------------------------------------------------------------- driver
