"""The ``datagouv`` command tree, reproducing the official CLI 0.4.2 on ``datagouv-client``.

Each command makes the same library calls as the official one (reference
``datagouv-toolsets.md`` §3), so the HTTP requests, the retries, the outputs and the failures are
the ones an agent meets with the real binary:

* ``display`` prints one ``attribute: value`` line per library attribute, each followed by a
  20-character ``─`` rule; ``get`` prints the API body verbatim;
* writes go through the library, which raises ``PermissionError`` without an API key;
* the xor rules of ``create`` fail as assertion errors, shown as tracebacks;
* ``dataset sort-resources`` keeps the upstream bug: the dataset is built without fetching, so
  with a key it fails with ``AttributeError`` (no ``resources``) before any request.

An uncaught error prints a traceback on stderr and exits with 1; a usage error prints Typer's
``Error`` panel and exits with 2.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from typing import Any

import click

from datagouv_eval_pipeline.world.datagouv_cli.config import (
    CLI_VERSION,
    config_path,
    delete_config,
    load_config,
    make_client,
    retry_wait_override,
    save_config,
)
from datagouv_eval_pipeline.world.datagouv_cli.render import (
    TyperStyleGroup,
    render_traceback,
    render_usage_error,
)

RULE = "─" * 20
_ENVIRONMENTS_HELP = "Which environment to target (prod/www, demo or dev)."
_API_KEY_HELP = (
    "Your API key for the specified environment. "
    "You may leave it blank if you only intend to get data."
)
_SET_HELP = "Reusable argument to set extra keys"


@dataclass
class Invocation:
    """Per-invocation state shared with the error handler (the values to mask in output)."""

    secrets: list[str] = field(default_factory=list)


def version_text() -> str:
    """What ``datagouv --version`` prints: the emulated CLI and the library underneath."""
    try:
        library = version("datagouv-client")
    except PackageNotFoundError:  # pragma: no cover - the library is a dependency
        library = "unknown"
    return (
        f"datagouv-cli {CLI_VERSION} "
        f"(emulated by datagouv-eval-pipeline on datagouv-client {library})"
    )


class DatagouvCli(TyperStyleGroup):
    """The root group: Typer-style errors and tracebacks, program name ``datagouv``."""

    group_class = TyperStyleGroup

    def main(  # type: ignore[override]
        self,
        args: list[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        windows_expand_args: bool = True,
        **extra: Any,
    ) -> Any:
        """Run the CLI; exit 0, 1 on an uncaught error (traceback), 2 on a usage error."""
        invocation = extra.pop("obj", None)
        if not isinstance(invocation, Invocation):
            invocation = Invocation()
        code = 0
        try:
            result = super().main(
                args=args,
                prog_name=prog_name or "datagouv",
                complete_var=complete_var,
                standalone_mode=False,
                windows_expand_args=windows_expand_args,
                obj=invocation,
                **extra,
            )
            if isinstance(result, int):  # click returns the code of ctx.exit() here
                code = result
        except click.exceptions.Abort:
            _flush()
            click.echo("Aborted.", err=True)
            code = 1
        except click.ClickException as error:
            _flush()
            click.echo(render_usage_error(error), err=True, nl=False)
            code = error.exit_code
        except Exception as error:
            _flush()
            click.echo(render_traceback(error, invocation.secrets), err=True, nl=False)
            code = 1
        if standalone_mode:
            sys.exit(code)
        return code


def _flush() -> None:
    # Output already written (retry notices, partial lines) must come before the error.
    sys.stdout.flush()


def _client() -> Any:
    """The configured library client for the running command (warns without a config file)."""
    ctx = click.get_current_context()
    config = load_config()
    invocation = ctx.find_object(Invocation)
    if invocation is not None and config.api_key:
        invocation.secrets.append(config.api_key)
    from datagouv_eval_pipeline.world.datagouv_cli.config import library_retry_wait

    ctx.with_resource(library_retry_wait(retry_wait_override()))
    return make_client(config)


def _payload(items: tuple[str, ...], payload: dict[str, Any] | None = None) -> dict[str, Any]:
    """``--set key=value`` options as the real CLI reads them (values stay strings)."""
    result = {} if payload is None else payload
    for item in items:
        key, value = item.split("=", maxsplit=1)
        result[key] = value
    return result


def _display(obj: Any) -> None:
    for attribute in obj._attributes:
        click.echo(f"{attribute}: {getattr(obj, attribute)}")
        click.echo(RULE)


def _print_json(obj: Any) -> None:
    response = obj._client.session.get(obj.uri)
    try:
        response.raise_for_status()
    except Exception as error:
        raise RuntimeError(response.text) from error
    click.echo(response.text)


def _require_one(first: str | None, second: str | None, message: str) -> None:
    # The official CLI uses a bare assert; an explicit raise keeps it under `python -O`.
    if not ((first or second) and not (first and second)):
        raise AssertionError(message)


def _show_version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if not value or ctx.resilient_parsing:
        return
    click.echo(version_text())
    ctx.exit()


set_option = click.option("--set", "set_", multiple=True, metavar="TEXT", help=_SET_HELP)
bare_set_option = click.option("--set", "set_", multiple=True, metavar="TEXT")


# help="" keeps the docstring out of `--help`: the official root command has no description.
@click.group(cls=DatagouvCli, name="datagouv", help="")
@click.option(
    "--version",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=_show_version,
    help="Show the emulated CLI version and exit.",
)
def app() -> None:
    """The ``datagouv`` command."""


# --------------------------------------------------------------------------------------------
# Configuration


@app.command("setup")
@click.option(
    "--environment",
    default="prod",
    show_default=True,
    prompt="The environment you intend to interact with",
    help=_ENVIRONMENTS_HELP,
)
@click.option(
    "--api-key",
    default="",
    prompt="Your API key (or leave blank to remain anonymous)",
    hide_input=True,
    help=_API_KEY_HELP,
)
@click.pass_obj
def setup(invocation: Invocation, environment: str, api_key: str) -> None:
    """Store configuration (environment and API key)."""
    if api_key:
        invocation.secrets.append(api_key)
    if config_path().exists():
        click.echo("A config file already exists, it will be overwritten")
    from datagouv import Client  # type: ignore[import-untyped]

    Client._env_sanity(environment)
    save_config(environment, api_key)
    click.echo("Config saved ✓")


@app.command("delete-config")
def delete_config_command() -> None:
    """Delete configuration."""
    delete_config()
    click.echo("Config deleted ✓")


# --------------------------------------------------------------------------------------------
# Datasets


@app.group("dataset", help="Datasets-related operations.")
def dataset() -> None:
    """Dataset commands."""


@dataset.command("display")
@click.argument("id")
def dataset_display(id: str) -> None:
    """Human-friendlily display a dataset's attributes."""
    client = _client()
    obj = client.dataset(id)
    _display(obj)


