"""The one wrapper around every model request, agents' and judges' alike: :class:`ManagedModel`.

Each attempt of a request reserves its estimated tokens (input read from the messages, plus the
output expected) and a request slot in the provider's shared
:class:`~datagouv_eval_pipeline.core.providers.limits.RateLimiter`, waits for them, then is sent, at
most ``max_concurrency`` at once and within ``timeout_s`` (waiting for a slot is not counted). A
transient failure is retried by the shared
:class:`~datagouv_eval_pipeline.core.providers.retry.RetryPolicy` (the SDK's own retries are off); a
429 holds the limiter off for every caller of the provider. Once answered, the provider's real
usage settles the token bucket, so agent runs and judge calls of one provider draw on one
tokens-per-minute budget, each by what it really spent.

What a caller keeps of its requests goes through a :class:`RequestObserver` (the agent runner's
recorder: per-request usage, rate-limit waits, the context window). The model itself counts the
requests it sent and records every wait; :func:`counting_requests` also counts the requests sent
within a block (one judge question, retries included).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Protocol

from pydantic_ai.messages import ModelMessage, ModelResponse
from pydantic_ai.models import Model, ModelRequestParameters
from pydantic_ai.models.wrapper import WrapperModel
from pydantic_ai.settings import ModelSettings

from datagouv_eval_pipeline.core.providers.limits import RateLimiter, estimate_tokens
from datagouv_eval_pipeline.core.providers.retry import RetryPolicy, RetryWait, send_with_retries

DEFAULT_EXPECTED_OUTPUT_TOKENS = 500
"""Output tokens reserved per request in the token bucket until the real usage is known."""

LIMITER_WAIT = "rate limiter"
"""The reason of a wait for the rate limiter's slot (recorded as attempt 0)."""

_COUNTERS: ContextVar[list[int] | None] = ContextVar("model_request_counter", default=None)
"""The request counter of the block in progress (a one-item list: tasks the model's client
spawns copy the context, and so share the same list)."""


@contextmanager
def counting_requests() -> Iterator[list[int]]:
    """Count the HTTP requests sent within the block (retries included): ``counter[0]``.

    Concurrent blocks each count their own: the counter lives in the asyncio context.
    """
    counter = [0]
    token = _COUNTERS.set(counter)
    try:
        yield counter
    finally:
        _COUNTERS.reset(token)


def message_chars(messages: Sequence[ModelMessage]) -> int:
    """Characters of the text and tool arguments of ``messages`` (what a request sends)."""
    total = 0
    for message in messages:
        for part in message.parts:
            content = getattr(part, "content", None) or getattr(part, "args", None) or ""
            total += len(content) if isinstance(content, str) else len(str(content))
    return total


@dataclass(frozen=True)
class Answered:
    """A request that succeeded.

    Attributes:
        messages: What it sent.
        response: The model's answer (its ``usage``: what the provider billed).
        attempts: Attempts it took (1 when nothing was retried).
        duration_ms: Time of the successful attempt.
    """

    messages: Sequence[ModelMessage]
    response: ModelResponse
    attempts: int
    duration_ms: float


class RequestObserver(Protocol):
    """What a caller is told of each request a :class:`ManagedModel` sends."""

    def before_request(self, messages: Sequence[ModelMessage]) -> None:
        """Called before anything is reserved or sent; raising refuses the request."""
        ...

    def waited(self, wait: RetryWait) -> None:
        """Called after each wait: the limiter's (``attempt`` 0) and each before a retry."""
        ...

    def answered(self, request: Answered) -> None:
        """Called once the request succeeded."""
        ...


async def _sleep(seconds: float) -> None:
    if seconds > 0:
        await asyncio.sleep(seconds)


