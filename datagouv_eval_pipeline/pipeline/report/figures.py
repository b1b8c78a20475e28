"""The report's plots, drawn with matplotlib as PNG (embedded in the page and the asset metadata).

One raster drawing per plot: a second format (SVG) doubled the report stage's time, most of it
laying out the heat map's labels.

Each function takes plain values the page has already chosen and returns one ``<svg>`` document;
NULL (unscored) values are drawn as gaps or hatched cells, never as zeros.
"""

from __future__ import annotations

import base64
import io
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from matplotlib.figure import Figure
    from matplotlib.typing import RcKeyType

_STYLE: dict[RcKeyType, Any] = {
    "font.size": 9,
    "axes.spines.top": False,
    "axes.spines.right": False,
}


def _agg() -> None:
    """Select the Agg backend (no display) before the drawing function imports pyplot.

    matplotlib is imported where a plot is drawn (about half a second): the code location and
    the CLI import this module without drawing.
    """
    import matplotlib

    matplotlib.use("Agg")


@dataclass(frozen=True)
class VersionPoint:
    """One mean at one MCP version, with its interval when known.

    Attributes:
        version: The MCP version label.
        mean: The mean (None: not scored).
        low: Lower bound of the interval, or None.
        high: Upper bound of the interval, or None.
    """

    version: str
    mean: float | None
    low: float | None = None
    high: float | None = None


@dataclass(frozen=True)
class CostPoint:
    """One cell in the cost-versus-accuracy plane.

    Attributes:
        label: The cell's short label.
        cost: Mean cost (or the stand-in effort measure) per run.
        accuracy: Mean accuracy.
    """

    label: str
    cost: float
    accuracy: float


@dataclass(frozen=True)
class Plot:
    """One drawn figure.

    Attributes:
        png: PNG bytes.
    """

    png: bytes

    @property
    def data_uri(self) -> str:
        """The PNG as a ``data:`` URI (for ``<img src>`` and Markdown images)."""
        return "data:image/png;base64," + base64.b64encode(self.png).decode("ascii")


def _plot(figure: Figure) -> Plot:
    import matplotlib.pyplot as plt

    image = io.BytesIO()
    figure.savefig(image, format="png", bbox_inches="tight", dpi=110, metadata={"Software": None})
    plt.close(figure)
    return Plot(png=image.getvalue())


def accuracy_by_version(
    series: Sequence[tuple[str, Sequence[VersionPoint]]], versions: Sequence[str], ylabel: str
) -> Plot:
    """Mean per MCP version, one line per (model, capability set), with interval bars."""
    _agg()
    import matplotlib.pyplot as plt

    with plt.rc_context(_STYLE):
        figure, axes = plt.subplots(figsize=(7.0, 3.4))
        positions = {version: index for index, version in enumerate(versions)}
        offset_step = 0.06
        for number, (label, points) in enumerate(series):
            shift = (number - (len(series) - 1) / 2) * offset_step
            xs, ys, low_err, high_err = [], [], [], []
            for point in points:
                if point.mean is None:
                    continue
                xs.append(positions[point.version] + shift)
                ys.append(point.mean)
                # Clipped at 0: a Wilson bound can sit a rounding error past a 0 or 1 mean.
                low_err.append(max(0.0, point.mean - point.low) if point.low is not None else 0.0)
                high_err.append(
                    max(0.0, point.high - point.mean) if point.high is not None else 0.0
                )
            axes.errorbar(
                xs, ys, yerr=[low_err, high_err], marker="o", capsize=3, label=label, linewidth=1
            )
        axes.set_xticks(range(len(versions)), list(versions))
        axes.set_xlabel("MCP version")
        axes.set_ylabel(ylabel)
        axes.set_ylim(-0.05, 1.05)
        axes.grid(axis="y", alpha=0.3)
        axes.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=False)
        return _plot(figure)


def pareto_front(points: Sequence[CostPoint]) -> list[CostPoint]:
    """The points no other point dominates (cost no higher and accuracy no lower, one strictly).

    Returned in increasing cost.
    """
    front = [
        p
        for p in points
        if not any(
            q.cost <= p.cost
            and q.accuracy >= p.accuracy
            and (q.cost < p.cost or q.accuracy > p.accuracy)
            for q in points
        )
    ]
    return sorted(front, key=lambda p: (p.cost, -p.accuracy))


