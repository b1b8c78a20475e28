"""Production search semantics for the twin: a French analyser and the two query models.

data.gouv.fr answers searches two ways, and the twin reproduces both (docs/twin.md, "Search"):

* **API v1** (``/api/1/datasets/?q=``, also dataservices and organizations): udata wraps every
  space-separated word of ``q`` in quotes and runs a MongoDB ``$text`` query on the text index,
  which is on ``title`` only (``name`` for organizations). Quoted words are phrases, and
  MongoDB requires every phrase: each word must occur in the title (case- and
  accent-insensitive substring), and the results are ordered by MongoDB's text score.
  (udata ``core/dataset/api.py`` ``DatasetApiParser.parse_filters``; ``core/dataset/models.py``
  index ``$title``.)
* **API v2** (``/api/2/datasets/search/``): udata's search service builds an Elasticsearch
  ``bool`` of ``should`` clauses (``udata_search_service/search_clients.py``
  ``query_datasets``): a phrase ``multi_match`` (title^15, acronym^15, description^8,
  organization_name^8, resources_titles^5), a ``match`` on title+acronym+organization with
  ``operator: and`` (boost 8), a ``cross_fields`` ``multi_match`` with ``operator: and``
  (title^7, acronym^7, description^4, organization_name^4, resources_titles^2), each wrapped
  in a ``function_score`` multiplying by ``sqrt(8·orga_sp) · sqrt(4·ln(views+2)) ·
  sqrt(4·ln(followers+2)) · sqrt(ln(orga_followers+2)) · sqrt(featured)`` (``orga_sp`` and
  ``featured`` are 4 or 1), and an unboosted ``most_fields`` match on title and organization
  name with ``operator: and`` and ``fuzziness: AUTO:4,6``. A dataset matches when every query
  term is found across those fields, or every term is within the fuzzy distance of a title
  (or organization name) term.

The twin computes BM25 (k1 = 1.2, b = 0.75) per field with numpy over an inverted index that
is built once per catalogue and cached on disk, so a query costs a few milliseconds over
120,000 datasets.
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import os
import re
import tempfile
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import numpy.typing as npt

from datagouv_eval_pipeline.base.cache_home import project_cache_dir
from datagouv_eval_pipeline.base.text import fold

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


STOP_WORDS: frozenset[str] = frozenset(fold(w) for w in FRENCH_FUNCTION_WORDS)


def light_stem(token: str) -> str:
    """Return the light French stem of a folded token.

    In the manner of Elasticsearch's ``light_french`` stemmer (Savoy's rules): plural and a
    few suffixes removed, doubled letters collapsed, final ``r``/``e`` dropped on longer words.

    ``équipements`` and ``équipement`` share a stem, and so do ``sportifs`` and ``sportif``;
    short words (``bus``, ``gaz``) stay intact.
    """
    s = token
    if len(s) > 5 and s.endswith("aux") and s[-4] != "e":
        s = s[:-2] + "l"  # chevaux -> cheval; réseaux keeps its stem
    elif len(s) > 3 and s[-1] == "x":
        s = s[:-1]
    if len(s) > 3 and s[-1] == "s":
        s = s[:-1]
    if len(s) > 6 and s.endswith("ement"):
        s = s[:-4]
    if len(s) > 4:
        collapsed = [s[0]]
        for ch in s[1:]:
            if ch != collapsed[-1] or ch.isdigit():
                collapsed.append(ch)
        s = "".join(collapsed)
    if len(s) > 4 and s.endswith("ie"):
        s = s[:-2]
    if len(s) > 4:
        if s[-1] == "r":
            s = s[:-1]
        if s[-1] == "e":
            s = s[:-1]
        if s[-1] == "e":
            s = s[:-1]
    return s


_STEMS: dict[str, str] = {}


def tokenize(text: str) -> list[str]:
    """Analyse ``text`` into search terms: folded, split, stop words removed, light-stemmed.

    Args:
        text: Any user or catalog text.

    Returns:
        The terms in their order of appearance (duplicates kept).
    """
    out = []
    stems = _STEMS
    for tok in _TOKEN_RE.findall(fold(text)):
        if tok in STOP_WORDS:
            continue
        stem = stems.get(tok)
        if stem is None:
            stem = light_stem(tok)
            if len(stems) < 1_000_000:
                stems[tok] = stem
        out.append(stem)
    return out


def fuzzy_distance(term: str) -> int:
    """Return the edit distance Elasticsearch's ``fuzziness: AUTO:4,6`` allows for ``term``."""
    return 0 if len(term) < 4 else 1 if len(term) < 6 else 2


