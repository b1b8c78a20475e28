"""Reading the question: search words, dates, places, what kind of answer it wants."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache

_STOPWORD_TEXT = """
    a ai aie aient aies ait alors as au aucun aucune aupres aura aurai auraient aurais aurait
    aussi autre autres aux avais avait avant avec avez aviez avoir avons ayant bien bon bonjour
    ca car ce ceci cela celle celles celui cependant certain certains ces cet cette ceux chaque
    chez ci comme comment concernant d dans de des deja depuis dire dit doit donc dont du elle
    elles en encore entre es est et etaient etais etait etant ete etre eu eux faire fait faut
    font hors ici il ils j je jusqu l la le les leur leurs lui m ma mais me meme memes mes moi
    moins mon n ne ni nos notre nous on ont ou par parce pas peu peut peuvent peux plus plutot
    pour pourquoi pouvez pouvoir puis qu quand que quel quelle quelles quels qui quoi s sa sans
    se selon ses si sinon soit son sont sous sur t ta te tes toi ton toujours tous tout toute
    toutes tres tu un une unes uns vers voici voila vos votre vous y aimerais aimerions
    voudrais voudrions souhaite souhaiterais cherche cherchons recherche trouver trouve trouvez
    donner donnez dites savoir connaitre obtenir obtenu recuperer verifier utiliser existe
    existent exact exacte idealement possible merci svp prepare prepare redige travaille dois
    doit devons besoin veux voulons afin ainsi exemple etc combien nombre beaucoup liste
    chiffre chiffres quelles lesquels laquelle lequel the of and or to in for on with is are
    what which how many much do does can fr fichier fichiers fais suis sommes
"""
_STOPWORDS = frozenset(_STOPWORD_TEXT.split())
"""Words that carry no search meaning (French and English function words, question verbs and
a few filler words)."""

_GENERIC_TEXT = """
    donnee donnees jeu jeux base bases liste listes fichier fichiers data gouv datagouv site
    information informations source sources ressource ressources table tableau open dataset
    datasets file files list database api apis csv json excel format formats telecharger
    telechargement publie publies publiee publiees article etude projet application outil
    service services public publique publics publiques gratuit gratuite complet complete
    ligne lignes directement automatiquement aujourd hui jour annee annees mois semaine
    actuel actuelle dernier derniere derniers dernieres nouveau nouveaux nouvelle nouvelles
    question questions reponse chose choses type types cas personne gens hello please find
    get know need want looking dataset available existing there any some all debut debuts
    fin date dates periode lundi lundis mardi mercredi jeudi vendredi samedi dimanche veille
    hier demain visite visites visiteur visiteurs telechargements consulte consultee
    consultation consultations frequentation particulier notamment surtout environ seulement
    departement departements departemental departementale departementaux region regions
    regional regionale commune communes communal communale ville villes pays territoire
"""
_GENERIC = frozenset(_GENERIC_TEXT.split())
"""Words every catalogue question may use (data, file, list, API, dates, visits...): they
do not tell datasets apart, so a search built from them matches thousands of titles or none."""

_MONTHS = {
    "janvier": 1,
    "fevrier": 2,
    "mars": 3,
    "avril": 4,
    "mai": 5,
    "juin": 6,
    "juillet": 7,
    "aout": 8,
    "septembre": 9,
    "octobre": 10,
    "novembre": 11,
    "decembre": 12,
}
_DATE_OPERATORS = {
    "avant": "strictly_less",
    "apres": "strictly_greater",
    "depuis": "greater",
    "partir": "greater",
    "jusqu": "less",
}
_QUANTITY = re.compile(r"\b(combien|nombre|total|quel est le chiffre|how many)\b")
_API_WORDS = re.compile(r"\b(api|apis|service web|interface de programmation|webservice)\b")
_METRICS_WORDS = re.compile(
    r"\b(visite|visites|telechargement|telechargements|consulte|frequentation)\b"
)
_PLACE_MARKERS = frozenset({"a", "de", "du", "d", "dans", "en", "l"})
_ARTICLES = frozenset({"le", "la", "les", "l"})
_PREPOSITIONS = frozenset({"à", "a", "de", "du", "d'", "d’"})
_PLACE_NAME = re.compile(r"[A-ZÀ-Ý][a-zà-ÿ]+(?:-[A-ZÀ-Ý]?[a-zà-ÿ]+)*")


@lru_cache(maxsize=4096)
def fold(text: str) -> str:
    """Lower case without accents (``Équipements`` → ``equipements``)."""
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(c for c in decomposed if not unicodedata.combining(c)).lower()


@lru_cache(maxsize=1024)
def keywords(question: str, limit: int = 12) -> str:
    """The search words of a question: folded, without stop words, first ``limit`` kept."""
    words: list[str] = []
    for word in re.findall(r"[a-z0-9]+", fold(question)):
        if word in _STOPWORDS or (len(word) < 3 and not word.isdigit()) or word in words:
            continue
        if word.isdigit() and len(word) != 4:
            continue  # keep years, drop day numbers and quantities
        words.append(word)
    return " ".join(words[:limit])


@lru_cache(maxsize=1024)
def search_terms(question: str) -> tuple[str, ...]:
    """The question's content words, most specific first (see :func:`_ranked_terms`)."""
    return tuple(word for _, word in _ranked_terms(question))


