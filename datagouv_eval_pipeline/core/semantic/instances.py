"""Semantic action instances: what literal tool calls mean in the vocabulary of the task specs."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class CallCategory(StrEnum):
    """How a literal call reached data.gouv.fr (or did not)."""

    MCP_TOOL = "mcp_tool"
    DATAGOUV_CLI = "datagouv_cli"
    DATAGOUV_API_HTTP = "datagouv_api_http"
    PYTHON_CLIENT = "python_client"
    PYTHON_LOCAL_ANALYSIS = "python_local_analysis"
    WEB_SEARCH = "web_search"
    WEB_PAGE_FETCH = "web_page_fetch"
    FILE_LOAD_EXTERNAL = "file_load_external"
    UNCLASSIFIED = "unclassified"


@dataclass(frozen=True)
class ActionInstance:
    """One semantic action performed by one literal call.

    Attributes:
        action: Semantic action name, e.g. ``get.dataset.info``.
        args: Arguments under their semantic names (``dataset_id``, ``query``, …).
        source_call_id: Id of the tool call it came from.
        source_tool: Literal tool name of that call.
        category: How the call reached the catalog.
        confidence: 1.0 for an exact mapping, lower for heuristic ones.
        errored: Whether the source call failed.
        reason: Why the mapper produced this instance.
    """

    action: str
    args: dict[str, Any] = field(default_factory=dict)
    source_call_id: str = ""
    source_tool: str = ""
    category: CallCategory = CallCategory.MCP_TOOL
    confidence: float = 1.0
    errored: bool = False
    reason: str = ""
