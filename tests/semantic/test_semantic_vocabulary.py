"""The action registry (``actions.yml``) and the shared vocabulary name the same things."""

from __future__ import annotations

from datagouv_eval_pipeline import vocabulary
from datagouv_eval_pipeline.semantic.registry import (
    SEMANTIC_ARGUMENTS,
    default_action_names,
    load_registry,
)


def test_the_registry_defines_exactly_the_vocabulary_actions() -> None:
    registry = load_registry()
    assert registry.action_names == vocabulary.ACTION_NAMES
    assert default_action_names() == vocabulary.ACTION_NAMES


def test_the_registry_arguments_are_vocabulary_arguments() -> None:
    registry = load_registry()
    # actions.yml spells out how each semantic argument is written by each family of calls.
    assert set(registry.data.arguments) == set(vocabulary.ARGUMENT_NAMES)
    assert SEMANTIC_ARGUMENTS == vocabulary.ARGUMENT_NAMES
