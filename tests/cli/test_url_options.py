"""URL options are checked where they are given: a usage error naming the option, at once."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from datagouv_eval_pipeline.cli import main

OPTIONS = {
    "experiment --judge-base-url": ["experiment", "--dry-run", "--judge-base-url"],
    "experiment --model-base-url": ["experiment", "--dry-run", "--model-base-url"],
    "judge calibrate --judge-base-url": ["judge", "calibrate", "--judge-base-url"],
    "run-cell --model-base-url": [
        "run-cell",
        "offline~baseline-oneshot__none__data_gouv_context",
        "--model-base-url",
    ],
    "replay serve --upstream": ["replay", "serve", "--upstream"],
}


@pytest.mark.parametrize("option", list(OPTIONS))
@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("not a url", "'not a url' is not an http(s) URL; expected e.g. http://127.0.0.1:8000/v1"),
        ("ftp://example.org/v1", "'ftp://example.org/v1' is not an http(s) URL"),
        ("http://127.0.0.1:99999/v1", "is not a URL (Port out of range 0-65535)"),
    ],
)
def test_a_bad_url_is_a_usage_error(option: str, value: str, why: str) -> None:
    result = CliRunner().invoke(main, [*OPTIONS[option], value], catch_exceptions=False)
    assert result.exit_code == 2, result.output
    flag = option.split()[-1]
    assert f"Error: Invalid value for '{flag}': " in result.output
    assert why in result.output
    assert "Traceback" not in result.output


def test_a_good_url_is_kept_as_given() -> None:
    from datagouv_eval_pipeline.cli.urls import HTTP_URL

    assert HTTP_URL.convert(" http://127.0.0.1:8000/v1 ", None, None) == "http://127.0.0.1:8000/v1"
