"""One experiment per run store: a second is refused at once, and a killed holder frees it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import click
import pytest

from datagouv_eval_pipeline.cli.preconditions import LOCK_NAME, exclusive_run_store

HOLD = (
    "import sys, time\n"
    "from pathlib import Path\n"
    "from datagouv_eval_pipeline.cli.preconditions import exclusive_run_store\n"
    "with exclusive_run_store(Path(sys.argv[1])):\n"
    "    print('held', flush=True)\n"
    "    time.sleep(120)\n"
)


def test_a_second_experiment_on_the_same_store_is_refused(tmp_path: Path) -> None:
    store = tmp_path / "run_store"
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(store)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with pytest.raises(click.ClickException) as refused, exclusive_run_store(store):
            pass
        assert refused.value.message == (
            f"{store}: another experiment (process {holder.pid}) is using this run store; wait "
            "for it to end, or give this one its own DATAGOUV_EVAL_RUN_STORE and "
            "DATAGOUV_EVAL_DUCKDB"
        )
    finally:
        holder.kill()  # as kill -9: the kernel releases the lock with the process
        holder.wait()
    with exclusive_run_store(store):
        assert (store / LOCK_NAME).read_text(encoding="utf-8").strip().isdigit()


def test_a_run_store_that_is_a_file(tmp_path: Path) -> None:
    store = tmp_path / "run_store"
    store.write_text("x", encoding="utf-8")
    with pytest.raises(click.ClickException) as refused, exclusive_run_store(store):
        pass
    assert refused.value.message == (
        f"{store}: the run store is a file, not a directory; set DATAGOUV_EVAL_RUN_STORE to a "
        "directory"
    )