_PLACE_RANK = 3
_VERB_ENDING = re.compile(r"(?:[^i]er|[^t]re|ir|ez|(?<!ti)ons|ront|raient|ait|aient|ees?|ant)$")
"""Endings of French infinitives, conjugated forms and participles (``convaincre``,
``apparaitront``, ``referencees``): ranked after nouns of the same length."""


@lru_cache(maxsize=1024)
def _ranked_terms(question: str) -> tuple[tuple[float, str], ...]:
    """The question's content words, most specific first (how a person picks search words).

    Stop words and generic catalogue words (:data:`_GENERIC`) are dropped. Acronyms come first
    (``RNCP``, ``SIRET``), then names capitalised inside a sentence (``Sirene``), then the
    other words, longer ones (domain nouns) first and verb forms after nouns; place names
    (capitalised after
    ``à``, ``de``, ``du``, ``d'``, ``dans``, ``en``) come last: they filter rows more often
    than they name a dataset. Ties keep the question's order. Words are folded (no accents).
    """
    ranked: list[tuple[float, int, int, str]] = []
    seen: set[str] = set()
    sentence_start = True
    previous = ""
    for position, match in enumerate(re.finditer(r"[\wÀ-ÿ]+|[.!?]", question)):
        raw = match.group(0)
        if raw in ".!?":
            sentence_start, previous = True, ""
            continue
        starts, before = sentence_start, previous
        sentence_start, previous = False, fold(raw)
        for word in re.findall(r"[a-z0-9]+", fold(raw)):
            if word in seen or word in _STOPWORDS or word in _GENERIC:
                continue
            if word.isdigit() or len(word) < 3 or word in _MONTHS:
                continue  # figures and dates filter rows, they do not name datasets
            seen.add(word)
            rank: float
            if raw.isupper() and len(raw) >= 2:
                rank = 0
            elif raw[0].isupper() and not starts and before in _PLACE_MARKERS:
                rank = _PLACE_RANK
            elif raw[0].isupper() and not starts:
                rank = 1
            elif _VERB_ENDING.search(word):
                rank = 2  # conjugated verbs and participles: what is done, not which data
            else:
                rank = 1.5
            ranked.append((rank, -len(word) if rank >= 1.5 else 0, position, word))
    return tuple((rank, word) for rank, *_, word in sorted(ranked))


def search_query(question: str, dropped: int = 0, size: int = 3) -> str | None:
    """The search query after ``dropped`` relaxations, or None when nothing is left to drop.

    The query holds the ``size`` most specific words of :func:`search_terms`; each
    relaxation drops the least specific word left, as a person does when an every-word
    search finds nothing; when the most specific word alone found nothing, the other words
    are tried alone, then the platform's name when the question names it (at most
    ``2 * size`` searches).
    """
    ranked = _ranked_terms(question)
    # Place names alone name no topic (they filter rows): without a topic word, no search.
    topical = any(rank < _PLACE_RANK for rank, _ in ranked)
    terms = [word for _, word in ranked][:size] if topical else []
    kept = len(terms) - dropped
    if kept >= 1:
        return " ".join(terms[:kept])
    if 0 < -kept + 1 < len(terms):
        return terms[-kept + 1]  # the most specific word alone found nothing: the next ones
    extra = dropped - (2 * len(terms) - 1) if terms else dropped
    if extra == 0 and PLATFORM in fold(question):
        return PLATFORM  # nothing more specific matched: the question is about the platform
    if extra == 0 and not terms:
        return keywords(question, limit=size) or None  # no topic word: the question's words
    return None


PLATFORM = "data.gouv.fr"
"""The catalogue's own name: the last search left when the question names it."""


