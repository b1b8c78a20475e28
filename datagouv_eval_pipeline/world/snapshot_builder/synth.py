"""Deterministic generators for the twin's synthetic tabular rows.

Every table is generated from ``random.Random(f"{seed}:{name}")`` so it never changes unless
this file does. Columns are the real ones of each resource where they are known (Data ES,
Sitadel, RNE, the data.gouv.fr organizations and dataservices exports); values are synthetic.
Facts the tasks rely on are pinned here as constants and asserted by the tests: Data ES has
``GERS_EQUIPMENTS`` rows with ``dep_code`` 32. The datasets export is not generated here: the
twin derives it from the real catalogue
(:mod:`datagouv_eval_pipeline.world.catalogue.catalogue_export`).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import Any

from datagouv_eval_pipeline.world.catalogue import Column, ColumnType

# Facts the task specs state; the snapshot tests recompute them.
GERS_EQUIPMENTS = 1023
OTHER_EQUIPMENTS = 700
TOURNEFEUILLE_HOUSING_PERMITS = 1146
OTHER_HOUSING_PERMITS = 700
TOURNEFEUILLE_NONRES_PERMITS = 11
TOULOUSE_COUNCILLORS = 69
TOULOUSE_COUNCILLORS_WOMEN = 35


@dataclass
class GeneratedTable:
    """Rows (as CSV text cells) and schema of one generated resource."""

    columns: list[Column]
    rows: list[list[str]]
    separator: str = ","
    facts: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class CatalogView:
    """What table generators may read from the assembled catalog (for the catalogue exports).

    Attributes:
        organizations: Organization records (v1 shape).
        datasets: Dataset records (v1 shape), deleted ones included.
        dataservices: Dataservice records (v1 shape).
    """

    organizations: Sequence[dict[str, Any]]
    datasets: Sequence[dict[str, Any]]
    dataservices: Sequence[dict[str, Any]]


def _cols(spec: Sequence[tuple[str, ColumnType] | tuple[str, ColumnType, str]]) -> list[Column]:
    return [Column(s[0], s[1], s[2] if len(s) > 2 else "") for s in spec]


def _fmt_float(value: float, digits: int = 2) -> str:
    return f"{value:.{digits}f}"


# --------------------------------------------------------------------------------------------
# Geography (codes are real INSEE codes for departments and main towns; coordinates approximate)


@dataclass(frozen=True)
class Town:
    """A commune: INSEE code, name, postcode and approximate coordinates."""

    code: str
    name: str
    postcode: str
    lat: float
    lon: float


@dataclass(frozen=True)
class Departement:
    """A département with its region and a few of its communes."""

    code: str
    name: str
    region_code: str
    region_name: str
    towns: tuple[Town, ...]


GERS = Departement(
    "32",
    "Gers",
    "76",
    "Occitanie",
    (
        Town("32013", "Auch", "32000", 43.6465, 0.5855),
        Town("32107", "Condom", "32100", 43.9583, 0.3722),
        Town("32132", "Fleurance", "32500", 43.8486, 0.6631),
        Town("32160", "L'Isle-Jourdain", "32600", 43.6136, 1.0819),
        Town("32208", "Lectoure", "32700", 43.9345, 0.6211),
        Town("32119", "Eauze", "32800", 43.8608, 0.1019),
        Town("32256", "Mirande", "32300", 43.5149, 0.4039),
        Town("32296", "Nogaro", "32110", 43.7589, -0.0331),
        Town("32462", "Vic-Fezensac", "32190", 43.7619, 0.2981),
        Town("32147", "Gimont", "32200", 43.6263, 0.8760),
        Town("32410", "Samatan", "32130", 43.4933, 0.9292),
        Town("32213", "Lombez", "32220", 43.4747, 0.9114),
        Town("32242", "Masseube", "32140", 43.4297, 0.5783),
        Town("32345", "Riscle", "32400", 43.6575, -0.0864),
        Town("32233", "Marciac", "32230", 43.5253, 0.1608),
        Town("32319", "Plaisance", "32160", 43.6047, 0.0472),
        Town("32426", "Seissan", "32260", 43.4922, 0.5919),
        Town("32244", "Mauvezin", "32120", 43.7283, 0.8722),
        Town("32096", "Cazaubon", "32150", 43.9317, -0.0669),
        Town("32001", "Aignan", "32290", 43.6983, 0.0753),
        Town("32162", "Jegun", "32360", 43.7597, 0.4547),
        Town("32290", "Montréal", "32250", 43.9489, 0.2022),
        Town("32459", "Valence-sur-Baïse", "32310", 43.8822, 0.3814),
        Town("32370", "Saint-Clar", "32380", 43.8906, 0.7717),
        Town("32250", "Miélan", "32170", 43.4300, 0.3100),
        Town("32283", "Montesquiou", "32320", 43.5847, 0.3289),
        Town("32083", "Castéra-Verduzan", "32410", 43.8078, 0.4297),
        Town("32127", "Estang", "32240", 43.8653, -0.1053),
        Town("32307", "Pavie", "32550", 43.6103, 0.5917),
        Town("32330", "Preignan", "32810", 43.7128, 0.6264),
        Town("32105", "Cologne", "32430", 43.7194, 0.9736),
        Town("32414", "Saramon", "32450", 43.5233, 0.7575),
        Town("32027", "Barcelonne-du-Gers", "32720", 43.7050, -0.2403),
        Town("32012", "Aubiet", "32270", 43.6469, 0.7853),
    ),
)

HAUTE_GARONNE = Departement(
    "31",
    "Haute-Garonne",
    "76",
    "Occitanie",
    (
        Town("31555", "Toulouse", "31000", 43.6045, 1.4440),
        Town("31557", "Tournefeuille", "31170", 43.5853, 1.3442),
        Town("31149", "Colomiers", "31770", 43.6112, 1.3355),
        Town("31069", "Blagnac", "31700", 43.6375, 1.3939),
        Town("31395", "Muret", "31600", 43.4617, 1.3267),
        Town("31044", "Balma", "31130", 43.6111, 1.4994),
        Town("31157", "Cugnaux", "31270", 43.5372, 1.3444),
        Town("31424", "Plaisance-du-Touch", "31830", 43.5656, 1.2969),
        Town("31113", "Castanet-Tolosan", "31320", 43.5161, 1.4986),
        Town("31483", "Saint-Gaudens", "31800", 43.1081, 0.7233),
        Town("31588", "Villeneuve-Tolosane", "31270", 43.5236, 1.3419),
        Town("31187", "Fonsorbes", "31470", 43.5353, 1.2319),
        Town("31417", "Pibrac", "31820", 43.6175, 1.2858),
        Town("31291", "Léguevin", "31490", 43.6003, 1.2333),
    ),
)


def _dep(code: str, name: str, reg: str, reg_name: str, *towns: Town) -> Departement:
    return Departement(code, name, reg, reg_name, towns)


OTHER_DEPARTEMENTS: tuple[Departement, ...] = (
    HAUTE_GARONNE,
    _dep(
        "65",
        "Hautes-Pyrénées",
        "76",
        "Occitanie",
        Town("65440", "Tarbes", "65000", 43.2328, 0.0781),
        Town("65286", "Lourdes", "65100", 43.0947, -0.0458),
        Town("65059", "Bagnères-de-Bigorre", "65200", 43.0653, 0.1494),
    ),
    _dep(
        "47",
        "Lot-et-Garonne",
        "75",
        "Nouvelle-Aquitaine",
        Town("47001", "Agen", "47000", 44.2033, 0.6163),
        Town("47323", "Villeneuve-sur-Lot", "47300", 44.4081, 0.7047),
        Town("47157", "Marmande", "47200", 44.5003, 0.1653),
    ),
    _dep(
        "40",
        "Landes",
        "75",
        "Nouvelle-Aquitaine",
        Town("40192", "Mont-de-Marsan", "40000", 43.8903, -0.4992),
        Town("40088", "Dax", "40100", 43.7100, -1.0536),
    ),
    _dep(
        "64",
        "Pyrénées-Atlantiques",
        "75",
        "Nouvelle-Aquitaine",
        Town("64445", "Pau", "64000", 43.2951, -0.3708),
        Town("64102", "Bayonne", "64100", 43.4929, -1.4748),
    ),
    _dep(
        "82",
        "Tarn-et-Garonne",
        "76",
        "Occitanie",
        Town("82121", "Montauban", "82000", 44.0176, 1.3550),
        Town("82033", "Castelsarrasin", "82100", 44.0400, 1.1069),
    ),
    _dep(
        "33",
        "Gironde",
        "75",
        "Nouvelle-Aquitaine",
        Town("33063", "Bordeaux", "33000", 44.8378, -0.5792),
        Town("33281", "Mérignac", "33700", 44.8386, -0.6436),
    ),
    _dep(
        "75",
        "Paris",
        "11",
        "Île-de-France",
        Town("75056", "Paris", "75001", 48.8566, 2.3522),
    ),
    _dep(
        "69",
        "Rhône",
        "84",
        "Auvergne-Rhône-Alpes",
        Town("69123", "Lyon", "69001", 45.7640, 4.8357),
        Town("69266", "Villeurbanne", "69100", 45.7719, 4.8902),
    ),
    _dep(
        "13",
        "Bouches-du-Rhône",
        "93",
        "Provence-Alpes-Côte d'Azur",
        Town("13055", "Marseille", "13001", 43.2965, 5.3698),
        Town("13001", "Aix-en-Provence", "13090", 43.5297, 5.4474),
    ),
    _dep(
        "59",
        "Nord",
        "32",
        "Hauts-de-France",
        Town("59350", "Lille", "59000", 50.6292, 3.0573),
        Town("59512", "Roubaix", "59100", 50.6942, 3.1746),
    ),
    _dep(
        "80",
        "Somme",
        "32",
        "Hauts-de-France",
        Town("80021", "Amiens", "80000", 49.8941, 2.2958),
        Town("80001", "Abbeville", "80100", 50.1054, 1.8350),
    ),
    _dep(
        "01",
        "Ain",
        "84",
        "Auvergne-Rhône-Alpes",
        Town("01053", "Bourg-en-Bresse", "01000", 46.2052, 5.2255),
        Town("01034", "Belley", "01300", 45.7592, 5.6881),
    ),
    _dep(
        "35",
        "Ille-et-Vilaine",
        "53",
        "Bretagne",
        Town("35238", "Rennes", "35000", 48.1173, -1.6778),
        Town("35288", "Saint-Malo", "35400", 48.6493, -2.0257),
    ),
    _dep(
        "2A",
        "Corse-du-Sud",
        "94",
        "Corse",
        Town("2A004", "Ajaccio", "20000", 41.9192, 8.7386),
    ),
    _dep(
        "974",
        "La Réunion",
        "04",
        "La Réunion",
        Town("97411", "Saint-Denis", "97400", -20.8821, 55.4507),
    ),
)

ALL_DEPARTEMENTS: tuple[Departement, ...] = (GERS, *OTHER_DEPARTEMENTS)
TOULOUSE = HAUTE_GARONNE.towns[0]

SURNAMES = [
    "Martin",
    "Bernard",
    "Thomas",
    "Petit",
    "Robert",
    "Richard",
    "Durand",
    "Dubois",
    "Moreau",
    "Laurent",
    "Simon",
    "Michel",
    "Lefebvre",
    "Leroy",
    "Roux",
    "David",
    "Bertrand",
    "Morel",
    "Fournier",
    "Girard",
    "Bonnet",
    "Dupont",
    "Lambert",
    "Fontaine",
    "Rousseau",
    "Vincent",
    "Muller",
    "Lefevre",
    "Faure",
    "Andre",
    "Mercier",
    "Blanc",
    "Guerin",
    "Boyer",
    "Garnier",
    "Chevalier",
    "Francois",
    "Legrand",
    "Gauthier",
    "Garcia",
    "Perrin",
    "Robin",
    "Clement",
    "Morin",
    "Nicolas",
    "Henry",
    "Roussel",
    "Mathieu",
    "Gautier",
    "Masson",
    "Marchand",
    "Duval",
    "Denis",
    "Dumont",
    "Marie",
    "Lemaire",
    "Noel",
    "Meyer",
    "Dufour",
    "Meunier",
    "Brun",
    "Blanchard",
    "Giraud",
    "Joly",
    "Riviere",
    "Lucas",
    "Brunet",
    "Gaillard",
    "Barbier",
    "Arnaud",
    "Martinez",
    "Gerard",
    "Roche",
    "Renard",
    "Schmitt",
    "Roy",
    "Leroux",
    "Colin",
    "Vidal",
    "Caron",
    "Picard",
    "Roger",
    "Fabre",
    "Aubert",
    "Lemoine",
    "Renaud",
    "Dumas",
    "Lacroix",
    "Olivier",
    "Philippe",
    "Bourgeois",
    "Pierre",
    "Benoit",
    "Rey",
    "Leclerc",
    "Payet",
    "Rolland",
    "Lecomte",
    "Lopez",
    "Jean",
]
FIRST_NAMES_F = [
    "Marie",
    "Nathalie",
    "Isabelle",
    "Sylvie",
    "Catherine",
    "Martine",
    "Christine",
    "Françoise",
    "Valérie",
    "Sandrine",
    "Stéphanie",
    "Véronique",
    "Sophie",
    "Céline",
    "Chantal",
    "Patricia",
    "Anne",
    "Brigitte",
    "Julie",
    "Monique",
    "Aurélie",
    "Nicole",
    "Laurence",
    "Annie",
    "Émilie",
    "Dominique",
    "Virginie",
    "Corinne",
    "Élodie",
    "Christelle",
    "Camille",
    "Caroline",
    "Léa",
    "Sarah",
    "Karine",
    "Laure",
    "Hélène",
    "Claire",
    "Manon",
    "Pauline",
]
FIRST_NAMES_M = [
    "Jean",
    "Philippe",
    "Michel",
    "Alain",
    "Patrick",
    "Nicolas",
    "Christophe",
    "Pierre",
    "Christian",
    "Éric",
    "Frédéric",
    "Laurent",
    "Stéphane",
    "David",
    "Pascal",
    "Daniel",
    "Sébastien",
    "Julien",
    "Thierry",
    "Olivier",
    "Bernard",
    "Thomas",
    "Alexandre",
    "Gérard",
    "Didier",
    "Dominique",
    "Vincent",
    "François",
    "Bruno",
    "Guillaume",
    "Jérôme",
    "Jacques",
    "Marc",
    "Serge",
    "Franck",
    "André",
    "Antoine",
    "Mathieu",
    "Romain",
    "Benoît",
]
CSP = (
    ("10", "Agriculteurs exploitants"),
    ("21", "Artisans"),
    ("22", "Commerçants et assimilés"),
    ("23", "Chefs d'entreprise de 10 salariés ou plus"),
    ("31", "Professions libérales"),
    ("33", "Cadres de la fonction publique"),
    ("34", "Professeurs, professions scientifiques"),
    ("37", "Cadres administratifs et commerciaux d'entreprise"),
    ("38", "Ingénieurs et cadres techniques d'entreprise"),
    ("42", "Professeurs des écoles, instituteurs et assimilés"),
    ("43", "Professions intermédiaires de la santé et du travail social"),
    ("46", "Professions intermédiaires administratives et commerciales des entreprises"),
    ("47", "Techniciens"),
    ("52", "Employés civils et agents de service de la fonction publique"),
    ("54", "Employés administratifs d'entreprise"),
    ("55", "Employés de commerce"),
    ("74", "Anciens cadres"),
    ("75", "Anciennes professions intermédiaires"),
    ("77", "Anciens employés"),
    ("78", "Anciens ouvriers"),
)
STREETS = (
    "rue de la République",
    "avenue Jean Jaurès",
    "chemin des Vignes",
    "rue Victor Hugo",
    "boulevard Gambetta",
    "rue du Stade",
    "allée des Sports",
    "route de Toulouse",
    "rue des Écoles",
    "place de la Mairie",
    "avenue de la Gare",
    "impasse des Acacias",
    "chemin de la Save",
    "rue Pasteur",
    "avenue du Général de Gaulle",
    "rue des Lilas",
)


def _person(rng: random.Random) -> tuple[str, str, str]:
    sex = rng.choice("MF")
    first = rng.choice(FIRST_NAMES_M if sex == "M" else FIRST_NAMES_F)
    return rng.choice(SURNAMES).upper(), first, sex


def _birth(rng: random.Random, low: int = 1945, high: int = 1998) -> str:
    return (date(low, 1, 1) + timedelta(days=rng.randrange((high - low) * 365))).isoformat()


def _day(rng: random.Random, start: date, end: date) -> date:
    return start + timedelta(days=rng.randrange((end - start).days + 1))


# --------------------------------------------------------------------------------------------
# Data ES (resource ea4f5879-…): one row per sports equipment

EQUIPMENT_TYPES = (
    (2802, "Salle multisports (gymnase)", "Salles multisports (gymnase)"),
    (1902, "Court de tennis", "Courts de tennis"),
    (2201, "Terrain de football", "Terrains de grands jeux"),
    (2203, "Terrain de rugby", "Terrains de grands jeux"),
    (801, "Bassin sportif de natation", "Bassins aquatiques"),
    (1101, "Terrain de pétanque", "Équipements de boules"),
    (2901, "Terrain multisports (city stade)", "Plateaux et terrains de jeux extérieurs"),
    (604, "Piste de bicross", "Équipements de cyclisme"),
    (610, "Pumptrack", "Équipements de cyclisme"),
    (1501, "Salle de musculation/cardiotraining", "Salles non spécialisées"),
    (301, "Dojo / Salle d'arts martiaux", "Salles de combat"),
    (2501, "Salle de danse", "Salles non spécialisées"),
    (1701, "Parcours sportif/santé", "Boucles de randonnée"),
    (2001, "Carrière équestre", "Équipements équestres"),
    (501, "Skatepark", "Équipements de glisse urbaine"),
    (1301, "Arène de course landaise", "Arènes"),
)
_INSTALLATION_NAMES = (
    "municipal",
    "Jean Bouin",
    "des Sports",
    "du Lac",
    "Pierre de Coubertin",
    "de la Plaine",
)
_SOLS = (
    "Parquet",
    "Synthétique",
    "Gazon naturel",
    "Bitume",
    "Résine",
    "Sable",
    "Terre battue",
    "Béton",
)
_PROPRIETAIRES = (
    "Commune",
    "Commune",
    "Commune",
    "Établissement public de coopération intercommunale",
    "Département",
    "Association",
    "Établissement privé commercial",
    "Établissement scolaire",
)
_APS = {
    2802: "Basket-Ball / Handball / Volley-Ball / Badminton",
    1902: "Tennis",
    2201: "Football / Football en salle (futsal)",
    2203: "Rugby à XV",
    801: "Natation sportive",
    1101: "Pétanque",
    2901: "Basket-Ball / Football",
    604: "BMX",
    610: "BMX / Vélo tout terrain (VTT)",
    1501: "Musculation / Cardio-training",
    301: "Judo / Karaté",
    2501: "Danse",
    1701: "Course à pied / Marche",
    2001: "Équitation",
    501: "Roller / Skateboard / Trottinette",
    1301: "Course landaise",
}


def sports_equipment(rng: random.Random, view: CatalogView) -> GeneratedTable:
    """Data ES export: ``GERS_EQUIPMENTS`` rows in the Gers, ``OTHER_EQUIPMENTS`` elsewhere."""
    columns = _cols(
        [
            ("equip_numero", "string"),
            ("equip_nom", "string"),
            ("equip_type_code", "int"),
            ("equip_type_name", "string"),
            ("equip_type_famille", "string"),
            ("inst_numero", "string"),
            ("inst_nom", "string"),
            ("inst_adresse", "string"),
            ("inst_cp", "string", "code_postal"),
            ("new_code", "string", "code_commune_insee"),
            ("new_name", "string", "commune"),
            ("dep_code", "string", "code_departement"),
            ("dep_nom", "string", "departement"),
            ("reg_code", "string", "code_region"),
            ("reg_nom", "string", "region"),
            ("equip_x", "float", "longitude_wgs"),
            ("equip_y", "float", "latitude_wgs"),
            ("equip_sol", "string"),
            ("equip_long", "float"),
            ("equip_larg", "float"),
            ("equip_surf", "float"),
            ("equip_eclair", "bool"),
            ("equip_acc_libre", "bool"),
            ("equip_ouv_public_bool", "bool"),
            ("equip_service_date", "int", "year"),
            ("equip_travaux_date", "int", "year"),
            ("equip_prop_type", "string"),
            ("aps_name", "string"),
            ("inst_hs_bool", "bool"),
            ("equip_url", "string", "url"),
        ]
    )
    plan: list[Departement] = [GERS] * GERS_EQUIPMENTS
    others = [d for d in OTHER_DEPARTEMENTS]
    plan += [others[i % len(others)] for i in range(OTHER_EQUIPMENTS)]
    rng.shuffle(plan)
    rows: list[list[str]] = []
    installations: dict[str, int] = {}
    for index, dep in enumerate(plan, start=1):
        town = rng.choice(dep.towns)
        code, name, famille = rng.choice(EQUIPMENT_TYPES)
        inst_seq = installations.get(town.code, 0)
        if inst_seq == 0 or rng.random() < 0.45:
            inst_seq += 1
            installations[town.code] = inst_seq
        inst_numero = f"I{town.code}{inst_seq:04d}"
        kind = "Complexe sportif" if code in (2802, 2201, 2203, 1902) else "Espace de loisirs"
        inst_nom = f"{kind} {rng.choice(_INSTALLATION_NAMES)}"
        length = rng.choice([20.0, 40.0, 44.0, 90.0, 100.0, 105.0, 25.0, 36.0, 300.0])
        width = round(length * rng.uniform(0.4, 0.7), 1)
        served = rng.choice(["", str(rng.randint(1960, 2024))])
        works = str(rng.randint(int(served), 2025)) if served and rng.random() < 0.35 else ""
        rows.append(
            [
                f"E{index:06d}",
                f"{name} {rng.randint(1, 3)}" if rng.random() < 0.4 else name,
                str(code),
                name,
                famille,
                inst_numero,
                inst_nom,
                f"{rng.randint(1, 80)} {rng.choice(STREETS)}",
                town.postcode,
                town.code,
                town.name,
                dep.code,
                dep.name,
                dep.region_code,
                dep.region_name,
                _fmt_float(town.lon + rng.uniform(-0.05, 0.05), 6),
                _fmt_float(town.lat + rng.uniform(-0.04, 0.04), 6),
                rng.choice(_SOLS),
                _fmt_float(length, 1),
                _fmt_float(width, 1),
                _fmt_float(length * width, 1),
                rng.choice(["true", "false"]),
                rng.choice(["true", "false", "false"]),
                rng.choice(["true", "true", "false"]),
                served,
                works,
                rng.choice(_PROPRIETAIRES),
                _APS[code],
                "true" if rng.random() < 0.03 else "false",
                f"https://www.{town.name.lower().replace(' ', '-').replace(chr(39), '')}.fr/sport"
                if rng.random() < 0.15
                else "",
            ]
        )
    return GeneratedTable(
        columns, rows, ",", {"rows_with_dep_code_32": GERS_EQUIPMENTS, "rows": len(rows)}
    )


# --------------------------------------------------------------------------------------------
# Annuaire des diagnostiqueurs (resource 7987214d-…)

_DOMAINES = (
    "Amiante sans mention",
    "Amiante avec mention",
    "DPE individuel",
    "DPE avec mention",
    "Électricité",
    "Gaz",
    "Plomb sans mention",
    "Termites métropole",
    "Audit énergétique",
)
_ORGANISMES = (
    "AFNOR Certification",
    "Bureau Veritas Certification France",
    "DEKRA Certification",
    "I.Cert",
    "LCC Qualixpert",
    "Certibat",
    "ABCIDIA Certification",
    "Global Certification",
)


def diagnostiqueurs(rng: random.Random, view: CatalogView) -> GeneratedTable:
    """Certified property diagnosticians: one row per certificate (person × domain)."""
    columns = _cols(
        [
            ("nom", "string"),
            ("prenom", "string"),
            ("raison_sociale", "string"),
            ("adresse", "string"),
            ("code_postal", "string", "code_postal"),
            ("commune", "string", "commune"),
            ("departement", "string", "code_departement"),
            ("numero_certificat", "string"),
            ("organisme_certification", "string"),
            ("domaine", "string"),
            ("date_debut_validite", "date"),
            ("date_fin_validite", "date"),
            ("etat", "string"),
        ]
    )
    rows: list[list[str]] = []
    for _ in range(230):
        last, first, _sex = _person(rng)
        dep = rng.choice(ALL_DEPARTEMENTS)
        town = rng.choice(dep.towns)
        company = f"{rng.choice(['Diag', 'Expertise', 'Cabinet', 'Habitat Contrôle'])} {town.name}"
        organisme = rng.choice(_ORGANISMES)
        for domaine in rng.sample(_DOMAINES, rng.randint(1, 4)):
            start = _day(rng, date(2019, 1, 1), date(2026, 5, 1))
            end = start + timedelta(days=7 * 365)
            rows.append(
                [
                    last,
                    first,
                    company,
                    f"{rng.randint(1, 120)} {rng.choice(STREETS)}",
                    town.postcode,
                    town.name,
                    dep.code,
                    f"{organisme.split()[0][:4].upper()}-{rng.randint(10000, 99999)}",
                    organisme,
                    domaine,
                    start.isoformat(),
                    end.isoformat(),
                    "Suspendu" if rng.random() < 0.04 else "Valide",
                ]
            )
    return GeneratedTable(columns, rows, ";", {"rows": len(rows)})


# --------------------------------------------------------------------------------------------
# Sitadel permits (resources 65a9e264-… housing, 8f23d65f-… non-residential)

_CAT_DEM = (
    "Particulier",
    "Particulier",
    "Particulier",
    "Société civile immobilière",
    "Promoteur immobilier",
    "Bailleur social",
    "Commune",
    "Société commerciale",
)
_LOGTS = ("Individuel pur", "Individuel groupé", "Collectif", "Résidence")
_DEST_NONRES = (
    "Bureaux",
    "Commerce",
    "Artisanat",
    "Industrie",
    "Entrepôt",
    "Exploitation agricole",
    "Service public ou d'intérêt collectif",
    "Hébergement hôtelier",
)


def _permit_plan(
    rng: random.Random, n_rows: int, n_tournefeuille: int
) -> list[tuple[Departement, Town]]:
    tournefeuille = HAUTE_GARONNE.towns[1]
    others: list[tuple[Departement, Town]] = []
    for dep in ALL_DEPARTEMENTS:
        for town in dep.towns:
            if town.code != tournefeuille.code:
                others.append((dep, town))
    plan = [(HAUTE_GARONNE, tournefeuille)] * n_tournefeuille
    while len(plan) < n_rows:
        # Haute-Garonne and the Gers are over-represented so the region looks dense.
        dep, town = rng.choice(others)
        if dep.code not in ("31", "32") and rng.random() < 0.5:
            continue
        plan.append((dep, town))
    rng.shuffle(plan)
    return plan


def _permit_common(rng: random.Random, dep: Departement, town: Town, index: int) -> list[str]:
    authorised = _day(rng, date(2017, 1, 1), date(2026, 4, 30))
    started = authorised + timedelta(days=rng.randint(30, 400))
    # Etat_DAU: 2 authorised, 4 cancelled, 5 started, 6 completed.
    state = "2" if started > date(2026, 5, 28) or rng.random() < 0.3 else rng.choice("4556")
    cat = rng.choice(_CAT_DEM)
    return [
        dep.region_code,
        dep.code,
        town.code,
        "PC",
        f"PC{town.code}{authorised.year % 100:02d}{rng.choice('ABCDEFGHJKLMNPR')}"
        f"{index % 10000:04d}",
        state,
        authorised.isoformat(),
        started.isoformat() if state in "56" else "",
        f"{authorised.year}-{authorised.month:02d}",
        cat,
        "" if cat == "Particulier" else f"{cat.split()[0].upper()} {rng.choice(SURNAMES).upper()}",
        "" if cat == "Particulier" else str(rng.randint(300000000, 999999999)),
        town.name.upper(),
        town.postcode,
        str(rng.randint(200, 12000)),
    ]


_PERMIT_COMMON_COLUMNS: list[tuple[str, ColumnType] | tuple[str, ColumnType, str]] = [
    ("REG", "string", "code_region"),
    ("DEP", "string", "code_departement"),
    ("COMM", "string", "code_commune_insee"),
    ("Type_DAU", "string"),
    ("NUM_DAU", "string"),
    ("Etat_DAU", "string"),
    ("DATE_REELLE_AUTORISATION", "date"),
    ("DATE_REELLE_DOC", "date"),
    ("DPC_AUT", "string"),
    ("CAT_DEM", "string"),
    ("DENOM_DEM", "string"),
    ("SIREN_DEM", "string", "siren"),
    ("ADR_LOCALITE_TER", "string"),
    ("ADR_CODPOST_TER", "string", "code_postal"),
    ("SUPERFICIE_TERRAIN", "int"),
]


def permits_housing(rng: random.Random, view: CatalogView) -> GeneratedTable:
    """Sitadel permits creating housing; Tournefeuille (COMM 31557) has a pinned count."""
    columns = _cols(
        [
            *_PERMIT_COMMON_COLUMNS,
            ("NATURE_PROJET_DECLAREE", "string"),
            ("TYPE_PRINCIP_LOGTS_CREES", "string"),
            ("NB_LGT_TOT_CREES", "int"),
            ("NB_LGT_IND_CREES", "int"),
            ("NB_LGT_COL_CREES", "int"),
            ("SURF_HAB_CREEE", "int"),
        ]
    )
    rows = []
    n_rows = TOURNEFEUILLE_HOUSING_PERMITS + OTHER_HOUSING_PERMITS
    for index, (dep, town) in enumerate(_permit_plan(rng, n_rows, TOURNEFEUILLE_HOUSING_PERMITS)):
        kind = rng.choice(_LOGTS)
        total = 1 if kind == "Individuel pur" else rng.randint(2, 60)
        individual = total if kind.startswith("Individuel") else 0
        rows.append(
            [
                *_permit_common(rng, dep, town, index),
                rng.choice(
                    [
                        "Nouvelle construction",
                        "Nouvelle construction",
                        "Travaux sur construction existante",
                    ]
                ),
                kind,
                str(total),
                str(individual),
                str(total - individual),
                str(total * rng.randint(55, 130)),
            ]
        )
    return GeneratedTable(
        columns,
        rows,
        ";",
        {"rows_with_COMM_31557": TOURNEFEUILLE_HOUSING_PERMITS, "rows": len(rows)},
    )


def permits_nonres(rng: random.Random, view: CatalogView) -> GeneratedTable:
    """Sitadel permits creating non-residential floor space."""
    columns = _cols(
        [
            *_PERMIT_COMMON_COLUMNS,
            ("NATURE_PROJET_DECLAREE", "string"),
            ("DESTINATION_PRINCIPALE", "string"),
            ("SURF_LOC_CREEE", "int"),
            ("SURF_LOC_DEMOLIE", "int"),
        ]
    )
    rows = []
    for index, (dep, town) in enumerate(_permit_plan(rng, 400, TOURNEFEUILLE_NONRES_PERMITS)):
        rows.append(
            [
                *_permit_common(rng, dep, town, index),
                rng.choice(["Nouvelle construction", "Extension", "Changement de destination"]),
                rng.choice(_DEST_NONRES),
                str(rng.randint(20, 9000)),
                str(rng.choice([0, 0, 0, rng.randint(10, 800)])),
            ]
        )
    return GeneratedTable(
        columns,
        rows,
        ";",
        {"rows_with_COMM_31557": TOURNEFEUILLE_NONRES_PERMITS, "rows": len(rows)},
    )


_DICT_COLUMNS = _cols(
    [("variable", "string"), ("libelle", "string"), ("type", "string"), ("modalites", "string")]
)
_DICT_LABELS = {
    "REG": ("Code de la région du terrain", "texte", ""),
    "DEP": ("Code du département du terrain", "texte", ""),
    "COMM": ("Code INSEE de la commune du terrain", "texte", "5 caractères"),
    "Type_DAU": ("Type d'autorisation", "texte", "PC : permis de construire"),
    "NUM_DAU": ("Numéro de l'autorisation", "texte", ""),
    "Etat_DAU": (
        "État d'avancement du projet",
        "texte",
        "2 : autorisé ; 5 : commencé ; 6 : terminé",
    ),
    "DATE_REELLE_AUTORISATION": ("Date réelle d'autorisation", "date", "AAAA-MM-JJ"),
    "DATE_REELLE_DOC": ("Date réelle d'ouverture de chantier", "date", "AAAA-MM-JJ"),
    "DPC_AUT": ("Mois de prise en compte de l'autorisation", "texte", "AAAA-MM"),
    "CAT_DEM": ("Catégorie du demandeur", "texte", ""),
    "DENOM_DEM": ("Dénomination du demandeur (personne morale)", "texte", ""),
    "SIREN_DEM": ("SIREN du demandeur (personne morale)", "texte", "9 chiffres"),
    "ADR_LOCALITE_TER": ("Localité du terrain", "texte", ""),
    "ADR_CODPOST_TER": ("Code postal du terrain", "texte", ""),
    "SUPERFICIE_TERRAIN": ("Superficie du terrain (m²)", "entier", ""),
    "NATURE_PROJET_DECLAREE": ("Nature du projet déclarée", "texte", ""),
    "TYPE_PRINCIP_LOGTS_CREES": ("Type principal des logements créés", "texte", ""),
    "NB_LGT_TOT_CREES": ("Nombre total de logements créés", "entier", ""),
    "NB_LGT_IND_CREES": ("Nombre de logements individuels créés", "entier", ""),
    "NB_LGT_COL_CREES": ("Nombre de logements collectifs créés", "entier", ""),
    "SURF_HAB_CREEE": ("Surface de plancher habitable créée (m²)", "entier", ""),
    "DESTINATION_PRINCIPALE": ("Destination principale des locaux", "texte", ""),
    "SURF_LOC_CREEE": ("Surface de plancher de locaux créée (m²)", "entier", ""),
    "SURF_LOC_DEMOLIE": ("Surface de plancher de locaux démolie (m²)", "entier", ""),
}


def _dictionary(names: Sequence[str]) -> GeneratedTable:
    rows = [[name, *_DICT_LABELS[name]] for name in names]
    return GeneratedTable(list(_DICT_COLUMNS), rows, ";", {"rows": len(rows)})


def dict_housing(rng: random.Random, view: CatalogView) -> GeneratedTable:
    """Variable dictionary of the housing permits file."""
    return _dictionary([c.name for c in permits_housing(random.Random(0), view).columns])


def dict_nonres(rng: random.Random, view: CatalogView) -> GeneratedTable:
    """Variable dictionary of the non-residential permits file."""
    return _dictionary([c.name for c in permits_nonres(random.Random(0), view).columns])


# --------------------------------------------------------------------------------------------
# Répertoire national des élus (one table per mandate)

_PERSON_COLUMNS: list[tuple[str, ColumnType] | tuple[str, ColumnType, str]] = [
    ("Nom de l'élu", "string"),
    ("Prénom de l'élu", "string"),
    ("Code sexe", "string"),
    ("Date de naissance", "date"),
    ("Code de la catégorie socio-professionnelle", "string"),
    ("Libellé de la catégorie socio-professionnelle", "string"),
]
_DEP_COLUMNS: list[tuple[str, ColumnType] | tuple[str, ColumnType, str]] = [
    ("Code du département", "string", "code_departement"),
    ("Libellé du département", "string", "departement"),
]
_COMMUNE_COLUMNS: list[tuple[str, ColumnType] | tuple[str, ColumnType, str]] = [
    ("Code de la commune", "string", "code_commune_insee"),
    ("Libellé de la commune", "string", "commune"),
]
_MANDATE_COLUMNS: list[tuple[str, ColumnType] | tuple[str, ColumnType, str]] = [
    ("Date de début du mandat", "date"),
    ("Libellé de la fonction", "string"),
    ("Date de début de la fonction", "date"),
]


def _person_cells(rng: random.Random) -> list[str]:
    last, first, sex = _person(rng)
    code, label = rng.choice(CSP)
    return [last, first, sex, _birth(rng), code, label]


def _mandate_cells(rng: random.Random, start: date, functions: Sequence[str]) -> list[str]:
    function = rng.choice(functions)
    if not function:
        return [start.isoformat(), "", ""]
    return [start.isoformat(), function, (start + timedelta(days=rng.randint(5, 20))).isoformat()]


_MUNICIPAL_START = (date(2026, 3, 15), date(2026, 3, 22))


def _rne(
    rng: random.Random,
    n_rows: int,
    place_columns: list[tuple[str, ColumnType] | tuple[str, ColumnType, str]],
    place: Callable[[random.Random], list[str]],
    starts: Sequence[date],
    functions: Sequence[str],
    extra_columns: list[tuple[str, ColumnType] | tuple[str, ColumnType, str]] | None = None,
    extra: Callable[[random.Random], list[str]] | None = None,
) -> GeneratedTable:
    columns = _cols([*place_columns, *_PERSON_COLUMNS, *_MANDATE_COLUMNS, *(extra_columns or [])])
    rows = []
    for _ in range(n_rows):
        cells = [
            *place(rng),
            *_person_cells(rng),
            *_mandate_cells(rng, rng.choice(starts), functions),
        ]
        if extra is not None:
            cells += extra(rng)
        rows.append(cells)
    return GeneratedTable(columns, rows, ";", {"rows": len(rows)})


def _dep_commune(rng: random.Random) -> list[str]:
    dep = rng.choice(ALL_DEPARTEMENTS)
    town = rng.choice(dep.towns)
    return [dep.code, dep.name, "", "", town.code, town.name]


def rne_cm(rng: random.Random, view: CatalogView) -> GeneratedTable:
    """Conseillers municipaux: Toulouse (31555) has exactly its 69 councillors, 35 women."""

    def elsewhere(r: random.Random) -> list[str]:
        # Toulouse appears only in the pinned block below.
        while True:
            cells = _dep_commune(r)
            if cells[4] != TOULOUSE.code:
                return cells

    table = _rne(
        rng,
        700,
        [
            *_DEP_COLUMNS,
            ("Code de la collectivité à statut particulier", "string"),
            ("Libellé de la collectivité à statut particulier", "string"),
            *_COMMUNE_COLUMNS,
        ],
        elsewhere,
        _MUNICIPAL_START,
        ["", "", "", "Premier adjoint au maire", "Deuxième adjoint au maire", "Adjoint au maire"],
        [("Code nationalité", "string")],
        lambda r: ["FR" if r.random() < 0.98 else "UE"],
    )
    sexes = ["F"] * TOULOUSE_COUNCILLORS_WOMEN + ["M"] * (
        TOULOUSE_COUNCILLORS - TOULOUSE_COUNCILLORS_WOMEN
    )
    rng.shuffle(sexes)
    start = date(2026, 3, 22)
    toulouse_rows = []
    for position, sex in enumerate(sexes):
        first = rng.choice(FIRST_NAMES_F if sex == "F" else FIRST_NAMES_M)
        code, label = rng.choice(CSP)
        if position == 0:
            function = "Maire"
        elif position <= 20:
            function = "Premier adjoint au maire" if position == 1 else "Adjoint au maire"
        else:
            function = ""
        function_start = (start + timedelta(days=12)).isoformat() if function else ""
        toulouse_rows.append(
            [
                HAUTE_GARONNE.code,
                HAUTE_GARONNE.name,
                "",
                "",
                TOULOUSE.code,
                TOULOUSE.name,
                rng.choice(SURNAMES).upper(),
                first,
                sex,
                _birth(rng),
                code,
                label,
                start.isoformat(),
                function,
                function_start,
                "FR",
            ]
        )
    # Interleave the council with the other rows rather than appending it as a block.
    total = len(table.rows) + len(toulouse_rows)
    slots = set(rng.sample(range(total), len(toulouse_rows)))
    pending, other = iter(toulouse_rows), iter(table.rows)
    rows = [next(pending) if i in slots else next(other) for i in range(total)]
    table.rows = rows
    table.facts = {
        "rows_with_code_commune_31555": TOULOUSE_COUNCILLORS,
        "women_with_code_commune_31555": TOULOUSE_COUNCILLORS_WOMEN,
        "rows": len(rows),
    }
    return table


def rne_ca(rng: random.Random, view: CatalogView) -> GeneratedTable:
    """Conseillers d'arrondissement (Paris, Lyon, Marseille)."""
    cities = (
        ("75", "Paris", "75056", "Paris"),
        ("69", "Rhône", "69123", "Lyon"),
        ("13", "Bouches-du-Rhône", "13055", "Marseille"),
    )

    def place(r: random.Random) -> list[str]:
        dep_code, dep_name, code, name = r.choice(cities)
        return [dep_code, dep_name, code, name, f"{r.randint(1, 8)}e secteur"]

    return _rne(
        rng,
        150,
        [*_DEP_COLUMNS, *_COMMUNE_COLUMNS, ("Libellé du secteur", "string")],
        place,
        _MUNICIPAL_START,
        ["", "", "Maire d'arrondissement", "Adjoint au maire d'arrondissement"],
    )