@dataset.command("get")
@click.argument("id")
def dataset_get(id: str) -> None:
    """Display a dataset's metadata in JSON."""
    client = _client()
    obj = client.dataset(id, fetch=False)
    _print_json(obj)


@dataset.command(
    "create",
    help=(
        "Create a dataset. `title` and `description` are required.\n"
        "Set `organization-id` or `owner-id` to attach the dataset to the desired entity.\n"
        "Each `--set` option is expected as `<key>=<value>`."
    ),
)
@click.argument("title")
@click.argument("description")
@click.option("--organization-id", help="Id of the organization that will own the dataset")
@click.option("--owner-id", help="Id of the user that will own the dataset")
@set_option
def dataset_create(
    title: str,
    description: str,
    organization_id: str | None,
    owner_id: str | None,
    set_: tuple[str, ...],
) -> None:
    """Create a dataset owned by an organization xor a user."""
    _require_one(
        organization_id,
        owner_id,
        "Either `organization-id` or `owner-id` should be specified, and not both",
    )
    client = _client()
    payload = _payload(set_, {"title": title, "description": description})
    if organization_id:
        created = client.organization(organization_id, fetch=False).create_dataset(payload)
    else:
        created = client.create_dataset(payload | {"owner": owner_id})
    click.echo(f"Dataset created successfully ✓ id is {created.id}")


