"""A clock for the limiter tests: time moves only when something sleeps, every sleep kept."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Clock:
    now_s: float = 100.0
    slept: list[float] = field(default_factory=list)

    def now(self) -> float:
        return self.now_s

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now_s += seconds
