"""Test tasks, drift overlays and helpers of the pre-flight tests."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

from datagouv_eval_pipeline.core.tasks.spec import TaskSpec
from datagouv_eval_pipeline.pipeline.preflight import ValidatorConfig
from datagouv_eval_pipeline.world.catalogue.overlay import DriftOverlay
from datagouv_eval_pipeline.world.catalogue.urls import TwinUrls

SPORTS = "53699ebba3a729239d205f4f"
SPORTS_TABLE = "ea4f5879-af40-4e3e-949d-812d6eeb5e02"
DATA_ES = "672cf66f5e554cca4a916026"
DIAG = "5bc5df57634f417a900a5ed0"
DIAG_TABLE = "7987214d-949e-4245-b005-5cc4e7a5df36"
CULTURE_API = "672cfc6bfc959adaf03a4d00"
PERMITS = "689c42fa521ccf80ce954f83"
PERMITS_NONRES = "8f23d65f-7142-4ac5-94c1-077b028255bf"
RNE = "5c34c4d1634f4173183a64f1"
RNE_CM = "3b6b2281-b9d9-4959-ae9d-c2c166dff118"
RNE_EPCI = "d5f400de-ae3f-4966-8cb6-a85c70c6c24a"
PALISSY = "615bcdd729be9185b3b0681a"
PALISSY_CSV = "3e8ed2dd-4052-4f93-ad19-ef71016ab7b4"
TRANSPORTS = "55e4129788ee386899a46ec1"
TRANSPORTS_TABLE = "d8581b5b-3372-4e73-9323-036e543e2bef"


NOW = datetime.fromisoformat("2026-06-12T06:00:00+00:00")
"""The snapshot's date: the twin's clock."""


def config(urls: TwinUrls, baselines_dir: Path, **extra: Any) -> ValidatorConfig:
    """A validator configuration on the twin's clock."""
    return ValidatorConfig(urls=urls, baselines_dir=baselines_dir, **{"now": NOW, **extra})


def make_task(
    task_id: str,
    resources: list[dict[str, Any]],
    expected_values: list[dict[str, Any]] | None = None,
    status: str = "active",
) -> TaskSpec:
    """A minimal valid task whose only interesting parts are its resources and values."""
    return TaskSpec.model_validate(
        {
            "task_id": task_id,
            "version": 1,
            "task_name": f"pre-flight test {task_id}",
            "meta": {"status": status, "source": "synthetic"},
            "prompt": "Question de test.",
            "evaluation_criteria": {"minimal": [{"criteria": "répond"}]},
            "action_chain": {
                "minimal": {
                    "chain": "search.datasets",
                    "required_actions": [{"name": "search.datasets"}],
                }
            },
            "resources": resources,
            "expected_values": expected_values or [],
        }
    )


def ref(
    kind: str, ident: str, *checks: str | dict[str, Any], dataset_id: str | None = None
) -> dict[str, Any]:
    """A ``resources`` entry; a check is a name or ``{"fn": …, "params": …}``."""
    entry: dict[str, Any] = {
        "type": kind,
        "id": ident,
        "checks": [c if isinstance(c, dict) else {"fn": c} for c in checks],
    }
    if dataset_id is not None:
        entry["dataset_id"] = dataset_id
    return entry


def count(
    name: str, value: float, resource_id: str, *filters: tuple[str, str, Any], **extra: Any
) -> dict[str, Any]:
    """An expected value recomputed with an aggregate (``count`` unless ``aggregate=`` is given)."""
    recompute: dict[str, Any] = {
        "resource_id": resource_id,
        "filters": [{"column": c, "operator": op, "value": v} for c, op, v in filters],
        "aggregate": extra.pop("aggregate", "count"),
    }
    if "column" in extra:
        recompute["column"] = extra.pop("column")
    return {"name": name, "value": value, "recompute": recompute, **extra}


TOULOUSE = ("Code de la commune", "exact", "31555")

