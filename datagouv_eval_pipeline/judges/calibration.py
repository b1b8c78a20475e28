"""The calibration set: (answer, criterion) pairs with a human verdict, and judge agreement.

Files live in ``task_specs/calibration/*.yml``. Each item names a criterion of a real task by its
position in ``task.criteria("optimal")`` (minimal criteria first) together with a short hash of
the criterion's text, so that editing a task's criteria makes the stale items an error instead of
silently pairing a human verdict with another criterion.

Agreement (``docs/judges.md``):

* a judge's outcome on an item is ``pass``, ``fail`` or ``unscored``;
* ``coverage = scored / total``;
* ``accuracy = agreements / scored`` and Cohen's kappa are computed over the **scored** items
  only. Unscored items are never counted as disagreements: they are reported as a separate
  column of the confusion table and in the coverage. A judge that leaves everything hard unscored
  therefore shows a high accuracy *and* a low coverage; read both.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from datagouv_eval_pipeline.judges.protocol import Judge, ToolEvidence
from datagouv_eval_pipeline.judges.verdict import (
    JudgeSpend,
    Outcome,
    Verdict,
    judge_spend,
    outcome,
)
from datagouv_eval_pipeline.metrics.values import MetricValue
from datagouv_eval_pipeline.tasks.loader import PROJECT_ROOT
from datagouv_eval_pipeline.tasks.spec import Criterion, TaskSpec

CALIBRATION_DIR = PROJECT_ROOT / "task_specs" / "calibration"
"""Where the calibration files live."""

HumanVerdict = Literal["pass", "fail"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)


class EvidenceItem(_Strict):
    """A tool call shown to the judge with the answer (optional)."""

    tool: str = Field(min_length=1)
    arguments: dict[str, Any] = Field(default_factory=dict)
    result: str = ""
    error: bool = False


class CalibrationItem(_Strict):
    """One (answer, criterion) pair with its human verdict."""

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9_.-]*$")
    """Unique across all calibration files."""
    task_id: str = Field(pattern=r"^task_\d{4}$")
    criterion: int = Field(ge=0)
    """Position of the criterion in ``task.criteria("optimal")`` (minimal ones first)."""
    criterion_sha: str = Field(pattern=r"^[0-9a-f]{12}$")
    """:func:`criterion_sha` of the criterion's text, to detect edited criteria."""
    answer: str
    human: HumanVerdict
    """The human verdict: does the answer satisfy the criterion?"""
    kind: Literal["pass", "fail", "near_miss"]
    """``near_miss``: looks right to a shallow check but is not (or the reverse)."""
    note: str = ""
    """Why the human verdict is what it is."""
    cited_urls: list[str] | None = None
    tool_evidence: list[EvidenceItem] = Field(default_factory=list)
    origin: str = "written"
    """``written`` by the maintainers, or ``review:<file>`` when imported from a review sample."""


class CalibrationFile(_Strict):
    """One calibration YAML file."""

    version: Literal[1]
    items: list[CalibrationItem]


def criterion_sha(text: str) -> str:
    """The first 12 hex digits of sha256 of a criterion's text, whitespace-normalised."""
    return hashlib.sha256(" ".join(text.split()).encode("utf-8")).hexdigest()[:12]


@dataclass(frozen=True, slots=True)
class ResolvedItem:
    """A calibration item with its task and criterion.

    Attributes:
        item: The item as written.
        task: The task it refers to.
        criterion: The criterion it refers to.
        path: The file it came from.
    """

    item: CalibrationItem
    task: TaskSpec
    criterion: Criterion
    path: Path

    @property
    def evidence(self) -> tuple[ToolEvidence, ...]:
        """The item's tool evidence for the judge."""
        return tuple(
            ToolEvidence(f"cal_{i}", e.tool, e.arguments, e.result, e.error)
            for i, e in enumerate(self.item.tool_evidence, start=1)
        )


class CalibrationError(ValueError):
    """Problems in calibration files, one line each (file, item, field, what was expected)."""

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = list(problems)
        super().__init__("\n".join(self.problems))


def calibration_files(paths: Sequence[Path]) -> list[Path]:
    """The ``*.yml`` files named by files and directories."""
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            files.extend(sorted(p for p in path.iterdir() if p.suffix in {".yml", ".yaml"}))
        else:
            files.append(path)
    return files


