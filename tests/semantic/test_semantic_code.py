"""map_trace on Python code cells: URLs, params, the datagouv client, ordering, fallbacks."""

from __future__ import annotations

from typing import Any

from datagouv_eval_pipeline.core.semantic import (
    CallCategory,
    MappingStatus,
    TraceMapping,
    map_trace,
)
from datagouv_eval_pipeline.core.semantic.code_calls import SENTINEL, HttpRequest, analyze_python
from datagouv_eval_pipeline.core.traces import Trace

DS = "5d13a8b6634f41070a43dff3"
RID = "f868cca6-8da1-4369-a78d-47463f19a9a3"


def _map(*cells: str | tuple[str, str], tool: str = "execute_python") -> TraceMapping:
    calls: list[dict[str, Any]] = []
    for index, cell in enumerate(cells):
        code, result = (cell, "ok") if isinstance(cell, str) else cell
        calls.append(
            {"id": f"c{index}", "name": tool, "arguments": {"code": code}, "result": result}
        )
    return map_trace(Trace.model_validate({"task_id": "t", "tool_calls": calls}))


def _pairs(mapping: TraceMapping) -> list[tuple[str, dict[str, Any]]]:
    return [(instance.action, instance.args) for instance in mapping.instances]


def test_httpx_fstring_and_params_dict() -> None:
    code = f"""
import httpx
query = "vélos"
SEARCH = "https://www.data.gouv.fr/api/2/datasets/search/"
r = httpx.get(SEARCH, params={{"q": query, "page_size": 5}})
d = httpx.get(f"https://www.data.gouv.fr/api/1/datasets/{{'{DS}'}}/")
"""
    mapping = _map(code)
    assert _pairs(mapping) == [
        ("search.datasets", {"query": "vélos", "page_size": 5}),
        ("get.dataset.info", {"dataset_id": DS}),
        ("get.dataset.resources", {"dataset_id": DS}),
    ]
    assert mapping.calls[0].category is CallCategory.DATAGOUV_API_HTTP
    assert mapping.calls[0].status is MappingStatus.MAPPED
    assert {i.confidence for i in mapping.instances} == {0.9}
    assert {i.category for i in mapping.instances} == {CallCategory.DATAGOUV_API_HTTP}


def test_requests_concatenation_format_and_base_url_client() -> None:
    code = f"""
import requests
from httpx import Client
BASE = "https://www.data.gouv.fr/api/1"
DATASET = "{DS}"
requests.get(BASE + "/datasets/" + DATASET + "/resources/{RID}/")
url = "https://tabular-api.data.gouv.fr/api/resources/{{}}/profile/".format("{RID}")
requests.get(url)
with Client(base_url="https://www.data.gouv.fr/api/2") as client:
    client.get("/dataservices/search/", params={{"q": "sirene"}})
"""
    assert _pairs(_map(code)) == [
        ("get.resource.info", {"dataset_id": DS, "resource_id": RID}),
        ("get.resource.profile", {"resource_id": RID}),
        ("search.dataservices", {"query": "sirene"}),
    ]


def test_tabular_filters_from_params_and_urllib() -> None:
    code = f"""
import urllib.request, json
from urllib.parse import urlencode
params = {{"COMM__exact": "31557", "page_size": 50, "DATE__sort": "desc"}}
url = "https://tabular-api.data.gouv.fr/api/resources/{RID}/data/?" + urlencode(params)
req = urllib.request.Request(url, headers={{"Accept": "application/json"}})
data = json.load(urllib.request.urlopen(req))
"""
    assert _pairs(_map(code)) == [
        ("get.data", {"resource_id": RID, "page_size": 50, "filters": "COMM__exact=31557"})
    ]


def test_pandas_download_and_metrics() -> None:
    code = f"""
import pandas as pd
df = pd.read_csv("https://www.data.gouv.fr/fr/datasets/r/{RID}", sep=";")
m = pd.read_json("https://metric-api.data.gouv.fr/api/datasets/data/?dataset_id__exact={DS}")
local = pd.read_csv("/tmp/copy.csv")
"""
    assert _pairs(_map(code)) == [
        ("get.data", {"resource_id": RID}),
        ("get.metrics", {"dataset_id": DS}),
    ]


def test_loops_over_literals_expand_in_order() -> None:
    code = """
import requests
for rid in ["r1", "r2", "r3"]:
    requests.get(f"https://tabular-api.data.gouv.fr/api/resources/{rid}/data/")
pages = [requests.get("https://www.data.gouv.fr/api/1/datasets/", params={"q": "bus", "page": p})
         for p in range(1, 3)]
"""
    assert _pairs(_map(code)) == [
        ("get.data", {"resource_id": "r1"}),
        ("get.data", {"resource_id": "r2"}),
        ("get.data", {"resource_id": "r3"}),
        ("search.datasets", {"query": "bus"}),
        ("search.datasets", {"query": "bus"}),
    ]


