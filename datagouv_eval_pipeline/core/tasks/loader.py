"""Load task specifications from YAML, all or nothing.

``load_task_specs`` reads every file, validates every field and cross-checks the specs (unknown
semantic actions, chains against required actions, duplicate ids), then either returns every
spec or raises one ``TaskSpecErrors`` listing every problem of every file.
"""

from __future__ import annotations

import contextlib
import difflib
import os
import re
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from datagouv_eval_pipeline.base import project_files, vocabulary
from datagouv_eval_pipeline.core.tasks.chain import ChainSyntaxError, iter_actions, parse_chain
from datagouv_eval_pipeline.core.tasks.check_params import ParamsError, parse_params
from datagouv_eval_pipeline.core.tasks.errors import (
    Loc,
    SpecError,
    TaskSpecErrors,
    field_path,
    validation_errors,
)
from datagouv_eval_pipeline.core.tasks.spec import TIERS, TaskSpec, TaskStatus
from datagouv_eval_pipeline.core.tasks.yaml_source import YamlDocument, read_yaml

PROJECT_ROOT = project_files.work_dir()
"""The checkout's root, else the current directory: where ``data/`` goes (see ``project_files``)."""

TASK_SPECS_DIR = project_files.task_specs_dir()
"""Where the curated task specifications live (the checkout's, else the installed copy)."""

_SPEC_SUFFIXES = {".yml", ".yaml"}
_TASK_FILE = re.compile(r"^task_\d{4}$")


def default_action_names() -> frozenset[str]:
    """Return the semantic action names (the vocabulary the action registry defines)."""
    return vocabulary.ACTION_NAMES


def default_arg_names() -> frozenset[str]:
    """Return the semantic argument names."""
    return frozenset(vocabulary.ARGUMENT_NAMES)


def spec_files(paths: Sequence[Path]) -> tuple[list[Path], list[SpecError]]:
    """List the task specification files named by files and directories.

    A directory contributes its ``*.yml`` / ``*.yaml`` files (not recursively, so the
    ``benchmark/`` sub-directory is not read as tasks), except schema files.

    Args:
        paths: Files or directories.

    Returns:
        The files, sorted and without repeats, and an error for each path that yields none.
    """
    files: dict[Path, None] = {}
    errors: list[SpecError] = []
    for path in paths:
        if path.is_dir():
            found: list[Path] = []
            unreadable = len(errors)
            for child in sorted(path.iterdir()):
                if child.suffix not in _SPEC_SUFFIXES or ".schema" in child.name:
                    continue
                if child.is_file():
                    found.append(child)
                else:
                    # A spec name that is not a readable regular file (a broken or looping
                    # link, a directory, a pipe) would otherwise vanish from the benchmark.
                    errors.append(SpecError(child, None, "", _not_a_file(child)))
            if not found and len(errors) == unreadable:
                errors.append(SpecError(path, None, "", "no task specification (*.yml) here"))
            files.update(dict.fromkeys(found))
        elif path.is_file():
            files[path] = None
        else:
            errors.append(SpecError(path, None, "", _not_a_file(path)))
    return sorted(files), errors


def _not_a_file(path: Path) -> str:
    """Why ``path`` is not a spec file one can read."""
    if path.is_symlink():
        try:
            path.resolve(strict=True)
        except RuntimeError:
            return "a symbolic link that loops back on itself, not a file"
        except OSError:
            return f"a symbolic link to {os.readlink(path)!r}, which does not exist"
    if path.exists():
        return "not a regular file (a directory, a pipe or a device)"
    return "no such file or directory"


def load_task_specs(
    paths: Sequence[Path],
    known_actions: Collection[str] | None = None,
    known_args: Collection[str] | None = None,
) -> list[TaskSpec]:
    """Load and validate every task specification, or report every problem at once.

    Args:
        paths: Files or directories (see ``spec_files``).
        known_actions: The semantic action names a spec may use; defaults to
            ``default_action_names()``.
        known_args: The semantic argument names a required action may use; defaults to
            ``default_arg_names()``.

    Returns:
        Every spec, sorted by task id (drafts and deprecated ones included).

    Raises:
        TaskSpecErrors: If any file has any problem; nothing is returned then.
    """
    actions = frozenset(known_actions) if known_actions is not None else default_action_names()
    args = frozenset(known_args) if known_args is not None else default_arg_names()
    files, errors = spec_files(paths)
    specs: list[TaskSpec] = []
    seen_ids: dict[str, list[tuple[Path, int | None]]] = {}
    for file in files:
        document, read_errors = read_yaml(file)
        errors.extend(read_errors)
        if document is None:
            continue
        spec, spec_errors = _validate_document(document, actions, args)
        errors.extend(spec_errors)
        if spec is not None:
            specs.append(spec)
        task_id = document.data.get("task_id") if isinstance(document.data, dict) else None
        if isinstance(task_id, str):
            seen_ids.setdefault(task_id, []).append((file, document.line_of(("task_id",))))
    errors.extend(_duplicate_ids(seen_ids))
    if errors:
        raise TaskSpecErrors(errors)
    return sorted(specs, key=lambda spec: spec.task_id)


