"""Human review: export a sample of answers to annotate, import the annotations as calibration.

**Export.** A *run* is a directory of trace JSON files (searched recursively; JSON files that are
not traces are skipped). From each run, ``per_run`` traces are drawn with a seeded generator:
about ``passed_share`` of them among the traces that *passed every check* (no metric answer
check failed and every criterion the deterministic judge scored passed), because an evaluator
that only reviews failures never learns what the checks wrongly let through; the rest among
the others. Each drawn trace gives one row per criterion of its task (both tiers), with the
deterministic judge's outcome, and empty ``human_verdict`` / ``human_note`` columns. The file is
CSV (opens in a spreadsheet) or JSONL, by its suffix.

**Import.** Rows whose ``human_verdict`` is ``pass`` or ``fail`` become calibration items
(``task_specs/calibration/<file>.yml``); blank verdicts are skipped. An item is a ``near_miss``
when the reviewer disagrees with the deterministic outcome it was exported with. The criterion
hash travels with the row, so an annotation of a criterion edited since the export is refused.
"""

from __future__ import annotations

import csv
import json
import random
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from datagouv_eval_pipeline.judges.calibration import (
    CalibrationError,
    CalibrationFile,
    CalibrationItem,
    EvidenceItem,
    criterion_sha,
)
from datagouv_eval_pipeline.judges.deterministic import DeterministicJudge
from datagouv_eval_pipeline.judges.protocol import tool_evidence
from datagouv_eval_pipeline.judges.render import clip
from datagouv_eval_pipeline.judges.verdict import outcome
from datagouv_eval_pipeline.metrics.catalog import CatalogLookup, with_catalog_slugs
from datagouv_eval_pipeline.metrics.scorer import score_trace
from datagouv_eval_pipeline.tasks.spec import TaskSpec
from datagouv_eval_pipeline.traces import Trace

REVIEW_COLUMNS: tuple[str, ...] = (
    "sample_id",
    "run",
    "trace_file",
    "task_id",
    "criterion_index",
    "criterion_tier",
    "criterion_sha",
    "criterion",
    "question",
    "answer",
    "passed_every_check",
    "judge_outcome",
    "judge_reason",
    "human_verdict",
    "human_note",
)
EVIDENCE_CALLS = 12
EVIDENCE_CHARS = 1500


@dataclass(frozen=True, slots=True)
class ReviewRow:
    """One (answer, criterion) row of a review file (see ``REVIEW_COLUMNS``)."""

    sample_id: str
    run: str
    trace_file: str
    task_id: str
    criterion_index: int
    criterion_tier: str
    criterion_sha: str
    criterion: str
    question: str
    answer: str
    passed_every_check: bool
    judge_outcome: str
    judge_reason: str
    human_verdict: str = ""
    human_note: str = ""


@dataclass(frozen=True, slots=True)
class _Candidate:
    path: Path
    trace: Trace
    passed_all: bool


def find_traces(run_dir: Path) -> tuple[list[tuple[Path, Trace]], list[Path]]:
    """The traces under a run directory, and the JSON files that are not traces."""
    traces: list[tuple[Path, Trace]] = []
    skipped: list[Path] = []
    for path in sorted(run_dir.rglob("*.json")):
        try:
            traces.append((path, Trace.model_validate_json(path.read_text(encoding="utf-8"))))
        except (ValidationError, OSError, UnicodeDecodeError):
            skipped.append(path)
    return traces, skipped


def _passed_every_check(
    task: TaskSpec, trace: Trace, catalog: CatalogLookup | None
) -> tuple[bool, dict[int, Any]]:
    checks = score_trace(task, trace, catalog=catalog).checks
    task = with_catalog_slugs(task, catalog)
    judge = DeterministicJudge()
    evidence = tool_evidence(trace)
    verdicts = {
        index: judge.criterion_sync(
            task.prompt, trace.answer, criterion, evidence, task=task, cited_urls=trace.cited_urls
        )
        for index, criterion in enumerate(task.criteria("optimal"))
    }
    no_failed_check = all(check.passed is not False for check in checks.values())
    scored = [v for v in verdicts.values() if outcome(v) != "unscored"]
    passed = no_failed_check and all(outcome(v) == "pass" for v in scored)
    return passed, verdicts


