"""Typer-style rendering for a click app: boxed help panels, boxed usage errors, tracebacks.

The official CLI is a Typer app with rich installed, so what an agent reads is Typer's rich
output: a ``Usage:`` line, the docstring, then ``Arguments`` / ``Options`` / ``Commands`` panels
drawn with box characters; usage errors end in an ``Error`` panel on stderr (exit code 2); an
uncaught exception prints a traceback (exit code 1). This module draws the same layout in plain
text (no colours, no dependency on rich or typer), following Typer 0.26 (``TEXT`` metavars,
upper-case argument names in usage lines).

Tracebacks are reduced to the frames that say something to a reader (the command, the
``datagouv`` library, the HTTP client) and never show local variables, so an API key held by
the client cannot leak; any secret passed in is masked as well.
"""

from __future__ import annotations

import os
import shutil
import textwrap
import traceback
from collections.abc import Iterable, Sequence
from typing import Any

import click

DEFAULT_WIDTH = 80
_HELP_PANEL_GAP = 8  # spaces between the option names and the metavar column (Typer's look)
_LIBRARY_MARKERS = (f"{os.sep}datagouv{os.sep}", f"{os.sep}niquests{os.sep}")
_COMMAND_FILES = (f"{os.sep}datagouv_cli{os.sep}app.py", f"{os.sep}datagouv_cli{os.sep}config.py")


def terminal_width() -> int:
    """The width Typer/rich would use: ``COLUMNS``, else the terminal, else 80."""
    return max(40, shutil.get_terminal_size((DEFAULT_WIDTH, 24)).columns)


# --------------------------------------------------------------------------------------------
# Panels


def panel(title: str, lines: Sequence[str], width: int) -> list[str]:
    """A rich-style rounded panel with ``title`` in the top border."""
    inner = width - 4
    head = f"╭─ {title} "
    top = head + "─" * max(0, width - len(head) - 1) + "╮"
    body = [f"│ {line[:inner].ljust(inner)} │" for line in lines]
    bottom = "╰" + "─" * (width - 2) + "╯"
    return [top, *body, bottom]


def _wrap(text: str, width: int) -> list[str]:
    lines: list[str] = []
    for source in text.splitlines() or [""]:
        lines.extend(
            textwrap.wrap(source, max(10, width), break_on_hyphens=False, break_long_words=True)
            or [""]
        )
    return lines


def _table(rows: Sequence[tuple[str, str]], width: int) -> list[str]:
    """Two-column rows: a fixed-width left part and a help text wrapped under itself."""
    if not rows:
        return []
    left_width = max(len(left) for left, _ in rows)
    help_width = width - 4 - left_width
    lines: list[str] = []
    for left, help_text in rows:
        wrapped = _wrap(help_text, help_width) if help_text else [""]
        lines.append((left.ljust(left_width) + wrapped[0]).rstrip())
        lines.extend((" " * left_width + extra).rstrip() for extra in wrapped[1:])
    return lines


def _doc_paragraph(text: str) -> str:
    """A docstring as Typer shows it on a command page: dedented, line breaks joined."""
    cleaned = textwrap.dedent(text).strip()
    return " ".join(line.strip() for line in cleaned.splitlines())


def _short_help(command: click.Command) -> str:
    """The help of a command in its parent's ``Commands`` panel (line breaks kept)."""
    text = command.short_help or command.help or ""
    first = text.strip().split("\n\n", 1)[0]
    return "\n".join(line.strip() for line in first.splitlines())


def _metavar(param: click.Parameter, ctx: click.Context) -> str:
    if isinstance(param, click.Option) and param.is_flag:
        return ""
    name = param.type.name.upper() if param.type.name else "TEXT"
    return "TEXT" if name == "STRING" else name


def _option_help(option: click.Option) -> str:
    parts = [option.help or ""]
    if option.show_default and option.default not in (None, "", (), []):
        if option.is_flag and option.secondary_opts:
            shown = option.opts[0] if option.default else option.secondary_opts[0]
            shown = shown.lstrip("-")
        else:
            shown = str(option.default)
        parts.append(f"[default: {shown}]")
    if option.required:
        parts.append("[required]")
    # Typer puts the default and required notes on their own line under the help text.
    return "\n".join(part for part in parts if part)


def _arguments_panel(ctx: click.Context, width: int) -> list[str]:
    arguments = [p for p in ctx.command.get_params(ctx) if isinstance(p, click.Argument)]
    if not arguments:
        return []
    name_width = max(len(a.name or "") for a in arguments)
    meta_width = max(len(_metavar(a, ctx)) for a in arguments)
    rows = []
    for argument in arguments:
        marker = "*" if argument.required else " "
        left = f"{marker}    {(argument.name or '').ljust(name_width)}      "
        left += _metavar(argument, ctx).ljust(meta_width) + "  "
        rows.append((left, "[required]" if argument.required else ""))
    return panel("Arguments", _table(rows, width), width)


