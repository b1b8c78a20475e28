"""Each evaluation type's question, answered by pairing its cells by factor (eval.questions)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import duckdb
import pytest

from datagouv_eval_pipeline.core.benchmark.config import EvaluationType, Factor
from datagouv_eval_pipeline.core.benchmark.loader import load_benchmark_config
from datagouv_eval_pipeline.core.metrics.statistics import NO_DIFFERENCE, WORSE
from datagouv_eval_pipeline.pipeline.warehouse import CellLoad, connect, load_experiment
from datagouv_eval_pipeline.pipeline.warehouse.error_bars import (
    _Value,
    compute_statistics,
    question_comparison_rows,
)
from datagouv_eval_pipeline.pipeline.warehouse.questions import QuestionCell, questions_of
from tests.warehouse.warehouse_factories import (
    CODE,
    MCP_19,
    MCP_26,
    hand_record,
    hand_run,
    realistic_experiment,
)

CAPS = EvaluationType.model_validate(
    {
        "name": "caps",
        "description": "MCP or code,\n with or without the skills document?",
        "active": True,
        "capability_sets": [["mcp"], ["mcp", "skills"], ["code"], ["code", "skills"]],
        "metrics": ["result_accuracy"],
        "compares": ["capability", "skills"],
    }
)
VERSIONS = EvaluationType.model_validate(
    {
        "name": "versions",
        "description": "Does a new MCP version help?",
        "active": True,
        "capability_sets": [["mcp"]],
        "mcp_versions": "all",
        "metrics": ["result_accuracy"],
        "compares": ["mcp_version"],
    }
)
UNRUN = EvaluationType.model_validate(
    {
        "name": "unrun",
        "description": "Never run.",
        "active": False,
        "capability_sets": [[]],
        "metrics": ["result_accuracy"],
        "compares": ["model"],
    }
)


def cell(
    key: str,
    tools: tuple[str, ...],
    mcp: str | None = None,
    skills: str | None = None,
    types: tuple[str, ...] = ("caps",),
    model: str = "offline/m",
) -> QuestionCell:
    return QuestionCell(key, types, model, tools, mcp, skills, "p")


MCP = cell("mcp", ("mcp",), mcp="0.2.26")
MCP_SKILLS = cell("mcp_skills", ("mcp",), mcp="0.2.26", skills="0.0.1")
CODE_CELL = cell("code", ("code",))
CODE_SKILLS = cell("code_skills", ("code",), skills="0.0.1")
OLD_MCP = cell("old_mcp", ("mcp",), mcp="0.2.19", types=("versions",))
OTHER_MODEL = cell("other_model", ("code",), model="offline/n")
HAND_CELLS = [CODE_SKILLS, OLD_MCP, MCP_SKILLS, CODE_CELL, OTHER_MODEL, MCP]


def keys(pairs: Sequence[tuple[QuestionCell, QuestionCell]]) -> list[tuple[str, str]]:
    return [(a.key, b.key) for a, b in pairs]


def test_skills_and_capability_pairs_found_although_several_labels_differ() -> None:
    capability, skills = questions_of([CAPS], HAND_CELLS)
    assert (capability.factor, skills.factor) == (Factor.CAPABILITY, Factor.SKILLS)
    # mcp against code: capability sets and MCP versions differ, the skills are the same; the
    # MCP side is the reference (listed first by the type), so the difference is code - MCP.
    assert keys(capability.pairs) == [("mcp", "code"), ("mcp_skills", "code_skills")]
    # With and without the document: capability sets and skills versions differ; without first.
    assert keys(skills.pairs) == [("mcp", "mcp_skills"), ("code", "code_skills")]
    assert capability.reason is skills.reason is None
    # The other model's cell is the type's but has no partner; the versions cell is not the type's.
    assert {c.key for c in capability.cells} == {
        "mcp",
        "mcp_skills",
        "code",
        "code_skills",
        "other_model",
    }
    assert capability.description == "MCP or code, with or without the skills document?"


def test_a_capability_pair_keeps_the_mcp_version_unless_one_side_has_none() -> None:
    mcp_19 = cell("mcp_19", ("mcp",), mcp="0.2.19")
    mcp_code_26 = cell("mcp_code_26", ("code", "mcp"), mcp="0.2.26")
    mcp_code_19 = cell("mcp_code_19", ("code", "mcp"), mcp="0.2.19")
    (capability,) = questions_of(
        [CAPS.model_copy(update={"compares": [Factor.CAPABILITY]})],
        [mcp_19, mcp_code_26, mcp_code_19],
    )
    # mcp@0.2.19 against mcp+code@0.2.26 changes two things: not an answer.
    assert keys(capability.pairs) == [("mcp_19", "mcp_code_19")]


def test_cells_of_another_type_are_not_paired_and_versions_go_oldest_first() -> None:
    (versions,) = questions_of([VERSIONS], HAND_CELLS)
    # mcp@0.2.26 is a caps cell: the versions type has old_mcp alone, so no pair.
    assert versions.pairs == ()
    assert versions.reason == "no two cells of this evaluation type differ in mcp_version only"
    both = [MCP, OLD_MCP]
    both[0] = cell("mcp", ("mcp",), mcp="0.2.26", types=("caps", "versions"))
    (versions,) = questions_of([VERSIONS], both)
    assert keys(versions.pairs) == [("old_mcp", "mcp")]
    (unrun,) = questions_of([UNRUN], HAND_CELLS)
    assert (unrun.cells, unrun.pairs) == ((), ())
    assert unrun.reason == "no cell of this evaluation type is in the warehouse (not run)"


def values(key: str, accuracy: Sequence[float | None]) -> list[_Value]:
    return [
        _Value(
            key,
            f"t{i}",
            0,
            "minimal",
            "accuracy",
            a,
            True,
            "offline",
            "m",
            "x",
            None,
            None,
            "p",
            "fr",
        )
        for i, a in enumerate(accuracy)
    ]


def test_holm_adjusts_within_the_question_only() -> None:
    versions_mcp = cell("mcp", ("mcp",), mcp="0.2.26", types=("caps", "versions"))
    cells = [versions_mcp, MCP_SKILLS, CODE_CELL, CODE_SKILLS, OLD_MCP]
    data = [
        *values("mcp", [1, 1, 1, 1, 1, 1, 0, 0, 0, 0]),
        *values("mcp_skills", [1] * 10),
        *values("code", [0] * 10),
        *values("code_skills", [0] * 10),
        *values("old_mcp", [0, 0, 0, 0, 0, 0, 0, 0, 0, 0]),
    ]
    rows = question_comparison_rows(data, questions_of([CAPS, VERSIONS], cells))
    found = {(r["evaluation_type"], r["factor"], r["cell_a"], r["cell_b"]): r for r in rows}
    assert len(rows) == len(found) == 5
    # McNemar exact: code fails the 6 tasks mcp passes (p = 2 / 2^6) and the 10 mcp+skills
    # passes (p = 2 / 2^10). Holm over this question's two pairs: 2 × 2/1024, then 2/64.
    mcp_code = found[("caps", "capability", "mcp", "code")]
    skills_code = found[("caps", "capability", "mcp_skills", "code_skills")]
    assert (mcp_code["mean_difference"], skills_code["mean_difference"]) == (-0.6, -1.0)
    assert mcp_code["p_value"] == pytest.approx(2 / 64)
    assert skills_code["p_adjusted"] == pytest.approx(2 * 2 / 1024)
    assert mcp_code["p_adjusted"] == pytest.approx(2 / 64)
    assert (mcp_code["family_size"], mcp_code["verdict"]) == (2, WORSE)
    assert (mcp_code["value_a"], mcp_code["value_b"]) == ("mcp", "code")
    assert mcp_code["setting"] == "model offline/m, skills none, prompt p"
    # The skills question is its own family: 4 discordant (p = 2/16) and none (p = 1).
    with_skills = found[("caps", "skills", "mcp", "mcp_skills")]
    assert (with_skills["value_a"], with_skills["value_b"]) == ("none", "0.0.1")
    assert with_skills["setting"] == "model offline/m, capability mcp, mcp 0.2.26, prompt p"
    assert with_skills["p_adjusted"] == pytest.approx(2 * 2 / 16)
    assert with_skills["verdict"] == NO_DIFFERENCE
    assert found[("caps", "skills", "code", "code_skills")]["p_adjusted"] == 1.0
    # The versions question shares the mcp cell but not the family: p stays 2 / 2^6.
    version = found[("versions", "mcp_version", "old_mcp", "mcp")]
    assert (version["family_size"], version["p_adjusted"]) == (1, pytest.approx(2 / 64))
    assert version["verdict"] == "better"


def test_a_pair_without_scores_or_with_one_task_says_why() -> None:
    data = [*values("mcp", [1, 0]), *values("code", [None, 1]), *values("mcp_skills", [1, 1])]
    rows = question_comparison_rows(data, questions_of([CAPS], [MCP, CODE_CELL, MCP_SKILLS]))
    found = {(r["cell_a"], r["cell_b"]): r for r in rows}
    one_task = found[("mcp", "code")]
    assert (one_task["tasks"], one_task["mean_difference"]) == (1, 1.0)
    assert one_task["reason"] == "fewer than 2 tasks scored in both cells"
    assert one_task["ci_low"] is None
    # code scored one of the two runs both cells have: the gap is flagged on the answer.
    assert (one_task["runs"], one_task["coverage_a"], one_task["coverage_b"]) == (2, 1.0, 0.5)
    assert one_task["coverage_note"] == (
        "coverage differs by more than 5%: runs scored 100% in a, 50% in b"
    )
    # code_skills is absent from the warehouse: only the pairs of present cells are listed.
    assert set(found) == {("mcp", "code"), ("mcp", "mcp_skills")}
    nothing = question_comparison_rows(
        values("mcp", [1, 1]), questions_of([CAPS], [MCP, CODE_CELL])
    )
    assert [(r["pairs"], r["verdict"], r["reason"]) for r in nothing] == [
        (0, None, "no run scored in both cells")
    ]


# ------------------------------------------------------------------ on a real DuckDB file


def graded(
    key: str,
    capabilities: list[str],
    accuracy: Sequence[int],
    *,
    mcp: str | None = None,
    skills: str | None = None,
    types: Sequence[str] = ("caps",),
) -> CellLoad:
    record = hand_record(
        key,
        "m",
        capabilities=capabilities,
        mcp_version=mcp,
        skills_version=skills,
        evaluation_types=list(types),
    )
    tasks = [f"task_{i + 1:04d}" for i in range(len(accuracy))]
    return CellLoad(
        record, [hand_run(task, [a == 1]) for task, a in zip(tasks, accuracy, strict=True)]
    )


def rows(conn: duckdb.DuckDBPyConnection, sql: str) -> list[tuple[Any, ...]]:
    return conn.execute(sql).fetchall()


def test_the_statistics_stage_writes_each_question_and_its_answer(tmp_path: Path) -> None:
    conn = connect(tmp_path / "w.duckdb")
    load_experiment(
        conn,
        [
            graded("hand~m__mcp@0.2.26__p", ["mcp"], [1, 1, 1, 1, 1, 1, 0, 0, 0, 0], mcp="0.2.26"),
            graded(
                "hand~m__mcp@0.2.26+skills@0.0.1__p",
                ["mcp", "skills"],
                [1] * 10,
                mcp="0.2.26",
                skills="0.0.1",
            ),
            graded("hand~m__code__p", ["code"], [0] * 10),
            graded("hand~m__code+skills@0.0.1__p", ["code", "skills"], [0] * 10, skills="0.0.1"),
            graded("hand~m__mcp@0.2.19__p", ["mcp"], [0] * 10, mcp="0.2.19", types=["versions"]),
        ],
    )
    result = compute_statistics(conn, [CAPS, VERSIONS, UNRUN])
    assert result.questions == 4
    assert rows(
        conn,
        "SELECT evaluation_type, factor, description, active, cells, pairs, reason "
        "FROM eval.questions ORDER BY ALL",
    ) == [
        (
            "caps",
            "capability",
            "MCP or code, with or without the skills document?",
            True,
            4,
            2,
            None,
        ),
        ("caps", "skills", "MCP or code, with or without the skills document?", True, 4, 2, None),
        (
            "unrun",
            "model",
            "Never run.",
            False,
            0,
            0,
            "no cell of this evaluation type is in the warehouse (not run)",
        ),
        (
            "versions",
            "mcp_version",
            "Does a new MCP version help?",
            True,
            1,
            0,
            "no two cells of this evaluation type differ in mcp_version only",
        ),
    ]
    answers = rows(
        conn,
        "SELECT factor, cell_a, cell_b, value_a, value_b, tasks, mean_difference, p_adjusted, "
        "verdict FROM eval.question_comparisons WHERE tier = 'minimal' AND metric = 'accuracy' "
        "ORDER BY ALL",
    )
    assert answers == [
        (
            "capability",
            "hand~m__mcp@0.2.26+skills@0.0.1__p",
            "hand~m__code+skills@0.0.1__p",
            "mcp",
            "code",
            10,
            -1.0,
            pytest.approx(4 / 1024),
            WORSE,
        ),
        (
            "capability",
            "hand~m__mcp@0.2.26__p",
            "hand~m__code__p",
            "mcp",
            "code",
            10,
            pytest.approx(-0.6),
            pytest.approx(2 / 64),
            WORSE,
        ),
        (
            "skills",
            "hand~m__code__p",
            "hand~m__code+skills@0.0.1__p",
            "none",
            "0.0.1",
            10,
            0.0,
            1.0,
            NO_DIFFERENCE,
        ),
        (
            "skills",
            "hand~m__mcp@0.2.26__p",
            "hand~m__mcp@0.2.26+skills@0.0.1__p",
            "none",
            "0.0.1",
            10,
            pytest.approx(0.4),
            pytest.approx(4 / 16),
            NO_DIFFERENCE,
        ),
    ]
    # eval.comparisons, pairing one dimension at a time, has none of these pairs.
    assert rows(
        conn,
        "SELECT count(*) FROM eval.comparisons WHERE dimension IN ('capability_set', "
        "'skills_version')",
    ) == [(0,)]


def test_the_project_questions_on_the_realistic_experiment(tmp_path: Path) -> None:
    conn = connect(tmp_path / "w.duckdb")
    load_experiment(conn, realistic_experiment())
    compute_statistics(conn, load_benchmark_config().evaluation_types.evaluation_types)
    pairs = rows(
        conn,
        "SELECT evaluation_type, factor, cell_a, cell_b FROM eval.question_comparisons "
        "GROUP BY ALL ORDER BY ALL",
    )
    # MCP against code for the same model, the question eval.comparisons could not pair.
    assert pairs == [
        ("capabilities_benchmark", "capability", MCP_26, CODE),
        ("mcp_versions", "mcp_version", MCP_19, MCP_26),
    ]
    # The version pair is also a one-dimension pair: the same figures as eval.comparisons.
    same = rows(
        conn,
        "SELECT q.mean_difference = c.mean_difference, q.p_value = c.p_value, q.tasks = c.tasks "
        "FROM eval.question_comparisons AS q JOIN eval.comparisons AS c USING "
        "(cell_a, cell_b, tier, metric) WHERE q.factor = 'mcp_version' AND q.p_value IS NOT NULL",
    )
    assert same and all(row == (True, True, True) for row in same)
    # code ran one task: MCP or code cannot be answered yet, and the row says why.
    assert rows(
        conn,
        "SELECT DISTINCT tasks, reason FROM eval.question_comparisons "
        "WHERE factor = 'capability' AND metric = 'accuracy'",
    ) == [(1, "fewer than 2 tasks scored in both cells")]