def rne_epci(rng: random.Random, view: CatalogView) -> GeneratedTable:
    """Conseillers communautaires."""
    epcis = {
        "32": ("200066926", "CA Grand Auch Cœur de Gascogne"),
        "31": ("243100518", "Toulouse Métropole"),
    }

    def place(r: random.Random) -> list[str]:
        dep = r.choice(ALL_DEPARTEMENTS)
        town = r.choice(dep.towns)
        siren, label = epcis.get(
            dep.code,
            (str(200000000 + int(town.code[-3:]) * 1000 + 17), f"CC du Pays de {town.name}"),
        )
        return [dep.code, dep.name, town.code, town.name, siren, label]

    return _rne(
        rng,
        300,
        [
            *_DEP_COLUMNS,
            *_COMMUNE_COLUMNS,
            ("N° SIREN", "string", "siren"),
            ("Libellé de l'EPCI", "string"),
        ],
        # This file was last updated before the March 2026 elections: 2020 mandates.
        place,
        (date(2020, 6, 28), date(2020, 7, 10)),
        ["", "", "Président du conseil communautaire", "Vice-président"],
    )


def rne_cd(rng: random.Random, view: CatalogView) -> GeneratedTable:
    """Conseillers départementaux."""

    def place(r: random.Random) -> list[str]:
        dep = r.choice(ALL_DEPARTEMENTS)
        n = r.randint(1, 15)
        return [dep.code, dep.name, f"{dep.code}{n:02d}", f"Canton {n}"]

    return _rne(
        rng,
        120,
        [*_DEP_COLUMNS, ("Code du canton", "string"), ("Libellé du canton", "string")],
        place,
        (date(2021, 6, 27),),
        ["", "", "Président du conseil départemental", "Vice-président"],
    )


