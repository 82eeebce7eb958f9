"""Plots of a sweep: heatmaps (size × overlap, one panel per strategy, one colour scale per
figure, the recommendation boxed, the peers listed) and recall/IoU frontiers."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any


def heatmaps(
    rows: Sequence[Mapping[str, Any]],
    out_dir: Path,
    modes: Sequence[str],
    recommended: str | None = None,
    peers: Sequence[Mapping[str, Any]] = (),
) -> list[Path]:
    """Write ``{metric}_{mode}.png`` for recall and IoU; strategies with one overlap get one row.

    The panels of one figure share one colour scale (one colour bar), the ``recommended``
    profile's cell is boxed, and the peers' scores, which have no cell, are listed below."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    out_dir.mkdir(parents=True, exist_ok=True)
    strategies = sorted({r["strategy"] for r in rows})
    written: list[Path] = []
    for mode in modes:
        for metric, label in (("recall", "recall %"), ("iou", "IoU %")):
            values = [float(r[mode][metric]) for r in [*rows, *peers]]
            lo, hi = min(values), max(values)
            fig, axes = plt.subplots(
                1,
                len(strategies),
                figsize=(3.8 * len(strategies) + 1, 4.2),
                squeeze=False,
                layout="constrained",
            )
            im = None
            for ax, strategy in zip(axes[0], strategies, strict=True):
                mine = [r for r in rows if r["strategy"] == strategy]
                sizes = sorted({r["size"] for r in mine})
                overlaps = sorted({r["overlap_pct"] for r in mine})
                grid = [[float("nan")] * len(sizes) for _ in overlaps]
                for r in mine:
                    x, y = sizes.index(r["size"]), overlaps.index(r["overlap_pct"])
                    grid[y][x] = r[mode][metric]
                    if r.get("name") == recommended:
                        box = Rectangle((x - 0.5, y - 0.5), 1, 1, fill=False, edgecolor="red", linewidth=2.5)
                        ax.add_patch(box)
                im = ax.imshow(grid, cmap="viridis", aspect="auto", origin="lower", vmin=lo, vmax=hi)
                ax.set_xticks(range(len(sizes)), [str(s) for s in sizes])
                ax.set_yticks(range(len(overlaps)), [f"{o}%" for o in overlaps])
                ax.set_xlabel("size (model tokens)")
                ax.set_ylabel("overlap")
                ax.set_title(strategy)
                for y, line in enumerate(grid):
                    for x, v in enumerate(line):
                        if v == v:  # not NaN
                            ax.text(x, y, f"{v:.1f}", ha="center", va="center", color="white", fontsize=8)
            if im is not None:
                fig.colorbar(im, ax=list(axes[0]), shrink=0.8, label=label)
            title = f"{label}, {mode} retrieval, one colour scale"
            title += f"; red box: recommended {recommended}" if recommended else ""
            if peers:
                title += "\npeers: " + ", ".join(f"{p['name']} {float(p[mode][metric]):.1f}" for p in peers)
            fig.suptitle(title, fontsize=9)
            path = out_dir / f"{metric}_{mode}.png"
            fig.savefig(path, dpi=90)
            plt.close(fig)
            written.append(path)
    return written


def frontier_plots(report: Mapping[str, Any], out_dir: Path) -> list[Path]:
    """``frontier_{mode}.png``: IoU × recall of every profile and peer, pooled and per corpus,
    the peers' frontier drawn, the recommendation marked."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from tessera.evaluation.chunking.frontier import pareto

    out_dir.mkdir(parents=True, exist_ok=True)
    rec = (report.get("recommended") or {}).get("name")
    panels = ["pooled", *sorted(report["corpora"])]
    written: list[Path] = []
    for mode in report["modes"]:
        cols = 3
        nrows = (len(panels) + cols - 1) // cols
        fig, axes = plt.subplots(nrows, cols, figsize=(13, 3.6 * nrows), squeeze=False)
        for ax, panel in zip(axes.flat, panels, strict=False):

            def point(r: Mapping[str, Any], panel: str = panel, mode: str = mode) -> tuple[float, float]:
                s = r[mode] if panel == "pooled" else r["per_corpus"][panel][mode]
                return float(s["iou"]), float(s["recall"])

            for r in report["rows"]:
                x, y = point(r)
                star = r["name"] == rec
                ax.scatter([x], [y], marker="*" if star else "o", s=160 if star else 18,
                           color="crimson" if star else "tab:blue", zorder=3 if star else 2)  # fmt: skip
                if star:
                    ax.annotate(
                        "recommended", (x, y), fontsize=7, xytext=(4, -10), textcoords="offset points"
                    )
            pts = [point(p) for p in report["peers"]]
            for p, (x, y) in zip(report["peers"], pts, strict=True):
                ax.scatter([x], [y], marker="s", s=30, color="tab:orange", zorder=2)
                ax.annotate(p["name"], (x, y), fontsize=6, xytext=(3, 3), textcoords="offset points")
            front = pareto(pts)
            if front:
                ax.plot([f[0] for f in front], [f[1] for f in front], color="tab:orange", lw=1, ls="--")
            ax.set_title(panel, fontsize=9)
            ax.set_xlabel("IoU %")
            ax.set_ylabel("recall %")
        for ax in list(axes.flat)[len(panels) :]:
            ax.axis("off")
        fig.suptitle(f"recall vs IoU, {mode} (k = {report['k']}): profiles (blue), peers (orange), frontier")
        fig.tight_layout()
        path = out_dir / f"frontier_{mode}.png"
        fig.savefig(path, dpi=80)
        plt.close(fig)
        written.append(path)
    return written
