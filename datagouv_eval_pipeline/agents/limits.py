"""Budgets, provider rate limits and retry policy for agent runs.

* :class:`RunBudget`: what one task run may spend (requests, tokens, wall time) before it is
  ended with status ``budget_exceeded``.
* :class:`RateLimit` and :class:`RateLimiter`: requests and tokens per minute for one provider,
  shared by every concurrent run that uses it. The limiter *reserves* a slot and returns how long
  the caller must wait, so requests are spread evenly instead of bursting into 429s.
* :class:`RetryPolicy`: which provider answers are retried and how long to wait; a
  ``Retry-After`` (or ``retry-after-ms``) header always wins over the computed backoff.

Time comes from a :class:`Clock`, so tests drive the limiter with a fake clock instead of
sleeping.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from typing import Protocol


@dataclass(frozen=True)
class RunBudget:
    """What one task run may spend.

    Attributes:
        max_requests: Model requests per run (the final-answer request included).
        max_tokens: Input plus output tokens per run; None for no limit.
        wall_timeout_s: Wall-clock seconds per run, rate-limit waits not counted.
    """

    max_requests: int = 25
    max_tokens: int | None = 400_000
    wall_timeout_s: float = 600.0

    def __post_init__(self) -> None:
        if self.max_requests < 1:
            raise ValueError(f"RunBudget.max_requests must be >= 1, got {self.max_requests}")
        if self.max_tokens is not None and self.max_tokens < 1:
            raise ValueError(f"RunBudget.max_tokens must be >= 1 or None, got {self.max_tokens}")
        if self.wall_timeout_s <= 0:
            raise ValueError(f"RunBudget.wall_timeout_s must be > 0, got {self.wall_timeout_s}")


@dataclass(frozen=True)
class RateLimit:
    """A provider's limits.

    Attributes:
        requests_per_minute: Model requests per minute; None for no limit.
        tokens_per_minute: Input plus output tokens per minute; None for no limit.
    """

    requests_per_minute: float | None = None
    tokens_per_minute: float | None = None

    def __post_init__(self) -> None:
        for name in ("requests_per_minute", "tokens_per_minute"):
            value = getattr(self, name)
            if value is not None and value <= 0:
                raise ValueError(f"RateLimit.{name} must be > 0 or None, got {value}")


DEFAULT_RATE_LIMITS: Mapping[str, RateLimit] = {
    # Albert's documented default quota is 10 requests per minute per key.
    "albert": RateLimit(requests_per_minute=10),
    "mistral": RateLimit(requests_per_minute=60),
    "openai": RateLimit(requests_per_minute=500),
}
"""Conservative limits used when neither the caller nor ``models.yml`` gives any for a
provider."""


@dataclass(frozen=True)
class RetryPolicy:
    """Which failed model requests are retried, and the waits between attempts.

    Attributes:
        max_attempts: Attempts per request after server errors (5xx, 408...) and connection
            errors, the first included.
        base_delay_s: Backoff before the second attempt; doubled for each later one.
        max_delay_s: Cap of the computed backoff and of any ``Retry-After``.
        retry_statuses: HTTP statuses worth another attempt.
        max_rate_limit_wait_s: Total time one request may wait after 429 answers. A 429 says
            "later", not "broken": it is retried for as long as this allows, however many
            attempts that takes (concurrent runs released by the same ``Retry-After`` compete
            again, so a fixed attempt count would fail runs for nothing).
    """

    max_attempts: int = 6
    base_delay_s: float = 1.0
    max_delay_s: float = 120.0
    retry_statuses: frozenset[int] = field(
        default_factory=lambda: frozenset({408, 409, 425, 429, 500, 502, 503, 504})
    )
    max_rate_limit_wait_s: float = 600.0

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError(f"RetryPolicy.max_attempts must be >= 1, got {self.max_attempts}")
        if self.base_delay_s < 0 or self.max_delay_s < 0:
            raise ValueError("RetryPolicy delays must be >= 0")

    def backoff(self, attempt: int) -> float:
        """Seconds to wait after the ``attempt``-th failure (1-based), without a Retry-After."""
        return float(min(self.max_delay_s, self.base_delay_s * (2 ** (attempt - 1))))

    def delay(self, attempt: int, headers: Mapping[str, str] | None) -> float:
        """Seconds to wait after the ``attempt``-th failure, honouring ``Retry-After``."""
        advised = retry_after_seconds(headers)
        if advised is not None:
            return min(self.max_delay_s, advised)
        return self.backoff(attempt)


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


class Clock(Protocol):
    """Monotonic time and sleeping, injectable for tests."""

    def now(self) -> float:
        """Monotonic seconds."""
        ...

    async def sleep(self, seconds: float) -> None:
        """Wait ``seconds``."""
        ...


class SystemClock:
    """The real clock: ``time.monotonic`` and ``asyncio.sleep``."""

    def now(self) -> float:
        """Monotonic seconds."""
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        """Wait ``seconds`` (returns at once for zero or less)."""
        if seconds > 0:
            await asyncio.sleep(seconds)


class RateLimiter:
    """Requests and tokens per minute for one provider, shared by concurrent runs.

    Requests are spaced ``60 / requests_per_minute`` seconds apart (no bursts, so a provider
    counting over a rolling minute never sees more than its limit). Tokens use a bucket holding
    one minute's worth: a request reserves its estimated tokens up front, and :meth:`settle`
    corrects the bucket once the real usage is known.
    """

    def __init__(self, limit: RateLimit, clock: Clock | None = None) -> None:
        """Create a limiter with a full token bucket.

        Args:
            limit: The provider's limits.
            clock: Time source (the system clock by default).
        """
        self.limit = limit
        self.clock: Clock = clock or SystemClock()
        start = self.clock.now()
        self._next_request_at = start
        self._tokens = float(limit.tokens_per_minute or 0)
        self._tokens_at = start

    def reserve(self, tokens: int = 0) -> float:
        """Reserve a slot for one request and return the seconds to wait before sending it.

        Args:
            tokens: Estimated tokens of the request (input plus expected output).
        """
        now = self.clock.now()
        start = now
        tpm = self.limit.tokens_per_minute
        if tpm is not None:
            rate = tpm / 60.0
            self._tokens = min(tpm, self._tokens + (now - self._tokens_at) * rate)
            self._tokens_at = now
            # A request larger than the whole bucket would wait forever: charge a full bucket.
            self._tokens -= min(float(tokens), tpm)
            if self._tokens < 0:
                start = max(start, now + (-self._tokens) / rate)
        rpm = self.limit.requests_per_minute
        if rpm is not None:
            start = max(start, self._next_request_at)
            self._next_request_at = start + 60.0 / rpm
        return max(0.0, start - now)

    async def acquire(self, tokens: int = 0) -> float:
        """Reserve a slot, wait for it, and return the seconds waited."""
        wait = self.reserve(tokens)
        await self.clock.sleep(wait)
        return wait

    def settle(self, estimated: int, actual: int) -> None:
        """Correct the token bucket once a request's real usage is known."""
        if self.limit.tokens_per_minute is not None:
            self._tokens -= actual - estimated

    def hold_off(self, seconds: float) -> None:
        """Send nothing for ``seconds`` (the provider answered 429 with a Retry-After)."""
        if self.limit.requests_per_minute is None:
            return
        self._next_request_at = max(self._next_request_at, self.clock.now() + seconds)