def rne_cr(rng: random.Random, view: CatalogView) -> GeneratedTable:
    """Conseillers régionaux."""

    def place(r: random.Random) -> list[str]:
        dep = r.choice(ALL_DEPARTEMENTS)
        return [dep.region_code, dep.region_name, dep.code, dep.name]

    return _rne(
        rng,
        80,
        [
            ("Code de la région", "string", "code_region"),
            ("Libellé de la région", "string", "region"),
            ("Code de la section départementale", "string"),
            ("Libellé de la section départementale", "string"),
        ],
        place,
        (date(2021, 6, 27),),
        ["", "", "Président du conseil régional", "Vice-président"],
    )


def rne_cac(rng: random.Random, view: CatalogView) -> GeneratedTable:
    """Membres des assemblées des collectivités à statut particulier."""
    cacs = (
        ("20R", "Collectivité de Corse"),
        ("972", "Collectivité territoriale de Martinique"),
        ("973", "Collectivité territoriale de Guyane"),
    )

    def place(r: random.Random) -> list[str]:
        return list(r.choice(cacs))

    return _rne(
        rng,
        40,
        [
            ("Code de la collectivité à statut particulier", "string"),
            ("Libellé de la collectivité à statut particulier", "string"),
        ],
        place,
        (date(2021, 6, 27),),
        ["", "", "Président de l'assemblée"],
    )


