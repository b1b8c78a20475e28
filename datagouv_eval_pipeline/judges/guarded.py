"""The judge's model wrapper: the provider's shared rate limiter, concurrency, retries, timeout.

:class:`GuardedModel` sends each judge request through the provider's
:class:`~datagouv_eval_pipeline.providers.limits.RateLimiter` (the same object the agents of that
provider use in this process), at most ``max_concurrency`` at once, retried by the shared
:class:`~datagouv_eval_pipeline.providers.retry.RetryPolicy` (the SDK's own retries are off), each
attempt within ``timeout_s`` (waiting for a slot is not counted). It counts the HTTP requests it
sent and records every wait; :func:`counting_requests` also counts the requests of one question
(retries included), so a verdict can say what it cost in requests.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field

from pydantic_ai.messages import ModelMessage, ModelResponse
from pydantic_ai.models import Model, ModelRequestParameters
from pydantic_ai.models.wrapper import WrapperModel
from pydantic_ai.settings import ModelSettings

from datagouv_eval_pipeline.providers.limits import RateLimiter
from datagouv_eval_pipeline.providers.retry import RetryPolicy, RetryWait, send_with_retries

_QUESTION_REQUESTS: ContextVar[list[int] | None] = ContextVar(
    "judge_question_requests", default=None
)
"""The request counter of the question being asked (a one-item list: tasks the model's client
spawns copy the context, and so share the same list)."""


@contextmanager
def counting_requests() -> Iterator[list[int]]:
    """Count the HTTP requests sent within the block (retries included): ``counter[0]``.

    Concurrent questions each count their own: the counter lives in the asyncio context.
    """
    counter = [0]
    token = _QUESTION_REQUESTS.set(counter)
    try:
        yield counter
    finally:
        _QUESTION_REQUESTS.reset(token)


async def _sleep(seconds: float) -> None:
    if seconds > 0:
        await asyncio.sleep(seconds)


@dataclass(init=False)
class GuardedModel(WrapperModel):
    """A judge model whose requests are paced, bounded, retried and timed out.

    Attributes:
        limiter: The provider's rate limiter, shared with its agents (None: unpaced).
        retry: The retry policy.
        max_concurrency: Requests in flight at once through this judge.
        timeout_s: Deadline of one attempt, from the moment it got its slot.
        requests: HTTP requests sent (retries included; cache hits never get here).
        waits: Every wait before a retry, and every rate-limiter wait (``attempt`` 0).

    ``rebuild`` makes a fresh model (a new HTTP client) when a request comes from another event
    loop than the previous ones.
    """

    limiter: RateLimiter | None = field(default=None)
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    max_concurrency: int = field(default=8)
    timeout_s: float | None = field(default=None)
    requests: int = field(default=0)
    waits: list[RetryWait] = field(default_factory=list)

    def __init__(
        self,
        wrapped: Model,
        limiter: RateLimiter | None = None,
        *,
        retry: RetryPolicy | None = None,
        max_concurrency: int = 8,
        timeout_s: float | None = None,
        sleep: Callable[[float], Awaitable[None]] = _sleep,
        rebuild: Callable[[], Model] | None = None,
    ) -> None:
        super().__init__(wrapped)
        if max_concurrency < 1:
            raise ValueError("max_concurrency must be at least 1")
        self.limiter = limiter
        self.retry = retry or RetryPolicy()
        self.max_concurrency = max_concurrency
        self.timeout_s = timeout_s
        self.requests = 0
        self.waits = []
        self._sleep = sleep
        self._semaphores: dict[int, asyncio.Semaphore] = {}
        self._rebuild = rebuild
        self._built_for: int | None = None

    def _bind_to_loop(self) -> None:
        # An HTTP client's pooled connections belong to the event loop that opened them; the
        # pipeline judges each cell in its own asyncio.run, so a new loop gets a new client.
        loop_id = id(asyncio.get_running_loop())
        if self._built_for is None:
            self._built_for = loop_id
        elif self._built_for != loop_id and self._rebuild is not None:
            self.wrapped = self._rebuild()
            self._built_for = loop_id

    async def aclose(self) -> None:
        """Close the HTTP client in the loop that opened it; the next request makes a new one.

        Without it, the client's finaliser would try to close connections of a finished loop.
        """
        client = getattr(self.wrapped, "client", None)
        close = getattr(client, "close", None)
        if self._rebuild is None or close is None:
            return
        await close()
        self.wrapped = self._rebuild()
        self._built_for = None

    def _slot(self) -> asyncio.Semaphore:
        # One judge may serve several asyncio.run calls; a semaphore belongs to one loop.
        loop_id = id(asyncio.get_running_loop())
        semaphore = self._semaphores.get(loop_id)
        if semaphore is None:
            self._semaphores = {loop_id: asyncio.Semaphore(self.max_concurrency)}
            semaphore = self._semaphores[loop_id]
        return semaphore

    @property
    def waited_s(self) -> float:
        """Seconds waited in total (rate limiter and retries)."""
        return sum(wait.seconds for wait in self.waits)

    async def request(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
    ) -> ModelResponse:
        """Send one request under the limiter, retrying transient failures."""
        self._bind_to_loop()

        async def attempt() -> ModelResponse:
            if self.limiter is not None:
                paced = await self.limiter.acquire()
                if paced > 0:
                    self.waits.append(RetryWait(0, paced, "rate limiter", None, None))
            async with self._slot():
                self.requests += 1
                question = _QUESTION_REQUESTS.get()
                if question is not None:
                    question[0] += 1
                call = self.wrapped.request(messages, model_settings, model_request_parameters)
                if self.timeout_s is None:
                    return await call
                async with asyncio.timeout(self.timeout_s):
                    return await call

        def waited(wait: RetryWait) -> None:
            if wait.rate_limited and self.limiter is not None:
                self.limiter.hold_off(wait.seconds)  # the agents of this provider wait too
            self.waits.append(wait)

        return await send_with_retries(attempt, self.retry, sleep=self._sleep, on_wait=waited)