class RateLimiters:
    """One :class:`RateLimiter` per provider, created on first use."""

    def __init__(
        self,
        limits: Mapping[str, RateLimit] | None = None,
        *,
        default: RateLimit | None = None,
        clock: Clock | None = None,
    ) -> None:
        """Configure the limits.

        Args:
            limits: Limits by provider name; providers not listed use ``default`` and then
                :data:`DEFAULT_RATE_LIMITS`.
            default: Limits for providers not listed (None: no limit).
            clock: Time source shared by every limiter.
        """
        self._limits = dict(limits or {})
        self._default = default
        self._clock = clock
        self._limiters: dict[str, RateLimiter] = {}

    def limit_for(self, provider: str, configured: RateLimit | None = None) -> RateLimit:
        """The limits that apply to ``provider``.

        Args:
            provider: The limiter key (a provider name, or a model key for a model with its
                own quota).
            configured: The limits of the benchmark configuration (``models.yml``), used when
                the caller gave neither limits for this key nor a default.
        """
        if provider in self._limits:
            return self._limits[provider]
        if self._default is not None:
            return self._default
        if configured is not None:
            return configured
        return DEFAULT_RATE_LIMITS.get(provider, RateLimit())

    def get(self, provider: str, configured: RateLimit | None = None) -> RateLimiter:
        """The shared limiter of ``provider``, created on first use (see :meth:`limit_for`)."""
        limiter = self._limiters.get(provider)
        if limiter is None:
            limiter = RateLimiter(self.limit_for(provider, configured), self._clock)
            self._limiters[provider] = limiter
        return limiter


def estimate_tokens(chars: int) -> int:
    """A rough token count for ``chars`` characters of mixed French/JSON text (4 chars a token)."""
    return math.ceil(chars / 4)
