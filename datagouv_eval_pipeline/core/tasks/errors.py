"""Errors found in YAML configuration files, each located by file, field path and line.

Loaders collect every problem of every file before raising, so one run of ``datagouv-eval
validate`` shows them all. Pydantic's validation errors are translated here into messages that
name what was expected (allowed keys, allowed values, the field's purpose).
"""

from __future__ import annotations

import enum
import types
import typing
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from datagouv_eval_pipeline.core.tasks.chain import ChainSyntaxError

Loc = tuple[str | int, ...]
"""A location inside a YAML document: mapping keys and sequence indexes, outermost first."""

LineOf = Callable[[Loc], int | None]
"""Returns the 1-based YAML line of a location, or None when it cannot be found."""


@dataclass(frozen=True, order=True)
class SpecError:
    """One problem in one configuration file.

    Attributes:
        file: The file that holds the problem.
        line: 1-based line in the file, or None when unknown.
        field_path: Dotted path to the field, e.g.
            ``action_chain.minimal.required_actions[2].name``; empty for the whole file.
        message: What is wrong and what was expected.
    """

    file: Path
    line: int | None
    field_path: str
    message: str

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line is not None else str(self.file)
        field = f" {self.field_path}:" if self.field_path else ""
        return f"{where}:{field} {self.message}"


class SpecErrors(Exception):
    """Every problem found while loading a set of configuration files.

    Attributes:
        errors: The problems, sorted by file, line and field path.
    """

    def __init__(self, errors: Iterable[SpecError]) -> None:
        self.errors: list[SpecError] = sorted(errors, key=_sort_key)
        files = {error.file for error in self.errors}
        summary = f"{len(self.errors)} error(s) in {len(files)} file(s)"
        super().__init__("\n".join([summary, *(str(error) for error in self.errors)]))


class TaskSpecErrors(SpecErrors):
    """Problems in task specification files (nothing is loaded when any exists)."""


def _sort_key(error: SpecError) -> tuple[str, int, str, str]:
    return (str(error.file), error.line or 0, error.field_path, error.message)


def field_path(loc: Sequence[str | int]) -> str:
    """Render a location as a field path.

    Args:
        loc: Mapping keys and list indexes, outermost first.

    Returns:
        E.g. ``action_chain.minimal.required_actions[2].args[0].strict_value``.
    """
    path = ""
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        else:
            path += f".{part}" if path else part
    return path


def validation_errors(
    file: Path,
    error: ValidationError,
    model: type[BaseModel],
    data: Any,
    line_of: LineOf,
) -> list[SpecError]:
    """Translate a pydantic validation error into located, explained spec errors.

    Args:
        file: The file that was validated.
        error: The error raised by ``model.model_validate(data)``.
        model: The model that was validated (used to list allowed keys and describe fields).
        data: The raw data that was validated (used to tell data keys from union member tags).
        line_of: Finds the YAML line of a location in ``data``.

    Returns:
        One error per problem; the per-member errors of a failed union are merged into one.
    """
    merged: dict[tuple[Loc, str], list[ErrorDetails]] = {}
    for details in error.errors():
        loc = _data_loc(details, data)
        kind = "type" if details["type"].endswith("_type") else details["type"]
        merged.setdefault((loc, kind), []).append(details)
    found: list[SpecError] = []
    for (loc, _kind), group in merged.items():
        message = _message(group, model, loc)
        # line_of finds the deepest existing node, i.e. the parent of a missing field.
        found.append(SpecError(file, line_of(loc), field_path(loc), message))
    return found


def _data_loc(details: ErrorDetails, data: Any) -> Loc:
    """Keep the part of a pydantic location that exists in the data (drops union member tags)."""
    loc: list[str | int] = []
    node = data
    for part in details["loc"]:
        in_mapping = isinstance(node, dict) and part in node
        in_list = isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node)
        if in_mapping or in_list:
            node = node[part]
        elif details["type"] == "missing" and isinstance(node, dict):
            loc.append(part)
            break
        else:
            break
        loc.append(part)
    return tuple(loc)


