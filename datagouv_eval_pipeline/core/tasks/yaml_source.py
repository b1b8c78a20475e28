"""A YAML file read together with its node tree, so that every field can be traced to a line.

PyYAML's ``safe_load`` forgets where values came from and silently keeps the last of two
duplicate keys; composing the node tree first fixes both.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from datagouv_eval_pipeline.base.yaml_loading import SafeLoader
from datagouv_eval_pipeline.core.tasks.errors import Loc, SpecError, field_path


@dataclass(frozen=True)
class YamlDocument:
    """The content of one YAML file and the node tree it was built from.

    Attributes:
        path: The file.
        data: The plain Python value (``None`` for an empty file).
        root: The root node, or None for an empty file.
        duplicate_keys: One error per key that appears twice in the same mapping.
    """

    path: Path
    data: Any
    root: yaml.Node | None
    duplicate_keys: list[SpecError] = field(default_factory=list)

    def line_of(self, loc: Loc) -> int | None:
        """Return the 1-based line of a location, or of its deepest ancestor present in the file.

        A location that ends at a mapping key gives the key's line (where the field is named);
        one that ends at a list index gives the item's line.
        """
        node = self.root
        if node is None:
            return None
        line = node.start_mark.line + 1
        for part in loc:
            child: yaml.Node | None = None
            if isinstance(node, yaml.MappingNode):
                for key, value in node.value:
                    if isinstance(key, yaml.ScalarNode) and key.value == str(part):
                        line = key.start_mark.line + 1
                        child = value
            elif (
                isinstance(node, yaml.SequenceNode)
                and isinstance(part, int)
                and 0 <= part < len(node.value)
            ):
                child = node.value[part]
                line = child.start_mark.line + 1
            if child is None:
                break
            node = child
        return line


MAX_EXPANDED_NODES = 100_000
"""Most values a YAML file may stand for once its aliases are expanded.

A few hundred bytes of nested aliases (``a: &a [x, x]``, ``b: &b [*a, *a]``, …) stand for
billions of values; anything that walks the result would never finish.
"""


def expanded_size(root: yaml.Node, limit: int = MAX_EXPANDED_NODES) -> int:
    """How many nodes the tree stands for with every alias expanded (stops past ``limit``).

    Shared nodes are sized once (memoised), so this is linear in the file, not in its expansion.
    """
    sizes: dict[int, int] = {}

    def size(node: yaml.Node) -> int:
        known = sizes.get(id(node))
        if known is not None:
            return known
        sizes[id(node)] = 1  # a recursive alias counts once instead of looping
        total = 1
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                total += size(key) + size(value)
                if total > limit:
                    break
        elif isinstance(node, yaml.SequenceNode):
            for item in node.value:
                total += size(item)
                if total > limit:
                    break
        sizes[id(node)] = total
        return total

    return size(root)


MAX_FILE_BYTES = 1_048_576
"""Largest YAML file read (1 MiB): a task spec or a benchmark file is a few kilobytes, and a
50 MB one took 23 s to refuse after it had been parsed whole."""


def read_yaml(path: Path) -> tuple[YamlDocument | None, list[SpecError]]:
    """Read and parse one YAML file without raising.

    Args:
        path: The file to read.

    Returns:
        The document (None when it cannot be read or parsed) and the problems found, which
        include duplicate keys even when the document itself was returned.
    """
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            return None, [
                SpecError(
                    path,
                    None,
                    "",
                    f"the file is {size:,} bytes; at most {MAX_FILE_BYTES:,} are read (a task "
                    "spec or a benchmark file is a few kilobytes)",
                )
            ]
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        return None, [SpecError(path, None, "", f"cannot read the file: {error}")]
    loader = SafeLoader(text)
    try:
        root = loader.get_single_node()
        if root is not None and expanded_size(root) > MAX_EXPANDED_NODES:
            return None, [
                SpecError(
                    path,
                    None,
                    "",
                    f"invalid YAML: its aliases expand it to more than {MAX_EXPANDED_NODES} "
                    "values; write the values out instead of nesting aliases",
                )
            ]
        data = loader.construct_document(root) if root is not None else None
    except yaml.MarkedYAMLError as error:
        if "maximum nesting depth" in str(error.problem):  # libyaml's own limit
            return None, [_too_deep(path)]
        mark = error.problem_mark or error.context_mark
        line = mark.line + 1 if mark is not None else None
        reason = " ".join(part for part in (error.context, error.problem) if part)
        return None, [SpecError(path, line, "", f"invalid YAML: {reason}")]
    except yaml.YAMLError as error:
        return None, [SpecError(path, None, "", f"invalid YAML: {error}")]
    except RecursionError:
        return None, [_too_deep(path)]
    finally:
        loader.dispose()
    try:
        duplicates = list(_duplicate_keys(path, root, ())) if root is not None else []
    except RecursionError:
        return None, [_too_deep(path)]
    return YamlDocument(path, data, root, duplicates), duplicates


def _too_deep(path: Path) -> SpecError:
    # PyYAML composes and constructs recursively: a few thousand nested brackets exhaust the
    # interpreter's stack before any field could be checked.
    return SpecError(
        path,
        None,
        "",
        "invalid YAML: its values are nested too deeply to read (hundreds of levels of lists or "
        "mappings inside each other); a task spec needs a few",
    )


def _duplicate_keys(path: Path, node: yaml.Node, loc: Loc) -> list[SpecError]:
    found: list[SpecError] = []
    if isinstance(node, yaml.MappingNode):
        first_lines: dict[str, int] = {}
        for key, value in node.value:
            if not isinstance(key, yaml.ScalarNode):
                continue
            line = key.start_mark.line + 1
            if key.value in first_lines:
                found.append(
                    SpecError(
                        path,
                        line,
                        field_path((*loc, key.value)),
                        f"duplicate key {key.value!r}: already set at line "
                        f"{first_lines[key.value]} (YAML would silently keep only the last one)",
                    )
                )
            else:
                first_lines[key.value] = line
            found.extend(_duplicate_keys(path, value, (*loc, key.value)))
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            found.extend(_duplicate_keys(path, item, (*loc, index)))
    return found
