"""Blind review: draw a stratified sample of an experiment, and import what was labelled.

**Sample** (:func:`draw_sample`). From the warehouse, the runs of one experiment (the latest by
default) that produced an answer are put in three **outcome strata** by the automated checks
and decided criteria they failed (:data:`OUTCOMES`): ``passed`` (none), ``near_miss`` (exactly
one) and ``failed`` (two or more): a reviewer who sees only failures never learns what the
checks wrongly let through, and near misses are where a judge errs most. The strata share the
sample equally (round-robin; a stratum with too few runs leaves its share to the others); within
one, runs are drawn round-robin over capability set × expected behaviour (answer or decline)
with a seeded generator, so code and MCP cells and decline tasks are all in it when the
experiment has them. The drawn runs are then shuffled: their order says nothing of their
stratum. The file's header and ``strata`` give each stratum's size (runs in the experiment,
runs drawn), never which run is in which.

The sample is **blind**: it shows the question, the answer, the tool calls and the mapped
action instances, and nothing of the judge's verdict (no outcome, score, reason, judge id, nor
the stratum of a run). Each drawn run asks the reviewer:

* the **rubric** of the answer (:data:`RUBRIC`): right data, right number, period and unit,
  caveats, citation, nothing invented, concise (``pass``, ``fail`` or ``n/a``);
* **verdict labels**: every criterion of both tiers, up to :data:`ARGUMENT_LABELS` argument
  questions, the trajectory of both tiers and :data:`MODE_LABELS` failure modes (alternating
  tiers), each one question to answer ``pass`` or ``fail``.

The file is YAML: the reviewer fills ``human`` (``pass`` / ``fail``) and ``note`` (one line: why)
and says who labelled: ``labeller`` (a name or an email) and ``human`` (true only when a person
labelled; a model or a program is false). ``method`` is ``blind-review``.

**Import** (:func:`read_review`, :func:`judge_outcomes`, :func:`calibration_document`,
:func:`draft_tasks`). The judge's verdict on each label is looked up only now, in the warehouse
by the run and the verdict's name (:func:`judge_outcomes`). The labels become rows of
``eval.review_labels`` (with the labeller, the method and that verdict); the verdict labels
become a version-2 calibration file (:mod:`~datagouv_eval_pipeline.core.judges.calibration`) with
the
review's provenance, an item being a ``near_miss`` where the label and the judge disagree; each
run whose rubric has a ``fail`` becomes a draft task (``meta.status: draft``) for a maintainer to
turn into a regression question.
"""

from __future__ import annotations

import json
import random
import re
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from datagouv_eval_pipeline.base.yaml_loading import safe_load
from datagouv_eval_pipeline.core.judges import (
    TRAJECTORY_PASS_SCORE,
    CalibrationError,
    CalibrationFile,
    CalibrationItem,
    EvidenceItem,
    FailureMode,
    InstanceItem,
    LabelProvenance,
    Sample,
    VerdictKind,
    clip,
    criterion_sha,
    target_sha,
)
from datagouv_eval_pipeline.core.tasks import TaskSpec, Tier
from datagouv_eval_pipeline.pipeline.warehouse.schema import SCHEMA

if TYPE_CHECKING:
    import duckdb


RUBRIC: dict[str, str] = {
    "right_data": "Does the answer use the right dataset or source for the question?",
    "right_number": "Is the figure (or list, or fact) it gives the right one?",
    "period_and_unit": "Are the period, place and unit of the figure the asked ones, and said?",
    "caveats": "Does it state the caveats that matter (size, access, freshness, limits)?",
    "citation": "Does it cite the source so the user can check (id, page or link)?",
    "nothing_invented": "Is nothing in it invented (ids, numbers, facts not in the tools)?",
    "concise": "Is it short and to the point for the user who asked?",
}
"""The rubric of one answer (the seed chapter on review): name → the question asked."""

ARGUMENT_LABELS = 3
"""Argument verdicts asked per run (at most)."""
MODE_LABELS = 4
"""Failure modes asked per run."""
EVIDENCE_CHARS = 8000
"""Tool results are clipped to this in the review file and the calibration samples."""
DRAFT_FIRST_NUMBER = 9001
"""Draft tasks from reviews take ids from ``task_9001`` up, away from the curated tasks'."""

