"""Load the benchmark configuration directory, all or nothing.

Every file is validated, then the files are checked against each other (names an evaluation
type selects exist, skills documents exist, every evaluation type can produce cells). Either the
whole configuration is returned or one ``BenchmarkConfigErrors`` lists every problem.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from datagouv_eval_pipeline.base.vocabulary import TWIN_MCP_RELEASES
from datagouv_eval_pipeline.core.benchmark.config import (
    Capability,
    EvaluationType,
    EvaluationTypesFile,
    McpSource,
    McpVersionsFile,
    ModelsFile,
    Selectable,
    SkillsVersionsFile,
    SystemPromptsFile,
    select,
)
from datagouv_eval_pipeline.core.tasks import (
    TASK_SPECS_DIR,
    Loc,
    SpecError,
    SpecErrors,
    YamlDocument,
    field_path,
    read_yaml,
    validation_errors,
)

BENCHMARK_CONFIG_DIR = TASK_SPECS_DIR / "benchmark"
"""The default benchmark configuration directory."""

MODELS_FILE = "models.yml"
MCP_VERSIONS_FILE = "mcp_versions.yml"
SKILLS_VERSIONS_FILE = "skills_versions.yml"
SYSTEM_PROMPTS_FILE = "system_prompts.yml"
EVALUATION_TYPES_FILE = "evaluation_types.yml"

CONFIG_FILES: dict[str, type[BaseModel]] = {
    MODELS_FILE: ModelsFile,
    MCP_VERSIONS_FILE: McpVersionsFile,
    SKILLS_VERSIONS_FILE: SkillsVersionsFile,
    SYSTEM_PROMPTS_FILE: SystemPromptsFile,
    EVALUATION_TYPES_FILE: EvaluationTypesFile,
}
"""Each configuration file and the model of its content."""


class BenchmarkConfigErrors(SpecErrors):
    """Problems in the benchmark configuration files (nothing is loaded when any exists)."""


@dataclass(frozen=True)
class BenchmarkConfig:
    """The whole, validated benchmark configuration.

    Attributes:
        directory: Where the files were read.
        models: ``models.yml``.
        mcp_versions: ``mcp_versions.yml``.
        skills_versions: ``skills_versions.yml``.
        system_prompts: ``system_prompts.yml``.
        evaluation_types: ``evaluation_types.yml``.
        skills_texts: The text of each skills document, by skills version.
    """

    directory: Path
    models: ModelsFile
    mcp_versions: McpVersionsFile
    skills_versions: SkillsVersionsFile
    system_prompts: SystemPromptsFile
    evaluation_types: EvaluationTypesFile
    skills_texts: Mapping[str, str]


M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True)
class _EntryFile:
    """A file of named entries that evaluation types select from."""

    file_name: str
    attribute: str
    """The file's top-level key, also the name of the evaluation type's selector."""
    key_field: str
    what: str
    capability: Capability | None
    """The capability that needs these entries (None: every capability set needs them)."""
    duplicate_hint: str = ""
    """Appended to a duplicate-entry error: how to tell two entries apart."""


_ENTRY_FILES = (
    _EntryFile(SYSTEM_PROMPTS_FILE, "system_prompts", "name", "system prompt", None),
    _EntryFile(
        MCP_VERSIONS_FILE,
        "mcp_versions",
        "version",
        "MCP version",
        Capability.MCP,
        "; entries of one version from different sources need distinct `name`s",
    ),
    _EntryFile(
        SKILLS_VERSIONS_FILE, "skills_versions", "version", "skills version", Capability.SKILLS
    ),
)


@dataclass(frozen=True)
class _Loaded:
    document: YamlDocument
    content: BaseModel | None


def load_benchmark_config(directory: Path = BENCHMARK_CONFIG_DIR) -> BenchmarkConfig:
    """Load and cross-check the five benchmark configuration files.

    Every check runs on every file that validated, so one call reports every problem it can.

    Args:
        directory: The directory holding ``models.yml``, ``mcp_versions.yml``,
            ``skills_versions.yml``, ``system_prompts.yml`` and ``evaluation_types.yml``.

    Returns:
        The configuration.

    Raises:
        BenchmarkConfigErrors: If any file has any problem.
    """
    errors: list[SpecError] = []
    loaded: dict[str, _Loaded] = {}
    for name, model in CONFIG_FILES.items():
        result, file_errors = _load_file(directory / name, model)
        errors.extend(file_errors)
        if result is not None:
            loaded[name] = result

    def content(name: str, model: type[M]) -> M | None:
        item = loaded.get(name)
        return item.content if item is not None and isinstance(item.content, model) else None

    models = content(MODELS_FILE, ModelsFile)
    if models is not None:
        errors += _model_errors(models, loaded[MODELS_FILE].document)
    entries: dict[str, Sequence[Selectable] | None] = {}
    for entry_file in _ENTRY_FILES:
        item = loaded.get(entry_file.file_name)
        found = None if item is None or item.content is None else item.content
        entries[entry_file.attribute] = getattr(found, entry_file.attribute, None)
        if found is not None:
            keys = [entry.key for entry in getattr(found, entry_file.attribute)]
            errors += _duplicates(
                loaded[entry_file.file_name].document,
                keys,
                (entry_file.attribute,),
                entry_file.key_field,
                entry_file.what,
                entry_file.duplicate_hint,
            )
    skills = content(SKILLS_VERSIONS_FILE, SkillsVersionsFile)
    skills_texts: dict[str, str] = {}
    if skills is not None:
        document = loaded[SKILLS_VERSIONS_FILE].document
        skills_texts, skills_errors = _read_skills(directory, skills, document)
        errors += skills_errors
    mcp_file = content(MCP_VERSIONS_FILE, McpVersionsFile)
    if mcp_file is not None:
        errors += _build_path_errors(directory, mcp_file, loaded[MCP_VERSIONS_FILE].document)
        uncovered = _mcp_coverage_errors(mcp_file, loaded[MCP_VERSIONS_FILE].document)
        flagged = {error.field_path for error in uncovered}
        errors += uncovered
        # One error per field: an uncovered version is not also said to be unserved.
        errors += [
            error
            for error in _twin_release_errors(mcp_file, loaded[MCP_VERSIONS_FILE].document)
            if error.field_path not in flagged
        ]
    types = content(EVALUATION_TYPES_FILE, EvaluationTypesFile)
    if types is not None:
        errors += _evaluation_type_errors(types, entries, loaded[EVALUATION_TYPES_FILE].document)
    if errors:
        raise BenchmarkConfigErrors(errors)
    mcp = content(MCP_VERSIONS_FILE, McpVersionsFile)
    prompts = content(SYSTEM_PROMPTS_FILE, SystemPromptsFile)
    assert models and mcp and skills and prompts and types  # no error: every file validated
    return BenchmarkConfig(directory, models, mcp, skills, prompts, types, skills_texts)


def _mcp_coverage_errors(mcp: McpVersionsFile, document: YamlDocument) -> list[SpecError]:
    """Every pinned MCP version must be one the action registry explicitly covers."""
    # The registry builds on the task vocabulary this package also loads: imported late.
    from datagouv_eval_pipeline.core.semantic import UnknownVersionError, load_registry

    registry = load_registry()
    errors: list[SpecError] = []
    for index, entry in enumerate(mcp.mcp_versions):
        try:
            registry.check_mcp_version(entry.version)
        except UnknownVersionError as error:
            errors.append(_error(document, ("mcp_versions", index, "version"), str(error)))
    return errors


def _twin_release_errors(mcp: McpVersionsFile, document: YamlDocument) -> list[SpecError]:
    """Every release the twin is to serve must be one it emulates.

    Otherwise its cells would find no server at ``/mcp/vX/mcp`` and skip every run.
    """
    from packaging.version import Version

    served = sorted(TWIN_MCP_RELEASES, key=Version)
    errors: list[SpecError] = []
    for index, entry in enumerate(mcp.mcp_versions):
        if entry.origin != McpSource.TWIN or entry.version in TWIN_MCP_RELEASES:
            continue
        message = (
            f"MCP version {entry.version!r} is not emulated by the twin (it serves "
            f"{', '.join(served)}): pick one of those, or give the real server as "
            "`build:` (or `url:` for a deployed one)"
        )
        errors.append(_error(document, ("mcp_versions", index, "version"), message))
    return errors


def _load_file(path: Path, model: type[BaseModel]) -> tuple[_Loaded | None, list[SpecError]]:
    if not path.is_file():
        return None, [SpecError(path, None, "", f"missing configuration file {path.name}")]
    document, errors = read_yaml(path)
    if document is None:
        return None, errors
    data = document.data
    if not isinstance(data, dict):
        found = "nothing" if data is None else type(data).__name__
        keys = " and ".join(repr(key) for key in model.model_fields)
        message = f"expected a mapping with {keys} at the top level, got {found}"
        return _Loaded(document, None), [*errors, SpecError(path, 1, "", message)]
    try:
        content = model.model_validate(data)
    except ValidationError as error:
        errors.extend(validation_errors(path, error, model, data, document.line_of))
        return _Loaded(document, None), errors
    return _Loaded(document, content if not errors else None), errors


def _error(document: YamlDocument, loc: Loc, message: str) -> SpecError:
    return SpecError(document.path, document.line_of(loc), field_path(loc), message)


def _duplicates(
    document: YamlDocument,
    keys: Sequence[str],
    base: Loc,
    field: str,
    what: str,
    hint: str = "",
) -> list[SpecError]:
    first: dict[str, int] = {}
    errors: list[SpecError] = []
    for index, key in enumerate(keys):
        if key in first:
            message = (
                f"duplicate {what} {key!r}: already defined at {field_path((*base, first[key]))}"
                + hint
            )
            errors.append(_error(document, (*base, index, field), message))
        else:
            first[key] = index
    return errors


def _model_errors(models: ModelsFile, document: YamlDocument) -> list[SpecError]:
    providers = models.providers
    names = [provider.name for provider in providers]
    errors = _duplicates(document, names, ("providers",), "name", "provider")
    for index, provider in enumerate(providers):
        model_names = [model.name for model in provider.models]
        errors += _duplicates(
            document, model_names, ("providers", index, "models"), "name", "model"
        )
    if not any(model.active for provider in providers for model in provider.models):
        errors.append(_error(document, ("providers",), "no active model: activate at least one"))
    return errors


def _read_skills(
    directory: Path, skills: SkillsVersionsFile, document: YamlDocument
) -> tuple[dict[str, str], list[SpecError]]:
    texts: dict[str, str] = {}
    errors: list[SpecError] = []
    root = directory.resolve()
    for index, entry in enumerate(skills.skills_versions):
        loc: Loc = ("skills_versions", index, "file")
        path = (directory / entry.file).resolve()
        if Path(entry.file).is_absolute() or not path.is_relative_to(root):
            message = f"{entry.file!r} must be a relative path inside {directory}"
            errors.append(_error(document, loc, message))
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as error:
            reason = "no such file" if isinstance(error, FileNotFoundError) else str(error)
            message = f"cannot read the skills document {entry.file!r} ({reason})"
            errors.append(_error(document, loc, message))
            continue
        if not text.strip():
            errors.append(_error(document, loc, f"the skills document {entry.file!r} is empty"))
            continue
        texts[entry.version] = text
    return texts, errors


def build_path(directory: Path, path: str) -> Path:
    """The directory of a ``path:`` build: absolute, or relative to the configuration directory."""
    return (directory / Path(path).expanduser()).resolve()


def _build_path_errors(
    directory: Path, versions: McpVersionsFile, document: YamlDocument
) -> list[SpecError]:
    errors: list[SpecError] = []
    for index, entry in enumerate(versions.mcp_versions):
        if entry.build is None or entry.build.path is None:
            continue
        root = build_path(directory, entry.build.path)
        if not root.is_dir():
            message = (
                f"no such directory {entry.build.path!r} (resolved to {root}): expected a "
                "checkout of the MCP server, absolute or relative to the configuration directory"
            )
            errors.append(_error(document, ("mcp_versions", index, "build", "path"), message))
        elif not (root / "pyproject.toml").is_file():
            message = (
                f"{entry.build.path!r} has no pyproject.toml: expected a checkout of the MCP "
                "server (its dependencies are read from there)"
            )
            errors.append(_error(document, ("mcp_versions", index, "build", "path"), message))
    return errors


def _evaluation_type_errors(
    types: EvaluationTypesFile,
    entries: Mapping[str, Sequence[Selectable] | None],
    document: YamlDocument,
) -> list[SpecError]:
    """Every name an evaluation type selects exists, and every selection it needs is non-empty.

    Args:
        types: The evaluation types.
        entries: The entries of each selectable file, by selector name (None: invalid file,
            whose own errors are reported).
        document: ``evaluation_types.yml``.
    """
    names = [etype.name for etype in types.evaluation_types]
    errors = _duplicates(document, names, ("evaluation_types",), "name", "evaluation type")
    for index, etype in enumerate(types.evaluation_types):
        for entry_file in _ENTRY_FILES:
            available = entries.get(entry_file.attribute)
            if available is None:
                continue
            selector = _selector_of(etype, entry_file.attribute)
            loc: Loc = ("evaluation_types", index, entry_file.attribute)
            known = [entry.key for entry in available]
            if isinstance(selector, list):
                for position, name in enumerate(selector):
                    if name not in known:
                        message = (
                            f"{name!r} is not defined in {entry_file.file_name}; "
                            f"{_hint(name, known)}"
                        )
                        errors.append(_error(document, (*loc, position), message))
            capability = entry_file.capability
            needed = capability is None or any(capability in s for s in etype.capability_sets)
            if needed and isinstance(selector, str) and not select(selector, available):
                message = (
                    f"selects the {selector} entries of {entry_file.file_name} but there are "
                    "none, so this evaluation type would produce no cells"
                )
                errors.append(_error(document, loc, message))
    return errors


def _selector_of(etype: EvaluationType, field: str) -> str | list[str]:
    selector: str | list[str] = getattr(etype, field)
    return selector


def _hint(name: str, known: Sequence[str]) -> str:
    close = difflib.get_close_matches(name, known, n=3, cutoff=0.6)
    if close:
        return f"did you mean {' or '.join(repr(c) for c in close)}?"
    return f"defined: {', '.join(known)}"
