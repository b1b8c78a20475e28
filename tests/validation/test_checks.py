"""Every check type passes on the clean twin and fails on real drift, over real HTTP."""

from __future__ import annotations

import csv
import io
import math
import socket
from datetime import datetime
from pathlib import Path

from datagouv_eval_pipeline.pipeline.preflight import (
    DiffEntry,
    PreflightCheckResult,
    ValidationReport,
    validate,
)
from datagouv_eval_pipeline.world.catalogue.catalog import CatalogStore
from datagouv_eval_pipeline.world.catalogue.urls import TwinUrls

from .factories import (
    CULTURE_API,
    DIAG,
    PALISSY,
    PALISSY_CSV,
    RNE,
    RNE_CM,
    SPORTS,
    SPORTS_TABLE,
    TASKS,
    TOULOUSE,
    TRANSPORTS,
    TRANSPORTS_TABLE,
    config,
    count,
    make_task,
    ref,
)


def checks_of(report: ValidationReport, task_id: str) -> list[PreflightCheckResult]:
    return report.task(task_id).checks


def test_every_check_passes_on_the_clean_twin(clean_report: ValidationReport) -> None:
    assert [t.task_id for t in clean_report.tasks] == sorted(t.task_id for t in TASKS)
    failing = [(t.task_id, c.label, c.reason) for t in clean_report.tasks for c in t.failing]
    assert failing == []
    assert clean_report.quarantined == []


def test_same_title_description_diffs_a_renamed_title(
    drift_report: ValidationReport, store: CatalogStore
) -> None:
    (check,) = checks_of(drift_report, "task_0101")
    record = store.dataset(DIAG)
    assert record is not None
    assert check.outcome == "failed"
    assert check.diffs == [
        DiffEntry(field="title", baseline=record["title"], current="Annuaire (archive)")
    ]
    assert check.reason == "title differs from the baseline"


def test_same_title_description_diffs_a_new_description(
    drift_report: ValidationReport, store: CatalogStore
) -> None:
    (check,) = checks_of(drift_report, "task_0102")
    record = store.dataservice(CULTURE_API)
    assert record is not None
    assert check.outcome == "failed"
    assert check.diffs == [
        DiffEntry(field="description", baseline=record["description"], current="Remplacé.")
    ]


def test_a_removed_resource_fails_download_and_tabular(drift_report: ValidationReport) -> None:
    download, tabular = checks_of(drift_report, "task_0104")
    assert (download.fn, download.outcome) == ("download_url_reachable", "failed")
    assert download.diffs == [DiffEntry(field="download", baseline="reachable", current="HTTP 404")]
    assert "HEAD " in download.reason and "/api/1/datasets/r/" in download.reason
    assert (tabular.fn, tabular.outcome) == ("tabular_api_available", "failed")
    # api-tabular keeps a deleted resource's index entry: 410, not 404.
    assert tabular.diffs == [
        DiffEntry(field="tabular_api", baseline="available", current="HTTP 410")
    ]


def test_leaving_tabular_keeps_the_download_passing(drift_report: ValidationReport) -> None:
    download, tabular = checks_of(drift_report, "task_0105")
    assert download.outcome == "passed" and "HTTP 200" in download.reason
    assert tabular.outcome == "failed"


def test_tabular_api_unavailable_passes_for_downloads_and_fails_once_in_tabular(
    twin: TwinUrls, tmp_path: Path
) -> None:
    tasks = [
        make_task(
            "task_0120",
            [ref("resource", PALISSY_CSV, "tabular_api_unavailable", dataset_id=PALISSY)],
        ),
        make_task(
            "task_0121",
            [ref("resource", SPORTS_TABLE, "tabular_api_unavailable", dataset_id=SPORTS)],
        ),
    ]
    report = validate(tasks, config(twin, tmp_path))
    (download_only,) = checks_of(report, "task_0120")
    (in_tabular,) = checks_of(report, "task_0121")
    assert download_only.outcome == "passed"
    assert in_tabular.outcome == "failed"
    assert in_tabular.diffs == [
        DiffEntry(field="tabular_api", baseline="unavailable", current="available")
    ]
    assert report.quarantined == ["task_0121"]


def test_schema_unchanged_names_each_changed_column(drift_report: ValidationReport) -> None:
    (check,) = checks_of(drift_report, "task_0107")
    assert check.outcome == "failed"
    assert check.diffs == [
        DiffEntry(field="columns.code_postal", baseline="string", current="int"),
        DiffEntry(field="columns.numero_certificat", baseline="string", current=None),
    ]
    assert check.reason == "columns changed: code_postal, numero_certificat"
    # The same resource, checked on two untouched columns only, still passes.
    (subset,) = checks_of(drift_report, "task_0108")
    assert subset.outcome == "passed"


