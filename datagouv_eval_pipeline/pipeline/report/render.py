"""Render the report page and the results browser from a :class:`ReportView`.

Jinja escapes every value (``autoescape``): traces hold arbitrary text, model answers and tool
results included, and none of it may become markup.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import jinja2

from datagouv_eval_pipeline.pipeline.report import figures
from datagouv_eval_pipeline.pipeline.report.changes import METRIC_NAMES, experiment_tick
from datagouv_eval_pipeline.pipeline.report.data import ReportData, Row
from datagouv_eval_pipeline.pipeline.report.markdown import power_sentence, version_power_lines
from datagouv_eval_pipeline.pipeline.report.views import ReportView, _estimate, problem_totals

TEMPLATES = Path(__file__).with_name("templates")
REPORT_PAGE = "index.html"
"""The report page, at the top of the output directory."""
BROWSER_DIR = "browser"
"""The results browser's directory, under the output directory."""


def _num(value: Any, digits: int = 2) -> str:
    if value is None:
        return "—"
    return f"{float(value):.{digits}f}"


def _signed(value: Any, digits: int = 2) -> str:
    return "—" if value is None else f"{float(value):+.{digits}f}"


def _pct(value: Any) -> str:
    return "—" if value is None else f"{float(value):.0%}"


def _money(value: Any, currency: str | None = None) -> str:
    if value is None:
        return "unpriced"
    return f"{float(value):.4f} {currency or ''}".rstrip()


def _pretty_json(text: Any) -> str:
    try:
        return json.dumps(json.loads(str(text)), indent=2, ensure_ascii=False)
    except (TypeError, ValueError):
        return str(text)


