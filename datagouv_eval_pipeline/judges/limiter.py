"""A request limiter for judge models: at most N requests in flight and R requests per minute.

It plugs into pydantic-ai's concurrency machinery (``AbstractConcurrencyLimiter``) and is applied
per model request by :class:`GuardedModel`, which also enforces a per-request timeout (the wait
for a slot is not counted against it) and counts the requests actually sent.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from pydantic_ai.concurrency import AbstractConcurrencyLimiter
from pydantic_ai.messages import ModelMessage, ModelResponse
from pydantic_ai.models import Model, ModelRequestParameters
from pydantic_ai.models.wrapper import WrapperModel
from pydantic_ai.settings import ModelSettings


class RateLimiter(AbstractConcurrencyLimiter):
    """Bounds concurrent requests and paces them to a requests-per-minute rate.

    Pacing uses the generic cell rate algorithm: requests are spaced ``60 / rpm`` seconds apart on
    average, with up to ``burst`` requests allowed back to back. The semaphore is created per
    event loop, so one limiter survives several ``asyncio.run`` calls.

    Args:
        max_concurrency: Requests in flight at once.
        requests_per_minute: The provider's request rate limit; None = unpaced.
        burst: Requests that may start together before pacing applies.
        clock: Monotonic seconds (tests pass a fake).
        sleep: How to wait (tests pass a fake).
    """

    def __init__(
        self,
        max_concurrency: int = 8,
        requests_per_minute: float | None = None,
        burst: int = 1,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        if max_concurrency < 1:
            raise ValueError("max_concurrency must be at least 1")
        if requests_per_minute is not None and requests_per_minute <= 0:
            raise ValueError("requests_per_minute must be positive (or None for no pacing)")
        if burst < 1:
            raise ValueError("burst must be at least 1")
        self.max_concurrency = max_concurrency
        self.requests_per_minute = requests_per_minute
        self.burst = burst
        self._interval = 60.0 / requests_per_minute if requests_per_minute else 0.0
        self._tat = 0.0  # theoretical arrival time of the next request (monotonic seconds)
        self._semaphores: dict[int, asyncio.Semaphore] = {}
        self.acquired = 0
        self._clock = clock
        self._sleep = sleep

    def _semaphore(self) -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()
        semaphore = self._semaphores.get(id(loop))
        if semaphore is None:
            self._semaphores = {id(loop): asyncio.Semaphore(self.max_concurrency)}
            semaphore = self._semaphores[id(loop)]
        return semaphore

    async def acquire(self, source: str) -> None:
        """Wait for the request's turn under the rate, then for a concurrency slot.

        The turn is reserved before waiting for a slot, so requests queued behind the
        concurrency limit do not hold slots while they wait for the rate (which would cap the
        throughput below the rate whenever ``rate x latency`` approaches the concurrency).
        """
        if self._interval:
            now = self._clock()
            tat = max(self._tat, now)
            tolerance = (self.burst - 1) * self._interval
            self._tat = tat + self._interval
            wait = tat - tolerance - now
            if wait > 0:
                await self._sleep(wait)
        await self._semaphore().acquire()
        self.acquired += 1

    def release(self) -> None:
        """Free the concurrency slot."""
        self._semaphore().release()


@dataclass(init=False)
class GuardedModel(WrapperModel):
    """A model whose requests go through a limiter, with a timeout and a request counter.

    Attributes:
        limiter: Shared by every model of one provider.
        timeout_s: Deadline of one request, from the moment it got its slot.
        requests: Requests sent to the wrapped model (cache hits never get here).
    """

    limiter: RateLimiter | None = field(default=None)
    timeout_s: float | None = field(default=None)
    requests: int = field(default=0)

    def __init__(
        self, wrapped: Model, limiter: RateLimiter | None = None, timeout_s: float | None = None
    ) -> None:
        super().__init__(wrapped)
        self.limiter = limiter
        self.timeout_s = timeout_s
        self.requests = 0

    async def request(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
    ) -> ModelResponse:
        """Send one request once the limiter allows it, within ``timeout_s``."""
        if self.limiter is not None:
            await self.limiter.acquire(f"judge:{self.model_name}")
        try:
            self.requests += 1
            call = self.wrapped.request(messages, model_settings, model_request_parameters)
            if self.timeout_s is None:
                return await call
            async with asyncio.timeout(self.timeout_s):
                return await call
        finally:
            if self.limiter is not None:
                self.limiter.release()
