"""Whether a text states a figure *about* given entities, not negated, retracted or drowned.

:func:`find_statement` is the one place that decides whether an answer states an expected number
the way a careful reader would count it (``docs/metrics.md``, "value", has the rules and their
limits). An occurrence of the number (within tolerance, read by
:mod:`~datagouv_eval_pipeline.core.metrics.numbers`) is a **statement** when:

* its *context* names every entity (one of each entity's names, whole words, case- and
  accent-insensitive, hyphens read as spaces). The context is the sentence, plus the lead-in
  of the block it belongs to: the line introducing a list or a table, a heading, or a line
  ending with ``:`` just above;
* it is not **negated**: no negation between the start of its clause and the number (``ne
  compte pas 1 023``, ``et non 1 023``, ``plutôt que``, ``instead of``, ``not``; ``pas moins
  de`` is not a negation), and no ``n'est pas`` / ``is not`` right after it;
* it is not **retracted**: no correction cue (``non,``, ``ou plutôt``, ``pardon``, ``je
  corrige``, ``I mean``…) follows it in its sentence or opens the next one with another figure
  within a few words (``2 066… non, en fait 1 850``).

Even when stated, the answer fails when the figure is **drowned**: at least
:data:`MANY_CANDIDATES` other figures of the same kind are stated too, as in a dump of every
département's count. Same kind: within a factor :data:`SAME_KIND_FACTOR` of the figure, not a
year, not one of the other figures asked, and not about the same entities (its sentence or table
row, or its clause when a prose sentence holds several such figures, names every entity).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from datagouv_eval_pipeline.base.text import fold
from datagouv_eval_pipeline.core.metrics.numbers import NumberReading, iter_numbers

#: Other same-kind figures from which the expected one is "among many" (fails the statement).
MANY_CANDIDATES = 6
#: Two figures are of the same kind when the larger is at most this many times the smaller.
SAME_KIND_FACTOR = 10.0
#: How many words may separate a correction cue from the figure that replaces the retracted one.
RETRACTION_WORDS = 4


@dataclass(frozen=True, slots=True)
class Entity:
    """Something a figure must be stated about: a place, a period, a unit.

    Attributes:
        kind: What it is (``place``, ``year``, ``unit``…), for messages only.
        names: Its accepted names; any one of them in the context will do.
    """

    kind: str
    names: tuple[str, ...]

    @property
    def label(self) -> str:
        """The first name, for messages."""
        return self.names[0] if self.names else self.kind


class Outcome(StrEnum):
    """What became of one occurrence of the figure (or of the whole search)."""

    STATED = "stated"
    ABSENT = "absent"
    NEGATED = "negated"
    RETRACTED = "retracted"
    OFF_SUBJECT = "off_subject"
    DROWNED = "drowned"


@dataclass(frozen=True, slots=True)
class Occurrence:
    """One occurrence of the figure and why it counts or not.

    Attributes:
        text: The number as written.
        start: Its offset in the text.
        sentence: The sentence it is in.
        outcome: ``stated``, ``negated``, ``retracted`` or ``off_subject``.
        missing: Labels of the entities its context does not name.
    """

    text: str
    start: int
    sentence: str
    outcome: Outcome
    missing: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Statement:
    """Whether a text states a figure about its entities.

    Attributes:
        outcome: ``stated`` when it does; otherwise why not (the best occurrence's outcome,
            ``absent`` when the figure is nowhere, ``drowned`` when among many candidates).
        reason: A sentence saying so.
        stated: The occurrence that counts (None unless ``outcome`` is ``stated``).
        occurrences: Every occurrence of the figure, in order.
        candidates: The other same-kind figures, as written.
    """

    outcome: Outcome
    reason: str
    stated: Occurrence | None = None
    occurrences: tuple[Occurrence, ...] = ()
    candidates: tuple[str, ...] = field(default=())

    @property
    def passed(self) -> bool:
        """Whether the figure is stated about its entities."""
        return self.outcome == Outcome.STATED


# --- text structure ------------------------------------------------------------------------------

# Sentence ends: ., !, ?, … followed by whitespace, or a line break.
_SENTENCE_END = re.compile(r"(?<=[.!?…])\s+|\n")
_LIST_ITEM = re.compile(r"^\s*(?:[-*•+]|\d{1,2}[.)])\s+|^\s*\|")
_HEADING = re.compile(r"^\s*(?:#{1,6}\s|\*\*[^*]+\*\*\s*:?\s*$)")
# Clause boundaries inside a sentence (on folded text): punctuation and the connectives after
# which a negation no longer applies.
_CLAUSE_BOUNDARY = re.compile(
    r"[,;:()\[\]|]|\s[-–—]\s|\b(?:mais|but|donc|so|et|and|puis|then|car|because|alors|"
    r"cependant|however|toutefois|pourtant|while|whereas|tandis|qui|which)\b"
)
_NEGATION_BEFORE = re.compile(
    r"\bpas\b(?!\s+(?:moins|loin|plus)\b)|\bjamais\b|\bnever\b|\bnot\b(?!\s+(?:less|fewer|more)\b)"
    r"|n't\b|\bni\b|\bnon\s*$|\bnon pas\b|\bau lieu de\b|\bplutot que\b|\binstead of\b"
    r"|\brather than\b"
)
_NEGATION_AFTER = re.compile(
    r"^\S*\s*(?:[\w'-]+\s+){0,3}?(?:n'(?:est|etait|etaient|sont)\s+(?:pas|plus)\b"
    r"(?!\s+(?:tous|toutes|tout)\b)|ne\s+(?:sont|correspond\w*)\s+pas\b(?!\s+(?:tous|toutes)\b)"
    r"|(?:is|are|was|were)\s+not\b(?!\s+all\b)|(?:isn't|aren't|wasn't|weren't)\b(?!\s+all\b)"
    r"|(?:est|sont)\s+(?:faux|fausse|errone|erronee|incorrect|incorrecte|inexact|inexacte)\b"
    r"|(?:is|are)\s+(?:wrong|incorrect)\b)"
)
_RETRACTION = re.compile(
    r"\bnon\s*[,!:.]|\bno\s*[,!:]|\bou plutot\b|\benfin non\b|\bpardon\b|\bje corrige\b"
    r"|\bje rectifie\b|\brectification\b|\bcorrection\s*:|\bje me suis trompe\w*|\berratum\b"
    r"|\bi mean\b|\bsorry\b|\bscratch that\b|\bactually,?\s+no\b"
)
_WORD = re.compile(r"[^\W\d_]+(?:'[^\W\d_]+)?")
_YEAR = re.compile(r"(?:19|20)\d\d")


def _spans(text: str, pattern: re.Pattern[str]) -> list[tuple[int, int]]:
    """The pieces of ``text`` between matches of ``pattern``, as (start, end)."""
    spans: list[tuple[int, int]] = []
    start = 0
    for match in pattern.finditer(text):
        if match.start() > start:
            spans.append((start, match.start()))
        start = match.end()
    if start < len(text):
        spans.append((start, len(text)))
    return spans


def _normal(text: str) -> str:
    """Folded, hyphens and apostrophe variants as spaces/apostrophes, spaces collapsed."""
    folded = fold(text).replace("-", " ").replace("\u2011", " ")
    return " ".join(folded.split())


def _names_in(context: str, names: Iterable[str]) -> bool:
    normal = f" {_normal(context)} "
    for name in names:
        wanted = _normal(name)
        if not wanted:
            continue
        # A code ("32") is a whole number, not the end of "1 032" nor the start of "32,5".
        pattern = rf"(?<!\d[ ,.])(?<!\w){re.escape(wanted)}(?!\w)(?![.,]\d)"
        if re.search(pattern, normal):
            return True
    return False


def _line_bounds(text: str, position: int) -> tuple[int, int]:
    start = text.rfind("\n", 0, position) + 1
    end = text.find("\n", position)
    return start, len(text) if end < 0 else end


def _lead_in(text: str, position: int) -> str:
    """The line introducing the block of ``position``'s line ("" when there is none).

    For a list item or table row, the nearest line above that is neither; otherwise the line
    just above when it is a heading or ends with ``:``.
    """
    start, _ = _line_bounds(text, position)
    line = text[start : _line_bounds(text, start)[1]]
    in_block = _LIST_ITEM.match(line) is not None
    cursor = start - 1
    while cursor > 0:
        above_start, above_end = _line_bounds(text, cursor - 1)
        above = text[above_start:above_end]
        cursor = above_start - 1
        if not above.strip():
            continue
        if in_block and _LIST_ITEM.match(above):
            continue
        if in_block or _HEADING.match(above) or above.rstrip().endswith(":"):
            return above
        return ""
    return ""


def _is_year(reading: NumberReading) -> bool:
    return _YEAR.fullmatch(reading.text) is not None


def _matches(reading: NumberReading, expected: float, tolerance: float) -> bool:
    return any(
        math.isclose(value, expected, rel_tol=1e-9, abs_tol=tolerance) for value in reading.values
    )


def _same_kind(reading: NumberReading, expected: float) -> bool:
    target = abs(expected)
    for value in reading.values:
        size = abs(value)
        if target == 0 or size == 0:
            if max(size, target) <= SAME_KIND_FACTOR:
                return True
            continue
        if max(size, target) / min(size, target) <= SAME_KIND_FACTOR:
            return True
    return False


# --- one occurrence ------------------------------------------------------------------------------


def _clause_before(sentence: str) -> str:
    """The folded end of ``sentence`` after its last clause boundary."""
    folded = fold(sentence)
    cut = 0
    for match in _CLAUSE_BOUNDARY.finditer(folded):
        cut = match.end()
    return folded[cut:]


def _clause_after(sentence: str) -> str:
    folded = fold(sentence)
    match = _CLAUSE_BOUNDARY.search(folded)
    return folded[: match.start()] if match else folded


def _negated(before: str, after: str) -> bool:
    return _NEGATION_BEFORE.search(_clause_before(before)) is not None or (
        _NEGATION_AFTER.search(_clause_after(after)) is not None
    )


def _retracted(after: str) -> bool:
    """Whether a correction cue in ``after`` is followed, within a few words, by a figure."""
    folded = fold(after)
    for cue in _RETRACTION.finditer(folded):
        rest = folded[cue.end() :]
        for reading in iter_numbers(rest):
            if _is_year(reading):
                continue
            if len(_WORD.findall(rest[: reading.start])) <= RETRACTION_WORDS:
                return True
            break
    return False


def find_statement(
    text: str,
    expected: float,
    tolerance: float = 0.0,
    *,
    entities: Sequence[Entity] = (),
    others: Sequence[float] = (),
    many: int = MANY_CANDIDATES,
) -> Statement:
    """Decide whether ``text`` states ``expected ± tolerance`` about ``entities``.

    Args:
        text: The answer (or any prose).
        expected: The figure.
        tolerance: Absolute tolerance.
        entities: What the figure must be stated about; each must be named in the figure's
            context (see the module docstring). Empty: any occurrence may count.
        others: The other figures the question asks for: never counted as same-kind candidates.
        many: How many other same-kind figures make the figure drowned (0: never).

    Returns:
        The :class:`Statement`; ``passed`` when one occurrence counts and the figure is not drowned.
    """
    sentences = _spans(text, _SENTENCE_END) or [(0, len(text))]
    occurrences: list[Occurrence] = []
    figures: list[tuple[NumberReading, int]] = []  # same-kind figures and their sentence
    index = 0
    for reading in iter_numbers(text):
        while index + 1 < len(sentences) and sentences[index][1] <= reading.start:
            index += 1
        if _matches(reading, expected, tolerance):
            occurrences.append(_occurrence(text, reading, sentences, index, entities))
        elif (
            many > 0
            and not _is_year(reading)
            and _same_kind(reading, expected)
            and not any(_matches(reading, other, 0.0) for other in others)
        ):
            figures.append((reading, index))
    per_sentence = Counter(index for _, index in figures)
    candidates: dict[float, str] = {}
    for reading, index in figures:
        begin, end = sentences[index]
        sentence = text[begin:end]
        # Alone in its sentence (a list item), or in a table row, a figure is about what the
        # whole sentence names; among others in prose, only its clause says what it is about.
        context = sentence
        if per_sentence[index] > 1 and not sentence.lstrip().startswith("|"):
            offset = reading.start - begin
            context = (
                _clause_before(sentence[:offset])
                + " "
                + _clause_after(sentence[offset + len(reading.text) :])
            )
        if not entities or not all(_names_in(context, entity.names) for entity in entities):
            candidates.setdefault(reading.values[0], reading.text)
    return _decide(occurrences, tuple(candidates.values()), entities, many)


def _occurrence(
    text: str,
    reading: NumberReading,
    sentences: Sequence[tuple[int, int]],
    index: int,
    entities: Sequence[Entity],
) -> Occurrence:
    """Classify one occurrence of the figure (``sentences[index]`` holds it)."""
    begin, end = sentences[index]
    sentence = text[begin:end]
    offset = reading.start - begin
    after = sentence[offset + len(reading.text) :]
    if _negated(sentence[:offset], after):
        return Occurrence(reading.text, reading.start, sentence, Outcome.NEGATED)
    tail = after
    if index + 1 < len(sentences):
        following = sentences[index + 1]
        tail += " " + text[following[0] : following[1]]
    if _retracted(tail):
        return Occurrence(reading.text, reading.start, sentence, Outcome.RETRACTED)
    context = sentence + "\n" + _lead_in(text, reading.start)
    missing = tuple(entity.label for entity in entities if not _names_in(context, entity.names))
    outcome = Outcome.OFF_SUBJECT if missing else Outcome.STATED
    return Occurrence(reading.text, reading.start, sentence, outcome, missing)


def _decide(
    occurrences: list[Occurrence],
    candidates: tuple[str, ...],
    entities: Sequence[Entity],
    many: int,
) -> Statement:
    found = tuple(occurrences)
    stated = next((o for o in occurrences if o.outcome == Outcome.STATED), None)
    if stated is not None:
        if many > 0 and len(candidates) >= many:
            return Statement(
                Outcome.DROWNED,
                f"'{stated.text}' is stated among {len(candidates)} other figures of the same kind",
                None,
                found,
                candidates,
            )
        return Statement(Outcome.STATED, f"stated as '{stated.text}'", stated, found, candidates)
    if not occurrences:
        return Statement(Outcome.ABSENT, "not stated", None, found, candidates)
    for outcome in (Outcome.OFF_SUBJECT, Outcome.RETRACTED, Outcome.NEGATED):
        first = next((o for o in occurrences if o.outcome == outcome), None)
        if first is None:
            continue
        if outcome == Outcome.OFF_SUBJECT:
            missing = ", ".join(first.missing)
            reason = f"'{first.text}' is stated, but its context does not name {missing}"
        elif outcome == Outcome.RETRACTED:
            reason = f"'{first.text}' is stated, then retracted for another figure"
        else:
            reason = f"'{first.text}' is stated only in a negation"
        return Statement(outcome, reason, None, found, candidates)
    raise AssertionError("unreachable: every occurrence has an outcome")