def environment() -> jinja2.Environment:
    """The Jinja environment of every page (autoescaping on, strict undefined)."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(num=_num, signed=_signed, pct=_pct, money=_money, prettyjson=_pretty_json)
    return env


def slug(key: str) -> str:
    """A file name for a cell or run key: readable, and unique through a short hash."""
    readable = re.sub(r"[^A-Za-z0-9._-]+", "-", key).strip("-")[:80]
    return f"{readable}-{hashlib.sha256(key.encode()).hexdigest()[:8]}"


@dataclass
class Figures:
    """The report's plots (None when there is nothing to draw).

    Attributes:
        accuracy_by_version: Accuracy per MCP version.
        cost_accuracy: Cost versus accuracy with the Pareto front.
        failure_heatmap: Failure modes per cell.
        trend_accuracy: Each cell's accuracy over the recorded experiments.
        trend_action_f1: Each cell's action F1 over the recorded experiments.
    """

    accuracy_by_version: figures.Plot | None = None
    cost_accuracy: figures.Plot | None = None
    failure_heatmap: figures.Plot | None = None
    trend_accuracy: figures.Plot | None = None
    trend_action_f1: figures.Plot | None = None

    def items(self) -> Iterable[tuple[str, figures.Plot]]:
        """(name, plot) of the figures drawn."""
        for name in (
            "trend_accuracy",
            "trend_action_f1",
            "accuracy_by_version",
            "cost_accuracy",
            "failure_heatmap",
        ):
            value = getattr(self, name)
            if value is not None:
                yield name, value


def draw_figures(view: ReportView) -> Figures:
    """Draw every plot of the report."""
    out = Figures()
    if view.version_lines:
        out.accuracy_by_version = figures.accuracy_by_version(
            [(line.label, line.points) for line in view.version_lines],
            view.versions,
            "mean accuracy on paired runs (minimal tier)",
        )
    history = view.history
    if history is not None and len(history.experiments) > 1:
        positions = {str(e["experiment_id"]): i for i, e in enumerate(history.experiments)}
        ticks = [experiment_tick(e) for e in history.experiments]
        for metric, lines in history.series.items():
            plot = figures.trend(
                [
                    (
                        label,
                        [
                            figures.TrendMean(
                                positions[p.experiment_id], p.mean, p.ci_low, p.ci_high
                            )
                            for p in points
                        ],
                    )
                    for label, points in lines
                ],
                ticks,
                f"mean {METRIC_NAMES[metric]} (minimal tier)",
            )
            setattr(out, f"trend_{metric}", plot)
    points = view.cost_points()
    if points:
        out.cost_accuracy = figures.cost_accuracy(points, view.cost_axis)
    if view.failure_cells and view.failure_modes:
        out.failure_heatmap = figures.failure_heatmap(
            [view.labels.get(key, key) for key in view.failure_cells],
            view.failure_modes,
            view.failure_shares,
        )
    return out


@dataclass
class Site:
    """The rendered pages, by path relative to the output directory.

    Attributes:
        pages: Relative path -> HTML (or Markdown) text.
        binaries: Relative path -> bytes (the plots' PNG files).
        figures: The plots (also embedded in the report page).
    """

    pages: dict[str, str] = field(default_factory=dict)
    binaries: dict[str, bytes] = field(default_factory=dict)
    figures: Figures = field(default_factory=Figures)

    def write(self, out_dir: Path) -> list[Path]:
        """Write every page under ``out_dir``; returns the paths written."""
        written = []
        for relative, text in sorted(self.pages.items()):
            path = out_dir / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            written.append(path)
        for relative, content in sorted(self.binaries.items()):
            path = out_dir / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(content)
            written.append(path)
        return written


def _conversation(detail: Any, calls: list[Row]) -> tuple[list[dict[str, Any]], list[Row]]:
    """The model turns with their tool call rows, and the calls no turn names (in order).

    A turn's tokens are shown only when the trace has one request per turn: the trace records
    them separately and a retried request would shift every pairing after it.
    """
    if detail is None or not detail.turns:
        return [], calls
    by_id = {str(c["call_id"]): c for c in calls}
    paired = len(detail.requests) == len(detail.turns)
    turns, used = [], set()
    for index, turn in enumerate(detail.turns):
        ids = [str(i) for i in turn.get("tool_call_ids") or []]
        used.update(ids)
        turns.append(
            {
                "text": turn.get("text") or "",
                "final": bool(turn.get("final")),
                "request": detail.requests[index] if paired else None,
                "calls": [by_id[i] for i in ids if i in by_id],
            }
        )
    return turns, [c for c in calls if str(c["call_id"]) not in used]


def _run_view(data: ReportData, run: Row, labels: dict[str, str]) -> dict[str, Any]:
    run_id = str(run["run_id"])
    cell = data.cells.get(run["cell_key"])
    detail = data.sources.traces.get(run_id)
    calls = data.tool_calls.get(run_id, [])
    turns, unlinked = _conversation(detail, calls)
    return {
        "run": run,
        "slug": slug(run_id),
        "cell": cell,
        "cell_slug": slug(str(run["cell_key"])),
        "label": labels.get(run["cell_key"], run["cell_key"]),
        "task": data.tasks.get(run["task_id"]),
        "prompt": data.sources.prompt(str(run["task_id"]), run.get("spec_hash")),
        "system_prompt": data.sources.system_prompts.get(str(run["system_prompt_sha256"])),
        "detail": detail,
        "calls": calls,
        "turns": turns,
        "unlinked_calls": unlinked,
        "shown_chars": detail.shown_chars if detail is not None else {},
        "verdicts": data.verdicts.get(run_id, []),
        "modes": data.failure_modes.get(run_id, []),
        "metrics": _metric_table(data.metrics.get(run_id, [])),
        "accuracy": data.run_metric(run_id, "accuracy"),
        "action_f1": data.run_metric(run_id, "action_f1"),
    }


METRIC_TIERS = ("minimal", "optimal", "all")
"""The run page's metric columns."""


def _metric_table(rows: list[Row]) -> list[dict[str, Any]]:
    """One line per metric, its value per tier, and the reasons of the NULL ones."""
    lines: dict[str, dict[str, Any]] = {}
    for row in rows:
        line = lines.setdefault(row["metric"], {"metric": row["metric"], "notes": []})
        line[row["tier"]] = row["value"]
        if row["reason"] and row["reason"] not in line["notes"]:
            line["notes"].append(row["reason"])
    return [lines[name] for name in sorted(lines)]


def _distinct(values: Iterable[Any]) -> list[str]:
    return sorted({str(v) for v in values if v is not None})


def render_site(view: ReportView, *, generated: datetime | None = None) -> Site:
    """Render the report page and every page of the results browser."""
    env = environment()
    data = view.data
    labels = view.labels
    drawn = draw_figures(view)
    site = Site(figures=drawn)
    slugs = {key: slug(key) for key in data.cells}
    runs = [_run_view(data, run, labels) for run in data.runs]
    report_link = f"../{REPORT_PAGE}"
    currencies = _distinct(c["currency"] for c in data.cells.values())
    site.pages[REPORT_PAGE] = env.get_template("report.html.j2").render(
        v=view,
        figures=drawn,
        slugs=slugs,
        browser=f"{BROWSER_DIR}/",
        db_name=data.db_path.name,
        generated=(generated or datetime.now(UTC)).strftime("%Y-%m-%d %H:%M UTC"),
        offline=bool(data.cells) and not any(c["model_is_llm"] for c in data.cells.values()),
        currency=currencies[0] if len(currencies) == 1 else "",
        problem_kinds=_distinct(p.kind for p in view.problems),
        problem_totals=problem_totals(view.problems),
        metric_names=METRIC_NAMES,
        exercised=[f for f in view.features if f.exercised],
        unexercised=[f for f in view.features if not f.exercised],
        dimensions=_distinct(c.dimension for c in view.comparisons),
        feature_areas=_distinct(f.area for f in view.features),
        metrics=_distinct(c.metric for c in view.comparisons),
        judges=_distinct(r["judge_id"] for r in data.runs),
        power_sentence=power_sentence(view.power),
        version_power=version_power_lines(view),
    )
    cells = [
        {
            "cell": cell,
            "slug": slugs[key],
            "label": labels[key],
            "runs": len(data.runs_of(key)),
            "ok": sum(1 for r in data.runs_of(key) if r["status"] == "ok"),
            "accuracy": _estimate(data, key, "accuracy"),
            "action_f1": _estimate(data, key, "action_f1"),
        }
        for key, cell in data.cells.items()
    ]
    task_ids = sorted({str(r["task_id"]) for r in data.runs} | set(data.tasks))
    tasks = []
    for task_id in task_ids:
        task = data.tasks.get(task_id) or {}
        mine = [r for r in runs if r["run"]["task_id"] == task_id]
        scored = [r["accuracy"] for r in mine if r["accuracy"] is not None]
        tasks.append(
            {
                "task_id": task_id,
                "name": task.get("task_name", ""),
                "language": task.get("language", ""),
                "expected": task.get("expected_behaviour", ""),
                "runs": len(mine),
                "scored": len(scored),
                "accuracy": sum(scored) / len(scored) if scored else None,
            }
        )
    prefix = f"{BROWSER_DIR}/"
    site.pages[prefix + "index.html"] = env.get_template("browser_index.html.j2").render(
        report=report_link,
        cells=cells,
        tasks=tasks,
        run_count=len(runs),
        models=_distinct(c["model_name"] for c in data.cells.values()),
        capability_sets=_distinct(c["capability_set"] for c in data.cells.values()),
        mcp_versions=[*view.versions, "none"],
        languages=_distinct(t["language"] for t in tasks if t["language"]),
    )
    statuses = _distinct(r["status"] for r in data.runs)
    cell_template = env.get_template("browser_cell.html.j2")
    for key, cell in data.cells.items():
        site.pages[f"{prefix}cell/{slugs[key]}.html"] = cell_template.render(
            report=report_link,
            cell=cell,
            label=labels[key],
            runs=[r for r in runs if r["run"]["cell_key"] == key],
            statuses=statuses,
        )
    task_template = env.get_template("browser_task.html.j2")
    for task_id in task_ids:
        mine = [r for r in runs if r["run"]["task_id"] == task_id]
        site.pages[f"{prefix}task/{task_id}.html"] = task_template.render(
            report=report_link,
            task_id=task_id,
            task=data.tasks.get(task_id),
            prompt=mine[0]["prompt"] if mine else data.sources.prompt(task_id, None),
            quarantine=data.sources.quarantined.get(task_id),
            runs=mine,
            statuses=statuses,
        )
    run_template = env.get_template("browser_run.html.j2")
    by_cell: dict[str, dict[str, dict[str, Any]]] = {}
    for r in runs:
        site.pages[f"{prefix}run/{r['slug']}.html"] = run_template.render(report=report_link, r=r)
        run = r["run"]
        by_cell.setdefault(str(run["cell_key"]), {})[f"{run['task_id']}#{run['repeat_index']}"] = {
            "slug": r["slug"],
            "accuracy": r["accuracy"],
        }
    site.pages[f"{prefix}compare/index.html"] = env.get_template("browser_compare.html.j2").render(
        report=report_link,
        cells=_cell_choices(labels, set(data.cells)),
        payload={
            "keys": sorted({key for found in by_cell.values() for key in found}),
            "runs": by_cell,
        },
    )
    return site


def _cell_choices(labels: dict[str, str], keys: set[str]) -> list[dict[str, str]]:
    return [{"key": key, "label": labels.get(key, key)} for key in sorted(keys)]