def review_sample(
    runs: Mapping[str, Path],
    tasks: Mapping[str, TaskSpec],
    *,
    per_run: int,
    seed: int = 0,
    passed_share: float = 0.25,
    catalog: CatalogLookup | None = None,
) -> tuple[list[ReviewRow], list[str]]:
    """Draw ``per_run`` traces per run and return their review rows and notices.

    Args:
        runs: Run name → directory of trace files.
        tasks: Task specs by id.
        per_run: Traces drawn per run.
        seed: Seed of the draw (the same seed gives the same sample).
        passed_share: Share of the draw taken among traces that passed every check (at least
            one when any exists and ``passed_share`` > 0).
        catalog: The catalog the runs used (slug ↔ id), for the checks.

    Returns:
        The rows and notices (skipped files, unknown tasks, short runs).
    """
    if per_run < 1:
        raise ValueError("per_run must be at least 1")
    if not 0.0 <= passed_share <= 1.0:
        raise ValueError("passed_share must be within [0, 1]")
    rows: list[ReviewRow] = []
    notices: list[str] = []
    for run, directory in sorted(runs.items()):
        found, skipped = find_traces(directory)
        if skipped:
            notices.append(f"{run}: {len(skipped)} JSON file(s) that are not traces skipped")
        candidates: list[_Candidate] = []
        verdicts_of: dict[Path, dict[int, Any]] = {}
        for path, trace in found:
            task = tasks.get(trace.task_id)
            if task is None:
                notices.append(f"{path}: unknown task {trace.task_id!r}, skipped")
                continue
            passed, verdicts = _passed_every_check(task, trace, catalog)
            verdicts_of[path] = verdicts
            candidates.append(_Candidate(path, trace, passed))
        rng = random.Random(f"{seed}:{run}")
        passed_pool = [c for c in candidates if c.passed_all]
        other_pool = [c for c in candidates if not c.passed_all]
        want_passed = round(per_run * passed_share)
        if passed_share > 0 and passed_pool:
            want_passed = max(1, want_passed)
        take_passed = min(want_passed, len(passed_pool))
        take_other = min(per_run - take_passed, len(other_pool))
        take_passed = min(per_run - take_other, len(passed_pool))  # fill from passed if short
        chosen = rng.sample(passed_pool, take_passed) + rng.sample(other_pool, take_other)
        if len(chosen) < per_run:
            notices.append(f"{run}: only {len(chosen)} trace(s) available for {per_run} asked")
        for candidate in sorted(chosen, key=lambda c: str(c.path)):
            task = tasks[candidate.trace.task_id]
            n_minimal = len(task.evaluation_criteria.minimal)
            relative = candidate.path.relative_to(directory).with_suffix("")
            sample_id = f"{run}/{relative.as_posix()}"
            for index, criterion in enumerate(task.criteria("optimal")):
                verdict = verdicts_of[candidate.path][index]
                rows.append(
                    ReviewRow(
                        sample_id=sample_id,
                        run=run,
                        trace_file=str(candidate.path),
                        task_id=task.task_id,
                        criterion_index=index,
                        criterion_tier="minimal" if index < n_minimal else "optimal",
                        criterion_sha=criterion_sha(criterion.criteria),
                        criterion=" ".join(criterion.criteria.split()),
                        question=task.prompt,
                        answer=candidate.trace.answer,
                        passed_every_check=candidate.passed_all,
                        judge_outcome=outcome(verdict),
                        judge_reason=verdict.reason,
                    )
                )
    return rows, notices


