"""The run store: one JSON document per (stage, cell), written atomically.

Partitioned stages never touch DuckDB (one writer only, see ``warehouse``): each writes its
cell's document here and the warehouse stage reads them all. A write goes to a temporary file
renamed over the old one, so a crash never leaves a half-written document, and a failed attempt
never replaces an earlier good result: it is recorded next to it (``<cell>.failed.json``).
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from datagouv_eval_pipeline.base import project_files

DocumentT = TypeVar("DocumentT", bound=BaseModel)

RUN_STORE_ENV = "DATAGOUV_EVAL_RUN_STORE"
"""Environment variable naming the run store directory."""

DEFAULT_RUN_STORE = project_files.data_dir() / "run_store"

_FAILED_SUFFIX = ".failed.json"


def default_run_store() -> Path:
    """The run store directory: ``$DATAGOUV_EVAL_RUN_STORE`` or ``data/run_store``."""
    value = os.environ.get(RUN_STORE_ENV)
    return Path(value).expanduser().resolve() if value else DEFAULT_RUN_STORE


def content_digest(value: Any) -> str:
    """A short, order-independent content hash of a JSON-ready value (a data version)."""
    text = json.dumps(value, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


class RunStoreError(RuntimeError):
    """A run store document is missing or unreadable."""


def describe_validation_error(where: str | Path, error: ValidationError) -> str:
    """``<where>: <field path>: <message>`` for the first error (and how many more).

    The field path is written as in the document: ``traces[3].status``.
    """
    problems = error.errors()
    first = problems[0]
    parts: list[str] = []
    for part in first["loc"]:
        if isinstance(part, int):
            parts.append(f"[{part}]")
        else:
            parts.append(f".{part}" if parts else str(part))
    field = "".join(parts) or "<document>"
    more = f" (and {len(problems) - 1} more problem(s))" if len(problems) > 1 else ""
    return f"{where}: {field}: {first['msg']}{more}"


def write_json_atomic(path: Path, payload: Any) -> None:
    """Write ``payload`` as JSON to ``path`` through a temporary file and a rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            json.dump(payload, stream, ensure_ascii=False, separators=(",", ":"), default=str)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _read_json(path: Path) -> Any:
    """The JSON value in ``path``; None when there is no such file.

    Raises:
        RunStoreError: The file cannot be read, is not UTF-8 or not JSON, whatever its bytes.
    """
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as error:
        raise RunStoreError(f"{path}: cannot read ({error.strerror or error})") from error
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise RunStoreError(
            f"{path}: not UTF-8 text (byte {error.start}: {raw[error.start : error.start + 1]!r})"
        ) from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise RunStoreError(f"{path}: not valid JSON ({error})") from error
    except RecursionError:
        raise RunStoreError(f"{path}: not valid JSON (nested too deeply)") from None


@dataclass(frozen=True)
class Failure:
    """A failed attempt at one (stage, cell), kept next to the last good document.

    Attributes:
        stage: The stage (``agent_runs``, ...).
        cell_key: The cell.
        reason: What went wrong.
        at: When (UTC, ISO 8601).
    """

    stage: str
    cell_key: str
    reason: str
    at: str


@dataclass(frozen=True)
class RunStore:
    """Per-cell JSON documents under ``root/<stage>/<cell key>.json``.

    Attributes:
        root: The store's directory (created on first write).
    """

    root: Path

    def path(self, stage: str, cell_key: str) -> Path:
        """Where the document of ``(stage, cell_key)`` lives."""
        if "/" in cell_key or cell_key.startswith("."):
            raise ValueError(f"not a cell key: {cell_key!r}")
        return self.root / stage / f"{cell_key}.json"

    def write(self, stage: str, cell_key: str, payload: Mapping[str, Any] | BaseModel) -> Path:
        """Replace the cell's document (a typed one as its JSON form); clear its failures."""
        path = self.path(stage, cell_key)
        data = payload.model_dump(mode="json") if isinstance(payload, BaseModel) else dict(payload)
        write_json_atomic(path, data)
        self._failure_path(stage, cell_key).unlink(missing_ok=True)
        return path

    def read(self, stage: str, cell_key: str) -> dict[str, Any] | None:
        """The cell's document, or None when the stage never succeeded for it.

        Raises:
            RunStoreError: The document exists but cannot be read, is not UTF-8 or not valid
                JSON (the message names the file and the problem).
        """
        path = self.path(stage, cell_key)
        data = _read_json(path)
        if data is None:
            return None
        if not isinstance(data, dict):
            raise RunStoreError(f"{path}: expected a JSON object")
        return data

    def read_document(self, stage: str, cell_key: str, model: type[DocumentT]) -> DocumentT | None:
        """The cell's document validated as ``model``, or None when the stage never succeeded.

        Raises:
            RunStoreError: The document is not valid JSON, or does not validate (the message
                names the file, the field and what was expected).
        """
        data = self.read(stage, cell_key)
        if data is None:
            return None
        try:
            return model.model_validate(data)
        except ValidationError as error:
            raise RunStoreError(
                describe_validation_error(self.path(stage, cell_key), error)
            ) from None

    def require(self, stage: str, cell_key: str) -> dict[str, Any]:
        """Like :meth:`read`, but a missing document is an error naming what to run."""
        data = self.read(stage, cell_key)
        if data is None:
            raise RunStoreError(
                f"{self.path(stage, cell_key)}: no {stage} result for cell {cell_key}; "
                f"materialize {stage} for this partition first"
            )
        return data

    def record_failure(self, stage: str, cell_key: str, reason: str) -> Failure:
        """Record a failed attempt without touching the last good document."""
        failure = Failure(stage, cell_key, reason, datetime.now(UTC).isoformat())
        write_json_atomic(self._failure_path(stage, cell_key), failure.__dict__)
        return failure

    def failure(self, stage: str, cell_key: str) -> Failure | None:
        """The last failed attempt since the last success, or None.

        Raises:
            RunStoreError: The failure record cannot be read.
        """
        path = self._failure_path(stage, cell_key)
        data = _read_json(path)
        if data is None:
            return None
        fields = ("stage", "cell_key", "reason", "at")
        if not isinstance(data, dict) or not all(isinstance(data.get(f), str) for f in fields):
            raise RunStoreError(f"{path}: expected a failure record with {', '.join(fields)}")
        return Failure(**{f: data[f] for f in fields})

    def cell_keys(self, stage: str) -> Iterator[str]:
        """Cells that have a document for ``stage``, sorted."""
        directory = self.root / stage
        if not directory.is_dir():
            return iter(())
        names = sorted(
            p.name[: -len(".json")]
            for p in directory.glob("*.json")
            if not p.name.endswith(_FAILED_SUFFIX) and not p.name.startswith(".")
        )
        return iter(names)

    def _failure_path(self, stage: str, cell_key: str) -> Path:
        return self.root / stage / f"{cell_key}{_FAILED_SUFFIX}"