def rne_rpe(rng: random.Random, view: CatalogView) -> GeneratedTable:
    """Représentants au Parlement européen."""
    return _rne(rng, 81, [], lambda r: [], (date(2024, 7, 16),), [""])


def rne_sen(rng: random.Random, view: CatalogView) -> GeneratedTable:
    """Sénateurs."""

    def place(r: random.Random) -> list[str]:
        dep = r.choice(ALL_DEPARTEMENTS)
        return [dep.code, dep.name]

    return _rne(rng, 80, [*_DEP_COLUMNS], place, (date(2020, 10, 1), date(2023, 10, 1)), [""])


def rne_dep(rng: random.Random, view: CatalogView) -> GeneratedTable:
    """Députés."""

    def place(r: random.Random) -> list[str]:
        dep = r.choice(ALL_DEPARTEMENTS)
        n = r.randint(1, 6)
        return [dep.code, dep.name, f"{dep.code}{n:02d}", f"{n}e circonscription"]

    return _rne(
        rng,
        120,
        [
            *_DEP_COLUMNS,
            ("Code de la circonscription législative", "string"),
            ("Libellé de la circonscription législative", "string"),
        ],
        place,
        (date(2024, 7, 7),),
        [""],
    )


def rne_mai(rng: random.Random, view: CatalogView) -> GeneratedTable:
    """Maires."""
    return _rne(
        rng,
        250,
        [
            *_DEP_COLUMNS,
            ("Code de la collectivité à statut particulier", "string"),
            ("Libellé de la collectivité à statut particulier", "string"),
            *_COMMUNE_COLUMNS,
        ],
        _dep_commune,
        _MUNICIPAL_START,
        ["Maire"],
    )