def write_review(rows: Sequence[ReviewRow], path: Path) -> None:
    """Write rows as CSV, or JSONL when the path ends in ``.jsonl``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".jsonl":
        with path.open("w", encoding="utf-8") as handle:
            for row in rows:
                handle.write(json.dumps(asdict(row), ensure_ascii=False) + "\n")
        return
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(REVIEW_COLUMNS))
        writer.writeheader()
        for row in rows:
            writer.writerow(asdict(row))


def read_review(path: Path) -> list[dict[str, str]]:
    """Read an annotated review file (CSV or JSONL) as dicts of strings."""
    if path.suffix == ".jsonl":
        records = []
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if line.strip():
                try:
                    data = json.loads(line)
                except json.JSONDecodeError as error:
                    raise CalibrationError([f"{path}:{number}: not JSON: {error}"]) from error
                records.append({k: "" if v is None else str(v) for k, v in data.items()})
        return records
    with path.open(encoding="utf-8", newline="") as handle:
        return [dict(row) for row in csv.DictReader(handle)]


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:60] or "x"


def _evidence(trace_file: str) -> list[EvidenceItem]:
    path = Path(trace_file)
    if not trace_file or not path.is_file():
        return []
    try:
        trace = Trace.model_validate_json(path.read_text(encoding="utf-8"))
    except (ValidationError, OSError):
        return []
    return [
        EvidenceItem(
            tool=item.tool,
            arguments=dict(item.arguments),
            result=clip(item.result, EVIDENCE_CHARS),
            error=item.errored,
        )
        for item in tool_evidence(trace)[:EVIDENCE_CALLS]
    ]


@dataclass(frozen=True, slots=True)
class ImportResult:
    """What an import did.

    Attributes:
        added: Items written.
        skipped_blank: Rows without a human verdict.
        skipped_existing: Rows whose item id already exists in the target.
    """

    added: int
    skipped_blank: int
    skipped_existing: int


def import_review(
    rows: Iterable[Mapping[str, str]],
    tasks: Mapping[str, TaskSpec],
    target: Path,
    *,
    origin: str,
) -> ImportResult:
    """Append annotated rows to a calibration file (created when missing).

    Raises:
        CalibrationError: A row with an invalid verdict, an unknown task or criterion, or a
            criterion edited since the export (nothing is written then).
    """
    problems: list[str] = []
    existing: list[CalibrationItem] = []
    if target.exists():
        data = yaml.safe_load(target.read_text(encoding="utf-8"))
        try:
            existing = CalibrationFile.model_validate(data).items
        except ValidationError as error:
            raise CalibrationError([f"{target}: not a calibration file: {error}"]) from error
    known_ids = {item.id for item in existing}
    added: list[CalibrationItem] = []
    blank = duplicate = 0
    for number, row in enumerate(rows, start=2):  # row 1 is the CSV header
        where = f"{origin}: row {number}"
        verdict = (row.get("human_verdict") or "").strip().lower()
        if not verdict:
            blank += 1
            continue
        if verdict not in ("pass", "fail"):
            problems.append(
                f"{where}: human_verdict: expected 'pass', 'fail' or blank, got {verdict!r}"
            )
            continue
        task = tasks.get(row.get("task_id", ""))
        if task is None:
            problems.append(f"{where}: task_id: unknown task {row.get('task_id')!r}")
            continue
        try:
            index = int(row.get("criterion_index", ""))
        except ValueError:
            problems.append(f"{where}: criterion_index: expected an integer")
            continue
        criteria = task.criteria("optimal")
        if not 0 <= index < len(criteria):
            problems.append(
                f"{where}: criterion_index: {task.task_id} has {len(criteria)} criteria"
            )
            continue
        sha = criterion_sha(criteria[index].criteria)
        if row.get("criterion_sha") != sha:
            problems.append(
                f"{where}: criterion_sha: the criterion changed since the export "
                f"(now {sha}); re-review it against the current text"
            )
            continue
        item_id = f"review-{_slug(row.get('sample_id', ''))}-c{index}"
        if item_id in known_ids:
            duplicate += 1
            continue
        exported = row.get("judge_outcome", "")
        near_miss = exported in ("pass", "fail") and exported != verdict
        try:
            item = CalibrationItem(
                id=item_id,
                task_id=task.task_id,
                criterion=index,
                criterion_sha=sha,
                answer=row.get("answer", ""),
                human="pass" if verdict == "pass" else "fail",
                kind="near_miss" if near_miss else ("pass" if verdict == "pass" else "fail"),
                note=(row.get("human_note") or "").strip(),
                tool_evidence=_evidence(row.get("trace_file", "")),
                origin=f"review:{origin}",
            )
        except ValidationError as error:
            problems.append(f"{where}: {error}")
            continue
        known_ids.add(item_id)
        added.append(item)
    if problems:
        raise CalibrationError(problems)
    if added:
        document = CalibrationFile(version=1, items=[*existing, *added])
        target.parent.mkdir(parents=True, exist_ok=True)
        header = (
            "# Calibration items imported from human review (datagouv-eval judge import-review).\n"
        )
        body = yaml.safe_dump(
            document.model_dump(mode="json", exclude_defaults=True),
            sort_keys=False,
            allow_unicode=True,
            width=100,
        )
        target.write_text(header + body, encoding="utf-8")
    return ImportResult(len(added), blank, duplicate)
