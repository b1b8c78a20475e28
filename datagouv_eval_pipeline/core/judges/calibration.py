"""The calibration set: judge questions with a human verdict, and judge agreement per kind.

Files live in ``task_specs/calibration/*.yml``, each versioned by its ``version`` field:

* version 1 (``criteria_v1.yml``): criterion items written by the maintainers, each carrying its
  answer (and optional tool evidence) inline;
* version 2 (files written by ``datagouv-eval review import``): ``samples`` hold what a run
  showed (answer, citations, tool calls with clipped results, the mapped action instances), and
  ``items`` ask one question of a sample, of one of the four verdict kinds the judges answer:
  ``criterion``, ``arguments`` (a required action against one candidate instance),
  ``trajectory`` (a tier's chain against the instances) and ``failure_mode`` (one mode in one
  tier). Every item of a version-2 file carries a one-line rationale (``note``).

**Provenance.** A file says who produced its labels and how (:class:`LabelProvenance`): the
``labeller`` (a name or an email), the ``method`` (:data:`LabelMethod`: ``written`` answers and
verdicts written together, ``verdict-shown`` labels given with the judge's verdict beside each
item, ``blind-review`` labels given before the judge's verdict could be seen) and ``human``
(true only when a person labelled). A file without it reads as unrecorded provenance: method
``written`` for version 1 and ``verdict-shown`` for version 2 (every review before blind
reviews showed the verdict), ``human: false``. Calibration can be restricted to one method
(:func:`select_labels`; ``--labels blind``), and records which it used.

Each item names what it judges by position and a short hash of its text (criterion text,
required action, chain), so that editing a task makes the stale items an error instead of
silently pairing a human verdict with another question.

A trajectory verdict is graded; it counts as ``pass`` when its score is at least
:data:`TRAJECTORY_PASS_SCORE` (the human question: "did the agent take the chain's steps in
order, at most one minor step missing?"). For failure modes, ``pass`` means the mode is absent,
as everywhere else.

Agreement (``docs/judges.md``):

* a judge's outcome on an item is ``pass``, ``fail`` or ``unscored``;
* ``coverage = scored / total``;
* ``accuracy = agreements / scored`` and Cohen's kappa are computed over the **scored** items
  only. Unscored items are never counted as disagreements: they are reported as a separate
  column of the confusion table and in the coverage. A judge that leaves everything hard unscored
  therefore shows a high accuracy *and* a low coverage; read both;
* kappa is refused (None with the reason ``fewer than 30 labelled items (n=12)``) on fewer than
  :data:`MIN_KAPPA_ITEMS` items, pooled or per kind: on a dozen items one disagreement moves it
  by 0.2;
* per verdict kind, kappa comes with n (scored items) and a 95 % bootstrap percentile interval
  (:func:`bootstrap_kappa`: items resampled with replacement, a seeded generator, resamples
  where kappa is undefined left out and counted).
"""

from __future__ import annotations

import asyncio
import hashlib
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal, get_args

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from datagouv_eval_pipeline.base import project_files
from datagouv_eval_pipeline.base.yaml_loading import safe_load
from datagouv_eval_pipeline.core.judges.protocol import (
    CriterionInput,
    CriterionJudgement,
    FailureModeInput,
    Judge,
    ToolEvidence,
    TrajectoryInput,
)
from datagouv_eval_pipeline.core.judges.verdict import (
    FailureMode,
    JudgeSpend,
    Outcome,
    Verdict,
    VerdictStatus,
    judge_spend,
    outcome,
)
from datagouv_eval_pipeline.core.metrics import CatalogLookup, MetricValue, with_catalog_slugs
from datagouv_eval_pipeline.core.semantic import ActionInstance, CallCategory
from datagouv_eval_pipeline.core.tasks import Criterion, RequiredAction, TaskSpec, Tier

CALIBRATION_DIR = project_files.task_specs_dir() / "calibration"
"""Where the calibration files live."""

HumanVerdict = Literal["pass", "fail"]

VerdictKind = Literal["criterion", "arguments", "trajectory", "failure_mode"]
"""The four kinds of judge verdicts a calibration item can ask about."""

VERDICT_KINDS: tuple[VerdictKind, ...] = get_args(VerdictKind)

TRAJECTORY_PASS_SCORE = 0.75
"""A trajectory verdict counts as ``pass`` from this score (see the module docstring)."""

