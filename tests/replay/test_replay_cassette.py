"""Cassette files, scrubbing, and the ``datagouv-eval replay`` command."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from datagouv_eval_pipeline.cli import main
from datagouv_eval_pipeline.world.replay import (
    Cassette,
    CassetteError,
    Interaction,
    ReplayConfig,
    cassette_name,
    cassette_path,
    list_cassettes,
    load_cassette,
    save_cassette,
    scrub_headers,
    scrub_json,
    text_completion,
)
from datagouv_eval_pipeline.world.replay.cassette import (
    RecordedRequest,
    RecordedResponse,
    audit_cassette,
)


def _cassette(name: str = "demo", header: str = "user-agent", text: str = "bonjour") -> Cassette:
    body = {"model": "m", "messages": [{"role": "user", "content": text}]}
    return Cassette(
        name=name,
        interactions=[
            Interaction(
                key="0123456789abcdef",
                request=RecordedRequest(
                    path="/v1/chat/completions", headers={header: "x"}, body=body
                ),
                response=RecordedResponse(body=text_completion("m", "salut")),
            )
        ],
    )


def test_save_and_load_round_trip(tmp_path: Path) -> None:
    path = cassette_path(tmp_path / "sub", "demo")
    save_cassette(_cassette(), path)
    data = json.loads(path.read_text(encoding="utf-8"))
    assert (data["version"], data["key_scheme"], data["name"]) == (1, "chat-completions/v1", "demo")
    assert load_cassette(path) == _cassette()
    assert list_cassettes(tmp_path / "sub") == ["demo"]
    assert list_cassettes(tmp_path / "missing") == []


def test_bad_cassettes_name_the_file_and_the_field(tmp_path: Path) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text('{"version": 1,\n "name": ', encoding="utf-8")
    with pytest.raises(CassetteError, match=r"broken\.json: not JSON \(line 2"):
        load_cassette(broken)
    wrong = tmp_path / "wrong.json"
    data = _cassette().model_dump(mode="json")
    data["version"] = 2
    data["interactions"][0]["response"]["status"] = "ok"
    wrong.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(CassetteError) as caught:
        load_cassette(wrong)
    message = str(caught.value)
    assert "wrong.json" in message
    assert "  version: " in message
    assert "  interactions.0.response.status: " in message


@pytest.mark.parametrize("name", ["", "../etc", "a/b", "..", ".hidden", "x" * 201])
def test_cassette_names_cannot_escape_the_directory(name: str, tmp_path: Path) -> None:
    with pytest.raises(CassetteError, match="invalid cassette name"):
        cassette_path(tmp_path, name)


def test_cassette_name_sanitises_its_parts() -> None:
    assert cassette_name("mistral/small", "mcp@1.2", "task 3") == "mistral-small__mcp@1.2__task-3"
    assert cassette_name("../../etc", "") == "etc__x"
    long = cassette_name("a" * 300)
    assert len(long) == 200 and long != cassette_name("a" * 301)
    assert cassette_path(Path("/c"), long).name == long + ".json"


def test_config_needs_what_its_mode_uses(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="needs cassettes_dir"):
        ReplayConfig(mode="replay")
    with pytest.raises(ValueError, match="needs upstream_url"):
        ReplayConfig(mode="record", cassettes_dir=tmp_path)
    with pytest.raises(ValueError, match="http"):
        ReplayConfig(mode="record", cassettes_dir=tmp_path, upstream_url="file:///etc")
    with pytest.raises(ValueError, match="responder"):
        ReplayConfig(mode="scripted")


def test_scrub_drops_credential_headers_and_redacts_keys() -> None:
    headers = {
        "Authorization": "Bearer abcdef123456",
        "api-key": "k",
        "X-Api-Key": "k",
        "OpenAI-Organization": "org",
        "x-auth-token": "t",
        "Cookie": "c",
        "Content-Length": "12",
        "User-Agent": "ua sk-proj-ABCDEFGHIJ",
    }
    assert scrub_headers(headers, ["abcdef123456"]) == {
        "openai-organization": "org",
        "user-agent": "ua <redacted>",
    }
    body = {
        "note": "key abcdef123456 and sk-live-0000000000 and Bearer zzzzzzzzzzzz",
        "list": ["hf_abcdefghijklmnopqrstu", 3, None],
        "sk-test-as-a-key-name": "task-force",
    }
    assert scrub_json(body, ["abcdef123456"]) == {
        "note": "key <redacted> and <redacted> and <redacted>",
        "list": ["<redacted>", 3, None],
        "<redacted>": "task-force",
    }


def test_audit_finds_credential_headers_and_key_strings(tmp_path: Path) -> None:
    good = cassette_path(tmp_path, "good")
    save_cassette(_cassette("good"), good)
    assert audit_cassette(good) == []
    leaky = cassette_path(tmp_path, "leaky")
    save_cassette(_cassette("leaky", header="Authorization", text="sk-test-1234567890"), leaky)
    problems = audit_cassette(leaky)
    assert len(problems) == 2
    assert "credential header 'Authorization'" in problems[0]
    assert "key-shaped string starting 'sk-'" in problems[1]
    assert all("1234567890" not in problem for problem in problems)


def test_cli_check_passes_clean_cassettes_and_fails_leaky_ones(tmp_path: Path) -> None:
    save_cassette(_cassette("good"), cassette_path(tmp_path, "good"))
    runner = CliRunner()
    result = runner.invoke(main, ["replay", "check", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "ok  good: 1 interaction(s), models ['m']" in result.output
    save_cassette(_cassette("leaky", text="sk-test-1234567890"), cassette_path(tmp_path, "leaky"))
    result = runner.invoke(main, ["replay", "check", str(tmp_path)])
    assert result.exit_code == 1
    assert "2 cassette(s), 1 problem(s)" in result.output


def test_cli_serve_refuses_a_bad_configuration(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        main, ["replay", "serve", "--cassettes", str(tmp_path), "--mode", "record"]
    )
    assert result.exit_code == 1
    assert "needs upstream_url" in result.output
