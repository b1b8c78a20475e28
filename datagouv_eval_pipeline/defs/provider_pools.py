"""One Dagster concurrency pool per model provider: ``agent_runs.<provider>``.

A pool slot is one task run of the provider in flight. The ``agent_runs`` step claims, for each
provider among its cells, as many slots as the provider's ``slots`` in ``models.yml`` (it needs
at least one, and waits for it), runs that provider's cells on lanes within them
(``experiment.lanes``), and frees them at the end. So two providers run side by side (in one
run, or in two runs), and however runs are started (CLI, UI, schedule, sensor), one provider
never has more task runs going than its pool allows. The DuckDB writer keeps its own pool of 1.

Dagster's ``pool=`` on an asset is one static pool per step, which cannot follow the providers
of the cells a run covers, so the step claims the slots itself through the instance's
concurrency API (the same table the executor uses: the claims show in the UI's pool pages, and
``datagouv-eval dagster cleanup`` frees those of a dead run). A pool the instance has no limit
for is created with the provider's slots; `datagouv-eval dagster pools --apply` (and ``ui``)
set every provider pool from ``models.yml``.
"""

import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

import dagster as dg

from datagouv_eval_pipeline.pipeline.agents import CancelToken, RunCancelled
from datagouv_eval_pipeline.pipeline.experiment import pool_name, provider_pool_limits

POLL_SECONDS = 1.0
"""How often a step waiting for its first slot asks again."""


def _step_key(provider: str, index: int) -> str:
    return f"agent_runs[{provider}#{index}]"


@contextmanager
def claimed_slots(
    context: dg.AssetExecutionContext,
    wanted: Mapping[str, int],
    *,
    cancel: CancelToken | None = None,
    pool_limits: Mapping[str, int] | None = None,
) -> Iterator[dict[str, int]]:
    """Claim up to ``wanted[provider]`` slots of each provider's pool; free them on exit.

    Waits until every provider has at least one slot; takes the others only when they are free
    at once (a busy provider runs with fewer lanes rather than waiting).

    Args:
        context: The step's context (its instance and run id).
        wanted: Provider → slots it would use.
        cancel: Stops the wait (``RunCancelled``).
        pool_limits: Limits of pools the instance does not know yet, over ``models.yml``'s.

    Yields:
        Provider → slots claimed. On an instance without pools, ``wanted`` itself.
    """
    storage = context.instance.event_log_storage
    if not storage.supports_global_concurrency_limits:
        yield dict(wanted)
        return
    run_id = context.run.run_id
    limits = provider_pool_limits() | dict(pool_limits or {})
    held: list[tuple[str, str]] = []
    try:
        known = storage.get_concurrency_keys()
        got: dict[str, int] = {}
        for provider, count in wanted.items():
            pool = pool_name(provider)
            if pool not in known:
                storage.set_concurrency_slots(pool, limits.get(pool, count))
            got[provider] = _claim(context, pool, provider, count, held, cancel)
        context.log.info(
            "provider pools: %s",
            ", ".join(f"{pool_name(p)} {n} of {wanted[p]} slot(s)" for p, n in got.items()),
        )
        yield got
    finally:
        for _, step_key in held:
            storage.free_concurrency_slot_for_step(run_id, step_key)


def _claim(
    context: dg.AssetExecutionContext,
    pool: str,
    provider: str,
    count: int,
    held: list[tuple[str, str]],
    cancel: CancelToken | None,
) -> int:
    storage = context.instance.event_log_storage
    run_id = context.run.run_id
    first = _step_key(provider, 0)
    held.append((pool, first))
    waited = False
    while not storage.claim_concurrency_slot(pool, run_id, first).is_claimed:
        if cancel is not None and cancel.cancelled:
            raise RunCancelled(cancel.reason)
        if not waited:
            context.log.info("waiting for a slot of pool %s (another run holds them)", pool)
            waited = True
        time.sleep(POLL_SECONDS)
    claimed = 1
    for index in range(1, count):
        step_key = _step_key(provider, index)
        held.append((pool, step_key))
        if not storage.claim_concurrency_slot(pool, run_id, step_key).is_claimed:
            # The rest are busy: run with what is free now. A claim left pending would be
            # assigned the next freed slot and keep it from the run that waits for it.
            storage.free_concurrency_slot_for_step(run_id, step_key)
            held.pop()
            break
        claimed += 1
    return claimed