def load_calibration(paths: Sequence[Path], tasks: Mapping[str, TaskSpec]) -> list[ResolvedItem]:
    """Load and resolve every calibration item, or report every problem at once.

    Raises:
        CalibrationError: Naming the file, the item id, the field and what was expected.
    """
    problems: list[str] = []
    resolved: list[ResolvedItem] = []
    seen: dict[str, Path] = {}
    files = calibration_files(paths)
    if not files:
        raise CalibrationError([f"{', '.join(map(str, paths))}: no calibration file (*.yml)"])
    for path in files:
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8"))
        except (OSError, yaml.YAMLError) as error:
            problems.append(f"{path}: cannot read: {error}")
            continue
        try:
            parsed = CalibrationFile.model_validate(data)
        except ValidationError as error:
            for issue in error.errors():
                loc = list(issue["loc"])
                where = ".".join(str(part) for part in loc)
                if len(loc) >= 2 and loc[0] == "items" and isinstance(loc[1], int):
                    items = data.get("items") if isinstance(data, dict) else None
                    if isinstance(items, list) and loc[1] < len(items):
                        entry = items[loc[1]]
                        if isinstance(entry, dict) and "id" in entry:
                            where += f" (item {entry['id']!r})"
                problems.append(f"{path}: {where}: {issue['msg']}")
            continue
        for item in parsed.items:
            prefix = f"{path}: item {item.id!r}"
            if item.id in seen:
                problems.append(f"{prefix}: duplicate id (also in {seen[item.id]})")
                continue
            seen[item.id] = path
            task = tasks.get(item.task_id)
            if task is None:
                problems.append(f"{prefix}: task_id: unknown task {item.task_id!r}")
                continue
            criteria = task.criteria("optimal")
            if item.criterion >= len(criteria):
                problems.append(
                    f"{prefix}: criterion: {item.task_id} has {len(criteria)} criteria "
                    f"(0..{len(criteria) - 1}), not {item.criterion}"
                )
                continue
            criterion = criteria[item.criterion]
            actual = criterion_sha(criterion.criteria)
            if actual != item.criterion_sha:
                problems.append(
                    f"{prefix}: criterion_sha: the criterion's text changed (expected "
                    f"{actual} for {' '.join(criterion.criteria.split())[:80]!r}); re-check the "
                    "human verdict, then update the hash"
                )
                continue
            resolved.append(ResolvedItem(item, task, criterion, path))
    if problems:
        raise CalibrationError(problems)
    return resolved


# --- agreement ---------------------------------------------------------------------------------


def cohen_kappa(pairs: Iterable[tuple[bool, bool]]) -> MetricValue:
    """Cohen's kappa of two binary raters: ``(p_o - p_e) / (1 - p_e)``.

    Undefined (None with the reason) for no pairs or when chance agreement is 1 (both raters gave
    one same label to every item, so agreement says nothing).
    """
    items = list(pairs)
    n = len(items)
    if n == 0:
        return MetricValue(None, "no scored items")
    observed = sum(1 for a, b in items if a == b) / n
    a_true = sum(1 for a, _ in items if a) / n
    b_true = sum(1 for _, b in items if b) / n
    expected = a_true * b_true + (1 - a_true) * (1 - b_true)
    if expected == 1:
        return MetricValue(None, "chance agreement is 1: both raters used a single label")
    return MetricValue((observed - expected) / (1 - expected))


@dataclass(frozen=True, slots=True)
class CalibrationRow:
    """One item's human verdict next to the judge's.

    Attributes:
        item_id: The item.
        task_id: Its task.
        criterion: Its criterion index.
        kind: pass / fail / near_miss.
        human: The human verdict.
        judge: The judge's outcome.
        verdict: The judge's verdict.
    """

    item_id: str
    task_id: str
    criterion: int
    kind: str
    human: HumanVerdict
    judge: Outcome
    verdict: Verdict

    @property
    def agrees(self) -> bool | None:
        """Whether the judge agrees; None when it did not score the item."""
        return None if self.judge == "unscored" else self.judge == self.human