def test_row_count_within_tolerance_of_the_baseline(drift_report: ValidationReport) -> None:
    (check,) = checks_of(drift_report, "task_0109")
    assert check.outcome == "failed"
    # 144 rows in the baseline; ±10 % is 129.6–158.4, so 130–158 whole rows; 100 remain.
    assert check.diffs == [
        DiffEntry(field="row_count", baseline="144 ± 10% (130–158)", current=100)
    ]
    (bounded,) = checks_of(drift_report, "task_0110")
    assert bounded.outcome == "passed" and bounded.reason == "100 rows (expected 50–200)"


def test_row_count_within_absolute_bounds_fail(twin: TwinUrls, tmp_path: Path) -> None:
    task = make_task(
        "task_0122",
        [
            ref(
                "resource",
                TRANSPORTS_TABLE,
                {"fn": "row_count_within", "params": {"max": 100}},
                dataset_id=TRANSPORTS,
            )
        ],
    )
    (check,) = checks_of(validate([task], config(twin, tmp_path)), "task_0122")
    assert check.outcome == "failed"
    assert check.diffs == [DiffEntry(field="row_count", baseline="<= 100", current=144)]


def test_update_date_absolute_threshold(drift_report: ValidationReport) -> None:
    (check,) = checks_of(drift_report, "task_0111")
    assert check.outcome == "failed"
    assert check.diffs == [
        DiffEntry(field="last_modified", baseline=">= 2026-01-01", current="2024-03-01T00:00:00")
    ]


def test_update_date_relative_windows_use_the_configured_clock(
    twin: TwinUrls, tmp_path: Path
) -> None:
    # The Transports dataset was last modified on 2026-05-29T12:00 in the snapshot.
    def window(value: str) -> dict[str, object]:
        return {
            "fn": "update_date_more_recent_than",
            "params": {"type": "relative", "value": value},
        }

    task = make_task(
        "task_0123", [ref("dataset", TRANSPORTS, window("last_30_days"), window("last_7_days"))]
    )
    at_snapshot = validate([task], config(twin, tmp_path))  # now = 2026-06-12T06:00Z
    assert [c.outcome for c in checks_of(at_snapshot, "task_0123")] == ["passed", "failed"]
    last_week = checks_of(at_snapshot, "task_0123")[1]
    assert last_week.diffs[0].baseline.startswith(">= 2026-06-05T06:00:00+00:00")
    later = config(twin, tmp_path, now=datetime.fromisoformat("2026-07-15T00:00:00+00:00"))
    assert [c.outcome for c in checks_of(validate([task], later), "task_0123")] == [
        "failed",
        "failed",
    ]


def test_expected_values_drift_with_the_recomputed_numbers(drift_report: ValidationReport) -> None:
    tabular, values = checks_of(drift_report, "task_0112")
    assert tabular.outcome == "passed"
    # The figures moved but can be computed: the premise holds, the change is reported and
    # followed (the recomputed numbers become the run's references).
    assert (values.fn, values.implicit, values.outcome) == ("expected_values_hold", True, "passed")
    assert values.object_id == RNE_CM and values.dataset_id == RNE
    # The overlay removed one woman councillor of Toulouse: 69 → 68 and 35 → 34.
    assert values.diffs == [
        DiffEntry(field="expected_values.conseillers_toulouse", baseline=69, current=68),
        DiffEntry(field="expected_values.conseilleres_toulouse", baseline=35, current=34),
    ]
    assert "conseillers_toulouse 69 -> 68" in values.reason
    assert [(r.name, r.spec_value, r.value, r.changed) for r in values.references] == [
        ("conseillers_toulouse", 69, 68, True),
        ("conseilleres_toulouse", 35, 34, True),
    ]
    assert "task_0112" not in drift_report.quarantined


def test_expected_values_page_through_rows_for_other_aggregates(
    twin: TwinUrls, tmp_path: Path, store: CatalogStore
) -> None:
    table = store.table(TRANSPORTS_TABLE)
    assert table is not None
    # Worked out from the CSV text itself, independently of the twin's query engine.
    rows = list(csv.DictReader(io.StringIO(table.source_text), delimiter=table.separator))
    numbers = [float(r["Valeur"]) for r in rows if r["Valeur"] != ""]
    assert len(rows) == 144  # three pages of 50
    values = [
        count("total", math.fsum(numbers), TRANSPORTS_TABLE, aggregate="sum", column="Valeur"),
        count(
            "mean",
            math.fsum(numbers) / len(numbers),
            TRANSPORTS_TABLE,
            aggregate="avg",
            column="Valeur",
        ),
        count("low", min(numbers), TRANSPORTS_TABLE, aggregate="min", column="Valeur"),
        count("high", max(numbers), TRANSPORTS_TABLE, aggregate="max", column="Valeur"),
        # Toulouse's 69 councillors: one commune name, two sexes.
        count(
            "names", 1, RNE_CM, TOULOUSE, aggregate="count_distinct", column="Libellé de la commune"
        ),
        count("sexes", 2, RNE_CM, TOULOUSE, aggregate="count_distinct", column="Code sexe"),
    ]
    report = validate([make_task("task_0124", [], values)], config(twin, tmp_path))
    checks = checks_of(report, "task_0124")
    assert [(c.object_id, c.outcome) for c in checks] == [
        (TRANSPORTS_TABLE, "passed"),
        (RNE_CM, "passed"),
    ]
    assert checks[0].reason == "4 expected value(s) hold: total, mean, low, high"


