"""Provider slots from models.yml and how they are cut into lanes."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from datagouv_eval_pipeline.core.benchmark.cells import Cell, expand_cells
from datagouv_eval_pipeline.core.benchmark.loader import (
    BENCHMARK_CONFIG_DIR,
    BenchmarkConfigErrors,
    load_benchmark_config,
)
from datagouv_eval_pipeline.pipeline.experiment.lanes import (
    WORKER_BOOT_DELAY_S,
    LanePlan,
    Lanes,
    plan_lanes,
    pool_name,
    provider_pool_limits,
    provider_slots,
)
from tests.benchmark.benchmark_fixtures import write_config

ALBERT = "    api_key_env: ALBERT_API_KEY\n"


def _config_with(tmp_path: Path, albert: str = "", offline: str = "") -> Path:
    config_dir = write_config(tmp_path / "benchmark")
    models = config_dir / "models.yml"
    text = models.read_text(encoding="utf-8")
    text = text.replace(ALBERT, ALBERT + albert, 1)
    text = text.replace("    kind: offline\n", "    kind: offline\n" + offline, 1)
    models.write_text(text, encoding="utf-8")
    return config_dir


def test_the_real_configuration_sizes_offline_to_the_machine_and_remote_from_the_file() -> None:
    config = load_benchmark_config(BENCHMARK_CONFIG_DIR)
    assert provider_slots(config, cpu_count=2) == {
        "offline": 16,  # 8 per core, no `concurrency` in the file
        "mistral": 4,
        "openai": 8,
        "albert": 2,
    }
    assert provider_slots(config, cpu_count=6)["offline"] == 48
    assert provider_pool_limits(config)["agent_runs.mistral"] == 4


def test_a_provider_without_slots_gets_the_default_of_its_kind(tmp_path: Path) -> None:
    config = load_benchmark_config(_config_with(tmp_path))
    slots = provider_slots(config, cpu_count=1)
    assert slots["offline"] == 8
    assert slots["albert"] == 4


def test_slots_in_the_file_win_for_offline_providers_too(tmp_path: Path) -> None:
    config = load_benchmark_config(
        _config_with(tmp_path, albert="    concurrency: 3\n", offline="    concurrency: 5\n")
    )
    slots = provider_slots(config, cpu_count=4)
    assert (slots["offline"], slots["albert"]) == (5, 3)


def test_zero_slots_are_refused_naming_the_field(tmp_path: Path) -> None:
    with pytest.raises(BenchmarkConfigErrors, match=r"concurrency"):
        load_benchmark_config(_config_with(tmp_path, albert="    concurrency: 0\n"))


@pytest.mark.parametrize(
    ("slots", "max_per_cell", "max_workers", "lanes", "per_cell"),
    [
        (16, 8, None, 2, 8),  # offline on 2 cores: two cells of 8 at once
        (16, 8, 0, 1, 8),  # no worker process: one cell at a time
        (48, 8, 2, 3, 8),  # capped by the workers
        (4, 8, None, 1, 4),  # fewer slots than the cell cap: one lane of 4
        (5, 2, None, 2, 2),  # 2 lanes of 2 = 4 runs, never 6: within the 5 slots
        (1, 8, None, 1, 1),
    ],
)
def test_lanes_never_hold_more_runs_than_the_slots(
    slots: int, max_per_cell: int, max_workers: int | None, lanes: int, per_cell: int
) -> None:
    plan = plan_lanes(
        "offline", slots, max_per_cell=max_per_cell, offline=True, max_workers=max_workers
    )
    assert plan == LanePlan("offline", slots, lanes, per_cell, True)
    assert plan.lanes * plan.per_cell <= slots


def test_worker_limits_do_not_apply_to_remote_lanes() -> None:
    plan = plan_lanes("mistral", 16, max_per_cell=4, offline=False, max_workers=0)
    assert (plan.lanes, plan.per_cell, plan.processes) == (4, 4, False)


def test_no_slot_is_an_error() -> None:
    with pytest.raises(ValueError, match="slots"):
        plan_lanes("offline", 0, max_per_cell=8, offline=True)


def test_pool_names_follow_the_provider() -> None:
    assert pool_name("mistral") == "agent_runs.mistral"


def _pool_reads(monkeypatch: pytest.MonkeyPatch, value: str) -> str | None:
    """Start lanes with one worker while ``DGEVAL_LANES_PROBE`` is ``value``; the worker's view."""
    monkeypatch.setenv("DGEVAL_LANES_PROBE", value)
    cell = expand_cells(load_benchmark_config(BENCHMARK_CONFIG_DIR))[0]
    plan = LanePlan(cell.model.provider, slots=2, lanes=2, per_cell=1, processes=True)
    lanes = Lanes({plan.provider: plan}, lambda *_: None, lambda _cell: {})  # type: ignore[arg-type]
    with lanes:
        # The cell stays in this process (needs_parent): the worker only answers the probe.
        lanes.start([cell], needs_parent=lambda _cell: True)
        assert lanes._pool is not None
        return lanes._pool.submit(os.getenv, "DGEVAL_LANES_PROBE").result(timeout=120)


def test_workers_see_the_environment_of_their_run_not_of_the_first_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # One forkserver per process, started by the first run that needed workers: a later run
    # (another proxy, CA bundle or key) must still give its workers its own environment.
    assert _pool_reads(monkeypatch, "first run") == "first run"
    assert _pool_reads(monkeypatch, "second run") == "second run"


def _two_cells_on_two_lanes(hold_first: bool) -> tuple[list[str], int, list[str]]:
    """Run two offline cells on two lanes (the second one a worker process).

    The lane in this process runs its cells with a stand-in that returns at once, or, for the
    first cell with ``hold_first``, only once the second cell is done elsewhere. Returns the
    cells run here, the worker processes booted, and the cells in the order given.
    """
    cells = expand_cells(load_benchmark_config(BENCHMARK_CONFIG_DIR))[:2]
    assert cells[0].model.provider == cells[1].model.provider == "offline"
    plan = LanePlan("offline", slots=2, lanes=2, per_cell=1, processes=True)
    ran_here: list[str] = []

    def here(cell: Cell, _settings: object, _cancel: object) -> None:
        ran_here.append(cell.key)
        if hold_first and cell.key == cells[0].key:
            lanes.futures[cells[1].key].exception(timeout=300)

    # A worker runs the real stage function, on no task: it only has to answer.
    arguments: dict[str, object] = {"tasks": [], "twin_urls": None, "snapshot_id": None}
    lanes = Lanes({plan.provider: plan}, here, lambda _cell: arguments)  # type: ignore[arg-type]
    with lanes:
        lanes.start(cells, needs_parent=lambda _cell: False)
        for future in lanes.futures.values():
            assert future.exception(timeout=300) is None
    # Leaving waited for the lanes: each worker boot a lane started is in ``_readies``.
    return ran_here, len(lanes._readies), [cell.key for cell in cells]


def test_a_short_stage_runs_here_and_boots_no_worker_process() -> None:
    ran_here, workers, keys = _two_cells_on_two_lanes(hold_first=False)
    assert ran_here == keys and workers == 0


def test_a_cell_still_queued_after_the_boot_delay_goes_to_a_worker_process() -> None:
    started = time.monotonic()
    ran_here, workers, keys = _two_cells_on_two_lanes(hold_first=True)
    assert ran_here == keys[:1] and workers == 1
    assert time.monotonic() - started >= WORKER_BOOT_DELAY_S
