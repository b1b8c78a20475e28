"""Hand-written tool surfaces the baseline policy tests share."""

from __future__ import annotations

from collections.abc import Sequence

from pydantic_ai.tools import ToolDefinition

from datagouv_eval_pipeline.pipeline.agents.baselines import ToolSurface

QUESTION = "Combien de jeux de données étaient publiés sur data.gouv.fr avant le 28 juin 2012 ?"


def tool(
    name: str, required: Sequence[str], optional: Sequence[str] = (), description: str = ""
) -> ToolDefinition:
    """A tool taking string arguments (its description defaults to its name)."""
    return ToolDefinition(
        name=name,
        description=description or name,
        parameters_json_schema={
            "type": "object",
            "properties": {arg: {"type": "string"} for arg in [*required, *optional]},
            "required": list(required),
        },
    )


def surface(*tools: ToolDefinition) -> ToolSurface:
    """The surface offering these tools."""
    return ToolSurface({t.name: t for t in tools})


def catalog_tools(optional: Sequence[str] = ()) -> list[ToolDefinition]:
    """The dataset chain every MCP version offers: search, dataset info and resources, resource.

    ``optional``: parameters each of them also declares.
    """
    return [
        tool("search_datasets", ["query"], optional),
        tool("get_dataset_info", ["dataset_id"], optional),
        tool("list_dataset_resources", ["dataset_id"], optional),
        tool("get_resource_info", ["resource_id"], optional),
    ]