KAPPA_REQUIRED = 0.8
"""Cohen's kappa a judge must reach on a verdict kind before its scores of that kind are used
for decisions (``docs/judges.md``)."""

BOOTSTRAP_RESAMPLES = 2000
"""Resamples of the bootstrap interval of kappa."""

MIN_KAPPA_ITEMS = 30
"""Fewer labelled items (decided by the judge) than this: no kappa, the reason instead."""

LabelMethod = Literal["written", "verdict-shown", "blind-review"]
"""How a file's labels were produced (see the module docstring)."""

LABEL_METHODS: tuple[LabelMethod, ...] = get_args(LabelMethod)

LABEL_SETS: tuple[str, ...] = ("all", "blind", "verdict-shown", "written")
"""What calibration can be restricted to: every label, ``blind`` (the ``blind-review`` labels),
or the labels of one other method."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)


class EvidenceItem(_Strict):
    """A tool call shown to the judge with the answer (optional)."""

    tool: str = Field(min_length=1)
    arguments: dict[str, Any] = Field(default_factory=dict)
    result: str = ""
    error: bool = False


class InstanceItem(_Strict):
    """A semantic action instance of a sample, as the mapper produced it."""

    action: str = Field(min_length=1)
    args: dict[str, Any] = Field(default_factory=dict)
    source_call_id: str = ""
    source_tool: str = ""
    category: CallCategory = CallCategory.MCP_TOOL
    confidence: float = 1.0
    errored: bool = False

    def instance(self) -> ActionInstance:
        """The instance as the judges take it."""
        return ActionInstance(
            action=self.action,
            args=dict(self.args),
            source_call_id=self.source_call_id,
            source_tool=self.source_tool,
            category=self.category,
            confidence=self.confidence,
            errored=self.errored,
        )


class Sample(_Strict):
    """What one run showed, shared by the items that ask about it (version 2)."""

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9_.-]*$")
    task_id: str = Field(pattern=r"^task_\d{4}$")
    run_id: str = ""
    """``cell_key|task_id|repeat_index`` of the run it was drawn from."""
    experiment_id: str = ""
    answer: str
    cited_urls: list[str] | None = None
    tool_evidence: list[EvidenceItem] = Field(default_factory=list)
    instances: list[InstanceItem] = Field(default_factory=list)


class CalibrationItem(_Strict):
    """One judge question with its human verdict."""

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9_.-]*$")
    """Unique across all calibration files."""
    task_id: str = Field(pattern=r"^task_\d{4}$")
    verdict_kind: VerdictKind = "criterion"
    """Which judge question the item asks."""
    sample: str | None = None
    """The sample (same file) the item asks about; None: the answer is inline (version 1)."""
    tier: Tier | None = None
    """The tier of an arguments, trajectory or failure-mode item."""
    criterion: int | None = Field(default=None, ge=0)
    """Position of the criterion in ``task.criteria("optimal")`` (minimal ones first)."""
    criterion_sha: str | None = Field(default=None, pattern=r"^[0-9a-f]{12}$")
    """:func:`criterion_sha` of the criterion's text, to detect edited criteria."""
    required_index: int | None = Field(default=None, ge=0)
    """Position of the required action in the tier's ``required_actions`` (arguments)."""
    candidate: int | None = Field(default=None, ge=0)
    """Position of the candidate instance in the sample's ``instances`` (arguments)."""
    mode: FailureMode | None = None
    """The failure mode asked about (failure_mode)."""
    target_sha: str | None = Field(default=None, pattern=r"^[0-9a-f]{12}$")
    """:func:`target_sha` of the required action or the tier's chain (arguments, trajectory)."""
    answer: str = ""
    """The answer (version 1; a version-2 item takes its sample's)."""
    human: HumanVerdict
    """The human verdict: criterion met, arguments right, chain followed, mode absent."""
    kind: Literal["pass", "fail", "near_miss"]
    """``near_miss``: looks right to a shallow check but is not (or the reverse)."""
    note: str = ""
    """Why the human verdict is what it is."""
    cited_urls: list[str] | None = None
    tool_evidence: list[EvidenceItem] = Field(default_factory=list)
    origin: str = "written"
    """``written`` by the maintainers, or ``review:<file>`` when imported from a review."""

    @model_validator(mode="after")
    def _fields_of_the_kind(self) -> CalibrationItem:
        needs: dict[str, tuple[str, ...]] = {
            "criterion": ("criterion", "criterion_sha"),
            "arguments": ("sample", "tier", "required_index", "candidate", "target_sha"),
            "trajectory": ("sample", "tier", "target_sha"),
            "failure_mode": ("sample", "tier", "mode"),
        }
        missing = [name for name in needs[self.verdict_kind] if getattr(self, name) is None]
        if missing:
            raise ValueError(f"a {self.verdict_kind} item needs {', '.join(missing)}")
        return self