# One task per behaviour; the comments say what the drift overlay below does to each.
TASKS: list[TaskSpec] = [
    # title renamed → quarantined
    make_task("task_0101", [ref("dataset", DIAG, "same_title_description")]),
    # description replaced → quarantined
    make_task("task_0102", [ref("dataservice", CULTURE_API, "same_title_description")]),
    # untouched objects → ok
    make_task(
        "task_0103",
        [
            ref("dataset", SPORTS, "same_title_description"),
            ref("dataservice", DATA_ES, "same_title_description"),
        ],
    ),
    # resource removed → download and Tabular fail
    make_task(
        "task_0104",
        [
            ref(
                "resource",
                PERMITS_NONRES,
                "download_url_reachable",
                "tabular_api_available",
                dataset_id=PERMITS,
            )
        ],
    ),
    # taken out of Tabular only → Tabular fails, download still passes
    make_task(
        "task_0105",
        [
            ref(
                "resource",
                RNE_EPCI,
                "download_url_reachable",
                "tabular_api_available",
                dataset_id=RNE,
            )
        ],
    ),
    # a download-only resource, untouched → ok
    make_task(
        "task_0106",
        [
            ref(
                "resource",
                PALISSY_CSV,
                "tabular_api_unavailable",
                "download_url_reachable",
                dataset_id=PALISSY,
            )
        ],
    ),
    # code_postal becomes int, numero_certificat dropped → quarantined
    make_task("task_0107", [ref("resource", DIAG_TABLE, "schema_unchanged", dataset_id=DIAG)]),
    # the same resource, but only two untouched columns checked → ok
    make_task(
        "task_0108",
        [
            ref(
                "resource",
                DIAG_TABLE,
                {"fn": "schema_unchanged", "params": {"columns": ["nom", "commune"]}},
                dataset_id=DIAG,
            )
        ],
    ),
    # 144 rows cut to 100: outside ±10 % of the baseline → quarantined
    make_task(
        "task_0109",
        [
            ref(
                "resource",
                TRANSPORTS_TABLE,
                {"fn": "row_count_within", "params": {"tolerance": 0.1}},
                dataset_id=TRANSPORTS,
            )
        ],
    ),
    # the same cut, within absolute bounds → ok
    make_task(
        "task_0110",
        [
            ref(
                "resource",
                TRANSPORTS_TABLE,
                {"fn": "row_count_within", "params": {"min": 50, "max": 200}},
                dataset_id=TRANSPORTS,
            )
        ],
    ),
    # last_modified moved back to 2024 → quarantined
    make_task(
        "task_0111",
        [
            ref(
                "dataset",
                TRANSPORTS,
                {
                    "fn": "update_date_more_recent_than",
                    "params": {"type": "absolute", "value": "2026-01-01"},
                },
            )
        ],
    ),
    # one Toulouse councillor (a woman) removed → both expected values move: followed, not drift
    make_task(
        "task_0112",
        [ref("resource", RNE_CM, "tabular_api_available", dataset_id=RNE)],
        [
            count("conseillers_toulouse", 69, RNE_CM, TOULOUSE),
            count("conseilleres_toulouse", 35, RNE_CM, TOULOUSE, ("Code sexe", "exact", "F")),
        ],
    ),
    # counts on the untouched sports table → ok
    make_task(
        "task_0113",
        [ref("dataset", SPORTS, "same_title_description")],
        [count("equipements_gers", 1023, SPORTS_TABLE, ("dep_code", "exact", "32"))],
    ),
]

DRIFT = DriftOverlay.from_data(
    {
        "name": "test-drift",
        "description": "one change per check type, on objects of different test tasks",
        "changes": [
            {"op": "rename_title", "type": "dataset", "id": DIAG, "title": "Annuaire (archive)"},
            {
                "op": "set_description",
                "type": "dataservice",
                "id": CULTURE_API,
                "description": "Remplacé.",
            },
            {"op": "remove_resource", "resource_id": PERMITS_NONRES},
            {"op": "remove_from_tabular", "resource_id": RNE_EPCI},
            {
                "op": "change_column",
                "resource_id": DIAG_TABLE,
                "column": "code_postal",
                "type": "int",
            },
            {"op": "drop_column", "resource_id": DIAG_TABLE, "column": "numero_certificat"},
            {"op": "set_row_count", "resource_id": TRANSPORTS_TABLE, "rows": 100},
            {
                "op": "set_last_modified",
                "type": "dataset",
                "id": TRANSPORTS,
                "value": "2024-03-01T00:00:00",
            },
            {
                "op": "drop_rows",
                "resource_id": RNE_CM,
                "filters": [
                    {"column": "Code de la commune", "value": "31555"},
                    {"column": "Code sexe", "value": "F"},
                ],
                "limit": 1,
            },
        ],
    }
)
DRIFTED = {
    "task_0101",
    "task_0102",
    "task_0104",
    "task_0105",
    "task_0107",
    "task_0109",
    "task_0111",
}
"""Exactly the test tasks whose premise DRIFT breaks (task_0112's counts move: followed)."""


def tasks_checking(specs: list[TaskSpec], object_id: str, fn: str | None = None) -> list[str]:
    """Active tasks with a pre-flight check on ``object_id`` (of kind ``fn`` when given), sorted.

    Drift tests on the committed task set use it, so a task added on the same catalogue object
    is expected in the quarantine without editing the test.
    """
    return sorted(
        spec.task_id
        for spec in specs
        if spec.meta.status == "active"
        and any(
            ref.id == object_id and any(fn is None or check.fn == fn for check in ref.checks)
            for ref in spec.resources
        )
    )
