"""The runner throttles a cell with the rate limits of its model configuration."""

from __future__ import annotations

import dataclasses

from datagouv_eval_pipeline.core.benchmark.cells import Cell
from datagouv_eval_pipeline.core.benchmark.config import ModelRateLimit
from datagouv_eval_pipeline.core.providers.limits import (
    DEFAULT_RATE_LIMITS,
    RateLimit,
    RateLimiters,
)
from datagouv_eval_pipeline.core.tasks.spec import TaskSpec
from datagouv_eval_pipeline.pipeline.agents.runner import (
    cell_rate_limiters,
    rate_limit_of,
    run_cell,
)
from datagouv_eval_pipeline.world.api.server import TwinServer
from datagouv_eval_pipeline.world.catalogue.urls import TwinUrls

from .helpers import FakeClock, key_of, variant


def _limited(cell: Cell, limit: ModelRateLimit | None) -> Cell:
    return variant(cell, model=dataclasses.replace(cell.model, rate_limit=limit))


def test_limiter_keys_and_limits_come_from_the_model(cells: dict[str, Cell]) -> None:
    base = cells[key_of("baseline-oneshot", "mcp@0.2.26")]
    assert rate_limit_of(base.model) == ("offline", None)
    shared = _limited(base, ModelRateLimit(30, 1000, per_model=False))
    assert rate_limit_of(shared.model) == ("offline", RateLimit(30, 1000))
    own = _limited(base, ModelRateLimit(None, 1000, per_model=True))
    assert rate_limit_of(own.model) == ("offline~baseline-oneshot", RateLimit(None, 1000))
    assert cell_rate_limiters(own).limit_for("offline~baseline-oneshot") == RateLimit(None, 1000)
    # Without configured limits the built-in provider defaults still apply.
    mistral = dataclasses.replace(base.model, provider="mistral")
    key, limit = rate_limit_of(mistral)
    assert (key, limit) == ("mistral", None)
    assert (
        cell_rate_limiters(variant(base, model=mistral)).limit_for(key)
        == (DEFAULT_RATE_LIMITS["mistral"])
    )


def test_caller_limits_win_over_the_configured_ones() -> None:
    configured = RateLimit(requests_per_minute=5)
    assert RateLimiters().get("p", configured).limit == configured
    assert RateLimiters(default=RateLimit()).get("p", configured).limit == RateLimit()
    explicit = RateLimiters({"p": RateLimit(tokens_per_minute=9)})
    assert explicit.get("p", configured).limit == RateLimit(tokens_per_minute=9)
    assert RateLimiters().get("albert").limit == DEFAULT_RATE_LIMITS["albert"]


def test_a_cell_without_limiters_is_throttled_by_its_configuration(
    cells: dict[str, Cell], twin: TwinServer, tasks: dict[str, TaskSpec]
) -> None:
    clock = FakeClock()
    # 30 requests per minute from models.yml: requests are spaced two seconds apart.
    cell = _limited(
        cells[key_of("baseline-oneshot", "mcp@0.2.26")], ModelRateLimit(30, None, per_model=False)
    )
    (trace,) = run_cell(cell, [tasks["task_0003"]], twin_urls=twin.urls, clock=clock)
    assert trace.status == "ok", trace.status_reason
    # One request per search (an empty search is retried with a word fewer), then the
    # answer: each request after the first waits 2 s for its slot.
    requests = len(trace.tool_calls) + 1
    assert trace.usage.requests == requests and requests >= 2
    assert clock.slept == [2.0] * (requests - 1)
    assert trace.rate_limit_wait_ms == 2000.0 * (requests - 1)
    # The offline provider has no built-in default: unconfigured, nothing waits.
    clock = FakeClock()
    (free,) = run_cell(
        cells[key_of("baseline-oneshot", "mcp@0.2.26")],
        [tasks["task_0003"]],
        twin_urls=twin.urls,
        clock=clock,
    )
    assert free.status == "ok" and clock.slept == []
    # The trace records the base URLs the agent was given (the mapper reads twin URLs by them).
    assert free.provenance.base_urls == TwinUrls.live().as_dict()
