"""How requests to model providers are paced and retried, for agents and judges alike.

* :mod:`~datagouv_eval_pipeline.providers.limits`: one :class:`RateLimiter` per provider quota
  (requests and tokens per minute), shared in a process by every agent run and judge using it.
* :mod:`~datagouv_eval_pipeline.providers.retry`: one :class:`RetryPolicy` for every model call:
  exponential backoff with jitter, ``Retry-After`` honoured with a floor, every wait recorded.
"""

from datagouv_eval_pipeline.providers.limits import (
    DEFAULT_RATE_LIMITS,
    Clock,
    RateLimit,
    RateLimiter,
    RateLimiters,
    SystemClock,
    estimate_tokens,
    process_rate_limiters,
)
from datagouv_eval_pipeline.providers.retry import (
    RetryPolicy,
    RetryWait,
    retry_after_seconds,
    send_with_retries,
)

__all__ = [
    "DEFAULT_RATE_LIMITS",
    "Clock",
    "RateLimit",
    "RateLimiter",
    "RateLimiters",
    "RetryPolicy",
    "RetryWait",
    "SystemClock",
    "estimate_tokens",
    "process_rate_limiters",
    "retry_after_seconds",
    "send_with_retries",
]
