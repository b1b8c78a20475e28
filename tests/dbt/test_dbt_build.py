"""``dbt build`` of ``dbt_metrics`` on a temporary DuckDB loaded through the real loaders."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from dbt.cli.main import dbtRunnerResult

from datagouv_eval_pipeline.pipeline.warehouse import load_experiment
from tests.dbt.dbt_helpers import (
    PROJECT,
    RANGE_TESTS,
    load_fixture_warehouse,
    plant_out_of_range_score,
    run_dbt,
    warehouse_env,
)
from tests.dbt.dbt_helpers import rows as _rows
from tests.warehouse.warehouse_factories import (
    CODE,
    HAND,
    HAND_B,
    MCP_19,
    MCP_26,
    realistic_experiment,
)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dbtRunnerResult]]:
    tmp = tmp_path_factory.mktemp("dbt")
    db = tmp / "warehouse.duckdb"
    assert load_fixture_warehouse(db).ratio == 1.0
    with warehouse_env(db):
        yield db, run_dbt(["build"], tmp)


def _nodes(result: dbtRunnerResult) -> list[tuple[str, str, str]]:
    """(node name, resource type, status) of every node the invocation ran."""
    results: Any = result.result
    return [(r.node.name, str(r.node.resource_type), str(r.status)) for r in results or []]


def test_dbt_build_passes_with_every_model_and_test(built: tuple[Path, dbtRunnerResult]) -> None:
    _, result = built
    assert result.exception is None
    nodes = _nodes(result)
    assert result.success, [n for n in nodes if n[2] not in ("pass", "success")]
    names = {name for name, _, _ in nodes}
    assert {"experiment_metrics", "cell_comparison", "metrics_by_language"} <= names
    assert sum(1 for _, kind, _ in nodes if kind == "test") >= 40


def test_experiment_metrics_exclude_unscored_items(built: tuple[Path, dbtRunnerResult]) -> None:
    db, _ = built
    rows = _rows(
        db,
        "SELECT metric, runs, scored, coverage, mean, total_value "
        "FROM main.experiment_metrics WHERE cell_key = ? AND tier = 'minimal' "
        "AND metric IN ('action_recall', 'accuracy', 'required_actions') ORDER BY metric",
        [HAND],
    )
    # worked out in hand_cell's docstring: defined values (1.0, 0.5), one undefined, one failed
    assert rows == [
        ("accuracy", 4, 2, 0.5, 0.75, None),
        ("action_recall", 4, 2, 0.5, 0.75, None),
        ("required_actions", 4, 3, 0.75, None, 5.0),
    ]
    summary = _rows(
        db,
        "SELECT runs, runs_ok, runs_error, accuracy, accuracy_coverage, total_criteria, "
        "total_criteria_scored, criterion_coverage FROM main.experiment_summary "
        "WHERE cell_key = ? AND tier = 'optimal'",
        [HAND],
    )
    # 2 of the 4 runs have a decided criterion (A, B); of the 6 criteria the judged runs A, B,
    # C were asked, 1 + 2 + 0 = 3 were decided: criterion coverage 3/6.
    assert summary == [(4, 3, 1, 0.75, 0.5, 6.0, 3.0, 0.5)]


def test_breakdowns_and_cell_comparison(built: tuple[Path, dbtRunnerResult]) -> None:
    db, _ = built
    pair = _rows(
        db,
        "SELECT dimension, value_a, value_b, mean_a, mean_b, delta, paired_tasks, paired_delta "
        "FROM main.cell_comparison WHERE cell_a = ? AND cell_b = ? "
        "AND tier = 'minimal' AND metric = 'action_recall'",
        [HAND, HAND_B],
    )
    # a: (1.0, 0.5) -> 0.75; b: (0.0, 1.0) -> 0.5; paired: (0.0-1.0 + 1.0-0.5) / 2
    assert pair == [("model", "hand/model-a", "hand/model-b", 0.75, 0.5, -0.25, 2, -0.25)]
    versions = _rows(
        db,
        "SELECT DISTINCT dimension, value_a, value_b FROM main.cell_comparison "
        "WHERE cell_a = ? AND cell_b = ?",
        [MCP_19, MCP_26],
    )
    assert versions == [("mcp_version", "0.2.19", "0.2.26")]
    languages = _rows(
        db,
        "SELECT language, count(*) FROM main.stg_runs GROUP BY ALL ORDER BY ALL",
    )
    # every run's task is in task_specs (French prompts), the failed run through its task id
    assert languages == [("fr", 14)]
    by_language = _rows(
        db,
        "SELECT runs, scored FROM main.metrics_by_language WHERE mcp_version = '0.2.26' "
        "AND language = 'fr' AND tier = 'minimal' AND metric = 'action_recall'",
    )
    assert by_language == [(4, 3)]
    capability = _rows(
        db,
        "SELECT cells, runs FROM main.metrics_by_capability "
        "WHERE capability_set = 'mcp' AND tier = 'minimal' AND metric = 'action_recall'",
    )
    assert capability == [(2, 7)]


def test_means_carry_intervals_and_pairs_carry_tests_and_verdicts(
    built: tuple[Path, dbtRunnerResult],
) -> None:
    db, _ = built
    metric = _rows(
        db,
        "SELECT scored, tasks, mean, std_error, ci_low, ci_high, interval_method "
        "FROM main.experiment_metrics WHERE cell_key = ? AND tier = 'minimal' "
        "AND metric = 'action_recall'",
        [HAND],
    )
    # (1.0, 0.5): s = 0.353553, se = s / sqrt(2) = 0.25; t(1) = 12.706205 -> clipped to [0, 1].
    assert metric == [(2, 2, 0.75, pytest.approx(0.25), 0.0, 1.0, "t")]
    summary = _rows(
        db,
        "SELECT accuracy_n, accuracy_ci_low, accuracy_ci_high FROM main.experiment_summary "
        "WHERE cell_key = ? AND tier = 'minimal'",
        [HAND],
    )
    assert summary == [(2, 0.0, 1.0)]
    pair = _rows(
        db,
        "SELECT paired_runs, paired_difference, difference_ci_low, difference_ci_high, test, "
        "p_value, family_size, p_adjusted, verdict, verdict_note, mde, mde_method, test_reason, "
        "compared_runs, paired_coverage_a, paired_coverage_b, coverage_differs "
        "FROM main.cell_comparison "
        "WHERE cell_a = ? AND cell_b = ? AND tier = 'minimal' AND metric = 'action_recall'",
        [HAND, HAND_B],
    )
    # d = (-1.0, +0.5): Wilcoxon ranks 2 and 1, W = 1 of 0..3 equally likely -> p = 1; two
    # tasks cannot reach p < 0.05 (at best 2/4): no MDE of the signed-rank test, and why.
    assert pair == [
        (2, -0.25, -1.0, 1.0, "wilcoxon_signed_rank", pytest.approx(1.0), 1,
         pytest.approx(1.0), "no detectable difference", None, None, None,
         "2 tasks: the signed-rank test cannot reach p < 0.05", 2, 1.0, 1.0, False)
    ]  # fmt: skip
    ranking = _rows(
        db,
        "SELECT cell_key, accuracy_n, runs, ranked, accuracy_rank, note "
        "FROM main.headline_ranking WHERE tier = 'minimal' AND cell_key IN (?, ?) ORDER BY 1",
        [HAND, HAND_B],
    )
    assert ranking[0][:4] == (HAND, 2, 4, True) and ranking[0][5] is None
    assert ranking[1] == (HAND_B, 0, 2, False, None, "accuracy not scored on any run")
    gate = _rows(
        db,
        "SELECT experiment_id, previous_experiment_id, bool_and(passed), count(*), "
        "string_agg(DISTINCT outcome), sum(not_comparable_comparisons) "
        "FROM main.regression_gate WHERE is_latest GROUP BY ALL",
    )
    assert gate == [("fixture-2", "fixture-1", True, 5, "passed", 0)]


def test_a_planted_out_of_range_score_fails_the_range_test(
    built: tuple[Path, dbtRunnerResult], tmp_path: Path
) -> None:
    db = tmp_path / "planted.duckdb"
    load_experiment(db, realistic_experiment())
    plant_out_of_range_score(db)
    with warehouse_env(db):
        result = run_dbt(["test", "--select", "source:eval.verdicts"], built[0].parent)
    assert result.exception is None
    assert not result.success
    failed = sorted(name for name, _, status in _nodes(result) if status == "fail")
    assert failed == RANGE_TESTS


def test_results_by_feature(built: tuple[Path, dbtRunnerResult]) -> None:
    db, _ = built
    # task_0002 (search.platform_catalogue, tabular.filters, tabular.count) ran twice in each
    # MCP cell: accuracy 1.0 then 0.0, so 0.5 over one task (no interval with one cluster).
    assert _rows(
        db,
        "SELECT feature_tasks, runs, scored, mean, tasks, ci_low FROM main.feature_metrics "
        "WHERE cell_key = ? AND feature = 'tabular.filters' AND tier = 'minimal' "
        "AND metric = 'accuracy'",
        [MCP_19],
    ) == [(1, 2, 2, 0.5, 1, None)]
    # 0.2.26's only search.and_semantics task (task_0003) failed: one run, none scored
    assert _rows(
        db,
        "SELECT runs, scored, mean FROM main.feature_metrics WHERE cell_key = ? "
        "AND feature = 'search.and_semantics' AND tier = 'minimal' AND metric = 'accuracy'",
        [MCP_26],
    ) == [(1, 0, None)]
    versions = _rows(
        db,
        "SELECT feature, exercised, pairs, tasks, mean_difference, verdict "
        "FROM main.feature_version_comparison WHERE cell_a = ? AND cell_b = ? "
        "AND tier = 'minimal' AND metric = 'accuracy' ORDER BY exercised DESC, feature",
        [MCP_19, MCP_26],
    )
    # every feature of the tasks' latest versions is listed for the version pair
    features = _rows(
        db, "SELECT count(DISTINCT feature) FROM main.stg_task_features WHERE is_latest_version"
    )
    assert [(len(versions),)] == features
    # the features of task_0002 (two repeat pairs, same outcomes) and task_0011 (one pair) are
    # exercised; search.and_semantics is not (task_0003 is scored in neither cell)
    assert versions[:4] == [
        ("decline.personal_data", True, 1, 1, 0.0, "no detectable difference"),
        ("search.platform_catalogue", True, 2, 1, 0.0, "no detectable difference"),
        ("tabular.count", True, 2, 1, 0.0, "no detectable difference"),
        ("tabular.filters", True, 2, 1, 0.0, "no detectable difference"),
    ]
    assert ("search.and_semantics", False, 0, 0, None, None) in versions[4:]
    assert all(not exercised for _, exercised, *_ in versions[4:])


def test_question_answers(built: tuple[Path, dbtRunnerResult]) -> None:
    db, _ = built
    # MCP or code: mcp@0.2.26 against code for the same model, paired although the capability
    # set and the MCP version both differ; code ran one task, so no interval, and the reason.
    assert _rows(
        db,
        "SELECT factor, cell_a, cell_b, value_a, value_b, paired_tasks, ci_low, answered, reason, "
        "mde, mde_method, coverage_a, coverage_b "
        "FROM main.question_answers WHERE evaluation_type = 'capabilities_benchmark' "
        "AND tier = 'minimal' AND metric = 'accuracy'",
    ) == [
        (
            "capability",
            MCP_26,
            CODE,
            "mcp",
            "code",
            1,
            None,
            True,
            "fewer than 2 tasks scored in both cells",
            # one discordant pair: the exact test cannot reach 0.05, no MDE; the one run both
            # cells have (task_0002, repeat 0) is scored on both sides
            None,
            None,
            1.0,
            1.0,
        )
    ]
    # The skills question has no pair in the fixture: one row, no figures, and why.
    assert _rows(
        db,
        "SELECT question, cell_a, paired_tasks, answered, reason FROM main.question_answers "
        "WHERE evaluation_type = 'capabilities_benchmark' AND factor = 'skills'",
    ) == [
        (
            "How do the ways of reaching the catalog compare (MCP server, code against the REST "
            "and Tabular APIs), with and without the skills document, at the latest MCP version?",
            None,
            0,
            False,
            "no two cells of this evaluation type differ in skills only",
        )
    ]


def test_every_model_column_is_listed_and_documented_as_generated(
    built: tuple[Path, dbtRunnerResult],
) -> None:
    import yaml

    from datagouv_eval_pipeline.pipeline.warehouse.dbt_docs import built_columns, docs_files

    db, _ = built
    columns = built_columns(db)
    listed: dict[str, list[tuple[str, str]]] = {}
    for docs in docs_files(PROJECT):
        # The committed YAML is what the generator writes from the warehouse schema's docs.
        assert docs.current == docs.generated, f"{docs.path}: run `datagouv-eval schema`"
        document = yaml.safe_load(docs.current)
        for model in document.get("models", []):
            listed[model["name"]] = [
                (c["name"], c.get("description", "")) for c in model["columns"]
            ]
        for source in document.get("sources", []):
            for table in source["tables"]:
                assert all(c.get("description") for c in table["columns"]), table["name"]
    # Every model the build made lists exactly its columns, in order, each with a description.
    assert set(listed) == set(columns)
    for model, found in columns.items():
        assert [name for name, _ in listed[model]] == found, model
        assert all(doc for _, doc in listed[model]), model
