"""Evaluate a criterion's machine-checkable assertion (the spec's ``assert`` key) on an answer.

Each kind is decided by a rule a careful reader would apply:

* ``contains``: strings compared after :func:`~datagouv_eval_pipeline.base.text.fold_spaced` (case,
  accents, ligatures, apostrophes and whitespace folded);
* ``regex``: a Python regular expression searched in the answer as written;
* ``number`` / ``numeric_range``: some number of the answer (French and English formats, via
  :func:`~datagouv_eval_pipeline.core.metrics.numbers.iter_numbers`) within tolerance or bounds,
  whose
  *sentence* names every ``about`` entity, and whose unit is one of ``unit`` (the word after the
  number starts with one of them, folded and without a plural ``s``; after a filler or nothing,
  one is in the sentence). A sentence ends at ``.``, ``!``, ``?``, ``;`` or a line break; a
  sentence ending with ``:`` introduces the next one (a list item or table row after "En 2023,
  dans le Gers :") and counts as part of it;
* ``equals``: the whole answer, folded and stripped of surrounding punctuation and markup;
* ``cites``: the data.gouv.fr page of a dataset or dataservice (the metrics' citation check, so
  the twin's URLs and structured citations count) or a URL prefix;
* ``declines``: the metrics' decline phrases, plus a few phrasings of "no such dataset";
* ``all`` / ``any``: combinations.

An assertion that cannot be decided (a ``cites`` or ``expected`` without the task) is ``None``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from datagouv_eval_pipeline.base.text import fold_spaced
from datagouv_eval_pipeline.core.metrics import (
    NumberReading,
    citation_check,
    detect_decline,
    extract_urls,
    iter_numbers,
)
from datagouv_eval_pipeline.core.tasks import (
    Assertion,
    CitesAssertion,
    ContainsWords,
    Entity,
    ExpectedBehaviour,
    ExpectedSource,
    NumberAssertion,
    SourceType,
    TaskSpec,
)
from datagouv_eval_pipeline.core.traces import Trace

_SENTENCE_END = re.compile(r"[.!?;](?=\s|$)|\n")
_EDGE = " \t\n.!?;:,*_`\"'«»()[]"
_FIRST_WORD = re.compile(r"\s*[*_]*\s*([^\W\d_]+)")
# Words between a number and its noun that are not its unit ("téléchargés 1 276 fois", "35 d'entre
# eux sont des femmes", "5 of these senators are women").
_FILLERS = frozenset(
    {"fois", "au", "en", "et", "environ", "exactement", "soit", "selon", "de", "d", "des", "du"}
    | {"dont", "parmi", "sur", "sont", "y", "l", "le", "la", "les", "pour"}
    | {"times", "in", "and", "about", "around", "exactly", "overall", "according", "of", "are"}
    | {"out", "for", "the"}
)
_URL_HEAD = re.compile(r"^(?:[a-z]+://)?(?:www\.)?", re.IGNORECASE)

#: Folded phrasings of "no such dataset" the metrics' decline phrases do not cover.
EXTRA_DECLINE_PHRASES: tuple[str, ...] = (
    "aucun jeu de donnees",
    "aucune donnee",
    "aucune source",
    "pas de jeu de donnees",
    "n'existe pas",
    "n'existe aucun",
    "n'ai pas trouve",
    "ne recense pas",
    "ne contient pas",
    "ne permet pas",
    "no dataset",
    "does not exist",
)


@dataclass(frozen=True, slots=True)
class Outcome:
    """What an assertion says of an answer.

    Attributes:
        holds: True or False, or None when the assertion cannot be decided here.
        reason: Why, naming the assertion.
    """

    holds: bool | None
    reason: str


def describe(assertion: Assertion) -> str:
    """A short rendering of an assertion, e.g. ``contains any ['FINESS']``."""
    kind = assertion.kind()
    if assertion.contains is not None:
        words = assertion.contains
        return f"contains {words.mode()} {words.words()!r}"
    if assertion.regex is not None:
        return f"regex {assertion.regex!r}"
    if assertion.number is not None:
        number = assertion.number
        target = number.expected if number.expected else f"{number.value:g}"
        tolerance = f" ± {number.tolerance:g}" if number.tolerance else ""
        return f"number {target}{tolerance}{_about_label(number.unit, number.about)}"
    if assertion.numeric_range is not None:
        bounds = assertion.numeric_range
        low = "-inf" if bounds.min is None else f"{bounds.min:g}"
        high = "inf" if bounds.max is None else f"{bounds.max:g}"
        return f"numeric_range [{low}, {high}]{_about_label(bounds.unit, bounds.about)}"
    if assertion.equals is not None:
        return f"equals {assertion.equals!r}"
    if assertion.cites is not None:
        cites = assertion.cites
        target = cites.dataset or cites.dataservice or cites.url or ""
        which = "dataset" if cites.dataset else "dataservice" if cites.dataservice else "url"
        return f"cites {which} {target}"
    if assertion.declines is not None:
        return f"declines {str(assertion.declines).lower()}"
    parts = assertion.all or assertion.any or []
    return f"{kind}({'; '.join(describe(part) for part in parts)})"


def evaluate(
    assertion: Assertion,
    answer: str,
    *,
    task: TaskSpec | None = None,
    trace: Trace | None = None,
) -> Outcome:
    """Decide an assertion on an answer.

    Args:
        assertion: The criterion's assertion.
        answer: The agent's final answer.
        task: The task, for ``number.expected`` and the slugs of cited sources.
        trace: The run's trace (structured citations, the twin's base URLs) for ``cites``;
            built from ``answer`` when absent.

    Returns:
        Whether it holds, with a reason naming the assertion.
    """
    label = describe(assertion)
    if assertion.all is not None or assertion.any is not None:
        return _combine(assertion, answer, task, trace)
    if assertion.contains is not None:
        return _check_contains(label, assertion.contains, answer)
    if assertion.regex is not None:
        found = re.search(assertion.regex, answer)
        if found is None:
            return Outcome(False, f"{label}: no match")
        return Outcome(True, f"{label}: matches {found.group(0)[:40]!r}")
    if assertion.number is not None:
        return _check_number(label, assertion.number, answer, task)
    if assertion.numeric_range is not None:
        bounds = assertion.numeric_range
        low = -math.inf if bounds.min is None else bounds.min
        high = math.inf if bounds.max is None else bounds.max
        return _check_stated(label, answer, low, high, bounds.unit, bounds.about)
    if assertion.equals is not None:
        choices = [assertion.equals] if isinstance(assertion.equals, str) else assertion.equals
        stated = fold_spaced(answer).strip(_EDGE)
        holds = any(stated == fold_spaced(choice).strip(_EDGE) for choice in choices)
        return Outcome(holds, f"{label}: {'equal' if holds else 'the answer differs'}")
    if assertion.cites is not None:
        return _check_cites(label, assertion.cites, answer, task, trace)
    if assertion.declines is not None:
        phrase = decline_phrase(answer)
        if assertion.declines:
            if phrase is None:
                return Outcome(False, f"{label}: no decline phrase")
            return Outcome(True, f"{label}: says {phrase!r}")
        if phrase is None:
            return Outcome(True, f"{label}: no decline phrase")
        return Outcome(False, f"{label}: says {phrase!r}")
    return Outcome(None, f"{label}: unknown assertion kind")  # pragma: no cover - validated


def decline_phrase(answer: str) -> str | None:
    """The decline phrase of an answer (the metrics' ones, then :data:`EXTRA_DECLINE_PHRASES`)."""
    phrase = detect_decline(answer)
    if phrase is not None:
        return phrase
    folded = fold_spaced(answer)
    return next((p for p in EXTRA_DECLINE_PHRASES if p in folded), None)


def _about_label(unit: str | list[str] | None, about: Sequence[Entity]) -> str:
    units = [unit] if isinstance(unit, str) else unit or []
    parts = ([f"unit {'|'.join(units)!r}"] if units else []) + [
        repr(entity if isinstance(entity, str) else "|".join(entity)) for entity in about
    ]
    return f" about {', '.join(parts)}" if parts else ""


def _combine(
    assertion: Assertion, answer: str, task: TaskSpec | None, trace: Trace | None
) -> Outcome:
    parts = [evaluate(part, answer, task=task, trace=trace) for part in assertion.all or []]
    if assertion.all is not None:
        failed = [o for o in parts if o.holds is False]
        if failed:
            return Outcome(False, "all: " + "; ".join(o.reason for o in failed))
        if any(o.holds is None for o in parts):
            return Outcome(None, "all: " + "; ".join(o.reason for o in parts if o.holds is None))
        return Outcome(True, "all: " + "; ".join(o.reason for o in parts))
    parts = [evaluate(part, answer, task=task, trace=trace) for part in assertion.any or []]
    held = [o for o in parts if o.holds is True]
    if held:
        return Outcome(True, "any: " + held[0].reason)
    if any(o.holds is None for o in parts):
        return Outcome(None, "any: " + "; ".join(o.reason for o in parts if o.holds is None))
    return Outcome(False, "any: " + "; ".join(o.reason for o in parts))


def _check_contains(label: str, words: ContainsWords, answer: str) -> Outcome:
    folded = fold_spaced(answer)
    present = [w for w in words.words() if fold_spaced(w) in folded]
    absent = [w for w in words.words() if w not in present]
    mode = words.mode()
    if mode == "any":
        if present:
            return Outcome(True, f"{label}: found {present[0]!r}")
        return Outcome(False, f"{label}: none found")
    if mode == "all":
        if absent:
            return Outcome(False, f"{label}: absent {absent!r}")
        return Outcome(True, f"{label}: all found")
    if present:
        return Outcome(False, f"{label}: found {present!r}")
    return Outcome(True, f"{label}: none found")


def _check_number(
    label: str, number: NumberAssertion, answer: str, task: TaskSpec | None
) -> Outcome:
    value, tolerance = number.value, number.tolerance
    if number.expected is not None:
        expected = next(
            (v for v in (task.expected_values if task else []) if v.name == number.expected), None
        )
        if expected is None:
            return Outcome(None, f"{label}: the task has no expected value {number.expected!r}")
        value = expected.value
        tolerance = expected.tolerance if tolerance is None else tolerance
    assert value is not None  # the model requires value or expected
    spread = tolerance or 0.0
    return _check_stated(label, answer, value - spread, value + spread, number.unit, number.about)


def _check_stated(
    label: str,
    answer: str,
    low: float,
    high: float,
    unit: str | list[str] | None,
    about: Sequence[Entity],
) -> Outcome:
    in_range = [r for r in iter_numbers(answer) if _within(r, low, high)]
    if not in_range:
        return Outcome(False, f"{label}: no such number in the answer")
    missing: list[str] = []
    for reading in in_range:
        context = fold_spaced(_sentence_of(answer, reading))
        lacking = _lacking(answer, reading, context, unit, about)
        if not lacking:
            return Outcome(True, f"{label}: stated as '{reading.text}' with its entities")
        missing = missing or [f"'{reading.text}' lacks {', '.join(lacking)}"]
    return Outcome(False, f"{label}: {missing[0]} in its sentence")


def _within(reading: NumberReading, low: float, high: float) -> bool:
    return any(
        low - 1e-9 * abs(low) <= value <= high + 1e-9 * abs(high) for value in reading.values
    )


def _sentence_of(answer: str, reading: NumberReading) -> str:
    start = reading.start
    end = start + len(reading.text)
    following = _SENTENCE_END.search(answer, end)
    stop = following.start() if following else len(answer)
    bounds = [0] + [m.end() for m in _SENTENCE_END.finditer(answer, 0, start)]
    begin = bounds[-1]
    # "En 2023, dans le Gers :" introduces the list item or table row that follows.
    for previous in reversed(bounds[:-1]):
        intro = answer[previous:begin].strip()
        if not intro:
            begin = previous
            continue
        if intro.endswith(":"):
            begin = previous
        break
    return answer[begin:stop]


def unit_stem(unit: str) -> str:
    """A unit word as the start of the words it accepts (``jeux`` → ``jeu``, ``télécharg``).

    The first word, folded, without a plural ``s`` or ``x``; not truncated, so ``conseillère``
    does not accept ``conseillers`` (list the spellings a right answer uses instead).
    """
    words = fold_spaced(unit).replace("'", " ").split()
    if not words:
        return ""
    return words[0].rstrip("sx") or words[0]


def _unit_word(answer: str, reading: NumberReading) -> str | None:
    """The word right after a number, skipping fillers ("fois", "d'entre eux" → None)."""
    after = answer[reading.start + len(reading.text) :]
    stop = _SENTENCE_END.search(after)
    word = _FIRST_WORD.match(after[: stop.start() if stop else len(after)])
    if word is None:
        return None
    folded = fold_spaced(word.group(1))
    return None if folded in _FILLERS else folded


def _unit_holds(answer: str, reading: NumberReading, context: str, units: list[str]) -> bool:
    stems = [stem for stem in (unit_stem(unit) for unit in units) if stem]
    word = _unit_word(answer, reading)
    if word is not None:
        return any(word.startswith(stem) for stem in stems)
    return any(stem in context for stem in stems)


def _lacking(
    answer: str,
    reading: NumberReading,
    context: str,
    unit: str | list[str] | None,
    about: Sequence[Entity],
) -> list[str]:
    lacking: list[str] = []
    units = [unit] if isinstance(unit, str) else unit
    if units and not _unit_holds(answer, reading, context, units):
        lacking.append(f"unit {'|'.join(units)!r}")
    for entity in about:
        spellings = [entity] if isinstance(entity, str) else entity
        if not any(fold_spaced(spelling) in context for spelling in spellings):
            lacking.append(repr(spellings[0]))
    return lacking


def _check_cites(
    label: str,
    cites: CitesAssertion,
    answer: str,
    task: TaskSpec | None,
    trace: Trace | None,
) -> Outcome:
    if cites.url is not None:
        urls = list(trace.cited_urls) if trace and trace.cited_urls is not None else []
        urls += extract_urls(answer)
        prefix = _URL_HEAD.sub("", cites.url.strip()).casefold()
        hit = next((u for u in urls if _URL_HEAD.sub("", u).casefold().startswith(prefix)), None)
        if hit is None:
            return Outcome(False, f"{label}: no URL starting so")
        return Outcome(True, f"{label}: cites {hit}")
    if task is None:
        return Outcome(None, f"{label}: needs the task to read cited pages")
    kind = SourceType.DATASET if cites.dataset else SourceType.DATASERVICE
    ident = cites.dataset or cites.dataservice or ""
    source = next(
        (s for s in task.expected_sources if s.id == ident and s.type == kind),
        ExpectedSource(type=kind, id=ident),
    )
    focused = task.model_copy(
        update={"expected_sources": [source], "expected_behaviour": ExpectedBehaviour.ANSWER}
    )
    run = trace or Trace(task_id=task.task_id, answer=answer)
    check = citation_check(focused, run)
    return Outcome(bool(check.passed), f"{label}: {check.reason}")
