from __future__ import annotations

import asyncio
from typing import Any

import pytest
from pydantic import ValidationError

from datagouv_eval_pipeline.core.judges.deterministic import (
    JUDGE_ID,
    DeterministicJudge,
    is_link_criterion,
    unit_near,
)
from datagouv_eval_pipeline.core.judges.protocol import (
    CriterionInput,
    FailureModeInput,
    ToolEvidence,
    TrajectoryInput,
)
from datagouv_eval_pipeline.core.judges.verdict import (
    NEEDS_LLM,
    FailureMode,
    Verdict,
    VerdictStatus,
    outcome,
)
from datagouv_eval_pipeline.core.metrics.catalog import (
    CatalogObject,
    StaticCatalogLookup,
    with_catalog_slugs,
)
from datagouv_eval_pipeline.core.metrics.numbers import find_value
from datagouv_eval_pipeline.core.metrics.trajectory import trajectory_adherence
from datagouv_eval_pipeline.core.semantic.instances import ActionInstance
from datagouv_eval_pipeline.core.tasks.chain import parse_chain
from datagouv_eval_pipeline.core.tasks.spec import Criterion, TaskSpec
from datagouv_eval_pipeline.core.traces import ToolCall

JUDGE = DeterministicJudge()
DS = "53699ebba3a729239d205f4f"


def make_task(**extra: Any) -> TaskSpec:
    data: dict[str, Any] = {
        "task_id": "task_0900",
        "version": 1,
        "task_name": "test",
        "meta": {"status": "active", "source": "synthetic"},
        "prompt": "Combien d'équipements sportifs dans le Gers en 2024 ?",
        "evaluation_criteria": {
            "minimal": [
                {"criteria": "La réponse indique que 1023 équipements sont recensés."},
                {"criteria": "La réponse donne le lien vers la page du jeu de données."},
                {"criteria": "La réponse cite l'Annuaire Santé.", "keywords": ["Annuaire Santé"]},
                {"criteria": "Mentionne le code 32.", "patterns": [r"\b32\b"]},
                {"criteria": "La réponse est prudente."},
            ]
        },
        "action_chain": {
            "minimal": {
                "chain": "search.datasets > get.dataset.resources > get.data",
                "required_actions": [
                    {"name": "search.datasets", "args": [{"name": "query", "criteria": "sport"}]},
                    {
                        "name": "get.dataset.resources",
                        "args": [{"name": "dataset_id", "strict_value": DS}],
                    },
                    {"name": "get.data", "args": []},
                ],
            }
        },
        "expected_values": [
            {"name": "gers", "value": 1023, "unit": "équipements sportifs", "tolerance": 0}
        ],
        "expected_sources": [{"type": "dataset", "id": DS}],
    }
    data.update(extra)
    return TaskSpec.model_validate(data)


TASK = make_task()


def judge_criterion(index: int, answer: str, **kwargs: Any) -> Verdict:
    criterion = TASK.criteria("minimal")[index]
    return JUDGE.criterion_sync(
        CriterionInput(TASK.prompt, answer, criterion, (), task=TASK, **kwargs)
    )


def test_a_linked_expected_value_with_its_unit_passes() -> None:
    verdict = judge_criterion(0, "Le Gers compte 1 023 équipements sportifs.")
    assert outcome(verdict) == "pass"
    assert verdict.judge_id == JUDGE_ID
    assert "only these hints were verified" in verdict.reason
    assert verdict.details["hints"][0]["holds"] is True


def test_a_missing_value_fails_and_a_value_in_another_unit_is_unscored() -> None:
    national = judge_criterion(0, "La France compte 330 000 équipements sportifs.")
    assert outcome(national) == "fail"
    assert "not stated in the answer" in national.reason
    other_unit = judge_criterion(0, "Le Gers compte 1 023 installations sportives.")
    assert outcome(other_unit) == "unscored"
    assert other_unit.error == NEEDS_LLM
    assert "not as 'équipements sportifs'" in other_unit.reason


