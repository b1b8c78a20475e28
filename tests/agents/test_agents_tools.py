"""Capability building blocks: CLI parsing, sandbox output, the code runner, web fetch, skills."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic_ai.exceptions import ToolFailed

from datagouv_eval_pipeline.pipeline.agents.capabilities import (
    CatalogTarget,
    format_exec,
    parse_cli_command,
    runner_program,
)
from datagouv_eval_pipeline.pipeline.agents.recording import result_text, truncate
from datagouv_eval_pipeline.pipeline.agents.skills import (
    AppendSkills,
    PrependSkills,
    skills_strategy,
)
from datagouv_eval_pipeline.pipeline.agents.web import (
    CapabilityUnavailableError,
    DdgsSearch,
    FetchRefusedError,
    HttpFetchTool,
    check_url,
    html_to_text,
)
from datagouv_eval_pipeline.world.catalogue.urls import TwinUrls
from datagouv_eval_pipeline.world.front import CertificateAuthority, ServedHosts
from datagouv_eval_pipeline.world.sandbox.base import ExecResult

TWIN = TwinUrls.for_port(8765)


def test_cli_commands_are_split_without_a_shell() -> None:
    assert parse_cli_command("datagouv dataset display 'a b'") == [
        "datagouv",
        "dataset",
        "display",
        "a b",
    ]
    for command, message in [
        ("ls -la", "only the datagouv command"),
        ("datagouv dataset get x ; rm -rf /", "there is no shell"),
        ("datagouv dataset get x | head", "there is no shell"),
        ("datagouv 'unterminated", "cannot parse"),
        ("", "empty command"),
    ]:
        with pytest.raises(ToolFailed, match=message):
            parse_cli_command(command)


def test_exec_results_are_formatted_for_the_model() -> None:
    ok = ExecResult(stdout="42\n", stderr="", exit_code=0, duration_ms=1, stdout_chars=3)
    assert format_exec(ok) == ("42", False)
    failed = ExecResult(
        stdout="", stderr="Traceback...\n", exit_code=1, duration_ms=1, stderr_chars=13
    )
    assert format_exec(failed) == ("[stderr]\nTraceback...\n[error] exit code 1", True)
    killed = ExecResult(
        stdout="x" * 10,
        stderr="",
        exit_code=None,
        duration_ms=1,
        timed_out=True,
        limit_hit="wall",
        stdout_chars=500,
        reason="wall-clock limit of 30 s reached",
    )
    text, error = format_exec(killed)
    assert error and text.endswith("[error] wall-clock limit of 30 s reached")
    assert "stdout had 500 characters" in text
    assert format_exec(ExecResult("", "", 0, 1)) == ("(no output)", False)


def run_program(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", runner_program(code)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_runner_prints_a_trailing_expression_and_shows_agent_tracebacks() -> None:
    shown = run_program("x = 6\nx * 7")
    assert shown.returncode == 0 and shown.stdout == "42\n"
    assert run_program("'texte'").stdout == "texte\n"
    assert run_program("print('a')").stdout == "a\n"  # a print call is not printed twice
    assert run_program("None").stdout == ""
    crashed = run_program("a = 1\nb = a / 0")
    assert crashed.returncode == 1
    assert 'File "<agent>", line 2, in <module>' in crashed.stderr
    assert "b = a / 0" in crashed.stderr  # the agent's own source line
    assert "ZeroDivisionError" in crashed.stderr
    syntax = run_program("def f(:\n  pass")
    assert syntax.returncode == 1 and "SyntaxError" in syntax.stderr
    assert run_program("import sys; sys.exit(3)").returncode == 3


def test_sandbox_target_environment_and_hosts(tmp_path: Path) -> None:
    served = ServedHosts(
        frozenset({"www.data.gouv.fr"}),
        ("127.0.0.1", 8765),
        CertificateAuthority.load_or_create(tmp_path),
    )
    offline = CatalogTarget.twin(TWIN, served)
    # Offline nothing passes to the network: the front answers for the catalog hosts.
    assert offline.sandbox_hosts() == []
    assert offline.served is served and offline.port == 8765
    env = offline.sandbox_env()
    # Production URLs only, nothing that depends on the twin's port.
    assert env["DATAGOUV_API_URL"] == "https://www.data.gouv.fr/api/"
    assert env["DATAGOUV_TABULAR_API_URL"] == "https://tabular-api.data.gouv.fr/api/"
    assert "8765" not in repr(env)
    assert env["DATAGOUV_CLI_RETRY_WAIT"] == "0"
    live = CatalogTarget.live()
    assert "tabular-api.data.gouv.fr:443" in live.sandbox_hosts()
    assert live.sandbox_env() == {k: v for k, v in env.items() if k != "DATAGOUV_CLI_RETRY_WAIT"}


def test_url_checks() -> None:
    async def refused(url: str) -> str:
        with pytest.raises(FetchRefusedError) as error:
            await check_url(url)
        return str(error.value)

    assert "only http and https" in asyncio.run(refused("file:///etc/passwd"))
    assert "only http and https" in asyncio.run(refused("ftp://example.org/x"))
    assert "non-public address" in asyncio.run(refused("http://127.0.0.1:8765/"))
    assert "non-public address" in asyncio.run(refused("http://169.254.169.254/latest/"))
    assert "non-public address" in asyncio.run(refused("http://[::1]/"))
    asyncio.run(check_url("http://127.0.0.1:8765/x", allowed_hosts={"127.0.0.1:8765"}))


def test_fetcher_refuses_private_hosts_even_offline() -> None:
    fetcher = HttpFetchTool(offline=True)
    with pytest.raises(FetchRefusedError, match="non-public"):
        asyncio.run(fetcher.fetch("http://192.168.1.1/"))
    with pytest.raises(FetchRefusedError, match="offline mode"):
        asyncio.run(fetcher.fetch("https://example.org/"))


def test_html_is_read_as_text_with_live_links() -> None:
    html = (
        "<html><head><style>p{}</style><script>x()</script><title>T</title></head><body>"
        "<h1>Catalogue</h1><p>Voir <a href='/datasets/r/abc'>le fichier</a></p></body></html>"
    )
    text = html_to_text(html, "https://www.data.gouv.fr/datasets/c/")
    assert "x()" not in text and "p{}" not in text
    assert "Catalogue" in text
    assert "<https://www.data.gouv.fr/datasets/r/abc>" in text


def test_live_search_without_ddgs_fails_clearly() -> None:
    with pytest.raises(CapabilityUnavailableError, match="needs the 'ddgs' package"):
        DdgsSearch()


def test_skills_injection_strategies() -> None:
    assert AppendSkills().inject("Prompt.", "Use the API.") == (
        "Prompt.\n\n# Skills: how to use the data.gouv.fr APIs\n\nUse the API.\n"
    )
    assert PrependSkills().inject("Prompt.", "Use the API.").startswith("# Skills")
    assert skills_strategy().name == "append"
    with pytest.raises(ValueError, match="registered"):
        skills_strategy("retrieval")


def test_results_are_text_and_truncated_with_their_length() -> None:
    assert result_text({"a": [1, "é"]}) == '{"a": [1, "é"]}'
    assert truncate("abcdef", 3) == "abc\n[... truncated: 6 characters in total]"
    assert truncate("abc", 3) == "abc"
