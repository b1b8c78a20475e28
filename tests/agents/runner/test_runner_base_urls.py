"""What the runner gives sandboxed code is what the action mapper expects to find in traces."""

from __future__ import annotations

from datagouv_eval_pipeline.agents.capabilities import CatalogTarget
from datagouv_eval_pipeline.semantic.aliases import sandbox_environ
from datagouv_eval_pipeline.twin.urls import TwinUrls


def test_the_mapper_knows_the_base_url_variables_the_sandbox_sets() -> None:
    urls = TwinUrls.for_port(8765)
    given = CatalogTarget.twin(urls).sandbox_env(python_sdk=False)
    expected = {name: value for name, value in given.items() if name.endswith("_URL")}
    assert sandbox_environ(urls.as_dict()) == expected
    assert expected["DATAGOUV_TABULAR_API_URL"] == "http://127.0.0.1:8765/tabular/api/"
