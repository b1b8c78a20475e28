"""``datagouv-eval replay``: the local OpenAI-compatible record/replay server; cassette checks."""

from __future__ import annotations

from pathlib import Path

import click

from datagouv_eval_pipeline.base.writable import writable_dir_problem
from datagouv_eval_pipeline.cli.ports import PORT, require_free_port
from datagouv_eval_pipeline.cli.urls import HTTP_URL


@click.group(name="replay")
def command() -> None:
    """Record and replay OpenAI-compatible chat completions (cassettes)."""


def _cassettes_dir_problem(path: Path, mode: str) -> str | None:
    """What makes ``path`` unusable as the cassettes directory of ``mode``, or None."""
    if mode != "replay":
        return writable_dir_problem(path)  # recording writes there
    try:
        path.stat()
    except FileNotFoundError:
        return None  # nothing recorded yet: every request misses
    except OSError as error:  # a symlink loop, a path under a file
        return f"cannot be read ({error.strerror})"
    return None


@command.command("serve")
@click.option(
    "--cassettes",
    "cassettes_dir",
    type=click.Path(file_okay=False, path_type=Path),
    required=True,
    help="Directory of <name>.json cassettes.",
)
@click.option(
    "--mode",
    type=click.Choice(["replay", "record", "record_new"]),
    default="replay",
    show_default=True,
    help="replay: answer from cassettes, a miss is HTTP 404; record: forward to --upstream and "
    "rewrite the cassettes; record_new: replay hits, record misses.",
)
@click.option(
    "--upstream",
    type=HTTP_URL,
    default=None,
    help="OpenAI-compatible base URL to record from, e.g. https://api.mistral.ai/v1.",
)
@click.option(
    "--api-key-env",
    default=None,
    help="Environment variable holding the upstream key (default: forward the caller's "
    "Authorization header). The key is never written to a cassette.",
)
@click.option("--port", type=PORT, default=8766, show_default=True, help="TCP port (0 = free).")
@click.option(
    "--cassette",
    "default_cassette",
    default="default",
    show_default=True,
    help="Cassette used by the plain /v1 routes (others: /cassettes/<name>/v1).",
)
@click.option("--latency", type=float, default=0.0, show_default=True, help="Seconds per answer.")
@click.option("--rpm", type=int, default=None, help="Rate limit: requests per minute (429 beyond).")
@click.option(
    "--mistral-quirks", is_flag=True, help="Answer like Mistral (list content, null tool type)."
)
@click.option(
    "--repeat-exhausted",
    is_flag=True,
    help="Replay the last answer again when a request is asked more often than recorded.",
)
def serve(
    cassettes_dir: Path,
    mode: str,
    upstream: str | None,
    api_key_env: str | None,
    port: int,
    default_cassette: str,
    latency: float,
    rpm: int | None,
    mistral_quirks: bool,
    repeat_exhausted: bool,
) -> None:
    """Serve on 127.0.0.1 until Ctrl-C; in replay mode, exit 1 if any request missed."""
    from datagouv_eval_pipeline.world.replay import (
        CassetteError,
        ProviderSimulation,
        ReplayConfig,
        serve_forever,
    )

    if (problem := _cassettes_dir_problem(cassettes_dir, mode)) is not None:
        raise click.BadParameter(f"{cassettes_dir}: {problem}", param_hint="--cassettes")
    try:
        config = ReplayConfig(
            mode=mode,  # type: ignore[arg-type]  # click.Choice restricts it to the Mode values
            cassettes_dir=cassettes_dir,
            default_cassette=default_cassette,
            upstream_url=upstream,
            upstream_api_key_env=api_key_env,
            simulation=ProviderSimulation(
                latency_s=latency, rate_limit_rpm=rpm, mistral_quirks=mistral_quirks
            ),
            repeat_exhausted=repeat_exhausted,
        )
    except (ValueError, CassetteError) as error:
        raise click.ClickException(str(error)) from error

    def ready(url: str) -> None:
        click.echo(f"replay server ({mode}) on {url}, cassettes in {cassettes_dir}")
        click.echo(f"  base_url      {url}/v1   (cassette {default_cassette!r})")
        click.echo(f"  per cassette  {url}/cassettes/<name>/v1")
        click.echo(f"  misses        {url}/_replay/misses")
        if upstream:
            click.echo(f"  upstream      {upstream}")
        click.echo("Press Ctrl-C to stop.")

    require_free_port(port)
    state = serve_forever(config, port=port, on_ready=ready)
    stats = state.stats()
    click.echo("served: " + ", ".join(f"{k}={v}" for k, v in stats.items()))
    misses = state.misses
    for miss in misses:
        click.echo(f"MISS {miss.message}", err=True)
    if misses:
        raise SystemExit(1)


@command.command("check")
@click.argument("cassettes_dir", type=click.Path(file_okay=False, exists=True, path_type=Path))
def check(cassettes_dir: Path) -> None:
    """Validate every cassette in CASSETTES_DIR and look for leaked credentials (exit 1 if any)."""
    from datagouv_eval_pipeline.world.replay import (
        audit_cassette,
        cassette_path,
        list_cassettes,
        load_cassette,
    )

    names = list_cassettes(cassettes_dir)
    problems: list[str] = []
    for name in names:
        path = cassette_path(cassettes_dir, name)
        found = audit_cassette(path)
        problems.extend(found)
        if not found:
            cassette = load_cassette(path)
            click.echo(
                f"ok  {name}: {len(cassette.interactions)} interaction(s), "
                f"models {cassette.models()}"
            )
    for problem in problems:
        click.echo(f"BAD {problem}", err=True)
    click.echo(f"{len(names)} cassette(s), {len(problems)} problem(s)")
    if problems:
        raise SystemExit(1)
