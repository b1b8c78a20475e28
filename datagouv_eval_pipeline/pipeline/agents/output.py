"""The structured final output every agent returns, LLM or baseline.

Deterministic checks (citations, declines, grounded ids) read these fields directly, so they
work the same on live models, replayed cassettes and offline baselines. The model produces it by
calling the output tool :data:`FINAL_ANSWER_TOOL`.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

FINAL_ANSWER_TOOL = "final_answer"
"""Name of the output tool the model calls to give its answer (never a catalog action)."""

FINAL_ANSWER_DESCRIPTION = (
    "Give your final answer to the user. Call this once, when you are done with the other tools."
)


class FinalAnswer(BaseModel):
    """The agent's final answer to the user."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    answer: str = Field(min_length=1)
    """The answer shown to the user, in the language of the question."""
    declined: bool = False
    """True when you decline, or when the catalog holds nothing suitable for the request."""
    cited_urls: list[str] = Field(default_factory=list)
    """URLs of the data.gouv.fr pages (datasets, APIs, files) the answer relies on."""
    ids_used: list[str] = Field(default_factory=list)
    """Catalog ids (datasets, resources, APIs) the answer relies on."""