def rne_cons(rng: random.Random, view: CatalogView) -> GeneratedTable:
    """Conseillers des Français de l'étranger."""
    circ = (
        "Allemagne",
        "Belgique",
        "Canada",
        "Espagne",
        "États-Unis",
        "Maroc",
        "Royaume-Uni",
        "Suisse",
    )

    def place(r: random.Random) -> list[str]:
        i = r.randrange(len(circ))
        return [f"{i + 1:03d}", circ[i]]

    return _rne(
        rng,
        60,
        [
            ("Code de la circonscription consulaire", "string"),
            ("Libellé de la circonscription consulaire", "string"),
        ],
        place,
        (date(2021, 5, 30),),
        [""],
    )


def rne_afe(rng: random.Random, view: CatalogView) -> GeneratedTable:
    """Membres de l'Assemblée des Français de l'étranger."""
    circ = (
        "Europe du Nord",
        "Europe centrale et orientale",
        "Amérique du Nord",
        "Afrique du Nord",
        "Asie-Océanie",
    )

    def place(r: random.Random) -> list[str]:
        i = r.randrange(len(circ))
        return [f"{i + 1:02d}", circ[i]]

    return _rne(
        rng,
        40,
        [
            ("Code de la circonscription AFE", "string"),
            ("Libellé de la circonscription AFE", "string"),
        ],
        place,
        (date(2021, 6, 1),),
        ["", "Président de l'AFE"],
    )


