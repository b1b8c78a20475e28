"""Provider rate limits: requests and tokens per minute, shared by every caller of a provider.

:class:`RateLimiter` *reserves* a slot and returns how long the caller must wait, so requests are
spread evenly instead of bursting into 429s. One limiter exists per provider quota and process
(:func:`process_rate_limiters`), so agent runs and judge calls of the same provider share it.
Time comes from a :class:`Clock`, so tests drive the limiter with a fake clock.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol


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


_PROCESS_LIMITERS: RateLimiters | None = None


def process_rate_limiters() -> RateLimiters:
    """The limiters shared by every agent run and judge of this process (system clock)."""
    global _PROCESS_LIMITERS
    if _PROCESS_LIMITERS is None:
        _PROCESS_LIMITERS = RateLimiters()
    return _PROCESS_LIMITERS


def estimate_tokens(chars: int) -> int:
    """A rough token count for ``chars`` characters of mixed French/JSON text (4 chars a token)."""
    return math.ceil(chars / 4)
