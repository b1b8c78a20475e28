"""The action registry (``actions.yml``), the task specs and the shared vocabulary agree."""

from __future__ import annotations

import pydantic
import pytest

from datagouv_eval_pipeline.base import vocabulary
from datagouv_eval_pipeline.core.semantic.registry import (
    SEMANTIC_ARGUMENTS,
    default_action_names,
    load_registry,
)
from datagouv_eval_pipeline.core.tasks.spec import RowFilter


def test_the_registry_defines_exactly_the_vocabulary_actions() -> None:
    registry = load_registry()
    assert registry.action_names == vocabulary.ACTION_NAMES
    assert default_action_names() == vocabulary.ACTION_NAMES


def test_the_registry_arguments_are_vocabulary_arguments() -> None:
    registry = load_registry()
    # actions.yml spells out how each semantic argument is written by each family of calls.
    assert set(registry.data.arguments) == set(vocabulary.ARGUMENT_NAMES)
    assert SEMANTIC_ARGUMENTS == vocabulary.ARGUMENT_NAMES


def test_the_tabular_operators_nest_as_api_tabular_and_the_mcp_server_have_them() -> None:
    tabular = vocabulary.TABULAR_OPERATORS
    assert len(set(tabular)) == len(tabular) == 12
    # Every single-value operator is an api-tabular one, and the MCP server offers six of them.
    assert set(vocabulary.MCP_FILTER_OPERATORS) < set(vocabulary.VALUE_OPERATORS) < set(tabular)
    values: set[str] = set(vocabulary.VALUE_OPERATORS)
    assert values - set(vocabulary.MCP_FILTER_OPERATORS) == {"differs"}
    assert vocabulary.VALUE_OPERATORS[0] == "exact"  # a task's row filter defaults to it


def test_a_row_filter_takes_exactly_the_single_value_operators() -> None:
    for operator in vocabulary.VALUE_OPERATORS:
        assert RowFilter(column="c", operator=operator, value=1).operator == operator
    with pytest.raises(pydantic.ValidationError, match="strictly_greater"):
        RowFilter.model_validate({"column": "c", "operator": "isnull", "value": 1})
