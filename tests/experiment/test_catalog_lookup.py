"""The two catalog lookups the scoring stage is given: the twin's store and the main API."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from datagouv_eval_pipeline.core.metrics.catalog import CatalogObject
from datagouv_eval_pipeline.pipeline.experiment.catalog import ApiCatalogLookup, StoreCatalogLookup
from datagouv_eval_pipeline.world.api.server import TwinServer
from datagouv_eval_pipeline.world.catalogue.catalog import CatalogStore
from datagouv_eval_pipeline.world.catalogue.urls import TwinUrls

NATIONAL = "53699ebba3a729239d205f4f"
SLUG = "recensement-des-equipements-sportifs-espaces-et-sites-de-pratiques"
EXPECTED = CatalogObject("dataset", NATIONAL, SLUG)


@pytest.fixture(scope="module")
def store() -> CatalogStore:
    return CatalogStore.load()


@pytest.fixture(scope="module")
def twin(store: CatalogStore) -> Iterator[TwinUrls]:
    with TwinServer(store, mcp_versions=()) as urls:
        yield urls


def test_the_store_resolves_an_id_or_a_slug(store: CatalogStore) -> None:
    lookup = StoreCatalogLookup(store)
    assert lookup.resolve("dataset", NATIONAL) == EXPECTED
    assert lookup.resolve("dataset", SLUG) == EXPECTED
    assert lookup.resolve("dataservice", SLUG) is None  # another kind
    assert lookup.resolve("dataset", "no-such-dataset") is None
    assert lookup.resolve("dataset", "  ") is None


def test_the_api_resolves_over_http_like_the_live_platform(twin: TwinUrls) -> None:
    # The same code reads https://www.data.gouv.fr/api/ in a live run; here the twin serves it.
    lookup = ApiCatalogLookup(twin.datagouv_api)
    assert lookup.resolve("dataset", SLUG) == EXPECTED
    assert lookup.resolve("dataset", NATIONAL) == EXPECTED
    assert lookup.resolve("dataset", "no-such-dataset") is None
    # An unreachable API resolves nothing (and is asked again next time, not memoised).
    down = ApiCatalogLookup("http://127.0.0.1:9/api/", timeout=0.5)
    assert down.resolve("dataset", SLUG) is None