def edit_distance(a: str, b: str, limit: int) -> int:
    """Return the optimal-string-alignment distance of ``a`` and ``b`` (``limit + 1`` if over)."""
    if abs(len(a) - len(b)) > limit:
        return limit + 1
    previous2: list[int] = []
    previous = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        current = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            value = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                value = min(value, previous2[j - 2] + 1)
            current[j] = value
        if min(current) > limit:
            return limit + 1
        previous2, previous = previous, current
    return previous[-1]


def edit_distances(term: str, words: Sequence[str]) -> npt.NDArray[np.int64]:
    """Return :func:`edit_distance` (unbounded) of ``term`` to each of ``words``, vectorised.

    One dynamic-programming table per word, all filled at once: a column of numpy operations
    per (term letter, word position) instead of a Python loop per word.
    """
    if not words:
        return np.zeros(0, dtype=np.int64)
    width = max(len(w) for w in words)
    count = len(words)
    letters = np.frombuffer(
        "".join(w.ljust(width, "\0") for w in words).encode("latin-1", "replace"), dtype=np.uint8
    ).reshape(count, width)
    lengths = np.array([len(w) for w in words], dtype=np.int64)
    query = term.encode("latin-1", "replace")
    previous2 = np.zeros((count, width + 1), dtype=np.int64)
    previous = np.tile(np.arange(width + 1, dtype=np.int64), (count, 1))
    for i in range(1, len(query) + 1):
        current = np.empty_like(previous)
        current[:, 0] = i
        cost = (letters != query[i - 1]).astype(np.int64)
        for j in range(1, width + 1):
            value = np.minimum(previous[:, j] + 1, current[:, j - 1] + 1)
            value = np.minimum(value, previous[:, j - 1] + cost[:, j - 1])
            if i > 1 and j > 1:
                swapped = (letters[:, j - 2] == query[i - 1]) & (letters[:, j - 1] == query[i - 2])
                value = np.where(swapped, np.minimum(value, previous2[:, j - 2] + 1), value)
            current[:, j] = value
        previous2, previous = previous, current
    return previous[np.arange(count), lengths]


# --------------------------------------------------------------------------------------------
# The inverted index

K1 = 1.2
B = 0.75
INDEX_VERSION = "2"  # bump when the analyser or the index layout changes: old caches are ignored
CACHE_ENV = "DATAGOUV_EVAL_CACHE_DIR"
_ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789"


def cache_dir() -> Path:
    """Return where search indexes are cached: ``$DATAGOUV_EVAL_CACHE_DIR``, else the user cache."""
    return project_cache_dir("search", CACHE_ENV)


