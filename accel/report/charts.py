"""The report's charts: matplotlib figures saved as SVG whose text is text, embedded in the page.

Every chart is drawn under one style (:data:`STYLE`): text stays text in the SVG
(``svg.fonttype: none``), names from the records are never read as mathtext
(``text.parse_math: False``), and every axis labels its ticks with plain numbers, log axes
included (matplotlib's default log labels are mathtext, ``$\\mathdefault{10^{0}}$``, which
shows raw when mathtext is off). Legends sit outside the axes and the figure is saved with a
tight bounding box, so neither a legend nor a long label is cut. Each chart is returned as a
base64 SVG for an ``<img>``: one document per chart, so that the ids matplotlib writes in
one SVG never meet those of another, and the page stays one file that works offline.
"""

from __future__ import annotations

import base64
import io
import math
import textwrap
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from matplotlib.typing import RcKeyType

#: The rc settings every chart is drawn and saved under.
STYLE: dict[RcKeyType, Any] = {
    "svg.fonttype": "none",
    "text.parse_math": False,
    "font.family": ["DejaVu Sans", "sans-serif"],
    "font.size": 9,
    "axes.titlesize": 10,
    "axes.titleweight": "bold",
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "legend.fontsize": 8,
    "legend.frameon": False,
    "svg.hashsalt": "accel-report",  # the same records draw the same bytes
}

#: The colours of the stages of a run, in the order of the stages.
STAGE_COLORS = ("#4c78a8", "#f58518", "#54a24b", "#e45756", "#72b7b2", "#b279a2", "#9d755d")
#: The colour of each arm.
ARM_COLORS = {"gpu": "#76b900", "cpu": "#4c78a8"}


def tick_text(value: float) -> str:
    """A tick's label as a plain number: ``0.001``, ``0.5``, ``20``, ``1,000``, ``2M``."""
    if value == 0 or not math.isfinite(value):
        return "0" if value == 0 else ""
    magnitude = abs(value)
    if magnitude >= 1e6:
        return f"{value / 1e6:g}M"
    if magnitude >= 1000:
        return f"{value:,.0f}"
    if magnitude >= 0.001:
        return f"{value:.4g}"
    return f"{value:.1e}"