def _message(group: list[ErrorDetails], model: type[BaseModel], loc: Loc) -> str:
    details = group[0]
    kind = details["type"]
    if kind == "missing":
        description = _field_description(model, loc)
        expected = _allowed_values(model, loc)
        text = f"missing required field {loc[-1]!r}"
        if description:
            text += f": {description}"
        if expected:
            text += f" (one of: {expected})"
        return text
    if kind == "extra_forbidden":
        allowed = _allowed_keys(model, loc[:-1])
        return f"unknown key {loc[-1]!r}; allowed keys: {', '.join(allowed)}"
    if kind in {"value_error", "assertion_error"}:
        cause = details.get("ctx", {}).get("error")
        if isinstance(cause, ChainSyntaxError):
            return f"malformed chain: {cause}"
        return str(cause) if cause is not None else details["msg"]
    got = _describe_input(details["input"])
    if len(group) > 1:
        names = [_expected_from_type_error(item) for item in group]
        expected = ", ".join(names[:-1]) + " or " + names[-1]
        return f"expected {expected}; got {got}"
    text = f"{details['msg']}; got {got}"
    if kind == "string_type" and isinstance(details["input"], int | float | bool):
        text += " (quote the value in YAML to make it a string)"
    if kind == "string_pattern_mismatch":
        description = _field_description(model, loc)
        if description:
            text += f" ({description})"
    return text


_TYPE_NAMES = {
    "string_type": "a string",
    "int_type": "an integer",
    "float_type": "a number",
    "bool_type": "a boolean",
    "none_required": "null",
    "list_type": "a list",
    "dict_type": "a mapping",
    "model_type": "a mapping",
}


def _expected_from_type_error(details: ErrorDetails) -> str:
    return _TYPE_NAMES.get(details["type"], details["msg"])


def _describe_input(value: Any) -> str:
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _field_info(model: type[BaseModel], loc: Loc) -> tuple[type[BaseModel] | None, str | None]:
    """Walk the model along a location; return the model owning the last key and that key."""
    current: Any = model
    owner: type[BaseModel] | None = None
    name: str | None = None
    for part in loc:
        current = _unwrap(current)
        if isinstance(part, int):
            continue
        if not (isinstance(current, type) and issubclass(current, BaseModel)):
            return None, None
        name = _field_name(current, part)
        if name is None:
            return None, None
        field = current.model_fields[name]
        owner = current
        current = field.annotation
    return owner, name


def _field_name(model: type[BaseModel], key: str) -> str | None:
    """The field a YAML key sets: its name, or the field whose alias it is (``assert``)."""
    if key in model.model_fields:
        return key
    return next((name for name, f in model.model_fields.items() if f.alias == key), None)


def _unwrap(annotation: Any) -> Any:
    """Strip Optional and list wrappers down to the element type."""
    while True:
        origin = typing.get_origin(annotation)
        # Annotated[X, validator] (a field with a shorthand) describes X.
        if origin is typing.Annotated or origin in (list, tuple, set, frozenset):
            annotation = typing.get_args(annotation)[0]
        elif origin in (typing.Union, types.UnionType):
            members = [arg for arg in typing.get_args(annotation) if arg is not type(None)]
            if len(members) != 1:
                return annotation
            annotation = members[0]
        else:
            return annotation


def _model_at(model: type[BaseModel], loc: Loc) -> type[BaseModel] | None:
    if not loc:
        return model
    owner, name = _field_info(model, loc)
    if owner is None or name is None:
        return None
    target = _unwrap(owner.model_fields[name].annotation)
    if typing.get_origin(target) in (typing.Union, types.UnionType):
        # A scalar-or-mapping field (``contains: word`` or ``contains: {any: [...]}``): the
        # mapping's keys are its one model member's.
        models = [
            m for m in typing.get_args(target) if isinstance(m, type) and issubclass(m, BaseModel)
        ]
        target = models[0] if len(models) == 1 else None
    return target if isinstance(target, type) and issubclass(target, BaseModel) else None


def _allowed_keys(model: type[BaseModel], loc: Loc) -> list[str]:
    target = _model_at(model, loc)
    if target is None:
        return []
    return sorted(field.alias or name for name, field in target.model_fields.items())


def _field_description(model: type[BaseModel], loc: Loc) -> str | None:
    owner, name = _field_info(model, loc)
    if owner is None or name is None:
        return None
    description = owner.model_fields[name].description
    if not description:
        return None
    return " ".join(description.split()).replace("``", "`")


def _allowed_values(model: type[BaseModel], loc: Loc) -> str | None:
    owner, name = _field_info(model, loc)
    if owner is None or name is None:
        return None
    annotation = _unwrap(owner.model_fields[name].annotation)
    values: list[Any] = []
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        values = [member.value for member in annotation]
    elif typing.get_origin(annotation) is typing.Literal:
        values = list(typing.get_args(annotation))
    return ", ".join(repr(value) for value in values) if values else None
