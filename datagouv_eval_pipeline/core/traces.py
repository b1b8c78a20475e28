"""The trace format: the interchange between agent runs and scoring.

A trace is what one agent did on one task: its final answer, every tool call with its (parsed)
arguments and result, token usage and timings. Agents write traces; the action mapper, judges and
metrics read them. ``docs/trace-format.md`` documents it and ``traces.schema.json`` is generated
from these models.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from datagouv_eval_pipeline.base import project_files

TraceStatus = Literal["ok", "error", "budget_exceeded", "skipped", "cancelled"]
"""How a run ended: ``ok`` (an answer), ``error`` (the run failed), ``budget_exceeded`` (a
request, token or time budget ended it), ``skipped`` (never started, e.g. a quarantined task),
``cancelled`` (stopped by Ctrl-C or SIGTERM while in flight)."""

SCORED_STATUSES = frozenset({"ok"})
"""Runs that are judged and scored; the others keep NULL scores with their status reason."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)


class WireExchange(_Strict):
    """One HTTP request a code tool's program sent, as the sandbox's proxy saw it."""

    method: str
    """``GET``, ``POST``…; ``CONNECT`` for a TLS tunnel the proxy could not look into."""
    url: str
    """The URL as the program asked for it (production URLs)."""
    status: int = Field(ge=0)
    """The HTTP status (403 when the proxy refused; 0 when no answer came)."""
    bytes: int = Field(default=0, ge=0)
    """Bytes of the response body."""
    duration_ms: float = Field(default=0.0, ge=0)


class ToolCall(_Strict):
    """One tool call made by the agent."""

    id: str
    """The call id given by the model (unique within the trace)."""
    name: str
    """The literal tool name, e.g. ``search_datasets`` or ``execute_python``."""
    arguments: dict[str, Any] = Field(default_factory=dict)
    """Arguments as an object; a JSON string (as OpenAI-style models send) is parsed on load."""
    result: str = ""
    """The text the tool returned to the model."""
    error: bool = False
    """Whether the tool reported an error (a tool error, not a crash of the run)."""
    duration_ms: float | None = Field(default=None, ge=0)
    result_chars: int | None = Field(default=None, ge=0)
    """Length of the full result when ``result`` was truncated; None when it was not."""
    shown_chars: int | None = Field(default=None, ge=0)
    """How many characters of the result the model was shown when it was cut for the model (a
    marker followed them); None when the model saw the whole result."""
    http_requests: list[WireExchange] | None = None
    """The HTTP requests the call's program sent (sandboxed code and CLI tools), in order;
    None when they were not recorded."""
    wire_result: str | None = None
    """The text blocks of the MCP answer as they came on the wire, when they differ from
    ``result`` (the client gave the model the answer's ``structuredContent``); None when the
    model read that text itself or the tool is not an MCP one."""

    @field_validator("arguments", mode="before")
    @classmethod
    def _parse_json_string(cls, value: Any) -> Any:
        if value is None or value == "":
            return {}
        if isinstance(value, str):
            try:
                parsed = json.loads(value)
            except json.JSONDecodeError as error:
                raise ValueError(
                    f"arguments is a string that is not valid JSON: {error}"
                ) from error
            if not isinstance(parsed, dict):
                raise ValueError("arguments must be a JSON object")
            return parsed
        return value


class ModelTurn(_Strict):
    """One response of the model: what it wrote and which tools it called."""

    text: str = ""
    """Its text parts, joined (empty when it only called tools)."""
    tool_call_ids: list[str] = Field(default_factory=list)
    """The ids of the tool calls it made, in order, as in ``Trace.tool_calls`` (the final
    answer's call is not a tool call)."""
    final: bool = False
    """Whether this response gave the final answer."""


class Usage(_Strict):
    """Agent token usage (judge usage is counted separately)."""

    input_tokens: int = Field(default=0, ge=0)
    output_tokens: int = Field(default=0, ge=0)
    requests: int = Field(default=0, ge=0)

    @property
    def total_tokens(self) -> int:
        """Input plus output tokens."""
        return self.input_tokens + self.output_tokens


class RequestUsage(_Strict):
    """Tokens of one model request."""

    input_tokens: int = Field(default=0, ge=0)
    output_tokens: int = Field(default=0, ge=0)
    duration_ms: float | None = Field(default=None, ge=0)


