"""What the code-writing steps share: the base URLs the tool description gives, programs."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from datagouv_eval_pipeline.pipeline.agents.baselines.parsing import UUID, pipe_rows
from datagouv_eval_pipeline.pipeline.agents.baselines.policy import Call, Observation, ToolSurface

EXECUTE_PYTHON = "execute_python"
EXECUTE_CLI = "execute_cli"
V1_SEARCH = "1/datasets/"
"""The dataset search a program sends when its instructions document no other: API v1's list
endpoint with ``q`` (every word required, in the title)."""


@dataclass(frozen=True)
class ApiBases:
    """Base URLs a policy reads from the ``execute_python`` tool description."""

    api: str
    tabular: str
    metrics: str | None

    @classmethod
    def from_description(cls, description: str) -> ApiBases | None:
        """Parse ``- main API …: URL`` style lines; None when the main API is not given."""

        def url_after(label: str) -> str | None:
            match = re.search(rf"(?m)^- {label}[^:]*:\s*(https?://\S+)", description)
            return match.group(1) if match else None

        api, tabular = url_after("main API"), url_after("Tabular API")
        if api is None or tabular is None:
            return None
        return cls(api=api, tabular=tabular, metrics=url_after("Metrics API"))

    @classmethod
    def of(cls, tools: ToolSurface) -> ApiBases | None:
        """The base URLs of the ``execute_python`` tool, if it is offered and gives them."""
        if not tools.has(EXECUTE_PYTHON):
            return None
        return cls.from_description(tools.description(EXECUTE_PYTHON))


def program(*lines: str) -> str:
    """A Python program using ``httpx``."""
    return "\n".join(["import httpx", "", *lines]) + "\n"


def run(*lines: str) -> Call:
    """An ``execute_python`` call of the program made of ``lines``."""
    return Call(EXECUTE_PYTHON, {"code": program(*lines)})


def resources_of(step: Observation) -> list[list[str]]:
    """(id, title, format) of the resources a dataset step printed (program or CLI JSON)."""
    if step.failed:
        return []
    if step.tool == EXECUTE_CLI:
        try:
            body, _ = json.JSONDecoder().raw_decode(step.text, max(0, step.text.find("{")))
        except ValueError:
            return []
        if not isinstance(body, dict):
            return []
        return [
            [str(r.get("id")), str(r.get("title")), str(r.get("format"))]
            for r in body.get("resources") or []
        ]
    return [row for row in pipe_rows(step.text)[1:] if re.fullmatch(UUID, row[0])]
