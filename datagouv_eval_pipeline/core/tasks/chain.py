"""The action-chain grammar: ``>`` is a sequence, ``+`` a parallel group, parentheses group.

Grammar (``+`` binds looser than ``>``, so ``a > b + c`` is ``(a > b) + c``)::

    chain    := parallel
    parallel := sequence ("+" sequence)*
    sequence := term (">" term)*
    term     := ACTION | "(" parallel ")"
    ACTION   := [a-z][a-z0-9_]* ("." [a-z][a-z0-9_]*)+
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

_ACTION = re.compile(r"[a-z][a-z0-9_]*(?:\.[a-z][a-z0-9_]*)+")


class ChainSyntaxError(ValueError):
    """A chain string that does not follow the grammar.

    Attributes:
        text: The chain that failed to parse.
        position: Zero-based character offset of the offending token.
        reason: What was expected at that position.
    """

    def __init__(self, text: str, position: int, reason: str) -> None:
        self.text = text
        self.position = position
        self.reason = reason
        pointer = " " * position + "^"
        super().__init__(f"{reason} at position {position}\n  {text}\n  {pointer}")


@dataclass(frozen=True)
class Action:
    """One semantic action in a chain, e.g. ``search.datasets``."""

    name: str
    position: int = 0


@dataclass(frozen=True)
class Sequence:
    """Children that must happen in order."""

    children: tuple[ChainNode, ...]


@dataclass(frozen=True)
class Parallel:
    """Branches whose relative order does not matter."""

    branches: tuple[ChainNode, ...]


ChainNode = Action | Sequence | Parallel


@dataclass(frozen=True)
class _Token:
    kind: str  # "action", ">", "+", "(", ")", "end"
    text: str
    position: int


def _tokenize(text: str) -> list[_Token]:
    tokens: list[_Token] = []
    i = 0
    while i < len(text):
        char = text[i]
        if char.isspace():
            i += 1
            continue
        if char in "()>+":
            tokens.append(_Token(char, char, i))
            i += 1
            continue
        match = _ACTION.match(text, i)
        if match is None:
            raise ChainSyntaxError(
                text, i, f"unexpected character {char!r}: expected an action name like 'get.data'"
            )
        end = match.end()
        if end < len(text) and not (text[end].isspace() or text[end] in "()>+"):
            raise ChainSyntaxError(text, end, f"unexpected character {text[end]!r} in action name")
        tokens.append(_Token("action", match.group(0), i))
        i = end
    tokens.append(_Token("end", "", len(text)))
    return tokens


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = _tokenize(text)
        self.index = 0

    def peek(self) -> _Token:
        return self.tokens[self.index]

    def take(self) -> _Token:
        token = self.tokens[self.index]
        self.index += 1
        return token

    def parallel(self) -> ChainNode:
        branches = [self.sequence()]
        while self.peek().kind == "+":
            self.take()
            branches.append(self.sequence())
        return branches[0] if len(branches) == 1 else Parallel(tuple(branches))

    def sequence(self) -> ChainNode:
        children = [self.term()]
        while self.peek().kind == ">":
            self.take()
            children.append(self.term())
        return children[0] if len(children) == 1 else Sequence(tuple(children))

    def term(self) -> ChainNode:
        token = self.take()
        if token.kind == "action":
            return Action(token.text, token.position)
        if token.kind == "(":
            inner = self.parallel()
            closing = self.take()
            if closing.kind != ")":
                raise ChainSyntaxError(
                    self.text,
                    closing.position,
                    f"expected ')' to close the '(' at position {token.position}",
                )
            return inner
        found = "end of chain" if token.kind == "end" else repr(token.text)
        raise ChainSyntaxError(
            self.text, token.position, f"expected an action name or '(' but found {found}"
        )


def parse_chain(text: str) -> ChainNode:
    """Parse a chain string into a tree.

    Args:
        text: A chain such as ``(search.datasets > get.dataset.info) + search.dataservices``.

    Returns:
        The root node; a lone action parses to an ``Action``.

    Raises:
        ChainSyntaxError: With the offending position when the text does not follow the grammar.
    """
    parser = _Parser(text)
    if parser.peek().kind == "end":
        raise ChainSyntaxError(text, 0, "empty chain: expected at least one action")
    root = parser.parallel()
    trailing = parser.peek()
    if trailing.kind != "end":
        raise ChainSyntaxError(
            text, trailing.position, f"unexpected {trailing.text!r}: expected '>', '+' or the end"
        )
    return root


def iter_actions(node: ChainNode) -> Iterator[Action]:
    """Yield the chain's actions from left to right."""
    if isinstance(node, Action):
        yield node
    elif isinstance(node, Sequence):
        for child in node.children:
            yield from iter_actions(child)
    else:
        for branch in node.branches:
            yield from iter_actions(branch)


def action_names(node: ChainNode) -> list[str]:
    """Return the action names of a chain in order of appearance (repeats kept)."""
    return [action.name for action in iter_actions(node)]


def render_chain(node: ChainNode) -> str:
    """Render a tree back to chain text with explicit parentheses around every group."""
    if isinstance(node, Action):
        return node.name
    if isinstance(node, Sequence):
        return "(" + " > ".join(render_chain(child) for child in node.children) + ")"
    return "(" + " + ".join(render_chain(branch) for branch in node.branches) + ")"
