"""One retry policy for every model call (agents and judges) and the pre-flight's requests.

The SDKs' own retries are off (the OpenAI client gets ``max_retries=0``): a request is retried
here only, so a server that always fails sees exactly ``1 + retries`` requests per model call,
and every wait is known. Transient answers (429, 5xx, 408/409/425) and connection errors are
retried with exponential backoff and jitter (the loop is tenacity's ``AsyncRetrying``). A
``Retry-After`` or ``retry-after-ms`` header replaces the backoff, but never below
``min_delay_s``: ``Retry-After: 0`` from a busy server does not mean "hammer me".
"""

from __future__ import annotations

import random
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from typing import TypeVar

import tenacity

T = TypeVar("T")

RETRY_STATUSES = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
"""HTTP statuses worth another attempt."""


@dataclass(frozen=True)
class RetryWait:
    """One wait before a retry, as recorded.

    Attributes:
        attempt: The attempt that failed (1 = the first request).
        seconds: How long the caller waited before the next attempt.
        reason: What failed (``HTTP 503``, ``connection error ...``).
        status: The HTTP status, None for a connection error.
        advised: The server's ``Retry-After`` in seconds, None when it gave none.
    """

    attempt: int
    seconds: float
    reason: str
    status: int | None
    advised: float | None

    @property
    def rate_limited(self) -> bool:
        """Whether the provider answered 429 (the wait counts as a rate-limit wait)."""
        return self.status == 429


@dataclass(frozen=True)
class RetryPolicy:
    """Which failed model requests are retried, and the waits between attempts.

    Attributes:
        retries: Retries after the first attempt, for every transient failure (429 included).
        base_delay_s: Backoff after the first failure; doubled for each later one.
        max_delay_s: Cap of every wait, ``Retry-After`` included.
        min_delay_s: Floor of every wait, ``Retry-After`` included.
        jitter_s: Up to this many random seconds added to a computed backoff, so concurrent
            callers released together do not collide again (0 in tests).
        retry_statuses: HTTP statuses worth another attempt.
    """

    retries: int = 5
    base_delay_s: float = 1.0
    max_delay_s: float = 120.0
    min_delay_s: float = 0.5
    jitter_s: float = 1.0
    retry_statuses: frozenset[int] = field(default=RETRY_STATUSES)

    def __post_init__(self) -> None:
        if self.retries < 0:
            raise ValueError(f"RetryPolicy.retries must be >= 0, got {self.retries}")
        for name in ("base_delay_s", "max_delay_s", "min_delay_s", "jitter_s"):
            if getattr(self, name) < 0:
                raise ValueError(f"RetryPolicy.{name} must be >= 0, got {getattr(self, name)}")
        if self.min_delay_s > self.max_delay_s:
            raise ValueError("RetryPolicy.min_delay_s must not exceed max_delay_s")

    @property
    def max_attempts(self) -> int:
        """Requests one model call may send: the first and its retries."""
        return self.retries + 1

    def backoff(self, attempt: int, rng: random.Random | None = None) -> float:
        """The wait after the ``attempt``-th failure (1-based) without a ``Retry-After``."""
        base = min(self.max_delay_s, self.base_delay_s * 2 ** (attempt - 1))
        extra = (rng or random).uniform(0, self.jitter_s) if self.jitter_s else 0.0
        return self._clamp(base + extra)

    def delay(
        self, attempt: int, headers: Mapping[str, str] | None, rng: random.Random | None = None
    ) -> float:
        """The wait after the ``attempt``-th failure, honouring ``Retry-After`` (floored)."""
        advised = retry_after_seconds(headers)
        if advised is not None:
            return self._clamp(advised)
        return self.backoff(attempt, rng)

    def _clamp(self, seconds: float) -> float:
        return float(min(self.max_delay_s, max(self.min_delay_s, seconds)))

    def transient(self, error: BaseException) -> bool:
        """Whether another attempt may succeed."""
        # Imported on failure only: the pre-flight imports this module at definition time.
        from pydantic_ai.exceptions import ModelConnectionError, ModelHTTPError

        if isinstance(error, ModelHTTPError):
            return error.status_code in self.retry_statuses
        return isinstance(error, ModelConnectionError)


def describe_failure(error: BaseException) -> tuple[str, int | None, Mapping[str, str] | None]:
    """``(reason, status, headers)`` of a failed model request (no body, no secrets)."""
    from pydantic_ai.exceptions import ModelHTTPError

    if isinstance(error, ModelHTTPError):
        return f"HTTP {error.status_code}", error.status_code, error.headers
    return f"connection error ({type(error).__name__})", None, None


async def send_with_retries(
    send: Callable[[], Awaitable[T]],
    policy: RetryPolicy,
    *,
    sleep: Callable[[float], Awaitable[None]],
    on_wait: Callable[[RetryWait], None] | None = None,
    rng: random.Random | None = None,
) -> T:
    """Call ``send`` until it succeeds, a failure is not transient, or retries run out.

    Args:
        send: One attempt (it waits for the rate limiter itself).
        policy: The retry policy.
        sleep: How to wait (the caller's clock, so tests need not sleep).
        on_wait: Called with every wait before it is slept.
        rng: Source of the jitter (tests pass a seeded one).

    Returns:
        What the first successful attempt returned.

    Raises:
        Exception: The last failure, unchanged, when it is not transient or retries ran out.
    """

    def wait(state: tenacity.RetryCallState) -> float:
        error = state.outcome.exception() if state.outcome is not None else None
        assert error is not None  # tenacity only waits after a failure
        _, _, headers = describe_failure(error)
        return policy.delay(state.attempt_number, headers, rng)

    def record(state: tenacity.RetryCallState) -> None:
        error = state.outcome.exception() if state.outcome is not None else None
        if error is None or on_wait is None:
            return
        reason, status, headers = describe_failure(error)
        seconds = state.upcoming_sleep
        advised = retry_after_seconds(headers)
        on_wait(RetryWait(state.attempt_number, seconds, reason, status, advised))

    retrying = tenacity.AsyncRetrying(
        stop=tenacity.stop_after_attempt(policy.max_attempts),
        wait=wait,
        retry=tenacity.retry_if_exception(policy.transient),
        sleep=sleep,
        before_sleep=record,
        reraise=True,
    )
    return await retrying(send)


def retry_after_seconds(
    headers: Mapping[str, str] | None, now: float | None = None
) -> float | None:
    """Read ``retry-after-ms`` or ``Retry-After`` (seconds or an HTTP date), case-insensitively.

    Args:
        headers: Response headers, or None.
        now: Current POSIX time for HTTP dates (defaults to ``time.time()``).

    Returns:
        The advised wait in seconds (never negative), or None when no header says it.
    """
    if not headers:
        return None
    lowered = {key.lower(): value for key, value in headers.items()}
    milliseconds = lowered.get("retry-after-ms")
    if milliseconds is not None:
        try:
            return max(0.0, float(milliseconds) / 1000)
        except ValueError:
            pass
    value = lowered.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    current = time.time() if now is None else now
    return max(0.0, when.timestamp() - current)