OUTCOMES: tuple[str, ...] = ("passed", "near_miss", "failed")
"""The outcome strata: no, exactly one, or two or more failed checks and decided criteria."""

RubricValue = Literal["", "pass", "fail", "n/a"]
HumanValue = Literal["", "pass", "fail"]


class _Doc(BaseModel):
    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)


class RubricAnswer(_Doc):
    """One rubric question's answer."""

    human: RubricValue = ""
    note: str = ""


class ReviewLabel(_Doc):
    """One verdict label: a judge question, for the labeller to answer blind."""

    label: str
    """The verdict's name in ``eval.verdicts`` (``criterion:0``, ``trajectory``, a mode...)."""
    verdict_kind: VerdictKind
    tier: Tier
    question: str
    """What the labeller decides, in words."""
    human: HumanValue = ""
    note: str = ""
    criterion: int | None = None
    required_index: int | None = None
    candidate: int | None = None
    mode: FailureMode | None = None
    sha: str = ""
    """The hash of what is judged (criterion text, required action or chain)."""


class ReviewCall(_Doc):
    """A tool call of the run, for reading and as calibration evidence."""

    tool: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    result: str = ""
    errored: bool = False


class ReviewSample(_Doc):
    """One drawn run."""

    sample_id: str
    run_id: str
    cell_key: str
    task_id: str
    repeat_index: int
    capability_set: str
    mcp_version: str | None = None
    model: str
    language: str = "fr"
    expected_behaviour: str
    question: str
    answer: str
    tool_calls: list[ReviewCall] = Field(default_factory=list)
    instances: list[InstanceItem] = Field(default_factory=list)
    rubric: dict[str, RubricAnswer]
    labels: list[ReviewLabel]


class Stratum(_Doc):
    """One outcome stratum's size."""

    runs: int
    """Runs of the experiment in the stratum."""
    drawn: int
    """Runs of the sample drawn from it."""


class ReviewFile(_Doc):
    """A blind review file: the sample of one experiment, to be labelled."""

    version: Literal[2] = 2
    experiment_id: str
    drawn_at: str
    seed: int
    labeller: str = ""
    """Who labelled: a name or an email (required at import)."""
    human: bool | None = None
    """True only when a person labelled (required at import)."""
    method: Literal["blind-review"] = "blind-review"
    """How: the judge's verdicts were not shown."""
    strata: dict[str, Stratum] = Field(default_factory=dict)
    """Each outcome stratum's size (:data:`OUTCOMES`); not which run is in which."""
    rubric_questions: dict[str, str] = Field(default_factory=lambda: dict(RUBRIC))
    samples: list[ReviewSample]

    def provenance(self) -> LabelProvenance:
        """Who labelled and how.

        Raises:
            ReviewError: No labeller, or not said whether a person labelled.
        """
        problems = []
        if not self.labeller.strip():
            problems.append("labeller: say who labelled (a name or an email; --labeller)")
        if self.human is None:
            problems.append(
                "human: say whether a person labelled (true) or not (false; --human/--not-human)"
            )
        if problems:
            raise ReviewError("\n".join(problems))
        assert self.human is not None
        return LabelProvenance(
            labeller=self.labeller.strip(),
            method=self.method,
            human=self.human,
            note=f"blind review of {len(self.samples)} runs of experiment {self.experiment_id}",
        )


class ReviewError(ValueError):
    """Why a sample cannot be drawn or a review file cannot be imported."""


# --- sample ------------------------------------------------------------------------------------


def _rows(conn: duckdb.DuckDBPyConnection, sql: str, params: Sequence[Any]) -> list[dict[str, Any]]:
    cursor = conn.execute(sql, list(params))
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, values, strict=True)) for values in cursor.fetchall()]