@pytest.mark.parametrize(
    ("answer", "near"),
    [
        ("On recense 1 023 équipements.", True),  # the word after the number is the unit
        ("Équipements sportifs du Gers : 1 023.", True),  # unit before, nothing after
        ("Équipements du Gers en 2024 : 1 023, selon le RES.", True),  # a year does not cut
        ("Il y a 5 piscines et 1 023 au total.", False),  # "5" cuts the clause: no unit left
        ("1 023 installations, dont 40 équipements.", False),
        ("**1 023** équipements", True),  # markdown bold around the number
    ],
)
def test_unit_near(answer: str, near: bool) -> None:
    reading = find_value(answer, 1023)
    assert reading is not None
    assert unit_near(answer, reading, "équipements sportifs") is near


def test_keywords_are_case_and_accent_insensitive_and_patterns_are_regexes() -> None:
    assert outcome(judge_criterion(2, "Voir l'ANNUAIRE SANTE (API FHIR).")) == "pass"
    missing = judge_criterion(2, "Voir l'annuaire de la santé.")
    assert outcome(missing) == "fail"
    assert "keyword 'Annuaire Santé': absent" in missing.reason
    assert outcome(judge_criterion(3, "Filtrez sur dep_code = 32.")) == "pass"
    assert outcome(judge_criterion(3, "Filtrez sur dep_code = 320.")) == "fail"


def test_a_link_criterion_is_decided_by_the_citation_check() -> None:
    assert is_link_criterion(TASK.criteria("minimal")[1])
    cited = judge_criterion(1, f"Page : https://www.data.gouv.fr/fr/datasets/{DS}/")
    assert outcome(cited) == "pass"
    assert outcome(judge_criterion(1, "Voir la page du jeu sur data.gouv.fr.")) == "fail"
    # A slug printed next to the id in a tool result teaches nothing (it may be another
    # dataset's); the slug counts when the task carries the catalog record's slug.
    evidence = (
        ToolEvidence(
            "c1",
            "get_dataset_info",
            {"dataset_id": DS},
            f"ID: {DS}\nSlug: recensement-des-equipements-sportifs\n",
            False,
        ),
    )
    criterion = TASK.criteria("minimal")[1]
    slug = JUDGE.criterion_sync(
        CriterionInput(
            TASK.prompt,
            "https://www.data.gouv.fr/datasets/recensement-des-equipements-sportifs",
            criterion,
            evidence,
            task=TASK,
        )
    )
    assert outcome(slug) == "fail"
    with_slug = with_catalog_slugs(
        TASK,
        StaticCatalogLookup.of(
            [CatalogObject("dataset", DS, "recensement-des-equipements-sportifs")]
        ),
    )
    slug = JUDGE.criterion_sync(
        CriterionInput(
            TASK.prompt,
            "https://www.data.gouv.fr/datasets/recensement-des-equipements-sportifs",
            criterion,
            evidence,
            task=with_slug,
        )
    )
    assert outcome(slug) == "pass"


def test_a_criterion_without_hint_is_left_to_an_llm_judge() -> None:
    verdict = judge_criterion(4, "Je reste prudent sur ces chiffres.")
    assert outcome(verdict) == "unscored"
    assert verdict.error == NEEDS_LLM
    assert verdict.reason == "the criterion has no machine-checkable hint"
    # Without the task, a value criterion has no linked value either.
    alone = JUDGE.criterion_sync(
        CriterionInput("q", "1 023 équipements", TASK.criteria("minimal")[0], ())
    )
    assert outcome(alone) == "unscored"


