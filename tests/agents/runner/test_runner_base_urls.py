"""What the runner gives sandboxed code is what the action mapper expects to find in traces."""

from __future__ import annotations

from datagouv_eval_pipeline.core.semantic.aliases import sandbox_environ
from datagouv_eval_pipeline.pipeline.agents.capabilities import CatalogTarget


def test_the_mapper_knows_the_base_url_variables_the_sandbox_sets() -> None:
    target = CatalogTarget.live()
    given = target.sandbox_env()
    expected = {name: value for name, value in given.items() if name.endswith("_URL")}
    # Recorded or not, the base URLs are the production ones.
    assert sandbox_environ(target.urls.as_dict()) == expected
    assert sandbox_environ(None) == expected
    assert expected["DATAGOUV_TABULAR_API_URL"] == "https://tabular-api.data.gouv.fr/api/"
