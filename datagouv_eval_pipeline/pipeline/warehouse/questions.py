"""The benchmark's questions: which cells of an evaluation type answer it, paired by factor.

Each evaluation type declares the factor(s) its question varies (``compares`` in
``evaluation_types.yml``, :class:`~datagouv_eval_pipeline.core.benchmark.config.Factor`). For each
type × factor, two of the type's cells form a pair when they differ in that factor and in
nothing else, by the factor's own definition: a ``skills`` pair is ``mcp@0.2.26`` against
``mcp@0.2.26+skills@0.0.1`` although their capability sets differ too; a ``capability`` pair is
``mcp@0.2.26`` against ``code`` although one has an MCP version and the other none.

Pure apart from :func:`read_question_cells`; the statistics stage
(:mod:`~datagouv_eval_pipeline.pipeline.warehouse.error_bars`) compares each pair's runs and writes
``eval.questions`` and ``eval.question_comparisons``.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import duckdb
from packaging.version import InvalidVersion, Version

from datagouv_eval_pipeline.core.benchmark import Capability, EvaluationType, Factor
from datagouv_eval_pipeline.pipeline.warehouse.schema import SCHEMA

NONE = "none"
"""The factor value of a cell without the thing compared (no skills document, no tool)."""


@dataclass(frozen=True, slots=True)
class QuestionCell:
    """A cell's coordinates as the factors read them.

    Attributes:
        key: The cell key.
        evaluation_types: The evaluation types that include the cell.
        model: ``provider/model``.
        tools: The capabilities without ``skills``, sorted: the way of reaching the catalogue.
        mcp: The MCP server, ``0.2.26`` (the twin's) or ``0.2.14 (build)``; None without mcp.
        skills: The skills version; None without the document.
        system_prompt: The system prompt name.
    """

    key: str
    evaluation_types: tuple[str, ...]
    model: str
    tools: tuple[str, ...]
    mcp: str | None
    skills: str | None
    system_prompt: str

    def value(self, factor: Factor) -> str:
        """The cell's value of a factor, as shown (``none`` for no tool or no document)."""
        values: dict[Factor, str | None] = {
            Factor.MODEL: self.model,
            Factor.MCP_VERSION: self.mcp,
            Factor.CAPABILITY: "+".join(self.tools) or None,
            Factor.SKILLS: self.skills,
            Factor.SYSTEM_PROMPT: self.system_prompt,
        }
        return values[factor] or NONE

    def setting(self, factor: Factor) -> str:
        """What the cell holds fixed when ``factor`` varies, e.g. ``model offline/x, skills none``.

        For ``capability`` the MCP version is left out (it comes with the way of reaching the
        catalogue); for ``skills`` the way of reaching it is named without ``skills``.
        """
        shown: list[tuple[Factor, str]] = [
            (Factor.MODEL, "model"),
            (Factor.CAPABILITY, "capability"),
            (Factor.MCP_VERSION, "mcp"),
            (Factor.SKILLS, "skills"),
            (Factor.SYSTEM_PROMPT, "prompt"),
        ]
        parts = []
        for other, label in shown:
            if other == factor or (factor == Factor.CAPABILITY and other == Factor.MCP_VERSION):
                continue
            if other == Factor.MCP_VERSION and self.mcp is None:
                continue
            parts.append(f"{label} {self.value(other)}")
        return ", ".join(parts)


def _same_except(a: QuestionCell, b: QuestionCell, *fields: str) -> bool:
    kept = ("model", "tools", "mcp", "skills", "system_prompt")
    return all(getattr(a, f) == getattr(b, f) for f in kept if f not in fields)


def differ_in_only(a: QuestionCell, b: QuestionCell, factor: Factor) -> bool:
    """Whether two cells differ in ``factor`` and in nothing else (by the factor's definition).

    ``capability``: the tools differ (``skills`` aside), the skills version is the same, and the
    MCP version is the same unless one side has no ``mcp``. ``mcp_version``: both have ``mcp``,
    at two versions (or sources). The other factors: that coordinate alone differs.
    """
    if factor == Factor.CAPABILITY:
        mcp_follows = a.mcp == b.mcp or (a.mcp is None) != (b.mcp is None)
        return a.tools != b.tools and mcp_follows and _same_except(a, b, "tools", "mcp")
    if factor == Factor.MCP_VERSION:
        both = a.mcp is not None and b.mcp is not None
        return both and a.mcp != b.mcp and _same_except(a, b, "mcp")
    field = {
        Factor.MODEL: "model",
        Factor.SKILLS: "skills",
        Factor.SYSTEM_PROMPT: "system_prompt",
    }[factor]
    return getattr(a, field) != getattr(b, field) and _same_except(a, b, field)


def _version_key(text: str | None) -> tuple[int, Version | None, str]:
    """Absent first, then by PEP 440 version (the text for what does not parse)."""
    if text is None:
        return (0, None, "")
    head = text.split(" ", 1)[0]
    try:
        return (1, Version(head), text)
    except InvalidVersion:
        return (2, None, text)


def _capability_position(etype: EvaluationType) -> Callable[[QuestionCell], Any]:
    """Where a cell's tools come among the type's capability sets (``skills`` aside)."""
    listed: list[tuple[str, ...]] = []
    for capability_set in etype.capability_sets:
        tools = tuple(sorted(str(c) for c in capability_set if c != Capability.SKILLS))
        if tools not in listed:
            listed.append(tools)

    def position(cell: QuestionCell) -> tuple[int, tuple[str, ...]]:
        index = listed.index(cell.tools) if cell.tools in listed else len(listed)
        return (index, cell.tools)

    return position


def _order(etype: EvaluationType, factor: Factor) -> Callable[[QuestionCell], Any]:
    """The sort key that makes cell a the reference of a pair (difference = b - a).

    Versions ascending, with and without skills: without first; capabilities in the order the
    type lists its capability sets (``[mcp]`` before ``[code]``: the difference is code - MCP);
    models and prompts by name.
    """
    if factor == Factor.SKILLS:
        return lambda cell: _version_key(cell.skills)
    if factor == Factor.MCP_VERSION:
        return lambda cell: _version_key(cell.mcp)
    if factor == Factor.CAPABILITY:
        return _capability_position(etype)
    return lambda cell: cell.value(factor)


def _listing(etype: EvaluationType) -> Callable[[QuestionCell], Any]:
    """The order pairs are listed in: the type's capability sets, then versions, model, prompt."""
    capability = _capability_position(etype)
    return lambda cell: (
        capability(cell),
        _version_key(cell.mcp),
        _version_key(cell.skills),
        cell.model,
        cell.system_prompt,
    )


@dataclass(frozen=True, slots=True)
class Question:
    """One evaluation type's question about one factor, and the pairs of cells that answer it.

    Attributes:
        evaluation_type: The type's name.
        description: The question, in a sentence (the type's description).
        active: Whether the type is active in the benchmark configuration.
        factor: The factor compared.
        cells: The type's cells in the warehouse.
        pairs: (reference, compared) pairs differing in the factor only, in order.
        reason: Why the question has no pair to answer it; None when it has one.
    """

    evaluation_type: str
    description: str
    active: bool
    factor: Factor
    cells: tuple[QuestionCell, ...]
    pairs: tuple[tuple[QuestionCell, QuestionCell], ...]
    reason: str | None


def questions_of(types: Sequence[EvaluationType], cells: Sequence[QuestionCell]) -> list[Question]:
    """Every type × factor question, with the pairs of the type's cells that answer it (pure).

    Args:
        types: The evaluation types of the benchmark configuration.
        cells: The cells in the warehouse (:func:`read_question_cells`).
    """
    questions = []
    for etype in types:
        members = tuple(sorted((c for c in cells if etype.name in c.evaluation_types), key=_key))
        for factor in etype.compares:
            order = _order(etype, factor)
            pairs = tuple(
                (a, b) if order(a) <= order(b) else (b, a)
                for a, b in itertools.combinations(members, 2)
                if differ_in_only(a, b, factor)
            )
            listing = _listing(etype)
            pairs = tuple(sorted(pairs, key=lambda p: (listing(p[0]), listing(p[1]))))
            reason = None
            if not members:
                reason = "no cell of this evaluation type is in the warehouse (not run)"
            elif not pairs:
                reason = f"no two cells of this evaluation type differ in {factor} only"
            questions.append(
                Question(
                    etype.name,
                    " ".join(etype.description.split()),
                    etype.active,
                    factor,
                    members,
                    pairs,
                    reason,
                )
            )
    return questions


def _key(cell: QuestionCell) -> str:
    return cell.key


def question_rows(questions: Sequence[Question]) -> list[dict[str, Any]]:
    """``eval.questions`` rows: one per evaluation type × factor (pure)."""
    return [
        {
            "evaluation_type": q.evaluation_type,
            "factor": str(q.factor),
            "description": q.description,
            "active": q.active,
            "cells": len(q.cells),
            "pairs": len(q.pairs),
            "reason": q.reason,
        }
        for q in questions
    ]


_CELLS_SQL = f"""
SELECT cell_key, evaluation_types, model_provider, model_name, capabilities, mcp_version,
       mcp_source, skills_version, system_prompt
FROM {SCHEMA}.cells
ORDER BY cell_key
"""


def read_question_cells(conn: duckdb.DuckDBPyConnection) -> list[QuestionCell]:
    """Every cell of ``eval.cells``, with the coordinates the factors read."""
    out = []
    for key, types, provider, model, capabilities, mcp, source, skills, prompt in conn.execute(
        _CELLS_SQL
    ).fetchall():
        server = None
        if mcp is not None:
            # A build or a deployed server of a version is another server than the twin's.
            server = mcp if source in (None, "twin") else f"{mcp} ({source})"
        out.append(
            QuestionCell(
                key,
                tuple(types),
                f"{provider}/{model}",
                tuple(sorted(c for c in capabilities if c != Capability.SKILLS)),
                server,
                skills,
                prompt,
            )
        )
    return out
