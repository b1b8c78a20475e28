"""The curated task specifications of ``task_specs/`` load without error."""

from __future__ import annotations

import re

import pytest

from datagouv_eval_pipeline.core.tasks.errors import TaskSpecErrors
from datagouv_eval_pipeline.core.tasks.loader import TASK_SPECS_DIR, load_task_specs
from datagouv_eval_pipeline.core.tasks.spec import TaskStatus


def test_the_real_task_specs_load() -> None:
    if not any(TASK_SPECS_DIR.glob("task_*.yml")):
        pytest.skip("no task_specs/task_*.yml yet")
    try:
        specs = load_task_specs([TASK_SPECS_DIR])
    except TaskSpecErrors as errors:
        pytest.fail(str(errors), pytrace=False)
    ids = [spec.task_id for spec in specs]
    assert len(ids) == len(set(ids))
    assert any(spec.meta.status == TaskStatus.ACTIVE for spec in specs)


def test_the_documented_example_is_a_draft() -> None:
    example = TASK_SPECS_DIR / "example_task_0000.yml"
    if not example.exists():
        pytest.skip("no example yet")
    (spec,) = load_task_specs([example])
    assert spec.meta.status == TaskStatus.DRAFT


# Answers seen in the default experiment of 2026-12-06 (wrong dataset, right year) and right
# answers in the forms an agent writes a date. The freshness patterns must tell them apart.
_DATE_PATTERN_CASES = {
    "task_0034": (
        [
            "Jeu de données : « Tests covid-19 publiés par la plateforme covid-19.sante.gouv.fr »."
            " D'après sa fiche : fréquence de mise à jour ponctuelle, dernière mise à jour le"
            " 2023-12-11.",
            "Ces fichiers ont été mis à jour pour la dernière fois en 2023.",
        ],
        [
            "Les jeux « OLD » n'ont plus été mis à jour depuis le 21 février 2023.",
            "dernière mise à jour le 2023-02-21",
            "Last updated on February 21, 2023.",
            "mis à jour le 21/02/2023",
            "dernière mise à jour : févr. 2023",
        ],
    ),
    "task_0035": (
        [
            "Jeu de données : « CC HAUT-LEON COMMUNAUTE ». D'après sa fiche : fréquence de mise à"
            " jour inconnue, dernière mise à jour le 2024-03-15.",
            "Le fichier a été mis à jour en 2024.",
        ],
        [
            "Dernière mise à jour en juin 2024, publication annuelle.",
            "dernière mise à jour le 2024-06-06",
            "It was last updated on June 6, 2024.",
            "mis à jour le 06/06/2024",
        ],
    ),
}


@pytest.mark.parametrize("task_id", sorted(_DATE_PATTERN_CASES))
def test_a_freshness_pattern_needs_the_month_not_only_the_year(task_id: str) -> None:
    (spec,) = load_task_specs([TASK_SPECS_DIR / f"{task_id}.yml"])
    (pattern,) = [p for c in spec.evaluation_criteria.minimal for p in c.patterns]
    wrong, right = _DATE_PATTERN_CASES[task_id]
    assert [a for a in wrong if re.search(pattern, a)] == []
    assert [a for a in right if not re.search(pattern, a)] == []