def _validate_document(
    document: YamlDocument, actions: frozenset[str], args: frozenset[str]
) -> tuple[TaskSpec | None, list[SpecError]]:
    file, data = document.path, document.data
    if data is None:
        return None, [SpecError(file, None, "", "the file is empty: expected a task specification")]
    if not isinstance(data, dict):
        return None, [
            SpecError(
                file,
                document.line_of(()),
                "",
                f"expected a mapping of task fields at the top level, got {type(data).__name__}",
            )
        ]
    errors: list[SpecError] = []
    spec: TaskSpec | None = None
    try:
        spec = TaskSpec.model_validate(data)
    except ValidationError as error:
        errors.extend(validation_errors(file, error, TaskSpec, data, document.line_of))
    errors.extend(_action_errors(document, actions, args))
    errors.extend(_naming_errors(document))
    if spec is not None:
        errors.extend(_check_params_errors(document, spec))
        errors.extend(_assertion_errors(document, spec))
    return (spec if not errors else None), errors


def _check_params_errors(document: YamlDocument, spec: TaskSpec) -> list[SpecError]:
    """Validate each resource check's ``params`` with the check's own parameter model."""
    errors: list[SpecError] = []
    for ref_index, ref in enumerate(spec.resources):
        for check_index, check in enumerate(ref.checks):
            try:
                parse_params(check.fn, dict(check.params), ref.type)
            except ParamsError as error:
                loc: Loc = ("resources", ref_index, "checks", check_index, "params")
                line = document.line_of(loc) or document.line_of(loc[:-1])
                errors.append(SpecError(document.path, line, field_path(loc), str(error)))
    return errors


def _assertion_errors(document: YamlDocument, spec: TaskSpec) -> list[SpecError]:
    """Check that each assertion's ``number.expected`` names one of the task's expected values."""
    names = {value.name for value in spec.expected_values}
    errors: list[SpecError] = []
    for tier in TIERS:
        for index, criterion in enumerate(getattr(spec.evaluation_criteria, tier)):
            if criterion.assertion is None:
                continue
            for name in criterion.assertion.expected_names():
                if name not in names:
                    loc: Loc = ("evaluation_criteria", tier, index, "assert")
                    known = ", ".join(sorted(names)) or "none"
                    errors.append(
                        SpecError(
                            document.path,
                            document.line_of(loc),
                            field_path(loc),
                            f"number.expected {name!r} is not an expected value of this task "
                            f"(expected_values: {known})",
                        )
                    )
    return errors


@dataclass(frozen=True)
class _Level:
    """The well-formed parts of one tier of the raw ``action_chain`` block."""

    tier: str
    chain: str | None
    chain_names: list[tuple[str, int]] | None
    """(action, position) pairs, or None when the chain is absent or does not parse."""
    required: list[tuple[int, str]] | None
    """(index, name) pairs, or None when any entry is malformed."""
    arg_names: list[tuple[int, int, str]]
    """(action index, argument index, name) of every well-formed argument name."""


def _levels(data: dict[str, Any]) -> Iterator[_Level]:
    block = data.get("action_chain")
    if not isinstance(block, dict):
        return
    for tier in TIERS:
        level = block.get(tier)
        if not isinstance(level, dict):
            continue
        chain = level.get("chain")
        chain_names: list[tuple[str, int]] | None = None
        if isinstance(chain, str):
            # A chain that does not parse is reported by the model validation.
            with contextlib.suppress(ChainSyntaxError):
                chain_names = [(a.name, a.position) for a in iter_actions(parse_chain(chain))]
        raw_required = level.get("required_actions", [])
        items = raw_required if isinstance(raw_required, list) else []
        required: list[tuple[int, str]] | None = [
            (index, item["name"])
            for index, item in enumerate(items)
            if isinstance(item, dict) and isinstance(item.get("name"), str)
        ]
        if not isinstance(raw_required, list) or len(required or []) != len(raw_required):
            required = None
        arg_names = [
            (index, arg_index, arg["name"])
            for index, item in enumerate(items)
            if isinstance(item, dict) and isinstance(item.get("args"), list)
            for arg_index, arg in enumerate(item["args"])
            if isinstance(arg, dict) and isinstance(arg.get("name"), str)
        ]
        text = chain if isinstance(chain, str) else None
        yield _Level(tier, text, chain_names, required, arg_names)


