"""Throughput of the deterministic scorer on one core.

Builds a task shaped like task_0002 (both tiers, criteria and strict arguments, an expected value
and source) and a 20-call MCP trace with realistic result texts, then times ``score_trace`` in a
plain ``time.perf_counter`` loop:

* ``full``: mapping the calls (``map_trace``) plus every metric and check, as the pipeline does;
* ``metrics only``: the same with the instances already mapped (the ``action_mappings`` stage
  stores them), i.e. the cost of the metrics themselves.

Run: ``python3 -m uv run python bench/bench_scoring.py [seconds per measurement]``.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

from datagouv_eval_pipeline.core.metrics.scorer import score_trace
from datagouv_eval_pipeline.core.semantic.mapper import map_trace
from datagouv_eval_pipeline.core.tasks.spec import TaskSpec
from datagouv_eval_pipeline.core.traces import Trace

DS = "5d13a8b6634f41070a43dff3"
RID = "f868cca6-8da1-4369-a78d-47463f19a9a3"
GOAL = 2000.0

TASK: dict[str, Any] = {
    "task_id": "task_0002",
    "version": 1,
    "task_name": "bench",
    "meta": {"status": "active", "source": "synthetic"},
    "prompt": "Combien de jeux de données étaient publiés sur data.gouv.fr avant le 28 juin 2012 ?",
    "evaluation_criteria": {"minimal": [{"criteria": "gives 2076"}]},
    "action_chain": {
        "minimal": {
            "chain": "search.datasets > get.dataset.resources > get.data",
            "required_actions": [
                {"name": "search.datasets", "args": [{"name": "query", "criteria": "catalogue"}]},
                {
                    "name": "get.dataset.resources",
                    "args": [{"name": "dataset_id", "strict_value": DS}],
                },
                {
                    "name": "get.data",
                    "args": [
                        {"name": "resource_id", "strict_value": RID},
                        {"name": "filters", "criteria": "created_at before 2012-06-28"},
                    ],
                },
            ],
        },
        "optimal": {
            "chain": (
                "search.datasets > get.dataset.info > get.dataset.resources > get.resource.info"
                " > get.data"
            ),
            "required_actions": [
                {"name": "get.dataset.info", "args": [{"name": "dataset_id", "strict_value": DS}]},
                {
                    "name": "get.resource.info",
                    "args": [{"name": "resource_id", "strict_value": RID}],
                },
            ],
        },
    },
    "expected_values": [{"name": "count", "value": 2076}],
    "expected_sources": [{"type": "dataset", "id": DS}],
}


ANSWER = (
    "**2\u202f076 jeux de données** étaient publiés sur data.gouv.fr avant le 28 juin 2012.\n\n"
    "Méthode : j'ai cherché le jeu « Catalogue des données de data.gouv.fr » "
    f"(identifiant {DS}), listé ses ressources, puis interrogé la ressource « Catalogue des "
    f"jeux de données » ({RID}) via l'API tabulaire avec le filtre `created_at` strictement "
    "antérieur au 2012-06-28. L'API renvoie un total de 2\u202f076 lignes sur environ "
    "45\u00a0000 jeux au total, soit 4,6 % du catalogue actuel.\n\n"
    "Précautions :\n"
    "- le catalogue ne contient que les jeux encore en ligne : les jeux supprimés depuis 2012 "
    "ne sont pas comptés, donc le chiffre historique réel a pu être plus élevé ;\n"
    "- la date `created_at` est celle de création sur la plateforme actuelle ; certains jeux "
    "moissonnés ont pu être importés plus tard avec leur date d'origine.\n\n"
    "Pour vérifier vous-même : téléchargez le fichier CSV du catalogue, filtrez la colonne "
    "created_at (< 2012-06-28) et comptez les lignes, ou appelez "
    f"https://tabular-api.data.gouv.fr/api/resources/{RID}/data/?created_at__strictly_less=2012-06-28"
    "\n\n"
    f"Source : https://www.data.gouv.fr/datasets/{DS}/"
)


def _result(title: str, lines: int) -> str:
    body = "\n".join(f"   Field {i}: value {i * 37} for {title}" for i in range(lines))
    return f"{title}\nID: {DS}\nResource ID: {RID}\n\n{body}\n"


def build_trace() -> Trace:
    """A 20-call MCP trace: searches, dataset and resource lookups, filtered queries."""
    plan: list[tuple[str, dict[str, Any]]] = [
        ("search_datasets", {"query": "catalogue jeux de données"}),
        ("search_datasets", {"query": "catalogue data.gouv.fr"}),
        ("get_dataset_info", {"dataset_id": DS}),
        ("list_dataset_resources", {"dataset_id": DS}),
        ("get_resource_info", {"resource_id": RID}),
        ("query_resource_data", {"resource_id": RID, "page_size": 3}),
    ]
    filtered = {
        "resource_id": RID,
        "filter_column": "created_at",
        "filter_operator": "strictly_less",
        "filter_value": "2012-06-28",
        "page_size": 1,
    }
    plan += [("query_resource_data", filtered)] * 4
    plan += [("get_dataset_info", {"dataset_id": "000000000000000000000000"})]
    plan += [("search_datasets", {"query": f"jeux {i}"}) for i in range(5)]
    plan += [("get_metrics", {"dataset_id": DS}), ("list_dataset_resources", {"dataset_id": DS})]
    plan += [("get_resource_info", {"resource_id": RID}), ("query_resource_data", filtered)]
    assert len(plan) == 20
    calls = [
        {
            "id": f"call_{i}",
            "name": name,
            "arguments": json.dumps(arguments, ensure_ascii=False),  # as OpenAI-style models send
            "result": _result(name, 30),
        }
        for i, (name, arguments) in enumerate(plan)
    ]
    return Trace.model_validate(
        {
            "task_id": "task_0002",
            "model": "bench",
            "capabilities": ["mcp"],
            "mcp_version": "0.2.26",
            "answer": ANSWER,
            "tool_calls": calls,
            "usage": {"input_tokens": 21000, "output_tokens": 900},
            "latency_ms": 31000,
        }
    )


def measure(run: Callable[[], object], seconds: float, rounds: int = 7) -> tuple[float, float]:
    """Calls per second of ``run``: (best round, median round) over ``rounds`` timed rounds.

    The best round is the figure least disturbed by other processes (as ``timeit`` advises); the
    median shows the spread.
    """
    for _ in range(50):
        run()
    rates: list[float] = []
    for _ in range(rounds):
        count = 0
        start = time.perf_counter()
        deadline = start + seconds / rounds
        while True:
            for _ in range(20):
                run()
            count += 20
            now = time.perf_counter()
            if now >= deadline:
                break
        rates.append(count / (now - start))
    return max(rates), statistics.median(rates)


def _cpu() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def main() -> None:
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 3.0
    task = TaskSpec.model_validate(TASK)
    trace = build_trace()
    instances = map_trace(trace).instances
    print(f"machine: {_cpu()}, {os.cpu_count()} logical CPUs; Python {platform.python_version()}")
    print(
        f"trace: {len(trace.tool_calls)} calls -> {len(instances)} instances, "
        f"answer of {len(trace.answer)} characters"
    )
    full_best, full_median = measure(lambda: score_trace(task, trace), seconds)
    metrics_best, metrics_median = measure(
        lambda: score_trace(task, trace, instances=instances), seconds
    )
    mapping_best, mapping_median = measure(lambda: map_trace(trace), seconds)
    verdict = "meets" if metrics_best >= GOAL else "BELOW"
    print("traces/s, best round (median round):")
    print(f"  score_trace, full (mapping + metrics): {full_best:7,.0f} ({full_median:,.0f})")
    print(f"  score_trace, metrics only:             {metrics_best:7,.0f} ({metrics_median:,.0f})")
    print(f"  map_trace alone:                       {mapping_best:7,.0f} ({mapping_median:,.0f})")
    print(f"metrics only {verdict} the {GOAL:,.0f} traces/s goal")


if __name__ == "__main__":
    main()
