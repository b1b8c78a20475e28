"""Cell keys: the one place that turns a cell's identity into its partition key and back.

A key is built from names written in the YAML only, e.g.::

    mistral~mistral-small-2603__mcp@0.2.26+web_search__data_gouv_context
    albert~openai~gpt-oss-120b__code+skills@0.0.1__data_gouv_context
    offline~baseline-oneshot__none__data_gouv_context

    offline~baseline-thorough__mcp@0.2.14~build__data_gouv_context

that is ``{provider}~{model}__{capabilities}__{system prompt}``, where ``/`` in a model name
becomes ``~``, a model with request settings (``models.yml``: ``temperature``, ``timeout_s``...)
carries their 8-digit digest after ``@`` (``local~qwen2.5-1.5b@3f9a02c1``), capabilities are
sorted and joined with ``+``, ``mcp`` and ``skills`` carry their version after ``@``, an MCP
server that is not the twin's emulation or the only entry of its version carries its source
name after ``~`` (``build`` for a real build), and ``none`` stands for no capability. The
configuration models forbid ``__``, ``~``, ``+`` and ``@`` inside names and versions, so the
encoding is injective.

Keys are decoded by looking them up among the expanded cells, never by splitting the string,
so the format can change without breaking any reader.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from datagouv_eval_pipeline.core.benchmark.cells import Cell

FORBIDDEN_SUBSTRINGS: tuple[str, ...] = (
    "|",
    ",",
    "[",
    "]",
    "...",
    "/",
    *(chr(code) for code in range(32)),
    chr(127),
)
"""Never in a key: Dagster's partition-key rules, plus ``/`` (keys become file names)."""

PART_SEPARATOR = "__"
MODEL_SEPARATOR = "~"
CAPABILITY_JOINER = "+"
VERSION_MARK = "@"
NO_CAPABILITY = "none"


class UnknownCellKeyError(KeyError):
    """A key that matches no cell of the current configuration."""

    def __init__(self, key: str, known: Sequence[str]) -> None:
        self.key = key
        close = difflib.get_close_matches(key, known, n=3, cutoff=0.5)
        hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
        super().__init__(f"no cell has the key {key!r} in the current configuration{hint}")

    def __str__(self) -> str:
        return str(self.args[0])


def model_key(provider: str, model: str, settings_tag: str | None = None) -> str:
    """Return the model part of a key, e.g. ``albert~openai~gpt-oss-120b``.

    Args:
        provider: The provider name.
        model: The model name (``/`` becomes ``~``).
        settings_tag: The digest of the model's request settings when any is set
            (``ModelCallSettings.tag``), appended after ``@``: runs with other settings are
            another cell.
    """
    key = provider + MODEL_SEPARATOR + model.replace("/", MODEL_SEPARATOR)
    return key if settings_tag is None else key + VERSION_MARK + settings_tag


def mcp_entry_key(version: str, label: str | None) -> str:
    """The name of an MCP entry: its version, with its source name after ``~`` when it has one."""
    return version if label is None else version + MODEL_SEPARATOR + label


def capability_set(
    capabilities: Iterable[str], versions: Mapping[str, str | None] | None = None
) -> str:
    """Return a capability set as keys, the warehouse and the UI spell it, e.g. ``mcp+web_search``.

    Args:
        capabilities: Capability names, in any order (repeats count once).
        versions: A version per capability to write after ``@`` (``mcp@0.2.26``), as keys do;
            a name without one (or with None) is written bare.

    Returns:
        The names sorted and joined with ``+``; ``none`` for no capability.
    """
    given = versions or {}
    parts = [
        name if given.get(name) is None else f"{name}{VERSION_MARK}{given[name]}"
        for name in sorted(set(capabilities))
    ]
    return CAPABILITY_JOINER.join(parts) or NO_CAPABILITY


def setup_key(
    capabilities: Iterable[str],
    mcp_version: str | None,
    skills_version: str | None,
    system_prompt: str,
    mcp_label: str | None = None,
) -> str:
    """Return the part of a key after the model, e.g. ``mcp@0.2.26+web_search__data_gouv_context``.

    Args:
        capabilities: Capability names, in any order.
        mcp_version: The MCP version; required when ``mcp`` is a capability, else None.
        skills_version: The skills version; required when ``skills`` is a capability, else None.
        system_prompt: The system prompt name.
        mcp_label: The MCP entry's source name (e.g. ``build``); None for an unnamed entry.

    Raises:
        ValueError: If a version is given without its capability or the reverse.
    """
    if mcp_label is not None and mcp_version is None:
        raise ValueError("an MCP source name needs an MCP version")
    versions = {
        "mcp": mcp_entry_key(mcp_version, mcp_label) if mcp_version is not None else None,
        "skills": skills_version,
    }
    names = sorted(set(capabilities))
    for capability, version in versions.items():
        if (capability in names) != (version is not None):
            raise ValueError(
                f"the {capability} version must be given exactly when {capability!r}"
                " is a capability"
            )
    return capability_set(names, versions) + PART_SEPARATOR + system_prompt


def cell_key(
    provider: str,
    model: str,
    capabilities: Iterable[str],
    mcp_version: str | None,
    skills_version: str | None,
    system_prompt: str,
    mcp_label: str | None = None,
    settings_tag: str | None = None,
) -> str:
    """Encode a cell's identity as its partition key.

    Raises:
        ValueError: If the key would not be a valid partition key (names the configuration
            models reject), or a version does not match the capabilities.
    """
    key = (
        model_key(provider, model, settings_tag)
        + PART_SEPARATOR
        + setup_key(capabilities, mcp_version, skills_version, system_prompt, mcp_label)
    )
    if not is_valid_partition_key(key):
        raise ValueError(f"{key!r} is not a valid partition key")
    return key


def encode_cell_key(cell: Cell) -> str:
    """Return the key of a cell, recomputed from its fields."""
    return cell_key(
        cell.model.provider,
        cell.model.name,
        cell.capabilities,
        cell.mcp_version,
        cell.skills_version,
        cell.system_prompt,
        cell.mcp_label,
        cell.model.settings.tag(),
    )


def decode_cell_key(key: str, cells: Iterable[Cell]) -> Cell:
    """Find the cell a key stands for, by lookup among the expanded cells.

    Args:
        key: A partition key.
        cells: The cells of the current configuration (``expand_cells``).

    Raises:
        UnknownCellKeyError: If no cell has that key (with close matches).
    """
    by_key = {cell.key: cell for cell in cells}
    try:
        return by_key[key]
    except KeyError:
        raise UnknownCellKeyError(key, sorted(by_key)) from None


def run_id(cell_key: str, task_id: str, repeat: int) -> str:
    """The id of one run of a cell: ``{cell key}|{task id}|{repeat}``.

    The warehouse's ``run_id`` column and the report's links to a run are this text. ``|`` is
    forbidden in cell keys (:data:`FORBIDDEN_SUBSTRINGS`) and never occurs in task ids, so the
    id is unambiguous.
    """
    return f"{cell_key}|{task_id}|{repeat}"


def is_valid_partition_key(key: str) -> bool:
    """Tell whether a key is non-empty and free of forbidden substrings."""
    return bool(key) and not any(bad in key for bad in FORBIDDEN_SUBSTRINGS)
