"""Every failure the twin's MCP releases report is an errored call for the action mapper.

Issue 25: a failure missed by :func:`~datagouv_eval_pipeline.core.semantic.detect_error` counts as a
performed action, and its message (which echoes the arguments) as evidence. Each release is
asked, through a real MCP client, for objects that do not exist or cannot be read.
"""

from __future__ import annotations

from typing import Any

import pytest

from datagouv_eval_pipeline.core.semantic import detect_error
from datagouv_eval_pipeline.core.traces import ToolCall
from datagouv_eval_pipeline.world.catalogue.urls import TwinUrls
from datagouv_eval_pipeline.world.mcp.client import call_tools_sync, result_text
from datagouv_eval_pipeline.world.mcp.server import mcp_url
from datagouv_eval_pipeline.world.mcp.versions import VERSIONS

INVENTED = "aaaaaaaaaaaaaaaaaaaaaaab"
INVENTED_RESOURCE = "aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee"
NOT_TABULAR = "37a95b64-7121-4039-af91-625a0a199a7c"  # an HTML page of the Transports dataset
DATA_ES = "ea4f5879-af40-4e3e-949d-812d6eeb5e02"

FAILING: tuple[tuple[str, dict[str, Any]], ...] = (
    ("get_dataset_info", {"dataset_id": INVENTED}),
    ("list_dataset_resources", {"dataset_id": INVENTED}),
    ("get_resource_info", {"resource_id": INVENTED_RESOURCE}),
    ("query_resource_data", {"resource_id": NOT_TABULAR}),
    ("query_resource_data", {"resource_id": INVENTED_RESOURCE}),
    ("query_resource_data", {"resource_id": DATA_ES, "page_size": 100}),
    ("download_and_parse_resource", {"resource_id": INVENTED_RESOURCE}),
    ("get_dataservice_info", {"dataservice_id": INVENTED}),
    ("get_dataservice_openapi_spec", {"dataservice_id": INVENTED}),
    ("query_dataset_data", {"question": "?", "dataset_id": INVENTED}),
)
# ``get_metrics`` of an unknown id is not a failure: the metrics API has no rows for it ("No
# metrics available for this dataset."); the grounding check treats its echo of the id.
# Releases before 0.2.24 ask data tools for the user's question too.
ASKS_QUESTION = {"query_resource_data"}


@pytest.mark.parametrize("version", sorted(VERSIONS))
def test_every_failure_of_a_release_is_an_errored_call(live_twin: TwinUrls, version: str) -> None:
    served = set(VERSIONS[version].tool_names())
    calls = [
        (name, {"question": "?", **args} if name in ASKS_QUESTION and version < "0.2.24" else args)
        for name, args in FAILING
        if name in served
    ]
    assert len(calls) >= 4
    results = call_tools_sync(mcp_url(live_twin.site, version), calls)
    missed = []
    for (name, args), result in zip(calls, results, strict=True):
        text = result_text(result)
        call = ToolCall(id=name, name=name, arguments=args, result=text, error=result.is_error)
        if not detect_error(call)[0]:
            missed.append(f"{name}({args}) -> {text[-300:]!r}")
    assert missed == []