def _experiment(conn: duckdb.DuckDBPyConnection, experiment_id: str | None) -> str:
    if experiment_id is not None:
        row = conn.execute(
            f"SELECT count(*) FROM {SCHEMA}.experiments WHERE experiment_id = ?", [experiment_id]
        ).fetchone()
        if not row or not row[0]:
            raise ReviewError(f"no experiment {experiment_id!r} in the warehouse")
        return experiment_id
    row = conn.execute(
        f"SELECT experiment_id FROM {SCHEMA}.experiments "
        "ORDER BY recorded_at DESC, experiment_id DESC LIMIT 1"
    ).fetchone()
    if row is None:
        raise ReviewError(
            "the warehouse records no experiment: run `datagouv-eval experiment` first"
        )
    return str(row[0])


def _mode_question(mode: FailureMode) -> str:
    return {
        FailureMode.HALLUCINATION: "the answer states ids, numbers or facts no tool returned",
        FailureMode.MISINTERPRETATION: "the agent misread what the user asked",
        FailureMode.WRONG_RESOURCE: "the agent used the wrong dataset or resource",
        FailureMode.PARAMETER_ERROR: "a tool call failed because of wrong parameters",
        FailureMode.TOOL_OMISSION: "the agent skipped a tool it needed",
        FailureMode.EARLY_STOP: "the agent stopped before it had what it needed",
        FailureMode.REDUNDANT_LOOP: "the agent repeated the same call without progress",
        FailureMode.MISSING_CAVEAT: "the answer omits a caveat the user needed",
        FailureMode.NO_FALLBACK: "after a failure the agent tried no other way",
    }[mode]


def _labels(
    task: TaskSpec,
    verdicts: Sequence[Mapping[str, Any]],
    instances: Sequence[InstanceItem],
    rng: random.Random,
    mode_tier: Tier,
) -> list[ReviewLabel]:
    n_minimal = len(task.evaluation_criteria.minimal)
    criteria = task.criteria("optimal")
    labels: list[ReviewLabel] = []
    arguments: list[ReviewLabel] = []
    modes: list[ReviewLabel] = []
    for v in verdicts:
        if v["inherited"]:
            continue
        tier: Tier = v["tier"]
        # Only what is asked: nothing of the verdict (outcome, score, reason, judge) is shown.
        common = {"label": v["name"], "tier": tier}
        kind = v["kind"]
        if kind == "criterion":
            index = int(str(v["name"]).split(":")[1])
            if index >= len(criteria):
                continue
            text = " ".join(criteria[index].criteria.split())
            labels.append(
                ReviewLabel(
                    verdict_kind="criterion",
                    question=f"Does the answer meet this criterion? {text}",
                    criterion=index,
                    sha=criterion_sha(criteria[index].criteria),
                    **{**common, "tier": "minimal" if index < n_minimal else "optimal"},
                )
            )
        elif kind == "arguments":
            _, required, action, candidate = str(v["name"]).split(":", 3)
            r_index, c_index = int(required), int(candidate)
            level = task.chain(tier)
            if r_index >= len(level.required_actions) or c_index >= len(instances):
                continue
            wanted = level.required_actions[r_index]
            spec = "; ".join(
                f"{a.name} = {a.strict_value!r}"
                if a.strict_value is not None
                else f"{a.name}: {' '.join((a.criteria or '').split())}"
                for a in wanted.args
            )
            got = instances[c_index]
            arguments.append(
                ReviewLabel(
                    verdict_kind="arguments",
                    question=(
                        f"Does instance {c_index} ({got.action} "
                        f"{json.dumps(got.args, ensure_ascii=False)}"
                        f"{', errored' if got.errored else ''}) satisfy the required {action} "
                        f"({spec or 'no argument constraint'})?"
                    ),
                    required_index=r_index,
                    candidate=c_index,
                    sha=target_sha(task, tier, r_index),
                    **common,
                )
            )
        elif kind == "trajectory":
            chain = task.chain(tier).chain
            labels.append(
                ReviewLabel(
                    verdict_kind="trajectory",
                    question=(
                        f"Did the agent take the {tier} chain's steps in order ({chain}), at "
                        "most one minor step missing?"
                    ),
                    sha=target_sha(task, tier),
                    **common,
                )
            )
        elif kind == "failure_mode" and tier == mode_tier:
            mode = FailureMode(str(v["name"]))
            modes.append(
                ReviewLabel(
                    verdict_kind="failure_mode",
                    question=(
                        f"Is the run free of {mode.value} ({_mode_question(mode)}), judged "
                        f"against the {tier} tier?"
                    ),
                    mode=mode,
                    **common,
                )
            )
    rng.shuffle(arguments)
    rng.shuffle(modes)
    return labels + arguments[:ARGUMENT_LABELS] + modes[:MODE_LABELS]


