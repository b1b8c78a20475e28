"""Cassettes: one JSON file per named conversation set, holding recorded request/response pairs.

File layout (``CASSETTE_VERSION`` 1)::

    {
      "version": 1,
      "key_scheme": "chat-completions/v1",
      "name": "mistral-small__mcp-1.2__task-3",
      "interactions": [
        {
          "key": "3f9a0c1d5e7b2a64",
          "request": {"method": "POST", "path": "/v1/chat/completions",
                      "headers": {...no credentials...}, "body": {...}},
          "response": {"status": 200, "headers": {...}, "body": {...}},
          "recorded_at": "2026-12-01T10:00:00Z",
          "upstream_ms": 812.4
        }
      ]
    }

Interactions are kept in recording order; requests with the same key replay in that order.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from datagouv_eval_pipeline.world.replay.scrub import find_secrets, is_secret_header

CASSETTE_VERSION = 1
"""The file format version written by this code (``Cassette.version``)."""
CASSETTE_SUFFIX = ".json"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._=@+-]{0,199}$")


class CassetteError(ValueError):
    """A cassette file that cannot be read, or a cassette name that is not allowed."""


class RecordedRequest(BaseModel):
    """The request as sent by the client, with credentials removed."""

    model_config = ConfigDict(extra="forbid")

    method: str = "POST"
    path: str
    headers: dict[str, str] = Field(default_factory=dict)
    body: dict[str, Any]


class RecordedResponse(BaseModel):
    """The upstream's answer: status, headers worth keeping, and the JSON body."""

    model_config = ConfigDict(extra="forbid")

    status: int = 200
    headers: dict[str, str] = Field(default_factory=dict)
    body: Any


class Interaction(BaseModel):
    """One request/response pair and its match key."""

    model_config = ConfigDict(extra="forbid")

    key: str
    request: RecordedRequest
    response: RecordedResponse
    recorded_at: datetime | None = None
    upstream_ms: float | None = None


class Cassette(BaseModel):
    """A named, ordered list of interactions (one file)."""

    model_config = ConfigDict(extra="forbid")

    version: Literal[1] = 1
    key_scheme: Literal["chat-completions/v1"] = "chat-completions/v1"
    name: str
    interactions: list[Interaction] = Field(default_factory=list)

    def keys(self) -> list[str]:
        """Match keys in recording order."""
        return [interaction.key for interaction in self.interactions]

    def models(self) -> list[str]:
        """Model names requested in this cassette, first-seen order."""
        seen: dict[str, None] = {}
        for interaction in self.interactions:
            model = interaction.request.body.get("model")
            if isinstance(model, str):
                seen.setdefault(model, None)
        return list(seen)

    def to_json(self) -> str:
        """Human-readable JSON (indented, UTF-8 kept) with a final newline."""
        data = self.model_dump(mode="json")
        return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def check_name(name: str) -> str:
    """Return ``name`` if it is a valid cassette name (it becomes a file name), else raise.

    Raises:
        CassetteError: the name is empty, too long, or has characters other than letters,
            digits and ``. _ = @ + -`` (no slashes, so it cannot leave the directory).
    """
    if not _NAME.match(name) or ".." in name:
        raise CassetteError(
            f"invalid cassette name {name!r}: expected 1-200 characters from "
            "letters, digits and . _ = @ + - (starting with a letter or digit, no '..')"
        )
    return name


def cassette_name(*parts: str) -> str:
    """Build a valid cassette name from arbitrary parts (cell key, task id, repeat...).

    Characters outside the allowed set become ``-``, parts are joined with ``__``, and a name
    longer than 200 characters is cut and suffixed with a hash of the full name so it stays
    unique. ``cassette_name("mistral/small", "mcp@1.2", "task 3")`` gives
    ``"mistral-small__mcp@1.2__task-3"``.
    """
    cleaned = [re.sub(r"[^A-Za-z0-9._=@+-]+", "-", part).strip("-.") or "x" for part in parts]
    name = "__".join(cleaned) or "x"
    name = name.replace("..", "-")
    if len(name) > 200:
        digest = hashlib.sha256(name.encode("utf-8")).hexdigest()[:12]
        name = f"{name[:186]}--{digest}"
    return check_name(name)


def cassette_path(directory: Path, name: str) -> Path:
    """The file of cassette ``name`` in ``directory``."""
    return directory / f"{check_name(name)}{CASSETTE_SUFFIX}"


def _format_validation(path: Path, error: ValidationError) -> str:
    lines = [f"{path}: not a valid cassette (version {CASSETTE_VERSION}):"]
    for item in error.errors()[:10]:
        location = ".".join(str(part) for part in item["loc"]) or "<root>"
        lines.append(f"  {location}: {item['msg']}")
    return "\n".join(lines)


def load_cassette(path: Path) -> Cassette:
    """Read and validate a cassette file.

    Raises:
        CassetteError: the file is not JSON or not a cassette; the message names the file and
            the field paths that are wrong.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise CassetteError(f"{path}: cannot read cassette: {error}") from error
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise CassetteError(
            f"{path}: not JSON (line {error.lineno}, column {error.colno}): {error.msg}"
        ) from error
    try:
        return Cassette.model_validate(data)
    except ValidationError as error:
        raise CassetteError(_format_validation(path, error)) from error


def save_cassette(cassette: Cassette, path: Path) -> None:
    """Write a cassette atomically (temporary file then rename), creating the directory."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(cassette.to_json())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def list_cassettes(directory: Path) -> list[str]:
    """Names of the cassettes in ``directory`` (sorted; empty if it does not exist)."""
    if not directory.is_dir():
        return []
    return sorted(
        path.name[: -len(CASSETTE_SUFFIX)]
        for path in directory.glob(f"*{CASSETTE_SUFFIX}")
        if _NAME.match(path.name[: -len(CASSETTE_SUFFIX)])
    )


def audit_cassette(path: Path) -> list[str]:
    """Problems that must stop a cassette from being committed; empty when it is fine.

    Checks that the file is a valid cassette, that no stored header is a credential header,
    and that no key-shaped string (``sk-…``, ``Bearer …``…) appears anywhere in the file.
    """
    try:
        cassette = load_cassette(path)
    except CassetteError as error:
        return [str(error)]
    problems: list[str] = []
    for index, interaction in enumerate(cassette.interactions):
        for side, headers in (
            ("request", interaction.request.headers),
            ("response", interaction.response.headers),
        ):
            for header in headers:
                if is_secret_header(header):
                    problems.append(
                        f"{path}: interactions[{index}].{side}.headers has credential header "
                        f"{header!r}"
                    )
    lines = path.read_text(encoding="utf-8").splitlines()
    for number, line in enumerate(lines, start=1):
        for found in find_secrets(line):
            # Show only the prefix: the report must not leak the key it warns about.
            problems.append(f"{path}:{number}: key-shaped string starting {found[:3]!r}")
    return problems
