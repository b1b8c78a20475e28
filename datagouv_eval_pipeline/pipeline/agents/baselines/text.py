"""Reading the question: search words, dates, places, what kind of answer it wants.

Every rule here is a general French or English language cue (stop words from a general list,
verb and adverb forms, date and place expressions, words for counts, visits or APIs); none is
fitted to the wording of a benchmark task. ``tests/agents/runner/test_baseline_paraphrases.py``
checks that rewordings of every task lead to the same actions.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

import stopwordsiso

# The project's one fold (œ → oe, typographic apostrophes), memoised: the policies fold the same
# titles and words over and over.
from datagouv_eval_pipeline.base.text import fold_cached as fold

_REQUEST_TEXT = """
    bonjour hello merci svp please thanks thank aimerais aimerions voudrais voudrions souhaite
    souhaiterais cherche cherchons trouver trouve obtenir obtenu recuperer savoir connaitre
    utiliser verifier
    donner dire existe existent exact exacte idealement ideally possible besoin exemple etc
    combien nombre chiffre chiffres pouvoir vouloir devoir falloir faire refaire aider
    conseiller recommander preference find get know need want looking help recommend
"""
_STOPWORDS = frozenset(
    {fold(word) for lang in ("fr", "en") for word in stopwordsiso.stopwords(lang)}
    | set(_REQUEST_TEXT.split())
)
"""Words that carry no search meaning: the general French and English stop-word lists of
``stopwordsiso``, plus the words of any request (greetings, request verbs such as *trouver*,
*obtenir*, *pouvoir*, fillers such as *idéalement*, *de préférence*, *how many*)."""

_GENERIC_TEXT = """
    donnee donnees jeu jeux base bases liste listes fichier fichiers data gouv datagouv site
    information informations source sources ressource ressources table tableau open dataset
    datasets file files list database api apis csv json xlsx excel format formats telecharger
    telechargement telechargeable publie publies publiee publiees gratuit gratuite complet
    complete ligne lignes mis mise jour jours annee annees an ans mois semaine semaines date dates
    periode lundi lundis mardi mercredi jeudi vendredi samedi dimanche veille hier demain
    visite visites telechargements consultation consultations frequentation audience
    departement departements departemental departementale departementaux region regions
    regional regionale commune communes communal communale ville villes pays territoire
    download downloads visit visits views year years month months week day days
    france french francais francaise francaises