def draw_sample(
    conn: duckdb.DuckDBPyConnection,
    tasks: Mapping[str, TaskSpec],
    *,
    runs: int,
    seed: int = 0,
    experiment_id: str | None = None,
) -> ReviewFile:
    """Draw a stratified sample of an experiment's runs from the warehouse (module docstring).

    Raises:
        ReviewError: No experiment, or no run of it with an answer to review (saying why).
    """
    if runs < 1:
        raise ReviewError("runs must be at least 1")
    experiment = _experiment(conn, experiment_id)
    history = _rows(
        conn,
        f"SELECT status, count(*) AS n FROM {SCHEMA}.runs_history WHERE experiment_id = ? "
        "GROUP BY status ORDER BY status",
        [experiment],
    )
    # The cell tables hold each cell's latest load: the experiment's runs are those whose
    # history row is of this experiment and whose cell was not loaded again since.
    candidates = _rows(
        conn,
        f"""
        SELECT r.run_id, r.cell_key, r.task_id, r.repeat_index, r.capability_set,
               r.mcp_version, r.model_name, r.answer, t.language, t.expected_behaviour,
               (
                   SELECT count(DISTINCT v.kind || v.name) FROM {SCHEMA}.verdicts AS v
                   WHERE v.run_id = r.run_id AND v.kind IN ('check', 'criterion')
                     AND v.status = 'ok' AND v.passed = false
               ) AS failed_checks
        FROM {SCHEMA}.runs AS r
        JOIN {SCHEMA}.runs_history AS h
          ON h.experiment_id = ? AND h.cell_key = r.cell_key AND h.task_id = r.task_id
         AND h.repeat_index = r.repeat_index
        JOIN (SELECT task_id, any_value(language) AS language,
                     any_value(expected_behaviour) AS expected_behaviour
              FROM {SCHEMA}.tasks GROUP BY task_id) AS t ON t.task_id = r.task_id
        WHERE r.status = 'ok' AND r.judged
        ORDER BY r.run_id
        """,
        [experiment],
    )
    candidates = [c for c in candidates if c["task_id"] in tasks]
    if not candidates:
        counts = ", ".join(f"{row['n']} {row['status']}" for row in history) or "no runs"
        raise ReviewError(
            f"experiment {experiment} has no judged run with an answer to review ({counts} in "
            "eval.runs_history; its cells may have been reloaded by a later experiment, or "
            "every run was skipped or failed)"
        )
    rng = random.Random(seed)
    chosen, strata = stratified_draw(candidates, runs, rng)
    samples = []
    for number, run in enumerate(chosen, start=1):
        run_id = run["run_id"]
        calls = _rows(
            conn,
            f"SELECT tool_name, arguments, result, errored, tool_error FROM {SCHEMA}.tool_calls "
            "WHERE run_id = ? ORDER BY call_index",
            [run_id],
        )
        instances = [
            InstanceItem(
                action=row["action"],
                args=json.loads(row["args"] or "{}"),
                source_call_id=row["source_call_id"],
                source_tool=row["source_tool"],
                category=row["category"],
                confidence=row["confidence"],
                errored=bool(row["errored"]),
            )
            for row in _rows(
                conn,
                f"SELECT * FROM {SCHEMA}.action_instances WHERE run_id = ? ORDER BY instance_index",
                [run_id],
            )
        ]
        # Which questions to ask, never what the judge answered: names only.
        verdicts = _rows(
            conn,
            f"SELECT kind, name, tier, inherited FROM {SCHEMA}.verdicts WHERE run_id = ? "
            "AND kind IN ('criterion', 'arguments', 'trajectory', 'failure_mode') "
            "ORDER BY tier, kind, name",
            [run_id],
        )
        task = tasks[run["task_id"]]
        samples.append(
            ReviewSample(
                sample_id=f"s{number:03d}",
                run_id=run_id,
                cell_key=run["cell_key"],
                task_id=run["task_id"],
                repeat_index=run["repeat_index"],
                capability_set=run["capability_set"],
                mcp_version=run["mcp_version"],
                model=run["model_name"],
                language=run["language"],
                expected_behaviour=run["expected_behaviour"],
                question=task.prompt,
                answer=run["answer"],
                tool_calls=[
                    ReviewCall(
                        tool=row["tool_name"],
                        arguments=json.loads(row["arguments"] or "{}"),
                        result=clip(row["result"] or "", EVIDENCE_CHARS),
                        errored=bool(row["errored"] or row["tool_error"]),
                    )
                    for row in calls
                ],
                instances=instances,
                rubric={name: RubricAnswer() for name in RUBRIC},
                labels=_labels(
                    task, verdicts, instances, rng, "minimal" if number % 2 else "optimal"
                ),
            )
        )
    return ReviewFile(
        experiment_id=experiment,
        drawn_at=datetime.now(UTC).isoformat(timespec="seconds"),
        seed=seed,
        strata=strata,
        samples=samples,
    )