@dataclass
class FieldIndex:
    """An inverted index over documents made of named text fields (CSR postings per field).

    For field ``f`` and term id ``t``, the postings are ``docs[f][offsets[f][t]:offsets[f][t+1]]``
    (ascending row numbers) with their term frequencies ``tfs[f]``; ``lengths[f]`` holds each
    document's number of terms in ``f``.
    """

    vocab: dict[str, int]
    fields: tuple[str, ...]
    n_docs: int
    offsets: dict[str, npt.NDArray[np.int64]]
    docs: dict[str, npt.NDArray[np.int32]]
    tfs: dict[str, npt.NDArray[np.uint16]]
    lengths: dict[str, npt.NDArray[np.uint16]]
    folded_titles: list[str]
    # Arrays by row computed with the index and cached with it (the catalogue's boosts).
    extras: dict[str, npt.NDArray[np.float64]] = field(default_factory=dict)
    _fuzzy: tuple[npt.NDArray[np.int64], npt.NDArray[np.int16], npt.NDArray[np.uint8]] | None = (
        field(default=None, repr=False)
    )
    _terms: list[str] | None = field(default=None, repr=False)
    _avg: dict[str, float] = field(default_factory=dict, repr=False)
    _norms: dict[tuple[str, str], tuple[npt.NDArray[np.int32], npt.NDArray[np.float64]]] = field(
        default_factory=dict, repr=False
    )

    @classmethod
    def build(
        cls, docs: Sequence[Mapping[str, str]], fields: Sequence[str], title_field: str = "title"
    ) -> FieldIndex:
        """Index ``docs`` (``{field: text}``; for ``tags`` a comma-separated list).

        Texts that repeat across documents (organization names, tags) are analysed once.
        """
        vocab: dict[str, int] = {}
        memo: dict[str, list[str]] = {}
        per_field: dict[str, tuple[list[int], list[int], list[int], list[int]]] = {
            f: ([], [], [], []) for f in fields
        }
        for row, doc in enumerate(docs):
            for name in fields:
                text = doc.get(name) or ""
                if name in ("organization", "tags"):
                    tokens = memo.get(text)
                    if tokens is None:
                        tokens = tokenize(text.replace(",", " ").replace("-", " "))
                        memo[text] = tokens
                else:
                    tokens = tokenize(text)
                terms, rows, tfs, lengths = per_field[name]
                lengths.append(len(tokens))
                for term, count in Counter(tokens).items():
                    term_id = vocab.setdefault(term, len(vocab))
                    terms.append(term_id)
                    rows.append(row)
                    tfs.append(count)
        n_vocab = len(vocab)
        offsets, doc_arrays, tf_arrays, length_arrays = {}, {}, {}, {}
        for name in fields:
            terms, rows, tfs, lengths = per_field[name]
            term_arr = np.array(terms, dtype=np.int64)
            row_arr = np.array(rows, dtype=np.int32)
            order = np.lexsort((row_arr, term_arr))
            offsets[name] = np.concatenate(
                ([0], np.cumsum(np.bincount(term_arr, minlength=n_vocab)))
            ).astype(np.int64)
            doc_arrays[name] = row_arr[order]
            tf_arrays[name] = np.minimum(np.array(tfs, dtype=np.int64), 65535).astype(np.uint16)[
                order
            ]
            length_arrays[name] = np.minimum(np.array(lengths, dtype=np.int64), 65535).astype(
                np.uint16
            )
        titles = [fold(doc.get(title_field) or "") for doc in docs]
        return cls(
            vocab, tuple(fields), len(docs), offsets, doc_arrays, tf_arrays, length_arrays, titles
        )

    # ------------------------------------------------------------------ persistence

    def save(self, path: Path) -> None:
        """Write the index to ``path`` (numpy ``.npz``) atomically."""
        arrays: dict[str, npt.NDArray[np.generic]] = {
            "vocab": np.frombuffer("\n".join(self.terms).encode("utf-8"), dtype=np.uint8),
            "titles": np.frombuffer("\x1f".join(self.folded_titles).encode("utf-8"), np.uint8),
            "meta": np.array([self.n_docs, len(self.fields)], dtype=np.int64),
            "fields": np.frombuffer("\n".join(self.fields).encode("utf-8"), dtype=np.uint8),
        }
        for name, values in self.extras.items():
            arrays[f"extra.{name}"] = values
        for name in self.fields:
            arrays[f"offsets.{name}"] = self.offsets[name]
            arrays[f"docs.{name}"] = self.docs[name]
            arrays[f"tfs.{name}"] = self.tfs[name]
            arrays[f"lengths.{name}"] = self.lengths[name]
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        with os.fdopen(handle, "wb") as out:
            np.savez(out, **arrays)  # type: ignore[arg-type]
        os.replace(tmp, path)

    @classmethod
    def load(cls, path: Path) -> FieldIndex:
        """Read an index written by :meth:`save`."""
        with np.load(path) as data:
            terms = bytes(data["vocab"]).decode("utf-8").split("\n") if data["vocab"].size else []
            fields = tuple(bytes(data["fields"]).decode("utf-8").split("\n"))
            n_docs = int(data["meta"][0])
            raw_titles = bytes(data["titles"]).decode("utf-8")
            titles = raw_titles.split("\x1f") if n_docs else []
            index = cls(
                {t: i for i, t in enumerate(terms)},
                fields,
                n_docs,
                {f: data[f"offsets.{f}"] for f in fields},
                {f: data[f"docs.{f}"] for f in fields},
                {f: data[f"tfs.{f}"] for f in fields},
                {f: data[f"lengths.{f}"] for f in fields},
                titles,
                {k[len("extra.") :]: data[k] for k in data.files if k.startswith("extra.")},
            )
        index._terms = terms
        return index

    @classmethod
    def cached(
        cls, key: str, build: Callable[[], FieldIndex], directory: Path | None = None
    ) -> FieldIndex:
        """Return the index cached under ``key``, building and caching it if absent.

        A cache that cannot be read or written is not an error: the index is built in memory.
        """
        digest = hashlib.sha256(f"{INDEX_VERSION}:{key}".encode()).hexdigest()[:32]
        path = (directory or cache_dir()) / f"{digest}.npz"
        if path.is_file():
            try:
                return cls.load(path)
            except (OSError, ValueError, KeyError):
                pass
        index = build()
        with contextlib.suppress(OSError):
            index.save(path)
        return index

    # ------------------------------------------------------------------ lookups

    @property
    def terms(self) -> list[str]:
        """Return the vocabulary by term id."""
        if self._terms is None:
            terms = [""] * len(self.vocab)
            for term, ident in self.vocab.items():
                terms[ident] = term
            self._terms = terms
        return self._terms

    def postings(
        self, name: str, term: str
    ) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.uint16]]:
        """Return the rows containing ``term`` in field ``name`` and their term frequencies."""
        ident = self.vocab.get(term)
        if ident is None or name not in self.offsets:
            return _EMPTY_ROWS, _EMPTY_TFS
        start, end = self.offsets[name][ident], self.offsets[name][ident + 1]
        return self.docs[name][start:end], self.tfs[name][start:end]

    def document_frequency(self, term: str, fields: Iterable[str]) -> int:
        """Return the largest document frequency of ``term`` over ``fields`` (cross_fields)."""
        ident = self.vocab.get(term)
        if ident is None:
            return 0
        return max(
            (
                int(self.offsets[f][ident + 1] - self.offsets[f][ident])
                for f in fields
                if f in self.offsets
            ),
            default=0,
        )

    def term_scores(
        self, name: str, term: str
    ) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.float64]]:
        """Return the rows holding ``term`` in field ``name`` and their BM25 tf (memoised)."""
        key = (name, term)
        found = self._norms.get(key)
        if found is None:
            rows, tfs = self.postings(name, term)
            found = (rows, self.tf_norm(name, rows, tfs) if rows.size else np.zeros(0))
            if len(self._norms) > 100_000:
                self._norms.clear()
            self._norms[key] = found
        return found

    def tf_norm(
        self, name: str, rows: npt.NDArray[np.int32], tfs: npt.NDArray[np.uint16]
    ) -> npt.NDArray[np.float64]:
        """Return BM25's saturated term frequency of postings in field ``name``."""
        lengths = self.lengths[name]
        avg = self._avg.get(name)
        if avg is None:
            avg = self._avg[name] = float(lengths.mean()) if self.n_docs else 0.0
        tf = tfs.astype(np.float64)
        if not avg:
            return tf * (K1 + 1) / (tf + K1)
        norm = 1.0 - B + B * lengths[rows].astype(np.float64) / avg
        return tf * (K1 + 1) / (tf + K1 * norm)

    def _fuzzy_arrays(
        self, fields: Sequence[str]
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int16], npt.NDArray[np.uint8]]:
        """Return the fuzzy-searchable term ids sorted by length, their lengths and letters."""
        present = np.zeros(len(self.vocab), dtype=bool)
        for name in fields:
            present |= np.diff(self.offsets[name]) > 0
        all_terms = self.terms
        ids = np.flatnonzero(present)
        words = [all_terms[i] for i in ids]
        lengths = np.array([len(w) for w in words], dtype=np.int16)
        by_length = np.argsort(lengths, kind="stable")
        ids, lengths = ids[by_length], lengths[by_length]
        words = [words[i] for i in by_length]
        # Letter counts of every term at once: one row per term, one column per character.
        letters = np.zeros((len(words), len(_ALPHABET)), dtype=np.uint8)
        if words:
            chars = np.frombuffer("".join(words).encode("ascii"), dtype=np.uint8)
            owner = np.repeat(np.arange(len(words)), lengths.astype(np.int64))
            column = np.full(256, -1, dtype=np.int64)
            for position, ch in enumerate(_ALPHABET):
                column[ord(ch)] = position
            where = column[chars]
            keep = where >= 0
            counts = np.zeros((len(words), len(_ALPHABET)), dtype=np.int64)
            np.add.at(counts, (owner[keep], where[keep]), 1)
            letters = np.minimum(counts, 255).astype(np.uint8)
        return ids, lengths, letters

    def fuzzy_terms(self, term: str, fields: Sequence[str], max_expansions: int = 50) -> list[str]:
        """Return the terms of ``fields`` within ``AUTO:4,6`` of ``term`` (itself first).

        Candidates are narrowed with numpy (length, then letter counts: an edit changes at
        most two of them) and checked exactly; at most ``max_expansions`` are kept, nearest
        first, as Elasticsearch's fuzzy query does.
        """
        limit = fuzzy_distance(term)
        exact = [term] if term in self.vocab else []
        if not limit:
            return exact
        if self._fuzzy is None:
            self._fuzzy = self._fuzzy_arrays(fields)
        ids, lengths, letters = self._fuzzy
        wanted = np.zeros(len(_ALPHABET), dtype=np.int16)
        for ch in term:
            if ch in _ALPHABET:
                wanted[_ALPHABET.index(ch)] += 1
        low = int(np.searchsorted(lengths, len(term) - limit, side="left"))
        high = int(np.searchsorted(lengths, len(term) + limit, side="right"))
        gap = np.abs(letters[low:high].astype(np.int16) - wanted).sum(axis=1)
        near = low + np.flatnonzero(gap <= 2 * limit)
        terms = self.terms
        words = [terms[int(ids[p])] for p in near]
        words = [w for w in words if w != term]
        distances = edit_distances(term, words)
        found = sorted(
            (int(d), w) for d, w in zip(distances.tolist(), words, strict=True) if d <= limit
        )
        return exact + [c for _, c in found[: max(0, max_expansions - len(exact))]]


