"""The dbt project's column docs, generated from the warehouse schema's own docs.

Every column of a dbt source is a warehouse column
(:mod:`datagouv_eval_pipeline.pipeline.warehouse.schema`
documents each one); a model column either passes a warehouse column through (it gets that doc,
preferring the tables the model reads) or is computed, and then :data:`DERIVED_DOCS` or
:data:`PATTERN_DOCS` says what it holds: one name, one meaning, in every model. The generator
rewrites the ``description`` of every listed column in ``dbt_metrics/models/**/*.yml`` and lists
every column of every source table; ``datagouv-eval schema`` regenerates, ``--check`` verifies,
and a dbt test holds the listed columns equal to what the models build.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from datagouv_eval_pipeline.base.yaml_loading import safe_load
from datagouv_eval_pipeline.core.metrics import registry
from datagouv_eval_pipeline.pipeline.warehouse.schema import ALL_TABLES, TABLES_BY_NAME
from datagouv_eval_pipeline.pipeline.warehouse.schema import METRICS as METRICS_TABLE

DERIVED_DOCS: dict[str, str] = {
    "absent": "Scored runs in which the failure mode is absent.",
    "accuracy_coverage": (
        "Share of the runs with an accuracy value (in a mart; the metric accuracy_coverage of "
        "eval.metrics is the share of a run's criteria decided)."
    ),
    "runs": "Runs in the group (every status unless the model's description says otherwise).",
    "scored": "Runs in the group with a value (NULL values are left out, never counted as 0).",
    "coverage": "scored / runs: the share of the group's runs with a value.",
    "tasks": "Distinct tasks in the group.",
    "answered": "Whether the paired test gave a verdict (the question is answered for the pair).",
    "calls": "Tool calls.",
    "compared": "Comparisons with at least one pair of runs scored in both experiments.",
    "compared_runs": "Runs the paired test compared (task and repeat scored in both cells).",
    "comparisons": "Comparisons the gate made for the cell (tier x metric x language).",
    "correct_answers": "Runs whose accuracy in the tier is 1 (every criterion passed).",
    "cost_per_correct_answer": (
        "total_cost / correct_answers; NULL without a total or without a correct answer."
    ),
    "criterion_coverage": (
        "Decided criteria / criteria asked over the tier's judged runs (NULL when none)."
    ),
    "delta": "mean of cell b minus mean of cell a, each over its own scored runs (not paired).",
    "difference_ci_high": "Upper bound of the 95 % interval of the paired difference.",
    "difference_ci_low": "Lower bound of the 95 % interval of the paired difference.",
    "error_rate": "Share of the action's instances whose call failed.",
    "exercised": "Some task of the feature is scored in both cells.",
    "failed_comparisons": "Comparisons that fail the gate (a significant drop).",
    "failed_measures": "The failing comparisons, as 'tier metric [language]'.",
    "feature_tasks": "Tasks of the suite that exercise the feature.",
    "instances": "Action instances.",
    "interval_reason": "Why the interval is missing; NULL when present.",
    "is_latest": "Whether this is the most recent experiment the gate checked.",
    "is_latest_version": "Whether this is the task's latest spec version.",
    "language_tasks": "Tasks of that language the cell ran.",
    "mapped_calls": "Tool calls mapped to a semantic action.",
    "mean": (
        "Mean of the metric over the scored runs, for 'avg' metrics (NULL when none is scored, "
        "never 0); the one name of a mean in every long table (one row per metric)."
    ),
    "mean_a": "Mean of cell a over the runs paired with cell b.",
    "mean_b": "Mean of cell b over the runs paired with cell a.",
    "mean_difference": "Paired mean difference (b - a, or newer - older).",
    "min_p_adjusted": "Smallest Holm-adjusted p-value of the cell's comparisons.",
    "model": "Model provider and name, as provider/name.",
    "models": "Distinct models in the group.",
    "newer_cell": "The cell with the newer MCP version (otherwise the same).",
    "newer_mean": "Mean over the paired repeats in the newer version.",
    "newer_version": "The newer MCP version.",
    "not_applicable": "Runs where the failure mode does not apply.",
    "not_comparable_comparisons": (
        "Comparisons not comparable (another judge or prompt, or a coverage change)."
    ),
    "not_comparable_measures": "The incomparable comparisons, as 'tier metric [language]'.",
    "older_cell": "The cell with the older MCP version.",
    "older_mean": "Mean over the paired repeats in the older version.",
    "older_version": "The older MCP version.",
    "outcome": "The gate's outcome for the cell: worse, not comparable: the world changed, "
    "not comparable, or passed.",
    "paired_coverage_a": "Cell a's coverage on the runs both cells have.",
    "paired_coverage_b": "Cell b's coverage on the runs both cells have.",
    "paired_delta": "Mean per-task difference b - a over the tasks scored in both cells.",
    "paired_difference": "Mean paired difference b - a over the (task, repeat) pairs.",
    "paired_runs": "(task, repeat) pairs scored in both cells (what a paired figure rests on).",
    "paired_tasks": "Tasks scored in both cells.",
    "priced_runs": "Runs with a known agent cost.",
    "question": "The evaluation type's question.",
    "ranked": "Whether the cell is ranked (accuracy scored on at least half its runs).",
    "runs_calling": "Runs that called the tool at least once.",
    "runs_not_ok": "Runs whose status is not ok.",
    "runs_stating_it": "Runs that state the action.",
    "runs_using": "Runs that use the action.",
    "runs_with_failure_modes": "Runs with at least one failure mode decided.",
    "task_spec_hash": "The spec hash of the task version the run used.",
    "tasks_decided": "Tasks with at least k decided runs.",
    "test_reason": "Why the paired test gave no p-value or interval; NULL when it did.",
    "tool_errors": "Tool calls that returned an error.",
    "total_cost": "Agent plus judge cost of every run; NULL unless every run is priced.",
    "total_criteria": "Criteria asked over the judged runs.",
    "total_criteria_scored": "Criteria decided over the judged runs.",
    "total_judge_cost": "Judge cost summed over the runs.",
    "total_matched_actions": "Required actions matched, summed over the runs.",
    "total_required_actions": "Required actions, summed over the runs.",
    "total_tool_calls": "Tool calls summed over the runs.",
    "total_value": "Sum of the metric over the scored runs (for counts).",
    "type_cells": "Cells of the evaluation type.",
    "type_pairs": "Cell pairs of the evaluation type that differ in the factor only.",
    "unscored": "Runs in which the failure mode was left undecided.",
    "version_a": "MCP version of cell a (the older).",
    "version_b": "MCP version of cell b (the newer).",
    "worst_drop": "Largest drop among the failing comparisons.",
}
"""What each computed model column holds (one name, one meaning, in every model).

