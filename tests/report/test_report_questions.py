"""The report opens with each evaluation type's question and its answer, or why it has none."""

from __future__ import annotations

from datagouv_eval_pipeline.pipeline.report import BuiltReport
from tests.warehouse.warehouse_factories import CODE, MCP_19, MCP_26

SETTING = "model offline/baseline-oneshot, skills none, prompt data_gouv_context"


def test_the_questions_open_the_report_with_their_answers(built_report: BuiltReport) -> None:
    sections = {(q.evaluation_type, q.factor): q for q in built_report.view.questions}
    # MCP or code: the fixture's code cell ran one task, so the pair is listed with its figures
    # but no verdict, and the note says why.
    capability = sections[("capabilities_benchmark", "capability")]
    assert capability.question.startswith("How do the ways of reaching the catalog compare")
    assert [
        (a.cell_a, a.cell_b, a.value_a, a.value_b, a.metric, a.tasks, a.verdict, a.note)
        for a in capability.answers
    ] == [
        (MCP_26, CODE, "mcp", "code", m, 1, None, "fewer than 2 tasks scored in both cells")
        for m in ("accuracy", "action F1")
    ]
    # task_0002 answered right by MCP, wrong by code: Δ = 0 - 1.
    assert capability.answers[0].difference == -1.0
    skills = sections[("capabilities_benchmark", "skills")]
    assert (skills.answers, skills.reason) == (
        [],
        "no two cells of this evaluation type differ in skills only",
    )
    versions = sections[("mcp_versions", "mcp_version")]
    first = versions.answers[0]
    assert (first.cell_a, first.cell_b, first.value_a, first.value_b) == (
        MCP_19,
        MCP_26,
        "0.2.19",
        "0.2.26",
    )
    # Same traces in both versions: Δ 0 on the 2 paired tasks, interval [0, 0].
    assert (first.difference, first.low, first.high, first.tasks, first.verdict) == (
        0.0,
        0.0,
        0.0,
        2,
        "no detectable difference",
    )
    # The types with no cell come last.
    assert [q.cells == 0 for q in built_report.view.questions] == [False] * 3 + [True] * 4


def test_the_markdown_and_the_page_open_with_the_questions(built_report: BuiltReport) -> None:
    text = built_report.markdown
    assert text.index("## The benchmark's questions") < text.index("## Accuracy (minimal tier)")
    assert (
        f"| {SETTING} | mcp → code | accuracy | -1.00 | — | 1.000 | — | — | 1 "
        "| fewer than 2 tasks scored in both cells |"
    ) in text
    assert "### capabilities_benchmark: skills" in text
    assert "Cannot be answered: no two cells of this evaluation type differ in skills only." in text
    assert (
        "Not run (no cell of the type in the warehouse): data_contamination (model), "
        "implementations_test (model), mcp_capabilities_benchmark (capability), "
        "real_mcp_server (mcp_version)."
    ) in text
    page = built_report.page.read_text(encoding="utf-8")
    assert page.index('id="questions"') < page.index('id="pivot"')
    assert 'id="question-capabilities_benchmark-capability"' in page
    assert "Cannot be answered: no two cells of this evaluation type differ in skills only." in page