class LabelProvenance(_Strict):
    """Who produced a file's labels, and how."""

    labeller: str = Field(min_length=1)
    """Who labelled: a name, an email, or a program's name."""
    method: LabelMethod
    """``written``, ``verdict-shown`` or ``blind-review`` (the module docstring)."""
    human: bool
    """True only when a person gave the labels."""
    note: str = ""
    """How, in a sentence (what the labeller saw, from which runs)."""


UNRECORDED = "unrecorded"
"""The labeller of a file that does not say who labelled."""


class CalibrationFile(_Strict):
    """One calibration YAML file (see the module docstring for the versions)."""

    version: Literal[1, 2]
    provenance: LabelProvenance | None = None
    """Who labelled and how; None: unrecorded (:meth:`label_provenance`)."""
    samples: list[Sample] = Field(default_factory=list)
    items: list[CalibrationItem]

    def label_provenance(self) -> LabelProvenance:
        """The file's provenance; unrecorded: ``written`` (v1) or ``verdict-shown`` (v2)."""
        if self.provenance is not None:
            return self.provenance
        return LabelProvenance(
            labeller=UNRECORDED,
            method="written" if self.version == 1 else "verdict-shown",
            human=False,
        )

    @model_validator(mode="after")
    def _versioned(self) -> CalibrationFile:
        if self.version == 1:
            if self.samples or any(i.verdict_kind != "criterion" for i in self.items):
                raise ValueError("version 1 holds criterion items only, without samples")
            return self
        known = {sample.id for sample in self.samples}
        for item in self.items:
            if item.sample is None or item.sample not in known:
                raise ValueError(f"item {item.id!r}: sample {item.sample!r} is not in the file")
            if not item.note.strip():
                raise ValueError(f"item {item.id!r}: note: a one-line rationale is required")
        return self


def criterion_sha(text: str) -> str:
    """The first 12 hex digits of sha256 of a criterion's text, whitespace-normalised."""
    return hashlib.sha256(" ".join(text.split()).encode("utf-8")).hexdigest()[:12]


def target_sha(task: TaskSpec, tier: Tier, required_index: int | None = None) -> str:
    """The hash of what an arguments or trajectory item judges, to detect edited tasks.

    An arguments item judges one required action; a trajectory item the tier's chain and its
    required actions.
    """
    level = task.chain(tier)
    if required_index is not None:
        text = level.required_actions[required_index].model_dump_json()
    else:
        text = level.chain + "".join(a.model_dump_json() for a in level.required_actions)
    return criterion_sha(text)


@dataclass(frozen=True, slots=True)
class ResolvedItem:
    """A calibration item with its task, its sample and what it judges.

    Attributes:
        item: The item as written.
        task: The task it refers to.
        criterion: The criterion it refers to (criterion items).
        path: The file it came from.
        sample: The sample it asks about (version 2).
        required: The required action (arguments items).
        provenance: Who labelled it and how (its file's).
    """

    item: CalibrationItem
    task: TaskSpec
    criterion: Criterion | None
    path: Path
    sample: Sample | None = None
    required: RequiredAction | None = None
    provenance: LabelProvenance = field(
        default_factory=lambda: LabelProvenance(labeller=UNRECORDED, method="written", human=False)
    )

    @property
    def answer(self) -> str:
        """The answer the item is about."""
        return self.sample.answer if self.sample is not None else self.item.answer

    @property
    def cited_urls(self) -> list[str] | None:
        """The answer's structured citations."""
        return self.sample.cited_urls if self.sample is not None else self.item.cited_urls

    @property
    def evidence(self) -> tuple[ToolEvidence, ...]:
        """The item's tool evidence for the judge."""
        items = self.sample.tool_evidence if self.sample is not None else self.item.tool_evidence
        return tuple(
            ToolEvidence(f"cal_{i}", e.tool, e.arguments, e.result, e.error)
            for i, e in enumerate(items, start=1)
        )

    @property
    def instances(self) -> tuple[ActionInstance, ...]:
        """The sample's action instances."""
        if self.sample is None:
            return ()
        return tuple(i.instance() for i in self.sample.instances)


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


