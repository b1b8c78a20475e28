"""How requests to model providers are paced and retried, for agents and judges alike.

* :mod:`~datagouv_eval_pipeline.core.providers.limits`: one :class:`RateLimiter` per provider quota
  (requests and tokens per minute), shared in a process by every agent run and judge using it.
* :mod:`~datagouv_eval_pipeline.core.providers.retry`: one :class:`RetryPolicy` for every model
  call:
  exponential backoff with jitter, ``Retry-After`` honoured with a floor, every wait recorded.
* :mod:`~datagouv_eval_pipeline.core.providers.managed`: one :class:`ManagedModel` around every
  model
  request, agents' and judges': it paces through the limiter, reserves the estimated tokens,
  retries, and settles the real usage.
"""

from datagouv_eval_pipeline.core.providers.limits import (
    DEFAULT_RATE_LIMITS,
    Clock,
    RateLimit,
    RateLimiter,
    RateLimiters,
    SystemClock,
    estimate_tokens,
    process_rate_limiters,
)
from datagouv_eval_pipeline.core.providers.managed import (
    ManagedModel,
    RequestObserver,
    counting_requests,
)
from datagouv_eval_pipeline.core.providers.retry import (
    RetryPolicy,
    RetryWait,
    retry_after_seconds,
    send_with_retries,
)

__all__ = [
    "DEFAULT_RATE_LIMITS",
    "Clock",
    "ManagedModel",
    "RateLimit",
    "RateLimiter",
    "RateLimiters",
    "RequestObserver",
    "RetryPolicy",
    "RetryWait",
    "SystemClock",
    "counting_requests",
    "estimate_tokens",
    "process_rate_limiters",
    "retry_after_seconds",
    "send_with_retries",
]
