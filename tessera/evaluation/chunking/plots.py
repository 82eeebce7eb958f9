"""Heatmaps of a sweep: size × overlap, one panel per strategy, for one metric and mode."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any


def heatmaps(rows: Sequence[Mapping[str, Any]], out_dir: Path, modes: Sequence[str]) -> list[Path]:
    """Write ``{metric}_{mode}.png`` for recall and IoU; strategies with one overlap get one row."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out_dir.mkdir(parents=True, exist_ok=True)
    strategies = sorted({r["strategy"] for r in rows})
    written: list[Path] = []
    for mode in modes:
        for metric, label in (("recall", "recall %"), ("iou", "IoU %")):
            fig, axes = plt.subplots(1, len(strategies), figsize=(3.6 * len(strategies), 3.2), squeeze=False)
            for ax, strategy in zip(axes[0], strategies, strict=True):
                mine = [r for r in rows if r["strategy"] == strategy]
                sizes = sorted({r["size"] for r in mine})
                overlaps = sorted({r["overlap_pct"] for r in mine})
                grid = [[float("nan")] * len(sizes) for _ in overlaps]
                for r in mine:
                    grid[overlaps.index(r["overlap_pct"])][sizes.index(r["size"])] = r[mode][metric]
                im = ax.imshow(grid, cmap="viridis", aspect="auto", origin="lower")
                ax.set_xticks(range(len(sizes)), [str(s) for s in sizes])
                ax.set_yticks(range(len(overlaps)), [f"{o}%" for o in overlaps])
                ax.set_xlabel("size (model tokens)")
                ax.set_ylabel("overlap")
                ax.set_title(strategy)
                for y, line in enumerate(grid):
                    for x, v in enumerate(line):
                        if v == v:  # not NaN
                            ax.text(x, y, f"{v:.1f}", ha="center", va="center", color="white", fontsize=8)
                fig.colorbar(im, ax=ax, shrink=0.8)
            fig.suptitle(f"{label}, {mode} retrieval")
            fig.tight_layout()
            path = out_dir / f"{metric}_{mode}.png"
            fig.savefig(path, dpi=90)
            plt.close(fig)
            written.append(path)
    return written