def _resolve(
    item: CalibrationItem, task: TaskSpec, sample: Sample | None
) -> tuple[str | None, tuple[Criterion | None, RequiredAction | None]]:
    """What an item judges, or the problem (field: what was expected)."""
    none: tuple[Criterion | None, RequiredAction | None] = (None, None)
    if item.verdict_kind == "criterion":
        assert item.criterion is not None  # the item's validator requires it
        criteria = task.criteria("optimal")
        if item.criterion >= len(criteria):
            return (
                f"criterion: {item.task_id} has {len(criteria)} criteria "
                f"(0..{len(criteria) - 1}), not {item.criterion}",
                none,
            )
        criterion = criteria[item.criterion]
        actual = criterion_sha(criterion.criteria)
        if actual != item.criterion_sha:
            return (
                f"criterion_sha: the criterion's text changed (expected "
                f"{actual} for {' '.join(criterion.criteria.split())[:80]!r}); re-check the "
                "human verdict, then update the hash",
                none,
            )
        return None, (criterion, None)
    assert item.tier is not None and sample is not None  # the validators require them
    if item.verdict_kind == "failure_mode":
        return None, none
    level = task.chain(item.tier)
    required: RequiredAction | None = None
    if item.verdict_kind == "arguments":
        assert item.required_index is not None and item.candidate is not None
        if item.required_index >= len(level.required_actions):
            return (
                f"required_index: the {item.tier} tier of {item.task_id} has "
                f"{len(level.required_actions)} required actions, not {item.required_index + 1}",
                none,
            )
        if item.candidate >= len(sample.instances):
            return (
                f"candidate: sample {sample.id!r} has {len(sample.instances)} instances",
                none,
            )
        required = level.required_actions[item.required_index]
    actual = target_sha(task, item.tier, item.required_index)
    if actual != item.target_sha:
        return (
            f"target_sha: the {item.tier} chain or required action changed (expected {actual}); "
            "re-check the human verdict, then update the hash",
            none,
        )
    return None, (None, required)


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
            # libyaml's loader: the version-2 files are large (tool results), the pure-Python
            # loader takes seconds on them.
            data = safe_load(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, yaml.YAMLError, RecursionError) as error:
            # Not UTF-8, nested past the parser's depth, unreadable: the file's error, named.
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
        samples = {sample.id: sample for sample in parsed.samples}
        provenance = parsed.label_provenance()
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
            sample = samples.get(item.sample) if item.sample is not None else None
            if sample is not None and sample.task_id != item.task_id:
                problems.append(f"{prefix}: task_id: its sample is of {sample.task_id}")
                continue
            problem, found = _resolve(item, task, sample)
            if problem is not None:
                problems.append(f"{prefix}: {problem}")
                continue
            criterion, required = found
            resolved.append(ResolvedItem(item, task, criterion, path, sample, required, provenance))
    if problems:
        raise CalibrationError(problems)
    return resolved


def label_method(label_set: str) -> LabelMethod | None:
    """The method a label set names (None: every label).

    Raises:
        ValueError: An unknown label set (naming the known ones).
    """
    if label_set == "all":
        return None
    if label_set == "blind":
        return "blind-review"
    for method in LABEL_METHODS:
        if label_set == method:
            return method
    raise ValueError(f"unknown label set {label_set!r}: expected one of {', '.join(LABEL_SETS)}")


def select_labels(items: Sequence[ResolvedItem], label_set: str) -> list[ResolvedItem]:
    """The items of a label set (:data:`LABEL_SETS`).

    Raises:
        CalibrationError: An unknown label set, or none of the items is of it (saying what the
            set holds instead).
    """
    try:
        method = label_method(label_set)
    except ValueError as error:
        raise CalibrationError([str(error)]) from None
    if method is None:
        return list(items)
    chosen = [r for r in items if r.provenance.method == method]
    if not chosen:
        held = Counter(r.provenance.method for r in items)
        raise CalibrationError(
            [
                f"no {method} labels in the calibration set (it holds "
                + ", ".join(f"{n} {m}" for m, n in sorted(held.items()))
                + "): draw a blind sample with `datagouv-eval review sample`, label it, and "
                "import it with `datagouv-eval review import`"
            ]
        )
    return chosen


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