def outcome_of(failed_checks: int) -> str:
    """The outcome stratum of a run that failed this many checks and decided criteria."""
    return OUTCOMES[min(failed_checks, 2)]


def stratified_draw(
    candidates: Sequence[dict[str, Any]], runs: int, rng: random.Random
) -> tuple[list[dict[str, Any]], dict[str, Stratum]]:
    """Draw up to ``runs`` runs over the outcome strata (module docstring), shuffled."""
    pools: dict[str, list[dict[str, Any]]] = {}
    for outcome in OUTCOMES:
        mine = [c for c in candidates if outcome_of(int(c["failed_checks"])) == outcome]
        groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for c in mine:
            groups[f"{c['capability_set']}|{c['expected_behaviour']}"].append(c)
        for group in groups.values():
            rng.shuffle(group)
        # Round-robin over capability set x expected behaviour, within the outcome.
        order: list[dict[str, Any]] = []
        while any(groups.values()):
            for name in sorted(groups):
                if groups[name]:
                    order.append(groups[name].pop())
        pools[outcome] = order
    drawn: dict[str, int] = dict.fromkeys(OUTCOMES, 0)
    chosen: list[dict[str, Any]] = []
    while len(chosen) < min(runs, len(candidates)):
        for outcome in OUTCOMES:
            if drawn[outcome] < len(pools[outcome]) and len(chosen) < runs:
                chosen.append(pools[outcome][drawn[outcome]])
                drawn[outcome] += 1
    rng.shuffle(chosen)  # the order of the file says nothing of a run's stratum
    strata = {o: Stratum(runs=len(pools[o]), drawn=drawn[o]) for o in OUTCOMES}
    return chosen, strata


_HEADER = """\
# A blind review sample: nothing of the judge's verdicts is shown (they are looked up at import).
# Fill in `human` (pass / fail; the rubric also takes n/a) and `note` (one line: why) for each
# rubric question and label, set `labeller` (your name or email) and `human` (true if you are a
# person, false for a model or a program), then run
#   datagouv-eval review import {name}
# A failure mode label asks whether the run is FREE of the mode (pass = absent).
# Outcome strata (failed automated checks and decided criteria: passed 0, near_miss 1,
# failed 2+), drawn round-robin so that passes and near misses are labelled too, then shuffled:
{strata}
"""


