"""Advice the policies read in their instructions (the skills document, a system prompt).

The baselines are not LLMs, so they cannot follow arbitrary prose. They read two kinds of
content any document about the data.gouv.fr APIs holds, in whatever words it uses:

* **API documentation**, parsed as such: the Tabular filter syntax and its operators, where
  a response gives the number of matching rows, the Metrics API request for a dataset, the
  dataset search endpoint. A policy uses a request only when its instructions document it
  (the ``execute_python`` tool description gives base URLs, not query syntax).
* **General advice**, recognised by topic: a sentence is advice about a topic when it names
  every concept of that topic, each in any of several French or English words (a sentence
  about *descriptions* and *update frequency*, one about *no dataset* and the *closest*
  ones...). The wording of a document does not matter; its content does
  (``tests/agents/test_baselines_guidance.py`` reads a reworded and a French document).

The effect therefore comes from the text the agent is given: remove the content from the
document and the behaviour goes back to the default, put it in a system prompt and it applies
without ``skills``.

=====================  ===========================================  ============================
advice                 recognised in the instructions               effect
=====================  ===========================================  ============================
``filter_separator``   a template ```{column}__{operator}=...```    code: the Tabular count uses
                       and the operators listed in backticks        that filter (else no filter)
``count_one_page``     ```meta.total``` (or ``total``) given as     counts ask for 1 row, not 20
                       the number of matching rows
``search_path``        ```GET …datasets/search/?q=…```              code (oneshot, thorough):
                                                                    the search endpoint
``metrics_path``       ```GET …?dataset_id__exact={id}…```          code: visits and downloads
                                                                    from the Metrics API
``read_description``   a sentence on a dataset's *description* and  oneshot reads the dataset
                       its *update frequency* (or coverage, limits)  before answering
``closest_sources``    *no dataset* answers → the *closest* ones    no figure found: say so and
                                                                    list the closest datasets
``access_constraints`` *access* and *account / token / too large*   no file is in the Tabular
                                                                    API: say it must be
                                                                    downloaded
``cite_pages``         *cite / link* the *page* of a dataset or     code: the API's page is
                       API                                          printed and cited
=====================  ===========================================  ============================
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, fields
from functools import lru_cache

from datagouv_eval_pipeline.base.text import fold_fast

_FILTER = re.compile(r"`[^`]*?\{col(?:umn)?\}([^`{}=\s]+)\{op(?:erator)?\}=[^`]*`")
_OPERATORS = re.compile(
    r"op[eé]rat(?:or|eur)s?\s*:?\s+((?:`[a-z_]+`(?:\s*,\s*|\s+(?:and|or|et|ou)\s+|\s*))+)", re.I
)
_METRICS_PATH = re.compile(r"`GET\s+(\S*\?\S*dataset_id\S*\{[a-z_]*\}[^`\s]*)`", re.I)
_SEARCH_PATH = re.compile(r"`GET\s+(\S*datasets/(?:search/)?)\?q=[^`]*`", re.I)

Concept = tuple[str, ...]
"""Words (folded, matched at a word start) any of which names a concept."""

_TOPICS: dict[str, tuple[Concept, ...]] = {
    "count_one_page": (
        ("meta.total", "total"),
        ("matching", "match", "correspond", "lignes trouvees", "filtered"),
    ),
    "read_description": (
        ("description",),
        ("frequen", "how often", "mise a jour", "mis a jour", "update", "coverage", "couverture"),
    ),
    "closest_sources": (
        (
            "no dataset",
            "nothing",
            "none",
            "aucun",
            "rien",
            "no suitable",
            "not found",
            "does not",
            "doesn't",
            "n'existe",
            "ne contient",
            "absent",
            "missing",
        ),
        ("closest", "nearest", "plus proche", "related", "similar", "voisin", "approch"),
    ),
    "access_constraints": (
        ("access", "acces"),
        ("account", "token", "key", "compte", "jeton", "cle", "too large", "too big", "volumin"),
    ),
    "cite_pages": (
        ("cite", "link", "lien", "citer", "indiquer l'adresse", "reference"),
        ("page",),
        ("dataset", "dataservice", "api", "jeu de donnees", "jeux de donnees"),
    ),
}


def _sentences(text: str) -> list[str]:
    """The document's sentences and list items, folded, with code spans kept."""
    flat = " ".join(text.split())
    return [
        fold_fast(part) for part in re.split(r"(?<=[.!?])\s+|\s+[-*]\s+|\s*\|\s*", flat) if part
    ]


def _names(sentence: str, concept: Concept) -> bool:
    return any(re.search(r"(?<![a-z])" + re.escape(word), sentence) for word in concept)


def _advises(sentences: list[str], topic: str) -> bool:
    """Whether one sentence names every concept of ``topic``."""
    concepts = _TOPICS[topic]
    return any(all(_names(sentence, concept) for concept in concepts) for sentence in sentences)


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
        search_path: The documented dataset search path (``2/datasets/search/``), if given.
    """

    filter_separator: str | None = None
    filter_operators: frozenset[str] = field(default_factory=frozenset)
    count_one_page: bool = False
    read_description: bool = False
    closest_sources: bool = False
    access_constraints: bool = False
    metrics_path: str | None = None
    cite_pages: bool = False
    search_path: str | None = None

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
        search = _SEARCH_PATH.search(text)
        sentences = _sentences(instructions or "")
        return Guidance(
            filter_separator=syntax.group(1) if syntax else None,
            filter_operators=frozenset(operators) if syntax else frozenset(),
            count_one_page=_advises(sentences, "count_one_page"),
            read_description=_advises(sentences, "read_description"),
            closest_sources=_advises(sentences, "closest_sources"),
            access_constraints=_advises(sentences, "access_constraints"),
            # The placeholder's name varies ({id}, {dataset_id}): the policies fill {id}.
            metrics_path=re.sub(r"\{[a-z_]*\}", "{id}", metrics.group(1)) if metrics else None,
            cite_pages=_advises(sentences, "cite_pages"),
            search_path=search.group(1) if search else None,
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