def cost_accuracy(points: Sequence[CostPoint], xlabel: str) -> Plot:
    """Scatter of cost against accuracy, the Pareto front drawn as a step line."""
    front = pareto_front(points)
    on_front = {p.label for p in front}
    _agg()
    import matplotlib.pyplot as plt

    with plt.rc_context(_STYLE):
        figure, axes = plt.subplots(figsize=(7.0, 3.8))
        others = [p for p in points if p.label not in on_front]
        axes.scatter([p.cost for p in others], [p.accuracy for p in others], color="#9aa5b1", s=18)
        axes.scatter(
            [p.cost for p in front],
            [p.accuracy for p in front],
            color="#c0392b",
            s=26,
            label="Pareto front",
            zorder=3,
        )
        if len(front) > 1:
            axes.step(
                [p.cost for p in front],
                [p.accuracy for p in front],
                where="post",
                color="#c0392b",
                linewidth=1,
            )
        for point in front:
            axes.annotate(
                point.label,
                (point.cost, point.accuracy),
                fontsize=6,
                xytext=(4, 3),
                textcoords="offset points",
            )
        axes.set_xlabel(xlabel)
        axes.set_ylabel("mean accuracy (minimal tier)")
        axes.set_ylim(-0.05, 1.08)
        axes.grid(alpha=0.3)
        axes.legend(fontsize=7, frameon=False, loc="best")
        return _plot(figure)


def failure_heatmap(
    cells: Sequence[str], modes: Sequence[str], shares: Sequence[Sequence[float | None]]
) -> Plot:
    """Share of scored runs showing each failure mode, per cell (hatched: nothing scored)."""
    height = max(2.2, 0.22 * len(cells) + 1.2)
    _agg()
    import matplotlib.pyplot as plt

    with plt.rc_context(_STYLE):
        figure, axes = plt.subplots(figsize=(7.2, height))
        matrix = [[float("nan") if v is None else v for v in row] for row in shares]
        image = axes.imshow(matrix, cmap="OrRd", vmin=0.0, vmax=1.0, aspect="auto")
        axes.set_facecolor("#eeeeee")
        for row_index, row in enumerate(shares):
            for column_index, value in enumerate(row):
                text = "n/a" if value is None else f"{value:.0%}"
                colour = "white" if value is not None and value > 0.6 else "#333333"
                axes.text(
                    column_index,
                    row_index,
                    text,
                    ha="center",
                    va="center",
                    fontsize=6,
                    color=colour,
                )
        axes.set_xticks(
            range(len(modes)),
            [m.replace("_", " ") for m in modes],
            rotation=35,
            ha="right",
            fontsize=7,
        )
        axes.set_yticks(range(len(cells)), list(cells), fontsize=7)
        axes.spines[:].set_visible(False)
        colorbar = figure.colorbar(image, ax=axes, fraction=0.03, pad=0.02)
        colorbar.set_label("share of scored runs", fontsize=7)
        return _plot(figure)


@dataclass(frozen=True)
class TrendMean:
    """One cell's mean in one experiment, with its interval when known.

    Attributes:
        position: The experiment's index (x axis).
        mean: The mean (None: not scored, drawn as a gap).
        low: Lower bound of the interval, or None.
        high: Upper bound, or None.
    """

    position: int
    mean: float | None
    low: float | None = None
    high: float | None = None


def trend(
    series: Sequence[tuple[str, Sequence[TrendMean]]], experiments: Sequence[str], ylabel: str
) -> Plot:
    """Mean per recorded experiment, one line per cell, with interval bars."""
    _agg()
    import matplotlib.pyplot as plt

    with plt.rc_context(_STYLE):
        figure, axes = plt.subplots(figsize=(7.0, 3.4))
        offset_step = 0.04
        for number, (label, points) in enumerate(series):
            shift = (number - (len(series) - 1) / 2) * offset_step
            drawn = [p for p in points if p.mean is not None]
            means = [p.mean for p in drawn if p.mean is not None]
            axes.errorbar(
                [p.position + shift for p in drawn],
                means,
                yerr=[
                    [
                        max(0.0, m - p.low) if p.low is not None else 0.0
                        for p, m in zip(drawn, means, strict=True)
                    ],
                    [
                        max(0.0, p.high - m) if p.high is not None else 0.0
                        for p, m in zip(drawn, means, strict=True)
                    ],
                ],
                marker="o",
                capsize=3,
                label=label,
                linewidth=1,
            )
        axes.set_xticks(range(len(experiments)), list(experiments), fontsize=7)
        axes.set_xlabel("recorded experiment (oldest first)")
        axes.set_ylabel(ylabel)
        axes.set_ylim(-0.05, 1.05)
        axes.grid(axis="y", alpha=0.3)
        axes.legend(fontsize=6, loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=False)
        return _plot(figure)
