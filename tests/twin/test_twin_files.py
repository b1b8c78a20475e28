"""Download redirects, served files, placeholders and HTML pages."""

from __future__ import annotations

import csv
import io
import zipfile

from starlette.testclient import TestClient

from datagouv_eval_pipeline.world.catalogue.catalog import CatalogStore

CATALOGUE_CSV = "f868cca6-8da1-4369-a78d-47463f19a9a3"
PALISSY = "3e8ed2dd-4052-4f93-ad19-ef71016ab7b4"
RNCP_ZIP = "42824627-145d-4f68-bd56-0b0aa04df392"
FINESS = "98f3161f-79ff-4f16-8f6a-6d571a80fea2"


def test_site_and_api_redirects_point_at_the_served_file(
    client: TestClient, store: CatalogStore
) -> None:
    for prefix in ("/datasets/r/", "/api/1/datasets/r/"):
        response = client.get(prefix + CATALOGUE_CSV, follow_redirects=False)
        assert response.status_code == 302
        assert response.headers["location"].startswith(
            "http://testserver/_ext/static.data.gouv.fr/"
        )
    assert (
        client.get(
            "/datasets/r/00000000-0000-0000-0000-000000000000", follow_redirects=False
        ).status_code
        == 404
    )


def test_tabular_resource_downloads_its_csv(client: TestClient, store: CatalogStore) -> None:
    response = client.get("/datasets/r/" + CATALOGUE_CSV)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/csv")
    table = store.table(CATALOGUE_CSV)
    assert table is not None
    assert response.content == table.source_bytes()
    rows = list(csv.reader(io.StringIO(response.text), delimiter=";"))
    assert rows[0] == table.header and len(rows) == len(table.rows) + 1
    # Every dataset, but not the real file's descriptions: its metadata size is production's.
    assert response.headers["x-twin-placeholder"] == "sample"
    assert response.headers["x-twin-filesize"] == "61823410"


def test_head_follows_the_redirect_like_the_validator(client: TestClient) -> None:
    response = client.head("/api/1/datasets/r/" + FINESS, follow_redirects=True)
    assert response.status_code == 200


def test_palissy_download_is_a_sample_with_the_belley_cathedral(client: TestClient) -> None:
    response = client.get("/datasets/r/" + PALISSY)
    assert response.status_code == 200
    assert response.headers["x-twin-placeholder"] == "sample"
    rows = list(csv.DictReader(io.StringIO(response.text), delimiter=";"))
    belley = [
        r
        for r in rows
        if r["Commune forme index"] == "Belley" and r["Nom de l'édifice"].startswith("cathédrale")
    ]
    assert len(belley) == 12
    assert {r["Département format numérique"] for r in belley} == {"01"}


def test_placeholders_have_the_stated_format(client: TestClient) -> None:
    zipped = client.get("/datasets/r/" + RNCP_ZIP)
    assert zipped.status_code == 200 and zipped.headers["x-twin-placeholder"] == "true"
    with zipfile.ZipFile(io.BytesIO(zipped.content)) as archive:
        assert archive.namelist() == ["LISEZMOI.txt"]
    finess = client.get("/datasets/r/" + FINESS)
    assert finess.text.startswith("structureet;nofinesset;")


def test_unknown_external_path_is_404(client: TestClient) -> None:
    assert client.get("/_ext/example.org/nothing.csv").status_code == 404


def test_html_pages(client: TestClient) -> None:
    page = client.get(
        "/datasets/liste-des-objets-mobiliers-propriete-publique-classes-au-titre-des-monuments-historiques-1/"
    )
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert "Liste des objets protégés au titre des monuments historiques" in page.text
    assert f"/datasets/r/{PALISSY}" in page.text
    service = client.get("/dataservices/672cf67802ef6b1be63b8975/")
    assert (
        service.status_code == 200 and "_ext/data.geopf.fr/geocodage/openapi.yaml" in service.text
    )
    assert client.get("/datasets/nope/").status_code == 404
