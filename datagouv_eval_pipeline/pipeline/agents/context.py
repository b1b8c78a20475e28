"""The model's context window, as a task run fills it: tool results are cut to fit.

A model with ``context_window`` in ``models.yml`` reads and writes at most that many tokens per
request. What the next request will hold is known after each answer: the provider reports the
tokens the last request read and wrote, and the next one adds the tool results of that turn.
So each tool result is shown up to the room left (minus the tokens reserved for the answer),
cut with a visible marker, and a turn that finds no room at all shows only the marker. A request
that would still not fit (the conversation itself filled the window) is not sent: the run ends
``error`` with reason ``context_overflow``, so an oversized request is never sent, refused and
sent again.

Counting is deliberately cautious: a tool result is counted at 3 characters a token (JSON,
identifiers and URLs tokenize worse than prose), and the last request's tokens are the
provider's own figures.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from datagouv_eval_pipeline.core.benchmark import ModelCallSettings

CHARS_PER_TOKEN = 3
"""Characters of a tool result counted as one token when fitting it (cautious)."""

RESULT_OVERHEAD_TOKENS = 16
"""Tokens a tool result costs besides its text (role, call id, chat template)."""

DEFAULT_ANSWER_RESERVE = 1024
"""Tokens kept for the model's answer when ``max_output_tokens`` is not set (at most a
quarter of the window)."""

CONTEXT_OVERFLOW = "context_overflow"
"""The start of the ``status_reason`` of a run whose next request could not fit the window."""


class ContextOverflowError(RuntimeError):
    """The next request would not fit the model's context window; it is not sent."""


@dataclass
class ContextWindow:
    """The room left in a model's context window during one task run.

    Attributes:
        window: Tokens per request (``context_window``).
        reserve: Tokens kept for the answer (``max_output_tokens``, else a default).
        used: Tokens the last request read and wrote (0 before the first answer).
        admitted_chars: Characters of tool results shown since the last answer.
        admitted_results: Tool results shown since the last answer.
    """

    window: int
    reserve: int
    used: int = 0
    admitted_chars: int = 0
    admitted_results: int = 0

    @classmethod
    def of(cls, settings: ModelCallSettings) -> ContextWindow | None:
        """The window of a model's settings; None when it sets no ``context_window``."""
        if settings.context_window is None:
            return None
        reserve = settings.max_output_tokens
        if reserve is None:
            reserve = min(DEFAULT_ANSWER_RESERVE, settings.context_window // 4)
        return cls(window=settings.context_window, reserve=reserve)

    def _pending_tokens(self) -> int:
        return (
            math.ceil(self.admitted_chars / CHARS_PER_TOKEN)
            + self.admitted_results * RESULT_OVERHEAD_TOKENS
        )

    def room_chars(self) -> int:
        """Characters of one more tool result that still fit (0 when none does)."""
        free = (
            self.window - self.reserve - self.used - self._pending_tokens() - RESULT_OVERHEAD_TOKENS
        )
        return max(0, free * CHARS_PER_TOKEN)

    def admit(self, shown_chars: int) -> None:
        """Count a tool result shown to the model."""
        self.admitted_chars += shown_chars
        self.admitted_results += 1

    def answered(self, input_tokens: int, output_tokens: int) -> None:
        """Start the next turn from the tokens the last request read and wrote."""
        self.used = input_tokens + output_tokens
        self.admitted_chars = 0
        self.admitted_results = 0

    def check_next_request(self, estimated_tokens: int) -> None:
        """Refuse a request that cannot fit.

        Args:
            estimated_tokens: The request's own estimate (before the first answer, when the
                provider has reported nothing yet); the larger of it and the count is used.

        Raises:
            ContextOverflowError: The request plus the answer's reserve exceeds the window.
        """
        needed = max(self.used + self._pending_tokens(), estimated_tokens)
        if needed + self.reserve > self.window:
            raise ContextOverflowError(
                f"{CONTEXT_OVERFLOW}: the next request needs about {needed} tokens plus "
                f"{self.reserve} for the answer, over the model's context window of "
                f"{self.window} tokens; it was not sent"
            )


def cut_to_fit(text: str, room: int) -> tuple[str, int]:
    """``text`` cut to ``room`` characters, with a marker saying why and how long it was.

    Returns:
        The text to show and how many characters of ``text`` it keeps.
    """
    marker = f"\n[... truncated to fit the model's context window: {len(text)} characters in total]"
    if room <= len(marker):
        return f"[result of {len(text)} characters left out: the model's context window is full]", 0
    kept = room - len(marker)
    return text[:kept] + marker, kept