def write_review(review: ReviewFile, path: Path) -> None:
    """Write a review file (YAML, with the instructions and the strata as a header)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    body = yaml.safe_dump(
        review.model_dump(mode="json"), sort_keys=False, allow_unicode=True, width=100
    )
    strata = "\n".join(
        f"#   {name}: {s.drawn} drawn of {s.runs} runs" for name, s in review.strata.items()
    )
    path.write_text(_HEADER.format(name=path.name, strata=strata) + body, encoding="utf-8")


def read_review(path: Path) -> ReviewFile:
    """Read a filled-in review file.

    Raises:
        ReviewError: Naming the file and each field that is not what was expected.
    """
    try:
        data = safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError, RecursionError) as error:
        raise ReviewError(f"{path}: cannot read: {error}") from None
    if isinstance(data, dict) and data.get("version") == 1:
        raise ReviewError(
            f"{path}: version 1 review files showed the judge's verdict beside each label; "
            "they cannot be imported as blind labels (draw a new sample with "
            "`datagouv-eval review sample`)"
        )
    try:
        return ReviewFile.model_validate(data)
    except ValidationError as error:
        lines = []
        for issue in error.errors():
            where = ".".join(str(part) for part in issue["loc"])
            lines.append(f"{path}: {where}: {issue['msg']}")
        raise ReviewError("\n".join(lines)) from None


# --- import ------------------------------------------------------------------------------------

OutcomeKey = tuple[str, str, str]
"""(run id, tier, label name) of a verdict label."""


def _outcome(row: Mapping[str, Any]) -> str:
    if row["status"] != "ok":
        return "unscored"
    if row["kind"] == "trajectory":
        if row["score"] is None:
            return "unscored"
        return "pass" if float(row["score"]) >= TRAJECTORY_PASS_SCORE else "fail"
    return "pass" if row["passed"] else "fail"


def judge_outcomes(conn: duckdb.DuckDBPyConnection, review: ReviewFile) -> dict[OutcomeKey, str]:
    """The judge's outcome (pass, fail or unscored) of each label, from ``eval.verdicts``.

    Looked up at import only, by the run and the verdict's name: the sample never showed it. A
    criterion label's tier is the criterion's (its verdict may be recorded in either tier). A
    label whose run's verdict is no longer in the warehouse (its cell was loaded again since)
    has no entry.
    """
    run_ids = sorted({s.run_id for s in review.samples})
    if not run_ids:
        return {}
    rows = _rows(
        conn,
        f"SELECT run_id, kind, name, tier, status, passed, score FROM {SCHEMA}.verdicts "
        "WHERE NOT inherited AND kind IN ('criterion', 'arguments', 'trajectory', "
        f"'failure_mode') AND run_id IN ({', '.join('?' for _ in run_ids)})",
        run_ids,
    )
    found: dict[OutcomeKey, str] = {}
    by_criterion: dict[tuple[str, str], str] = {}
    for row in rows:
        outcome = _outcome(row)
        found[(row["run_id"], row["tier"], row["name"])] = outcome
        if row["kind"] == "criterion":
            by_criterion[(row["run_id"], row["name"])] = outcome
    for sample in review.samples:
        for label in sample.labels:
            if label.verdict_kind == "criterion":
                decided = by_criterion.get((sample.run_id, label.label))
                if decided is not None:
                    found[(sample.run_id, label.tier, label.label)] = decided
    return found


@dataclass(frozen=True, slots=True)
class LabelRow:
    """One row of ``eval.review_labels`` (see the table's columns)."""

    review_id: str
    sample_id: str
    label: str
    tier: str
    experiment_id: str
    run_id: str
    cell_key: str
    task_id: str
    label_kind: str
    automated: str | None
    human: str
    note: str
    labeller: str
    method: str
    labeller_human: bool
    imported_at: datetime


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "x"


def label_rows(
    review: ReviewFile,
    review_id: str,
    *,
    imported_at: datetime,
    outcomes: Mapping[OutcomeKey, str],
) -> list[LabelRow]:
    """The filled-in rubric answers and labels as warehouse rows (blank ones are skipped).

    Args:
        review: The filled-in review (its provenance must be complete).
        review_id: The file's name and content hash.
        imported_at: When.
        outcomes: The judge's outcome of each label (:func:`judge_outcomes`).

    Raises:
        ReviewError: No labeller, or not said whether a person labelled.
    """
    provenance = review.provenance()
    rows: list[LabelRow] = []
    for sample in review.samples:

        def row(
            label: str, tier: str, kind: str, automated: str | None, human: str, note: str
        ) -> LabelRow:
            return LabelRow(
                review_id=review_id,
                sample_id=sample.sample_id,  # noqa: B023  (used within the iteration)
                label=label,
                tier=tier,
                experiment_id=review.experiment_id,
                run_id=sample.run_id,  # noqa: B023
                cell_key=sample.cell_key,  # noqa: B023
                task_id=sample.task_id,  # noqa: B023
                label_kind=kind,
                automated=automated,
                human=human,
                note=note.strip(),
                labeller=provenance.labeller,
                method=provenance.method,
                labeller_human=provenance.human,
                imported_at=imported_at,
            )

        for name, answer in sample.rubric.items():
            if answer.human:
                rows.append(row(f"rubric:{name}", "all", "rubric", None, answer.human, answer.note))
        for label in sample.labels:
            if label.human:
                rows.append(
                    row(
                        label.label,
                        label.tier,
                        label.verdict_kind,
                        outcomes.get((sample.run_id, label.tier, label.label)),
                        label.human,
                        label.note,
                    )
                )
    return rows


def check_review(review: ReviewFile, tasks: Mapping[str, TaskSpec], path: Path) -> None:
    """Every filled label has a rationale and still asks about the current task text.

    Raises:
        ReviewError: One line per problem (sample, label, field, what was expected).
    """
    problems: list[str] = []
    filled = 0
    for sample in review.samples:
        task = tasks.get(sample.task_id)
        if task is None:
            problems.append(f"{path}: {sample.sample_id}: task_id: unknown task {sample.task_id}")
            continue
        for name, answer in sample.rubric.items():
            if name not in RUBRIC:
                problems.append(f"{path}: {sample.sample_id}: rubric: unknown question {name!r}")
            filled += bool(answer.human)
        for label in sample.labels:
            where = f"{path}: {sample.sample_id}: {label.tier} {label.label}"
            if not label.human:
                continue
            filled += 1
            if not label.note.strip():
                problems.append(f"{where}: note: a one-line rationale is required")
            current = ""
            if label.verdict_kind == "criterion" and label.criterion is not None:
                criteria = task.criteria("optimal")
                if label.criterion < len(criteria):
                    current = criterion_sha(criteria[label.criterion].criteria)
            elif label.verdict_kind in ("arguments", "trajectory"):
                level = task.chain(label.tier)
                index = label.required_index
                if index is None or index < len(level.required_actions):
                    current = target_sha(task, label.tier, index)
            else:
                current = label.sha
            if current != label.sha:
                problems.append(
                    f"{where}: the task changed since the sample was drawn; re-draw the sample"
                )
    if not filled:
        problems.append(f"{path}: nothing is filled in (every `human` is blank)")
    if problems:
        raise ReviewError("\n".join(problems))


def calibration_document(
    review: ReviewFile, origin: str, outcomes: Mapping[OutcomeKey, str]
) -> CalibrationFile | None:
    """The filled verdict labels as a version-2 calibration file (None when there are none).

    The file carries the review's provenance (labeller, ``blind-review``, whether a person). An
    item is a ``near_miss`` when the label disagrees with the judge's outcome (looked up at
    import: ``outcomes``).

    Raises:
        ReviewError: No labeller, or not said whether a person labelled.
    """
    provenance = review.provenance()
    samples: list[Sample] = []
    items: list[CalibrationItem] = []
    prefix = _slug(review.experiment_id[:8])
    for sample in review.samples:
        labelled = [label for label in sample.labels if label.human]
        if not labelled:
            continue
        sample_id = f"{prefix}-{sample.sample_id}"
        samples.append(
            Sample(
                id=sample_id,
                task_id=sample.task_id,
                run_id=sample.run_id,
                experiment_id=review.experiment_id,
                answer=sample.answer,
                tool_evidence=[
                    EvidenceItem(
                        tool=c.tool, arguments=c.arguments, result=c.result, error=c.errored
                    )
                    for c in sample.tool_calls
                ],
                instances=sample.instances,
            )
        )
        for label in labelled:
            human: Literal["pass", "fail"] = "pass" if label.human == "pass" else "fail"
            automated = outcomes.get((sample.run_id, label.tier, label.label))
            near_miss = automated in ("pass", "fail") and automated != human
            items.append(
                CalibrationItem(
                    id=f"{sample_id}-{label.tier}-{_slug(label.label)}",
                    task_id=sample.task_id,
                    verdict_kind=label.verdict_kind,
                    sample=sample_id,
                    tier=None if label.verdict_kind == "criterion" else label.tier,
                    criterion=label.criterion,
                    criterion_sha=label.sha if label.verdict_kind == "criterion" else None,
                    required_index=label.required_index,
                    candidate=label.candidate,
                    mode=label.mode,
                    target_sha=(
                        label.sha if label.verdict_kind in ("arguments", "trajectory") else None
                    ),
                    human=human,
                    kind="near_miss" if near_miss else human,
                    note=label.note.strip(),
                    origin=f"review:{origin}",
                )
            )
    if not items:
        return None
    try:
        return CalibrationFile(version=2, provenance=provenance, samples=samples, items=items)
    except ValidationError as error:
        raise CalibrationError([f"{origin}: {error}"]) from error


def write_calibration_file(document: CalibrationFile, path: Path, *, source: str) -> None:
    """Write a calibration file with a header saying where it came from."""
    who = document.label_provenance()
    header = (
        f"# Calibration set: labels imported from the review {source} (`datagouv-eval review\n"
        f"# import`), method {who.method}, labelled by {who.labeller} "
        f"({'a person' if who.human else 'not a person'}). Items ask one judge question\n"
        "# of a sample (a run of the pipeline); see "
        "datagouv_eval_pipeline/core/judges/calibration.py\n"
        "# for the fields.\n"
    )
    data = document.model_dump(mode="json", exclude_defaults=True)
    # Every item names its kind, the default one too, so the file reads on its own.
    data["items"] = [
        {"id": item["id"], "task_id": item["task_id"], "verdict_kind": kind, **item}
        for item, kind in zip(data["items"], (i.verdict_kind for i in document.items), strict=True)
    ]
    body = yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(header + body, encoding="utf-8")


def failed_samples(review: ReviewFile) -> list[ReviewSample]:
    """Samples whose rubric has at least one ``fail``: the failures the suite should learn."""
    return [s for s in review.samples if any(a.human == "fail" for a in s.rubric.values())]


def draft_tasks(review: ReviewFile, task_dir: Path, *, source: str) -> list[tuple[Path, str]]:
    """One draft task (path, YAML text) per task with a failed sample, from the first free id.

    Several cells failing the same question make one draft (its header lists every failed run).
    The draft copies the task the runs failed (prompt, criteria, chain, sources) with
    ``meta.status: draft`` and a header saying what went wrong, for a maintainer to reword and
    activate as a regression question.
    """
    used = {
        int(p.stem.split("_")[1])
        for p in task_dir.glob("task_*.yml")
        if re.fullmatch(r"task_\d{4}", p.stem)
    }
    by_task: dict[str, list[ReviewSample]] = defaultdict(list)
    for sample in failed_samples(review):
        by_task[sample.task_id].append(sample)
    number = DRAFT_FIRST_NUMBER
    out: list[tuple[Path, str]] = []
    for source_task, samples in sorted(by_task.items()):
        while number in used:
            number += 1
        used.add(number)
        original = task_dir / f"{source_task}.yml"
        data = safe_load(original.read_text(encoding="utf-8"))
        task_id = f"task_{number:04d}"
        data["task_id"] = task_id
        data["version"] = 1
        data["task_name"] = f"Relecture : {data.get('task_name', source_task)}"[:200]
        data["meta"] = {**data.get("meta", {}), "status": "draft"}
        lines = [
            "# yaml-language-server: $schema=./task_spec.schema.json",
            f"# Draft from the review {source} (experiment {review.experiment_id}):",
            f"# {len(samples)} run(s) of {source_task} failed the rubric.",
        ]
        for sample in samples:
            failed = [name for name, answer in sample.rubric.items() if answer.human == "fail"]
            note = next((a.note.strip() for a in sample.rubric.values() if a.human == "fail"), "")
            lines.append(f"#   {sample.sample_id} {sample.cell_key}: {', '.join(failed)}")
            if note:
                lines.append(f"#     {note}")
        lines += [
            "# Reword the prompt (or narrow it to the failure), check the criteria, then set",
            "# meta.status to active.",
            "",
        ]
        body = yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100)
        out.append((task_dir / f"{task_id}.yml", "\n".join(lines) + body))
    return out
