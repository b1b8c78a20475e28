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

The public names are imported on first use (PEP 562): a module that needs only the rate limits
(the judges' configuration, at definition time) does not import pydantic-ai behind the others.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from datagouv_eval_pipeline.base.faces import lazy_attributes

if TYPE_CHECKING:
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
        LIMITER_WAIT,
        Answered,
        ManagedModel,
        RequestObserver,
        counting_requests,
        message_chars,
    )
    from datagouv_eval_pipeline.core.providers.retry import (
        RetryPolicy,
        RetryWait,
        retry_after_seconds,
        send_with_retries,
    )

_MODULE_OF: dict[str, str] = {
    "Answered": ".managed",
    "Clock": ".limits",
    "DEFAULT_RATE_LIMITS": ".limits",
    "LIMITER_WAIT": ".managed",
    "ManagedModel": ".managed",
    "RateLimit": ".limits",
    "RateLimiter": ".limits",
    "RateLimiters": ".limits",
    "RequestObserver": ".managed",
    "RetryPolicy": ".retry",
    "RetryWait": ".retry",
    "SystemClock": ".limits",
    "counting_requests": ".managed",
    "estimate_tokens": ".limits",
    "message_chars": ".managed",
    "process_rate_limiters": ".limits",
    "retry_after_seconds": ".retry",
    "send_with_retries": ".retry",
}
"""Each public name, and the module that defines it."""

if not TYPE_CHECKING:  # hidden from mypy, which then checks each name imported from the face
    __getattr__ = lazy_attributes(__name__, _MODULE_OF)


__all__ = [
    "DEFAULT_RATE_LIMITS",
    "LIMITER_WAIT",
    "Answered",
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
    "message_chars",
    "process_rate_limiters",
    "retry_after_seconds",
    "send_with_retries",
]