def title_overlap(question: str, title: str) -> int:
    """How many of the question's topic words a title contains (light stems compared).

    A word matches a title word sharing its first five letters (``equipements`` and
    ``équipement``), or the whole word when shorter. Place names do not count: they say
    which rows, not which dataset.
    """
    title_words = {word[:5] for word in re.findall(r"[a-z0-9]+", fold(title))}
    return sum(
        1
        for rank, term in _ranked_terms(question)
        if rank < _PLACE_RANK and term[:5] in title_words
    )


def other_places(question: str, title: str) -> int:
    """How many place names a title holds that the question does not mention.

    ``Recensement des équipements sportifs à Paris`` answers a national question less well
    than the national dataset of the same title.
    """
    asked = fold(question)
    return sum(1 for name in _places_in(title) if fold(name) not in asked)


def _places_in(text: str) -> list[str]:
    """Capitalised words after ``à``, ``de``, ``du``, ``d'``, ``dans``, ``en`` (and an article)."""
    words = re.findall(r"[\wÀ-ÿ-]+", text.replace("’", " ").replace("'", " "))
    places = []
    for index, word in enumerate(words[1:], start=1):
        before = fold(words[index - 1])
        if before in _ARTICLES and index > 1:
            before = fold(words[index - 2])
        if before in _PLACE_MARKERS and word[:1].isupper():
            places.append(word)
    return places


def is_quantitative(question: str) -> bool:
    """Whether the question asks for a count or a figure."""
    return bool(_QUANTITY.search(fold(question)))


def asks_for_api(question: str) -> bool:
    """Whether the question asks for an API."""
    return bool(_API_WORDS.search(fold(question)))


def asks_for_metrics(question: str) -> bool:
    """Whether the question asks for visits or downloads."""
    return bool(_METRICS_WORDS.search(fold(question)))


@dataclass(frozen=True)
class DateBound:
    """A date condition read from the question (``avant le 28 juin 2012``).

    Attributes:
        operator: Tabular operator (``strictly_less``, ``greater``...).
        value: ISO date.
        creation: The question is about creation or publication dates.
    """

    operator: str
    value: str
    creation: bool


def date_bound(question: str) -> DateBound | None:
    """The first ``avant/après/depuis <date>`` condition of the question, if any."""
    folded = fold(question)
    pattern = re.compile(
        r"\b(avant|apres|depuis|partir|jusqu)\w*\s+(?:du\s+|le\s+|au\s+|'au\s+)?"
        r"(?:(\d{4})-(\d{2})-(\d{2})|(\d{1,2})(?:er)?\s+(" + "|".join(_MONTHS) + r")\s+(\d{4}))"
    )
    match = pattern.search(folded)
    if match is None:
        return None
    word = match.group(1)
    if match.group(2):
        value = f"{match.group(2)}-{match.group(3)}-{match.group(4)}"
    else:
        value = f"{match.group(7)}-{_MONTHS[match.group(6)]:02d}-{int(match.group(5)):02d}"
    creation = bool(re.search(r"\b(publi|cre[ea]|ouvert|mis en ligne)", folded))
    return DateBound(_DATE_OPERATORS[word], value, creation)


@dataclass(frozen=True)
class Place:
    """A place named in the question.

    Attributes:
        name: As written (``Toulouse``).
        department: The question calls it a department (``département du Gers``).
    """

    name: str
    department: bool


def place(question: str) -> Place | None:
    """The first capitalised place name after ``à/de/du/d'`` in the question, if any."""
    words = re.findall(r"[\wÀ-ÿ’'-]+", question)
    for index in range(1, len(words)):
        word = words[index]
        head, _, tail = word.partition("'") if "'" in word else word.partition("’")
        if tail and head.lower() == "d" and _PLACE_NAME.fullmatch(tail):
            previous, name = words[index - 1], tail
        elif words[index - 1].lower() in _PREPOSITIONS and _PLACE_NAME.fullmatch(word):
            previous, name = words[index - 2] if index > 1 else "", word
        else:
            continue
        if fold(name) in {"france", "etat", "republique"}:
            continue
        return Place(name, department=fold(previous).startswith("departement"))
    return None


def month_asked(question: str) -> str | None:
    """``YYYY-MM`` of a ``<month> <year>`` in the question (``mai 2026`` → ``2026-05``)."""
    match = re.search(r"\b(" + "|".join(_MONTHS) + r")\s+(\d{4})\b", fold(question))
    if match is None:
        return None
    return f"{match.group(2)}-{_MONTHS[match.group(1)]:02d}"
