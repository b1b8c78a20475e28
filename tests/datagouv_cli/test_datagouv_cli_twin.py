"""The ``datagouv`` command against the real twin over HTTP: outputs, download, errors."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import httpx
from datagouv import Dataset, Organization, Resource  # type: ignore[import-untyped]

from datagouv_eval_pipeline.world.catalogue.catalog import CatalogStore
from datagouv_eval_pipeline.world.catalogue.urls import TwinUrls

from .helpers import Cli

SPORTS = "53699ebba3a729239d205f4f"
SPORTS_TABLE = "ea4f5879-af40-4e3e-949d-812d6eeb5e02"
PERMITS = "689c42fa521ccf80ce954f83"
DICTIONARY = "c863c9e3-070c-49e2-91de-92c8d58cc807"  # a 1 121-character CSV
ETALAB = "534fff75a3a7292c64a77de4"
RULE = "─" * 20
NO_KEY = (
    "PermissionError: This method requires authentication, "
    "please specify your API key in the Client"
)
NOT_FOUND = (
    '{"message":"The requested URL was not found on the server. If you entered the URL '
    'manually please check your spelling and try again."}'
)


def attribute_lines(stdout: str) -> list[str]:
    """The ``name: value`` lines of a display; every attribute block ends with a 20-char rule."""
    blocks = stdout.split(RULE + "\n")
    assert blocks[-1] == ""  # the output ends with a rule
    return [block.splitlines()[0] for block in blocks[:-1]]


def names(lines: list[str]) -> list[str]:
    return [line.split(":", 1)[0] for line in lines]


def last_line(text: str) -> str:
    return text.rstrip("\n").splitlines()[-1]


def test_dataset_display(cli: Cli, store: CatalogStore) -> None:
    record = store.dataset(SPORTS)
    assert record is not None
    result = cli("dataset", "display", SPORTS)
    assert result.exit_code == 0, result.stderr
    lines = attribute_lines(result.stdout)
    # One line per library attribute, in the library's order (0.5.1 adds `license`).
    assert names(lines) == Dataset._attributes
    assert result.stdout.count(RULE) == len(Dataset._attributes)
    assert f"title: {record['title']}" in lines
    assert f"frequency: {record['frequency']}" in lines
    # Without a config file the real CLI warns on stderr and goes on.
    assert "No config has been specified, defaulting to prod environment" in result.stderr


def test_dataset_get_prints_the_api_body(cli: Cli, twin: TwinUrls) -> None:
    result = cli("dataset", "get", SPORTS)
    assert result.exit_code == 0, result.stderr
    direct = httpx.get(f"{twin.datagouv_api}1/datasets/{SPORTS}/")
    assert result.stdout == direct.text + "\n"
    body = json.loads(result.stdout)
    assert body["id"] == SPORTS
    assert SPORTS_TABLE in [r["id"] for r in body["resources"]]


def test_resource_display_and_get(cli: Cli, store: CatalogStore, twin: TwinUrls) -> None:
    found = store.resource(SPORTS_TABLE)
    assert found is not None
    _, record = found
    shown = cli("resource", "display", SPORTS_TABLE)
    assert shown.exit_code == 0, shown.stderr
    lines = attribute_lines(shown.stdout)
    assert names(lines) == Resource._attributes
    assert f"title: {record['title']}" in lines
    assert "format: csv" in lines
    url_line = next(line for line in lines if line.startswith("url: "))
    assert url_line.startswith(f"url: {twin.site}")
    got = cli("resource", "get", SPORTS_TABLE)
    assert got.exit_code == 0, got.stderr
    # v2 lookup of the dataset, then the v1 resource body verbatim.
    direct = httpx.get(f"{twin.datagouv_api}1/datasets/{SPORTS}/resources/{SPORTS_TABLE}/")
    assert got.stdout == direct.text + "\n"
    assert json.loads(got.stdout)["id"] == SPORTS_TABLE


def test_organization_display_and_get(cli: Cli, store: CatalogStore) -> None:
    record = store.organization(ETALAB)
    assert record is not None
    shown = cli("organization", "display", ETALAB)
    assert shown.exit_code == 0, shown.stderr
    lines = attribute_lines(shown.stdout)
    assert names(lines) == Organization._attributes
    assert f"name: {record['name']}" in lines
    got = cli("organization", "get", ETALAB)
    assert got.exit_code == 0
    assert json.loads(got.stdout)["name"] == record["name"]


def test_resource_download_streams_the_file(cli: Cli, store: CatalogStore, tmp_path: Path) -> None:
    table = store.table(DICTIONARY)
    assert table is not None
    target = tmp_path / "out" / "dictionary.csv"
    result = cli("resource", "download", DICTIONARY, str(target))
    assert result.exit_code == 0, result.stderr
    assert result.stdout == f"Resource downloaded successfully at {target} ✓\n"
    assert target.read_text(encoding="utf-8") == table.source_text


def test_unknown_dataset_retries_then_fails_with_a_traceback(cli: Cli, twin: TwinUrls) -> None:
    result = cli("dataset", "display", "no-such-dataset")
    assert result.exit_code == 1
    # The library's retry decorator: 5 attempts, a notice before each of the 4 retries.
    assert result.stdout.splitlines() == [f"Retrying refresh due to Exception: {NOT_FOUND}"] * 4
    assert result.stderr.count("Traceback (most recent call last):") == 2
    assert (
        f"404 Client Error: Not Found for url: {twin.datagouv_api}1/datasets/no-such-dataset/"
        in result.stderr
    )
    assert "in dataset_display" in result.stderr
    assert last_line(result.stderr) == f"Exception: {NOT_FOUND}"


def test_unknown_ids_with_get_and_resource(cli: Cli) -> None:
    got = cli("dataset", "get", "no-such-dataset")
    assert got.exit_code == 1
    assert got.stdout == ""  # display_json raises at once, no retry
    assert last_line(got.stderr) == f"RuntimeError: {NOT_FOUND}"
    resource = cli("resource", "display", "no-such-resource")
    assert resource.exit_code == 1
    assert last_line(resource.stderr) == 'Exception: {"message":"Resource does not exist"}'
    topic = cli("topic", "get", "no-such-topic")  # the twin has no topics
    assert topic.exit_code == 1
    assert last_line(topic.stderr) == f"RuntimeError: {NOT_FOUND}"


def test_writes_without_a_key_raise_permission_error(cli: Cli) -> None:
    commands = [
        ["dataset", "update", SPORTS, "--set", "title=x"],
        ["dataset", "delete", SPORTS],
        ["dataset", "create", "T", "D", "--owner-id", "u1"],
        ["dataset", "create", "T", "D", "--organization-id", ETALAB],
        ["dataset", "sort-resources", SPORTS, "title.asc"],
        ["organization", "create", "N", "D"],
        ["organization", "delete", ETALAB],
        ["resource", "update", SPORTS_TABLE, "--set", "title=x"],
        ["resource", "delete", SPORTS_TABLE],
        ["resource", "create", SPORTS, "T", "--url", "https://example.org/f.csv"],
        ["topic", "create", "N", "--owner-id", "u1"],
        ["topic", "delete", "t1"],
    ]
    for command in commands:
        result = cli(*command)
        assert result.exit_code == 1, command
        assert last_line(result.stderr) == NO_KEY, command
        assert "successfully" not in result.stdout, command


def test_xor_rules_and_set_syntax_fail_as_in_the_official_cli(cli: Cli) -> None:
    neither = cli("dataset", "create", "T", "D")
    both = cli("topic", "create", "N", "--owner-id", "u", "--organization-id", "o")
    message = (
        "AssertionError: Either `organization-id` or `owner-id` should be specified, and not both"
    )
    for result in (neither, both):
        assert result.exit_code == 1
        assert last_line(result.stderr) == message
    resource = cli("resource", "create", SPORTS, "T", "--url", "u", "--file-to-upload", "f")
    assert last_line(resource.stderr) == (
        "AssertionError: Either `file-to-upload` or `url` should be specified, and not both"
    )
    no_equals = cli("dataset", "update", SPORTS, "--set", "title")
    assert (
        last_line(no_equals.stderr) == "ValueError: not enough values to unpack (expected 2, got 1)"
    )


def test_setup_with_a_key_then_sort_resources_hits_the_upstream_bug(cli: Cli) -> None:
    key = "test-key-5f1d"
    saved = cli("setup", input=f"demo\n{key}\n")
    assert saved.exit_code == 0, saved.stderr
    assert saved.stdout.endswith("Config saved ✓\n")
    config = cli.home / ".datagouv_config.json"
    assert json.loads(config.read_text()) == {"environment": "demo", "api_key": key}
    assert stat.S_IMODE(config.stat().st_mode) == 0o600
    again = cli("setup", "--environment", "prod", "--api-key", key)
    assert again.stdout == "A config file already exists, it will be overwritten\nConfig saved ✓\n"
    # With a key the permission check passes and the missing `resources` attribute fails.
    result = cli("dataset", "sort-resources", SPORTS, "title.asc")
    assert result.exit_code == 1
    assert (
        last_line(result.stderr) == "AttributeError: 'Dataset' object has no attribute 'resources'"
    )
    assert "No config has been specified" not in result.stderr
    # A write now reaches the twin, which refuses it (read-only), after the library's retries.
    update = cli("dataset", "update", SPORTS, "--set", "title=x")
    assert update.exit_code == 1
    assert "405 Client Error" in update.stderr
    for output in (saved, again, result, update):
        assert key not in output.stdout and key not in output.stderr
    deleted = cli("delete-config")
    assert (deleted.exit_code, deleted.stdout) == (0, "Config deleted ✓\n")
    missing = cli("delete-config")
    assert missing.exit_code == 1
    assert last_line(missing.stderr).startswith("FileNotFoundError: [Errno 2]")


def test_setup_rejects_an_unknown_environment(cli: Cli) -> None:
    result = cli("setup", "--environment", "staging", "--api-key", "")
    assert result.exit_code == 1
    assert (
        last_line(result.stderr)
        == "ValueError: `environment` must be in ['www', 'prod', 'demo', 'dev']"
    )
    assert not (cli.home / ".datagouv_config.json").exists()