A column named after a registered metric (``core/metrics/registry.py``) needs no entry: it is that
metric's mean (or total) over the runs, see :func:`derived_docs`."""

PATTERN_DOCS: tuple[tuple[str, str], ...] = (
    (r"^(?P<m>\w+)_ci_low$", "Lower bound of the 95 % interval of {m} (clustered by task)."),
    (r"^(?P<m>\w+)_ci_high$", "Upper bound of the 95 % interval of {m} (clustered by task)."),
    (r"^(?P<m>\w+)_n$", "Runs with a {m} value (what its mean rests on)."),
    (r"^(?P<m>\w+)_coverage$", "Share of the runs with a {m} value."),
    (r"^(?P<m>\w+)_tasks$", "Tasks with a {m} value."),
    (r"^(?P<m>\w+)_rank$", "Rank by mean {m} among the ranked cells (1: best)."),
    (r"^avg_(?P<m>\w+)$", "Mean {m} over the scored runs (NULL when none; never 0)."),
    (r"^total_(?P<m>\w+)$", "{m} summed over the runs."),
    (r"^runs_(?P<m>\w+)$", "Runs whose status is {m}."),
)
"""Docs of the families of computed columns, by name pattern."""

METRIC_COLUMN = (METRICS_TABLE.name, "metric")
"""The source column whose accepted values are the registered metric names."""


def derived_docs() -> dict[str, str]:
    """:data:`DERIVED_DOCS` and the doc of a mart column named after each registered metric."""
    docs = {}
    for entry in registry.METRICS:
        if entry.aggregation == "avg":
            docs[entry.name] = (
                f"Mean {entry.title} over the scored runs (NULL when none is scored; never 0)."
            )
        else:
            docs[entry.name] = f"{entry.title.capitalize()}, summed over the runs."
    return {**docs, **DERIVED_DOCS}


def _metric_names_test() -> dict[str, Any]:
    names = [entry.name for entry in registry.METRICS]
    return {"accepted_values": {"arguments": {"values": names}}}


_SOURCE = re.compile(r"source\(\s*'eval'\s*,\s*'(\w+)'\s*\)")
_REF = re.compile(r"ref\(\s*'(\w+)'\s*\)")


@dataclass(frozen=True)
class DocsFile:
    """One YAML file of the dbt project and its regenerated text."""

    path: Path
    current: str
    generated: str


def read_tables(project: Path) -> dict[str, list[str]]:
    """Model name -> the warehouse tables it reads, directly or through its refs, in order."""
    sql = {p.stem: p.read_text(encoding="utf-8") for p in (project / "models").rglob("*.sql")}

    def reads(model: str, seen: frozenset[str]) -> list[str]:
        text = sql.get(model, "")
        out = _SOURCE.findall(text)
        for ref in _REF.findall(text):
            if ref not in seen:
                out += reads(ref, seen | {ref})
        return out

    return {model: list(dict.fromkeys(reads(model, frozenset({model})))) for model in sql}