def test_an_invalid_pattern_leaves_the_criterion_unscored() -> None:
    # A spec cannot hold one any more (the model refuses it at load)...
    with pytest.raises(ValidationError, match="not a valid regular expression"):
        Criterion(criteria="x", patterns=["(unclosed"])
    # ...but a criterion built without validation still never crashes the judge.
    criterion = Criterion.model_construct(criteria="x", keywords=[], patterns=["(unclosed"])
    verdict = JUDGE.criterion_sync(CriterionInput("q", "anything", criterion, ()))
    assert outcome(verdict) == "unscored"
    assert "invalid pattern" in verdict.reason


def inst(action: str, call_id: str = "c", errored: bool = False, **args: Any) -> ActionInstance:
    return ActionInstance(action=action, args=args, source_call_id=call_id, errored=errored)


def test_arguments_strict_values_decide_and_criteria_need_a_judge() -> None:
    resources, search = (
        TASK.chain("minimal").required_actions[1],
        TASK.chain("minimal").required_actions[0],
    )
    verdicts = asyncio.run(
        JUDGE.arguments(
            resources,
            [
                inst("get.dataset.resources", "a", dataset_id=DS.upper()),  # case is normalised
                inst("get.dataset.resources", "b", dataset_id="other"),
                inst("get.dataset.resources", "c", errored=True, dataset_id=DS),
            ],
        )
    )
    assert [outcome(v) for v in verdicts] == ["pass", "fail", "fail"]
    assert verdicts[1].details["mismatched"] == ["dataset_id"]
    assert "failed" in verdicts[2].reason
    criteria = asyncio.run(
        JUDGE.arguments(search, [inst("search.datasets", query="sport"), inst("search.datasets")])
    )
    assert [outcome(v) for v in criteria] == ["unscored", "fail"]
    assert criteria[0].error == NEEDS_LLM
    assert criteria[0].details["criteria_arguments"] == ["query"]


def test_trajectory_is_the_metrics_chain_walk() -> None:
    chain = "search.datasets > get.dataset.resources > get.data"
    actual = [inst("search.datasets"), inst("get.data"), inst("get.dataset.resources")]
    verdict = JUDGE.trajectory_sync(TrajectoryInput(chain, [], actual, "minimal"))
    expected = trajectory_adherence(parse_chain(chain), actual).adherence.value
    assert verdict.score == expected == pytest.approx(2 / 3)
    assert verdict.details["missing"] == ["get.data"]
    broken = JUDGE.trajectory_sync(TrajectoryInput("search.datasets >", [], actual, "minimal"))
    assert outcome(broken) == "unscored"


def modes(
    answer: str,
    instances: list[ActionInstance],
    evidence: list[ToolEvidence] | None = None,
    task: TaskSpec = TASK,
) -> dict[FailureMode, Verdict]:
    data = FailureModeInput(
        task=task,
        tier="minimal",
        answer=answer,
        evidence=tuple(evidence or ()),
        instances=tuple(instances),
    )
    return JUDGE.failure_modes_sync(data)


FULL = [
    inst("search.datasets", "c1", query="sport"),
    inst("get.dataset.resources", "c2", dataset_id=DS),
    inst("get.data", "c3"),
]


def test_failure_modes_of_a_clean_run_are_absent_and_the_rest_unscored() -> None:
    evidence = [ToolEvidence("c3", "query_resource_data", {}, "Total rows: 1023", False)]
    result = modes("Le Gers compte 1 023 équipements sportifs.", FULL, evidence)
    decided = {mode: outcome(v) for mode, v in result.items()}
    assert decided == {
        FailureMode.HALLUCINATION: "pass",
        FailureMode.MISINTERPRETATION: "unscored",
        FailureMode.WRONG_RESOURCE: "unscored",
        FailureMode.PARAMETER_ERROR: "pass",
        FailureMode.TOOL_OMISSION: "pass",
        FailureMode.EARLY_STOP: "pass",
        FailureMode.REDUNDANT_LOOP: "pass",
        FailureMode.MISSING_CAVEAT: "unscored",
        FailureMode.NO_FALLBACK: "unscored",
    }
    assert result[FailureMode.TOOL_OMISSION].details["tier"] == "minimal"


