"""Advice the policies read in their instructions (the skills document, a system prompt).

The baselines are not LLMs, so they cannot follow arbitrary prose. Instead each piece of advice
they know how to act on is a sentence pattern; when the instructions contain it, the policy
changes the step the advice is about. The effect therefore comes from the text the agent is
given: remove the sentence from the document and the behaviour goes back to the default, put it
in a system prompt and it applies without ``skills``.

=====================  ===========================================  ============================
advice                 recognised in the instructions               effect
=====================  ===========================================  ============================
``filter_syntax``      ```{column}__{operator}={value}``` and the   code: the Tabular count uses
                       operator list                                that filter (else no filter)
``count_one_page``     "a count needs only one page"                counts ask for 1 row, not 20
``read_description``   "read a dataset's description before         oneshot reads the dataset
                       relying on it"                               before answering
``closest_sources``    "point to the closest sources"               no figure found: say so and
                                                                    list the closest datasets
``access_constraints`` "mention access constraints"                 no file is in the Tabular
                                                                    API: say it must be
                                                                    downloaded
``metrics_path``       ```GET datasets/data/?dataset_id__exact=     code: visits and downloads
                       {id}...```                                   from the Metrics API
``cite_pages``         "cite the data.gouv.fr page of every         code: the API's page is
                       dataset or dataservice"                      printed and cited
=====================  ===========================================  ============================
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, fields
from functools import lru_cache

_FILTER = re.compile(r"`\{column\}([^`{}=\s]+)\{operator\}=\{value\}`")
_OPERATORS = re.compile(r"operators?\s+((?:`[a-z_]+`(?:\s*,\s*|\s+and\s+|\s+or\s+|\s*))+)", re.I)
_COUNT_ONE_PAGE = re.compile(r"a count needs only one page", re.I)
_READ_DESCRIPTION = re.compile(r"read (?:a|the) dataset'?s description before relying on it", re.I)
_CLOSEST_SOURCES = re.compile(r"point to the closest sources", re.I)
_ACCESS_CONSTRAINTS = re.compile(r"mention access constraints", re.I)
_METRICS_PATH = re.compile(r"`GET\s+(datasets/data/\?[^`\s]*\{id\}[^`\s]*)`", re.I)
_CITE_PAGES = re.compile(r"cite the data\.gouv\.fr page of every dataset or dataservice", re.I)


@dataclass(frozen=True)
class Guidance:
    """The advice found in the instructions (see the module docstring).

    Attributes:
        filter_separator: What joins column and operator in a Tabular filter parameter
            (``__``), None when the instructions do not document the filters.
        filter_operators: The documented operator names.
        count_one_page: A count needs a single row (the response's total counts the matches).
        read_description: Read the dataset's description before relying on it.
        closest_sources: With no answer, say so and point to the closest sources.
        access_constraints: Mention access constraints (a file outside the Tabular API).
        metrics_path: The Metrics API request for a dataset (``{id}`` placeholder), if given.
        cite_pages: Cite the page of every dataset and dataservice relied on.
    """

    filter_separator: str | None = None
    filter_operators: frozenset[str] = field(default_factory=frozenset)
    count_one_page: bool = False
    read_description: bool = False
    closest_sources: bool = False
    access_constraints: bool = False
    metrics_path: str | None = None
    cite_pages: bool = False

    @staticmethod
    @lru_cache(maxsize=64)
    def read(instructions: str | None) -> Guidance:
        """The advice in ``instructions`` (cached: the same text is read at every step)."""
        text = " ".join((instructions or "").split())
        if not text:
            return NO_GUIDANCE
        syntax = _FILTER.search(text)
        operators: set[str] = set()
        for listing in _OPERATORS.finditer(text):
            operators.update(re.findall(r"`([a-z_]+)`", listing.group(1)))
        metrics = _METRICS_PATH.search(text)
        return Guidance(
            filter_separator=syntax.group(1) if syntax else None,
            filter_operators=frozenset(operators) if syntax else frozenset(),
            count_one_page=bool(_COUNT_ONE_PAGE.search(text)),
            read_description=bool(_READ_DESCRIPTION.search(text)),
            closest_sources=bool(_CLOSEST_SOURCES.search(text)),
            access_constraints=bool(_ACCESS_CONSTRAINTS.search(text)),
            metrics_path=metrics.group(1) if metrics else None,
            cite_pages=bool(_CITE_PAGES.search(text)),
        )

    def filter_param(self, column: str, operator: str) -> str | None:
        """The Tabular query parameter for ``column operator`` as documented, or None."""
        if self.filter_separator is None or operator not in self.filter_operators:
            return None
        return f"{column}{self.filter_separator}{operator}"

    @property
    def found(self) -> list[str]:
        """Names of the advice found, in declaration order."""
        return [item.name for item in fields(self) if getattr(self, item.name)]


NO_GUIDANCE = Guidance()
"""No advice: the policies' default behaviour."""
