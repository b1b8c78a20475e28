"""Stopping a run when its stop request is set (Ctrl-C or SIGTERM, ``pipeline/agents/cancel.py``).

``datagouv-eval experiment`` owns the signals and sets one token for the run
(``cli/interrupts.py``). Every stage checks it before its work starts and the per-cell stages
between cells; a stage that sees it marks the run as canceling and raises Dagster's interrupt,
so the run ends canceled and no later step runs (the in-process executor does not poll the
run's status itself). Runs launched from the UI have no such token: Dagster's own termination
applies.
"""

import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, NoReturn

import dagster as dg
import duckdb

from datagouv_eval_pipeline.pipeline.agents import current_token


def raise_stopped(context: dg.AssetExecutionContext | dg.OpExecutionContext, why: str) -> NoReturn:
    """End the run as canceled here, saying ``why``.

    Raises:
        dagster.DagsterExecutionInterruptedError: Always.
    """
    # A canceling run ends canceled (not failed) when the interrupt reaches Dagster's run loop.
    run = context.instance.get_run_by_id(context.run_id)
    if run is not None and run.status == dg.DagsterRunStatus.STARTED:
        context.instance.report_run_canceling(run, message=f"stopping: {why}")
    raise dg.DagsterExecutionInterruptedError(why)


def stop_if_requested(
    context: dg.AssetExecutionContext | dg.OpExecutionContext, done: str = "not started"
) -> None:
    """Stop the run here when a stop was requested; ``done`` says how far the step got.

    Raises:
        dagster.DagsterExecutionInterruptedError: The run's token is set.
    """
    token = current_token()
    if token is not None and token.cancelled:
        raise_stopped(context, f"{token.reason}: {done}")


@contextmanager
def terminated_on_stop(process: subprocess.Popen[Any]) -> Iterator[None]:
    """Terminate ``process`` as soon as the run's stop request is set, while the block runs.

    The run's child processes do not get the terminal's Ctrl-C (``cli/interrupts.py``): a stage
    that waits on one (dbt) has it stopped this way.
    """
    token = current_token()
    if token is None:
        yield
        return
    done = threading.Event()

    def watch() -> None:
        while not done.is_set():
            if token.wait(0.2):
                if process.poll() is None:
                    process.terminate()
                return

    watcher = threading.Thread(target=watch, name="stop-subprocess", daemon=True)
    watcher.start()
    try:
        yield
    finally:
        done.set()
        watcher.join()


@contextmanager
def stopped_if_query_interrupted(
    context: dg.AssetExecutionContext | dg.OpExecutionContext, done: str
) -> Iterator[None]:
    """Stop the run here when the block's DuckDB query was interrupted by the stop request.

    ``datagouv-eval experiment`` interrupts the warehouse's queries on Ctrl-C
    (``pipeline/warehouse/connections.py``); the ``InterruptException`` (raised as it is, or as the
    cause of a stage's own error) then ends the step as stopped, saying ``done``, not failed.

    Raises:
        dagster.DagsterExecutionInterruptedError: The query was interrupted by the stop.
    """
    try:
        yield
    except Exception as error:
        token = current_token()
        if token is None or not token.cancelled or not _interrupted_query(error):
            raise
        raise_stopped(context, f"{token.reason}: the query in progress was interrupted, {done}")


def _interrupted_query(error: BaseException | None) -> bool:
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        if isinstance(error, duckdb.InterruptException):
            return True
        seen.add(id(error))
        error = error.__cause__ or error.__context__
    return False