def test_tool_omission_and_early_stop() -> None:
    stopped = modes("Je cherche encore.", FULL[:1])
    assert outcome(stopped[FailureMode.TOOL_OMISSION]) == "fail"
    assert stopped[FailureMode.TOOL_OMISSION].details["missing"] == [
        "get.data",
        "get.dataset.resources",
    ]
    assert outcome(stopped[FailureMode.EARLY_STOP]) == "fail"
    # Kept acting after the last chain step: a wrong path, not an early stop.
    wandered = modes("Rien trouvé.", [*FULL[:1], inst("search.dataservices", "c9")])
    assert outcome(wandered[FailureMode.EARLY_STOP]) == "pass"
    assert outcome(modes("", FULL)[FailureMode.EARLY_STOP]) == "fail"
    decline = make_task(expected_behaviour="decline")
    assert outcome(modes("Je ne peux pas.", [], task=decline)[FailureMode.EARLY_STOP]) == (
        "unscored"
    )


def test_redundant_loop_needs_three_identical_actions() -> None:
    same = [inst("search.datasets", f"c{i}", query="Sport ") for i in range(3)]
    assert outcome(modes("x", [*same, *FULL])[FailureMode.REDUNDANT_LOOP]) == "fail"
    varied = [inst("search.datasets", f"c{i}", query=f"sport {i}") for i in range(6)]
    assert outcome(modes("x", [*varied, *FULL])[FailureMode.REDUNDANT_LOOP]) == "unscored"
    two = [inst("search.datasets", f"c{i}", query="sport") for i in range(2)]
    assert outcome(modes("x", [*two, *FULL[1:]])[FailureMode.REDUNDANT_LOOP]) == "pass"


def test_parameter_error_from_tool_errors() -> None:
    blamed = ToolEvidence("c2", "get_dataset_info", {}, "Error: dataset 'x' not found", True)
    assert outcome(modes("x", FULL, [blamed])[FailureMode.PARAMETER_ERROR]) == "fail"
    server = ToolEvidence("c2", "get_dataset_info", {}, "Error: 503 Service Unavailable", True)
    assert outcome(modes("x", FULL, [server])[FailureMode.PARAMETER_ERROR]) == "unscored"


def test_hallucination_from_ungrounded_ids_or_numbers() -> None:
    invented = modes("Voir le jeu 0123456789abcdef01234567.", FULL)
    assert outcome(invented[FailureMode.HALLUCINATION]) == "fail"
    assert invented[FailureMode.HALLUCINATION].details["ungrounded_ids"] == [
        "0123456789abcdef01234567"
    ]
    # A number in no tool result nor the prompt is present by rule (issue 10): no tool showed it.
    number = modes("Le Gers compte 1 500 équipements.", FULL)
    assert outcome(number[FailureMode.HALLUCINATION]) == "fail"
    assert number[FailureMode.HALLUCINATION].details["ungrounded_numbers"] == ["1 500"]
    # The invented id tried in code: an argument is not evidence, only the 404 result is.
    code = "requests.get('https://www.data.gouv.fr/api/1/datasets/0123456789abcdef01234567/')"
    tried = ToolEvidence("c4", "execute_python", {"code": code}, "<Response [404]>", False)
    invented_tried = modes("Voir le jeu 0123456789abcdef01234567.", FULL, [tried])
    assert outcome(invented_tried[FailureMode.HALLUCINATION]) == "fail"
    # Years and small numbers are not checked; numbers of the prompt are grounded.
    plain = modes("En 2024, 3 sources ; dans le Gers.", FULL)
    assert outcome(plain[FailureMode.HALLUCINATION]) == "pass"


def test_classification_is_left_to_an_llm_judge() -> None:
    call = ToolCall(id="c1", name="execute_python", arguments={"code": "print(1)"})
    result = asyncio.run(JUDGE.classify_call(call, ["get.data"]))
    assert result.actions == ()
    assert result.verdict.error == NEEDS_LLM


