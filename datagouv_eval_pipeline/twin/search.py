"""French-aware tokenisation and BM25F ranking for the twin's search endpoints.

The real data.gouv.fr search runs on Elasticsearch with a French analyser; the twin needs the
same kind of behaviour (accent-insensitive, stop words ignored, plurals folded, title matches
worth more than description matches) with a deterministic order, so it implements BM25F itself:
the formula is twenty lines and a dependency would not make it clearer.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

# The MCP server strips these words from a query before searching (reference §1.4).
MCP_STOP_WORDS: frozenset[str] = frozenset(
    {
        "données",
        "donnee",
        "donnees",
        "fichier",
        "fichiers",
        "tableau",
        "tableaux",
        "csv",
        "excel",
        "xlsx",
        "json",
        "xml",
    }
)

# Common French function words: they carry no topic, and the real analyser drops them too.
FRENCH_FUNCTION_WORDS: frozenset[str] = frozenset(
    [
        "a",
        "au",
        "aux",
        "avec",
        "c",
        "ca",
        "car",
        "ce",
        "ces",
        "cet",
        "cette",
        "chez",
        "comme",
        "d",
        "dans",
        "de",
        "des",
        "donc",
        "dont",
        "du",
        "elle",
        "elles",
        "en",
        "entre",
        "est",
        "et",
        "etre",
        "il",
        "ils",
        "j",
        "je",
        "l",
        "la",
        "le",
        "les",
        "leur",
        "leurs",
        "lui",
        "m",
        "ma",
        "mais",
        "me",
        "mes",
        "moi",
        "mon",
        "n",
        "ne",
        "ni",
        "nos",
        "notre",
        "nous",
        "on",
        "ou",
        "par",
        "pas",
        "pour",
        "qu",
        "que",
        "quel",
        "quelle",
        "quelles",
        "quels",
        "qui",
        "quoi",
        "s",
        "sa",
        "sans",
        "se",
        "ses",
        "si",
        "son",
        "sont",
        "sous",
        "sur",
        "t",
        "ta",
        "te",
        "tes",
        "toi",
        "ton",
        "tres",
        "tu",
        "un",
        "une",
        "vers",
        "vos",
        "votre",
        "vous",
        "y",
    ]
)

_TOKEN_RE = re.compile(r"[a-z0-9]+")
_LIGATURES = str.maketrans({"œ": "oe", "æ": "ae", "Œ": "oe", "Æ": "ae", "’": "'"})


def fold(text: str) -> str:
    """Lower-case ``text`` and strip its accents (``"Élus"`` → ``"elus"``)."""
    decomposed = unicodedata.normalize("NFKD", text.translate(_LIGATURES).lower())
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


STOP_WORDS: frozenset[str] = frozenset(fold(w) for w in MCP_STOP_WORDS | FRENCH_FUNCTION_WORDS)


def _stem(token: str) -> str:
    # Light plural folding: "équipements" and "équipement" must match. Only plain plural
    # endings on words longer than three letters, so "bus" or "gaz" stay intact.
    if len(token) > 3 and token[-1] in "sx" and not token.endswith("ss"):
        return token[:-1]
    return token


def tokenize(text: str) -> list[str]:
    """Split ``text`` into search terms: folded, stop words removed, plurals folded.

    Args:
        text: Any user or catalog text.

    Returns:
        The terms in their order of appearance (duplicates kept).
    """
    return [_stem(tok) for tok in _TOKEN_RE.findall(fold(text)) if tok not in STOP_WORDS]


@dataclass(frozen=True)
class _Posting:
    doc: int
    # term frequency per field index
    tfs: tuple[tuple[int, int], ...]


class BM25FIndex:
    """A small in-memory BM25F index over documents made of named text fields.

    Each field has a weight (a title match is worth more than a description match) and its own
    length normalisation. Scores are summed over the distinct query terms:
    ``idf(t) * tf~ / (k1 + tf~)`` with ``tf~ = Σ_f w_f * tf_f / (1 - b + b * len_f / avglen_f)``
    and ``idf(t) = ln(1 + (N - df + 0.5) / (df + 0.5))``.
    """

    def __init__(
        self,
        docs: Sequence[tuple[str, Mapping[str, str]]],
        field_weights: Mapping[str, float],
        *,
        k1: float = 1.2,
        b: float = 0.75,
    ) -> None:
        """Index ``docs``.

        Args:
            docs: ``(doc_id, {field: text})`` pairs; missing fields count as empty.
            field_weights: Weight of each indexed field; other fields are ignored.
            k1: Term-frequency saturation.
            b: Length normalisation strength (0 = none, 1 = full).
        """
        self.k1 = k1
        self.b = b
        self._fields = list(field_weights)
        self._weights = [float(field_weights[f]) for f in self._fields]
        self.doc_ids: list[str] = [doc_id for doc_id, _ in docs]
        self._lengths: list[list[int]] = []
        postings: dict[str, list[_Posting]] = {}
        for index, (_, fields) in enumerate(docs):
            per_field = [Counter(tokenize(fields.get(name, "") or "")) for name in self._fields]
            self._lengths.append([sum(c.values()) for c in per_field])
            terms: dict[str, list[tuple[int, int]]] = {}
            for field_index, counter in enumerate(per_field):
                for term, count in counter.items():
                    terms.setdefault(term, []).append((field_index, count))
            for term, tfs in terms.items():
                postings.setdefault(term, []).append(_Posting(index, tuple(tfs)))
        self._postings = postings
        n_docs = len(docs)
        self._avg_lengths = [
            (sum(lengths[i] for lengths in self._lengths) / n_docs) if n_docs else 0.0
            for i in range(len(self._fields))
        ]

    def __len__(self) -> int:
        return len(self.doc_ids)

    def idf(self, term: str) -> float:
        """Return the inverse document frequency of an already tokenised ``term``."""
        df = len(self._postings.get(term, ()))
        n_docs = len(self.doc_ids)
        return math.log(1.0 + (n_docs - df + 0.5) / (df + 0.5))

    def scores(self, query: str) -> dict[str, float]:
        """Return the BM25F score of every document matching at least one query term."""
        result: dict[int, float] = {}
        for term in dict.fromkeys(tokenize(query)):
            postings = self._postings.get(term)
            if not postings:
                continue
            idf = self.idf(term)
            for posting in postings:
                lengths = self._lengths[posting.doc]
                tf = 0.0
                for field_index, count in posting.tfs:
                    avg = self._avg_lengths[field_index]
                    norm = 1.0 - self.b + self.b * (lengths[field_index] / avg) if avg else 1.0
                    tf += self._weights[field_index] * count / norm
                result[posting.doc] = result.get(posting.doc, 0.0) + idf * tf / (self.k1 + tf)
        return {self.doc_ids[doc]: score for doc, score in result.items()}

    def search(
        self,
        query: str,
        *,
        keep: Callable[[str], bool] | None = None,
        factor: Callable[[str], float] | None = None,
    ) -> list[tuple[str, float]]:
        """Rank the documents matching ``query``.

        Args:
            query: Free text; it goes through :func:`tokenize`.
            keep: Optional predicate on doc ids (filters such as "not deleted").
            factor: Optional score multiplier per doc id (e.g. demoting archived datasets).

        Returns:
            ``(doc_id, score)`` pairs, best first; equal scores are ordered by id so the
            order never depends on insertion or hashing.
        """
        ranked: list[tuple[str, float]] = []
        for doc_id, score in self.scores(query).items():
            if keep is not None and not keep(doc_id):
                continue
            if factor is not None:
                score *= factor(doc_id)
            ranked.append((doc_id, round(score, 9)))
        ranked.sort(key=lambda pair: (-pair[1], pair[0]))
        return ranked


def paginate(items: Sequence[str], page: int, page_size: int) -> list[str]:
    """Return the ``page``-th slice (1-based) of ``items``."""
    start = (page - 1) * page_size
    return list(items[start : start + page_size])


def distinct(values: Iterable[str]) -> list[str]:
    """Return ``values`` without duplicates, first occurrence kept."""
    return list(dict.fromkeys(values))
