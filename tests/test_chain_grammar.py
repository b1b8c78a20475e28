"""Property tests for the action-chain grammar (``core/tasks/chain.py``)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from datagouv_eval_pipeline.core.tasks.chain import (
    Action,
    ChainNode,
    ChainSyntaxError,
    Parallel,
    Sequence,
    action_names,
    iter_actions,
    parse_chain,
    render_chain,
)

_SEGMENT = st.builds(
    str.__add__, st.sampled_from("abcdefghijklmnopqrstuvwxyz"), st.text("az09_", max_size=4)
)
NAMES = st.one_of(
    st.sampled_from(["search.datasets", "get.dataset.info", "get.data", "get.resource.info"]),
    st.lists(_SEGMENT, min_size=2, max_size=3).map(".".join),
)


def _group(children: st.SearchStrategy[ChainNode]) -> st.SearchStrategy[ChainNode]:
    many = st.lists(children, min_size=2, max_size=4).map(tuple)
    return st.one_of(many.map(Sequence), many.map(Parallel))


TREES: st.SearchStrategy[ChainNode] = st.recursive(NAMES.map(Action), _group, max_leaves=10)


def shape(node: ChainNode) -> object:
    """The tree without character positions."""
    if isinstance(node, Action):
        return node.name
    if isinstance(node, Sequence):
        return (">", tuple(shape(child) for child in node.children))
    return ("+", tuple(shape(branch) for branch in node.branches))


def render_minimal(node: ChainNode) -> str:
    """Render with parentheses only where precedence needs them (``+`` binds looser than ``>``)."""
    if isinstance(node, Action):
        return node.name
    if isinstance(node, Sequence):
        # a nested sequence or a parallel group inside a sequence needs parentheses
        return " > ".join(
            render_minimal(child) if isinstance(child, Action) else f"({render_minimal(child)})"
            for child in node.children
        )
    # a sequence inside a parallel group does not; a nested parallel group does
    return " + ".join(
        f"({render_minimal(branch)})" if isinstance(branch, Parallel) else render_minimal(branch)
        for branch in node.branches
    )


@given(TREES)
def test_render_then_parse_round_trips(tree: ChainNode) -> None:
    text = render_chain(tree)
    parsed = parse_chain(text)
    assert shape(parsed) == shape(tree)
    assert action_names(parsed) == action_names(tree)


@given(TREES)
def test_minimal_parentheses_keep_the_structure(tree: ChainNode) -> None:
    assert shape(parse_chain(render_minimal(tree))) == shape(tree)


@given(TREES)
def test_action_positions_point_into_the_text(tree: ChainNode) -> None:
    text = render_chain(tree)
    for action in iter_actions(parse_chain(text)):
        assert text[action.position : action.position + len(action.name)] == action.name


@given(TREES, st.data())
def test_whitespace_does_not_matter(tree: ChainNode, data: st.DataObject) -> None:
    text = render_chain(tree)
    padded = "".join(
        data.draw(st.sampled_from(["", " ", "\n", "\t  "])) + char if char in "()>+" else char
        for char in text
    )
    assert shape(parse_chain(padded)) == shape(tree)


@settings(max_examples=300)
@given(st.text(alphabet="ab._ ()>+x1\t-", max_size=30))
def test_garbage_fails_with_a_position_inside_the_text(text: str) -> None:
    try:
        parse_chain(text)
    except ChainSyntaxError as error:
        assert 0 <= error.position <= len(text)
        assert error.text == text
        assert error.reason in str(error)
        assert " " * error.position + "^" in str(error)


@given(TREES, st.data())
def test_a_deleted_character_parses_or_points_inside_the_text(
    tree: ChainNode, data: st.DataObject
) -> None:
    text = render_chain(tree)
    cut = data.draw(st.integers(0, len(text) - 1))
    broken = text[:cut] + text[cut + 1 :]
    try:
        parse_chain(broken)
    except ChainSyntaxError as error:
        assert 0 <= error.position <= len(broken)


@pytest.mark.parametrize(
    ("text", "position"),
    [
        ("", 0),
        ("search.datasets >", 17),
        ("(search.datasets", 16),
        ("search.datasets get.data", 16),
        ("Search.datasets", 0),
        ("search", 0),
    ],
)
def test_known_errors_point_at_the_offending_token(text: str, position: int) -> None:
    with pytest.raises(ChainSyntaxError) as caught:
        parse_chain(text)
    assert caught.value.position == position


def test_plus_binds_looser_than_greater() -> None:
    assert shape(parse_chain("a.b > c.d + e.f")) == ("+", ((">", ("a.b", "c.d")), "e.f"))
