"""Run every ``datagouv-eval`` subcommand with bad inputs; print what each run wrote, as JSON.

Used by ``test_cli_sweep.py`` as ``python -m tests.cli.sweep_cli WORKDIR`` (a subprocess of its
own). It walks the click group, imports every command once, then runs each invocation in a
forked child with its own stdout and stderr files, as the installed ``datagouv-eval`` script
would run it (``main(args)``, an uncaught exception printed as a traceback), so one slow or
hanging invocation is killed alone and one import serves them all. Each parameter is given bad
values of its kind, placed first on the command line so click processes it first; the other
required parameters get a plausible value. Prints one JSON list: ``{"args", "code", "output",
"timed_out"}`` per invocation.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click

from datagouv_eval_pipeline.cli import main
from datagouv_eval_pipeline.cli.urls import HttpUrl

REPO = Path(__file__).resolve().parents[2]
TIMEOUT_S = 90.0
PARALLEL = 2

# Values for the required parameters that are not the one being tried.
PLAUSIBLE = {
    "trace_path": str(REPO / "tests/fixtures/traces/task_0002_mcp.json"),
    "--trace": str(REPO / "tests/fixtures/traces/task_0002_mcp.json"),
    "--task": str(REPO / "task_specs/task_0002.yml"),
    "cell_key": "offline~baseline-oneshot__none__data_gouv_context",
    "review_path": "{missing}",
    "cassettes_dir": "{directory}",
    # Unusable, so that a tried option the replay mode ignores cannot start a server.
    "--cassettes": "{loop}",
    "--out": "{missing}",
}
# Strings that name nothing (a cell, a task, a judge, a metric, an experiment, a query, ...);
# an empty option is its default ("every task"), an empty argument is not.
BAD_STRINGS = ("nope",)
BAD_ARGUMENT_STRINGS = ("nope", "")


KINDS = ("missing", "directory", "garbage", "loop", "deep", "truncated", "under_a_file")
"""The kinds of bad path; each invocation gets its own fresh set (an output may overwrite one)."""


def bad_files(work: Path) -> dict[str, str]:
    """Bad paths: missing, a directory, garbage bytes, a symlink loop, deep YAML, under a file."""
    work.mkdir(parents=True, exist_ok=True)
    (work / "a_directory").mkdir(exist_ok=True)
    garbage = work / "garbage.bin"
    garbage.write_bytes(b"\xff\xfe\x00garbage {[\x80\x81\n" * 50)
    loop = work / "loop"
    if not loop.is_symlink():
        loop.symlink_to(loop)
    deep = work / "deep.yml"
    deep.write_text("[" * 20_000 + "]" * 20_000 + "\n")
    truncated = work / "truncated.json"
    truncated.write_text('{"task_id": "task_0002", "answer": "tronq')
    return {
        "missing": str(work / "missing.yml"),
        "directory": str(work / "a_directory"),
        "garbage": str(garbage),
        "loop": str(loop),
        "deep": str(deep),
        "truncated": str(truncated),
        "under_a_file": str(garbage / "out.json"),
    }


def commands(group: click.Group) -> Iterator[tuple[list[str], click.Command]]:
    """Every leaf command with its path, each command object once (aliases skipped)."""
    seen: set[int] = set()

    def walk(command: click.Command, path: list[str]) -> Iterator[tuple[list[str], click.Command]]:
        if isinstance(command, click.Group):
            ctx = click.Context(command)
            for name in command.list_commands(ctx):
                sub = command.get_command(ctx, name)
                assert sub is not None, name
                yield from walk(sub, [*path, name])
        elif id(command) not in seen:
            seen.add(id(command))
            yield path, command

    yield from walk(group, [])


def _name(param: click.Parameter) -> str:
    return param.name if isinstance(param, click.Argument) else param.opts[-1]


def _words(param: click.Parameter, value: str) -> list[str]:
    return [value] if isinstance(param, click.Argument) else [param.opts[-1], value]


def invocations() -> list[list[str]]:
    """One invocation per (command, parameter, bad value of its kind), paths as ``{kind}``."""
    found: list[list[str]] = []
    for path, command in commands(main):
        for param in command.params:
            if isinstance(param, click.Option) and (param.is_flag or param.hidden):
                continue
            kind = param.type
            if isinstance(kind, (click.Path, click.File)):
                # Where a directory is expected, one (or one to create) is no bad input.
                dir_only = isinstance(kind, click.Path) and not kind.file_okay
                fine = {"directory", "missing"} if dir_only else set()
                values = [f"{{{k}}}" for k in KINDS if k not in fine]
            elif isinstance(kind, HttpUrl):
                values = ["not a url", "ftp://example.org/"]
            elif type(kind) is click.types.StringParamType:
                argument = isinstance(param, click.Argument)
                values = list(BAD_ARGUMENT_STRINGS if argument else BAD_STRINGS)
            else:
                continue  # numbers and choices: click's own checks
            for value in values:
                args = [*path, *_words(param, value)]
                for other in command.params:
                    if other is param or not other.required:
                        continue
                    args += _words(other, PLAUSIBLE.get(_name(other), "{missing}"))
                found.append(args)
    return found


def _child(args: list[str], out_path: Path) -> None:
    fd = os.open(out_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.setsid()
    code = 0
    try:
        main(args, prog_name="datagouv-eval")
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:
        traceback.print_exc()  # what the console script would print
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def run_all(work: Path, found: list[list[str]]) -> list[dict[str, Any]]:
    """Run each invocation in a forked child, ``PARALLEL`` at a time."""
    results: list[dict[str, Any]] = []
    pending = list(enumerate(found))
    running: dict[int, tuple[int, float, Path]] = {}
    while pending or running:
        while pending and len(running) < PARALLEL:
            index, template = pending.pop(0)
            files = bad_files(work / f"case-{index}")
            args = [word.format(**files) for word in template]
            found[index] = args
            out_path = work / f"out-{index}.txt"
            pid = os.fork()
            if pid == 0:
                _child(args, out_path)
            running[pid] = (index, time.monotonic(), out_path)
        time.sleep(0.02)
        for pid, (index, started, out_path) in list(running.items()):
            done, status = os.waitpid(pid, os.WNOHANG)
            timed_out = not done and time.monotonic() - started > TIMEOUT_S
            if timed_out:
                os.killpg(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            if done or timed_out:
                del running[pid]
                code = os.waitstatus_to_exitcode(status) if done else None
                output = out_path.read_text(encoding="utf-8", errors="replace")
                args = found[index]
                results.append(
                    {"args": args, "code": code, "output": output, "timed_out": timed_out}
                )
    return results


def main_sweep(work: Path) -> None:
    """Make the bad files under ``work``, run every invocation, print the results."""
    print(json.dumps(run_all(work, invocations())))


if __name__ == "__main__":
    main_sweep(Path(sys.argv[1]))