@dataset.command("update")
@click.argument("id")
@bare_set_option
def dataset_update(id: str, set_: tuple[str, ...]) -> None:
    """Update a dataset. Each `--set` option is expected as `<key>=<new_value>`."""
    client = _client()
    payload = _payload(set_)
    client.dataset(id, fetch=False).update(payload)
    click.echo("Dataset updated successfully ✓")


@dataset.command(
    "sort-resources",
    help=(
        "Sort the resources of a dataset according to the given order, "
        "expected as `<key>.<asc/desc>`.\nExample: `title.asc`"
    ),
)
@click.argument("id")
@click.argument("by")
def dataset_sort_resources(id: str, by: str) -> None:
    """Reorder a dataset's resources (broken upstream, reproduced)."""
    client = _client()
    # Upstream bug kept on purpose: fetch=False leaves the dataset without `resources`.
    client.dataset(id, fetch=False).sort_resources(by=by)
    click.echo("Dataset's resources reordered successfully ✓")


@dataset.command("delete")
@click.argument("id")
def dataset_delete(id: str) -> None:
    """Delete a dataset."""
    client = _client()
    client.dataset(id, fetch=False).delete()
    click.echo("Dataset deleted successfully ✓")


# --------------------------------------------------------------------------------------------
# Organizations


@app.group("organization", help="Organizations-related operations.")
def organization() -> None:
    """Organization commands."""


@organization.command("display")
@click.argument("id")
def organization_display(id: str) -> None:
    """Human-friendlily display an organization's attributes."""
    client = _client()
    obj = client.organization(id)
    _display(obj)


@organization.command("get")
@click.argument("id")
def organization_get(id: str) -> None:
    """Display an organization's metadata in JSON."""
    client = _client()
    obj = client.organization(id, fetch=False)
    _print_json(obj)


@organization.command(
    "create",
    help=(
        "Create an organization. `name` and `description` are required.\n"
        "Each `--set` option is expected as `<key>=<value>`."
    ),
)
@click.argument("name")
@click.argument("description")
@set_option
def organization_create(name: str, description: str, set_: tuple[str, ...]) -> None:
    """Create an organization."""
    client = _client()
    payload = _payload(set_, {"name": name, "description": description})
    created = client.create_organization(payload)
    click.echo(f"Organization created successfully ✓ id is {created.id}")


@organization.command("update")
@click.argument("id")
@bare_set_option
def organization_update(id: str, set_: tuple[str, ...]) -> None:
    """Update an organization. Each `--set` option is expected as `<key>=<new_value>`."""
    client = _client()
    payload = _payload(set_)
    client.organization(id, fetch=False).update(payload)
    click.echo("Organization updated successfully ✓")


@organization.command("delete")
@click.argument("id")
def organization_delete(id: str) -> None:
    """Delete an organization."""
    client = _client()
    client.organization(id, fetch=False).delete()
    click.echo("Organization deleted successfully ✓")


# --------------------------------------------------------------------------------------------
# Resources


@app.group("resource", help="Resources-related operations.")
def resource() -> None:
    """Resource commands."""


@resource.command("display")
@click.argument("id")
def resource_display(id: str) -> None:
    """Human-friendlily display a resource's attributes."""
    client = _client()
    obj = client.resource(id)
    _display(obj)


@resource.command("get")
@click.argument("id")
def resource_get(id: str) -> None:
    """Display a resource's metadata in JSON."""
    client = _client()
    obj = client.resource(id, fetch=False)
    _print_json(obj)


