"""The Dagster code location (``workspace.yaml`` and ``[tool.dagster]`` point here).

One graph: task specs and the catalog pre-flight, then per cell the agent runs, action mappings
and judge scores, then the DuckDB warehouse, its statistics (error bars, comparisons, the
regression gate), the dbt metrics and the report. The in-process executor keeps a run to one
process: on two cores a subprocess per step costs more than the work.

Nothing is built at import: Dagster calls ``defs`` (``@dg.definitions``) when it loads the code
location, and ``build_definitions`` imports the asset modules then. Importing this module costs
no more than importing Dagster.
"""

from functools import cache

import dagster as dg


@cache
def build_definitions() -> dg.Definitions:
    """The code location's assets, checks, jobs, sensors and resources (built once per process).

    Also makes the local instance's SQLite commits skip the fsync, before any run stores an
    event (``defs/instance_storage.py``).
    """
    from datagouv_eval_pipeline.defs import checks
    from datagouv_eval_pipeline.defs.action_mappings import action_mappings
    from datagouv_eval_pipeline.defs.agent_runs import agent_runs
    from datagouv_eval_pipeline.defs.automation import (
        active_cell_partitions,
        agent_runs_job,
        eval_automation,
        experiment_dry_run,
        experiment_job,
        new_builds,
        new_cells,
        weekly_experiment,
    )
    from datagouv_eval_pipeline.defs.catalog_validation import (
        catalog_reachable,
        catalog_validation,
        no_quarantined_tasks,
    )
    from datagouv_eval_pipeline.defs.console import brief_console_logger
    from datagouv_eval_pipeline.defs.dbt import dbt_cli_resource, dbt_metrics_assets
    from datagouv_eval_pipeline.defs.instance_storage import relax_instance_sqlite
    from datagouv_eval_pipeline.defs.judge_calibration import judge_calibration
    from datagouv_eval_pipeline.defs.judge_scores import judge_scores
    from datagouv_eval_pipeline.defs.report import REPORT_DEPS, experiment_report_asset
    from datagouv_eval_pipeline.defs.resources import (
        CatalogResource,
        ExperimentSettings,
        JudgeResource,
        RunStoreResource,
        WarehouseResource,
    )
    from datagouv_eval_pipeline.defs.statistics import no_regression
    from datagouv_eval_pipeline.defs.task_specs import specs_valid, task_specs
    from datagouv_eval_pipeline.defs.versions import (
        OBSERVATION_JOBS,
        cell_setups,
        cells_current,
        task_spec_files,
        version_changes,
    )
    from datagouv_eval_pipeline.defs.warehouse import warehouse

    relax_instance_sqlite()
    return dg.Definitions(
        assets=[
            cell_setups,
            task_spec_files,
            task_specs,
            catalog_validation,
            agent_runs,
            action_mappings,
            judge_scores,
            warehouse,
            judge_calibration,
            dbt_metrics_assets,
            experiment_report_asset(REPORT_DEPS),
        ],
        asset_checks=[
            specs_valid,
            catalog_reachable,
            no_quarantined_tasks,
            checks.transcripts_present,
            checks.no_duplicate_runs,
            checks.cells_succeeded,
            cells_current,
            checks.runs_match_partitions,
            checks.cell_coverage,
            checks.judge_coverage,
            checks.scores_in_range,
            no_regression,
        ],
        jobs=[experiment_job, agent_runs_job, experiment_dry_run, *OBSERVATION_JOBS],
        schedules=[weekly_experiment],
        sensors=[active_cell_partitions, new_cells, new_builds, eval_automation, version_changes],
        resources={
            "experiment": ExperimentSettings(),
            "catalog": CatalogResource(),
            "run_store": RunStoreResource(),
            "warehouse": WarehouseResource(),
            "judge": JudgeResource(),
            "dbt": dbt_cli_resource,
        },
        executor=dg.in_process_executor,
        # `console` stays the default; `datagouv-eval experiment` selects `brief` in its run config.
        loggers={"console": dg.colored_console_logger, "brief": brief_console_logger},
    )


@dg.definitions
def defs() -> dg.Definitions:
    """What Dagster loads (``workspace.yaml``, ``[tool.dagster]``): :func:`build_definitions`."""
    return build_definitions()
