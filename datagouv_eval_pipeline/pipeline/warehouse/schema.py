"""The DuckDB warehouse schema: documented tables, generated DDL, and schema creation.

Every table lives in the DuckDB schema ``eval`` and is named after the Dagster asset key that
writes it (asset key ``eval/runs`` ↔ table ``eval.runs`` ↔ dbt source ``eval.runs``), so that
dagster-dbt lineage joins without any mapping. ``docs/warehouse.md`` lists the same columns.

Primary keys are enforced by DuckDB: a duplicate (cell, task, repeat) row cannot exist. Value
ranges are *not* CHECK constraints on purpose: the loader validates them in Python and the dbt
tests (``dbt_metrics``) assert them for analysts, which is what catches rows written by anything
else.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import duckdb

SCHEMA = "eval"
"""The DuckDB schema holding the warehouse tables (the asset-key prefix)."""

SCHEMA_VERSION = "3"
"""Bumped whenever a table or column changes (recorded in ``eval.schema_info``)."""


@dataclass(frozen=True, slots=True)
class Column:
    """One column of a warehouse table.

    Attributes:
        name: Column name.
        type: DuckDB type.
        doc: What the column holds (shown in ``docs/warehouse.md``).
        nullable: Whether NULL is allowed (NULL always means "unknown / not scored", never 0).
    """

    name: str
    type: str
    doc: str
    nullable: bool = True


@dataclass(frozen=True, slots=True)
class Table:
    """One warehouse table.

    Attributes:
        name: Table name inside :data:`SCHEMA`.
        grain: What one row is.
        primary_key: The enforced primary key columns.
        columns: Every column, in order.
    """

    name: str
    grain: str
    primary_key: tuple[str, ...]
    columns: tuple[Column, ...]

    @property
    def qualified(self) -> str:
        """``eval.<name>``."""
        return f"{SCHEMA}.{self.name}"

    @property
    def column_names(self) -> tuple[str, ...]:
        """Column names in order."""
        return tuple(column.name for column in self.columns)

    @property
    def required(self) -> frozenset[str]:
        """Columns that must not be NULL."""
        return frozenset(column.name for column in self.columns if not column.nullable)

    def ddl(self) -> str:
        """The ``CREATE TABLE IF NOT EXISTS`` statement."""
        lines = [f"    {c.name} {c.type}{'' if c.nullable else ' NOT NULL'}" for c in self.columns]
        lines.append(f"    PRIMARY KEY ({', '.join(self.primary_key)})")
        return f"CREATE TABLE IF NOT EXISTS {self.qualified} (\n" + ",\n".join(lines) + "\n)"


def _c(name: str, type_: str, doc: str, nullable: bool = True) -> Column:
    return Column(name, type_, doc, nullable)


def _run_key(*, with_run_id: bool = True) -> tuple[Column, ...]:
    columns = (
        _c("cell_key", "VARCHAR", "Cell (partition) key.", False),
        _c("task_id", "VARCHAR", "Task id, e.g. task_0002.", False),
        _c("repeat_index", "INTEGER", "Repeat index of the task in its cell (0-based).", False),
    )
    run_id = _c("run_id", "VARCHAR", "cell_key|task_id|repeat_index (one run).", False)
    return (run_id, *columns) if with_run_id else columns


_TIER_DOC = "minimal or optimal; 'all' for values that do not depend on the tier."

CELLS = Table(
    name="cells",
    grain="one row per cell (model × capability set × toolset version × skills × prompt)",
    primary_key=("cell_key",),
    columns=(
        _c("cell_key", "VARCHAR", "Stable cell key, the Dagster partition key.", False),
        _c("evaluation_types", "VARCHAR[]", "Evaluation types including this cell.", False),
        _c("model_provider", "VARCHAR", "Provider name, e.g. mistral or offline.", False),
        _c("model_name", "VARCHAR", "Model id as the provider spells it.", False),
        _c("model_kind", "VARCHAR", "openai_compatible or offline.", False),
        _c("model_is_llm", "BOOLEAN", "False for offline baseline policies.", False),
        _c("model_label", "VARCHAR", "Free text label of the model."),
        _c("base_url", "VARCHAR", "Provider API base URL (NULL offline)."),
        _c("api_key_env", "VARCHAR", "Env variable holding the key (never the key)."),
        _c("input_price_per_mtok", "DOUBLE", "Price per million input tokens."),
        _c("output_price_per_mtok", "DOUBLE", "Price per million output tokens."),
        _c("currency", "VARCHAR", "ISO 4217 code of prices and costs.", False),
        _c("capabilities", "VARCHAR[]", "Capability names, sorted.", False),
        _c("capability_set", "VARCHAR", "Capabilities joined with '+', 'none' if empty.", False),
        _c("mcp_version", "VARCHAR", "Pinned MCP (toolset) version; NULL without mcp."),
        _c("mcp_url", "VARCHAR", "MCP endpoint as configured; NULL for a build."),
        _c("mcp_source", "VARCHAR", "Where the MCP server came from: twin, url or build."),
        _c("mcp_build", "VARCHAR", "The real server build, e.g. package:NAME==VERSION."),
        _c("skills_version", "VARCHAR", "Skills version; NULL without skills."),
        _c("skills_sha256", "VARCHAR", "sha256 of the skills document."),
        _c("system_prompt", "VARCHAR", "System prompt name.", False),
        _c("system_prompt_sha256", "VARCHAR", "sha256 of the system prompt text.", False),
        _c("metrics", "VARCHAR[]", "Metric groups computed for this cell.", False),
        _c("loaded_at", "TIMESTAMPTZ", "When this cell's rows were (re)loaded.", False),
        _c(
            "stale_reason",
            "VARCHAR",
            "Why these rows are not from the cell's last attempt (a stage failed on it; the "
            "rows are its last good results); NULL when they are current.",
        ),
        _c(
            "model_settings",
            "VARCHAR",
            "The model's request settings from models.yml as JSON text (timeout_s, retries, "
            "temperature, top_p, seed, max_output_tokens, stop, context_window; only those "
            "set); NULL when none is set.",
        ),
    ),
)

TASKS = Table(
    name="tasks",
    grain="one row per task spec version (task id × spec hash)",
    primary_key=("task_id", "spec_hash"),
    columns=(
        _c("task_id", "VARCHAR", "Task id.", False),
        _c("spec_hash", "VARCHAR", "TaskSpec.spec_hash() of this version.", False),
        _c("task_version", "INTEGER", "The spec's version field.", False),
        _c("task_name", "VARCHAR", "Short task name.", False),
        _c("language", "VARCHAR", "ISO 639-1 code of the prompt's language.", False),
        _c("expected_behaviour", "VARCHAR", "answer or decline.", False),
        _c("status", "VARCHAR", "Spec status (active, draft, deprecated...).", False),
        _c("source", "VARCHAR", "Where the question came from.", False),
    ),
)

TASK_FEATURES = Table(
    name="task_features",
    grain="one row per task spec version × toolset feature it exercises (meta.exercises)",
    primary_key=("task_id", "spec_hash", "feature"),
    columns=(
        _c("task_id", "VARCHAR", "Task id.", False),
        _c("spec_hash", "VARCHAR", "spec_hash of the version listing the feature.", False),
        _c("task_version", "INTEGER", "The spec's version field.", False),
        _c("feature", "VARCHAR", "As area.feature, e.g. search.and_semantics.", False),
        _c("area", "VARCHAR", "The part before the dot (search, tabular, dataservice...).", False),
    ),
)

RUNS = Table(
    name="runs",
    grain="one row per cell × task × repeat (one agent run)",
    primary_key=("cell_key", "task_id", "repeat_index"),
    columns=(
        *_run_key(),
        _c("model_provider", "VARCHAR", "Provider of the model.", False),
        _c("model_name", "VARCHAR", "Model id.", False),
        _c("capability_set", "VARCHAR", "Capabilities joined with '+' ('none').", False),
        _c("capabilities", "VARCHAR[]", "Capability names, sorted.", False),
        _c("mcp_version", "VARCHAR", "Toolset (MCP) version; NULL without mcp."),
        _c("skills_version", "VARCHAR", "Skills version; NULL without skills."),
        _c("system_prompt", "VARCHAR", "System prompt name.", False),
        _c("system_prompt_sha256", "VARCHAR", "System prompt hash.", False),
        _c("spec_hash", "VARCHAR", "Spec hash of the task the run was scored against."),
        _c("task_version", "INTEGER", "The task's version field."),
        _c("snapshot_id", "VARCHAR", "Catalog snapshot id."),
        _c("judge_id", "VARCHAR", "Judge id, e.g. deterministic@3; NULL when not judged."),
        _c("judge_prompt_hash", "VARCHAR", "Prompt hash(es) of the judge, sorted, ','-joined."),
        _c("code_version", "VARCHAR", "Git sha (or package version) of the code."),
        _c(
            "code_dirty",
            "BOOLEAN",
            "Whether that checkout had uncommitted changes when the agent ran; NULL unknown.",
        ),
        _c("scorer_version", "VARCHAR", "Version of the deterministic scorer."),
        _c("registry_version", "VARCHAR", "Version of the semantic action registry."),
        _c("status", "VARCHAR", "ok, error, budget_exceeded or skipped.", False),
        _c("status_reason", "VARCHAR", "Why the run ended so when not ok."),
        _c("scored", "BOOLEAN", "Whether deterministic scores exist for this run.", False),
        _c("judged", "BOOLEAN", "Whether judge verdicts exist for this run.", False),
        _c("started_at", "TIMESTAMPTZ", "UTC start of the run."),
        _c("latency_ms", "DOUBLE", "Wall time, rate-limit waits included.", False),
        _c("rate_limit_wait_ms", "DOUBLE", "Time spent waiting on rate limits.", False),
        _c("effective_latency_ms", "DOUBLE", "latency_ms minus rate-limit wait."),
        _c("input_tokens", "BIGINT", "Agent input tokens.", False),
        _c("output_tokens", "BIGINT", "Agent output tokens.", False),
        _c("total_tokens", "BIGINT", "Agent input + output tokens.", False),
        _c("requests", "INTEGER", "Model requests made by the agent.", False),
        _c("tool_call_count", "INTEGER", "Tool calls made by the agent.", False),
        _c("cost", "DOUBLE", "Agent cost; NULL when the model has no price."),
        _c("currency", "VARCHAR", "Currency of cost and judge_cost.", False),
        _c(
            "judge_questions",
            "INTEGER",
            "Judge questions put to a model (cache hits and rule verdicts excluded).",
        ),
        _c(
            "judge_requests",
            "INTEGER",
            "HTTP requests sent to judge models, retries included (cache hits send none).",
        ),
        _c("judge_input_tokens", "BIGINT", "Judge input tokens."),
        _c("judge_output_tokens", "BIGINT", "Judge output tokens."),
        _c("judge_cost", "DOUBLE", "Judge cost; NULL when unknown."),
        _c("answer", "VARCHAR", "Final answer text.", False),
        _c("declined", "BOOLEAN", "Structured decline flag, when given."),
        _c("mapped_fraction", "DOUBLE", "Share of calls the mapper decided."),
        _c("mapping_error", "VARCHAR", "Why the action mapping failed, if it did."),
        _c(
            "toolset_version",
            "VARCHAR",
            "Fingerprint of the twin and toolset code the run met (with snapshot_id: its "
            "world); NULL in runs recorded before it was.",
        ),
    ),
)

TOOL_CALLS = Table(
    name="tool_calls",
    grain="one row per literal tool call of a run",
    primary_key=("cell_key", "task_id", "repeat_index", "call_index"),
    columns=(
        *_run_key(),
        _c("call_index", "INTEGER", "Position of the call in the run (0-based).", False),
        _c("call_id", "VARCHAR", "Call id given by the model.", False),
        _c("tool_name", "VARCHAR", "Literal tool name.", False),
        _c("arguments", "VARCHAR", "Arguments as JSON text.", False),
        _c("result", "VARCHAR", "Text the tool returned.", False),
        _c("result_chars", "INTEGER", "Length of the full result.", False),
        _c("tool_error", "BOOLEAN", "Whether the tool itself reported an error.", False),
        _c("duration_ms", "DOUBLE", "Duration of the call."),
        _c("category", "VARCHAR", "Call category from the mapper (NULL if unmapped run)."),
        _c("mapping_status", "VARCHAR", "mapped, no_action or unmapped."),
        _c("errored", "BOOLEAN", "Whether the mapper detected a failure."),
        _c("error_reason", "VARCHAR", "Which error rule fired."),
        _c("confidence", "DOUBLE", "Mapping confidence."),
        _c("mapping_reason", "VARCHAR", "Why the mapper decided so."),
    ),
)

ACTION_INSTANCES = Table(
    name="action_instances",
    grain="one row per semantic action instance of a run",
    primary_key=("cell_key", "task_id", "repeat_index", "instance_index"),
    columns=(
        *_run_key(),
        _c("instance_index", "INTEGER", "Position among the run's instances.", False),
        _c("action", "VARCHAR", "Semantic action name, e.g. get.dataset.info.", False),
        _c("args", "VARCHAR", "Semantic arguments as JSON text.", False),
        _c("source_call_id", "VARCHAR", "Tool call it came from.", False),
        _c("source_tool", "VARCHAR", "Literal tool name of that call.", False),
        _c("category", "VARCHAR", "How the call reached the catalog.", False),
        _c("confidence", "DOUBLE", "1.0 exact, lower for heuristics.", False),
        _c("errored", "BOOLEAN", "Whether the source call failed.", False),
        _c("reason", "VARCHAR", "Why this instance.", False),
        _c("origin", "VARCHAR", "mapper, or classification (judge).", False),
    ),
)

VERDICTS = Table(
    name="verdicts",
    grain="one row per verdict as it counts in a tier (run × tier × kind × name)",
    primary_key=("cell_key", "task_id", "repeat_index", "tier", "kind", "name"),
    columns=(
        *_run_key(),
        _c("tier", "VARCHAR", _TIER_DOC, False),
        _c(
            "kind",
            "VARCHAR",
            "criterion, arguments, trajectory, failure_mode, check or classification.",
            False,
        ),
        _c("name", "VARCHAR", "criterion:<i>, arguments:<i>:<action>:<candidate>, ...", False),
        _c("detail", "VARCHAR", "Criterion text, action name or mode (for reading)."),
        _c("passed", "BOOLEAN", "The decision; for failure modes True = mode absent."),
        _c("score", "DOUBLE", "Graded decision in [0, 1]; NULL when unscored."),
        _c("value", "DOUBLE", "score, else passed as 1/0; NULL when unscored."),
        _c("status", "VARCHAR", "ok, unscored or not_applicable.", False),
        _c("reason", "VARCHAR", "Why.", False),
        _c("error", "VARCHAR", "Why the verdict is unscored."),
        _c("judge_id", "VARCHAR", "Judge (or scorer@N for checks).", False),
        _c("prompt_hash", "VARCHAR", "Judge prompt hash (NULL for checks)."),
        _c("inherited", "BOOLEAN", "Optimal copy of a minimal verdict.", False),
        _c("input_tokens", "BIGINT", "Judge input tokens (NULL on inherited copies)."),
        _c("output_tokens", "BIGINT", "Judge output tokens (NULL on inherited copies)."),
        _c("cost", "DOUBLE", "Judge cost; NULL when unknown or inherited."),
        _c("cached", "BOOLEAN", "Read from the judge cache."),
    ),
)

FAILURE_MODES = Table(
    name="failure_modes",
    grain="one row per run × tier × failure mode",
    primary_key=("cell_key", "task_id", "repeat_index", "tier", "mode"),
    columns=(
        *_run_key(),
        _c("tier", "VARCHAR", "minimal or optimal.", False),
        _c("mode", "VARCHAR", "One of the nine failure modes.", False),
        _c(
            "present",
            "BOOLEAN",
            "Whether the run shows the mode; NULL when unscored or not applicable.",
        ),
        _c(
            "status",
            "VARCHAR",
            "ok, unscored, or not_applicable (the mode cannot apply, e.g. TOOL_OMISSION without "
            "any tool or in a tier requiring no action).",
            False,
        ),
        _c("reason", "VARCHAR", "Why.", False),
        _c("error", "VARCHAR", "Why unscored."),
        _c("judge_id", "VARCHAR", "Judge id.", False),
        _c("prompt_hash", "VARCHAR", "Judge prompt hash.", False),
    ),
)

METRICS = Table(
    name="metrics",
    grain="one row per run × tier × metric",
    primary_key=("cell_key", "task_id", "repeat_index", "tier", "metric"),
    columns=(
        *_run_key(),
        _c("tier", "VARCHAR", _TIER_DOC, False),
        _c("metric", "VARCHAR", "Metric name (see docs/warehouse.md).", False),
        _c("value", "DOUBLE", "The value; NULL when undefined, failed or not scored."),
        _c("reason", "VARCHAR", "Why the value is NULL (or a note)."),
        _c("aggregation", "VARCHAR", "avg (mean of per-task values) or sum.", False),
        _c("bounded", "BOOLEAN", "True when the value lies in [0, 1] by definition.", False),
        _c("source", "VARCHAR", "scorer (deterministic) or judge.", False),
    ),
)

REFERENCES = Table(
    name="references",
    grain="one row per scored run × expected value (the number the value check compared with)",
    primary_key=("cell_key", "task_id", "repeat_index", "name"),
    columns=(
        *_run_key(),
        _c("name", "VARCHAR", "The expected value's name in the task spec.", False),
        _c("value", "DOUBLE", "The reference the answer was compared with.", False),
        _c("spec_value", "DOUBLE", "The value written in the task spec.", False),
        _c("tolerance", "DOUBLE", "Absolute tolerance of the comparison.", False),
        _c(
            "source",
            "VARCHAR",
            "Where the reference comes from: the catalog it was recomputed from "
            "(twin snapshot or live host, and its Tabular API), or 'task spec'.",
            False,
        ),
        _c("recomputed", "BOOLEAN", "True when the value was recomputed from the catalog.", False),
        _c("changed", "BOOLEAN", "True when the recomputed value differs from the spec's.", False),
        _c("error", "VARCHAR", "Why the value could not be recomputed (the spec's then stands)."),
        _c("found", "VARCHAR", "The number as stated in the answer; NULL when not found."),
    ),
)

PASS_K = Table(
    name="pass_k",
    grain=(
        "one row per cell × task × tier × k, for tasks run more than once: pass@k and pass^k "
        "over the runs whose accuracy was decided (a run passes when its accuracy is 1 and every "
        "criterion was decided)"
    ),
    primary_key=("cell_key", "task_id", "tier", "k"),
    columns=(
        _c("cell_key", "VARCHAR", "Cell (partition) key.", False),
        _c("task_id", "VARCHAR", "Task id, e.g. task_0002.", False),
        _c("tier", "VARCHAR", "minimal or optimal.", False),
        _c("k", "INTEGER", "Attempts drawn (1 ≤ k ≤ n).", False),
        _c("runs", "INTEGER", "Runs of the task in the cell (repeats).", False),
        _c("n", "INTEGER", "Runs whose accuracy was decided (the others are excluded).", False),
        _c(
            "c",
            "INTEGER",
            "Decided runs that passed (accuracy 1 with every criterion decided).",
            False,
        ),
        _c("pass_at_k", "DOUBLE", "1 - C(n-c, k) / C(n, k); NULL when k > n."),
        _c("pass_hat_k", "DOUBLE", "C(c, k) / C(n, k); NULL when k > n."),
        _c(
            "reason",
            "VARCHAR",
            "Why the values are NULL, and how many runs with accuracy 1 had undecided criteria.",
        ),
    ),
)
EXPERIMENTS = Table(
    name="experiments",
    grain="one row per experiment run (one load of the warehouse, e.g. one Dagster run)",
    primary_key=("experiment_id",),
    columns=(
        _c("experiment_id", "VARCHAR", "The Dagster run id (a uuid outside Dagster).", False),
        _c("dagster_run_id", "VARCHAR", "Dagster run that loaded it; NULL outside Dagster."),
        _c("recorded_at", "TIMESTAMPTZ", "When the warehouse was loaded.", False),
        _c("git_sha", "VARCHAR", "Commit of the code; NULL outside a git checkout."),
        _c("git_dirty", "BOOLEAN", "Uncommitted changes in the work tree; NULL when unknown."),
        _c("code_version", "VARCHAR", "Package version of the code."),
        _c("config_hash", "VARCHAR", "Digest of the benchmark cells and task spec hashes.", False),
        _c("snapshot_ids", "VARCHAR", "Catalog snapshot id(s) of the runs, sorted, ','-joined."),
        _c("judge_ids", "VARCHAR", "Judge id(s) of the runs, sorted, ','-joined."),
        _c("cells_loaded", "INTEGER", "Cells whose rows this run loaded.", False),
        _c("cells_failed", "INTEGER", "Cells whose load failed (earlier rows kept).", False),
        _c("runs", "INTEGER", "Agent runs loaded.", False),
    ),
)


def history_of(table: Table) -> Table:
    """The append-only copy of a cell table: its columns, keyed by experiment too."""
    return Table(
        name=f"{table.name}_history",
        grain=f"{table.grain}, per experiment run that loaded it",
        primary_key=("experiment_id", *table.primary_key),
        columns=(
            _c("experiment_id", "VARCHAR", "Experiment run that loaded the row.", False),
            *table.columns,
        ),
    )


RUNS_HISTORY = history_of(RUNS)
METRICS_HISTORY = history_of(METRICS)

HISTORY_TABLES: dict[str, Table] = {"runs": RUNS_HISTORY, "metrics": METRICS_HISTORY}
"""Cell table name -> its history table (every experiment's rows, kept)."""

TABLES: tuple[Table, ...] = (
    CELLS,
    TASKS,
    TASK_FEATURES,
    RUNS,
    TOOL_CALLS,
    ACTION_INSTANCES,
    VERDICTS,
    FAILURE_MODES,
    METRICS,
    REFERENCES,
    PASS_K,
    EXPERIMENTS,
    RUNS_HISTORY,
    METRICS_HISTORY,
)
"""Every table the warehouse loader writes, parents first."""

CELL_TABLES: tuple[Table, ...] = (
    CELLS,
    RUNS,
    TOOL_CALLS,
    ACTION_INSTANCES,
    VERDICTS,
    FAILURE_MODES,
    METRICS,
    REFERENCES,
    PASS_K,
)
"""Tables whose rows belong to one cell: the latest run of each cell (replaced per load)."""

_ESTIMATE_COLUMNS = (
    _c("runs", "INTEGER", "Runs counted, scored or not.", False),
    _c("n", "INTEGER", "Runs with a value (scored).", False),
    _c("tasks", "INTEGER", "Distinct tasks among the scored runs (the clusters).", False),
    _c("coverage", "DOUBLE", "n / runs.", False),
    _c("mean", "DOUBLE", "Mean of the scored values; NULL when n = 0."),
    _c("std_error", "DOUBLE", "Standard error, clustered by task; NULL when tasks < 2."),
    _c("ci_low", "DOUBLE", "Lower bound of the 95 % interval; NULL when tasks < 2."),
    _c("ci_high", "DOUBLE", "Upper bound of the 95 % interval."),
    _c(
        "interval_method", "VARCHAR", "wilson (0/1 outcomes) or t (t interval, clipped if bounded)."
    ),
    _c("binary_outcome", "BOOLEAN", "Every scored value is 0 or 1.", False),
    _c("clustered", "BOOLEAN", "Some task has several scored runs (repeats).", False),
    _c("bounded", "BOOLEAN", "The metric lies in [0, 1] by definition.", False),
    _c("reason", "VARCHAR", "Why the mean or the interval is NULL."),
)

METRIC_ESTIMATES = Table(
    name="metric_estimates",
    grain="one row per scope group × tier × averaged metric (latest run of each cell)",
    primary_key=("scope", "group_key", "tier", "metric"),
    columns=(
        _c(
            "scope",
            "VARCHAR",
            "cell, cell_language, capability_set, or language (model × capability set × "
            "MCP version × task language).",
            False,
        ),
        _c("group_key", "VARCHAR", "The group's dimensions joined with '|'.", False),
        _c("cell_key", "VARCHAR", "Cell (scopes cell and cell_language)."),
        _c("model_provider", "VARCHAR", "Model provider (NULL in scope capability_set)."),
        _c("model_name", "VARCHAR", "Model id (NULL in scope capability_set)."),
        _c("capability_set", "VARCHAR", "Capability set.", False),
        _c("mcp_version", "VARCHAR", "MCP version; NULL without mcp or in capability_set."),
        _c("language", "VARCHAR", "Task language; 'all' in scopes cell and capability_set.", False),
        _c("tier", "VARCHAR", _TIER_DOC, False),
        _c("metric", "VARCHAR", "Metric name (aggregation avg only).", False),
        *_ESTIMATE_COLUMNS,
    ),
)

COMPARISONS = Table(
    name="comparisons",
    grain="one row per ordered pair of cells differing in one dimension × tier × averaged metric",
    primary_key=("cell_a", "cell_b", "tier", "metric"),
    columns=(
        _c("cell_a", "VARCHAR", "Reference cell.", False),
        _c("cell_b", "VARCHAR", "Compared cell (difference = b - a).", False),
        _c(
            "dimension",
            "VARCHAR",
            "model, capability_set, mcp_version, skills_version or system_prompt.",
            False,
        ),
        _c("value_a", "VARCHAR", "Cell a's value of that dimension."),
        _c("value_b", "VARCHAR", "Cell b's value of that dimension."),
        _c("tier", "VARCHAR", _TIER_DOC, False),
        _c("metric", "VARCHAR", "Metric name.", False),
        _c("higher_is_better", "BOOLEAN", "False for latency_ms.", False),
        _c("pairs", "INTEGER", "(task, repeat) pairs scored in both cells.", False),
        _c("tasks", "INTEGER", "Distinct tasks among the pairs.", False),
        _c("mean_a", "DOUBLE", "Mean of a over the pairs."),
        _c("mean_b", "DOUBLE", "Mean of b over the pairs."),
        _c("mean_difference", "DOUBLE", "Mean paired difference b - a."),
        _c("std_error", "DOUBLE", "Standard error of the difference, clustered by task."),
        _c("ci_low", "DOUBLE", "Lower bound of the 95 % t interval of the difference."),
        _c("ci_high", "DOUBLE", "Upper bound."),
        _c("test", "VARCHAR", "mcnemar_exact (0/1, one run per task) or wilcoxon_signed_rank."),
        _c("p_value", "DOUBLE", "Two-sided p-value, unadjusted."),
        _c(
            "family_size",
            "INTEGER",
            "Comparisons in the family (dimension × metric × tier).",
            False,
        ),
        _c("p_adjusted", "DOUBLE", "Holm-Bonferroni adjusted p-value within the family."),
        _c(
            "verdict",
            "VARCHAR",
            "better, worse or no detectable difference (b against a); NULL without pairs.",
        ),
        _c(
            "verdict_note",
            "VARCHAR",
            "Why the verdict is no detectable difference although the unadjusted p-value is "
            "below 0.05 (not after Holm) or the t interval excludes 0 (not the test); else NULL.",
        ),
        _c(
            "mde",
            "DOUBLE",
            "Minimum detectable difference at 80 % power of the test used, for these pairs.",
        ),
        _c(
            "mde_method",
            "VARCHAR",
            "mcnemar_exact (exact binomial power on the discordant pairs) or "
            "wilcoxon_simulation (seeded power simulation); NULL without an MDE.",
        ),
        _c("reason", "VARCHAR", "Why a figure is NULL."),
        _c(
            "runs",
            "INTEGER",
            "(task, repeat) runs both cells have, scored or not: the coverages' denominator.",
            False,
        ),
        _c("coverage_a", "DOUBLE", "Share of those runs a scored on the metric; NULL without."),
        _c("coverage_b", "DOUBLE", "Share of those runs b scored on the metric."),
        _c(
            "criterion_coverage_a",
            "DOUBLE",
            "accuracy only: a's mean accuracy_coverage (criteria decided) over the pairs.",
        ),
        _c("criterion_coverage_b", "DOUBLE", "accuracy only: the same for b."),
        _c(
            "coverage_differs",
            "BOOLEAN",
            "The two sides' coverage (runs scored, criteria decided) differ by more than 0.05.",
            False,
        ),
        _c("coverage_note", "VARCHAR", "What differs, when coverage_differs; else NULL."),
    ),
)

FEATURE_ESTIMATES = Table(
    name="feature_estimates",
    grain=(
        "one row per cell × toolset feature × tier × averaged metric, over the runs of the "
        "tasks exercising the feature (latest run of each cell)"
    ),
    primary_key=("cell_key", "feature", "tier", "metric"),
    columns=(
        _c("cell_key", "VARCHAR", "Cell.", False),
        _c("feature", "VARCHAR", "The feature (eval.task_features).", False),
        _c("model_provider", "VARCHAR", "Model provider.", False),
        _c("model_name", "VARCHAR", "Model id.", False),
        _c("capability_set", "VARCHAR", "Capability set.", False),
        _c("mcp_version", "VARCHAR", "MCP version; NULL without mcp."),
        _c("tier", "VARCHAR", _TIER_DOC, False),
        _c("metric", "VARCHAR", "Metric name (aggregation avg only).", False),
        *_ESTIMATE_COLUMNS,
    ),
)

FEATURE_COMPARISONS = Table(
    name="feature_comparisons",
    grain=(
        "one row per toolset feature × ordered pair of cells differing in one dimension × tier "
        "× averaged metric, paired on the tasks exercising the feature"
    ),
    primary_key=("feature", "cell_a", "cell_b", "tier", "metric"),
    columns=(
        _c("feature", "VARCHAR", "The feature (eval.task_features).", False),
        *(
            column
            if column.name != "family_size"
            else _c(
                "family_size",
                "INTEGER",
                "Comparisons in the family (feature × dimension × metric × tier).",
                False,
            )
            for column in COMPARISONS.columns
        ),
    ),
)

QUESTIONS = Table(
    name="questions",
    grain="one row per evaluation type × factor its question compares (evaluation_types.yml)",
    primary_key=("evaluation_type", "factor"),
    columns=(
        _c("evaluation_type", "VARCHAR", "The evaluation type.", False),
        _c(
            "factor",
            "VARCHAR",
            "What the question varies: model, mcp_version, capability, skills or system_prompt.",
            False,
        ),
        _c(
            "description", "VARCHAR", "The question, in a sentence (the type's description).", False
        ),
        _c("active", "BOOLEAN", "The type is active in the benchmark configuration.", False),
        _c("cells", "INTEGER", "The type's cells in the warehouse (eval.cells).", False),
        _c("pairs", "INTEGER", "Pairs of those cells differing in the factor only.", False),
        _c("reason", "VARCHAR", "Why the question cannot be answered (no cell, no pair)."),
    ),
)

_QUESTION_COLUMN_DOCS = {
    "cell_a": (
        "Reference cell: the older version, the one without skills, the capability the type "
        "lists first, or the first name."
    ),
    "value_a": "Cell a's value of the factor ('none': without it).",
    "value_b": "Cell b's value of the factor.",
    "family_size": "Comparisons in the family (evaluation type × factor × metric × tier).",
    "p_adjusted": "Holm-Bonferroni adjusted p-value within the question's family.",
    "reason": "Why a figure is NULL (no run scored in both cells, fewer than 2 tasks...).",
}
"""Columns of ``eval.comparisons`` that read differently in ``eval.question_comparisons``."""

QUESTION_COMPARISONS = Table(
    name="question_comparisons",
    grain=(
        "one row per evaluation type × factor × pair of the type's cells differing in that "
        "factor only (one order: b against the reference a) × tier × averaged metric"
    ),
    primary_key=("evaluation_type", "factor", "cell_a", "cell_b", "tier", "metric"),
    columns=(
        _c("evaluation_type", "VARCHAR", "The evaluation type whose question this answers.", False),
        _c(
            "factor",
            "VARCHAR",
            "model, mcp_version, capability (the way of reaching the catalog, skills aside), "
            "skills (with and without the document, or two versions) or system_prompt.",
            False,
        ),
        _c(
            "setting",
            "VARCHAR",
            "What both cells share, e.g. 'model offline/x, skills none'.",
            False,
        ),
        *(
            Column(column.name, column.type, _QUESTION_COLUMN_DOCS[column.name], column.nullable)
            if column.name in _QUESTION_COLUMN_DOCS
            else column
            for column in COMPARISONS.columns
            if column.name != "dimension"
        ),
    ),
)

GATE_RESULTS = Table(
    name="gate_results",
    grain="one row per experiment × cell × tier × headline metric × language (all, fr, ...)",
    primary_key=("experiment_id", "cell_key", "tier", "metric", "language"),
    columns=(
        _c("experiment_id", "VARCHAR", "The experiment run checked.", False),
        _c(
            "previous_experiment_id",
            "VARCHAR",
            "The run it is compared with; NULL for a first run.",
        ),
        _c("cell_key", "VARCHAR", "Cell.", False),
        _c("model_name", "VARCHAR", "Model of the cell.", False),
        _c("tier", "VARCHAR", _TIER_DOC, False),
        _c("metric", "VARCHAR", "Headline metric.", False),
        _c("language", "VARCHAR", "Task language, or 'all'.", False),
        _c("pairs", "INTEGER", "(task, repeat) pairs scored in both runs.", False),
        _c("mean_previous", "DOUBLE", "Mean over the pairs in the previous run."),
        _c("mean_current", "DOUBLE", "Mean over the pairs in this run."),
        _c("mean_difference", "DOUBLE", "current - previous."),
        _c("ci_low", "DOUBLE", "Lower bound of the 95 % interval of the difference."),
        _c("ci_high", "DOUBLE", "Upper bound."),
        _c("p_value", "DOUBLE", "Paired test p-value, unadjusted."),
        _c(
            "p_adjusted",
            "DOUBLE",
            "Holm-adjusted within the cell's comparable comparisons; NULL when not comparable.",
        ),
        _c(
            "verdict",
            "VARCHAR",
            "better, worse or no detectable difference; NULL without pairs or when not comparable.",
        ),
        _c("failed", "BOOLEAN", "A significant drop at least the configured size.", False),
        _c(
            "comparable",
            "BOOLEAN",
            "False when a judge-decided score was judged by another judge or prompt, or with a "
            "criterion coverage further apart than the tolerance: no verdict, never failed "
            "(NULL only in rows written before the column existed).",
        ),
        _c("coverage_previous", "DOUBLE", "Criterion coverage of the tier in the previous run."),
        _c("coverage_current", "DOUBLE", "Criterion coverage of the tier in this run."),
        _c("reason", "VARCHAR", "Why nothing was compared, why not comparable, or a note."),
        _c(
            "world_changed",
            "BOOLEAN",
            "The two runs of the cell met another world (catalog snapshot or twin/toolset "
            "code): not comparable, whatever the scores (NULL in rows written before).",
        ),
    ),
)

STATISTICS_TABLES: tuple[Table, ...] = (
    METRIC_ESTIMATES,
    COMPARISONS,
    FEATURE_ESTIMATES,
    FEATURE_COMPARISONS,
    QUESTIONS,
    QUESTION_COMPARISONS,
    GATE_RESULTS,
)
"""Tables the statistics stage writes from the loaded ones (recomputed on every run)."""

JUDGE_CALIBRATION = Table(
    name="judge_calibration",
    grain="one row per judge × prompt hash(es) × verdict kind × label set content",
    primary_key=("judge_id", "prompt_hash", "verdict_kind", "set_sha"),
    columns=(
        _c("judge_id", "VARCHAR", "The judge calibrated, e.g. deterministic@3.", False),
        _c(
            "prompt_hash",
            "VARCHAR",
            "Prompt (or rule set) hash(es) of the kind's verdicts, sorted, ','-joined.",
            False,
        ),
        _c(
            "verdict_kind",
            "VARCHAR",
            "criterion, arguments, trajectory, failure_mode, or all (every kind pooled).",
            False,
        ),
        _c(
            "set_sha",
            "VARCHAR",
            "Hash of the calibration items the figures were computed on.",
            False,
        ),
        _c("calibration_files", "VARCHAR", "The calibration files, ','-joined.", False),
        _c(
            "label_set",
            "VARCHAR",
            "The labels the figures rest on: all, or blind (blind-review labels only).",
            False,
        ),
        _c(
            "label_methods",
            "VARCHAR",
            "How those labels were produced (written, verdict-shown, blind-review), ','-joined.",
            False,
        ),
        _c("items", "INTEGER", "Labelled items of the kind.", False),
        _c("scored", "INTEGER", "Items the judge decided: the n of kappa.", False),
        _c("coverage", "DOUBLE", "scored / items; NULL without items."),
        _c("agreements", "INTEGER", "Scored items where judge and human agree.", False),
        _c("accuracy", "DOUBLE", "agreements / scored; NULL when nothing is scored."),
        _c("human_pass", "INTEGER", "Items the human passed (failure modes: mode absent).", False),
        _c("judge_pass", "INTEGER", "Scored items the judge passed.", False),
        _c(
            "kappa",
            "DOUBLE",
            "Cohen's kappa over the scored items; NULL when undefined or on fewer than 30 "
            "items (reason).",
        ),
        _c("ci_low", "DOUBLE", "Lower bound of the bootstrap percentile interval of kappa."),
        _c("ci_high", "DOUBLE", "Upper bound of that interval."),
        _c("confidence", "DOUBLE", "Level of the interval (0.95).", False),
        _c("bootstrap_resamples", "INTEGER", "Resamples drawn.", False),
        _c(
            "bootstrap_defined",
            "INTEGER",
            "Resamples where kappa is defined (the CI's basis).",
            False,
        ),
        _c(
            "kappa_required",
            "DOUBLE",
            "Kappa required before the kind's scores decide (0.8).",
            False,
        ),
        _c("meets_requirement", "BOOLEAN", "kappa >= kappa_required.", False),
        _c("reason", "VARCHAR", "Why kappa or the interval is NULL."),
        _c("computed_at", "TIMESTAMPTZ", "When the agreement was computed.", False),
    ),
)

REVIEW_LABELS = Table(
    name="review_labels",
    grain="one row per imported review file × sample × label (rubric question or verdict)",
    primary_key=("review_id", "sample_id", "label", "tier"),
    columns=(
        _c("review_id", "VARCHAR", "The review file (name and content hash).", False),
        _c("sample_id", "VARCHAR", "The sample in that file.", False),
        _c(
            "label",
            "VARCHAR",
            "rubric:<question>, or the verdict's name in eval.verdicts (criterion:<i>, ...).",
            False,
        ),
        _c("tier", "VARCHAR", _TIER_DOC, False),
        _c("experiment_id", "VARCHAR", "The experiment the sample was drawn from.", False),
        _c("run_id", "VARCHAR", "cell_key|task_id|repeat_index of the reviewed run.", False),
        _c("cell_key", "VARCHAR", "Cell of the run.", False),
        _c("task_id", "VARCHAR", "Task of the run.", False),
        _c(
            "label_kind",
            "VARCHAR",
            "rubric, criterion, arguments, trajectory or failure_mode.",
            False,
        ),
        _c(
            "automated",
            "VARCHAR",
            "The judge's outcome (pass, fail, unscored), looked up in eval.verdicts at import; "
            "NULL for the rubric or when the run's verdict is no longer there.",
        ),
        _c("human", "VARCHAR", "The label: pass, fail, or n/a (rubric only).", False),
        _c("note", "VARCHAR", "The labeller's one-line rationale.", False),
        _c("labeller", "VARCHAR", "Who labelled (a name or an email).", False),
        _c("method", "VARCHAR", "How: blind-review (the judge's verdict not shown).", False),
        _c("labeller_human", "BOOLEAN", "Whether a person labelled.", False),
        _c("imported_at", "TIMESTAMPTZ", "When the file was imported.", False),
    ),
)

CALIBRATION_TABLES: tuple[Table, ...] = (JUDGE_CALIBRATION, REVIEW_LABELS)
"""Tables of labels and judge agreement (``judge calibrate``, ``review import``)."""

PIPELINE_TABLES: tuple[Table, ...] = (*TABLES, *STATISTICS_TABLES)
"""The tables the ``warehouse`` asset writes."""

ALL_TABLES: tuple[Table, ...] = (*PIPELINE_TABLES, *CALIBRATION_TABLES)
"""Every table of the ``eval`` schema."""

TABLES_BY_NAME: dict[str, Table] = {table.name: table for table in ALL_TABLES}

DDL: dict[str, str] = {table.name: table.ddl() for table in ALL_TABLES}
"""``CREATE TABLE`` statements by table name."""

SCHEMA_INFO_DDL = (
    f"CREATE TABLE IF NOT EXISTS {SCHEMA}.schema_info (key VARCHAR PRIMARY KEY, value VARCHAR)"
)


class SchemaVersionError(RuntimeError):
    """The DuckDB file was written by another warehouse schema version."""


def _add_new_columns(conn: duckdb.DuckDBPyConnection) -> None:
    """Add the nullable columns a file of this schema version lacks (columns only ever added)."""
    present: dict[str, set[str]] = {}
    for table, column in conn.execute(
        "SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = ?",
        [SCHEMA],
    ).fetchall():
        present.setdefault(table, set()).add(column)
    for table in TABLES:
        for column in table.columns:
            if column.nullable and column.name not in present.get(table.name, {column.name}):
                add = f"ADD COLUMN {column.name} {column.type}"
                conn.execute(f"ALTER TABLE {table.qualified} {add}")


def _drop_stale_statistics(conn: duckdb.DuckDBPyConnection) -> None:
    """Drop the statistics tables whose columns are not this code's (recomputed on every run).

    Their rows are derived from the loaded tables and rewritten whole by each statistics
    stage, so a table of an older shape is dropped and created anew rather than migrated.
    ``eval.gate_results`` keeps every experiment's gate: it is never dropped.
    """
    present: dict[str, list[str]] = {}
    for table, column in conn.execute(
        "SELECT table_name, column_name FROM information_schema.columns "
        "WHERE table_schema = ? ORDER BY table_name, ordinal_position",
        [SCHEMA],
    ).fetchall():
        present.setdefault(table, []).append(column)
    for table in STATISTICS_TABLES:
        if table is GATE_RESULTS:
            continue
        columns = present.get(table.name)
        if columns is not None and columns != list(table.column_names):
            conn.execute(f"DROP TABLE {table.qualified}")


def create_schema(conn: duckdb.DuckDBPyConnection) -> None:
    """Create the ``eval`` schema and every table if absent (idempotent).

    Raises:
        SchemaVersionError: If the file holds tables of another schema version.
    """
    conn.execute(f"CREATE SCHEMA IF NOT EXISTS {SCHEMA}")
    conn.execute(SCHEMA_INFO_DDL)
    row = conn.execute(
        f"SELECT value FROM {SCHEMA}.schema_info WHERE key = 'schema_version'"
    ).fetchone()
    if row is not None and row[0] != SCHEMA_VERSION:
        raise SchemaVersionError(
            f"the warehouse has schema version {row[0]}, this code writes {SCHEMA_VERSION}: "
            "rebuild it (delete the DuckDB file and reload)"
        )
    _drop_stale_statistics(conn)
    for ddl in DDL.values():
        conn.execute(ddl)
    _add_new_columns(conn)
    if row is None:
        conn.execute(
            f"INSERT INTO {SCHEMA}.schema_info VALUES ('schema_version', ?)", [SCHEMA_VERSION]
        )