# --------------------------------------------------------------------------------------------
# Insee BDM series for the "Transports" dataset

_SERIES = (
    ("010767832", "Immatriculations de voitures particulières neuves - France", "nombre", 140000.0),
    (
        "010767833",
        "Immatriculations de véhicules utilitaires légers neufs - France",
        "nombre",
        32000.0,
    ),
    ("010767900", "Consommation de gazole routier - France", "milliers de m³", 2700.0),
    ("010767911", "Trafic sur autoroutes concédées - véhicules légers", "millions de km", 7000.0),
)


def insee_transports(rng: random.Random, view: CatalogView) -> GeneratedTable:
    """Monthly values of four BDM series, June 2023 – May 2026."""
    columns = _cols(
        [
            ("idBank", "string"),
            ("Libellé", "string"),
            ("Période", "string"),
            ("Valeur", "float"),
            ("Unité", "string"),
        ]
    )
    rows = []
    for idbank, label, unit, base in _SERIES:
        for year, month in _months(2023, 6, 2026, 5):
            season = 0.75 if month == 8 else 1.1 if month in (3, 6, 9) else 1.0
            value = base * season * rng.uniform(0.9, 1.1)
            rows.append([idbank, label, f"{year}-{month:02d}", _fmt_float(value, 1), unit])
    return GeneratedTable(columns, rows, ";", {"rows": len(rows)})


