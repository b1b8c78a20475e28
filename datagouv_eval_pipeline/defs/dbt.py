"""The ``dbt_metrics`` models as Dagster assets, their dbt tests as asset checks.

Asset keys:

* dbt sources keep dagster-dbt's default key ``["eval", <table>]``: the keys the ``warehouse``
  multi-asset produces, so lineage joins and the models run after the warehouse;
* dbt models get ``["metrics", <model>]`` (dagster-dbt's default is the bare model name, since
  the models set no custom schema): one namespace for everything dbt builds, in group
  ``metrics``, materialized eagerly once the warehouse has new data.

Each model's materialization carries its row count (``dagster/row_count``), and the ranking and
the answered questions carry a preview of their rows as table metadata (``defs/result_tables.py``).

Every dbt test becomes an asset check: tests on models check ``["metrics", <model>]``, tests on
sources check the warehouse tables ``["eval", <table>]``. A failing test (severity error) fails
the check and the step (``dbt build`` exits non-zero), and dbt skips the models downstream of it.

The models run in pool ``duckdb_writer`` (limit it to 1): dbt-duckdb writes the warehouse file,
and DuckDB allows one writer process, which dbt-duckdb does not retry.
"""

import contextlib
import io
import os
import re
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from functools import cached_property
from importlib import metadata
from pathlib import Path
from typing import Any

import dagster as dg
from dagster_dbt import (
    DagsterDbtTranslator,
    DagsterDbtTranslatorSettings,
    DbtCliResource,
    dbt_assets,
)
from packaging import version

from datagouv_eval_pipeline.defs.dbt_project import (
    DBT_EXECUTABLE,
    dbt_metrics_project,
    ensure_manifest,
)
from datagouv_eval_pipeline.defs.interrupts import (
    raise_stopped,
    stop_if_requested,
    terminated_on_stop,
)
from datagouv_eval_pipeline.defs.resources import DUCKDB_ENV, WarehouseResource
from datagouv_eval_pipeline.defs.result_tables import MODEL_PREVIEWS, preview_metadata, row_count
from datagouv_eval_pipeline.pipeline.agents import current_token
from datagouv_eval_pipeline.pipeline.warehouse import connect

DUCKDB_POOL = "duckdb_writer"
"""The concurrency pool of every DuckDB writer (the warehouse asset and dbt)."""

METRICS_GROUP = "metrics"
METRICS_KEY_PREFIX = "metrics"


class MetricsDbtTranslator(DagsterDbtTranslator):
    """Model keys under ``metrics/``, group ``metrics``, eager automation; sources untouched."""

    def get_asset_key(self, dbt_resource_props: Mapping[str, Any]) -> dg.AssetKey:
        """``["eval", <table>]`` for sources (the warehouse keys), ``["metrics", <model>]`` else."""
        key = super().get_asset_key(dbt_resource_props)
        if dbt_resource_props["resource_type"] == "source":
            return key
        return key.with_prefix(METRICS_KEY_PREFIX)

    def get_group_name(self, dbt_resource_props: Mapping[str, Any]) -> str | None:
        """Group ``metrics`` for what dbt builds; sources belong to the warehouse's group."""
        if dbt_resource_props["resource_type"] == "source":
            return None
        return METRICS_GROUP

    def get_automation_condition(
        self, dbt_resource_props: Mapping[str, Any]
    ) -> dg.AutomationCondition[Any] | None:
        """Rebuild the models whenever the warehouse (or an upstream model) updates."""
        return dg.AutomationCondition.eager()


dbt_translator = MetricsDbtTranslator(
    # Source tests (not null, ranges, relationships on eval.*) become checks on the warehouse
    # tables instead of mere observations, so a bad row shows as a failed check there.
    settings=DagsterDbtTranslatorSettings(enable_source_tests_as_checks=True)
)


