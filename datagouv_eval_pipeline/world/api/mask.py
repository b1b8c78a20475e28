"""Udata's ``X-Fields`` response masks (flask-restx field masks), applied to rendered JSON.

A mask names the fields to keep, nesting with braces: ``id,title,organization{id,name}``,
optionally inside one pair of outer braces (``{id,title}``). ``*`` keeps every field not named
otherwise, so ``*,organization{name}`` is everything with a trimmed organization. On a list,
the mask applies to each item; a list endpoint's envelope is masked as a whole, so its items
are reached through ``data{…}``.

flask-restx's rules, which udata inherits:

* the lexer keeps ``{``, ``}``, ``,`` and words of letters, digits, ``_``, ``:``, ``-`` and
  ``*``; any other character (spaces included) is dropped;
* a bad mask is 400 ``{"message": "Mask parse error: <reason>"}`` with the reasons below;
* a name the model does not have is skipped, and a nested mask on a null object gives null;
* a nested mask on a value that is not an object (a string, a list of strings) is 400
  ``{"message": "Mask error: Mask is inconsistent with model"}``.

The twin masks the JSON it would send rather than udata's models, so it checks that last rule
on the value, not on the field's declared type (an empty list or a null string is accepted
where udata would refuse the field). Key order follows the twin's rendering; production's JSON
encoder sorts keys anyway.
"""

from __future__ import annotations

import re
from typing import Any

HEADER = "X-Fields"
# flask-restx's lexer: braces, commas and field names; everything else is ignored.
_TOKENS = re.compile(r"\{|\}|,|[\w:\-*]+")


class MaskError(Exception):
    """A mask udata answers 400 for.

    Attributes:
        message: The ``message`` of udata's error body.
    """

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class Mask:
    """A parsed mask: each kept field with its nested mask (``None`` keeps the value whole).

    Attributes:
        fields: The named fields in mask order (``"*"`` among them when present).
    """

    def __init__(self) -> None:
        self.fields: dict[str, Mask | None] = {}

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Mask) and self.fields == other.fields

    def __repr__(self) -> str:
        inner = ",".join(k if v is None else f"{k}{v!r}" for k, v in self.fields.items())
        return "{" + inner + "}"


def _parse_error(reason: str) -> MaskError:
    return MaskError(f"Mask parse error: {reason}")


def parse(text: str) -> Mask:
    """Parse an ``X-Fields`` value.

    Args:
        text: The header's value; must not be empty.

    Returns:
        The parsed mask.

    Raises:
        MaskError: ``Unexpected opening bracket`` (a brace not after a field name),
            ``Unexpected closing bracket``, ``Unexpected comma`` (leading, doubled or right
            after ``{``) or ``Missing closing bracket``.
    """
    cleaned = text.replace("\n", "").strip()
    if cleaned.startswith("{"):
        # One pair of outer braces is optional.
        if not cleaned.endswith("}"):
            raise _parse_error("Missing closing bracket")
        cleaned = cleaned[1:-1]
    root = Mask()
    current = root
    stack: list[Mask] = []
    previous: str | None = None
    for token in _TOKENS.findall(cleaned):
        if token == "{":
            if previous is None or previous not in current.fields:
                raise _parse_error("Unexpected opening bracket")
            nested = Mask()
            current.fields[previous] = nested
            stack.append(current)
            current = nested
        elif token == "}":
            if not stack:
                raise _parse_error("Unexpected closing bracket")
            current = stack.pop()
        elif token == ",":
            if previous in (",", "{", None):
                raise _parse_error("Unexpected comma")
        else:
            current.fields[token] = None
        previous = token
    if stack:
        raise _parse_error("Missing closing bracket")
    return root


def apply(mask: Mask, value: Any) -> Any:
    """Return ``value`` (decoded JSON) reduced to what ``mask`` keeps.

    Raises:
        MaskError: A nested mask reaches a value that is neither an object, a list nor null.
    """
    if isinstance(value, list):
        return [apply(mask, item) for item in value]
    if isinstance(value, dict):
        keep_rest = "*" in mask.fields
        out: dict[str, Any] = {}
        for key, item in value.items():
            if key in mask.fields:
                nested = mask.fields[key]
                out[key] = item if nested is None or item is None else apply(nested, item)
            elif keep_rest:
                out[key] = item
        return out
    if value is None:
        return None
    raise MaskError("Mask error: Mask is inconsistent with model")