def _action_errors(
    document: YamlDocument, actions: frozenset[str], args: frozenset[str]
) -> list[SpecError]:
    """Check action names, argument names and the agreement of chains with required actions."""
    data: dict[str, Any] = document.data
    errors: list[SpecError] = []

    def error(loc: Loc, message: str) -> None:
        errors.append(SpecError(document.path, document.line_of(loc), field_path(loc), message))

    levels = {level.tier: level for level in _levels(data)}
    for level in levels.values():
        base: Loc = ("action_chain", level.tier)
        for index, name in level.required or []:
            if name not in actions:
                error((*base, "required_actions", index, "name"), _unknown("action", name, actions))
        for name, position in level.chain_names or []:
            if name not in actions:
                error(
                    (*base, "chain"),
                    f"{_unknown('action', name, actions)} (at position {position} of the chain)",
                )
        for index, arg_index, arg_name in level.arg_names:
            if arg_name not in args:
                loc = (*base, "required_actions", index, "args", arg_index, "name")
                error(loc, _unknown("argument", arg_name, args))
    errors.extend(_chain_agreement(document, levels))
    return errors


def _chain_agreement(document: YamlDocument, levels: dict[str, _Level]) -> list[SpecError]:
    """Every action of a tier's chain is required in that tier, and vice versa.

    The optimal tier requires the minimal actions plus its own additions.
    """
    errors: list[SpecError] = []
    minimal = levels.get("minimal")
    if minimal is None or minimal.required is None:
        return errors
    tiers: list[tuple[_Level, list[tuple[Loc, str]]]] = []
    minimal_required: list[tuple[Loc, str]] = [
        (("action_chain", "minimal", "required_actions", i, "name"), name)
        for i, name in minimal.required
    ]
    tiers.append((minimal, minimal_required))
    optimal = levels.get("optimal")
    if optimal is not None and optimal.required is not None:
        additions: list[tuple[Loc, str]] = [
            (("action_chain", "optimal", "required_actions", i, "name"), name)
            for i, name in optimal.required
        ]
        tiers.append((optimal, minimal_required + additions))
    for level, required in tiers:
        if level.chain_names is None:
            continue
        chain_loc: Loc = ("action_chain", level.tier, "chain")
        required_names = {name for _, name in required}
        missing_from = (
            "action_chain.minimal.required_actions does not list it"
            if level.tier == "minimal"
            else "it is in neither action_chain.minimal.required_actions nor "
            "action_chain.optimal.required_actions (optimal requires minimal + additions)"
        )
        reported: set[str] = set()
        for name, position in level.chain_names:
            if name in required_names or name in reported:
                continue
            reported.add(name)
            message = (
                f"the {level.tier} chain names {name!r} (position {position}) but {missing_from}"
            )
            errors.append(
                SpecError(
                    document.path, document.line_of(chain_loc), field_path(chain_loc), message
                )
            )
        chain_names = {name for name, _ in level.chain_names}
        for loc, name in required:
            if name not in chain_names:
                inherited = level.tier == "optimal" and loc[1] == "minimal"
                reason = (
                    " (minimal required actions are also required in the optimal tier)"
                    if inherited
                    else ""
                )
                errors.append(
                    SpecError(
                        document.path,
                        document.line_of(loc),
                        field_path(loc),
                        f"required action {name!r} does not appear in the {level.tier} chain "
                        f"{level.chain!r}{reason}",
                    )
                )
    return errors


def _naming_errors(document: YamlDocument) -> list[SpecError]:
    """File names agree with task ids, and documented examples stay drafts."""
    data: dict[str, Any] = document.data
    errors: list[SpecError] = []
    stem = document.path.stem
    task_id = data.get("task_id")
    if _TASK_FILE.match(stem) and isinstance(task_id, str) and task_id != stem:
        errors.append(
            SpecError(
                document.path,
                document.line_of(("task_id",)),
                "task_id",
                f"task id {task_id!r} does not match the file name: expected {stem!r}",
            )
        )
    meta = data.get("meta")
    status = meta.get("status") if isinstance(meta, dict) else None
    if stem.startswith("example_") and status is not None and status != TaskStatus.DRAFT:
        loc: Loc = ("meta", "status")
        errors.append(
            SpecError(
                document.path,
                document.line_of(loc),
                field_path(loc),
                "a documented example must keep status 'draft' so it is never run "
                f"(got {status!r})",
            )
        )
    return errors


def _duplicate_ids(seen: dict[str, list[tuple[Path, int | None]]]) -> list[SpecError]:
    errors: list[SpecError] = []
    for task_id, places in seen.items():
        if len(places) < 2:
            continue
        for file, line in places:
            others = ", ".join(
                f"{other}:{other_line}" if other_line else str(other)
                for other, other_line in places
                if other != file
            )
            errors.append(
                SpecError(
                    file, line, "task_id", f"duplicate task id {task_id!r}: also used in {others}"
                )
            )
    return errors


def _unknown(kind: str, name: str, known: frozenset[str]) -> str:
    close = difflib.get_close_matches(name, sorted(known), n=3, cutoff=0.6)
    hint = (
        f"did you mean {' or '.join(repr(c) for c in close)}?"
        if close
        else f"known {kind}s: {', '.join(sorted(known))}"
    )
    return f"unknown semantic {kind} {name!r}; {hint}"
