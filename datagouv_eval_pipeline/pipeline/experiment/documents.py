"""The run store documents of the stages, typed.

``task_specs`` and ``catalog_validation`` write one document for the whole experiment
(:class:`TaskSpecsDocument`, :class:`CatalogValidationDocument`); then
``agent_runs`` → ``action_mappings`` → ``judge_scores``: each stage writes one document per cell
(see :mod:`~datagouv_eval_pipeline.pipeline.experiment.store`) and the next stages read it back. The
documents are pydantic models built from the per-trace types of the layers below (``Trace``,
``TraceMapping``, the score and judgement records, verdicts, classifications): validated when
read from the store (an invalid file is an error naming the file and the field, which fails
only its cell) and serialised as the JSON they always were when written.

The content hash of an ``agent_runs`` document (:meth:`AgentRunsDocument.digest`) is the
hash of that JSON, so it is the same for a document read back as for the one written; later
documents record it (``agent_runs_digest``) to be paired only with the very runs they were
computed from.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self

from pydantic import (
    BaseModel,
    ConfigDict,
    SerializerFunctionWrapHandler,
    ValidationError,
    model_serializer,
    model_validator,
)

from datagouv_eval_pipeline.core.benchmark import CellRecord
from datagouv_eval_pipeline.core.judges import (
    JudgementRecord,
    StoredClassification,
    StoredJudgeSpend,
)
from datagouv_eval_pipeline.core.metrics import ScoreRecord
from datagouv_eval_pipeline.core.semantic import CallMapping, TraceMapping
from datagouv_eval_pipeline.core.tasks import Reference
from datagouv_eval_pipeline.core.traces import Trace
from datagouv_eval_pipeline.pipeline.experiment.store import (
    content_digest,
    describe_validation_error,
)
from datagouv_eval_pipeline.pipeline.preflight import ValidationReport


class DocumentError(ValueError):
    """A stage document does not validate; the message names the file (or document) and field."""


class _Document(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    def to_json(self) -> dict[str, Any]:
        """The JSON form the run store holds."""
        return self.model_dump(mode="json")

    @classmethod
    def parse(cls, data: Mapping[str, Any] | Self, where: str) -> Self:
        """Validate a document read from the run store (a model is returned as it is).

        Args:
            data: The decoded JSON object.
            where: How to name it in errors (its file).

        Raises:
            DocumentError: Naming ``where``, the first invalid field and what was expected.
        """
        if isinstance(data, cls):
            return data
        try:
            return cls.model_validate(data)
        except ValidationError as error:
            raise DocumentError(describe_validation_error(where, error)) from None


# -------------------------------------------------------------------------- task specs


class TaskSpecsDocument(_Document):
    """The ``task_specs`` document: the problems of the specs, or their hashes and the cells.

    Attributes:
        errors: Every problem found (file and field); empty when the specs are valid.
        spec_hashes: Task id → spec hash (valid specs only).
        cells: The benchmark cell keys (valid specs only).
    """

    errors: list[str]
    spec_hashes: dict[str, str] | None = None
    cells: list[str] | None = None

    @model_serializer(mode="wrap")
    def _without_absent(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # Invalid specs give a document of their errors alone (as it always was).
        data: dict[str, Any] = handler(self)
        for name in ("spec_hashes", "cells"):
            if data.get(name) is None:
                data.pop(name, None)
        return data


# ------------------------------------------------------------------- catalog validation


class PreflightProbe(_Document):
    """Whether the catalog answered at all before the checks ran, and what it answered."""

    ok: bool
    detail: str


class CatalogValidationDocument(_Document):
    """The ``catalog_validation`` document: the resource pre-flight of every active task.

    Attributes:
        snapshot_id: The twin snapshot it checked (None: the live catalog).
        report: The pre-flight report.
        probe: The catalog probe (None in a report written before the probe existed).
    """

    snapshot_id: str | None
    report: ValidationReport
    probe: PreflightProbe | None = None

    @model_serializer(mode="wrap")
    def _without_absent(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        if data.get("probe") is None:
            data.pop("probe", None)
        return data


# ------------------------------------------------------------------------------- agent runs


class McpBuildRecord(_Document):
    """The real MCP server build a cell ran against."""

    spec: str
    code_digest: str
    revision: str | None


class AgentRunsDocument(_Document):
    """The ``agent_runs`` document of a cell: its record, its traces and their input hashes.

    Attributes:
        cell: The cell's identity (``Cell.to_record()``).
        snapshot_id: The snapshot the twin served (None when live).
        run_code: Fingerprint of the code the runs depend on.
        tool_lists: The MCP tool list by version, as fetched.
        mcp_build: The real server build, for a cell that runs one.
        input_hashes: ``<task>#<repeat>`` → the agent-run cache key.
        traces: One trace per (task, repeat), sorted.
    """

    cell: CellRecord
    snapshot_id: str | None
    run_code: str
    tool_lists: dict[str, Any]
    mcp_build: McpBuildRecord | None
    input_hashes: dict[str, str]
    traces: list[Trace]

    @classmethod
    def of(
        cls,
        cell: CellRecord | Mapping[str, Any],
        traces: list[Trace],
        *,
        snapshot_id: str | None = None,
        run_code: str = "",
    ) -> AgentRunsDocument:
        """A document of ``traces`` alone (no input hashes, tool lists or build).

        For tools and tests that make traces without running a cell.
        """
        return cls(
            cell=CellRecord.model_validate(cell),
            snapshot_id=snapshot_id,
            run_code=run_code,
            tool_lists={},
            mcp_build=None,
            input_hashes={},
            traces=traces,
        )

    def digest(self) -> str:
        """The content hash of the document, recorded by the stages computed from it."""
        return content_digest(self.to_json())

    def runs(self) -> list[tuple[str, int]]:
        """(task, repeat) of each trace, in order."""
        return [(trace.task_id, trace.repeat) for trace in self.traces]


# ------------------------------------------------------------------------------ mappings


class StoredTraceMapping(_Document):
    """The mapping of one trace, as the ``action_mappings`` document holds it (:class:`RunMapping`).

    ``TraceMapping.to_dict()``, plus, when the mapping stage had a classifier, the
    classifications of the calls the rules left undecided and what they cost.
    """

    registry_version: str
    mcp_version: str | None
    warnings: list[str]
    mapped_fraction: float | None
    counts: dict[str, int]
    calls: list[CallMapping]
    classifications: list[StoredClassification] | None = None
    judge_spend: StoredJudgeSpend | None = None

    @classmethod
    def of(cls, mapping: TraceMapping) -> StoredTraceMapping:
        """The entry of a mapping (without classifications)."""
        return cls.model_validate(mapping.to_dict())

    def trace_mapping(self) -> TraceMapping:
        """The mapping as the scorer and judges use it."""
        return TraceMapping(
            calls=tuple(self.calls),
            registry_version=self.registry_version,
            mcp_version=self.mcp_version,
            warnings=tuple(self.warnings),
        )

    @model_serializer(mode="wrap")
    def _without_absent(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # A mapping made without a classifier has neither key (as the document always had).
        data: dict[str, Any] = handler(self)
        for name in ("classifications", "judge_spend"):
            if data.get(name) is None:
                data.pop(name, None)
        return data


class RunMapping(_Document):
    """What the ``action_mappings`` stage made of one run of the cell."""

    task_id: str
    repeat: int
    mapping: StoredTraceMapping


class ActionMappingsDocument(_Document):
    """The ``action_mappings`` document of a cell: the mapping of each run, in trace order.

    Documents written before the mappings were kept per run hold two parallel lists (``runs``,
    ``mappings``); they are read into :attr:`results` (lists of different lengths are an error
    naming them).

    Attributes:
        cell: The cell record.
        agent_runs_digest: The digest of the ``agent_runs`` document it was computed from.
        results: One entry per trace of the ``agent_runs`` document, in its order.
        unmapped_calls: Calls the rules left undecided.
        classifier: The judge id that classified them (None: the judge stage does).
        classified_calls: Calls the classifier decided (with a classifier only).
        judge_spend: What the classifier cost (with a classifier only).
    """

    cell: CellRecord
    agent_runs_digest: str
    results: list[RunMapping]
    unmapped_calls: int
    classifier: str | None
    classified_calls: int | None = None
    judge_spend: StoredJudgeSpend | None = None

    @model_validator(mode="before")
    @classmethod
    def _from_parallel_lists(cls, data: Any) -> Any:
        return _results_from_parallel_lists(data, {"mappings": "mapping"})

    @model_serializer(mode="wrap")
    def _without_absent(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        if self.classifier is None:
            data.pop("classified_calls", None)
            data.pop("judge_spend", None)
        return data

    def runs(self) -> list[tuple[str, int]]:
        """(task, repeat) of each mapping, in order."""
        return [(result.task_id, result.repeat) for result in self.results]


def _results_from_parallel_lists(data: Any, lists: Mapping[str, str]) -> Any:
    """A document of an older shape (``runs`` and parallel ``lists``) as one result per run.

    Args:
        data: The decoded document (returned as it is when it is not of the older shape).
        lists: The name of each parallel list → the field of a result it fills.

    Raises:
        ValueError: A part is not a list, or the lists differ in length (naming them).
    """
    if not isinstance(data, Mapping) or "results" in data or "runs" not in data:
        return data
    old = dict(data)
    names = ["runs", *lists]
    parts = [old.pop(name, None) for name in names]
    named = f"{', '.join(names[:-1])} and {names[-1]}"
    if not all(isinstance(part, list) for part in parts):
        raise ValueError(f"{named} must be lists (a document of an older shape)")
    lengths = [len(part) for part in parts]
    if len(set(lengths)) != 1:
        raise ValueError(
            f"{named} differ in length ({', '.join(map(str, lengths))}): one entry per run expected"
        )
    runs, *values = parts
    old["results"] = [
        {"task_id": run[0], "repeat": run[1], **dict(zip(lists.values(), entry, strict=True))}
        if isinstance(run, list | tuple) and len(run) == 2
        else run  # fails validation, naming the entry
        for run, *entry in zip(runs, *values, strict=True)
    ]
    return old


# ------------------------------------------------------------------------------- judging


class RunResult(_Document):
    """What the ``judge_scores`` stage found about one run of the cell."""

    task_id: str
    repeat: int
    judgement: JudgementRecord | None
    """The judge's verdicts (None: not judged, e.g. the run did not finish)."""
    score: ScoreRecord | None
    """The deterministic scores (None: not scored)."""


class JudgeScoresDocument(_Document):
    """The ``judge_scores`` document of a cell: the judgement and scores of each run.

    Documents written before the results were kept per run hold three parallel lists
    (``runs``, ``judgements``, ``scores``); they are read into :attr:`results` (lists of different
    lengths are an error naming them).

    Attributes:
        cell: The cell record.
        agent_runs_digest: The digest of the ``agent_runs`` document it was computed from.
        judge_id: The judge.
        references: The expected values recomputed for the run, of the tasks it holds.
        results: One entry per trace of the ``agent_runs`` document, in its order.
    """

    cell: CellRecord
    agent_runs_digest: str
    judge_id: str
    references: list[Reference]
    results: list[RunResult]

    @model_validator(mode="before")
    @classmethod
    def _from_parallel_lists(cls, data: Any) -> Any:
        return _results_from_parallel_lists(data, {"judgements": "judgement", "scores": "score"})

    def runs(self) -> list[tuple[str, int]]:
        """(task, repeat) of each result, in order."""
        return [(result.task_id, result.repeat) for result in self.results]