class VenvDbtCliResource(DbtCliResource):
    """``DbtCliResource`` that knows its dbt version without running ``dbt --version``.

    dagster-dbt runs ``dbt --version`` once per resource instance (so once per run) only to tell
    dbt Core from dbt Fusion: a second dbt start-up plus a PyPI lookup, 5 to 15 s on two cores.
    When the executable is the venv's own dbt, the installed dbt-core is that version.
    """

    @cached_property
    def _cli_version(self) -> version.Version:
        if Path(self.dbt_executable).parent == Path(sys.executable).parent:
            return version.parse(metadata.version("dbt-core"))
        return super()._cli_version


dbt_cli_resource = VenvDbtCliResource(
    project_dir=os.fspath(dbt_metrics_project.project_dir),
    profiles_dir=os.fspath(dbt_metrics_project.profiles_dir),
    dbt_executable=DBT_EXECUTABLE,
)
"""The ``dbt`` resource: the venv's dbt CLI on ``dbt_metrics`` (or its packaged copy)."""


@contextmanager
def _env(name: str, value: str) -> Iterator[None]:
    # DbtCliResource.cli has no env parameter: it copies os.environ for the dbt subprocess and
    # also reads the profile in this process, so the variable must be set here while dbt runs.
    previous = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = previous


@dbt_assets(
    manifest=ensure_manifest(dbt_metrics_project),
    project=dbt_metrics_project,
    dagster_dbt_translator=dbt_translator,
    name="dbt_metrics_assets",
    pool=DUCKDB_POOL,
)
def dbt_metrics_assets(
    context: dg.AssetExecutionContext, dbt: DbtCliResource, warehouse: WarehouseResource
) -> Iterator[Any]:
    """``dbt build`` of the selected models and tests against the warehouse DuckDB file.

    dbt prints two lines per model and test (about 230); they are kept off the console and
    summarised in one line, or shown (their failing part) when the build fails.
    """
    stop_if_requested(context)
    # dbt runs with cwd = the project dir: the path must be absolute.
    path = str(warehouse.db_path().resolve())
    output = io.StringIO()
    started = time.perf_counter()
    with _env(DUCKDB_ENV, path):
        invocation = dbt.cli(["build"], context=context, raise_on_error=False)
        # dagster-dbt echoes every dbt line to stdout: collect them, yield the events after.
        with contextlib.redirect_stdout(output), terminated_on_stop(invocation.process):
            events = list(invocation.stream())
    token = current_token()
    if token is not None and token.cancelled:
        raise_stopped(context, f"dbt build stopped ({token.reason}); the next run rebuilds it")
    yield from with_results(context, events, Path(path))
    lines = output.getvalue().splitlines()
    done = next((line for line in reversed(lines) if line.startswith("Done. ")), "")
    elapsed = time.perf_counter() - started
    if invocation.is_successful():
        context.log.info("dbt build on %s: %s in %.0f s", path, done[6:] or "done", elapsed)
        return
    problems = [line for line in lines if _DBT_PROBLEM.search(line)][-20:]
    context.log.error("dbt build on %s failed:\n%s", path, "\n".join(problems or lines[-20:]))
    raise dg.Failure(description=f"dbt build failed: {done[6:] or 'see the dbt log'}")


def with_results(context: dg.AssetExecutionContext, events: list[Any], db: Path) -> Iterator[Any]:
    """The dbt events, each model's output with its row count and, for some, a preview.

    Read once the build is over (dbt-duckdb has closed the file), in one read-only connection.
    """
    if not db.exists() or not any(isinstance(event, dg.Output) for event in events):
        yield from events
        return
    with connect(db, read_only=True) as conn:
        for event in events:
            if isinstance(event, dg.Output):
                model = context.asset_key_for_output(event.output_name).path[-1]
                extra: dict[str, Any] = {}
                count = row_count(conn, model)
                if count is not None:
                    extra["dagster/row_count"] = count
                if model in MODEL_PREVIEWS:
                    extra |= preview_metadata(conn, MODEL_PREVIEWS[model])
                event = event.with_metadata({**event.metadata, **extra})
            yield event


_DBT_PROBLEM = re.compile(r"\b(ERROR|FAIL|Failure|Error|WARN)\b")