def refused_kappa(pairs: Sequence[tuple[bool, bool]], items: int) -> MetricValue:
    """Cohen's kappa of the scored pairs, refused on fewer than :data:`MIN_KAPPA_ITEMS`.

    Args:
        pairs: (human passed, judge passed) of the items the judge decided.
        items: The labelled items (decided or not).
    """
    if items < MIN_KAPPA_ITEMS:
        return MetricValue(None, f"fewer than {MIN_KAPPA_ITEMS} labelled items (n={items})")
    if len(pairs) < MIN_KAPPA_ITEMS:
        return MetricValue(
            None,
            f"fewer than {MIN_KAPPA_ITEMS} labelled items decided by the judge "
            f"(n={len(pairs)} of {items})",
        )
    return cohen_kappa(pairs)


def kappa_interval(
    pairs: Sequence[tuple[bool, bool]],
    items: int,
    *,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = 0,
) -> KappaInterval:
    """The bootstrap interval of :func:`refused_kappa`: none (no resample) when it is refused."""
    if min(items, len(pairs)) < MIN_KAPPA_ITEMS:
        return KappaInterval(None, None, resamples, 0, 0.95)
    return bootstrap_kappa(pairs, resamples=resamples, seed=seed)


@dataclass(frozen=True, slots=True)
class KappaInterval:
    """A bootstrap percentile interval of Cohen's kappa.

    Attributes:
        low: Lower bound (None when no resample defines kappa).
        high: Upper bound.
        resamples: Resamples drawn.
        defined: Resamples where kappa is defined (the interval's basis).
        confidence: The interval's level.
    """

    low: float | None
    high: float | None
    resamples: int
    defined: int
    confidence: float


def bootstrap_kappa(
    pairs: Sequence[tuple[bool, bool]],
    *,
    resamples: int = BOOTSTRAP_RESAMPLES,
    confidence: float = 0.95,
    seed: int = 0,
) -> KappaInterval:
    """The percentile bootstrap interval of kappa: items resampled with replacement.

    Resamples where both raters used one single label leave kappa undefined; they are left out
    (and counted in ``defined``), so the interval is conditional on kappa being defined.
    """
    if not pairs:
        return KappaInterval(None, None, resamples, 0, confidence)
    # numpy only for the bootstrap: the code location reads this module's file list.
    import numpy as np

    data = np.array(pairs, dtype=bool)
    rng = np.random.default_rng(seed)
    index = rng.integers(0, len(data), size=(resamples, len(data)))
    a, b = data[index, 0], data[index, 1]
    observed = (a == b).mean(axis=1)
    pa, pb = a.mean(axis=1), b.mean(axis=1)
    expected = pa * pb + (1 - pa) * (1 - pb)
    ok = expected < 1
    kappas = (observed[ok] - expected[ok]) / (1 - expected[ok])
    if kappas.size == 0:
        return KappaInterval(None, None, resamples, 0, confidence)
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(kappas, [tail, 100 - tail])
    return KappaInterval(float(low), float(high), resamples, int(kappas.size), confidence)


def judged_outcome(kind: VerdictKind, verdict: Verdict) -> Outcome:
    """A verdict as pass / fail / unscored (a trajectory passes from its pass score).

    See :data:`TRAJECTORY_PASS_SCORE`.
    """
    if kind == "trajectory":
        if verdict.status is not VerdictStatus.OK or verdict.score is None:
            return "unscored"
        return "pass" if verdict.score >= TRAJECTORY_PASS_SCORE else "fail"
    return outcome(verdict)


@dataclass(frozen=True, slots=True)
class CalibrationRow:
    """One item's human verdict next to the judge's.

    Attributes:
        item_id: The item.
        task_id: Its task.
        criterion: Its criterion index (criterion items).
        kind: pass / fail / near_miss.
        human: The human verdict.
        judge: The judge's outcome.
        verdict: The judge's verdict.
        verdict_kind: Which judge question.
        method: How the label was produced (:data:`LabelMethod`).
    """

    item_id: str
    task_id: str
    criterion: int | None
    kind: str
    human: HumanVerdict
    judge: Outcome
    verdict: Verdict
    verdict_kind: VerdictKind = "criterion"
    method: LabelMethod = "written"

    @property
    def agrees(self) -> bool | None:
        """Whether the judge agrees; None when it did not score the item."""
        return None if self.judge == "unscored" else self.judge == self.human


