"""Error detection on tool results, rule by rule, and what must not count as an error."""

from __future__ import annotations

import pytest

from datagouv_eval_pipeline.core.semantic import detect_error, map_trace
from datagouv_eval_pipeline.core.traces import ToolCall, Trace


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


@pytest.mark.parametrize(
    ("result", "reason"),
    [
        # Issue 25: common phrasings of a failure, and the MCP releases' own texts after their
        # header lines (every one was read as a success before).
        ("Service unavailable (503)", "the first line reports a failure"),
        ("**Service indisponible** (503), réessayez plus tard", "the first line reports a failure"),
        ("⛔ Request failed: 502 Bad Gateway", "the first line reports a failure"),
        ("HTTP 429: slow down", "the first line reports a failure"),
        ("Erreur : le serveur n'a pas répondu", "the first line reports a failure"),
        ("Connection refused by www.data.gouv.fr", "the first line reports a failure"),
        ("Timeout after 30 s", "the first line reports a failure"),
        ("La requête a échoué (HTTP 500)", "the first line reports a failure"),
        ("(503) The service is down, error", "the first line shows an HTTP error status"),
        ('{"message": "Not Found", "status": 404}', "the result is a JSON body with status 404"),
        ('{"error": "upstream timeout"}', "the result is a JSON error body"),
        (
            "dataset 'aaaaaaaaaaaaaaaaaaaaaaab' not found",
            "a one-line result says the object does not exist",
        ),
        (
            "Le jeu de données demandé est introuvable.",
            "a one-line result says the object does not exist",
        ),
        (
            "Querying resource: Equipements sportifs (data-es.csv)\nResource ID: r\n\n"
            "❌ Tabular API error (HTTP 503: Server error - URL: https://tabular-api.data.gouv.fr/x)",
            "a line starts with '❌'",
        ),
        (
            "Querying resource: X\nResource ID: r\n\n❌ Service unavailable",
            "a line starts with '❌'",
        ),
        (
            "Querying resource: X\nResource ID: r1\nQuestion: ?\n\n"
            "⚠️  Resource r1 not available via Tabular API",
            "Tabular API failure notice: 'Resource … not available via Tabular API'",
        ),
    ],
)
def test_common_and_twin_failure_texts(result: str, reason: str) -> None:
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
        # Data that merely mentions errors or codes, and a JSON body with data.
        '{"errors_count": 0, "data": [1, 2]}',
        '"error_rate","value"\n0.1,3',
        "Total rows (Tabular API): 404\nRetrieved: 20 row(s) from page 1",
        "No datasets found for query: 'erreurs 404'",
        # A listing that mentions "not found" on a later line is data, not a failure.
        "Found 2 dataset(s)\n1. Objets trouvés : not found items register\n2. Lost and found",
        # One resource of a multi-resource exploration failing is not the call failing.
        "Exploring dataset: Transports\n--- Resource: a.csv ---\n  Total rows: 3\n"
        "--- Resource: b ---\n  ⚠️  Resource b not available via Tabular API\n",
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
