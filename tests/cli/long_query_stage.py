"""A one-asset Dagster job whose step runs one very long DuckDB query on the warehouse.

Run as a script by ``test_interrupt_long_query.py``: ``python long_query_stage.py DB``. The
job runs as ``datagouv-eval experiment`` runs its job (``Stoppable``, in-process, on a Dagster
instance of its own); the asset opens the warehouse the way the stages do
(``warehouse.loader.connect``), writes a row in a transaction, then starts a cross join of two
``range(1e9)`` (hours of work). The process prints what happened and exits as the command does.
"""

import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import dagster as dg

from datagouv_eval_pipeline.cli.interrupts import Stoppable
from datagouv_eval_pipeline.defs.interrupts import stopped_if_query_interrupted
from datagouv_eval_pipeline.pipeline.agents.cancel import CancelToken
from datagouv_eval_pipeline.pipeline.warehouse.loader import connect

LONG_QUERY = (
    "SELECT count(*) FROM range(1000000000) AS a, range(1000000000) AS b "
    "WHERE a.range + b.range = 7"
)


def main(db: Path) -> None:
    @dg.asset(name="warehouse")
    def long_stage(context: dg.AssetExecutionContext) -> Iterator[dg.MaterializeResult[None]]:
        with (
            stopped_if_query_interrupted(context, "nothing was loaded"),
            connect(db) as conn,
        ):
            conn.execute("BEGIN TRANSACTION")
            conn.execute("INSERT INTO main.kept VALUES ('half-written')")
            print("query started", flush=True)
            conn.execute(LONG_QUERY).fetchall()
            conn.execute("COMMIT")
        yield dg.MaterializeResult()

    job = dg.Definitions(
        assets=[long_stage], jobs=[dg.define_asset_job("experiment", selection=[long_stage])]
    ).resolve_job_def("experiment")

    with tempfile.TemporaryDirectory() as home, dg.instance_for_test(temp_dir=home) as instance:

        def run(token: CancelToken) -> dg.ExecuteInProcessResult:
            return job.execute_in_process(instance=instance, raise_on_error=False)

        stoppable = Stoppable(run, on_hard_stop=lambda why: f"HARD STOP ({why})")
        result = stoppable.run()
        failures = [event for event in result.all_events if event.is_step_failure]
        for event in failures:
            source = event.step_failure_data.error_source
            message = event.step_failure_data.error.message if event.step_failure_data.error else ""
            print(f"step {event.step_key}: {source.value}: {message.strip()}", flush=True)
        run_record = instance.get_run_by_id(result.run_id)
        assert run_record is not None
        print(f"run {run_record.status.value}", flush=True)
        stoppable.exit(130 if stoppable.token.cancelled else 0)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
