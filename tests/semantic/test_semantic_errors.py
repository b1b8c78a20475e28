"""Error detection on tool results, rule by rule, and what must not count as an error."""

from __future__ import annotations

import pytest

from datagouv_eval_pipeline.semantic import detect_error, map_trace
from datagouv_eval_pipeline.traces import ToolCall, Trace


def _call(result: str, error: bool = False) -> ToolCall:
    return ToolCall(id="c", name="x", arguments={}, result=result, error=error)


@pytest.mark.parametrize(
    ("result", "reason"),
    [
        ("Error: Dataset with ID 'x' not found.", "result starts with 'Error'"),
        ("  Error executing tool search_datasets: boom", "result starts with 'Error'"),
        ("[error] Docker execution timed out after 60s", "result starts with '[error]'"),
        ("❌ Error querying resource: string indices must be integers", "result starts with '❌'"),
        (
            "[stderr] Traceback (most recent call last):\n  File ...\nKeyError: 'x'",
            "stderr-only output reporting a failure",
        ),
        ("[stderr] bash: jq: command not found", "stderr-only output reporting a failure"),
        ("[stderr] curl: (6) Could not resolve host: x", "stderr-only output reporting a failure"),
        (
            'rows: 3\nTraceback (most recent call last):\n  File "<string>", line 4',
            "Python traceback in result",
        ),
        (
            "  File \"<string>\", line 1\n    print(\n    ^\nSyntaxError: '(' was never closed",
            "Python syntax error in result",
        ),
        (
            "Querying resource: X\nResource ID: r\n\n⚠️  This resource ID was not found in the "
            "Tabular API. Use search_datasets to find a dataset...",
            "Tabular API failure notice: 'This resource ID was not found in the Tabular API'",
        ),
        (
            "Querying resource: X\n⚠️  The Tabular API rejected the request (invalid filter...)",
            "Tabular API failure notice: 'The Tabular API rejected the request'",
        ),
        (
            "Dataset Metrics: X\n\nError fetching resource metrics: timeout",
            "a section failed ('Error fetching ...')",
        ),
        (
            "HTTP/1.1 404 Not Found\ncontent-type: text/html",
            "error status in output: '404 not found'",
        ),
    ],
)
def test_error_rules(result: str, reason: str) -> None:
    assert detect_error(_call(result)) == (True, reason)


def test_tool_flag_wins() -> None:
    assert detect_error(_call("Found 3 datasets", error=True)) == (
        True,
        "the tool reported an error",
    )


@pytest.mark.parametrize(
    "result",
    [
        "",
        "Found 12 dataset(s) for query: 'élus'",
        "Querying resource: X\n⚠️ Large dataset (12000 rows). To get all data, use page=2",
        "Querying resource: X\n⚠️  No rows available (resource may be empty or filtered).",
        "Resource Information: X\nTabular API availability:\n⚠️  Not available via Tabular API",
        "[stderr]   % Total    % Received % Xferd  Average Speed   Time\n100  1234  100  1234",
        "count\n0  2076",
    ],
)
def test_not_errors(result: str) -> None:
    assert detect_error(_call(result)) == (False, "")


def test_instances_inherit_the_call_error() -> None:
    trace = Trace.model_validate(
        {
            "task_id": "t",
            "mcp_version": "0.2.26",
            "tool_calls": [
                {
                    "id": "c1",
                    "name": "execute_python",
                    "arguments": {
                        "code": "import requests\n"
                        "requests.get('https://www.data.gouv.fr/api/1/datasets/d1/').json()\n"
                    },
                    "result": "[error] Docker execution timed out after 60s",
                }
            ],
        }
    )
    mapping = map_trace(trace)
    call = mapping.calls[0]
    assert call.errored is True
    assert call.error_reason == "result starts with '[error]'"
    assert [(i.action, i.errored) for i in mapping.instances] == [
        ("get.dataset.info", True),
        ("get.dataset.resources", True),
    ]
