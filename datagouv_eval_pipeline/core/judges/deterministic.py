"""The deterministic judge: the offline default, decided by rules only.

It answers what machine-checkable facts decide and leaves everything else ``unscored`` with the
error :data:`~datagouv_eval_pipeline.core.judges.verdict.NEEDS_LLM`; it never passes or fails by
default. The rules (``docs/judges.md`` has examples):

**Criterion.** A criterion's *hints* are checked against the answer:

* each keyword must appear (case- and accent-insensitive);
* each pattern must match (a regular expression over the answer as written);
* an *expected value* of the task is linked to a criterion whose text states that number; the
  answer must state it within tolerance (French and English number formats, via
  :func:`~datagouv_eval_pipeline.core.metrics.numbers.find_value`). When the value has a ``unit``,
  the
  word after the number must start with the unit's stem (or, when no word follows, the stem must
  appear earlier in the number's clause, see :func:`unit_near`); a right number whose unit cannot
  be confirmed is unscored, because "1 023 installations" for "1 023 équipements" is a
  different quantity;
* an *expected source* is linked to a criterion whose text asks for the link to a page or fiche
  ("La réponse donne le lien vers la page ...", "The answer gives the link to the page ..."); the
  metrics' citation check decides it.

**Assertion.** A criterion that carries an ``assert`` (contains, regex, number, numeric_range,
equals, cites, declines, all / any; :mod:`~datagouv_eval_pipeline.core.judges.assertions`) is
decided by
it together with its keywords and patterns; the implicit links above (expected values, link
criteria) are not guessed then, since the author wrote the machine check explicitly.

No hint → unscored. A failing hint → failed. A hint that cannot be confirmed → unscored.
Every hint holding → passed: the hints are the spec's machine-checkable rendering of the
criterion, and the verdict's reason says that only they were verified.

**Arguments.** Strict values are compared with the metrics' normalisation; a candidate whose
strict values all match but that has ``criteria`` arguments is unscored (only a judge can read a
criterion).

**Trajectory.** The metrics' chain walk
(:func:`~datagouv_eval_pipeline.core.metrics.trajectory_adherence`).

**Failure modes** (``passed`` = mode absent). ``TOOL_OMISSION``: a required action type of the tier
was never performed. ``EARLY_STOP``: empty answer, or the chain walk is incomplete and the agent
performed no action after its last chain-matching one (for a task expecting a decline, only the
empty answer is decided). ``REDUNDANT_LOOP``: the same action with the same arguments performed
``LOOP_REPEATS`` times or more (unscored when an action is merely frequent). ``PARAMETER_ERROR``:
an errored call whose result blames the request (validation, invalid/missing parameter, 400/404,
unknown id...); a Python traceback blames the request only when its exception is an HTTP 4xx
answer, so the agent's own local exceptions (a ``KeyError`` while parsing) never make it present
(absent when only such calls errored); unscored when calls errored for other reasons.
``HALLUCINATION``: a catalog id or a number (not a year, at least ``SMALL_NUMBER``) of the answer
found in neither the prompt nor any tool *result* (present: the agent's own tool arguments and
code are not evidence, so an id it invented and merely tried is not grounded; a figure worked out
in the agent's head is not shown by any tool either). The other modes need an LLM judge.
``TOOL_OMISSION`` is not applicable (no value) when the tier requires no action.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

from datagouv_eval_pipeline.base.text import canonical_json, fold_spaced
from datagouv_eval_pipeline.core.judges.assertions import describe as describe_assertion
from datagouv_eval_pipeline.core.judges.assertions import evaluate as evaluate_assertion
from datagouv_eval_pipeline.core.judges.protocol import (
    CriterionInput,
    FailureModeInput,
    ToolEvidence,
    TrajectoryInput,
)
from datagouv_eval_pipeline.core.judges.text import short_hash
from datagouv_eval_pipeline.core.judges.verdict import (
    NEEDS_LLM,
    CallClassification,
    FailureMode,
    Question,
    Verdict,
    VerdictStatus,
    not_applicable,
    unscored,
)
from datagouv_eval_pipeline.core.metrics import (
    NumberReading,
    action_type_score,
    arguments_match,
    citation_check,
    find_value,
    grounded_ids_check,
    normalise_value,
    read_numbers,
    trajectory_adherence,
)
from datagouv_eval_pipeline.core.semantic import ActionInstance
from datagouv_eval_pipeline.core.tasks import (
    Assertion,
    ChainSyntaxError,
    Criterion,
    ExpectedBehaviour,
    ExpectedValue,
    RequiredAction,
    TaskSpec,
    parse_chain,
)
from datagouv_eval_pipeline.core.traces import ToolCall, Trace

DETERMINISTIC_VERSION = "3"
"""Bumped whenever a rule changes (the verdicts' prompt hash changes with it)."""

JUDGE_ID = f"deterministic@{DETERMINISTIC_VERSION}"
RULES_HASH = short_hash("deterministic-judge", DETERMINISTIC_VERSION, __doc__ or "")
"""The deterministic judge's "prompt hash": its version and the rules text above."""

LOOP_REPEATS = 3
"""Identical action instances (same action, same arguments) that make a redundant loop."""
FREQUENT_ACTION = 5
"""Instances of one action name (with varying arguments) above which a loop needs a judge."""
SMALL_NUMBER = 10
"""Numbers below this (list items, small counts) are not checked for grounding."""

# French and English wordings of "the answer gives the link to the page ..." (folded text).
_LINK_CRITERION = re.compile(
    r"^(?:la reponse (?:donne|fournit|indique) (?:le|les) liens? (?:vers|de) (?:la|les) "
    r"(?:page|fiche)s?\b"
    r"|the answer (?:gives|provides|includes) (?:the|a) links? to (?:the|its) pages?\b)"
)
_SENTENCE_END = re.compile(r"[.!?;](?=\s|$)|\n")
_FIRST_WORD = re.compile(r"\s*\**\s*([^\W\d_]+)")
# Words after a number that are not its unit ("téléchargés 1 276 fois", "2 076 au total",
# "downloaded 11,652 times", "9,369 in April").
_FILLERS = frozenset(
    {"fois", "au", "en", "et", "environ", "exactement", "soit", "selon"}
    | {"times", "in", "and", "about", "around", "exactly", "overall", "according"}
)
_PARAMETER_ERROR = re.compile(
    r"validation error|invalid|missing|required|not found|404|400 bad request|bad request|"
    r"unexpected keyword|unknown (?:argument|parameter|column|field|id)|no such|"
    r"does not exist|n'existe pas|introuvable",
    re.IGNORECASE,
)
_TRACEBACK_HEADER = "Traceback (most recent call last)"
# The last line of a traceback that blames the request: an HTTP client error (4xx) raised by
# requests / httpx / urllib, not an exception of the agent's own code.
_HTTP_CLIENT_ERROR = re.compile(
    r"\b4\d\d\b.*(?:client error|not found|bad request)|HTTPError: 4\d\d|"
    r"HTTPStatusError.*\b4\d\d\b|status(?: code)?[ =:]+4\d\d",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class _Hint:
    kind: str
    label: str
    holds: bool | None
    note: str


def _ok(
    question: Question,
    *,
    passed: bool | None = None,
    score: float | None = None,
    reason: str,
    details: dict[str, Any] | None = None,
) -> Verdict:
    return Verdict(
        question=question,
        status=VerdictStatus.OK,
        passed=passed,
        score=score,
        reason=reason,
        judge_id=JUDGE_ID,
        prompt_hash=RULES_HASH,
        details=details or {},
    )


def _needs_llm(question: Question, reason: str, details: dict[str, Any] | None = None) -> Verdict:
    return unscored(
        question,
        NEEDS_LLM,
        judge_id=JUDGE_ID,
        prompt_hash=RULES_HASH,
        reason=reason,
        details=details,
    )


def _is_year(reading: NumberReading) -> bool:
    return all(value.is_integer() and 1900 <= value <= 2100 for value in reading.values)


def unit_stem(unit: str) -> str:
    """The part of a unit's first word that its inflections share (``jeux`` → ``jeu``)."""
    words = fold_spaced(unit).replace("'", " ").split()
    if not words:
        return ""
    word = words[0].rstrip("sx") or words[0]
    return word[:6]


def unit_near(answer: str, reading: NumberReading, unit: str) -> bool:
    """Whether a number of the answer is stated as ``unit``.

    When a word follows the number ("3 418 visites"), that word is the number's unit and must
    start with the unit's stem. Otherwise (punctuation, or a filler such as "fois"), the unit must
    appear before the number in its clause: the same sentence, after the previous number other
    than a year ("visites en mai 2026 : 3 418" keeps "visites").
    """
    stem = unit_stem(unit)
    if not stem:
        return True
    start = reading.start
    end = start + len(reading.text)
    following = _SENTENCE_END.search(answer, end)
    after = answer[end : following.start() if following else len(answer)]
    word = _FIRST_WORD.match(after)
    if word is not None and fold_spaced(word.group(1)) not in _FILLERS:
        return fold_spaced(word.group(1)).startswith(stem)
    sentence_start = 0
    for match in _SENTENCE_END.finditer(answer, 0, start):
        sentence_start = match.end()
    before = answer[sentence_start:start]
    cuts = [r for r in read_numbers(before) if not _is_year(r)]
    if cuts:
        last = cuts[-1]
        before = before[last.start + len(last.text) :]
    return stem in fold_spaced(before)


def linked_values(criterion: Criterion, task: TaskSpec | None) -> list[ExpectedValue]:
    """The task's expected values whose number the criterion's text states."""
    if task is None:
        return []
    return [
        expected
        for expected in task.expected_values
        if find_value(criterion.criteria, expected.value, 0.0) is not None
    ]


def is_link_criterion(criterion: Criterion) -> bool:
    """Whether a criterion asks for the link to a catalog page (decided by the citation check)."""
    return _LINK_CRITERION.match(fold_spaced(criterion.criteria)) is not None


def _value_hint(answer: str, expected: ExpectedValue) -> _Hint:
    label = f"{expected.name}={expected.value:g}"
    reading = find_value(answer, expected.value, expected.tolerance)
    if reading is None:
        return _Hint("value", label, False, "not stated in the answer")
    if expected.unit and not unit_near(answer, reading, expected.unit):
        return _Hint(
            "value",
            label,
            None,
            f"'{reading.text}' is stated but not as {expected.unit!r} (unit not in its clause)",
        )
    return _Hint("value", label, True, f"stated as '{reading.text}'")


def _assertion_hint(
    assertion: Assertion,
    answer: str,
    task: TaskSpec | None,
    evidence: Sequence[ToolEvidence],
    cited_urls: Sequence[str] | None,
) -> _Hint:
    trace = _evidence_trace(task, answer, evidence, cited_urls) if task is not None else None
    outcome = evaluate_assertion(assertion, answer, task=task, trace=trace)
    label = describe_assertion(assertion)
    note = outcome.reason.removeprefix(f"{label}: ")
    return _Hint("assert", label, outcome.holds, note)


def _evidence_trace(
    task: TaskSpec,
    answer: str,
    evidence: Sequence[ToolEvidence],
    cited_urls: Sequence[str] | None,
) -> Trace:
    return Trace(
        task_id=task.task_id,
        answer=answer,
        cited_urls=list(cited_urls) if cited_urls is not None else None,
        tool_calls=[item.as_tool_call() for item in evidence],
    )


class DeterministicJudge:
    """The rule-based judge (see the module docstring for every rule)."""

    @property
    def judge_id(self) -> str:
        """``deterministic@<version>``."""
        return JUDGE_ID

    # -- criterion --------------------------------------------------------------------------------

    def criterion_sync(self, data: CriterionInput) -> Verdict:
        """Synchronous :meth:`criterion` (the rules never wait on anything)."""
        answer, criterion, task = data.answer, data.criterion, data.task
        tool_evidence, cited_urls = data.evidence, data.cited_urls
        hints: list[_Hint] = []
        folded = fold_spaced(answer)
        for keyword in criterion.keywords:
            present = fold_spaced(keyword) in folded
            hints.append(_Hint("keyword", repr(keyword), present, "" if present else "absent"))
        for pattern in criterion.patterns:
            try:
                found = re.search(pattern, answer) is not None
            except re.error as error:
                hints.append(_Hint("pattern", repr(pattern), None, f"invalid pattern: {error}"))
                continue
            hints.append(_Hint("pattern", repr(pattern), found, "" if found else "no match"))
        if criterion.assertion is not None:
            hints.append(
                _assertion_hint(criterion.assertion, answer, task, tool_evidence, cited_urls)
            )
        else:
            for expected in linked_values(criterion, task):
                hints.append(_value_hint(answer, expected))
            if task is not None and task.expected_sources and is_link_criterion(criterion):
                trace = _evidence_trace(task, answer, tool_evidence, cited_urls)
                check = citation_check(task, trace)
                hints.append(_Hint("source", "expected source cited", check.passed, check.reason))

        details = {
            "hints": [
                {"kind": h.kind, "hint": h.label, "holds": h.holds, "note": h.note} for h in hints
            ]
        }
        if not hints:
            return _needs_llm(
                Question.CRITERION, "the criterion has no machine-checkable hint", details
            )
        failed = [h for h in hints if h.holds is False]
        if failed:
            listed = "; ".join(f"{h.kind} {h.label}: {h.note}" for h in failed)
            return _ok(
                Question.CRITERION, passed=False, reason=f"hint failed: {listed}", details=details
            )
        undecided = [h for h in hints if h.holds is None]
        if undecided:
            listed = "; ".join(f"{h.kind} {h.label}: {h.note}" for h in undecided)
            return _needs_llm(Question.CRITERION, f"hint not decidable: {listed}", details)
        listed = ", ".join(f"{h.kind} {h.label}" for h in hints)
        return _ok(
            Question.CRITERION,
            passed=True,
            reason=f"every hint holds ({listed}); only these hints were verified",
            details=details,
        )

    async def criterion(self, data: CriterionInput) -> Verdict:
        """Decide a criterion from its hints (see the module docstring)."""
        return self.criterion_sync(data)

    # -- arguments --------------------------------------------------------------------------------

    def arguments_sync(
        self, required_action: RequiredAction, candidate_instances: Sequence[ActionInstance]
    ) -> list[Verdict]:
        """Synchronous :meth:`arguments`."""
        return [self._argument_verdict(required_action, c) for c in candidate_instances]

    async def arguments(
        self, required_action: RequiredAction, candidate_instances: Sequence[ActionInstance]
    ) -> list[Verdict]:
        """One verdict per candidate: strict values decide, criteria arguments need a judge."""
        return self.arguments_sync(required_action, candidate_instances)

    def _argument_verdict(self, required: RequiredAction, instance: ActionInstance) -> Verdict:
        details: dict[str, Any] = {"call_id": instance.source_call_id, "action": instance.action}
        if instance.action != required.name:
            return _ok(
                Question.ARGUMENTS,
                passed=False,
                details=details,
                reason=f"performs {instance.action}, not {required.name}",
            )
        if instance.errored:
            return _ok(
                Question.ARGUMENTS,
                passed=False,
                details=details,
                reason="the call failed, so its arguments achieved nothing",
            )
        unverified = arguments_match(required, instance)
        if unverified is None:
            wrong = [
                arg.name
                for arg in required.args
                if (
                    arg.strict_value is not None
                    and normalise_value(instance.args.get(arg.name))
                    != normalise_value(arg.strict_value)
                )
                or (arg.strict_value is None and normalise_value(instance.args.get(arg.name)) == "")
            ]
            details["mismatched"] = wrong
            return _ok(
                Question.ARGUMENTS,
                passed=False,
                details=details,
                reason=f"argument(s) not satisfied: {', '.join(wrong)}",
            )
        if unverified:
            details["criteria_arguments"] = list(unverified)
            return _needs_llm(
                Question.ARGUMENTS,
                f"strict values match; criteria argument(s) {', '.join(unverified)} need a judge",
                details,
            )
        return _ok(
            Question.ARGUMENTS, passed=True, details=details, reason="every strict value matches"
        )

    # -- trajectory -------------------------------------------------------------------------------

    def trajectory_sync(self, data: TrajectoryInput) -> Verdict:
        """Synchronous :meth:`trajectory`."""
        tier = data.tier
        try:
            tree = parse_chain(data.chain)
        except ChainSyntaxError as error:
            return unscored(
                Question.TRAJECTORY,
                f"invalid chain: {error}",
                judge_id=JUDGE_ID,
                prompt_hash=RULES_HASH,
            )
        walk = trajectory_adherence(tree, data.actual)
        details: dict[str, Any] = {
            "tier": tier,
            "matched": walk.matched,
            "total": walk.total,
            "missing": [step.action for step in walk.steps if step.instance_index is None],
        }
        if walk.adherence.value is None:
            return unscored(
                Question.TRAJECTORY,
                walk.adherence.reason or "undefined",
                judge_id=JUDGE_ID,
                prompt_hash=RULES_HASH,
                details=details,
            )
        missing = details["missing"]
        reason = f"{walk.matched} of {walk.total} chain actions matched in order"
        if missing:
            reason += f"; unmatched: {', '.join(missing)}"
        return _ok(Question.TRAJECTORY, score=walk.adherence.value, reason=reason, details=details)

    async def trajectory(self, data: TrajectoryInput) -> Verdict:
        """The metrics' deterministic chain walk, as a verdict."""
        return self.trajectory_sync(data)

    # -- failure modes ----------------------------------------------------------------------------

    def failure_modes_sync(self, data: FailureModeInput) -> dict[FailureMode, Verdict]:
        """Synchronous :meth:`failure_modes`."""
        rules = {
            FailureMode.TOOL_OMISSION: _tool_omission,
            FailureMode.EARLY_STOP: _early_stop,
            FailureMode.REDUNDANT_LOOP: _redundant_loop,
            FailureMode.PARAMETER_ERROR: _parameter_error,
            FailureMode.HALLUCINATION: _hallucination,
        }
        result: dict[FailureMode, Verdict] = {}
        for mode in data.modes:
            rule = rules.get(mode)
            verdict = (
                rule(data)
                if rule is not None
                else _needs_llm(Question.FAILURE_MODE, f"{mode.value} needs an LLM judge")
            )
            result[mode] = verdict.model_copy(
                update={"details": {**verdict.details, "mode": mode.value, "tier": data.tier}}
            )
        return result

    async def failure_modes(self, data: FailureModeInput) -> dict[FailureMode, Verdict]:
        """Detect the mechanical failure modes; the others are unscored."""
        return self.failure_modes_sync(data)

    # -- classification ---------------------------------------------------------------------------

    async def classify_call(
        self, call: ToolCall, action_names: Collection[str]
    ) -> CallClassification:
        """The deterministic mapper already tried: an undecided call needs an LLM judge."""
        verdict = _needs_llm(
            Question.CLASSIFICATION,
            "the deterministic mapper could not decide this call",
            {"call_id": call.id},
        )
        return CallClassification(call.id, (), verdict)


# --- failure-mode rules (passed = mode absent) ----------------------------------------------------


def _absent(reason: str, **details: Any) -> Verdict:
    return _ok(Question.FAILURE_MODE, passed=True, reason=reason, details=details)


def _present(reason: str, **details: Any) -> Verdict:
    return _ok(Question.FAILURE_MODE, passed=False, reason=reason, details=details)


def _tool_omission(data: FailureModeInput) -> Verdict:
    required = data.task.chain(data.tier).required_actions
    if not required:
        return not_applicable(
            Question.FAILURE_MODE,
            f"the {data.tier} tier requires no actions",
            judge_id=JUDGE_ID,
            prompt_hash=RULES_HASH,
        )
    types = action_type_score(required, data.instances)
    if types.missing:
        return _present(
            f"required action(s) never performed: {', '.join(types.missing)}",
            missing=list(types.missing),
        )
    return _absent(f"every action type the {data.tier} tier requires was performed")


def _early_stop(data: FailureModeInput) -> Verdict:
    if not data.answer.strip():
        return _present("the run ended without an answer")
    if data.task.expected_behaviour is ExpectedBehaviour.DECLINE:
        return _needs_llm(
            Question.FAILURE_MODE,
            "the task expects a decline: stopping early may be right, a judge must say",
        )
    walk = trajectory_adherence(data.task.chain(data.tier).tree(), data.instances)
    if walk.matched == walk.total:
        return _absent(f"the {data.tier} chain was completed")
    matched = [step.instance_index for step in walk.steps if step.instance_index is not None]
    last_matched = max(matched) if matched else -1
    if last_matched >= len(data.instances) - 1:
        unmatched = [step.action for step in walk.steps if step.instance_index is None]
        return _present(
            f"the chain is incomplete ({walk.matched}/{walk.total}) and the agent stopped "
            f"acting after its last chain step; never reached: {', '.join(unmatched)}",
            matched=walk.matched,
            total=walk.total,
        )
    return _absent(
        "the chain is incomplete but the agent kept acting after its last chain step "
        "(a wrong path, not an early stop)"
    )


def _redundant_loop(data: FailureModeInput) -> Verdict:
    identical = Counter(
        (instance.action, canonical_json({k: normalise_value(v) for k, v in instance.args.items()}))
        for instance in data.instances
    )
    loops = [(action, count) for (action, _), count in identical.items() if count >= LOOP_REPEATS]
    if loops:
        listed = ", ".join(f"{action} x{count}" for action, count in loops)
        return _present(f"identical actions repeated: {listed}", repeated=dict(loops))
    frequent = Counter(instance.action for instance in data.instances)
    busy = [(action, count) for action, count in frequent.items() if count > FREQUENT_ACTION]
    if busy:
        listed = ", ".join(f"{action} x{count}" for action, count in busy)
        return _needs_llm(
            Question.FAILURE_MODE,
            f"frequent actions with varying arguments ({listed}): a judge must tell a loop "
            "from a search",
        )
    return _absent(f"no action repeated {LOOP_REPEATS} times with the same arguments")


def _local_exception(result: str) -> bool | None:
    """For a Python traceback: True when the agent's own code raised, False for a 4xx answer.

    None when the result holds no traceback (a tool's own error message).
    """
    if _TRACEBACK_HEADER not in result:
        return None
    lines = [line for line in result.rstrip().splitlines() if line.strip()]
    last = lines[-1] if lines else ""
    return _HTTP_CLIENT_ERROR.search(last) is None


def _parameter_error(data: FailureModeInput) -> Verdict:
    errored = [item for item in data.evidence if item.errored]
    if not errored:
        return _absent("no tool call failed")
    # A KeyError in the agent's parsing after a successful request is the agent's bug, not a
    # parameter the API refused: local exceptions never make PARAMETER_ERROR present.
    local = [item for item in errored if _local_exception(item.result)]
    remote = [item for item in errored if item not in local]
    blamed = [item for item in remote if _PARAMETER_ERROR.search(item.result[:2000])]
    if blamed:
        ids = ", ".join(item.call_id for item in blamed)
        return _present(
            f"tool error(s) blaming the request: {ids}", calls=[i.call_id for i in blamed]
        )
    if not remote:
        ids = ", ".join(item.call_id for item in local)
        return _absent(f"only the agent's own code raised (call(s) {ids}), no request was refused")
    ids = ", ".join(item.call_id for item in remote)
    return _needs_llm(
        Question.FAILURE_MODE, f"call(s) {ids} failed for a reason the rules cannot attribute"
    )


def _hallucination(data: FailureModeInput) -> Verdict:
    trace = _evidence_trace(data.task, data.answer, data.evidence, data.cited_urls)
    ids = grounded_ids_check(data.task, trace)
    if ids.passed is False:
        return _present(ids.reason, ungrounded_ids=list(ids.details.get("ungrounded", [])))
    known: set[float] = set()
    for text in _grounding_texts(data):
        for reading in read_numbers(text):
            known.update(round(value, 6) for value in reading.values)
    ungrounded = [
        reading.text
        for reading in read_numbers(data.answer)
        if not _is_year(reading)
        and any(abs(value) >= SMALL_NUMBER for value in reading.values)
        and not any(round(value, 6) in known for value in reading.values)
    ]
    if ungrounded:
        return _present(
            f"number(s) in no tool result nor the prompt: {', '.join(ungrounded[:5])}",
            ungrounded_numbers=ungrounded,
        )
    return _absent("every catalog id and number of the answer is in the prompt or a tool result")


def _grounding_texts(data: FailureModeInput) -> list[str]:
    # Tool arguments are what the agent wrote, not what it saw: never evidence.
    return [data.task.prompt, *(item.result for item in data.evidence)]
