"""One experiment end to end, as plain functions the Dagster assets and the benchmark call.

* ``store``: the run store, one JSON file per (stage, cell) written atomically;
* ``cache``: agent runs cached by the hash of their inputs;
* ``plan``: which cells and tasks an experiment covers, and its cost estimate;
* ``stages``: the stage functions (agents → action mappings → judge scores → warehouse).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from datagouv_eval_pipeline.base.faces import lazy_attributes

if TYPE_CHECKING:
    from datagouv_eval_pipeline.pipeline.experiment.builds import changed_builds
    from datagouv_eval_pipeline.pipeline.experiment.cache import (
        NOT_AN_INPUT,
        AgentRunCache,
        default_agent_cache,
    )
    from datagouv_eval_pipeline.pipeline.experiment.catalog import (
        ApiCatalogLookup,
        StoreCatalogLookup,
        twin_catalog_lookup,
    )
    from datagouv_eval_pipeline.pipeline.experiment.documents import (
        ActionMappingsDocument,
        AgentRunsDocument,
        CatalogValidationDocument,
        JudgeScoresDocument,
        PreflightProbe,
        TaskSpecsDocument,
    )
    from datagouv_eval_pipeline.pipeline.experiment.estimate import current_snapshot_id
    from datagouv_eval_pipeline.pipeline.experiment.fingerprints import (
        cell_code_fingerprint,
        shared_run_code,
        stage_code_version,
    )
    from datagouv_eval_pipeline.pipeline.experiment.lanes import (
        plan_lanes,
        pool_name,
        provider_pool_limits,
        provider_slots,
        running_lanes,
    )
    from datagouv_eval_pipeline.pipeline.experiment.live import (
        live_config,
        offline_only,
        preflight_problem,
    )
    from datagouv_eval_pipeline.pipeline.experiment.plan import (
        ExperimentPlan,
        SelectionError,
        plan_experiment,
        select_tasks,
    )
    from datagouv_eval_pipeline.pipeline.experiment.quarantine import (
        DOCUMENT_KEY,
        STAGE,
        quarantined_tasks,
        read_preflight,
    )
    from datagouv_eval_pipeline.pipeline.experiment.stages import (
        ACTION_MAPPINGS,
        AGENT_RUNS,
        JUDGE_SCORES,
        StageInputError,
        cell_documents,
        judge_cell,
        map_actions,
        run_agents,
    )
    from datagouv_eval_pipeline.pipeline.experiment.staleness import stale_cells
    from datagouv_eval_pipeline.pipeline.experiment.store import (
        RunStore,
        RunStoreError,
        content_digest,
        default_run_store,
    )

_MODULE_OF: dict[str, str] = {
    "ACTION_MAPPINGS": ".stages",
    "AGENT_RUNS": ".stages",
    "ActionMappingsDocument": ".documents",
    "AgentRunCache": ".cache",
    "AgentRunsDocument": ".documents",
    "ApiCatalogLookup": ".catalog",
    "CatalogValidationDocument": ".documents",
    "DOCUMENT_KEY": ".quarantine",
    "ExperimentPlan": ".plan",
    "JUDGE_SCORES": ".stages",
    "JudgeScoresDocument": ".documents",
    "NOT_AN_INPUT": ".cache",
    "PreflightProbe": ".documents",
    "RunStore": ".store",
    "RunStoreError": ".store",
    "STAGE": ".quarantine",
    "SelectionError": ".plan",
    "StageInputError": ".stages",
    "StoreCatalogLookup": ".catalog",
    "TaskSpecsDocument": ".documents",
    "cell_code_fingerprint": ".fingerprints",
    "cell_documents": ".stages",
    "changed_builds": ".builds",
    "content_digest": ".store",
    "current_snapshot_id": ".estimate",
    "default_agent_cache": ".cache",
    "default_run_store": ".store",
    "judge_cell": ".stages",
    "live_config": ".live",
    "map_actions": ".stages",
    "offline_only": ".live",
    "plan_experiment": ".plan",
    "plan_lanes": ".lanes",
    "pool_name": ".lanes",
    "preflight_problem": ".live",
    "provider_pool_limits": ".lanes",
    "provider_slots": ".lanes",
    "quarantined_tasks": ".quarantine",
    "read_preflight": ".quarantine",
    "run_agents": ".stages",
    "running_lanes": ".lanes",
    "select_tasks": ".plan",
    "shared_run_code": ".fingerprints",
    "stage_code_version": ".fingerprints",
    "stale_cells": ".staleness",
    "twin_catalog_lookup": ".catalog",
}
"""Each public name, and the module that defines it."""

if not TYPE_CHECKING:  # hidden from mypy, which then checks each name imported from the face
    __getattr__ = lazy_attributes(__name__, _MODULE_OF)


__all__ = [
    "ACTION_MAPPINGS",
    "AGENT_RUNS",
    "DOCUMENT_KEY",
    "JUDGE_SCORES",
    "NOT_AN_INPUT",
    "STAGE",
    "ActionMappingsDocument",
    "AgentRunCache",
    "AgentRunsDocument",
    "ApiCatalogLookup",
    "CatalogValidationDocument",
    "ExperimentPlan",
    "JudgeScoresDocument",
    "PreflightProbe",
    "RunStore",
    "RunStoreError",
    "SelectionError",
    "StageInputError",
    "StoreCatalogLookup",
    "TaskSpecsDocument",
    "cell_code_fingerprint",
    "cell_documents",
    "changed_builds",
    "content_digest",
    "current_snapshot_id",
    "default_agent_cache",
    "default_run_store",
    "judge_cell",
    "live_config",
    "map_actions",
    "offline_only",
    "plan_experiment",
    "plan_lanes",
    "pool_name",
    "preflight_problem",
    "provider_pool_limits",
    "provider_slots",
    "quarantined_tasks",
    "read_preflight",
    "run_agents",
    "running_lanes",
    "select_tasks",
    "shared_run_code",
    "stage_code_version",
    "stale_cells",
    "twin_catalog_lookup",
]