def test_user_functions_are_inlined_at_their_call_sites() -> None:
    code = """
import requests
API = "https://www.data.gouv.fr/api/1"

def get_json(path, **params):
    return requests.get(API + path, params=params).json()

info = get_json("/dataservices/672cf684/")
"""
    assert _pairs(_map(code)) == [("get.dataservice.info", {"dataservice_id": "672cf684"})]


def test_unknown_parts_lower_confidence_and_drop_the_argument() -> None:
    code = """
import requests
def show(rid):
    return requests.get(f"https://tabular-api.data.gouv.fr/api/resources/{rid}/data/")
for rid in find_ids():
    show(rid)
"""
    mapping = _map(code)
    assert _pairs(mapping) == [("get.data", {})]
    assert mapping.instances[0].confidence == 0.8


def test_fully_dynamic_url_is_left_for_a_classifier() -> None:
    code = """
import requests
for url in compute_urls():
    requests.get(url)
"""
    mapping = _map(code)
    assert mapping.instances == []
    assert mapping.calls[0].status is MappingStatus.UNMAPPED
    assert mapping.calls[0].category is CallCategory.FILE_LOAD_EXTERNAL
    assert mapping.unmapped_call_ids == ["c0"]
    assert "dynamic URL" in mapping.calls[0].reason


def test_datagouv_client_calls() -> None:
    code = f"""
from datagouv import Dataset, Resource, Client
ds = Dataset("{DS}")
for res in ds.resources:
    print(res.title, res.profile)
r = Resource("{RID}", dataset_id="{DS}")
print(r.columns, r.profile, r.profile)
rows = list(r.rows(filters=[("COMM", "==", "31557"), ("POP", ">=", 100), ("NOM", "sort", "asc")]))
stats = ds.get_monthly_traffic_metrics()
lazy = Client().dataset("other", fetch=False)
"""
    mapping = _map(code)
    assert _pairs(mapping) == [
        ("get.dataset.info", {"dataset_id": DS}),
        ("get.dataset.resources", {"dataset_id": DS}),
        ("get.resource.profile", {}),
        ("get.resource.info", {"resource_id": RID, "dataset_id": DS}),
        ("get.resource.profile", {"resource_id": RID}),
        ("get.data", {"resource_id": RID, "filters": "COMM__exact=31557&POP__greater=100"}),
        ("get.metrics", {"dataset_id": DS}),
    ]
    assert mapping.calls[0].category is CallCategory.PYTHON_CLIENT
    assert {i.category for i in mapping.instances} == {CallCategory.PYTHON_CLIENT}


def test_client_module_import_and_organization() -> None:
    code = """
import datagouv
org = datagouv.Organization("534fff81a3a7292c64a77e5c")
for d in org.datasets:
    print(d.title)
"""
    assert _pairs(_map(code)) == [
        ("search.datasets", {"organization_id": "534fff81a3a7292c64a77e5c"})
    ]
    lookup_only = _map(
        "from datagouv import Organization\norg = Organization('o1')\nprint(org.url)\n"
    )
    assert lookup_only.instances == []
    assert lookup_only.calls[0].category is CallCategory.PYTHON_CLIENT
    assert lookup_only.calls[0].status is MappingStatus.NO_ACTION


def test_mixed_cell_keeps_source_order() -> None:
    code = f"""
import requests, pandas as pd
from datagouv import Resource
hits = requests.get("https://www.data.gouv.fr/api/1/datasets/", params={{"q": "élus"}}).json()
res = Resource("{RID}")
frame = pd.read_csv(res.url)
top = requests.get("https://tabular-api.data.gouv.fr/api/resources/{RID}/data/",
                   params={{"page_size": 3}})
res.download("/tmp/file.csv")
"""
    mapping = _map(code)
    assert [(i.action, i.args, i.category) for i in mapping.instances] == [
        ("search.datasets", {"query": "élus"}, CallCategory.DATAGOUV_API_HTTP),
        ("get.resource.info", {"resource_id": RID}, CallCategory.PYTHON_CLIENT),
        # pd.read_csv(res.url) downloads the resource's file.
        ("get.data", {"resource_id": RID}, CallCategory.PYTHON_CLIENT),
        ("get.data", {"resource_id": RID, "page_size": 3}, CallCategory.DATAGOUV_API_HTTP),
        ("get.data", {"resource_id": RID}, CallCategory.PYTHON_CLIENT),
    ]
    # The client outranks raw HTTP for the call's category.
    assert mapping.calls[0].category is CallCategory.PYTHON_CLIENT
    assert mapping.calls[0].reason == "5 action instance(s)"


