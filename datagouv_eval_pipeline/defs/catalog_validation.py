"""The ``catalog_validation`` asset: the resource pre-flight of every active task.

Drift quarantines only the tasks it touches: they are recorded here and skipped by the agent
runs, and the rest of the experiment proceeds. A pre-flight that could not reach the catalog at
all is another matter: the blocking check ``catalog_reachable`` stops the run there.
"""

import hashlib
from typing import Any

import dagster as dg

from datagouv_eval_pipeline.core.tasks import TASK_SPECS_DIR, Reference, load_task_specs
from datagouv_eval_pipeline.defs.interrupts import stop_if_requested
from datagouv_eval_pipeline.defs.resources import (
    CatalogResource,
    ExperimentSettings,
    RunStoreResource,
)
from datagouv_eval_pipeline.defs.task_specs import task_specs
from datagouv_eval_pipeline.pipeline.experiment import (
    DOCUMENT_KEY,
    STAGE,
    CatalogValidationDocument,
    PreflightProbe,
    RunStore,
    RunStoreError,
    preflight_problem,
    quarantined_tasks,
    read_preflight,
)


def references_for(store: RunStore, snapshot_id: str | None) -> list[Reference]:
    """The expected values the last pre-flight recomputed, when it saw the runs' catalog.

    A pre-flight of another snapshot (or of the live catalog for twin runs, and the reverse)
    says nothing about the catalog the runs used: the spec's values stand then.
    """
    document = read_preflight(store)
    if document is None or document.snapshot_id != snapshot_id:
        return []
    return document.report.references


@dg.asset(group_name="task_specs", deps=[task_specs], kinds={"python"})
def catalog_validation(
    context: dg.AssetExecutionContext, catalog: CatalogResource, run_store: RunStoreResource
) -> dg.MaterializeResult[None]:
    """Run every check of every active task against the catalog (the twin by default)."""
    # The validator (its HTTP client, retries) is imported when the asset runs, not at load.
    from datagouv_eval_pipeline.pipeline.preflight import ValidatorConfig, active, probe, validate

    stop_if_requested(context)
    specs = active(load_task_specs([TASK_SPECS_DIR]))
    snapshot = catalog.served_snapshot()
    proxy, ca_bundle = catalog.validation_proxy() or (None, None)
    config = ValidatorConfig(
        urls=catalog.validation_urls(),
        now=catalog.snapshot_clock(),
        source=f"twin {snapshot}" if snapshot else "live data.gouv.fr",
        proxy=proxy,
        ca_bundle=ca_bundle,
    )
    answers, detail = probe(config)
    if not answers:
        context.log.error("the catalog does not answer: %s", detail)
    report = validate(specs, config)
    document = CatalogValidationDocument(
        snapshot_id=snapshot, report=report, probe=PreflightProbe(ok=answers, detail=detail)
    )
    run_store.store().write(STAGE, DOCUMENT_KEY, document)
    checks = [check for task in report.tasks for check in task.checks]
    unavailable = [c for c in checks if c.outcome == "error"]
    if report.quarantined:
        context.log.warning("quarantined tasks: %s", ", ".join(report.quarantined))
    changed = [ref for ref in report.references if ref.changed]
    for ref in changed:
        context.log.warning(
            "%s %s changed: %g -> %g (followed: answers are compared with the new value)",
            ref.task_id,
            ref.name,
            ref.spec_value,
            ref.effective,
        )
    fingerprint = hashlib.sha256(report.model_dump_json(exclude={"now"}).encode()).hexdigest()
    return dg.MaterializeResult(
        metadata={
            "source": report.source,
            "snapshot_id": snapshot or "live",
            "catalog_answers": answers,
            "tasks": len(report.tasks),
            "ok": len(report.ok),
            "quarantined": dg.MetadataValue.json(report.quarantined),
            "checks": len(checks),
            "checks_errored": len(unavailable),
            "references": len(report.references),
            "references_changed": dg.MetadataValue.json(
                [f"{r.task_id}.{r.name}: {r.spec_value:g} -> {r.effective:g}" for r in changed]
            ),
        },
        data_version=dg.DataVersion(fingerprint[:16]),
    )


@dg.asset_check(
    asset=catalog_validation,
    blocking=True,
    description="The catalog answered and some task may run (else the run stops here).",
)
def catalog_reachable(
    run_store: RunStoreResource, experiment: ExperimentSettings
) -> dg.AssetCheckResult:
    """Fail when the catalog does not answer, every check errored or every task is quarantined.

    A live run without the network would otherwise quarantine every task and "succeed" with
    no result; this blocking check fails the run instead, with the reason.
    """
    try:
        document = read_preflight(run_store.store())
    except RunStoreError as error:
        # An unreadable report stops the run with its file and field, not a traceback.
        return dg.AssetCheckResult(
            passed=False, metadata={"reason": dg.MetadataValue.md(f"- {error}")}
        )
    problem = preflight_problem(
        document, skip_validation=experiment.skip_validation, task_ids=experiment.task_ids
    )
    metadata: dict[str, Any] = {"reason": dg.MetadataValue.md(f"- {problem}" if problem else "ok")}
    if document is not None:
        report = document.report
        checks = [check for task in report.tasks for check in task.checks]
        metadata |= {
            "checks": len(checks),
            "errored": sum(1 for c in checks if c.outcome == "error"),
            "quarantined": len(report.quarantined),
        }
    return dg.AssetCheckResult(passed=problem is None, metadata=metadata)


@dg.asset_check(
    asset=catalog_validation,
    description="No task is quarantined (warns: quarantined tasks are skipped, not fatal).",
)
def no_quarantined_tasks(run_store: RunStoreResource) -> dg.AssetCheckResult:
    """Warn with the quarantined tasks and why."""
    try:
        quarantined = quarantined_tasks(run_store.store())
    except RunStoreError as error:
        return dg.AssetCheckResult(
            passed=False,
            severity=dg.AssetCheckSeverity.WARN,
            metadata={"quarantined": dg.MetadataValue.md(f"- {error}")},
        )
    return dg.AssetCheckResult(
        passed=not quarantined,
        severity=dg.AssetCheckSeverity.WARN,
        metadata={
            "quarantined": dg.MetadataValue.md(
                "\n".join(f"- {task}: {why}" for task, why in quarantined.items()) or "none"
            )
        },
    )