def draw(build: Callable[[Any], Any]) -> str:
    """Run ``build(pyplot)`` under :data:`STYLE` and return its figure as a base64 SVG.

    Both axes of each of its axes are labelled with plain numbers; on a log axis, ticks at 1, 2, 5 of
    each decade when it spans few decades (so that one is always labelled), at each decade else.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter, LogFormatter, LogLocator, NullFormatter, ScalarFormatter

    with matplotlib.rc_context(STYLE):
        fig = build(plt)
        try:
            for ax in fig.axes:
                for axis in (ax.xaxis, ax.yaxis):
                    scale = axis.get_scale()
                    if not isinstance(axis.get_major_formatter(), (ScalarFormatter, LogFormatter)):
                        continue  # named ticks (stages, models, runs): text already
                    if scale == "log":
                        low, high = (max(v, 1e-300) for v in axis.get_view_interval())
                        decades = abs(math.log10(high) - math.log10(low))
                        axis.set_major_locator(LogLocator(base=10, subs=(1.0,) if decades > 4 else (1.0, 2.0, 5.0)))
                        axis.set_minor_formatter(NullFormatter())
                    if scale in ("log", "linear"):
                        axis.set_major_formatter(FuncFormatter(lambda v, _pos: tick_text(v)))
            buffer = io.BytesIO()
            fig.savefig(buffer, format="svg", bbox_inches="tight", pad_inches=0.1)
        finally:
            plt.close(fig)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def _finish(
    ax: Any, title: str, xlabel: str = "", ylabel: str = "", no_grid: str = "", legend_at: tuple[float, float] = (1.01, 1.0)
) -> Any:
    """The axes' labels and title (at the left), no grid lines along ``no_grid``, and the legend
    outside the plot where there is one (``legend_at``: its upper left corner; default on the right);
    returns the figure of ``ax``, finished."""
    if no_grid:
        ax.grid(axis=no_grid, visible=False)
    ax.set(xlabel=xlabel, ylabel=ylabel)
    ax.set_title(title, loc="left")
    if ax.get_legend_handles_labels()[0]:
        ax.legend(loc="upper left", bbox_to_anchor=legend_at, borderaxespad=0)
    return ax.figure


def stacked_bars(
    bars: Sequence[tuple[str, dict[str, float]]], stages: Sequence[str], *, title: str, xlabel: str = "seconds"
) -> str:
    """One horizontal bar per ``(label, {stage: seconds})``, stacked by stage in ``stages``' order;
    the first bar on top."""

    def build(plt: Any) -> Any:
        fig, ax = plt.subplots(figsize=(9, 0.9 + 0.32 * len(bars)))
        ys = list(range(len(bars)))[::-1]
        left = [0.0] * len(bars)
        for k, stage in enumerate(stages):
            widths = [float(b.get(stage) or 0.0) for _, b in bars]
            ax.barh(ys, widths, left=left, height=0.7, color=STAGE_COLORS[k % len(STAGE_COLORS)], label=stage)
            left = [a + w for a, w in zip(left, widths)]
        for y, total in zip(ys, left):
            ax.annotate(tick_text(total) + " s", (total, y), xytext=(3, 0), textcoords="offset points", va="center", fontsize=7)
        ax.set_yticks(ys, [label for label, _ in bars])
        ax.set_xlim(0, max(left, default=1) * 1.12 or 1)
        return _finish(ax, title, xlabel=xlabel, no_grid="y")

    return draw(build)


def grouped_bars(
    categories: Sequence[str],
    series: Sequence[tuple[str, Sequence[float | None]]],
    *,
    title: str,
    ylabel: str,
    log: bool = False,
    colors: Mapping[str, str] | None = None,
) -> str:
    """Vertical bars: one group per category, one bar per series (None: no bar); ``colors``: a series' colour
    by its label, where it has one."""

    def build(plt: Any) -> Any:
        fig, ax = plt.subplots(figsize=(max(5.0, min(10.0, 1.0 + 0.55 * len(categories) * max(1, len(series)))), 3.2))
        width = 0.8 / max(1, len(series))
        for k, (label, values) in enumerate(series):
            xs = [j + (k - (len(series) - 1) / 2) * width for j in range(len(categories))]
            pts = [(x, v) for x, v in zip(xs, values) if v is not None and math.isfinite(v) and (v > 0 or not log)]
            color = (colors or {}).get(label)
            ax.bar([x for x, _ in pts], [v for _, v in pts], width, label=label, **({"color": color} if color else {}))
        ax.set_xticks(range(len(categories)), list(categories))
        if len(categories) > 6 or max((len(c) for c in categories), default=0) > 10:
            plt.setp(ax.get_xticklabels(), rotation=30, horizontalalignment="right")
        if log:
            ax.set_yscale("log")
        return _finish(ax, title, ylabel=ylabel, no_grid="x")

    return draw(build)


def ranked_bars(items: Sequence[tuple[str, float]], *, title: str, xlabel: str) -> str:
    """Horizontal bars, largest at the top (a model's feature importances)."""

    def build(plt: Any) -> Any:
        fig, ax = plt.subplots(figsize=(6.5, 0.9 + 0.28 * max(1, len(items))))
        names = [textwrap.fill(name, 40) or name for name, _ in items][::-1]  # a long name on several lines
        ax.barh(range(len(items)), [value for _, value in items][::-1], color=ARM_COLORS["gpu"])
        ax.set_yticks(range(len(items)), names)
        return _finish(ax, title, xlabel=xlabel, no_grid="y")

    return draw(build)


def lines(
    series: Sequence[tuple[str, Sequence[tuple[float, float]], str]],
    *,
    title: str,
    xlabel: str,
    ylabel: str,
    log: str = "",
    ideal: tuple[float, float] | None = None,
    integer_x: bool = False,
) -> str:
    """One line per ``(label, points, matplotlib style)``; log scales on the axes named in
    ``log`` (``"x"``, ``"y"``, ``"xy"``); ``ideal``: a dotted ``y = x`` from its first to its
    second value, labelled ``ideal``; ``integer_x``: ticks only at whole numbers (worker counts)."""

    def build(plt: Any) -> Any:
        fig, ax = plt.subplots(figsize=(7, 3.4))
        for label, pts, style in series:
            pts = sorted((x, y) for x, y in pts if x is not None and y is not None and math.isfinite(y))
            if pts:
                ax.plot([x for x, _ in pts], [y for _, y in pts], style, label=label, markersize=4)
        if ideal is not None:
            ax.plot(list(ideal), list(ideal), ":", color="grey", label="ideal")
        for axis in log:
            getattr(ax, f"set_{axis}scale")("log")
        if integer_x:
            from matplotlib.ticker import MaxNLocator

            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        return _finish(ax, title, xlabel, ylabel)

    return draw(build)


def dumbbell(items: Sequence[tuple[str, float | None, float | None]], *, first: str, second: str, title: str, xlabel: str) -> str:
    """One row per ``(label, first value, second value)``: two dots joined by a line (the
    default model and the tuned one of a search)."""

    def build(plt: Any) -> Any:
        fig, ax = plt.subplots(figsize=(8, 0.9 + 0.35 * len(items)))
        ys = list(range(len(items)))[::-1]
        for y, (_, a, b) in zip(ys, items):
            if a is not None and b is not None and math.isfinite(a) and math.isfinite(b):
                ax.plot([a, b], [y, y], "-", color="#bbbbbb", zorder=1)
        for k, (name, color) in enumerate(((first, "#9d9d9d"), (second, "#e45756"))):
            pts = [(x, y) for (_, a, b), y in zip(items, ys) if (x := (a, b)[k]) is not None and math.isfinite(x)]
            ax.scatter([x for x, _ in pts], [y for _, y in pts], color=color, s=36, zorder=2, label=name)
        ax.set_yticks(ys, [label for label, _, _ in items])
        ax.margins(x=0.15, y=0.3 if len(items) == 1 else 0.1)
        return _finish(ax, title, xlabel=xlabel, no_grid="y")

    return draw(build)


def fronts(panels: Sequence[dict[str, Any]], *, title: str) -> str:
    """Accuracy against seconds (log), one panel per metric: in each, every group's points
    and its Pareto front (``panels``: ``{"metric", "groups": [(group, points, front)]}``, points
    ``(seconds, value)``)."""

    def build(plt: Any) -> Any:
        fig, axes = plt.subplots(1, len(panels), figsize=(6.2 * len(panels), 3.6), squeeze=False)
        for ax, panel in zip(axes[0], panels):
            for k, (group, pts, front) in enumerate(panel["groups"]):
                color = f"C{k % 10}"
                ax.scatter([x for x, _ in pts], [y for _, y in pts], color=color, alpha=0.45, s=20)
                front = sorted(front)
                if front:
                    ax.step(*zip(*front), where="post", color=color, label=textwrap.fill(group, 60) or group)
                    ax.scatter(*zip(*front), color=color, edgecolor="black", s=34, zorder=3)
            ax.set_xscale("log")
            _finish(ax, f"{title}: {panel['metric']}", "seconds (log)", panel["metric"], legend_at=(0.0, -0.2))
        return fig

    return draw(build)
