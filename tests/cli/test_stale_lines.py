"""`experiment --dry-run` lists every out-of-date cell at once (Dagster shows one partition's)."""

from pathlib import Path

from datagouv_eval_pipeline.cli.experiment import stale_lines
from datagouv_eval_pipeline.pipeline.experiment.documents import AgentRunsDocument
from datagouv_eval_pipeline.pipeline.experiment.fingerprints import cell_code_fingerprint
from datagouv_eval_pipeline.pipeline.experiment.plan import plan_experiment
from datagouv_eval_pipeline.pipeline.experiment.stages import AGENT_RUNS
from datagouv_eval_pipeline.pipeline.experiment.store import RunStore


def test_the_dry_run_names_each_out_of_date_cell_and_why(tmp_path: Path) -> None:
    plan = plan_experiment(evaluation_types=["data_contamination"], task_ids=["task_0003"])
    first, second, *_ = plan.cells
    assert stale_lines(plan, tmp_path) == [
        "out of date: no cell of the plan has stored agent runs yet"
    ]
    store = RunStore(tmp_path)
    current = AgentRunsDocument.of(first.to_record(), [], run_code=cell_code_fingerprint(first))
    store.write(AGENT_RUNS, first.key, current)
    older = AgentRunsDocument.of(second.to_record(), [], run_code="0" * 64)
    store.write(AGENT_RUNS, second.key, older)
    assert stale_lines(plan, tmp_path) == [
        "out of date: 1 of the 2 cell(s) with stored agent runs",
        f"  {second.key}: the code its runs depend on changed",
    ]