def test_a_moved_value_is_followed_and_a_broken_premise_quarantines(
    twin: TwinUrls, tmp_path: Path
) -> None:
    gers = ("dep_code", "exact", "32")
    tasks = [
        make_task("task_0125", [], [count("gers", 1000, SPORTS_TABLE, gers)]),
        make_task("task_0126", [], [count("gers", 1000, SPORTS_TABLE, gers, tolerance=30)]),
        # The column the value is computed on is gone: the premise breaks.
        make_task(
            "task_0129", [], [count("gers", 1023, SPORTS_TABLE, ("no_such_col", "exact", "32"))]
        ),
    ]
    report = validate(tasks, config(twin, tmp_path))
    (exact,) = checks_of(report, "task_0125")
    assert exact.outcome == "passed"
    assert exact.diffs == [DiffEntry(field="expected_values.gers", baseline=1000, current=1023)]
    assert exact.reason == "1 expected value(s) recomputed; changed and followed: gers 1000 -> 1023"
    (within,) = checks_of(report, "task_0126")
    assert (within.outcome, within.diffs) == ("passed", [])
    (broken,) = checks_of(report, "task_0129")
    assert broken.outcome == "failed"
    assert report.quarantined == ["task_0129"]
    refs = {(r.task_id, r.name): r for r in report.references}
    assert (refs["task_0125", "gers"].value, refs["task_0125", "gers"].effective) == (1023, 1023)
    assert refs["task_0126", "gers"].value == 1023  # within tolerance, still the reference
    assert refs["task_0129", "gers"].value is None
    assert refs["task_0129", "gers"].effective == 1023  # the spec's value stands
    assert refs["task_0129", "gers"].error


def test_bad_params_are_errors_of_those_checks_only(twin: TwinUrls, tmp_path: Path) -> None:
    task = make_task(
        "task_0127",
        [
            ref(
                "resource",
                SPORTS_TABLE,
                "tabular_api_available",
                {"fn": "update_date_more_recent_than", "params": {"type": "sometimes"}},
                {"fn": "row_count_within", "params": {"maximum": 3}},
                {"fn": "expected_values_hold", "params": {"names": ["nope"]}},
                dataset_id=SPORTS,
            ),
            ref("dataset", SPORTS, "tabular_api_available"),
        ],
    )
    fine = make_task("task_0128", [ref("dataset", SPORTS, "update_date_more_recent_than")])
    report = validate([task, fine], config(twin, tmp_path))
    checks = checks_of(report, "task_0127")
    assert [c.outcome for c in checks] == ["passed", "error", "error", "error", "error"]
    assert "params.type" in checks[1].reason or "type:" in checks[1].reason
    assert "maximum" in checks[2].reason
    assert "no expected value named nope" in checks[3].reason
    assert checks[4].reason == "tabular_api_available applies to resource, not to a dataset"
    # A check without its required params is an error of that task, not a crash of the run.
    (missing,) = checks_of(report, "task_0128")
    assert missing.outcome == "error" and "invalid params" in missing.reason


def test_an_unreachable_catalog_fails_every_check_with_the_reason(tmp_path: Path) -> None:
    with socket.socket() as sock:  # a port nothing listens on once the socket is closed
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    task = make_task(
        "task_0129",
        [
            ref(
                "resource",
                SPORTS_TABLE,
                "download_url_reachable",
                "tabular_api_available",
                "tabular_api_unavailable",
                dataset_id=SPORTS,
            ),
            ref(
                "dataset",
                SPORTS,
                {
                    "fn": "update_date_more_recent_than",
                    "params": {"type": "absolute", "value": "2020-01-01"},
                },
            ),
        ],
        [count("gers", 1023, SPORTS_TABLE, ("dep_code", "exact", "32"))],
    )
    report = validate([task], config(TwinUrls.for_port(port), tmp_path, timeout=5))
    checks = checks_of(report, "task_0129")
    assert len(checks) == 5
    assert all(c.outcome == "failed" for c in checks)
    assert all("ConnectError" in c.reason for c in checks), [c.reason for c in checks]
    assert report.quarantined == ["task_0129"]