KEY_ERROR = (
    "Traceback (most recent call last):\n"
    '  File "<agent>", line 7, in <module>\n'
    '    total = payload["data"][0]["missing_field"]\n'
    "KeyError: 'missing_field'\n"
)
HTTP_404 = (
    "Traceback (most recent call last):\n"
    '  File "<agent>", line 4, in <module>\n'
    "    response.raise_for_status()\n"
    "requests.exceptions.HTTPError: 404 Client Error: Not Found for url: "
    "https://www.data.gouv.fr/api/1/datasets/nope/\n"
)


def test_the_agents_own_exceptions_are_never_parameter_errors() -> None:
    # The counter-example: a KeyError in the agent's parsing after a successful request
    # fired PARAMETER_ERROR (the word "missing" and "KeyError" matched the rule).
    local = ToolEvidence("c3", "run_python", {"code": "..."}, KEY_ERROR, True)
    verdict = modes("x", FULL, [local])[FailureMode.PARAMETER_ERROR]
    assert outcome(verdict) == "pass"
    assert "agent's own code" in verdict.reason
    # A traceback of an HTTP 4xx answer does blame the request.
    refused = ToolEvidence("c3", "run_python", {"code": "..."}, HTTP_404, True)
    assert outcome(modes("x", FULL, [refused])[FailureMode.PARAMETER_ERROR]) == "fail"
    # A local exception next to a refused MCP call: the refused call decides.
    blamed = ToolEvidence("c2", "get_dataset_info", {}, "Error: dataset 'x' not found", True)
    assert outcome(modes("x", FULL, [local, blamed])[FailureMode.PARAMETER_ERROR]) == "fail"


def test_english_link_criteria_are_decided_by_the_citation_check() -> None:
    for text in (
        "The answer gives the link to the page of the dataset on data.gouv.fr.",
        "The answer provides a link to its page.",
    ):
        assert is_link_criterion(Criterion(criteria=text))
    assert not is_link_criterion(Criterion(criteria="The answer links the two datasets."))
    task = make_task(
        evaluation_criteria={
            "minimal": [{"criteria": "The answer gives the link to the page of the dataset."}]
        }
    )
    criterion = task.criteria("minimal")[0]
    cited = JUDGE.criterion_sync(
        CriterionInput(
            task.prompt, f"See https://www.data.gouv.fr/datasets/{DS}/", criterion, (), task=task
        )
    )
    assert outcome(cited) == "pass"
    uncited = JUDGE.criterion_sync(
        CriterionInput(task.prompt, "See data.gouv.fr.", criterion, (), task=task)
    )
    assert outcome(uncited) == "fail"


@pytest.mark.parametrize(
    ("answer", "near"),
    [
        ("Its files were downloaded 11,652 times in April 2026.", True),  # "times" is a filler
        ("Downloads in April 2026: 11,652.", True),
        ("11,652 downloads were counted.", True),
        ("11,652 visits and 3 downloads.", False),  # the word after the number is its unit
    ],
)
def test_unit_near_in_english(answer: str, near: bool) -> None:
    reading = find_value(answer, 11652)
    assert reading is not None
    assert unit_near(answer, reading, "downloads") is near


def test_tool_omission_is_not_applicable_in_a_tier_that_requires_no_action() -> None:
    # A chain whose action carries no required_actions entry: nothing can be omitted.
    free = make_task(action_chain={"minimal": {"chain": "search.datasets"}})
    assert free.chain("minimal").required_actions == []
    verdict = modes("Rien.", [], task=free)[FailureMode.TOOL_OMISSION]
    assert verdict.status is VerdictStatus.NOT_APPLICABLE and verdict.passed is None
    assert verdict.reason == "not applicable: the minimal tier requires no actions"
    assert verdict.details == {"mode": "TOOL_OMISSION", "tier": "minimal"}
