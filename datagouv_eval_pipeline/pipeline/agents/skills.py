"""How the skills document reaches the agent: pluggable injection strategies.

The ``skills`` capability adds no tool: it gives the agent a guide to the data.gouv.fr APIs.
The default strategy appends the document to the instructions under a heading; other strategies
(a preamble, a tool that returns the document on request, retrieval of sections...) implement
:class:`SkillsInjection` and are registered in :data:`SKILLS_STRATEGIES`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol


class SkillsInjection(Protocol):
    """Turns the instructions and a skills document into the instructions the agent gets."""

    @property
    def name(self) -> str:
        """The strategy's registered name."""
        ...

    def inject(self, instructions: str, skills_text: str) -> str:
        """Return the instructions with the skills document included."""
        ...


@dataclass(frozen=True)
class AppendSkills:
    """Append the document after the system prompt, under a heading (the original's behaviour)."""

    name: str = "append"
    heading: str = "# Skills: how to use the data.gouv.fr APIs"

    def inject(self, instructions: str, skills_text: str) -> str:
        """Return ``instructions``, a blank line, the heading and the document."""
        body = skills_text.strip()
        if not instructions.strip():
            return f"{self.heading}\n\n{body}\n"
        return f"{instructions.rstrip()}\n\n{self.heading}\n\n{body}\n"


@dataclass(frozen=True)
class PrependSkills:
    """Put the document before the system prompt (tests whether placement matters)."""

    name: str = "prepend"
    heading: str = "# Skills: how to use the data.gouv.fr APIs"

    def inject(self, instructions: str, skills_text: str) -> str:
        """Return the heading, the document, a blank line and ``instructions``."""
        head = f"{self.heading}\n\n{skills_text.strip()}\n"
        return head if not instructions.strip() else f"{head}\n{instructions.strip()}\n"


SKILLS_STRATEGIES: Mapping[str, SkillsInjection] = {
    strategy.name: strategy for strategy in (AppendSkills(), PrependSkills())
}
"""Registered strategies by name; ``append`` is the default."""

DEFAULT_SKILLS_STRATEGY = "append"


def skills_strategy(name: str = DEFAULT_SKILLS_STRATEGY) -> SkillsInjection:
    """Return a registered strategy.

    Raises:
        ValueError: For an unknown name (the message lists the registered ones).
    """
    try:
        return SKILLS_STRATEGIES[name]
    except KeyError:
        raise ValueError(
            f"unknown skills injection strategy {name!r}; registered: {sorted(SKILLS_STRATEGIES)}"
        ) from None
