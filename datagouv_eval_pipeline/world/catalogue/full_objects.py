"""udata's ``X-Get-Datasets-Full-Objects`` header: objects instead of ids in dataset responses.

With the header (any non-empty value: udata reads it with ``request.headers.get(…, False,
bool)``), udata marshals a dataset's ``spatial.zones`` as GeoZone objects and
``spatial.granularity`` as ``{id, name}`` in v1 and v2 (``udata/core/spatial/api_fields.py``),
and, in v2 only, ``frequency`` as ``{id, label}`` and ``license`` as a License object
(``udata/core/dataset/apiv2.py``). Labels are data.gouv.fr's French ones: the frequency labels
of ``UpdateFrequency`` and the geo level names as translated in udata's French catalogue.

The twin knows a licence's id and title only: ``maintainer`` and ``url`` are null and the lists
empty, except for udata's default licence (``notspecified``), whose object is a constant of
udata. Zones the twin does not name are given their code as name and no ``uri``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from datagouv_eval_pipeline.world.catalogue import facts

HEADER = "X-Get-Datasets-Full-Objects"

# UpdateFrequency (udata/core/dataset/constants.py): id -> label in udata's French catalogue.
FREQUENCY_LABELS: dict[str, str] = {
    "continuous": "Temps réel",
    "oneMinute": "Toutes les minutes",
    "fiveMinutes": "Toutes les cinq minutes",
    "tenMinutes": "Toutes les dix minutes",
    "fifteenMinutes": "Toutes les quinze minutes",
    "thirtyMinutes": "Toutes les trente minutes",
    "hourly": "Toutes les heures",
    "bihourly": "Toutes les deux heures",
    "trihourly": "Toutes les trois heures",
    "twelveHours": "Toutes les douze heures",
    "severalTimesADay": "Plusieurs fois par jour",
    "threeTimesADay": "Trois fois par jour",
    "semidaily": "Deux fois par jour",
    "daily": "Quotidienne",
    "fiveTimesAWeek": "Cinq fois par semaine",
    "threeTimesAWeek": "Trois fois par semaine",
    "semiweekly": "Deux fois par semaine",
    "weekly": "Hebdomadaire",
    "biweekly": "Toutes les deux semaines",
    "threeTimesAMonth": "Trois fois par mois",
    "semimonthly": "Deux fois par mois",
    "monthly": "Mensuelle",
    "bimonthly": "Tous les deux mois",
    "quarterly": "Trimestrielle",
    "threeTimesAYear": "Trois fois par an",
    "semiannual": "Deux fois par an",
    "annual": "Annuelle",
    "biennial": "Tous les deux ans",
    "triennial": "Tous les trois ans",
    "quadrennial": "Tous les quatre ans",
    "quinquennial": "Tous les cinq ans",
    "decennial": "Tous les dix ans",
    "bidecennial": "Tous les vingt ans",
    "tridecennial": "Tous les trente ans",
    "punctual": "Ponctuelle",
    "irregular": "Sans régularité",
    "never": "Jamais",
    "notPlanned": "Non planifié",
    "other": "Autre",
    "unknown": "Inconnu",
}

# Granularities: the geo levels' names and udata's two base ones (poi, other), in French.
GRANULARITY_NAMES: dict[str, str] = {
    "country": "Pays",
    "country-group": "Groupement de pays",
    "country-subset": "Sous-ensemble de pays",
    "fr:region": "Région française",
    "fr:departement": "Département français",
    "fr:arrondissement": "Arrondissement français",
    "fr:epci": "Intercommunalité française (EPCI)",
    "fr:canton": "Canton français",
    "fr:commune": "Commune française",
    "fr:iris": "Iris (quartiers INSEE)",
    "fr:collectivite": "Collectivités d'outre-mer françaises",
    "poi": "Point d'Intérêt",
    "other": "Autre",
}

# The zones the twin's records cover: id -> (name, slug).
ZONES: dict[str, tuple[str, str]] = {
    "country:fr": ("France", "france"),
    "fr:region:32": ("Hauts-de-France", "hauts-de-france"),
    "fr:region:76": ("Occitanie", "occitanie"),
}

# udata's DEFAULT_LICENSE, marshalled with license_fields.
DEFAULT_LICENSE: dict[str, Any] = {
    "id": "notspecified",
    "title": "License Not Specified",
    "maintainer": None,
    "url": None,
    "flags": ["generic"],
    "alternate_urls": [],
    "alternate_titles": [],
}
_LICENSE_TITLES = {ident: title for title, ident in facts.LICENSE_IDS.items() if title}


def wanted(headers: Mapping[str, str]) -> bool:
    """Whether a request asks for full objects (the header present and not empty)."""
    return bool(headers.get(HEADER, ""))


def frequency(value: str | None) -> dict[str, str]:
    """The Frequency object of a frequency id (``unknown`` when none)."""
    ident = value or "unknown"
    return {"id": ident, "label": FREQUENCY_LABELS.get(ident, ident)}


def license_object(value: str | None) -> dict[str, Any]:
    """The License object of a licence id (udata's default licence when none)."""
    if not value or value == DEFAULT_LICENSE["id"]:
        return dict(DEFAULT_LICENSE)
    return {
        "id": value,
        "title": _LICENSE_TITLES.get(value, value),
        "maintainer": None,
        "url": None,
        "flags": [],
        "alternate_urls": [],
        "alternate_titles": [],
    }


def zone(ident: str) -> dict[str, Any]:
    """The GeoZone object of a zone id (``<level>:<code>``)."""
    level, _, code = ident.rpartition(":")
    name, slug = ZONES.get(ident, (code, code))
    return {"id": ident, "name": name, "slug": slug, "code": code, "level": level, "uri": None}


def spatial(value: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """A spatial coverage with full zones and granularity (``None`` stays ``None``)."""
    if value is None:
        return None
    granularity = value.get("granularity") or "other"
    return {
        **value,
        "zones": [zone(z) for z in value.get("zones") or []],
        "granularity": {"id": granularity, "name": GRANULARITY_NAMES.get(granularity, "other")},
    }


def dataset(record: Mapping[str, Any], api: int) -> dict[str, Any]:
    """A rendered dataset with full objects: spatial in v1 and v2, frequency and licence in v2."""
    result = dict(record)
    if "spatial" in result:
        result["spatial"] = spatial(result["spatial"])
    if api == 2:
        if "frequency" in result:
            result["frequency"] = frequency(result["frequency"])
        if "license" in result:
            result["license"] = license_object(result["license"])
    return result