class Provenance(_Strict):
    """Where a trace comes from; every result row derived from it carries these."""

    cell_key: str | None = None
    spec_hash: str | None = None
    snapshot_id: str | None = None
    skills_version: str | None = None
    system_prompt: str | None = None
    system_prompt_sha256: str | None = None
    code_version: str | None = None
    code_dirty: bool | None = None
    """Whether the checkout that ran the agent had uncommitted changes to tracked files (so
    ``code_version`` alone does not say which code ran); None when unknown or recorded before
    this field existed."""
    started_at: str | None = None
    """UTC ISO timestamp of the run's start."""
    base_urls: dict[str, str] | None = None
    """The catalog base URLs the agent was given, by ``TwinUrls`` field (``site``,
    ``datagouv_api``, ``tabular_api``, ``metrics_api``, ``crawler_api``). The twin serves every
    API on one host, so the action mapper reads URLs under these as the production URLs they
    stand for. None in traces recorded before this field existed."""
    model_settings: dict[str, Any] | None = None
    """The model's request settings from ``models.yml`` that were set (``timeout_s``,
    ``retries``, ``temperature``, ``top_p``, ``seed``, ``max_output_tokens``, ``stop``,
    ``context_window``); None when none was."""
    toolset_version: str | None = None
    """Fingerprint of the code of the world the agent met besides the model: the twin's
    catalogue and front, the MCP emulation or build, the sandbox, the emulated CLI, the web
    tools, as far as the cell reaches them (``experiment.fingerprints.toolset_version``). With
    ``snapshot_id`` it tells whether two runs of a cell met the same world; None when recorded
    before this field existed."""


class Trace(_Strict):
    """What one agent did on one task."""

    task_id: str
    answer: str = ""
    """The final answer text."""
    declined: bool | None = None
    """Structured output: the agent says it declines or found nothing suitable."""
    cited_urls: list[str] | None = None
    """Structured output: URLs the agent cites; when absent, URLs are read from the answer."""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)
    latency_ms: float = Field(default=0.0, ge=0)
    """Wall time of the run, including rate-limit waits."""
    rate_limit_wait_ms: float = Field(default=0.0, ge=0)
    """Time spent waiting on rate limits; subtracted from latency in efficiency metrics."""
    # The cell's, repeated: a trace read on its own is mapped and scored with them
    # (docs/trace-format.md says why they stay here).
    model: str = ""
    """The model id."""
    capabilities: list[str] = Field(default_factory=list)
    """The capabilities the agent had (``mcp``, ``code``, ...)."""
    mcp_version: str | None = None
    """The MCP server version the agent talked to (None when MCP was not a capability)."""
    ids_used: list[str] | None = None
    """Structured output: catalog ids the agent says its answer relies on."""
    status: TraceStatus = "ok"
    status_reason: str | None = None
    """Why the run ended as it did when the status is not ``ok``."""
    repeat: int = Field(default=0, ge=0)
    """Repeat index of this task in its cell."""
    requests: list[RequestUsage] = Field(default_factory=list)
    """Per-request token usage, in order."""
    cost: float | None = Field(default=None, ge=0)
    """Agent cost in the model's currency; None when the model has no price."""
    reasoning: list[str] = Field(default_factory=list)
    """Reasoning (thinking) parts the model returned, if any."""
    turns: list[ModelTurn] = Field(default_factory=list)
    """The model's responses in order, linking its text to its tool calls; empty in traces
    written before they were recorded."""
    provenance: Provenance = Field(default_factory=Provenance)

    @property
    def tool_less(self) -> bool:
        """True when the run had no tool available: no capability, and no tool call made.

        Action usage, trajectory adherence and TOOL_OMISSION do not apply to such a run.
        """
        return not self.capabilities and not self.tool_calls


def load_trace(path: Path) -> Trace:
    """Read a trace JSON file.

    Raises:
        ValueError: Naming the file and the offending fields when the content is invalid.
    """
    from pydantic import ValidationError

    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as error:
        raise ValueError(
            f"{path}: not UTF-8 text (byte {error.object[error.start]:#04x} at offset "
            f"{error.start}); a trace is UTF-8 JSON"
        ) from None
    try:
        return Trace.model_validate_json(text)
    except ValidationError as error:
        lines = [f"{path}: invalid trace"]
        for item in error.errors():
            loc = ".".join(str(part) for part in item["loc"]) or "<root>"
            lines.append(f"  {loc}: {item['msg']}")
        raise ValueError("\n".join(lines)) from error


TRACE_SCHEMA_PATH = project_files.trace_schema_path()
"""Where the generated JSON schema of the trace format is committed (or shipped in the wheel)."""


def trace_json_schema() -> dict[str, Any]:
    """Return the JSON schema of one trace file (see ``docs/trace-format.md``)."""
    generated = Trace.model_json_schema()
    generated.pop("title", None)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "datagouv-eval agent trace",
        "description": (
            "What one agent did on one task: final answer, tool calls with arguments and "
            "results, usage and timings. Generated from datagouv_eval_pipeline.core.traces; "
            "regenerate with `datagouv-eval schema`."
        ),
    } | generated