@dataclass(frozen=True, slots=True)
class KindAgreement:
    """Agreement on one verdict kind.

    Attributes:
        verdict_kind: The kind.
        items: Items of the kind.
        scored: Items the judge decided (the n of kappa).
        agreements: Scored items where the judge agrees.
        human_pass: Items the human passed.
        judge_pass: Scored items the judge passed.
        coverage: ``scored / items``.
        accuracy: ``agreements / scored``.
        kappa: Cohen's kappa over the scored items.
        interval: Its bootstrap interval.
        prompt_hashes: The distinct prompt (or rule set) hashes of the kind's verdicts.
    """

    verdict_kind: VerdictKind
    items: int
    scored: int
    agreements: int
    human_pass: int
    judge_pass: int
    coverage: MetricValue
    accuracy: MetricValue
    kappa: MetricValue
    interval: KappaInterval
    prompt_hashes: tuple[str, ...]

    @property
    def meets_requirement(self) -> bool:
        """Whether kappa reaches :data:`KAPPA_REQUIRED`."""
        return self.kappa.value is not None and self.kappa.value >= KAPPA_REQUIRED

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "items": self.items,
            "scored": self.scored,
            "agreements": self.agreements,
            "human_pass": self.human_pass,
            "judge_pass": self.judge_pass,
            "coverage": self.coverage.to_json(),
            "accuracy": self.accuracy.to_json(),
            "kappa": self.kappa.to_json(),
            "ci_low": self.interval.low,
            "ci_high": self.interval.high,
            "bootstrap_resamples": self.interval.resamples,
            "bootstrap_defined": self.interval.defined,
            "prompt_hashes": list(self.prompt_hashes),
            "meets_requirement": self.meets_requirement,
        }