def test_local_analysis_and_external_files_perform_no_action() -> None:
    mapping = _map(
        "import pandas as pd\ndf = pd.read_csv('/tmp/f.csv')\nprint(df['COMM'].value_counts())",
        "import pandas as pd\ndf = pd.read_csv('https://www.insee.fr/fr/statistiques/fichier/x.csv')",
    )
    assert [(c.category, c.status) for c in mapping.calls] == [
        (CallCategory.PYTHON_LOCAL_ANALYSIS, MappingStatus.NO_ACTION),
        (CallCategory.FILE_LOAD_EXTERNAL, MappingStatus.NO_ACTION),
    ]
    assert mapping.instances == []
    assert mapping.mapped_fraction == 1.0


def test_catalog_url_without_endpoint_is_unmapped() -> None:
    mapping = _map("import requests\nrequests.get('https://www.data.gouv.fr/api/1/reuses/')")
    assert mapping.calls[0].category is CallCategory.DATAGOUV_API_HTTP
    assert mapping.calls[0].status is MappingStatus.UNMAPPED


def test_resource_url_from_an_earlier_result_is_get_data() -> None:
    listing = (
        "Resources in dataset: X\nDataset ID: d\nTotal resources: 1\n\n"
        f"1. communes.csv\n   Resource ID: {RID}\n   Format: csv\n"
        "   URL: https://www.insee.fr/fichiers/communes.csv\n"
    )
    calls = [
        {
            "id": "a",
            "name": "list_dataset_resources",
            "arguments": {"dataset_id": "d"},
            "result": listing,
        },
        {
            "id": "b",
            "name": "execute_python",
            "arguments": {
                "code": "import pandas as pd\npd.read_csv('https://www.insee.fr/fichiers/communes.csv')"
            },
            "result": "ok",
        },
    ]
    mapping = map_trace(
        Trace.model_validate({"task_id": "t", "mcp_version": "0.2.26", "tool_calls": calls})
    )
    linked = mapping.instances[1]
    assert (linked.action, linked.args, linked.confidence) == (
        "get.data",
        {"resource_id": RID},
        0.85,
    )
    assert linked.category is CallCategory.FILE_LOAD_EXTERNAL


def test_urls_handed_to_unknown_helpers_are_left_for_a_classifier() -> None:
    mapping = _map(
        "from mylib import fetch_all\n"
        "print('https://www.data.gouv.fr/api/1/datasets/d1/')\n"
        "fetch_all('https://www.data.gouv.fr/api/1/datasets/d1/')\n"
    )
    call = mapping.calls[0]
    assert (call.category, call.status) == (
        CallCategory.DATAGOUV_API_HTTP,
        MappingStatus.UNMAPPED,
    )
    assert "passed to unknown calls" in call.reason


def test_state_is_carried_across_cells() -> None:
    mapping = _map(
        f"import requests\nBASE = 'https://www.data.gouv.fr/api/1'\nDS = '{DS}'",
        "r = requests.get(f'{BASE}/datasets/{DS}/')",
    )
    assert [c.status for c in mapping.calls] == [MappingStatus.NO_ACTION, MappingStatus.MAPPED]
    assert _pairs(mapping)[0] == ("get.dataset.info", {"dataset_id": DS})


def test_syntax_error_runs_nothing() -> None:
    mapping = _map(
        (
            "import requests\nrequests.get('https://www.data.gouv.fr/api/1/datasets/d1/'",
            "  File \"<string>\", line 2\nSyntaxError: '(' was never closed",
        )
    )
    call = mapping.calls[0]
    assert (call.status, call.errored, call.instances) == (MappingStatus.NO_ACTION, True, ())
    assert call.error_reason == "Python syntax error in result"


def test_shell_from_python_and_notebook_magics() -> None:
    code = f"""
import subprocess
subprocess.run(["datagouv", "resource", "display", "{RID}"], check=True)
!curl -s "https://www.data.gouv.fr/api/1/datasets/?q=gares" -o /tmp/s.json
await asyncio.sleep(0)
"""
    mapping = _map(code)
    assert _pairs(mapping) == [
        ("get.resource.info", {"resource_id": RID}),
        ("search.datasets", {"query": "gares"}),
    ]
    bash_cell = _map(f"%%bash\ndatagouv dataset display {DS}\n")
    assert _pairs(bash_cell) == [("get.dataset.info", {"dataset_id": DS})]


def test_analyzer_marks_unknown_parts() -> None:
    analysis = analyze_python("import requests\nrequests.get(f'https://x.org/{y}/a')")
    assert analysis.events == [
        HttpRequest("GET", f"https://x.org/{SENTINEL}/a", (), "requests.get", 2)
    ]