@dataclass(frozen=True)
class CalibrationReport:
    """Agreement of one judge with the human verdicts.

    Attributes:
        judge_id: The judge.
        rows: One row per item.
        confusion: ``confusion[human][judge outcome]`` counts.
        total: Items.
        scored: Items the judge decided.
        coverage: ``scored / total``.
        accuracy: Agreements over scored items.
        kappa: Cohen's kappa over scored items.
        by_kind: Per item kind: total, scored, agreements.
        spend: Judge tokens and cost of the run.
    """

    judge_id: str
    rows: tuple[CalibrationRow, ...]
    confusion: dict[str, dict[str, int]]
    total: int
    scored: int
    coverage: MetricValue
    accuracy: MetricValue
    kappa: MetricValue
    by_kind: dict[str, dict[str, int]]
    spend: JudgeSpend = field(repr=False)

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "judge_id": self.judge_id,
            "total": self.total,
            "scored": self.scored,
            "coverage": self.coverage.to_json(),
            "accuracy": self.accuracy.to_json(),
            "kappa": self.kappa.to_json(),
            "confusion": self.confusion,
            "by_kind": self.by_kind,
            "judge_spend": self.spend.to_json(),
            "rows": [
                {
                    "id": row.item_id,
                    "task_id": row.task_id,
                    "criterion": row.criterion,
                    "kind": row.kind,
                    "human": row.human,
                    "judge": row.judge,
                    "agrees": row.agrees,
                    "reason": row.verdict.reason,
                    "error": row.verdict.error,
                }
                for row in self.rows
            ],
        }

    def render(self, show_disagreements: bool = True) -> str:
        """A plain-text report: figures, confusion table, per-kind counts, disagreements."""

        def fmt(value: MetricValue) -> str:
            return "n/a" if value.value is None else f"{value.value:.3f}"

        lines = [
            f"judge: {self.judge_id}",
            f"items: {self.total}  scored: {self.scored}  coverage: {fmt(self.coverage)}",
            f"accuracy (scored items): {fmt(self.accuracy)}"
            + (f"  ({self.accuracy.reason})" if self.accuracy.reason else ""),
            f"Cohen's kappa (scored items): {fmt(self.kappa)}"
            + (f"  ({self.kappa.reason})" if self.kappa.reason else ""),
            "",
            "confusion (rows: human, columns: judge)",
            f"{'':>12}{'pass':>10}{'fail':>10}{'unscored':>10}",
        ]
        for human in ("pass", "fail"):
            counts = self.confusion[human]
            lines.append(
                f"{'human ' + human:>12}{counts['pass']:>10}{counts['fail']:>10}"
                f"{counts['unscored']:>10}"
            )
        lines += ["", "by kind (total / scored / agree)"]
        for kind, counts in sorted(self.by_kind.items()):
            lines.append(
                f"  {kind:<10} {counts['total']:>4} / {counts['scored']:>4} / {counts['agree']:>4}"
            )
        spend = self.spend
        if spend.calls or spend.cache_hits:
            cost = "unknown" if spend.cost is None else f"{spend.cost:.4f} {spend.currency or ''}"
            lines += [
                "",
                f"judge spend: {spend.calls} model calls, {spend.cache_hits} cache hits, "
                f"{spend.input_tokens} in / {spend.output_tokens} out tokens, cost {cost}",
            ]
        else:
            lines += ["", "judge spend: no model calls"]
        if show_disagreements:
            wrong = [row for row in self.rows if row.agrees is False]
            if wrong:
                lines += ["", "disagreements:"]
                for row in wrong:
                    lines.append(
                        f"  {row.item_id}: human {row.human}, judge {row.judge} -- "
                        f"{row.verdict.reason[:140]}"
                    )
        return "\n".join(lines)


def agreement(judge_id: str, rows: Sequence[CalibrationRow]) -> CalibrationReport:
    """Compute the report's figures from rows (pure; see the module docstring)."""
    confusion = {h: {"pass": 0, "fail": 0, "unscored": 0} for h in ("pass", "fail")}
    by_kind: dict[str, dict[str, int]] = {}
    scored_pairs: list[tuple[bool, bool]] = []
    for row in rows:
        confusion[row.human][row.judge] += 1
        kind = by_kind.setdefault(row.kind, {"total": 0, "scored": 0, "agree": 0})
        kind["total"] += 1
        if row.judge != "unscored":
            kind["scored"] += 1
            kind["agree"] += int(row.judge == row.human)
            scored_pairs.append((row.human == "pass", row.judge == "pass"))
    total = len(rows)
    scored = len(scored_pairs)
    agreements = sum(1 for human, judged in scored_pairs if human == judged)
    return CalibrationReport(
        judge_id=judge_id,
        rows=tuple(rows),
        confusion=confusion,
        total=total,
        scored=scored,
        coverage=MetricValue(scored / total) if total else MetricValue(None, "no items"),
        accuracy=(
            MetricValue(agreements / scored)
            if scored
            else MetricValue(None, "the judge scored no item")
        ),
        kappa=cohen_kappa(scored_pairs),
        by_kind=by_kind,
        spend=judge_spend(row.verdict for row in rows),
    )


async def calibrate(judge: Judge, items: Sequence[ResolvedItem]) -> CalibrationReport:
    """Judge every calibration item (concurrently) and compare with the human verdicts."""
    verdicts = await asyncio.gather(
        *(
            judge.criterion(
                r.task.prompt,
                r.item.answer,
                r.criterion,
                r.evidence,
                task=r.task,
                cited_urls=r.item.cited_urls,
            )
            for r in items
        )
    )
    rows = [
        CalibrationRow(
            item_id=r.item.id,
            task_id=r.item.task_id,
            criterion=r.item.criterion,
            kind=r.item.kind,
            human=r.item.human,
            judge=outcome(verdict),
            verdict=verdict,
        )
        for r, verdict in zip(items, verdicts, strict=True)
    ]
    return agreement(judge.judge_id, rows)