def kind_agreement(
    verdict_kind: VerdictKind,
    rows: Sequence[CalibrationRow],
    *,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = 0,
) -> KindAgreement:
    """Agreement figures of the rows of one verdict kind (pure)."""
    mine = [row for row in rows if row.verdict_kind == verdict_kind]
    pairs = [(row.human == "pass", row.judge == "pass") for row in mine if row.judge != "unscored"]
    agreements = sum(1 for human, judged in pairs if human == judged)
    items, scored = len(mine), len(pairs)
    return KindAgreement(
        verdict_kind=verdict_kind,
        items=items,
        scored=scored,
        agreements=agreements,
        human_pass=sum(1 for row in mine if row.human == "pass"),
        judge_pass=sum(1 for _, judged in pairs if judged),
        coverage=MetricValue(scored / items) if items else MetricValue(None, "no items"),
        accuracy=(
            MetricValue(agreements / scored)
            if scored
            else MetricValue(None, "the judge scored no item")
        ),
        kappa=refused_kappa(pairs, items),
        interval=kappa_interval(pairs, items, resamples=resamples, seed=seed),
        prompt_hashes=tuple(sorted({row.verdict.prompt_hash for row in mine})),
    )


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
        kappa: Cohen's kappa over scored items (every kind together).
        by_kind: Per item kind (pass / fail / near_miss): total, scored, agreements.
        spend: Judge tokens and cost of the run.
        kinds: Per verdict kind present: n, kappa and its bootstrap interval.
        label_set: The label set the figures were computed on (:data:`LABEL_SETS`).
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
    kinds: dict[str, KindAgreement] = field(default_factory=dict)
    label_set: str = "all"

    @property
    def label_methods(self) -> tuple[str, ...]:
        """The methods of the labels the figures rest on, sorted."""
        return tuple(sorted({row.method for row in self.rows}))

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "judge_id": self.judge_id,
            "label_set": self.label_set,
            "label_methods": list(self.label_methods),
            "min_kappa_items": MIN_KAPPA_ITEMS,
            "total": self.total,
            "scored": self.scored,
            "coverage": self.coverage.to_json(),
            "accuracy": self.accuracy.to_json(),
            "kappa": self.kappa.to_json(),
            "confusion": self.confusion,
            "by_kind": self.by_kind,
            "verdict_kinds": {name: k.to_json() for name, k in self.kinds.items()},
            "kappa_required": KAPPA_REQUIRED,
            "judge_spend": self.spend.to_json(),
            "rows": [
                {
                    "id": row.item_id,
                    "task_id": row.task_id,
                    "verdict_kind": row.verdict_kind,
                    "criterion": row.criterion,
                    "kind": row.kind,
                    "method": row.method,
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
        """A plain-text report: figures, per verdict kind, confusion table, disagreements."""

        def fmt(value: MetricValue | float | None) -> str:
            number = value.value if isinstance(value, MetricValue) else value
            return "n/a" if number is None else f"{number:.3f}"

        by_method = Counter(row.method for row in self.rows)
        lines = [
            f"judge: {self.judge_id}",
            f"labels: {self.label_set} ("
            + ", ".join(f"{n} {method}" for method, n in sorted(by_method.items()))
            + ")",
            f"items: {self.total}  scored: {self.scored}  coverage: {fmt(self.coverage)}",
            f"accuracy (scored items): {fmt(self.accuracy)}"
            + (f"  ({self.accuracy.reason})" if self.accuracy.reason else ""),
            f"Cohen's kappa (scored items): {fmt(self.kappa)}"
            + (f"  ({self.kappa.reason})" if self.kappa.reason else ""),
            "",
            f"per verdict kind (kappa >= {KAPPA_REQUIRED} is required before a kind's scores "
            f"are used for decisions; no kappa on fewer than {MIN_KAPPA_ITEMS} items)",
            f"  {'kind':<13}{'items':>6}{'n':>6}{'cover':>7}{'kappa':>8}  95 % CI",
        ]
        for name, k in self.kinds.items():
            interval = (
                "n/a"
                if k.interval.low is None
                else f"[{fmt(k.interval.low)}, {fmt(k.interval.high)}]"
            )
            mark = "ok" if k.meets_requirement else "below"
            reason = f"  ({k.kappa.reason})" if k.kappa.reason else ""
            lines.append(
                f"  {name:<13}{k.items:>6}{k.scored:>6}{fmt(k.coverage):>7}{fmt(k.kappa):>8}"
                f"  {interval} {mark}{reason}"
            )
        lines += [
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
        lines += ["", "by item kind (total / scored / agree)"]
        for kind, counts in sorted(self.by_kind.items()):
            lines.append(
                f"  {kind:<10} {counts['total']:>4} / {counts['scored']:>4} / {counts['agree']:>4}"
            )
        spend = self.spend
        if spend.questions or spend.cache_hits:
            cost = "unknown" if spend.cost is None else f"{spend.cost:.4f} {spend.currency or ''}"
            lines += [
                "",
                f"judge spend: {spend.questions} questions in {spend.requests} HTTP requests, "
                f"{spend.cache_hits} cache hits, "
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


def agreement(
    judge_id: str,
    rows: Sequence[CalibrationRow],
    *,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = 0,
    label_set: str = "all",
    also_spent: Sequence[Verdict] = (),
) -> CalibrationReport:
    """Compute the report's figures from rows (pure; see the module docstring).

    ``also_spent``: verdicts asked on the way that are no item's (the criteria a failure-mode
    item is told), counted in the spend only.
    """
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
    present = {row.verdict_kind for row in rows}
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
        kappa=refused_kappa(scored_pairs, total),
        by_kind=by_kind,
        spend=judge_spend([*(row.verdict for row in rows), *also_spent]),
        kinds={
            k: kind_agreement(k, rows, resamples=resamples, seed=seed)
            for k in VERDICT_KINDS
            if k in present
        },
        label_set=label_set,
    )


def restricted(
    report: CalibrationReport,
    label_set: str,
    *,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = 0,
) -> CalibrationReport | None:
    """The report's figures on one label set's rows (None when it has no row), asking nothing.

    Raises:
        ValueError: An unknown label set.
    """
    method = label_method(label_set)
    rows = [row for row in report.rows if method is None or row.method == method]
    if not rows:
        return None
    return agreement(report.judge_id, rows, resamples=resamples, seed=seed, label_set=label_set)


async def _judge_item(
    judge: Judge,
    r: ResolvedItem,
    criteria_of: dict[tuple[str, Tier], Any],
    catalog: CatalogLookup | None,
) -> Verdict:
    """Ask the judge the item's question."""
    item = r.item
    # Citations of a slug count as the id, as in the pipeline (the catalog's slug of each id).
    r = replace(r, task=with_catalog_slugs(r.task, catalog))
    if item.verdict_kind == "criterion":
        assert r.criterion is not None
        return await judge.criterion(_criterion_input(r, r.criterion))
    assert item.tier is not None
    instances = r.instances
    if item.verdict_kind == "arguments":
        assert r.required is not None and item.candidate is not None
        (verdict,) = await judge.arguments(r.required, [instances[item.candidate]])
        return verdict
    level = r.task.chain(item.tier)
    if item.verdict_kind == "trajectory":
        return await judge.trajectory(
            TrajectoryInput(
                level.chain, level.required_actions, instances, item.tier, r.task.prompt
            )
        )
    assert item.mode is not None and r.sample is not None
    # The failure-mode question is told the tier's criteria verdicts, as in the pipeline: this
    # judge's own, asked once per (sample, tier).
    key = (r.sample.id, item.tier)
    if key not in criteria_of:
        criteria_of[key] = asyncio.ensure_future(_criteria(judge, r, item.tier))
    criteria = await criteria_of[key]
    verdicts = await judge.failure_modes(
        FailureModeInput(
            task=r.task,
            tier=item.tier,
            answer=r.answer,
            evidence=r.evidence,
            instances=instances,
            criteria=criteria,
            modes=(item.mode,),
            cited_urls=tuple(r.cited_urls) if r.cited_urls is not None else None,
        )
    )
    return verdicts[item.mode]


def _criterion_input(r: ResolvedItem, criterion: Criterion) -> CriterionInput:
    return CriterionInput(r.task.prompt, r.answer, criterion, r.evidence, r.task, r.cited_urls)


async def _criteria(judge: Judge, r: ResolvedItem, tier: Tier) -> tuple[CriterionJudgement, ...]:
    criteria = r.task.criteria(tier)
    verdicts = await asyncio.gather(*(judge.criterion(_criterion_input(r, c)) for c in criteria))
    return tuple(
        CriterionJudgement(" ".join(c.criteria.split()), v)
        for c, v in zip(criteria, verdicts, strict=True)
    )


async def calibrate(
    judge: Judge,
    items: Sequence[ResolvedItem],
    *,
    catalog: CatalogLookup | None = None,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = 0,
    label_set: str = "all",
) -> CalibrationReport:
    """Judge every calibration item (concurrently) and compare with the labels.

    Args:
        judge: The judge calibrated.
        items: The resolved calibration items (already restricted to ``label_set``).
        catalog: The catalog (slug of each id), as the pipeline's scoring uses it.
        resamples: Bootstrap resamples of each kappa interval.
        seed: Seed of the bootstrap.
        label_set: The label set the items are (recorded in the report).
    """
    criteria_of: dict[tuple[str, Tier], Any] = {}
    verdicts = await asyncio.gather(*(_judge_item(judge, r, criteria_of, catalog) for r in items))
    rows = [
        CalibrationRow(
            item_id=r.item.id,
            task_id=r.item.task_id,
            criterion=r.item.criterion,
            kind=r.item.kind,
            human=r.item.human,
            judge=judged_outcome(r.item.verdict_kind, verdict),
            verdict=verdict,
            verdict_kind=r.item.verdict_kind,
            method=r.provenance.method,
        )
        for r, verdict in zip(items, verdicts, strict=True)
    ]
    told = [judged.verdict for future in criteria_of.values() for judged in future.result()]
    return agreement(
        judge.judge_id,
        rows,
        resamples=resamples,
        seed=seed,
        label_set=label_set,
        also_spent=told,
    )


def set_sha(items: Sequence[ResolvedItem]) -> str:
    """A short hash of the calibration set's content (which labels a figure was computed on)."""
    digest = hashlib.sha256()
    for r in sorted(items, key=lambda r: r.item.id):
        digest.update(r.item.model_dump_json().encode("utf-8"))
        if r.sample is not None:
            digest.update(r.sample.model_dump_json().encode("utf-8"))
    return digest.hexdigest()[:12]
