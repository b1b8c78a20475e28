"""What every policy shares: the history it reads, the tools it sees, its steps and answers."""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar

from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    RetryPromptPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo
from pydantic_ai.tools import ToolDefinition

from datagouv_eval_pipeline.pipeline.agents.baselines.guidance import NO_GUIDANCE, Guidance
from datagouv_eval_pipeline.pipeline.agents.baselines.parsing import Listed
from datagouv_eval_pipeline.pipeline.agents.baselines.text import (
    other_places,
    search_query,
    title_overlap,
)
from datagouv_eval_pipeline.pipeline.agents.output import FinalAnswer

NOT_AN_LLM = "deterministic baseline policy, not an LLM"

NOTHING_FOUND = (
    "Je n'ai trouvé aucun jeu de données correspondant à cette demande sur data.gouv.fr."
)
NO_TOOLS = (
    "Je ne peux pas répondre : je suis une politique déterministe (pas un modèle de langage), "
    "sans connaissances propres sur data.gouv.fr, et aucun outil ne m'a été donné pour "
    "consulter le catalogue."
)
"""The answer of every baseline without tools (``data_contamination``): declined, saying why."""


@dataclass(frozen=True)
class Observation:
    """A tool call the policy made and what came back.

    Attributes:
        tool: Tool name.
        args: Arguments sent.
        text: The result text (or the error text).
        failed: Whether the tool reported a failure.
    """

    tool: str
    args: Mapping[str, Any]
    text: str
    failed: bool


def question_of(messages: Sequence[ModelMessage]) -> str:
    """The user's question: the first user prompt of the conversation."""
    for message in messages:
        if isinstance(message, ModelRequest):
            for part in message.parts:
                if isinstance(part, UserPromptPart) and isinstance(part.content, str):
                    return part.content
    return ""


def observations_of(
    messages: Sequence[ModelMessage], ignore: Collection[str] = ()
) -> list[Observation]:
    """The tool calls made so far, in order, with their results."""
    calls: list[ToolCallPart] = []
    results: dict[str, tuple[str, bool]] = {}
    for message in messages:
        for part in message.parts:
            if isinstance(part, ToolCallPart) and part.tool_name not in ignore:
                calls.append(part)
            elif isinstance(part, ToolReturnPart):
                content = (
                    part.content
                    if isinstance(part.content, str)
                    else json.dumps(part.content, ensure_ascii=False, default=str)
                )
                results[part.tool_call_id] = (content, part.outcome != "success")
            elif isinstance(part, RetryPromptPart):  # pragma: no cover - legacy shape
                results[part.tool_call_id] = (str(part.content), True)
    return [
        Observation(
            call.tool_name,
            call.args_as_dict(),
            *results.get(call.tool_call_id, ("", True)),
        )
        for call in calls
    ]


@dataclass(frozen=True)
class ToolSurface:
    """The tools the agent offers, looked up by role."""

    tools: Mapping[str, ToolDefinition]

    @classmethod
    def of(cls, info: AgentInfo) -> ToolSurface:
        """The function tools of a request."""
        return cls({tool.name: tool for tool in info.function_tools})

    def has(self, name: str) -> bool:
        """Whether a tool of that name is offered."""
        return name in self.tools

    def description(self, name: str) -> str:
        """The description of a tool ("" when absent)."""
        tool = self.tools.get(name)
        return (tool.description or "") if tool is not None else ""

    def params(self, name: str) -> tuple[set[str], set[str]]:
        """(all parameter names, required ones) of a tool."""
        schema = self.tools[name].parameters_json_schema
        return set(schema.get("properties") or {}), set(schema.get("required") or [])

    def args(self, name: str, values: Mapping[str, Any]) -> dict[str, Any] | None:
        """Arguments for ``name`` from ``values``, keeping only parameters the schema declares.

        Returns None when a required parameter has no value (the call cannot be made).
        """
        if name not in self.tools:
            return None
        known, required = self.params(name)
        if required - {key for key, value in values.items() if value is not None}:
            return None
        return {key: value for key, value in values.items() if key in known and value is not None}


@dataclass(frozen=True)
class Call:
    """The policy's next step: call a tool."""

    tool: str
    args: dict[str, Any]


@dataclass(frozen=True)
class Parallel:
    """The policy's next step: several independent calls in one response (run concurrently).

    Only for calls that do not depend on each other's results, as a model would batch them.
    """

    calls: tuple[Call, ...]


Step = Call | Parallel | FinalAnswer


