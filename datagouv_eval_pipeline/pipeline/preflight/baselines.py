"""Committed baselines: what each task's catalog objects looked like when the task was written.

One JSON file per (task, object) under ``snapshots/baselines/<task_id>/<type>-<id>.json`` holds
only the fields that task's checks compare (title and description, Tabular columns, row count).
The validator never creates a baseline: a missing file is an error of the checks that need it.
Baselines change only through an explicit refresh, which computes a :class:`RefreshPlan` (the
diff) first and writes it only when applied.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from datagouv_eval_pipeline.core.tasks import SourceType
from datagouv_eval_pipeline.pipeline.preflight.models import DiffEntry
from datagouv_eval_pipeline.world.catalogue import default_snapshots_dir

BASELINES_DIRNAME = "baselines"
REFRESH_HINT = "run `datagouv-eval preflight --refresh` after reviewing the catalog"
BaselineField = Literal["title", "description", "columns", "row_count"]
BASELINE_FIELDS: tuple[BaselineField, ...] = ("title", "description", "columns", "row_count")
_SAFE_ID = re.compile(r"^[A-Za-z0-9._-]+$")


def default_baselines_dir() -> Path:
    """Return ``<snapshots dir>/baselines`` (``$DATAGOUV_EVAL_SNAPSHOTS`` is honoured)."""
    return default_snapshots_dir() / BASELINES_DIRNAME


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class BaselineColumn(_Frozen):
    """A Tabular column: its header and the type the Tabular profile reports."""

    name: str
    type: str


class BaselineObject(_Frozen):
    """The catalog object a baseline describes."""

    type: SourceType
    id: str = Field(min_length=1)
    dataset_id: str | None = None


class Baseline(_Frozen):
    """The reviewed state of one catalog object, for one task."""

    task_id: str
    object: BaselineObject
    source: str
    """Where the values were read (``twin twin-2026-06-12`` or an API base URL)."""
    title: str | None = None
    description: str | None = None
    columns: list[BaselineColumn] | None = None
    row_count: int | None = None

    def fields(self) -> dict[str, Any]:
        """Return the recorded fields (those that are not ``None``) as JSON values."""
        data = self.model_dump(mode="json", include=set[str](BASELINE_FIELDS))
        return {k: data[k] for k in BASELINE_FIELDS if data.get(k) is not None}


class BaselineError(Exception):
    """A baseline file exists but cannot be read; the message names the file."""


class BaselineStore:
    """Baseline files under one directory (default ``snapshots/baselines``)."""

    def __init__(self, root: Path | str | None = None) -> None:
        """Use ``root`` or :func:`default_baselines_dir`."""
        self.root = Path(root) if root is not None else default_baselines_dir()

    def path(self, task_id: str, object_type: SourceType, object_id: str) -> Path:
        """Return the file of one (task, object) pair.

        Raises:
            ValueError: an id with characters unsafe in a file name.
        """
        for part in (task_id, object_id):
            if not _SAFE_ID.match(part):
                raise ValueError(f"{part!r} cannot be used in a baseline file name")
        return self.root / task_id / f"{object_type.value}-{object_id}.json"

    def load(self, task_id: str, object_type: SourceType, object_id: str) -> Baseline | None:
        """Return the baseline of a (task, object) pair, or ``None`` if there is no file.

        Raises:
            BaselineError: the file is not valid JSON or not a baseline of that pair.
        """
        path = self.path(task_id, object_type, object_id)
        if not path.is_file():
            return None
        return read_baseline(path, task_id, object_type, object_id)

    def task_files(self, task_id: str) -> list[Path]:
        """Return the baseline files of a task, sorted."""
        directory = self.root / task_id
        return sorted(directory.glob("*.json")) if directory.is_dir() else []

    def write(self, baseline: Baseline) -> Path:
        """Write one baseline (UTF-8, indented, stable key order) and return its path."""
        path = self.path(baseline.task_id, baseline.object.type, baseline.object.id)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(render_baseline(baseline), encoding="utf-8")
        return path


def render_baseline(baseline: Baseline) -> str:
    """Return the file content of a baseline (fields that are ``None`` are left out)."""
    data = baseline.model_dump(mode="json", exclude_none=True)
    return json.dumps(data, ensure_ascii=False, indent=2) + "\n"


def read_baseline(path: Path, task_id: str, object_type: SourceType, object_id: str) -> Baseline:
    """Read and check one baseline file.

    Raises:
        BaselineError: invalid JSON, a field of the wrong shape, or a file describing another
            (task, object) pair; the message names the file and the field.
    """
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise BaselineError(
            f"{path}: not a readable JSON baseline ({error}); {REFRESH_HINT}"
        ) from None
    try:
        baseline = Baseline.model_validate(data)
    except ValidationError as error:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in error.errors()
        )
        raise BaselineError(f"{path}: invalid baseline ({problems}); {REFRESH_HINT}") from None
    found = (baseline.task_id, baseline.object.type, baseline.object.id)
    if found != (task_id, object_type, object_id):
        raise BaselineError(
            f"{path}: describes {found[0]} {found[1].value} {found[2]}, expected {task_id} "
            f"{object_type.value} {object_id}; {REFRESH_HINT}"
        )
    return baseline


def diff_fields(old: dict[str, Any], new: dict[str, Any]) -> list[DiffEntry]:
    """Return the differences between two ``Baseline.fields()`` mappings, in field order.

    Columns are compared one by one (``columns.<name>``) so that a diff names the column.
    """
    diffs: list[DiffEntry] = []
    for name in BASELINE_FIELDS:
        before, after = old.get(name), new.get(name)
        if before == after:
            continue
        if name == "columns" and isinstance(before, list) and isinstance(after, list):
            diffs.extend(diff_columns(before, after))
        else:
            diffs.append(DiffEntry(field=name, baseline=before, current=after))
    return diffs


def diff_columns(
    before: list[dict[str, str]], after: list[dict[str, str]], only: list[str] | None = None
) -> list[DiffEntry]:
    """Return per-column differences (removed, added, or of another type).

    Args:
        before: Baseline columns (``{"name", "type"}``), in order.
        after: Current columns, in order.
        only: Compare only these column names (others are ignored).
    """
    old = {c["name"]: c["type"] for c in before}
    new = {c["name"]: c["type"] for c in after}
    names = list(old) + [n for n in new if n not in old]
    if only is not None:
        names = [n for n in names if n in set(only)] + [n for n in only if n not in names]
    return [
        DiffEntry(field=f"columns.{name}", baseline=old.get(name), current=new.get(name))
        for name in names
        if old.get(name) != new.get(name)
    ]