"""
_GENERIC = frozenset(_GENERIC_TEXT.split())
"""Words any catalogue question may use (data, file, list, API, formats, dates, visits,
administrative levels, and *France* / *French*: every dataset of a national French catalogue is
French, which an English question says and a French one takes for granted): they do not tell
datasets apart."""

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
    "january": 1,
    "february": 2,
    "march": 3,
    "april": 4,
    "may": 5,
    "june": 6,
    "july": 7,
    "august": 8,
    "september": 9,
    "october": 10,
    "november": 11,
    "december": 12,
}
_MONTH = "(" + "|".join(_MONTHS) + ")"
_DATE_WORDS = (
    (r"avant|anterieure?s?(?:ment)?|before|prior to|earlier than", "strictly_less"),
    (r"apres|posterieure?s?(?:ment)?|after|later than", "strictly_greater"),
    (r"depuis|a partir|since|from|as of", "greater"),
    (r"jusqu|au plus tard|until|up to|no later than", "less"),
)
_DATE = (
    r"(?:(?P<iso>\d{4}-\d{2}-\d{2})"
    r"|(?P<d>\d{1,2})[/.-](?P<m>\d{1,2})[/.-](?P<y>\d{4})"
    rf"|(?P<d2>\d{{1,2}})(?:er|st|nd|rd|th)?\s+{_MONTH}\s+(?P<y2>\d{{4}})"
    rf"|{_MONTH}\s+(?P<d3>\d{{1,2}})(?:st|nd|rd|th)?,?\s+(?P<y3>\d{{4}}))"
)
_QUANTITY = re.compile(r"\b(combien|nombre|total|how many|number of|count)\b")
_API_WORDS = re.compile(
    r"\b(api|apis|service web|web service|webservice|interface de programmation|endpoints?"
    r"|services? (?:public|publics|en ligne|gratuits?)|(?:public|online) services?"
    r"|automati\w*|programmati\w*)\b"
)
"""An API named as such, a public or online *service* that does something, or retrieval by a
program (*automatiquement*, *programmatically*): what a dataservice gives."""
_METRICS_NOUNS = re.compile(
    r"\b(visites?|telechargements?|consultations?|frequentation|audience|vues"
    r"|visits|downloads|page ?views|popularite|popularity)\b"
)
_METRICS_VERBS = re.compile(
    r"\b(consulte|telecharge|visite|utilise|consulted|downloaded|visited|used|viewed)e?s?\b"
)
_INTENSITY = re.compile(r"\b(beaucoup|tres|souvent|combien|fois|populaire|much|often|popular)\b")
_PLACE_MARKERS = frozenset({"a", "de", "du", "d", "dans", "en", "l", "in"})
_ARTICLES = frozenset({"le", "la", "les", "l", "the"})
_PREPOSITIONS = frozenset({"à", "a", "de", "du", "d'", "d’", "in", "dans"})
_PLACE_NAME = re.compile(r"[A-ZÀ-Ý][a-zà-ÿ]+(?:-[A-ZÀ-Ý]?[a-zà-ÿ]+)*")
_NOT_PLACES = frozenset({"france", "etat", "republique"})

_SUBJECTS = frozenset({"je", "j", "tu", "il", "elle", "on", "nous", "vous", "ils", "elles", "qui"})
_CLITICS = frozenset({"ne", "n", "me", "m", "te", "t", "se", "s", "le", "la", "l", "les", "lui"})
_CLITICS |= {"leur", "y", "en"}
_INVERTED = re.compile(r"([\wÀ-ÿ]+)-(?:t-)?(?:je|tu|il|elle|on|nous|vous|ils|elles)\b", re.I)
_CONJUGATED = re.compile(
    r"(?:rais|rait|rions|riez|raient|erons|ez|ront|issions|issiez|aient|isse|asse)$"
)
"""Endings of French conditional, future, imperfect, subjunctive and second-person forms
(``voudrais``, ``apparaitront``, ``puisse``, ``donnez``): verbs, never the name of a dataset."""
_ADVERB = re.compile(
    r"(?:ieurement|iquement|(?<!v)ellement|ivement|eusement|ièrement|ctement|ètement|alement"
    r"|ablement|iblement|plement|ûrement|amment|emment|(?<!él)(?<!compl)(?<!suppl)(?<!agr)ément"
    r"|ically|ively|ously|ently|antly|ctly|ately|ually)$"
)
"""Endings of adverbs made from adjectives (``antérieurement``, ``séparément``,
``automatically``), read on the accented word: nouns in ``-ment`` (``recensement``,
``équipement``) keep their noun endings."""


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
_PARTICIPLE = re.compile(r"(?:[^i]er|ir|ée?s?|ant|ing|ed)$")
"""Endings of French infinitives and participles (``actualiser``, ``classés``) and English
participles (``developing``, ``registered``): what is done, ranked after the nouns that say
which data."""


def _verbs(question: str) -> set[str]:
    """Folded words the sentence structure shows to be conjugated verbs.

    The word after a subject pronoun (``je``, ``nous``, ``qui``…, clitics such as ``ne``,
    ``le``, ``y`` skipped) and the word before an inverted subject (``existe-t-il``,
    ``puis-je``) is a verb; so is a word with a conditional, future, imperfect or subjunctive
    ending.
    """
    verbs = {fold(match.group(1)) for match in _INVERTED.finditer(question)}
    words = [fold(word) for word in re.findall(r"[\wÀ-ÿ]+", question.replace("’", "'"))]
    after_subject = False
    for word in words:
        if after_subject and word not in _CLITICS:
            verbs.add(word)
            after_subject = False
        elif word in _SUBJECTS:
            after_subject = True
        elif word not in _CLITICS:
            after_subject = False
        if len(word) >= 6 and _CONJUGATED.search(word):
            verbs.add(word)
    return verbs


def _continues_name(word: str) -> bool:
    """Whether ``word``, following a capitalised word, makes it part of a title.

    A place name stands alone (*à Lyon, et*; *du Cantal (écoles*); a capitalised word
    followed by a lower-case content word starts a name or a title (*du Bulletin officiel
    des annonces*).
    """
    folded = fold(re.split(r"[’']", word)[0])  # d'après: the elided word decides
    return word[:1].islower() and folded not in _STOPWORDS and folded not in _PLACE_MARKERS


@lru_cache(maxsize=1024)
def _ranked_terms(question: str) -> tuple[tuple[float, str], ...]:
    """The question's content words, most specific first (how a person picks search words).

    Stop words, generic catalogue words (:data:`_GENERIC`), conjugated verbs, adverbs,
    figures and months are dropped. Acronyms come first (``INSEE``, ``DPE``), then names
    capitalised inside a sentence (``Légifrance``), then the other words, infinitives and
    participles after nouns; place names (capitalised after ``à``, ``de``, ``du``, ``d'``,
    ``dans``, ``en``, ``in``, or in brackets after a place) come last: they filter rows more
    often than they name a dataset. Within a rank, longer words (domain nouns) come first,
    then alphabetical order: the rank depends on the words, not on where the question puts
    them. Words are folded (no accents).
    """
    verbs = _verbs(question)
    ranked: list[tuple[float, int, str]] = []
    seen: set[str] = set()
    sentence_start = True
    previous = ""
    after_place = False
    tokens = [match.group(0) for match in re.finditer(r"[\wÀ-ÿ]+|[.!?:;,(]", question)]
    for index, raw in enumerate(tokens):
        if raw == ",":
            after_place = False
            continue
        if raw in ".!?:;":
            sentence_start, previous, after_place = True, "", False
            continue
        if raw == "(":
            previous = "(" if after_place else ""
            continue
        starts, before = sentence_start, previous
        sentence_start, previous = False, fold(raw)
        capitalised = raw[0].isupper() and not starts
        following = tokens[index + 1] if index + 1 < len(tokens) else "."
        place_name = (
            capitalised
            and (before in _PLACE_MARKERS or before == "(" or after_place)
            and not _continues_name(following)
        )
        after_place = place_name and fold(raw) not in _NOT_PLACES
        for word in re.findall(r"[a-z0-9]+", fold(raw)):
            if word in seen or word in _STOPWORDS or word in _GENERIC or word in verbs:
                continue
            if word.isdigit() or len(word) < 3 or word in _MONTHS:
                continue  # figures and dates filter rows, they do not name datasets
            if _ADVERB.search(raw.lower()):
                continue
            seen.add(word)
            rank: float
            if raw.isupper() and len(raw) >= 2:
                rank = 0
            elif place_name:
                rank = _PLACE_RANK
            elif capitalised:
                rank = 1
            elif _PARTICIPLE.search(raw.lower()):
                rank = 2
            else:
                rank = 1.5
            ranked.append((rank, -len(word), word))
    return tuple((rank, word) for rank, _, word in sorted(ranked))


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

    A word matches a title word sharing its first five letters (``hopitaux`` and
    ``hôpital``), or the whole word when shorter. Place names do not count: they say
    which rows, not which dataset.
    """
    title_words = {word[:5] for word in re.findall(r"[a-z0-9]+", fold(title))}
    # Distinct stems: *municipal* and *municipaux* in the question are one topic word.
    return len(
        {
            term[:5]
            for rank, term in _ranked_terms(question)
            if rank < _PLACE_RANK and term[:5] in title_words
        }
    )


def other_places(question: str, title: str) -> int:
    """How many place names a title holds that the question does not mention.

    ``Annuaire des écoles à Paris`` answers a national question less well
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
        following = words[index + 1] if index + 1 < len(words) else ""
        if before in _PLACE_MARKERS and word[:1].isupper() and not _continues_name(following):
            places.append(word)
    return places


def is_quantitative(question: str) -> bool:
    """Whether the question asks for a count or a figure."""
    return bool(_QUANTITY.search(fold(question)))


_COUNTED = re.compile(
    r"\b(?:combien (?:y a-t-il |il y a |existe-t-il )?(?:de |d')|how many |number of "
    r"|nombre (?:de |d'))(.+)"
)
_COUNTED_LINKS = frozenset({"de", "d", "des", "du"})


def counted_noun(question: str) -> str | None:
    """What a count question counts: the words after *combien de*, *how many*, *nombre de*.

    Up to four words, stopped by a function word that is not *de / des / du* (*combien de
    conseillers municipaux siègent au conseil* → ``conseillers municipaux siègent``), so an
    answer can state the figure with its noun, as a person repeats the question's unit.
    """
    match = _COUNTED.search(question.lower().replace("’", "'"))
    if match is None:
        return None
    kept: list[str] = []
    for token in re.findall(r"[\wà-ÿ]+'?", match.group(1)):
        word = fold(token.rstrip("'"))
        if not kept and word in _STOPWORDS:
            continue  # *how many new cars*: the noun follows
        if (word in _STOPWORDS and word not in _COUNTED_LINKS) or len(kept) == 4:
            break
        kept.append(token)
    while kept and fold(kept[-1].rstrip("'")) in _COUNTED_LINKS:
        kept.pop()  # no phrase ends on "de"
    text = " ".join(kept).replace("' ", "'")
    return text or None


_FRESHNESS = re.compile(
    r"\b(mis a jour|mise a jour|mises a jour|actualis\w*|frequence|rafraichi\w*|recent\w*"
    r"|perime\w*|a jour|how often|updated?|refreshed|frequency|up to date|outdated|latest)\b"
)


def asks_about_freshness(question: str) -> bool:
    """Whether the question asks how often or how recently the data is updated."""
    return bool(_FRESHNESS.search(fold(question)))


FREQUENCIES_FR = {
    "punctual": "ponctuelle",
    "continuous": "en continu",
    "hourly": "toutes les heures",
    "fourTimesADay": "quatre fois par jour",
    "threeTimesADay": "trois fois par jour",
    "semidaily": "deux fois par jour",
    "daily": "quotidienne (chaque jour)",
    "fourTimesAWeek": "quatre fois par semaine",
    "threeTimesAWeek": "trois fois par semaine",
    "semiweekly": "deux fois par semaine",
    "weekly": "hebdomadaire (chaque semaine)",
    "biweekly": "toutes les deux semaines",
    "threeTimesAMonth": "trois fois par mois",
    "semimonthly": "deux fois par mois",
    "monthly": "mensuelle (chaque mois)",
    "bimonthly": "tous les deux mois",
    "quarterly": "trimestrielle",
    "threeTimesAYear": "trois fois par an",
    "semiannual": "semestrielle",
    "annual": "annuelle (une fois par an)",
    "biennial": "tous les deux ans",
    "triennial": "tous les trois ans",
    "quinquennial": "tous les cinq ans",
    "irregular": "irrégulière",
    "unknown": "inconnue",
}
"""The catalogue's update frequency codes (udata's list) in French words."""


def asks_for_api(question: str) -> bool:
    """Whether the question asks for an API (or a service, or automatic retrieval)."""
    return bool(_API_WORDS.search(fold(question)))


def asks_for_metrics(question: str) -> bool:
    """Whether the question asks for visits or downloads.

    A noun (*visites*, *téléchargements*, *fréquentation*, *downloads*) is enough; a
    participle (*consulté*, *téléchargé*) only with a word of degree (*beaucoup*, *souvent*,
    *combien*), since "the file I downloaded" asks for no statistic.
    """
    folded = fold(question)
    if _METRICS_NOUNS.search(folded):
        return True
    return bool(_METRICS_VERBS.search(folded) and _INTENSITY.search(folded))


@dataclass(frozen=True)
class DateBound:
    """A date condition read from the question (*before 3 March 2019*, *depuis le 01/03/2020*).

    Attributes:
        operator: Tabular operator (``strictly_less``, ``greater``...).
        value: ISO date.
        creation: The question is about creation or publication dates.
    """

    operator: str
    value: str
    creation: bool


_BOUND = re.compile(
    r"\b(?P<word>" + "|".join(f"(?:{words})" for words, _ in _DATE_WORDS) + r")\w*"
    r"(?:\s+(?:le|la|du|au|the|of|on|'au|l'|le jour du))*\s+" + _DATE
)


def date_bound(question: str) -> DateBound | None:
    """The first *before / after / since / until <date>* condition of the question, if any.

    Dates are read as ISO (``2019-03-03``), day/month/year (``03/03/2019``) or in words, in
    French or English (``3 mars 2019``, ``March 3, 2019``).
    """
    folded = fold(question)
    match = _BOUND.search(folded)
    if match is None:
        return None
    word = match.group("word")
    operator = next(op for words, op in _DATE_WORDS if re.fullmatch(words, word))
    if match.group("iso"):
        value = match.group("iso")
    elif match.group("y"):
        day, month = int(match.group("d")), int(match.group("m"))
        value = f"{match.group('y')}-{month:02d}-{day:02d}"
    else:
        named = [g for g in match.groups()[-6:] if g in _MONTHS]
        in_words = match.group("d2") or match.group("d3")
        year = match.group("y2") or match.group("y3")
        value = f"{year}-{_MONTHS[named[0]]:02d}-{int(in_words):02d}"
    creation = bool(
        re.search(r"\b(publi|cre[ea]|ouvert|mis en ligne|mise en ligne|released|added)", folded)
    )
    return DateBound(operator, value, creation)


@dataclass(frozen=True)
class Place:
    """A place named in the question.

    Attributes:
        name: As written (``Lyon``).
        department: The question calls it a department (``département du Cantal``).
    """

    name: str
    department: bool


def place(question: str) -> Place | None:
    """The first capitalised place name after *à / de / du / d' / dans / in*, if any."""
    words = re.findall(r"[\wÀ-ÿ’'-]+", question)
    for index in range(1, len(words)):
        word = words[index]
        head, _, tail = word.partition("'") if "'" in word else word.partition("’")
        if tail and head.lower() in {"d", "l"} and _PLACE_NAME.fullmatch(tail):
            previous, name = words[index - 1], tail
        elif words[index - 1].lower() in _PREPOSITIONS and _PLACE_NAME.fullmatch(word):
            previous, name = words[index - 2] if index > 1 else "", word
        else:
            continue
        if index + 1 < len(words) and _continues_name(words[index + 1]):
            continue  # a title (*du Répertoire national*), not a place
        if fold(name) in _NOT_PLACES:
            continue
        department = bool(re.match(r"departement|department|county", fold(previous)))
        return Place(name, department=department)
    return None


def month_asked(question: str) -> str | None:
    """``YYYY-MM`` of a month in the question (*mars 2021*, *March 2021*, ``03/2021``)."""
    folded = fold(question)
    for match in re.finditer(rf"\b{_MONTH}\s+(\d{{4}})\b", folded):
        if not re.search(r"\d(?:er|st|nd|rd|th)?\s*$", folded[: match.start()]):
            return f"{match.group(2)}-{_MONTHS[match.group(1)]:02d}"  # a month, not a day
    numeric = re.search(r"(?<![\d/])(\d{1,2})/(\d{4})\b", folded)
    if numeric is not None and 1 <= int(numeric.group(1)) <= 12:
        return f"{numeric.group(2)}-{int(numeric.group(1)):02d}"
    return None