class BaselinePolicy(ABC):
    """A deterministic agent policy.

    The concrete policies are frozen dataclasses giving ``name``, ``label``, the capabilities they
    can use (``runs_with``, with what they say they need otherwise: ``needs``) and ``_step``.
    What every policy does the same way lives here: the capability check, and declining when
    the agent has no tool at all (``data_contamination``).
    """

    runs_with: ClassVar[frozenset[str]]
    """Capabilities the policy can use; it runs with any one of them, or with no tool at all."""
    needs: ClassVar[str]
    """Why it cannot run otherwise, following its name in the message."""

    @property
    @abstractmethod
    def name(self) -> str:
        """The model name in ``models.yml``."""

    @property
    @abstractmethod
    def label(self) -> str:
        """What the policy does, saying it is not an LLM."""

    def unsupported(self, capabilities: Collection[str]) -> str | None:
        """Why the policy cannot run with these capabilities, or None.

        ``skills`` is advice, not a tool, so it does not count; with no tool at all the policy
        runs and declines.
        """
        tools = set(capabilities) - {"skills"}
        if tools and not tools & self.runs_with:
            return f"{self.name} {self.needs}"
        return None

    def decide(
        self,
        question: str,
        seen: Sequence[Observation],
        tools: ToolSurface,
        guidance: Guidance = NO_GUIDANCE,
    ) -> Step:
        """The next step given everything seen so far and the advice read in the instructions.

        Without any tool the answer is declined (:data:`NO_TOOLS`); otherwise ``_step`` decides.
        """
        if not tools.tools:
            return FinalAnswer(answer=NO_TOOLS, declined=True)
        return self._step(question, seen, tools, guidance)

    @abstractmethod
    def _step(
        self, question: str, seen: Sequence[Observation], tools: ToolSurface, guidance: Guidance
    ) -> Step:
        """The next step when the agent has at least one tool."""


@dataclass
class Findings:
    """What a policy learnt, turned into the final answer."""

    lines: list[str] = field(default_factory=list)
    urls: list[str] = field(default_factory=list)
    ids: list[str] = field(default_factory=list)

    def cite(self, url: str | None, *ids: str | None) -> None:
        """Remember a URL and ids the answer relies on."""
        if url and url not in self.urls:
            self.urls.append(url)
        for item in ids:
            if item and item not in self.ids:
                self.ids.append(item)

    def answer(self, declined_text: str) -> FinalAnswer:
        """The final answer; declined when nothing was found."""
        if not self.lines:
            return FinalAnswer(answer=declined_text, declined=True)
        return FinalAnswer(
            answer="\n".join(self.lines), declined=False, cited_urls=self.urls, ids_used=self.ids
        )


def last(seen: Sequence[Observation], tool: str) -> Observation | None:
    """The latest call of ``tool``, if any."""
    for observation in reversed(seen):
        if observation.tool == tool:
            return observation
    return None


def calls_of(seen: Sequence[Observation], tool: str) -> list[Observation]:
    """Every call of ``tool``, in order."""
    return [observation for observation in seen if observation.tool == tool]


def next_query(
    question: str, searches: Sequence[Observation], titles: Callable[[str], Sequence[str]]
) -> str | None:
    """The next search to send, or None when searching is over.

    The first search holds the question's most specific words; the search engine requires
    every word, so after a search whose listed items (``titles``: each item's title, or all
    its listing shows) share no word with the question
    (nothing found, or only unrelated titles) the next one drops the least specific word
    left. Searching ends when a search found a related title, failed, or no word is left
    to drop (each retry is a real call, recorded in the trace).
    """
    if searches:
        latest = searches[-1]
        if latest.failed or any(title_overlap(question, t) for t in titles(latest.text)):
            return None
    return search_query(question, dropped=len(searches))


T = TypeVar("T")


def most_related(
    question: str,
    items: Sequence[T],
    title: Callable[[T], str],
    metadata: Callable[[T], str] | None = None,
) -> list[T]:
    """``items`` ordered as a person reads a result list (stable: the engine's order breaks ties).

    Titles naming a place the question does not mention come after the others (a regional
    copy answers a national or another region's question less well than the national
    dataset); then titles sharing more topic words with the question come first; then, when
    the listing shows more than titles (``metadata``: tags, organization, description), the
    items whose listing shares more topic words.
    """

    def key(item: T) -> tuple[bool, int, int]:
        shown = title(item)
        extra = title_overlap(question, f"{shown} {metadata(item)}") if metadata else 0
        return (other_places(question, shown) > 0, -title_overlap(question, shown), -extra)

    return sorted(items, key=key)


def listing_text(item: Listed) -> str:
    """What a search listing shows of an item besides its title: tags, organization, description.

    A person scanning results reads these too: an API titled *API Sirene* is about *SIRET*
    numbers when its tags say so.
    """
    return " ".join(
        item.fields.get(name, "") for name in ("Tags", "Organization", "Description", "Acronym")
    )