@dataclass(init=False)
class ManagedModel(WrapperModel):
    """A model whose requests are paced, bounded, retried, timed out and settled.

    Attributes:
        limiter: The provider's rate limiter, shared by its agents and judges (None: unpaced).
        retry: The retry policy.
        expected_output_tokens: Output tokens reserved per request until the usage is known.
        max_concurrency: Requests in flight at once through this model (None: unbounded).
        timeout_s: Deadline of one attempt, from the moment it got its slot (None: none).
        requests: HTTP requests sent (retries included).
        waits: Every wait before a retry, and every rate-limiter wait (``attempt`` 0).

    ``rebuild`` makes a fresh model (a new HTTP client) when a request comes from another event
    loop than the previous ones.
    """

    limiter: RateLimiter | None = field(default=None)
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    expected_output_tokens: int = field(default=DEFAULT_EXPECTED_OUTPUT_TOKENS)
    max_concurrency: int | None = field(default=None)
    timeout_s: float | None = field(default=None)
    requests: int = field(default=0)
    waits: list[RetryWait] = field(default_factory=list)

    def __init__(
        self,
        wrapped: Model,
        limiter: RateLimiter | None = None,
        *,
        retry: RetryPolicy | None = None,
        expected_output_tokens: int = DEFAULT_EXPECTED_OUTPUT_TOKENS,
        max_concurrency: int | None = None,
        timeout_s: float | None = None,
        observer: RequestObserver | None = None,
        sleep: Callable[[float], Awaitable[None]] = _sleep,
        rebuild: Callable[[], Model] | None = None,
    ) -> None:
        """Wrap ``wrapped``.

        Args:
            wrapped: The model to call.
            limiter: The provider's shared limiter (None: no limit).
            retry: Which failures are retried, and the waits.
            expected_output_tokens: Output tokens reserved per request in the token bucket.
            max_concurrency: Requests in flight at once (None: unbounded).
            timeout_s: Deadline of one attempt (None: the client's own timeout only).
            observer: Told of each request (None: nobody).
            sleep: How to wait before a retry (a fake clock's in tests).
            rebuild: Makes a fresh wrapped model for a new event loop (None: keep the one).

        Raises:
            ValueError: ``max_concurrency`` is below 1.
        """
        super().__init__(wrapped)
        if max_concurrency is not None and max_concurrency < 1:
            raise ValueError("max_concurrency must be at least 1")
        self.limiter = limiter
        self.retry = retry or RetryPolicy()
        self.expected_output_tokens = expected_output_tokens
        self.max_concurrency = max_concurrency
        self.timeout_s = timeout_s
        self.requests = 0
        self.waits = []
        self._observer = observer
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
        Nothing happens without ``rebuild`` (the owner of the client closes it).
        """
        client = getattr(self.wrapped, "client", None)
        close = getattr(client, "close", None)
        if self._rebuild is None or close is None:
            return
        await close()
        self.wrapped = self._rebuild()
        self._built_for = None

    def _slot(self) -> contextlib.AbstractAsyncContextManager[object]:
        if self.max_concurrency is None:
            return contextlib.nullcontext()
        # One model may serve several asyncio.run calls; a semaphore belongs to one loop.
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

    def _record(self, wait: RetryWait) -> None:
        self.waits.append(wait)
        if self._observer is not None:
            self._observer.waited(wait)

    def _estimated_tokens(self, messages: Sequence[ModelMessage]) -> int:
        if self.limiter is None or self.limiter.limit.tokens_per_minute is None:
            return 0
        return estimate_tokens(message_chars(messages)) + self.expected_output_tokens

    async def request(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
    ) -> ModelResponse:
        """Send one request under the limiter, retrying transient failures.

        Raises:
            Exception: Whatever the observer's ``before_request`` raises (nothing is sent), or
                the last failure once the retries are spent.
        """
        self._bind_to_loop()
        if self._observer is not None:
            self._observer.before_request(messages)
        estimated = self._estimated_tokens(messages)
        reserved = attempts = 0
        started = time.perf_counter()

        async def attempt() -> ModelResponse:
            nonlocal attempts, reserved, started
            attempts += 1
            if self.limiter is not None:
                paced = await self.limiter.acquire(estimated)
                reserved += estimated
                if paced > 0:
                    self._record(RetryWait(0, paced, LIMITER_WAIT, None, None))
            async with self._slot():
                self.requests += 1
                counter = _COUNTERS.get()
                if counter is not None:
                    counter[0] += 1
                started = time.perf_counter()
                call = self.wrapped.request(messages, model_settings, model_request_parameters)
                if self.timeout_s is None:
                    return await call
                async with asyncio.timeout(self.timeout_s):
                    return await call

        def waited(wait: RetryWait) -> None:
            if wait.rate_limited and self.limiter is not None:
                # A 429 says "later" to every caller of the provider, not just this one.
                self.limiter.hold_off(wait.seconds)
            self._record(wait)

        response = await send_with_retries(attempt, self.retry, sleep=self._sleep, on_wait=waited)
        if self.limiter is not None:
            # Every attempt reserved its estimate; the provider billed only the one answered.
            usage = response.usage
            self.limiter.settle(reserved, usage.input_tokens + usage.output_tokens)
        if self._observer is not None:
            duration_ms = (time.perf_counter() - started) * 1000
            self._observer.answered(Answered(messages, response, attempts, duration_ms))
        return response