def _months(y0: int, m0: int, y1: int, m1: int) -> list[tuple[int, int]]:
    result = []
    year, month = y0, m0
    while (year, month) <= (y1, m1):
        result.append((year, month))
        month += 1
        if month == 13:
            year, month = year + 1, 1
    return result


# --------------------------------------------------------------------------------------------
# data.gouv.fr catalogue exports


def _iso_micro(when: datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%S.%f")


def _naive(iso: str) -> datetime:
    """Parse an ISO datetime as UTC (exports print it without an offset, see ``_iso_micro``)."""
    when = datetime.fromisoformat(iso)
    if when.tzinfo is None:
        return when.replace(tzinfo=UTC)
    return when.astimezone(UTC)


def catalogue_organizations(rng: random.Random, view: CatalogView) -> GeneratedTable:
    """The organizations export (the twin's organizations)."""
    columns = _cols(
        [
            ("id", "string"),
            ("name", "string"),
            ("acronym", "string"),
            ("slug", "string"),
            ("url", "string", "url"),
            ("description", "string"),
            ("created_at", "datetime"),
            ("last_modified", "datetime"),
            ("business_number_id", "string", "siret"),
            ("badges", "string"),
            ("metric.datasets", "int"),
            ("metric.dataservices", "int"),
            ("metric.followers", "int"),
            ("metric.reuses", "int"),
            ("metric.views", "int"),
        ]
    )
    rows = []
    for org in view.organizations:
        m = org["metrics"]
        rows.append(
            [
                org["id"],
                org["name"],
                org.get("acronym") or "",
                org["slug"],
                org["page"],
                org["description"],
                _iso_micro(_naive(org["created_at"])),
                _iso_micro(_naive(org["last_modified"])),
                org.get("business_number_id") or "",
                ",".join(b["kind"] for b in org["badges"]),
                str(m["datasets"]),
                str(m["dataservices"]),
                str(m["followers"]),
                str(m["reuses"]),
                str(m["views"]),
            ]
        )
    return GeneratedTable(columns, rows, ";", {"rows": len(rows)})


def catalogue_dataservices(rng: random.Random, view: CatalogView) -> GeneratedTable:
    """The dataservices export (the twin's dataservices)."""
    columns = _cols(
        [
            ("id", "string"),
            ("title", "string"),
            ("url", "string", "url"),
            ("organization", "string"),
            ("organization_id", "string"),
            ("base_api_url", "string", "url"),
            ("machine_documentation_url", "string", "url"),
            ("access_type", "string"),
            ("license", "string"),
            ("created_at", "datetime"),
            ("last_update", "datetime"),
            ("archived", "bool"),
            ("tags", "string"),
            ("metric.views", "int"),
        ]
    )
    rows = []
    for record in view.dataservices:
        org = record.get("organization") or {}
        rows.append(
            [
                record["id"],
                record["title"],
                record["self_web_url"],
                org.get("name", ""),
                org.get("id", ""),
                record.get("base_api_url") or "",
                record.get("machine_documentation_url") or "",
                record["access_type"],
                record["license"],
                _iso_micro(_naive(record["created_at"])),
                _iso_micro(_naive(record["last_update"])),
                "true" if record.get("archived_at") else "false",
                ",".join(record["tags"]),
                str(record["metrics"]["views"]),
            ]
        )
    return GeneratedTable(columns, rows, ";", {"rows": len(rows)})


# --------------------------------------------------------------------------------------------
# Palissy sample (served as the download of palissy.csv, which is not in the Tabular API)

_PALISSY_COLUMNS = _cols(
    [
        ("Référence", "string"),
        ("Titre editorial", "string"),
        ("Dénomination", "string"),
        ("Région", "string"),
        ("Département", "string"),
        ("Département format numérique", "string", "code_departement"),
        ("Commune forme index", "string", "commune"),
        ("Commune forme éditoriale", "string"),
        ("Nom de l'édifice", "string"),
        ("Datation en siècle", "string"),
        ("Typologie de la protection", "string"),
        ("Date et typologie de la protection", "string"),
        ("Statut juridique de l'objet", "string"),
    ]
)
_BELLEY_OBJECTS = (
    ("stalles", "stalles", "15e siècle"),
    ("orgue de tribune", "orgue", "19e siècle"),
    ("chaire à prêcher", "chaire à prêcher", "18e siècle"),
    ("tableau : la Décollation de saint Jean-Baptiste", "tableau", "17e siècle"),
    ("statue : Vierge à l'Enfant", "statue", "14e siècle"),
    ("ostensoir", "ostensoir", "19e siècle"),
    ("calice et patène", "calice ; patène", "18e siècle"),
    ("reliquaire de saint Anthelme", "reliquaire", "19e siècle"),
    ("maître-autel", "autel ; retable", "18e siècle"),
    ("cloche", "cloche", "17e siècle"),
    ("tapisserie : scènes de la vie de saint Jean-Baptiste", "tapisserie", "16e siècle"),
    ("lutrin", "lutrin", "18e siècle"),
)
_OTHER_EDIFICES = (
    ("Auvergne-Rhône-Alpes", "Ain", "01", "Bourg-en-Bresse", "église Notre-Dame"),
    ("Auvergne-Rhône-Alpes", "Ain", "01", "Belley", "chapelle du palais épiscopal"),
    ("Auvergne-Rhône-Alpes", "Rhône", "69", "Lyon", "cathédrale Saint-Jean-Baptiste"),
    ("Hauts-de-France", "Somme", "80", "Amiens", "cathédrale Notre-Dame"),
    ("Occitanie", "Gers", "32", "Auch", "cathédrale Sainte-Marie"),
    ("Occitanie", "Haute-Garonne", "31", "Toulouse", "basilique Saint-Sernin"),
    ("Bretagne", "Ille-et-Vilaine", "35", "Rennes", "cathédrale Saint-Pierre"),
)


def palissy_sample(rng: random.Random, view: CatalogView) -> GeneratedTable:
    """A small extract of palissy.csv with the Belley cathedral's objects among others."""
    rows: list[list[str]] = []
    serial = 0

    def add(
        region: str,
        dep: str,
        dep_code: str,
        commune: str,
        edifice: str,
        title: str,
        kind: str,
        century: str,
    ) -> None:
        nonlocal serial
        serial += 1
        listed = rng.random() < 0.7
        protection = "classé au titre objet" if listed else "inscrit au titre objet"
        year = rng.randint(1902, 1995)
        rows.append(
            [
                f"PM{dep_code}{rng.randint(0, 999999):06d}",
                title,
                kind,
                region,
                dep,
                dep_code,
                commune,
                commune,
                edifice,
                century,
                protection,
                f"{year}/{rng.randint(1, 12):02d}/{rng.randint(1, 28):02d} : {protection}",
                rng.choice(
                    [
                        "propriété de la commune",
                        "propriété de l'Etat",
                        "propriété d'une association diocésaine",
                    ]
                ),
            ]
        )

    for title, kind, century in _BELLEY_OBJECTS:
        add(
            "Auvergne-Rhône-Alpes",
            "Ain",
            "01",
            "Belley",
            "cathédrale Saint-Jean-Baptiste",
            title,
            kind,
            century,
        )
    for _ in range(36):
        region, dep, dep_code, commune, edifice = rng.choice(_OTHER_EDIFICES)
        title, kind, century = rng.choice(_BELLEY_OBJECTS)
        add(region, dep, dep_code, commune, edifice, title, kind, century)
    rng.shuffle(rows)
    return GeneratedTable(
        list(_PALISSY_COLUMNS), rows, ";", {"belley_cathedral_rows": len(_BELLEY_OBJECTS)}
    )


TableGenerator = Callable[[random.Random, CatalogView], GeneratedTable]

# Samples served as downloads of files that are not in the Tabular API.
DOWNLOAD_GENERATORS: dict[str, TableGenerator] = {"palissy_sample": palissy_sample}

GENERATORS: dict[str, TableGenerator] = {
    "sports_equipment": sports_equipment,
    "diagnostiqueurs": diagnostiqueurs,
    "permits_housing": permits_housing,
    "permits_nonres": permits_nonres,
    "dict_housing": dict_housing,
    "dict_nonres": dict_nonres,
    "rne_cm": rne_cm,
    "rne_ca": rne_ca,
    "rne_epci": rne_epci,
    "rne_cd": rne_cd,
    "rne_cr": rne_cr,
    "rne_cac": rne_cac,
    "rne_rpe": rne_rpe,
    "rne_sen": rne_sen,
    "rne_dep": rne_dep,
    "rne_mai": rne_mai,
    "rne_cons": rne_cons,
    "rne_afe": rne_afe,
    "insee_transports": insee_transports,
    "catalogue_organizations": catalogue_organizations,
    "catalogue_dataservices": catalogue_dataservices,
}