@resource.command(
    "create",
    help=(
        "Create a resource. `dataset-id` and `title` are required.\n"
        "Set `file-to-upload` to create a static resource, or `url` to create a remote one.\n"
        "Each `--set` option is expected as `<key>=<value>`."
    ),
)
@click.argument("dataset_id")
@click.argument("title")
@click.option("--file-to-upload", help="Path of the file to upload")
@click.option("--url", help="URL of the file")
@click.option(
    "--is-communautary/--no-is-communautary",
    default=False,
    show_default=True,
    help="Whether the resource is communautary",
)
@set_option
def resource_create(
    dataset_id: str,
    title: str,
    file_to_upload: str | None,
    url: str | None,
    is_communautary: bool,
    set_: tuple[str, ...],
) -> None:
    """Create a remote (``--url``) xor static (``--file-to-upload``) resource."""
    _require_one(
        file_to_upload, url, "Either `file-to-upload` or `url` should be specified, and not both"
    )
    client = _client()
    payload = _payload(set_, {"title": title})
    parent = client.dataset(dataset_id, fetch=False)
    if url:
        payload["url"] = url
        created = parent.create_remote(payload=payload, is_communautary=is_communautary)
    else:
        created = parent.create_static(
            file_to_upload=file_to_upload, payload=payload, is_communautary=is_communautary
        )
    click.echo(f"Resource created successfully ✓ id is {created.id}")


@resource.command("update")
@click.argument("id")
@bare_set_option
def resource_update(id: str, set_: tuple[str, ...]) -> None:
    """Update a resource. Each `--set` option is expected as `<key>=<new_value>`."""
    client = _client()
    payload = _payload(set_)
    client.resource(id, fetch=False).update(payload)
    click.echo("Resource updated successfully ✓")


@resource.command("download")
@click.argument("id")
@click.argument("path")
def resource_download(id: str, path: str) -> None:
    """Download a resource to a given path."""
    client = _client()
    client.resource(id).download(path)
    click.echo(f"Resource downloaded successfully at {path} ✓")


@resource.command("delete")
@click.argument("id")
def resource_delete(id: str) -> None:
    """Delete a resource."""
    client = _client()
    client.resource(id, fetch=False).delete()
    click.echo("Resource deleted successfully ✓")


# --------------------------------------------------------------------------------------------
# Topics


@app.group("topic", help="Topics-related operations.")
def topic() -> None:
    """Topic commands."""


@topic.command("display")
@click.argument("id")
def topic_display(id: str) -> None:
    """Human-friendlily display a topic's attributes."""
    client = _client()
    obj = client.topic(id)
    _display(obj)


@topic.command("get")
@click.argument("id")
def topic_get(id: str) -> None:
    """Display a topic's metadata in JSON."""
    client = _client()
    obj = client.topic(id, fetch=False)
    _print_json(obj)


@topic.command(
    "create",
    help=(
        "Create a topic. `name` and `description` are required.\n"
        "Each `--set` option is expected as `<key>=<value>`."
    ),
)
@click.argument("name")
@click.option("--organization-id", help="Id of the organization that will own the topic")
@click.option("--owner-id", help="Id of the user that will own the topic")
@set_option
def topic_create(
    name: str, organization_id: str | None, owner_id: str | None, set_: tuple[str, ...]
) -> None:
    """Create a topic owned by an organization xor a user."""
    _require_one(
        organization_id,
        owner_id,
        "Either `organization-id` or `owner-id` should be specified, and not both",
    )
    client = _client()
    payload: dict[str, Any] = {"name": name}
    if organization_id:
        payload["organization"] = organization_id
    else:
        payload["owner"] = owner_id
    _payload(set_, payload)
    created = client.create_topic(payload)
    click.echo(f"Topic created successfully ✓ id is : {created.id}")


@topic.command("update")
@click.argument("id")
@bare_set_option
def topic_update(id: str, set_: tuple[str, ...]) -> None:
    """Update a topic. Each `--set` option is expected as `<key>=<new_value>`."""
    client = _client()
    payload = _payload(set_)
    client.topic(id, fetch=False).update(payload)
    click.echo("Topic updated successfully ✓")


@topic.command("delete")
@click.argument("id")
def topic_delete(id: str) -> None:
    """Delete a topic."""
    client = _client()
    client.topic(id, fetch=False).delete()
    click.echo("Topic deleted successfully ✓")


def main() -> None:
    """Console-script entry point (``datagouv``)."""
    app.main(prog_name="datagouv")