_EMPTY_ROWS = np.zeros(0, dtype=np.int32)
_EMPTY_TFS = np.zeros(0, dtype=np.uint16)


# --------------------------------------------------------------------------------------------
# Query models


@dataclass
class Segment:
    """A searchable part of a collection (the catalogue, the curated records).

    Attributes:
        index: The text index; row ``r`` is the segment's ``r``-th object.
        boost: The v2 ``function_score`` multiplier of each row (:func:`popularity_boost`).
    """

    index: FieldIndex
    boost: npt.NDArray[np.float64]


@dataclass(frozen=True)
class TextModel:
    """The fields and boosts of one v2 search (one ``query_*`` of udata's search service).

    Attributes:
        cross: ``cross_fields`` fields and boosts (every term in one of them).
        phrase: ``phrase`` fields and boosts (the whole query in one field).
        concat: Fields of the ``concat_title_org`` match (every term in them), if any.
        concat_boost: Its boost.
        fuzzy: Fields of the unboosted ``most_fields`` fuzzy match (every term in one field).
    """

    cross: Mapping[str, float]
    phrase: Mapping[str, float]
    concat: tuple[str, ...] = ()
    concat_boost: float = 8.0
    fuzzy: tuple[str, ...] = ()


# udata_search_service/search_clients.py, query_datasets. The export has no description;
# tags stand in for it (weight of the description) until records carry one.
DATASET_MODEL = TextModel(
    cross={
        "title": 7,
        "acronym": 7,
        "description": 4,
        "tags": 4,
        "organization": 4,
        "resources": 2,
    },
    phrase={"title": 15, "acronym": 15, "description": 8, "organization": 8, "resources": 5},
    concat=("title", "acronym", "organization"),
    fuzzy=("title", "organization"),
)
# query_dataservices (documentation_content is not in the twin).
DATASERVICE_MODEL = TextModel(
    cross={"title": 7, "description": 4, "organization": 4},
    phrase={"title": 15, "description": 8, "organization": 8},
    fuzzy=("title", "organization"),
)
# query_organizations: name (indexed as "title"), acronym, description; its fuzzy clause
# targets a "title" field organizations do not have, so it never matches.
ORGANIZATION_MODEL = TextModel(
    cross={"title": 7, "acronym": 7, "description": 4},
    phrase={"title": 15, "acronym": 15, "description": 8},
)