def _options_panel(ctx: click.Context, width: int) -> list[str]:
    options = [
        p for p in ctx.command.get_params(ctx) if isinstance(p, click.Option) and not p.hidden
    ]
    if not options:
        return []
    names = {id(o): ", ".join(o.opts) for o in options}
    seconds = {id(o): ", ".join(o.secondary_opts) for o in options}
    name_width = max(len(n) for n in names.values())
    second_width = max(len(s) for s in seconds.values())
    meta_width = max(len(_metavar(o, ctx)) for o in options)
    rows = []
    for option in options:
        left = names[id(option)].ljust(name_width)
        if second_width:
            left += "    " + seconds[id(option)].ljust(second_width)
        left += " " * _HELP_PANEL_GAP
        if meta_width:
            left += _metavar(option, ctx).ljust(meta_width) + "  "
        rows.append((left, _option_help(option)))
    return panel("Options", _table(rows, width), width)


def _commands_panel(ctx: click.Context, width: int) -> list[str]:
    group = ctx.command
    if not isinstance(group, click.Group):
        return []
    rows = []
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        if command is None or command.hidden:
            continue
        rows.append((name, _short_help(command)))
    if not rows:
        return []
    name_width = max(len(name) for name, _ in rows)
    return panel(
        "Commands", _table([(n.ljust(name_width) + "  ", h) for n, h in rows], width), width
    )


def render_help(ctx: click.Context, width: int | None = None) -> str:
    """The whole ``--help`` page of ``ctx.command``, laid out like Typer's rich help."""
    size = width or terminal_width()
    command = ctx.command
    lines = ["", " " + ctx.get_usage(), ""]
    if command.help:
        lines.extend(" " + line for line in _wrap(_doc_paragraph(command.help), size - 2))
        lines.append("")
    lines.extend(_arguments_panel(ctx, size))
    lines.extend(_options_panel(ctx, size))
    lines.extend(_commands_panel(ctx, size))
    return "\n".join(line.rstrip() for line in lines) + "\n"


def render_usage_error(error: click.ClickException, width: int | None = None) -> str:
    """A click error as Typer prints it: usage, a ``Try … --help`` hint, an ``Error`` panel."""
    size = width or terminal_width()
    lines: list[str] = []
    ctx = getattr(error, "ctx", None)
    if isinstance(error, click.UsageError) and ctx is not None:
        lines.append(ctx.get_usage())
        help_names = ctx.help_option_names
        if ctx.command.get_help_option(ctx) is not None and help_names:
            lines.append(f"Try '{ctx.command_path} {help_names[0]}' for help.")
    lines.extend(panel("Error", _wrap(error.format_message(), size - 4), size))
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------------------------
# Tracebacks


def _keep_frame(frame: traceback.FrameSummary) -> bool:
    if any(marker in frame.filename for marker in _LIBRARY_MARKERS):
        return True
    # The command functions and their helpers, not the dispatcher that catches the error.
    return frame.filename.endswith(_COMMAND_FILES) and frame.name != "main"


def _prune(exc: traceback.TracebackException, seen: set[int]) -> None:
    if id(exc) in seen:
        return
    seen.add(id(exc))
    exc.stack = traceback.StackSummary.from_list(
        [frame for frame in exc.stack if _keep_frame(frame)]
    )
    for linked in (exc.__cause__, exc.__context__):
        if linked is not None:
            _prune(linked, seen)


def render_traceback(error: BaseException, secrets: Iterable[str | None] = ()) -> str:
    """A Python-style traceback of ``error`` and its causes, without locals, secrets masked.

    Only the frames of the command, the ``datagouv`` library and ``niquests`` are kept (the
    click dispatch and tenacity retry layers say nothing to a reader). The header
    ``Traceback (most recent call last):`` is always present.
    """
    summary = traceback.TracebackException.from_exception(error, capture_locals=False)
    _prune(summary, set())
    text = "".join(summary.format())
    if not text.startswith("Traceback (most recent call last)"):
        text = "Traceback (most recent call last):\n" + text
    for secret in secrets:
        if secret:
            text = text.replace(secret, "***")
    return text


class TyperStyleMixin:
    """Renders ``--help`` with :func:`render_help` (mixed into click commands and groups)."""

    def format_help(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """Write the Typer-style help page into click's formatter."""
        # click's formatter caps its width at 78; Typer uses the whole terminal.
        formatter.write(render_help(ctx))


class TyperStyleCommand(TyperStyleMixin, click.Command):
    """A click command whose help looks like Typer's."""


class TyperStyleGroup(TyperStyleMixin, click.Group):
    """A click group whose help looks like Typer's; sub-commands keep definition order.

    Like a Typer sub-app, it reports ``Missing command.`` (exit 2) when called bare.
    """

    command_class = TyperStyleCommand
    group_class: type[click.Group] | type[type] | None = type

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("no_args_is_help", False)
        super().__init__(*args, **kwargs)

    def list_commands(self, ctx: click.Context) -> list[str]:
        """Commands in the order they were added (Typer's order), not sorted."""
        return list(self.commands)
