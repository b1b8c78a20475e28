"""Reading numbers in answers written in French or English.

Rules (documented with examples in ``docs/metrics.md``):

* Digit groups separated by a space, a no-break space (U+00A0), a narrow no-break space (U+202F) or
  a thin space (U+2009) are thousands: ``2 076`` is 2076; a decimal part may follow with a comma or
  a point (``1 023,5`` is 1023.5).
* With both a comma and a point, the last one is the decimal mark (``12,500.75``, ``1.234,5``).
* One kind of separator used several times is thousands grouping when every group after the first
  has 3 digits (``1.234.567``); otherwise the token is not read (``1.2.3`` looks like a version).
* A single comma or point followed by exactly 3 digits, after 1–3 digits not starting with 0, is
  ambiguous: ``12,500`` is 12.5 in French and 12500 in English, ``1.023`` is 1.023 in English and
  1023 in some European styles. Both readings are kept and a check accepts either.
* Any other single separator is a decimal mark: ``6,3`` is 6.3, ``0,500`` is 0.5.
* A following ``mille``, ``million(s)``, ``milliard(s)``, ``thousand`` or ``billion(s)`` adds the
  scaled reading (``2,1 millions`` reads as 2.1 and 2 100 000).
* Digits glued to letters, digits inside URLs and catalog ids (24-hex ids, UUIDs) are not numbers.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from dataclasses import dataclass

# One pass: URLs and catalog ids are matched (and skipped) before any number inside them can be.
_TOKEN = re.compile(
    r"(?P<skip>(?:[hH][tT][tT][pP][sS]?://|[wW]{3}\.)\S+"
    r"|[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
    r"|[0-9a-fA-F]{24}(?![0-9a-zA-Z]))"
    r"|(?<![\w.,])(?P<sign>[-\u2212+])?"
    r"(?P<body>\d{1,3}(?:[ \u00a0\u202f\u2009]\d{3}(?!\d))+(?:[.,]\d+)?|\d+(?:[.,]\d+)*)"
    r"(?:[ \u00a0\u202f\u2009]?"
    r"(?P<scale>(?i:milliards?|millions?|mille|thousand|billions?))\b)?"
)  # no global IGNORECASE: explicit classes are faster


_HAS_SPACE = re.compile(r"[ \u00a0\u202f\u2009]")
_NOT_DIGIT = re.compile(r"\D")
_SEPARATOR = re.compile(r"[.,]")
_SCALES = {
    "mille": 1e3,
    "thousand": 1e3,
    "million": 1e6,
    "millions": 1e6,
    "milliard": 1e9,
    "milliards": 1e9,
    "billion": 1e9,
    "billions": 1e9,
}


@dataclass(frozen=True, slots=True)
class NumberReading:
    """A number found in a text with every value it can be read as.

    Attributes:
        text: The matched text, e.g. ``2 076`` or ``12,500``.
        start: Offset of the match in the text.
        values: The possible values (two for an ambiguous separator, more with a scale word).
    """

    text: str
    start: int
    values: tuple[float, ...]


def _grouped(groups: list[str]) -> bool:
    first = groups[0]
    if not 1 <= len(first) <= 3 or (len(first) > 1 and first[0] == "0") or first == "0":
        return False
    return all(len(group) == 3 for group in groups[1:])


def _readings(body: str) -> tuple[float, ...]:
    if body.isdigit():
        return (float(body),)
    if _HAS_SPACE.search(body):
        integer, _, decimal = body.replace(",", ".").partition(".")
        digits = _NOT_DIGIT.sub("", integer)
        return (float(f"{digits}.{decimal}" if decimal else digits),)
    separators = [char for char in body if char in ".,"]
    groups = _SEPARATOR.split(body)
    if len(set(separators)) == 2:
        decimal_mark = separators[-1]
        if separators.count(decimal_mark) != 1 or not _grouped(groups[:-1]):
            return ()
        return (float("".join(groups[:-1]) + "." + groups[-1]),)
    if len(separators) > 1:
        return (float("".join(groups)),) if _grouped(groups) else ()
    head, tail = groups
    as_decimal = float(f"{head}.{tail}")
    if len(tail) == 3 and _grouped(groups):
        return (as_decimal, float(head + tail))
    return (as_decimal,)


def iter_numbers(text: str) -> Iterator[NumberReading]:
    """Yield every number in ``text`` with its possible values, in order of appearance."""
    for match in _TOKEN.finditer(text):
        body = match.group("body")
        if body is None:
            continue
        values = _readings(body)
        if not values:
            continue
        if match.group("sign") in ("-", "\u2212"):
            values = tuple(-value for value in values)
        scale_word = match.group("scale")
        if scale_word:
            factor = _SCALES[scale_word.lower()]
            values = values + tuple(value * factor for value in values)
        yield NumberReading(match.group(0).strip(), match.start(), values)


def read_numbers(text: str) -> list[NumberReading]:
    """Return every number in ``text`` with its possible values, in order of appearance."""
    return list(iter_numbers(text))


def find_value(text: str, expected: float, tolerance: float = 0.0) -> NumberReading | None:
    """Return the first number in ``text`` that can be read within ``expected ± tolerance``."""
    for reading in iter_numbers(text):
        for value in reading.values:
            if math.isclose(value, expected, rel_tol=1e-9, abs_tol=tolerance):
                return reading
    return None