def popularity_boost(
    views: npt.ArrayLike,
    followers: npt.ArrayLike,
    *,
    public_service: npt.ArrayLike | None = None,
    featured: npt.ArrayLike | None = None,
    org_followers: npt.ArrayLike | None = None,
    views_factor: float = 4.0,
) -> npt.NDArray[np.float64]:
    """Return the product of udata's ``field_value_factor`` functions (modifier ``sqrt``).

    The search service indexes ``ln(x + 2)`` of views and followers, and 4 or 1 for
    ``orga_sp`` (public-service organization) and ``featured``; datasets multiply
    ``sqrt(8·orga_sp)``, ``sqrt(4·views)``, ``sqrt(4·followers)``, ``sqrt(orga_followers)``
    and ``sqrt(featured)``.
    """
    boost = np.sqrt(views_factor * np.log(np.asarray(views, dtype=np.float64) + 2))
    boost *= np.sqrt(4 * np.log(np.asarray(followers, dtype=np.float64) + 2))
    if public_service is not None:
        boost *= np.sqrt(8 * np.where(np.asarray(public_service, dtype=bool), 4.0, 1.0))
    if org_followers is not None:
        boost *= np.sqrt(np.log(np.asarray(org_followers, dtype=np.float64) + 2))
    if featured is not None:
        boost *= np.sqrt(np.where(np.asarray(featured, dtype=bool), 4.0, 1.0))
    return boost


@dataclass
class Matches:
    """The rows of one segment a query matched, with their scores."""

    rows: npt.NDArray[np.int64]
    scores: npt.NDArray[np.float64]


def _idf(segments: Sequence[Segment], term: str, fields: Iterable[str]) -> float:
    names = list(fields)
    n_docs = sum(s.index.n_docs for s in segments)
    df = sum(s.index.document_frequency(term, names) for s in segments)
    return math.log(1.0 + (n_docs - df + 0.5) / (df + 0.5))


def _analyze_folded(text: str) -> list[str]:
    stems = _STEMS
    out = []
    for tok in _TOKEN_RE.findall(text):
        if tok in STOP_WORDS:
            continue
        stem = stems.get(tok)
        if stem is None:
            stem = light_stem(tok)
            if len(stems) < 1_000_000:
                stems[tok] = stem
        out.append(stem)
    return out


