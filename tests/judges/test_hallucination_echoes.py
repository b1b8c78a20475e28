"""Issue 25: the deterministic judge's HALLUCINATION mode does not take echoes for evidence.

It reads ids through the metrics' grounding check, so an id echoed by a failed call or by the
call it was given to is not grounded; a lookup of a real id, recorded on the wire, still is.
"""

from __future__ import annotations

from datagouv_eval_pipeline.core.judges.protocol import ToolEvidence, tool_evidence
from datagouv_eval_pipeline.core.judges.verdict import FailureMode, outcome
from datagouv_eval_pipeline.core.traces import Trace, WireExchange
from tests.judges.test_deterministic import FULL, modes

INVENTED = "aaaaaaaaaaaaaaaaaaaaaaab"
DS = "5d13a8b6634f41070a43dff3"


def test_an_id_echoed_by_a_failed_call_is_a_hallucination() -> None:
    echo = ToolEvidence(
        "c2", "get_dataset_info", {"dataset_id": INVENTED}, f"Dataset '{INVENTED}' not found", True
    )
    found = modes(f"Voir le jeu {INVENTED}.", FULL, [echo])
    assert outcome(found[FailureMode.HALLUCINATION]) == "fail"
    assert found[FailureMode.HALLUCINATION].details["ungrounded_ids"] == [INVENTED]


def test_an_id_printed_by_the_agents_own_code_is_a_hallucination() -> None:
    printed = ToolEvidence(
        "c2", "execute_python", {"code": f"print('{INVENTED}')"}, INVENTED, errored=False
    )
    found = modes(f"Voir le jeu {INVENTED}.", FULL, [printed])
    assert outcome(found[FailureMode.HALLUCINATION]) == "fail"


def test_the_evidence_keeps_the_requests_that_looked_an_id_up() -> None:
    url = f"https://www.data.gouv.fr/api/1/datasets/{DS}/"
    trace = Trace.model_validate(
        {
            "task_id": "task_0900",
            "tool_calls": [
                {
                    "id": "c2",
                    "name": "execute_python",
                    "arguments": {"code": f"print(httpx.get('{url}').json()['id'])"},
                    "result": DS,
                    "http_requests": [{"method": "GET", "url": url, "status": 200}],
                }
            ],
        }
    )
    (evidence,) = tool_evidence(trace)
    assert evidence.http_requests == (WireExchange(method="GET", url=url, status=200),)
    found = modes(f"Voir le jeu {DS}.", FULL, [evidence])
    assert outcome(found[FailureMode.HALLUCINATION]) == "pass"