def column_doc(name: str, tables: Iterable[str] = (), *, computed: bool = False) -> str | None:
    """The doc of a column named ``name`` in a model (or source) reading ``tables``.

    A passed-through column gets the doc of the warehouse table it comes from (the first of
    ``tables`` that has it); in a model that aggregates (``computed``), a name of
    :data:`DERIVED_DOCS` means what that says (``runs`` counts runs there, it is not a run).
    None when the name is unknown.
    """
    derived = derived_docs()
    if computed and name in derived:
        return derived[name]
    # Base tables first: a cell_key is a cell before it is a statistic's scope.
    order = {table.name: index for index, table in enumerate(ALL_TABLES)}
    for table_name in sorted(tables, key=lambda t: order.get(t, len(order))):
        known = TABLES_BY_NAME.get(table_name)
        for column in known.columns if known else ():
            if column.name == name:
                return str(column.doc)
    if name in derived:
        return derived[name]
    for table in ALL_TABLES:
        for column in table.columns:
            if column.name == name:
                return column.doc
    for pattern, doc in PATTERN_DOCS:
        match = re.match(pattern, name)
        if match:
            return doc.format(m=match.group("m").replace("_", " "))
    return None


def _with_metric_names(column: dict[str, Any]) -> dict[str, Any]:
    """The column with its accepted values set to the registered metric names (other tests kept)."""
    tests = [
        t
        for t in column.get("data_tests") or []
        if not (isinstance(t, dict) and "accepted_values" in t)
    ]
    return {**column, "data_tests": [*tests, _metric_names_test()]}


def _documented(
    columns: list[dict[str, Any]], tables: list[str], *, computed: bool
) -> list[dict[str, Any]]:
    out = []
    for column in columns:
        doc = column_doc(str(column["name"]), tables, computed=computed)
        entry = {"name": column["name"]}
        if doc is not None:
            entry["description"] = doc
        entry.update({k: v for k, v in column.items() if k not in ("name", "description")})
        out.append(entry)
    return out


class _Dumper(yaml.SafeDumper):
    """Indents list items under their key, as the hand-written files did."""

    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
        super().increase_indent(flow, False)


def _one_line(node: Any) -> Any:
    """Descriptions written folded (``>``) become one plain line: the file is generated."""
    if isinstance(node, dict):
        return {
            k: " ".join(v.split()) if k == "description" and isinstance(v, str) else _one_line(v)
            for k, v in node.items()
        }
    if isinstance(node, list):
        return [_one_line(v) for v in node]
    return node


def generate(
    path: Path, reads: dict[str, list[str]], built: dict[str, list[str]] | None = None
) -> str:
    """The regenerated text of one YAML file (its leading comment kept).

    Args:
        path: The YAML file.
        reads: Model -> the warehouse tables it reads (:func:`read_tables`).
        built: Model -> its columns as built (from a warehouse); when given, each model lists
            exactly those, in that order, keeping the tests of those already listed.
    """
    text = path.read_text(encoding="utf-8")
    header = []
    for line in text.splitlines():
        if line.startswith(("models:", "sources:")):
            break
        header.append(line)
    document = safe_load(text)
    for model in document.get("models", []):
        columns = model.get("columns") or []
        if built and model["name"] in built:
            listed = {c["name"]: c for c in columns}
            columns = [listed.get(n, {"name": n}) for n in built[model["name"]]]
        model["columns"] = _documented(
            columns,
            reads.get(model["name"], []),
            computed=not str(model["name"]).startswith("stg_"),
        )
    for source in document.get("sources", []):
        for table in source.get("tables", []):
            known = TABLES_BY_NAME.get(table["name"])
            listed = {c["name"]: c for c in table.get("columns") or []}
            names = [c.name for c in known.columns] if known else []
            names += [n for n in listed if n not in names]
            if (table["name"], "metric") == METRIC_COLUMN:
                listed["metric"] = _with_metric_names(listed.get("metric", {"name": "metric"}))
            table["columns"] = _documented(
                [listed.get(n, {"name": n}) for n in names], [table["name"]], computed=False
            )
    body = yaml.dump(
        _one_line(document), Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100
    )
    body = body.removeprefix("version: 2\n")
    return "\n".join(header).rstrip("\n") + "\n\n" + body if header else body


def built_columns(warehouse: Path) -> dict[str, list[str]]:
    """Model -> its columns in order, as dbt built them into ``warehouse`` (schema ``main``)."""
    import duckdb

    with duckdb.connect(str(warehouse), read_only=True) as conn:
        rows = conn.execute(
            "SELECT table_name, column_name FROM information_schema.columns "
            "WHERE table_schema = 'main' ORDER BY table_name, ordinal_position"
        ).fetchall()
    out: dict[str, list[str]] = {}
    for table, column in rows:
        out.setdefault(str(table), []).append(str(column))
    return out


def docs_files(project: Path, built: dict[str, list[str]] | None = None) -> list[DocsFile]:
    """Every YAML file of the project's models with its regenerated text."""
    reads = read_tables(project)
    return [
        DocsFile(path, path.read_text(encoding="utf-8"), generate(path, reads, built))
        for path in sorted((project / "models").rglob("*.yml"))
    ]