def _contains_phrase(folded_title: str, terms: Sequence[str]) -> bool:
    tokens = _analyze_folded(folded_title)
    width = len(terms)
    wanted = list(terms)
    return any(tokens[i : i + width] == wanted for i in range(len(tokens) - width + 1))


def _local(
    slots: npt.NDArray[np.int64], rows: npt.NDArray[np.int32], values: npt.NDArray[np.float64]
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
    """Return the candidate positions of the ``rows`` that are candidates, and their values.

    ``slots`` maps every row of the segment to its position among the candidates, or -1 (a
    gather per posting, where a binary search per row cost twice as much).
    """
    if not rows.size:
        return np.zeros(0, dtype=np.int64), np.zeros(0)
    positions = slots[rows]
    found = positions >= 0
    return positions[found], values[found]


# Fuzzy expansions by (term, fields): the vocabulary never changes under a segment.
_EXPANSIONS: dict[tuple[int, str, tuple[str, ...]], list[str]] = {}


def match_v2(
    segments: Sequence[Segment],
    query: str,
    model: TextModel,
    masks: Sequence[npt.NDArray[np.bool_]],
) -> list[Matches]:
    """Evaluate a v2 (Elasticsearch) query on every segment; see the module docstring.

    Args:
        segments: The collection's segments.
        query: The user's ``q``.
        model: The fields and boosts of the collection.
        masks: Per segment, the rows the filters and visibility keep.

    Returns:
        Per segment, the matching kept rows and their scores.
    """
    terms = list(dict.fromkeys(tokenize(query)))
    if not terms:
        return [Matches(np.zeros(0, np.int64), np.zeros(0)) for _ in segments]
    idf_cache: dict[str, float] = {}

    def idf(term: str) -> float:
        if term not in idf_cache:
            idf_cache[term] = _idf(segments, term, model.cross)
        return idf_cache[term]

    expansions: dict[str, list[str]] = {}
    if model.fuzzy:
        for term in terms:
            seen: dict[str, None] = {}
            for segment in segments:
                key = (id(segment.index), term, model.fuzzy)
                found = _EXPANSIONS.get(key)
                if found is None:
                    found = segment.index.fuzzy_terms(term, model.fuzzy)
                    if len(_EXPANSIONS) > 50_000:
                        _EXPANSIONS.clear()
                    _EXPANSIONS[key] = found
                for candidate in found:
                    seen.setdefault(candidate)
            expansions[term] = list(seen)[:50]
    return [
        _match_v2_segment(segment, mask, terms, model, idf, expansions)
        for segment, mask in zip(segments, masks, strict=True)
    ]


def _match_v2_segment(
    segment: Segment,
    mask: npt.NDArray[np.bool_],
    terms: list[str],
    model: TextModel,
    idf: Callable[[str], float],
    expansions: Mapping[str, list[str]],
) -> Matches:
    index = segment.index
    # Postings of every (term, field) the clauses read, scored idf * BM25 tf.
    cross_post: dict[tuple[str, str], tuple[npt.NDArray[np.int32], npt.NDArray[np.float64]]] = {}
    fuzzy_post: dict[tuple[str, str], list[tuple[npt.NDArray[np.int32], npt.NDArray[np.float64]]]]
    fuzzy_post = {}
    pieces = []
    for term in terms:
        for name in model.cross:
            rows, norms = index.term_scores(name, term)
            if rows.size:
                cross_post[(term, name)] = (rows, idf(term) * norms)
                pieces.append(rows)
        for name in model.fuzzy:
            lists = []
            for candidate in expansions.get(term, [term]):
                rows, norms = index.term_scores(name, candidate)
                if rows.size:
                    lists.append((rows, idf(candidate) * norms))
                    pieces.append(rows)
            fuzzy_post[(term, name)] = lists
    if not pieces:
        return Matches(np.zeros(0, np.int64), np.zeros(0))
    present = np.zeros(index.n_docs, dtype=bool)
    for rows in pieces:
        present[rows] = True
    candidates = np.flatnonzero(present & mask).astype(np.int64)
    m = candidates.size
    slots = np.full(index.n_docs, -1, dtype=np.int64)
    slots[candidates] = np.arange(m, dtype=np.int64)
    cross = np.zeros(m)
    cross_all = np.ones(m, dtype=bool)
    concat = np.zeros(m)
    concat_all = np.ones(m, dtype=bool)
    phrase_single = np.zeros(m)
    title_terms = np.zeros(m)
    title_all = np.ones(m, dtype=bool)
    fuzzy_scores = {f: np.zeros(m) for f in model.fuzzy}
    fuzzy_all = {f: np.ones(m, dtype=bool) for f in model.fuzzy}
    for term in terms:
        best = np.zeros(m)
        best_concat = np.zeros(m)
        best_phrase = np.zeros(m)
        in_title = np.zeros(m)
        for name, weight in model.cross.items():
            posting = cross_post.get((term, name))
            if posting is None:
                continue
            where, value = _local(slots, *posting)
            best[where] = np.maximum(best[where], weight * value)
            best_phrase[where] = np.maximum(best_phrase[where], model.phrase.get(name, 0.0) * value)
            if name in model.concat:
                best_concat[where] = np.maximum(best_concat[where], value)
            if name == "title":
                in_title[where] = value
        cross += best
        cross_all &= best > 0
        concat += best_concat
        concat_all &= best_concat > 0
        phrase_single += best_phrase
        title_terms += in_title
        title_all &= in_title > 0
        for name in model.fuzzy:
            found = np.zeros(m)
            for posting in fuzzy_post.get((term, name), []):
                where, value = _local(slots, *posting)
                found[where] = np.maximum(found[where], value)
            fuzzy_scores[name] += found
            fuzzy_all[name] &= found > 0
    if len(terms) == 1:
        phrase = phrase_single
    else:
        # A phrase needs the terms side by side: checked on the titles holding them all.
        phrase = np.zeros(m)
        local = np.flatnonzero(title_all)
        if local.size > 500:
            local = local[np.argpartition(-title_terms[local], 500)[:500]]
        titles = index.folded_titles
        hits = [int(i) for i in local if _contains_phrase(titles[int(candidates[i])], terms)]
        phrase[hits] = model.phrase.get("title", 0.0) * title_terms[hits]
    text = phrase + np.where(cross_all, cross, 0.0)
    if model.concat:
        text += model.concat_boost * np.where(concat_all, concat, 0.0)
    matched = cross_all.copy()
    fuzzy = np.zeros(m)
    for name in model.fuzzy:
        matched |= fuzzy_all[name]
        fuzzy += np.where(fuzzy_all[name], fuzzy_scores[name], 0.0)
    rows_out = candidates[matched]
    scores = text[matched] * segment.boost[rows_out] + fuzzy[matched]
    return Matches(rows_out, scores)


# udata-search-service config.py ``SEARCH_SYNONYMS`` (equivalent forms, ``expand: true``): its
# ``french_synonym`` filter runs after folding and elision, before stemming and stop words.
SEARCH_SYNONYMS: tuple[str, ...] = (
    "AMD, administrateur ministériel des données, AMDAC",
    "lolf, loi de finance",
    "waldec, RNA, répertoire national des associations",
    "ovq, baromètre des résultats",
    "contour, découpage",
    "rp, recensement de la population",
)
MAX_SYNONYM_VARIANTS = 9


def _synonym_rules() -> list[list[tuple[str, ...]]]:
    return [
        [tuple(_TOKEN_RE.findall(fold(form))) for form in rule.split(",")]
        for rule in SEARCH_SYNONYMS
    ]


_RULES = _synonym_rules()


def synonym_variants(query: str) -> list[str]:
    """Return ``query`` and its rewrites with each synonym of a form it holds.

    Elasticsearch expands a synonym into a token graph and matches any of its paths; the twin
    runs one query per path and keeps each dataset's best score (:func:`best_of`). Forms are
    matched on folded words before stemming, as the filter sees them (``contours`` is not
    ``contour``). The query itself comes first.
    """
    tokens = _TOKEN_RE.findall(fold(query))
    variants: list[list[str]] = [tokens]
    for rule in _RULES:
        grown: list[list[str]] = []
        for words in variants:
            grown.append(words)
            for form in rule:
                width = len(form)
                at = next(
                    (
                        i
                        for i in range(len(words) - width + 1)
                        if tuple(words[i : i + width]) == form
                    ),
                    None,
                )
                if at is None:
                    continue
                for other in rule:
                    if other != form:
                        grown.append(words[:at] + list(other) + words[at + width :])
                break
        variants = grown[:MAX_SYNONYM_VARIANTS]
    if len(variants) == 1:
        return [query]
    return [query] + [" ".join(words) for words in variants[1:]]


def best_of(results: Sequence[Sequence[Matches]]) -> list[Matches]:
    """Per segment, the rows any of ``results`` matched, each with its best score."""
    merged = []
    for per_segment in zip(*results, strict=True):
        rows = np.concatenate([m.rows for m in per_segment])
        scores = np.concatenate([m.scores for m in per_segment])
        if not rows.size:
            merged.append(Matches(np.zeros(0, np.int64), np.zeros(0)))
            continue
        order_ = np.lexsort((-scores, rows))
        rows, scores = rows[order_], scores[order_]
        first = np.concatenate(([True], rows[1:] != rows[:-1]))
        merged.append(Matches(rows[first].astype(np.int64), scores[first]))
    return merged


def add_matches(matches: Sequence[Matches], extra: Sequence[Matches]) -> list[Matches]:
    """Per segment, the union of two clauses' rows with their scores summed (a ``bool`` should)."""
    out = []
    for a, b in zip(matches, extra, strict=True):
        if not b.rows.size:
            out.append(a)
            continue
        rows = np.concatenate([a.rows, b.rows])
        scores = np.concatenate([a.scores, b.scores])
        unique, inverse = np.unique(rows, return_inverse=True)
        out.append(
            Matches(
                unique.astype(np.int64), np.bincount(inverse, weights=scores).astype(np.float64)
            )
        )
    return out


def keyword_idf(n_docs: int) -> float:
    """BM25 idf of a keyword held by one document (a dataset or resource id)."""
    return math.log(1.0 + (n_docs - 1 + 0.5) / 1.5)


_WORD_EDGES = " \t\"'.,;:!?()[]{}«»"


def match_v1(
    segments: Sequence[Segment], query: str, masks: Sequence[npt.NDArray[np.bool_]]
) -> list[Matches]:
    """Evaluate a v1 (MongoDB ``$text``) query: every word of ``q`` in the title.

    udata quotes each space-separated word, so each is a phrase MongoDB requires; a phrase
    matches where the title contains it (folded). The score is MongoDB's text score on the
    title: per term ``freq · (0.5 + 0.5 · tf / title_terms)``, ``freq = 2 - 2^(1 - tf)``.
    A query whose words are all stop words finds nothing, as in MongoDB.
    """
    words = [fold(w).strip(_WORD_EDGES) for w in query.split(" ")]
    words = [w for w in words if w]
    stems = [list(dict.fromkeys(tokenize(w))) for w in words]
    terms = list(dict.fromkeys(t for group in stems for t in group))
    results = []
    for segment, mask in zip(segments, masks, strict=True):
        index = segment.index
        if not terms:
            results.append(Matches(np.zeros(0, np.int64), np.zeros(0)))
            continue
        candidates: npt.NDArray[np.int32] | None = None
        score = np.zeros(index.n_docs)
        lengths = index.lengths.get("title")
        for term in terms:
            rows, tfs = index.postings("title", term)
            candidates = rows if candidates is None else np.intersect1d(candidates, rows)
            if rows.size and lengths is not None:
                tf = tfs.astype(np.float64)
                size = np.maximum(lengths[rows].astype(np.float64), 1.0)
                score[rows] += (2.0 - np.power(2.0, 1.0 - tf)) * (0.5 + 0.5 * tf / size)
        assert candidates is not None
        titles = index.folded_titles
        keep = [int(r) for r in candidates if mask[r] and all(w in titles[r] for w in words)]
        rows_out = np.array(keep, dtype=np.int64)
        results.append(Matches(rows_out, score[rows_out]))
    return results


def browse(
    segments: Sequence[Segment], masks: Sequence[npt.NDArray[np.bool_]], by_boost: bool
) -> list[Matches]:
    """Return every kept row: scored by the v2 boost (``match_all`` function score) or 0."""
    results = []
    for segment, mask in zip(segments, masks, strict=True):
        rows = np.flatnonzero(mask).astype(np.int64)
        scores = segment.boost[rows] if by_boost else np.zeros(rows.size)
        results.append(Matches(rows, scores))
    return results


def order(
    matches: Sequence[Matches],
    keys: Sequence[npt.NDArray[np.float64] | None] | None = None,
    *,
    descending: bool = True,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Return the segments and rows of every match, best first.

    Without ``keys`` the order is by score; with ``keys`` (one array by row per segment) by
    key (``descending`` or not), then score, as Elasticsearch sorts (``sort``, then
    ``_score``). Remaining ties go by segment, then row (rows are in id order).
    """
    empty = np.zeros(0, dtype=np.int64)
    seg = np.concatenate(
        [empty] + [np.full(m.rows.size, i, dtype=np.int64) for i, m in enumerate(matches)]
    )
    rows = np.concatenate([empty] + [m.rows for m in matches])
    scores = np.concatenate([np.zeros(0)] + [m.scores for m in matches])
    sort_keys: list[npt.NDArray[np.generic]] = [rows, seg, -np.round(scores, 9)]
    if keys is not None:
        values = np.concatenate(
            [np.zeros(0)]
            + [
                (k[m.rows].astype(np.float64) if k is not None else np.zeros(m.rows.size))
                for k, m in zip(keys, matches, strict=True)
            ]
        )
        sort_keys.append(-values if descending else values)
    ranked = np.lexsort(sort_keys)
    return seg[ranked], rows[ranked]
