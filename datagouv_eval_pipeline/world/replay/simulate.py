"""Provider behaviour the server can put in front of any mode: latency, rate limit, faults.

The order for each chat request is: rate limit (a rejected request answers 429 at once and
is not counted), then the fixed latency, then an injected fault if one is scheduled for this
request, then the mode's answer, then the Mistral reshaping if enabled.
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class ProviderSimulation:
    """What the server simulates on top of its answers.

    Attributes:
        latency_s: Seconds to wait before answering each accepted chat request.
        rate_limit_rpm: At most this many chat requests in any rolling ``rate_window_s``
            window; beyond it the answer is 429 with ``Retry-After``. None: no limit.
        rate_window_s: Length of the rate-limit window (60 s for "per minute").
        fail_requests: ``{n: status}``: the n-th accepted chat request (1-based) answers
            ``status`` (for example ``{1: 503}``).
        fail_every: Every n-th accepted chat request answers ``fail_status``. None: never.
        fail_status: Status used by ``fail_every``.
        mistral_quirks: Reshape answers like Mistral: list-shaped ``message.content`` and
            ``tool_calls[].type = null``.
    """

    latency_s: float = 0.0
    rate_limit_rpm: int | None = None
    rate_window_s: float = 60.0
    fail_requests: Mapping[int, int] = field(default_factory=dict)
    fail_every: int | None = None
    fail_status: int = 503
    mistral_quirks: bool = False

    def __post_init__(self) -> None:
        if self.latency_s < 0:
            raise ValueError(f"latency_s must be >= 0, got {self.latency_s}")
        if self.rate_limit_rpm is not None and self.rate_limit_rpm < 1:
            raise ValueError(f"rate_limit_rpm must be >= 1 or None, got {self.rate_limit_rpm}")
        if self.rate_window_s <= 0:
            raise ValueError(f"rate_window_s must be > 0, got {self.rate_window_s}")
        if self.fail_every is not None and self.fail_every < 1:
            raise ValueError(f"fail_every must be >= 1 or None, got {self.fail_every}")
        if not 400 <= self.fail_status <= 599:
            raise ValueError(
                f"fail_status must be an HTTP error status 400-599, got {self.fail_status}"
            )
        for ordinal, status in self.fail_requests.items():
            if ordinal < 1 or not 400 <= status <= 599:
                raise ValueError(
                    "fail_requests: expected {request number >= 1: HTTP error status 400-599}, "
                    f"got {ordinal}: {status}"
                )

    def fault_for(self, ordinal: int) -> int | None:
        """The status the ``ordinal``-th accepted request must answer, or None."""
        if ordinal in self.fail_requests:
            return self.fail_requests[ordinal]
        if self.fail_every is not None and ordinal % self.fail_every == 0:
            return self.fail_status
        return None


class SlidingWindowLimiter:
    """At most ``limit`` admissions in any rolling window of ``window_s`` seconds (thread-safe)."""

    def __init__(
        self, limit: int, window_s: float = 60.0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        """Start with an empty window.

        Args:
            limit: Admissions allowed per window.
            window_s: Window length in seconds.
            clock: Monotonic time source (injectable for tests).
        """
        self.limit = limit
        self.window_s = window_s
        self._clock = clock
        self._admitted: deque[float] = deque()
        self._lock = threading.Lock()

    def try_acquire(self) -> float | None:
        """Admit one request and return None, or return the seconds until one would be admitted."""
        with self._lock:
            now = self._clock()
            while self._admitted and now - self._admitted[0] >= self.window_s:
                self._admitted.popleft()
            if len(self._admitted) < self.limit:
                self._admitted.append(now)
                return None
            return self._admitted[0] + self.window_s - now


def retry_after_headers(wait_s: float) -> dict[str, str]:
    """``Retry-After`` in whole seconds (rounded up, at least 1) plus ``retry-after-ms``."""
    return {
        "retry-after": str(max(1, math.ceil(wait_s))),
        "retry-after-ms": str(max(1, math.ceil(wait_s * 1000))),
    }
