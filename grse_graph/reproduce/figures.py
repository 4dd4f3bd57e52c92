"""The paper's figures with matplotlib (Agg, files only): Figure 4's utility trajectories and
the transition bars."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.axes import Axes
from matplotlib.figure import Figure


def utility_trajectories(
    series: Mapping[str, Sequence[tuple[int, float | None]]], path: Path, title: str
) -> Path:
    """One line per skill: its utility after each iteration (a skill without a utility at an
    iteration has a gap there)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    figure, axes = plt.subplots(figsize=(7, 4))
    for label, points in series.items():
        xs = [x for x, y in points if y is not None]
        ys = [y for _, y in points if y is not None]
        axes.plot(xs, ys, marker="o", label=label)
    axes.axhline(0.0, color="grey", linewidth=0.8)
    axes.set_xlabel("iteration")
    return _saved(figure, axes, path, title, "utility", legend=bool(series))


def transition_bars(
    groups: Mapping[str, Mapping[str, float | None]],
    path: Path,
    title: str,
    ylabel: str = "questions",
) -> Path:
    """Grouped bars: per group (a row of the table) one bar per transition; a missing value
    (a failed run) is drawn as no bar and named in the legend's group label."""
    path.parent.mkdir(parents=True, exist_ok=True)
    names = sorted({name for bars in groups.values() for name in bars})
    figure, axes = plt.subplots(figsize=(8, 4))
    width = 0.8 / max(len(groups), 1)
    for index, (group, bars) in enumerate(groups.items()):
        values = [bars.get(name) for name in names]
        failed = any(v is None for v in values)
        xs = [i + index * width for i in range(len(names))]
        axes.bar(
            xs,
            [v if v is not None else 0.0 for v in values],
            width=width,
            label=f"{group} (failed runs missing)" if failed else group,
        )
    axes.set_xticks([i + 0.4 - width / 2 for i in range(len(names))], names)
    axes.axhline(0.0, color="grey", linewidth=0.8)
    return _saved(figure, axes, path, title, ylabel, legend=bool(groups))


def _saved(
    figure: Figure, axes: Axes, path: Path, title: str, ylabel: str, *, legend: bool
) -> Path:
    """Title, y label and legend, then the figure written to `path` and closed."""
    axes.set_ylabel(ylabel)
    axes.set_title(title)
    if legend:
        axes.legend(fontsize="small")
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)
    return path
