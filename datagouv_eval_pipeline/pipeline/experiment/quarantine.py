"""Which tasks the last resource pre-flight quarantined, read from the run store.

The ``catalog_validation`` stage writes its report under one document; the agent runs skip the
quarantined tasks and the report lists them with the first failing check.
"""

from __future__ import annotations

from datagouv_eval_pipeline.pipeline.experiment.documents import CatalogValidationDocument
from datagouv_eval_pipeline.pipeline.experiment.store import RunStore

STAGE = "catalog_validation"
"""The run store stage of the pre-flight report."""
DOCUMENT_KEY = "all"
"""Its one document (the pre-flight covers every task at once)."""


def read_preflight(store: RunStore) -> CatalogValidationDocument | None:
    """The last pre-flight document, or None when ``catalog_validation`` never ran.

    Raises:
        RunStoreError: The document does not validate (naming the file and the field).
    """
    return store.read_document(STAGE, DOCUMENT_KEY, CatalogValidationDocument)


def quarantined_tasks(store: RunStore) -> dict[str, str]:
    """Quarantined task ids with the first failing check, from the last pre-flight.

    Raises:
        RunStoreError: The pre-flight document does not validate (naming the file and field).
    """
    document = read_preflight(store)
    if document is None:
        return {}
    report = document.report
    out: dict[str, str] = {}
    for task in report.tasks:
        if task.status == "quarantined":
            failing = task.failing
            out[task.task_id] = failing[0].reason if failing else "quarantined"
    return out
